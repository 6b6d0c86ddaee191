"""The built book as a reader clicks it, in headless Chromium: `make check-book` runs these on
_build/html after `make book` (.ci/run calls it after the book); `make test`, which runs before
the book is built, skips them. BOOK_HTML names the built book's folder.

- every solution opens when its title is clicked anywhere, the link in it included, with a hint
  open or not, and with no console error (sphinx-togglebutton's handler; _static/book.js);
- no page is wider than a 400 px screen (_static/book.css: long inline code wraps);
- no raw TeX ($O(n^2)$) in the bibliography or in the citations' tooltips (_ext/bibstyle.py);
- the cross-attention explorers' weight numbers are legible (4.5:1) in the light and dark themes,
  and the page translator's explorer adds a long sentence without freezing the page, with the
  theme's own scripts and styles (tests/test_widget_browser.py checks both on a bare page)."""

import functools
import http.server
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest
from browser import CHROMIUM, Browser
from test_widget_browser import CONTRAST, LONG_SENTENCE

BOOK = Path(os.environ["BOOK_HTML"]) if os.environ.get("BOOK_HTML") else None
pytestmark = [
    pytest.mark.skipif(BOOK is None, reason="checks the built book: `make check-book` after `make book`"),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)"),
]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    missing: list[str] = []  # every path asked for that the book does not have (a 404)

    def log_message(self, *args):
        pass

    def send_error(self, code, *args, **kwargs):
        if code == 404:
            _Quiet.missing.append(self.path)
        super().send_error(code, *args, **kwargs)


@pytest.fixture(scope="module")
def book():
    """(base URL, the pages' paths) of the built book, served over HTTP."""
    assert (BOOK / "index.html").is_file(), f"{BOOK} holds no built book: run `make book`"
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(BOOK)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    pages = sorted(str(p.relative_to(BOOK)) for p in BOOK.rglob("*.html")
                   if not {"_static", "_sources", "_images"} & set(p.parts))
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", pages
    httpd.shutdown()


def chapters(pages):
    return [p for p in pages if p.startswith("chapters/")]


def click(browser, selector, index):
    """A real mouse click (pressed and released) in the middle of the index-th match of selector."""
    x, y = browser.evaluate(f"(() => {{ const e = document.querySelectorAll({json.dumps(selector)})[{index}]; "
                            "e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect(); "
                            "return [r.x + r.width / 2, r.y + r.height / 2]; })()")
    for kind in ("mousePressed", "mouseReleased"):
        browser.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)
    time.sleep(0.05)


# What a served copy of the book logs with no fault of its own: the theme's note on a fresh
# profile's empty theme setting. (MathJax came from a CDN, and every page asked for a missing
# favicon.ico: both are the book's own now, test_every_page_loads_only_the_books_own_files.)
NOISE = re.compile(r"^Got invalid theme mode")


def faults(browser):
    return [e for e in browser.errors if not NOISE.search(e)]


STATE = """[...document.querySelectorAll('.admonition.toggle')].map(e => [
    e.classList.contains('solution') ? 'solution' : 'other', !e.classList.contains('toggle-hidden')])"""


def test_every_solution_opens_when_its_title_is_clicked(book):
    """Clicking the title's link ("Exercise 1.1 (...)") jumped to the exercise and threw "button is
    not defined" for 31 of 62 solutions; with a hint open, it closed the hint instead."""
    base, pages = book
    browser, failures, n = Browser(), [], 0
    # the chapters' solutions and those that moved to the appendices with their exercises
    appendices = [p for p in pages if p.startswith("appendix_")]
    try:
        for page in chapters(pages) + appendices:
            browser.goto(base + page, settle=0.2)
            solutions = browser.evaluate("document.querySelectorAll('.solution.toggle').length")
            toggles = browser.evaluate(STATE)
            for i in range(solutions):
                n += 1
                browser.errors.clear()
                url = browser.evaluate("location.href")
                k = [j for j, (kind, _) in enumerate(toggles) if kind == "solution"][i]
                hint = next((j for j in range(k - 1, -1, -1) if toggles[j][0] == "other"), None)
                if hint is not None and not browser.evaluate(STATE)[hint][1]:  # open the hint first
                    click(browser, ".admonition.toggle > .admonition-title .toggle-button", hint)
                before = browser.evaluate(STATE)
                where = ".solution.toggle > .admonition-title a" if browser.evaluate(
                    f"!!document.querySelectorAll('.solution.toggle')[{i}].querySelector('.admonition-title a')"
                ) else ".solution.toggle > .admonition-title"
                click(browser, where, i)
                after = browser.evaluate(STATE)
                want = [list(s) for s in before]
                want[k][1] = not before[k][1]  # this solution toggles, nothing else
                problems = []
                if after != want:
                    problems.append("it did not toggle that solution alone")
                if browser.evaluate("location.href") != url:
                    problems.append("it followed the link")
                if faults(browser):
                    problems.append(faults(browser)[0].splitlines()[0])
                if problems:
                    failures.append(f"{page} solution {i + 1}: {'; '.join(problems)}")
                toggles = after
    finally:
        browser.close()
    assert n >= 60, n
    assert failures == [], f"{len(failures)} of {n} solutions:\n" + "\n".join(failures)


