"""The plain edition as a reader sees it in a real JupyterLab without any MyST extension, the
stand-in for Colab, VS Code and GitHub, which render plain Markdown too: JupyterLab started by the
test on chapters 1 and 13 and on a notebook that shows every interactive figure, read in headless
Chromium (`make check-book` runs it). Only what is shown counts: a rendered
markdown cell keeps its source in a hidden editor, and a closed <details> hides its content, so
the test reads the rendered cells' innerText."""

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from browser import CHROMIUM, MOVE_FIRST_CONTROL, Browser

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("plain_edition", ROOT / "_ext" / "plain_edition.py")
pe = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(pe)

# With the built book's browser tests, in `make check-book` (BOOK_HTML set): a JupyterLab and a
# Chromium take half a minute, and make test must stay under ten on the slowest machine.
pytestmark = [
    pytest.mark.skipif(not os.environ.get("BOOK_HTML"),
                       reason="a reader's view: `make check-book` runs it (after `make book`)"),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed "
                       "(.ci/run installs Debian's chromium)"),
]

CHAPTERS = {1: "01_dot_product_attention.ipynb", 13: "13_training_a_translator.ipynb"}
# MyST syntax as it would show in rendered text: a directive, a role, an option line, a comment
MARKUP = ["```{", ":::", "{cite", "{doc}", "{ref}", ":class:", ":label:", "{exercise}",
          "{solution", "{admonition}", "{only}", "{raw}", "\n% "]


