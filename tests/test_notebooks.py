"""Hygiene of the chapters: the stored notebooks are what nbval re-runs and the book shows.

Reads JSON only (fast); nbval itself re-executes every cell in `make test`.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb"))
IDS = [p.stem for p in CHAPTERS]
# an absolute path of three or more parts outside a URL: differs between machines
MACHINE_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.-]+/){2,}[\w.-]+")
# a stored notebook above this is bloated (figures at too high a resolution, long logs)
MAX_BYTES = 2 * 1024 * 1024
# cell metadata that execution writes and a twin does not carry
RUNTIME_METADATA = {"execution", "collapsed", "scrolled"}


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def source(cell):
    return "".join(cell["source"])


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def output_text(out):
    if out["output_type"] == "stream":
        return "".join(out["text"])
    if out["output_type"] == "error":
        return out["ename"] + ": " + out["evalue"]
    return "".join("".join(v) if isinstance(v, list) else str(v)
                   for k, v in out.get("data", {}).items() if k.startswith("text/"))


def repository_url():
    config = (REPO / "_config.yml").read_text()
    match = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", config, re.M)
    assert match, "_config.yml has no repository.url"
    return match.group(1)


def test_there_are_chapters():
    assert CHAPTERS, "no notebooks in chapters/"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_executed_in_order_in_one_fresh_kernel(path):
    counts = [c["execution_count"] for c in code_cells(load(path))]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts}; run `make execute NB={path.relative_to(REPO)}`")


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_stored_error_unless_tagged(path):
    for i, cell in enumerate(code_cells(load(path))):
        errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
        if "raises-exception" in tags(cell):
            assert errors, f"{path.name} code cell {i} is tagged raises-exception but raised nothing"
        else:
            assert not errors, f"{path.name} code cell {i} stored an error: {errors[0]['ename']}"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_listed_in_toc(path):
    toc = (REPO / "_toc.yml").read_text()
    assert f"file: chapters/{path.stem}\n" in toc + "\n", f"{path.name} is not in _toc.yml"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_machine_paths_in_outputs(path):
    for i, cell in enumerate(code_cells(load(path))):
        for out in cell["outputs"]:
            match = MACHINE_PATH.search(output_text(out))
            assert not match, f"{path.name} code cell {i} shows a machine path: {match.group()}"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_setup_cell_first_and_uses_the_repository_url(path):
    first = source(code_cells(load(path))[0])
    assert first.lstrip().startswith("# Setup"), f"{path.name}: the first code cell is not the setup cell"
    assert f'REPO_URL = "{repository_url()}"' in first, (
        f"{path.name}: the setup cell must clone _config.yml's repository.url ({repository_url()})")
    assert '"google.colab" in sys.modules' in first


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_setup_cell_is_folded_on_the_page_with_a_summary(path):
    """The built page opens with the lesson: the setup cell's code is folded behind a one-line
    summary (MyST-NB's hide-input tag and code_prompt_show); JupyterLab ignores both."""
    meta = code_cells(load(path))[0]["metadata"]
    assert "hide-input" in meta.get("tags", []), f"{path.name}: the setup cell is not folded"
    prompt = meta.get("mystnb", {}).get("code_prompt_show", "")
    assert prompt.startswith("Setup:") and "Colab" in prompt, (path.name, prompt)


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_exercises_follow_the_pattern(path):
    nb = load(path)
    cells = nb["cells"]
    markdown = [source(c) for c in cells if c["cell_type"] == "markdown"]
    assert sum("{exercise}" in m for m in markdown) >= 3, f"{path.name}: fewer than 3 exercises"
    starts = [i for i, c in enumerate(cells)
              if c["cell_type"] == "markdown" and "{solution-start}" in source(c)]
    assert starts, f"{path.name}: no code exercise (gated solution)"
    for i in starts:
        stub, solution, end, check = cells[i - 1], cells[i + 1], cells[i + 2], cells[i + 3]
        # The reader's cell defines the stub and runs the checker on it: an unfilled stub prints
        # one "not written yet" line instead of raising, so "Run all" reaches the end (Colab
        # ignores raises-exception tags).
        assert stub["cell_type"] == "code" and "NotImplementedError" in source(stub)
        assert "raises-exception" not in tags(stub), (
            f"{path.name}: the stub before cell {i} must not raise; let its checker report it")
        assert re.search(r"^check_\w+\(", source(stub), re.M), (
            f"{path.name}: the stub cell before cell {i} must run a checker on the reader's code")
        assert any("not written yet" in output_text(o) for o in stub["outputs"]), (
            f"{path.name}: the stub cell before cell {i} does not show the 'not written yet' line")
        # The solution runs (CI tests it) but its code is collapsed in JupyterLab.
        assert solution["cell_type"] == "code" and "{solution-end}" in source(end)
        assert solution.get("metadata", {}).get("jupyter", {}).get("source_hidden") is True, (
            f"{path.name}: the solution after cell {i} must be collapsed (jupyter.source_hidden)")
        assert check["cell_type"] == "code" and "check_" in source(check), (
            f"{path.name}: the cell after a solution must call a minformer.checks checker")
        assert any("✓" in output_text(o) for o in check["outputs"]), (
            f"{path.name}: the check after cell {i} did not pass on the solution")


# An exercise's opening line in a twin, its label, and a solution of either kind.
EXERCISE_LABEL = re.compile(r"^```+\{exercise\}.*?^:label:\s*(\S+)", re.M | re.S)
SOLUTION_OF = re.compile(r"^[`:]{3,}\{solution(?:-start)?\}\s*(\S+)", re.M)
HINT = re.compile(r"^:::+\{admonition\} Hint", re.M)


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_a_hint_comes_before_every_solution(path):
    # A reader stuck on an exercise opens a hint first; a solution with no hint before it leaves
    # only the answer (the pen-and-paper exercises included).
    text = "\n".join(source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown")
    missing = []
    for solution in SOLUTION_OF.finditer(text):
        label = solution.group(1)
        exercise = text.rfind(f":label: {label}", 0, solution.start())
        assert exercise >= 0, f"{path.name}: a solution to {label} before its exercise"
        if not HINT.search(text, exercise, solution.start()):
            missing.append(label)
    assert not missing, f"{path.name}: solutions with no hint before them: {missing}"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_checks_for_the_tests_are_out_of_the_readers_way(path):
    # A cell that only checks a run (a band on run-dependent numbers, with where the band was
    # measured) is scaffolding: the web book drops it (remove-cell) and the plain edition folds
    # it. Such a cell prints nothing, so nothing a reader needs disappears with it, and it checks.
    for i, cell in enumerate(code_cells(load(path))):
        text = source(cell)
        if "remove-cell" in tags(cell):
            assert "assert" in text, f"{path.name} code cell {i}: removed from the book, checks nothing"
            assert not cell["outputs"], f"{path.name} code cell {i}: removed from the book, prints"
        elif re.match(r"#\s*bands?\b", text.lstrip(), re.I):
            pytest.fail(f"{path.name} code cell {i} checks a band but is shown to readers: tag it "
                        "remove-cell")


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_ignored_outputs_are_followed_by_an_assertion(path):
    cells = code_cells(load(path))
    ignored = [i for i, c in enumerate(cells) if "nbval-ignore-output" in tags(c)]
    # Run-dependent outputs (training in the page, timings) are not compared but asserted; a
    # chapter that trains several models has several (chapter 12 trains three). A third of the
    # cells is the most: the rest, shapes, masks, tokens, fixed checkpoints, must be compared.
    assert len(ignored) <= max(2, len(cells) // 3), f"{path.name}: too many nbval-ignore-output cells"
    for i in ignored:
        nxt = source(cells[i + 1]) if i + 1 < len(cells) else ""
        assert "assert" in nxt, (
            f"{path.name} code cell {i} ignores its output but the next cell asserts nothing")


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_plots_end_with_show(path):
    for i, cell in enumerate(code_cells(load(path))):
        src = source(cell)
        if "plt." in src and ("plt.subplots" in src or "plt.figure" in src):
            assert "plt.show()" in src, f"{path.name} code cell {i} draws but never calls plt.show()"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_figures_have_alt_text(path):
    """A figure's alt text (cell metadata mystnb.image.alt) says what it shows; without it the
    page falls back to the image's file name."""
    for i, cell in enumerate(code_cells(load(path))):
        for o in cell["outputs"]:
            if "image/png" not in o.get("data", {}):
                continue
            # an interactive figure's still (minformer.figures) brings its own, in the output
            alt = (o.get("metadata", {}).get("image/png", {}).get("alt")
                   or cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt", ""))
            assert len(alt) >= 40 and "/" not in alt.split()[0], (
                f"{path.name} code cell {i} draws a figure without real alt text "
                "(add mystnb: image: alt: ... to the cell in its twin)")


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_stored_size_stays_reasonable(path):
    size = path.stat().st_size
    assert size < MAX_BYTES, f"{path.name}: {size // 1024} KiB stored (limit {MAX_BYTES // 1024})"


def test_every_notebook_has_a_twin_and_every_twin_a_notebook():
    twins = {p.stem for p in (REPO / "chapters" / "text").glob("*.md")}
    notebooks = set(IDS)
    assert notebooks - twins == set(), f"notebooks without a text twin: {sorted(notebooks - twins)}"
    assert twins - notebooks == set(), (
        f"twins without a notebook: {sorted(twins - notebooks)} (run `make execute NB=...`)")


def _cell_key(cell):
    metadata = {k: v for k, v in dict(cell.get("metadata", {})).items()
                if k not in RUNTIME_METADATA}
    return cell["cell_type"], source(cell) if isinstance(cell["source"], list) else cell["source"], metadata


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_notebook_agrees_with_its_text_twin(path):
    twin = REPO / "chapters" / "text" / f"{path.stem}.md"
    if not twin.exists():
        pytest.skip("no twin (reported by the test above)")
    stored = [_cell_key(c) for c in load(path)["cells"]]
    written = [_cell_key(c) for c in jupytext.read(twin)["cells"]]
    hint = f"edit the twin and run `make execute NB=chapters/{path.name}`"
    assert len(stored) == len(written), (
        f"{path.name} has {len(stored)} cells, its twin {len(written)}: {hint}")
    for i, (a, b) in enumerate(zip(stored, written)):
        assert a == b, f"{path.name} cell {i} differs from its twin ({a[0]}: {a[1][:60]!r}): {hint}"


# The Colab path of the setup cell, run outside Colab: a fake `google.colab` module makes the
# cell take it, the repository is cloned from a local file URL instead of GitHub, and pip is
# stubbed (it would otherwise re-point this environment's editable install at the clone). Run in
# IPython, as a notebook kernel would, so that the cell's `%config` line works. With
# COLAB_REAL_PIP=1 (in a throw-away Colab-like interpreter, below) pip runs for real.
_COLAB_HARNESS = r"""
import json, os, subprocess, sys, types
google = types.ModuleType("google")
google.colab = types.ModuleType("google.colab")
sys.modules["google"], sys.modules["google.colab"] = google, google.colab
_run, pip_calls = subprocess.run, []
def run(cmd, *args, **kwargs):
    if list(cmd[:3]) == [sys.executable, "-m", "pip"]:
        pip_calls.append(list(cmd))
        if os.environ.get("COLAB_REAL_PIP") == "1":
            done = _run(cmd, *args, **kwargs)
            pip_calls[-1].append(f"exit {done.returncode}")
            return done
        return subprocess.CompletedProcess(cmd, 0, "", "")
    return _run(cmd, *args, **kwargs)
subprocess.run = run
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
result = shell.run_cell(open(sys.argv[1], encoding="utf-8").read())
if result.error_in_exec is not None or result.error_before_exec is not None:
    sys.exit(3)
import minformer
print(json.dumps({"package": minformer.__file__, "data": str(minformer.DATA_DIR),
                  "pip": pip_calls}))
"""


def _colab_setup_cell(tmp_path, url, python=sys.executable, real_pip=False):
    setup = source(code_cells(load(CHAPTERS[0]))[0])
    cell = tmp_path / "setup_cell.py"
    cell.write_text(setup.replace(f'REPO_URL = "{repository_url()}"', f'REPO_URL = "{url}"'))
    harness = tmp_path / "harness.py"
    harness.write_text(_COLAB_HARNESS)
    env = {k: v for k, v in os.environ.items() if k not in ("MINFORMER_DATA", "PYTHONPATH")}
    env["MPLBACKEND"] = "Agg"
    if real_pip:
        # pip as Colab has it: no configuration file, constraints or local wheel folders (a
        # machine's pip.conf may cap torch through a constraints file, which would downgrade the
        # torch installed here, as Colab never would); its certificates and time-out stay
        env = {k: v for k, v in env.items() if k not in ("PIP_CONSTRAINT", "PIP_FIND_LINKS")}
        env.update(COLAB_REAL_PIP="1", PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return subprocess.run([python, str(harness), str(cell)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)


def _distributions(python):
    """{normalized name: [versions]} of every distribution the interpreter sees: two entries for
    one name are two copies of it installed side by side."""
    listing = subprocess.run([python, "-c", (
        "import importlib.metadata as m, json, re; d = {}\n"
        "for x in m.distributions():\n"
        "    d.setdefault(re.sub(r'[-_.]+', '-', x.metadata['Name']).lower(), []).append(x.version)\n"
        "print(json.dumps(d))")], capture_output=True, text=True, check=True)
    return {name: sorted(versions) for name, versions in json.loads(listing.stdout).items()}


# A Colab-like interpreter: torch, numpy, matplotlib, tqdm and IPython preinstalled, no minformer.
# .ci/reader (`make test-reader`) builds one beside the reader's environment, with the same torch,
# and points this variable at it; the setup cell then runs its real `pip install -e book` there.
COLAB_PYTHON = os.environ.get("MINFORMER_COLAB_PYTHON")


@pytest.mark.skipif(not COLAB_PYTHON or shutil.which("git") is None,
                    reason="needs git and MINFORMER_COLAB_PYTHON, a throw-away Colab-like interpreter "
                           "(make test-reader builds one)")
def test_setup_cell_on_colab_keeps_colabs_torch(tmp_path):
    """The setup cell's real pip install leaves Colab's own torch (and everything else Colab
    ships) as it was: no downgrade, no second copy; it only adds minformer."""
    subprocess.run([COLAB_PYTHON, "-m", "pip", "uninstall", "-q", "-y", "minformer"],
                   capture_output=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    before = _distributions(COLAB_PYTHON)
    assert "torch" in before and "minformer" not in before, sorted(before)
    run = _colab_setup_cell(tmp_path, REPO.as_uri(), python=COLAB_PYTHON, real_pip=True)
    assert run.returncode == 0, f"the setup cell failed on the Colab path:\n{run.stdout}\n{run.stderr}"
    assert "pip could not install" not in run.stdout, run.stdout
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["pip"] and found["pip"][0][-3:] == ["-e", "book", "exit 0"], found["pip"]
    after = _distributions(COLAB_PYTHON)
    # an editable install is seen twice: its dist-info, and the clone's code/minformer.egg-info
    # on the path its .pth file adds
    assert set(after["minformer"]) == {"0.1.0"}, after["minformer"]
    assert len(after["torch"]) == 1 and after["torch"] == before["torch"], (before["torch"], after["torch"])
    changed = {name: (before.get(name), after.get(name)) for name in set(before) | set(after)
               if name != "minformer" and before.get(name) != after.get(name)}
    assert changed == {}, f"the setup cell's pip install changed Colab's packages: {changed}"


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs git and a git checkout")
def test_setup_cell_on_colab_clones_the_repository_and_finds_package_and_data(tmp_path):
    run = _colab_setup_cell(tmp_path, (REPO).as_uri())
    assert run.returncode == 0, f"the setup cell failed on the Colab path:\n{run.stdout}\n{run.stderr}"
    found = json.loads(run.stdout.strip().splitlines()[-1])
    clone = (tmp_path / "book").resolve()
    assert Path(found["package"]).resolve().is_relative_to(clone / "code"), found
    data = Path(found["data"]).resolve()
    assert data == clone / "data", found
    assert (data / "translation" / "train.tsv").is_file() and (data / "wikitext-2").is_dir()
    assert found["pip"] and found["pip"][0][-2:] == ["-e", "book"], found["pip"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_setup_cell_on_colab_explains_a_failed_clone(tmp_path):
    run = _colab_setup_cell(tmp_path, (tmp_path / "no-such-repository").as_uri())
    assert run.returncode != 0
    shown = run.stdout + run.stderr
    assert "Could not download the book's code" in shown and "run this cell again" in shown, shown
    assert "CalledProcessError" not in shown


def test_binder_gets_a_readers_environment_with_the_authors_pins():
    """Binder reads .binder/ first: CPU PyTorch and the chapters' libraries, no authoring tools,
    every version the one the book was run with (requirements.txt)."""
    def pins(path):
        lines = [ln.split("#")[0].strip() for ln in path.read_text().splitlines()]
        return dict(ln.split("==") for ln in lines if "==" in ln)

    binder, authors = pins(REPO / ".binder" / "requirements.txt"), pins(REPO / "requirements.txt")
    assert binder.pop("torch") == authors["torch"] + "+cpu", "Binder must get the CPU build"
    for name, version in binder.items():
        assert authors.get(name) == version, f"{name}=={version} in .binder, {authors.get(name)} in requirements.txt"
    for tool in ("jupyter-book", "pytest", "ruff", "nbval"):
        assert tool not in binder, f"{tool} is an authoring tool; readers on Binder do not need it"
    assert "pip install --no-deps -e ." in (REPO / ".binder" / "postBuild").read_text()