def test_no_page_is_wider_than_a_phone(book):
    """At 400 px, long inline code widened chapter 4 to 431 px, chapter 8 to 409, chapter 6 to 402."""
    base, pages = book
    browser, wide = Browser(width=400, height=800), {}
    try:
        for page in pages:
            browser.goto(base + page, settle=0.1)
            width = browser.evaluate("document.documentElement.scrollWidth")
            if width > 400:
                wide[page] = (width, browser.evaluate(
                    "[...document.querySelectorAll('article p, article li, article code, article td, article img')]"
                    ".filter(e => e.getBoundingClientRect().right > 400.5).slice(0, 3)"
                    ".map(e => e.tagName + ': ' + e.textContent.slice(0, 60))"))
    finally:
        browser.close()
    assert len(pages) > 15
    assert wide == {}, wide


RAW_TEX = re.compile(r"\$[^$\s][^$]*\$|\\[A-Za-z]+|\^\{|\^\d")


def test_no_raw_tex_in_the_bibliography_or_the_citation_tooltips(book):
    base, pages = book
    browser = Browser()
    found = {}
    try:
        for page in ["bibliography.html"] + chapters(pages):
            browser.goto(base + page, settle=0.1)
            texts = browser.evaluate(
                "[...document.querySelectorAll('.citation, dl.citation > dd, div.citation')].map(e => e.innerText)"
                ".concat([...document.querySelectorAll('a[href*=\"bibliography.html\"][title], "
                "a.reference[title]')].map(e => e.title))")
            bad = sorted({t for t in texts if RAW_TEX.search(t)})
            if bad:
                found[page] = bad
            if page == "bibliography.html":
                assert len(texts) > 30 and any("Rabe" in t for t in texts), texts[:3]
    finally:
        browser.close()
    assert found == {}, found


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_explorers_weight_numbers_are_legible_in_the_book(book, theme):
    """The dark theme's numbers sat on orange at 1.05:1 (the light theme's at 2.9:1)."""
    base, _ = book
    browser = Browser()
    try:
        browser.send("Emulation.setFocusEmulationEnabled", enabled=True)  # focus events headless
        browser.goto(base + "chapters/13_training_a_translator.html", settle=0.3)
        browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
        worst, where, n = browser.evaluate(CONTRAST)
    finally:
        browser.close()
    assert n > 100
    assert worst >= 4.5, f"{where}: contrast {worst:.2f}:1 in the {theme} theme"


def test_the_translators_explorer_adds_a_long_sentence_without_freezing_the_book(book):
    """The 500-word paste froze the page for about 16 s: the theme's FontAwesome reacted to each
    of about 11,000 heatmap cells added one by one. The bound only has to tell that freeze apart:
    on an AVX2-only AMD EPYC, the slowest machine CI meets, the longest task took 230 ms with the
    machine otherwise idle (the bound was 200 ms)."""
    base, _ = book
    browser = Browser()
    try:
        browser.goto(base + "translate.html", settle=1.0)
        got = browser.evaluate(LONG_SENTENCE)
    finally:
        browser.close()
    assert got["cells"] == 11000 and got["fontawesome"] == "object", got
    assert max(got["tasks"], default=0) < 1500, got
    assert faults(browser) == []


# TeX that MathJax leaves as it is when it does not run: its delimiters, an environment.
TEX_LEFT = re.compile(r"\\\(|\\\)|\\\[|\\\]|\$\$|\\begin\{")

FORMULAS = r"""(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  const math = [...document.querySelectorAll('.math')];
  const top = document.querySelector('article') || document.body;  // none: a redirecting page
  if (!top) return {mathjax: false, math: 0, typeset: 0, errors: 0, raw: [], remote: []};
  const walker = document.createTreeWalker(top, NodeFilter.SHOW_TEXT);
  const raw = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.parentElement.closest('pre, code, script, style, mjx-assistive-mml, .highlight')) continue;
    if (RAW.test(n.nodeValue)) raw.push(n.nodeValue.trim().slice(0, 60));
  }
  return {mathjax: !!(window.MathJax && MathJax.version), math: math.length,
          typeset: math.filter(e => e.querySelector('mjx-container')).length,
          errors: document.querySelectorAll('mjx-merror').length, raw: raw.slice(0, 3),
          remote: performance.getEntriesByType('resource').map(e => e.name).filter(u => !u.startsWith('file:'))};
})()"""