FIGURES_NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                "language": "python"}},
    "cells": [{"cell_type": "code", "id": "every-figure", "metadata": {}, "outputs": [],
               "execution_count": None,
               "source": "from IPython.display import display\n"
                         "from minformer import figures\n"
                         "for name in figures.FIGURES:\n"
                         "    display(figures.show(name))"}],
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab on a folder holding the plain edition of chapters 1 and 13: its address."""
    root = tmp_path_factory.mktemp("lab")
    pe.write_edition(root, [ROOT / "chapters" / name for name in CHAPTERS.values()])
    # one notebook that shows every figure of the book, as its chapter's cell does
    (root / "figures.ipynb").write_text(json.dumps(FIGURES_NOTEBOOK), encoding="utf-8")
    # every cell rendered, not only those in view (JupyterLab 4 renders lazily by default)
    settings = root / ".settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    news = root / ".settings" / "@jupyterlab" / "apputils-extension"  # no "get Jupyter news?"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    port = _free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / ".config"),
           "JUPYTER_RUNTIME_DIR": str(root / ".runtime")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}",
         "--ServerApp.ip=127.0.0.1", "--IdentityProvider.token=", "--ServerApp.password=",
         f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={root / '.settings'}",
         f"--LabApp.workspaces_dir={root / '.workspaces'}", "--allow-root"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=2)
            break
        except Exception:  # noqa: BLE001 (not up yet)
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail("JupyterLab did not start")
            time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def shown(lab):
    """For each chapter: what the reader sees in JupyterLab (rendered markdown text, the
    headings, the folds, the hidden code cells, the math)."""
    browser = Browser(1280, 900)
    seen = {}
    try:
        for number, name in CHAPTERS.items():
            # a workspace of its own: the chapter in the only tab
            browser.goto(f"{lab}/lab/workspaces/ch{number}/tree/chapters/{name}?reset",
                         settle=0.5)
            browser.wait_for("document.querySelectorAll('.jp-MarkdownCell "
                             ".jp-RenderedMarkdown').length > 20", timeout=90)
            browser.wait_for("document.querySelectorAll('mjx-container').length > 5", timeout=60)
            seen[number] = browser.evaluate("""(() => {
              const md = [...document.querySelectorAll('.jp-MarkdownCell .jp-RenderedMarkdown')];
              const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
              return {
                text: md.map(e => e.innerText).join('\\n'),
                exercises: [...document.querySelectorAll('.jp-RenderedMarkdown h3')]
                  .map(h => h.innerText.replace(/¶$/, '').trim())
                  .filter(t => t.startsWith('Exercise')),
                details: [...document.querySelectorAll('.jp-RenderedMarkdown details')]
                  .map(d => [d.querySelector('summary').innerText, d.open]),
                hiddenCode: cells.filter(c => c.classList.contains('jp-CodeCell')
                  && c.querySelector('.jp-InputPlaceholder')
                  && !(c.querySelector('.jp-InputArea') || {}).offsetParent).length,
                math: document.querySelectorAll('.jp-RenderedMarkdown mjx-container').length,
                images: [...document.querySelectorAll('.jp-RenderedMarkdown img')]
                  .filter(i => i.complete && i.naturalWidth > 0).length,
                stills: [...document.querySelectorAll('.jp-OutputArea .mff img')]
                  .filter(i => i.complete && i.naturalWidth > 0).length,
              };
            })()""")
    finally:
        browser.close()
    return seen


@pytest.mark.parametrize("number", CHAPTERS)
def test_no_markup_is_visible(shown, number):
    text = shown[number]["text"]
    assert len(text) > 8_000  # chapter 1 shows 12,779 characters of prose
    assert [m for m in MARKUP if m in text] == []


@pytest.mark.parametrize("number", CHAPTERS)
def test_exercises_are_numbered_and_hints_and_solutions_are_folded(shown, number):
    seen = shown[number]
    twin = (ROOT / "chapters" / "text" / CHAPTERS[number].replace(".ipynb", ".md")).read_text()
    n = twin.count("```{exercise}")
    assert [e.split(":")[0] for e in seen["exercises"]] == [f"Exercise {number}.{k}"
                                                            for k in range(1, n + 1)]
    summaries = [s for s, _ in seen["details"]]
    assert sum(s.startswith("Solution to Exercise") for s in summaries) == twin.count("{solution}")
    assert sum(s.startswith("Hint") for s in summaries) >= n
    assert not any(is_open for _, is_open in seen["details"])
    # folded code: the gated solutions, and the checks for the tests (remove-cell)
    assert seen["hiddenCode"] == twin.count("{solution-start}") + twin.count(":tags: [remove-cell]")


def test_a_folded_solution_is_not_in_plain_sight(shown):
    # chapter 1's ex-diagonal: its proof (Cauchy–Schwarz) lives inside the closed solution
    assert "Cauchy" in (ROOT / "chapters" / "text" / "01_dot_product_attention.md").read_text()
    assert "Cauchy" not in shown[1]["text"]


def test_math_renders_and_the_pictures_show(shown):
    assert shown[1]["math"] > 50 and shown[13]["math"] > 20
    assert "\\top" not in shown[1]["text"]
    assert shown[1]["stills"] == 1  # the figure's stored output: its still (scripts stripped)
    assert shown[13]["images"] == 2  # the explorer's and the translator's screenshots


def _click(browser, element_js: str) -> None:
    """A real mouse click (DevTools input events) on the element ``element_js`` evaluates to."""
    box = browser.evaluate(f"""(() => {{ const e = {element_js}; e.scrollIntoView({{block: 'center'}});
      const r = e.getBoundingClientRect(); return [r.x + 10, r.y + r.height / 2]; }})()""")
    for kind in ("mousePressed", "mouseReleased"):
        browser.send("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left",
                     clickCount=1)


def _shift_enter(browser) -> None:
    for kind in ("keyDown", "keyUp"):
        browser.send("Input.dispatchKeyEvent", type=kind, modifiers=8, key="Enter", code="Enter",
                     windowsVirtualKeyCode=13)


def test_a_figure_shows_its_still_until_its_cell_runs_then_answers_an_input(lab):
    """Chapter 1's figure cell: its stored output, in a notebook not yet trusted, is the still and
    the line asking to run the cell (JupyterLab strips the scripts); run it (after the setup cell)
    and the figure mounts and answers its first control."""
    browser = Browser(1280, 900)
    cells = "[...document.querySelectorAll('.jp-Notebook .jp-CodeCell')]"
    figure_cell = f"{cells}.find(c => c.innerText.includes('figures.show(\"ch01-attention\")'))"
    try:
        browser.goto(f"{lab}/lab/workspaces/figure/tree/chapters/{CHAPTERS[1]}?reset", settle=0.5)
        browser.wait_for(f"{cells}.length > 10 && !!({figure_cell})", timeout=90)
        stored = browser.evaluate(f"""(() => {{ const c = {figure_cell};
          return [!!c.querySelector('.jp-OutputArea img'), c.querySelector('.jp-OutputArea')
                  .innerText, !!c.querySelector('.mff[data-mff-ready]')]; }})()""")
        assert stored[0] and "Run this cell to interact" in stored[1] and not stored[2], stored
        idle = ("document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status"
                " === 'idle' && !document.querySelector('.jp-Notebook').innerText"
                ".includes('[*]')")
        browser.wait_for(idle, timeout=90)  # the kernel has started
        for cell in (f"{cells}[0]", figure_cell):  # the setup cell's imports, then the figure
            prompt = f"({cell}).querySelector('.jp-InputPrompt').innerText"
            stored = browser.evaluate(prompt)
            for _ in range(5):  # the first keys may reach the page before the notebook has focus
                _click(browser, f"({cell}).querySelector('.jp-InputPrompt')")
                time.sleep(0.5)
                _shift_enter(browser)
                try:  # queued, running or run
                    browser.wait_for(f"{prompt}.includes('*') || {prompt} !== {json.dumps(stored)}",
                                     timeout=3)
                    break
                except TimeoutError:
                    continue
            browser.wait_for(idle, timeout=120)
        mounted = f"({figure_cell}).querySelector('.mff[data-mff-ready]')"
        browser.wait_for(f"!!{mounted}", timeout=30)
        before = browser.evaluate(f"{mounted}.innerHTML")
        browser.evaluate(f"({MOVE_FIRST_CONTROL})({mounted}), true")
        time.sleep(0.3)
        assert browser.evaluate(f"{mounted}.innerHTML") != before
        assert not browser.evaluate(f"!!({figure_cell}).querySelector('.mff img')")
    finally:
        browser.close()


def test_every_figure_mounts_and_answers_an_input_in_one_notebook(lab):
    """Every figure of the book (minformer.figures.FIGURES), shown by one cell in one notebook, so
    that their scripts share one page as two chapters open in two tabs of JupyterLab do: each
    mounts in place of its still and answers its first control."""
    from minformer import figures

    browser = Browser(1280, 900)
    cell = "document.querySelector('.jp-Notebook .jp-CodeCell')"
    try:
        browser.goto(f"{lab}/lab/workspaces/figures/tree/figures.ipynb?reset", settle=0.5)
        browser.wait_for(f"!!{cell}", timeout=90)
        idle = ("document.querySelector('.jp-Notebook-ExecutionIndicator')?.dataset.status"
                " === 'idle'")
        browser.wait_for(idle, timeout=90)  # the kernel has started
        prompt = f"{cell}.querySelector('.jp-InputPrompt').innerText"
        stored = browser.evaluate(prompt)
        for _ in range(5):  # the first keys may reach the page before the notebook has focus
            _click(browser, f"{cell}.querySelector('.jp-InputPrompt')")
            time.sleep(0.5)
            _shift_enter(browser)
            try:  # queued, running or run
                browser.wait_for(f"{prompt}.includes('*') || {prompt} !== {json.dumps(stored)}",
                                 timeout=3)
                break
            except TimeoutError:
                continue
        browser.wait_for(f"{idle} && !{prompt}.includes('*')", timeout=120)
        mounted = f"{cell}.querySelectorAll('.mff[data-mff-ready]')"
        browser.wait_for(f"{mounted}.length === {len(figures.FIGURES)}", timeout=30)
        names = browser.evaluate(f"[...{mounted}].map(f => f.dataset.figure)")
        assert names == list(figures.FIGURES), names
        browser.evaluate(f"""(() => {{ {MOVE_FIRST_CONTROL}
          window.mffBefore = [...{mounted}].map(f => f.innerHTML);
          [...{mounted}].forEach(moveFirstControl); }})()""")
        time.sleep(1)  # some figures draw in steps after an input
        changed = browser.evaluate(f"[...{mounted}].map((f, i) => [f.dataset.figure, "
                                   f"f.innerHTML !== window.mffBefore[i]])")
        assert all(moved for _, moved in changed), changed
        assert not browser.evaluate(f"!!{cell}.querySelector('.mff img')")
    finally:
        browser.close()