def test_every_formula_renders_from_file_with_the_network_off(book):
    """Opened from _build/html without a network, MathJax's CDN was out of reach and all 2,417
    formulas on 16 pages stayed raw TeX (issue 44): MathJax is the book's own now (the Makefile's
    MATHJAX_VERSION, _config.yml's mathjax_path)."""
    _, pages = book
    browser = Browser()
    got = {}
    try:
        browser.send("Network.enable")
        browser.send("Network.emulateNetworkConditions", offline=True, latency=0,
                     downloadThroughput=-1, uploadThroughput=-1)
        for page in pages:
            browser.goto((BOOK / page).resolve().as_uri(), settle=0.1)
            got[page] = browser.evaluate(FORMULAS.replace("RAW", f"new RegExp({json.dumps(TEX_LEFT.pattern)})"))
    finally:
        browser.close()
    with_math = {p: r for p, r in got.items() if r["math"]}
    assert len(with_math) >= 14 and sum(r["math"] for r in with_math.values()) > 2000, \
        {p: r["math"] for p, r in got.items()}
    bad = {p: r for p, r in with_math.items()
           if not r["mathjax"] or r["typeset"] != r["math"] or r["errors"] or r["raw"] or r["remote"]}
    assert bad == {}, bad
    assert {p: r["remote"] for p, r in got.items() if r["remote"]} == {}


def test_every_page_loads_only_the_books_own_files(book):
    """No request leaves the book (MathJax was loaded from a CDN) and none is answered 404 (every
    page asked for /favicon.ico; _config.yml names the book's own icon now)."""
    base, pages = book
    browser = Browser()
    remote = {}
    _Quiet.missing.clear()
    try:
        for page in pages:
            browser.goto(base + page, settle=0.3)
            urls = browser.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
            outside = [u for u in urls if not u.startswith(base)]
            if outside:
                remote[page] = outside
    finally:
        browser.close()
    assert remote == {}
    assert sorted(set(_Quiet.missing)) == []


def test_the_bibliography_entries_are_clean(book):
    """Bahdanau et al. showed its arXiv id twice and two years (2015 and 2014), RoBERTa its id
    twice, and sentence case lost capitals ("Roformer", "Big bird", "debiasing", "korean"):
    references.bib braces what keeps its capitals."""
    page = (BOOK / "bibliography.html").read_text(encoding="utf-8")
    entries = {}
    for m in re.finditer(r'<div class="citation"[^>]*>(.*?)</div>', page, re.S):
        label, text = re.sub(r"<[^>]+>", "", m[1]).split("]", 1)
        entries[label.strip("[ \n")] = " ".join(text.split())
    assert len(entries) > 70, len(entries)
    twice = {k: v for k, v in entries.items()
             if len(re.findall(r"\d{4}\.\d{4,5}", v)) != len(set(re.findall(r"\d{4}\.\d{4,5}", v)))}
    assert twice == {}, twice
    assert "2014" not in entries["Bahdanau et al., 2015"], entries["Bahdanau et al., 2015"]
    text = " ".join(entries.values())
    for kept in ("RoFormer", "Big Bird", "Debiasing", "Japanese and Korean", "word2vec explained"):
        assert kept in text, kept


def test_the_translator_page_keeps_the_focus_and_names_the_network_when_offline(book):
    """Translate pressed from the keyboard dropped the focus to <body> (the button was disabled
    while it worked); and over http without a network, the error told the reader to copy the
    weights folder, when the network was the cause."""
    base, _ = book
    browser = Browser()
    try:
        browser.send("Emulation.setFocusEmulationEnabled", enabled=True)  # focus as in a window
        browser.goto(base + "translate.html", settle=0.3)
        browser.evaluate("document.querySelector('.mft-load').click()")
        browser.wait_for("document.querySelector('.mft').dataset.mftState === 'ready'", 120)
        browser.evaluate("(() => { document.querySelector('.mft-input').value = 'I see the sea.';"
                         " document.querySelector('.mft-go').focus(); })()")
        for kind in ("keyDown", "keyUp"):
            browser.send("Input.dispatchKeyEvent", type=kind, key="Enter", code="Enter",
                         windowsVirtualKeyCode=13, text="\r" if kind == "keyDown" else "")
        browser.wait_for("document.querySelector('.mft').dataset.mftState === 'translated'", 60)
        focus = browser.evaluate("document.activeElement.className")
        browser.send("Network.enable")
        browser.send("Network.setCacheDisabled", cacheDisabled=True)  # not the files loaded above
        browser.goto(base + "translate.html", settle=0.3)
        browser.send("Network.emulateNetworkConditions", offline=True, latency=0,
                     downloadThroughput=-1, uploadThroughput=-1)
        browser.evaluate("document.querySelector('.mft-load').click()")
        browser.wait_for("document.querySelector('.mft').dataset.mftState === 'error'", 30)
        status = browser.evaluate("document.querySelector('.mft-status').textContent")
    finally:
        browser.close()
    assert focus == "mft-go", focus
    assert "network" in status and "copy" not in status, status
