"""Chapter 11's interactive figure (ch11-neighbours, issue 46) in the built book, in headless
Chromium: `make check-book` runs this after `make book` (BOOK_HTML names the built book); `make
test` skips it. The checks of tests/test_figures_browser_ch02_ch10.py:

- after each input is typed as a reader types it (a real <input>, its input event, a character at
  a time), the page shows what the figure's code computes under Node (tests/js/figures_ch11.mjs,
  the one tests/test_figures_ch11.py compares with minformer): an unknown word's message, a word's
  ten neighbours, an analogy's five answers;
- every update takes under 50 ms, and no main-thread task over 50 ms runs meanwhile; the mount
  and each of the short tasks after it (the bytes read, then 750 words at a time their vectors
  and their entries in the autocomplete list, then the start shown) under 50 ms;
- the keyboard: Tab reaches every control (the four word boxes, the example buttons, every listed
  word), typed keys look a word up, Enter on a listed word looks that word up, Enter on an example
  asks its analogy;
- the polite live region says the new values once the reader pauses;
- every text reads at 4.5:1 or more in the light and the dark theme; the figure fits a 400 px
  screen; it starts from file:// too; the page logs no error.
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from browser import Browser
from test_built_book import book, faults  # noqa: F401 (the fixture: the built book, served)
from test_figures_browser import BOOK, CONTRAST, fmt, pytestmark, root  # noqa: F401 (the skips)
from test_figures_ch11 import DRIVER, NODE

NAME, PAGE = "ch11-neighbours", "chapters/11_word2vec.html"
UNKNOWN, WORD, QUESTION = "qwerty", "bank", ("man", "king", "woman")


def run(tasks):
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": tasks}), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["results"]


def typed(word):
    return [word[:k] for k in range(1, len(word))]


def rows(prefix, answers):
    return {**{f"{prefix}w-{r}": w for r, (w, _) in enumerate(answers)},
            **{f"{prefix}c-{r}": fmt(c, 3) for r, (_, c) in enumerate(answers)}}


def moves():
    """The inputs typed in order: (data-input, value, the values before it, data-out -> text)."""
    near, answers, suggest, data = run([
        {"op": "ch11neighbours", "words": [WORD], "k": 10},
        {"op": "ch11analogy", "questions": [list(QUESTION)], "k": 5},
        {"op": "ch11suggest", "words": [UNKNOWN]}, {"op": "ch11data"}])
    words = data["words"]
    unknown = (f"“{UNKNOWN}” is not among the 3,000 most frequent words of WikiText-2 (the figure "
               f"carries only those); words that begin like it: {', '.join(suggest['suggestions'][0])}.")
    a, b, c = QUESTION
    return [
        ("word", UNKNOWN, typed(UNKNOWN), {"status": unknown, **{f"nw-{r}": "" for r in range(10)}}),
        ("word", WORD, typed(WORD), {"status": f"Nearest to “{WORD}” (frequency rank "
                                               f"{words.index(WORD) + 1:,}):", **rows("n", near[0])}),
        ("a", a, typed(a), {}),
        ("b", b, typed(b), {}),
        ("c", c, typed(c), {"analogy": f"“{a}” is to “{b}” as “{c}” is to:", **rows("a", answers[0])}),
    ], near[0], answers[0]


MOVE = r"""(async (root, name, values) => {
  const input = root.querySelector(`[data-input="${name}"]`);
  const tasks = [], seen = new PerformanceObserver(l => { for (const e of l.getEntries()) tasks.push(e.duration); });
  seen.observe({type: 'longtask'});
  const times = [];
  for (const v of values) {
    const t0 = performance.now();
    input.value = v;
    input.dispatchEvent(new Event('input', {bubbles: true}));
    void root.offsetHeight;  // style and layout now, inside the timing
    times.push(performance.now() - t0);
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  }
  await new Promise(r => setTimeout(r, 100));
  seen.disconnect();
  const shown = [...root.querySelectorAll('[data-out]')].map(e => [e.dataset.out, e.textContent]);
  return {times, tasks, shown: Object.fromEntries(shown)}; })"""

# what has the focus: a word box by its data-input, a button by its text
FOCUS = (f"(() => {{ const e = document.activeElement; if (!{root(NAME)}.contains(e)) return null;"
         " return e.dataset.input ? 'input:' + e.dataset.input : e.tagName.toLowerCase() + ':' + e.textContent; })()")


def key(browser, name, code, vk, text=None):
    extra = {"text": text} if text else {}
    browser.send("Input.dispatchKeyEvent", type="keyDown", key=name, code=code, windowsVirtualKeyCode=vk,
                 nativeVirtualKeyCode=vk, **extra)
    browser.send("Input.dispatchKeyEvent", type="keyUp", key=name, code=code, windowsVirtualKeyCode=vk,
                 nativeVirtualKeyCode=vk)


def keyboard(browser):
    """Tab through the figure from its first box, type a word, press Enter on a listed word and on
    an example; what had the focus at each Tab, and what the figure showed after each step."""
    browser.evaluate(f"{root(NAME)}.querySelector('[data-input=word]').focus(), 1")
    order = [browser.evaluate(FOCUS)]
    for _ in range(40):
        key(browser, "Tab", "Tab", 9)
        where = browser.evaluate(FOCUS)
        if where is None:
            break
        order.append(where)
    out = {"order": order}
    browser.evaluate(f"(() => {{ const i = {root(NAME)}.querySelector('[data-input=word]');"
                     " i.focus(); i.select(); })()")
    browser.send("Input.insertText", text="france")
    time.sleep(0.2)
    out["typed"] = browser.evaluate(f"{root(NAME)}.querySelector('[data-out=status]').textContent")
    # Tab from the word box to the first listed word, then Enter
    for _ in range(40):
        key(browser, "Tab", "Tab", 9)
        if (browser.evaluate(FOCUS) or "").startswith("button:") and \
                browser.evaluate("document.activeElement.closest('td') !== null"):
            break
    out["pressed"] = browser.evaluate("document.activeElement.textContent")
    key(browser, "Enter", "Enter", 13, "\r")
    time.sleep(0.2)
    out["after"] = browser.evaluate(f"[{root(NAME)}.querySelector('[data-input=word]').value,"
                                    f" {root(NAME)}.querySelector('[data-out=status]').textContent]")
    example = browser.evaluate(f"(() => {{ const b = [...{root(NAME)}.querySelectorAll('button')]"
                               ".find(b => b.textContent.startsWith('paris :')); b.focus(); return b.textContent; })()")
    key(browser, "Enter", "Enter", 13, "\r")
    time.sleep(0.2)
    out["example"] = [example, browser.evaluate(f"{root(NAME)}.querySelector('[data-out=analogy]').textContent")]
    return out


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    base, _ = book
    want, near, answers = moves()
    browser = Browser(width=1280, height=900)
    r = {"times": [], "tasks": [], "shown": [], "want": [], "near": near, "answers": answers}
    try:
        browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1,
                     mobile=False)
        browser.errors.clear()
        browser.goto(base + PAGE, settle=0.2)
        browser.wait_for(f"{root(NAME)}?.dataset.mffBuilt === '1'", 20)
        r["dataset"] = json.loads(browser.evaluate(f"JSON.stringify({root(NAME)}.dataset)"))
        browser.evaluate(f"{root(NAME)}.scrollIntoView({{block: 'center'}}), 1")
        for inp, value, sweep, texts in want:
            moved = browser.evaluate(f"({MOVE})({root(NAME)}, {json.dumps(inp)}, {json.dumps(sweep + [value])})")
            r["times"] += moved["times"]
            r["tasks"] += moved["tasks"]
            r["shown"].append({k: moved["shown"].get(k) for k in texts})
            r["want"].append(texts)
        time.sleep(1.0)  # the reader pauses: the live region speaks
        r["live"] = browser.evaluate(f"[...{root(NAME)}.querySelectorAll('[aria-live=polite]')]"
                                     ".map(e => e.textContent)")
        r["contrast"] = {}
        for theme in ("light", "dark"):
            browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
            r["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(NAME)})")
        r["keys"] = keyboard(browser)
        r["errors"] = faults(browser)
        browser.send("Emulation.setDeviceMetricsOverride", width=400, height=800, deviceScaleFactor=1,
                     mobile=True)
        browser.goto(base + PAGE, settle=0.2)
        browser.wait_for(f"{root(NAME)}?.dataset.mffBuilt === '1'", 20)
        r["narrow"] = browser.evaluate(
            f"(() => {{ const e = {root(NAME)}; const b = e.getBoundingClientRect();"
            " return {right: b.right, scroll: e.scrollWidth, client: e.clientWidth,"
            " page: document.documentElement.scrollWidth}; })()")
        r["errors"] += faults(browser)
        browser.goto((BOOK / PAGE).resolve().as_uri(), settle=0.5)
        browser.wait_for(f"{root(NAME)}?.dataset.mffBuilt === '1'", 20)
        r["file"] = browser.evaluate(f"{root(NAME)}.querySelectorAll('[data-out^=nw-] button').length")
    finally:
        browser.close()
    if os.environ.get("FIGURES_REPORT"):
        Path(os.environ["FIGURES_REPORT"]).write_text(json.dumps(r, indent=1, ensure_ascii=False))
    return r


def test_the_figure_shows_what_node_computes(tour):
    assert tour["shown"] == tour["want"]


def test_the_figure_is_quick(tour):
    assert len(tour["times"]) > 20
    assert max(tour["times"]) < 50, f"slowest update {max(tour['times']):.1f} ms"
    assert tour["tasks"] == [], f"main-thread tasks over 50 ms: {tour['tasks']}"
    assert float(tour["dataset"]["mffMountMs"]) < 50, tour["dataset"]
    assert float(tour["dataset"]["mffLongestStepMs"]) < 50, tour["dataset"]


def test_the_figure_works_by_keyboard(tour):
    k = tour["keys"]
    order = k["order"]
    for box in ("word", "a", "b", "c"):
        assert f"input:{box}" in order, order
    listed = [w for w, _ in tour["near"]] + [w for w, _ in tour["answers"]]
    assert all(f"button:{w}" in order for w in listed), order  # every listed word
    assert sum(o.startswith("button:") and "::" in o for o in order) == 4, order  # the examples
    assert k["typed"] == "Nearest to “france” (frequency rank 573):"
    assert k["after"][0] == k["pressed"] and k["after"][1].startswith(f"Nearest to “{k['pressed']}”")
    assert k["example"] == ["paris : france :: rome", "“paris” is to “france” as “rome” is to:"]


def test_the_figure_speaks_politely_and_reads_in_both_themes(tour):
    assert len(tour["live"]) == 1, tour["live"]
    a, b, c = QUESTION
    assert tour["live"][0] == (f"{a} is to {b} as {c} is to " + ", ".join(
        f"{w} {fmt(x, 3)}" for w, x in tour["answers"]) + ".")
    for theme, (worst, where, n) in tour["contrast"].items():
        assert n > 20
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


def test_the_figure_fits_a_phone_opens_from_file_and_logs_nothing(tour):
    r = tour
    assert r["narrow"]["right"] <= 400 and r["narrow"]["scroll"] <= r["narrow"]["client"], r["narrow"]
    assert r["narrow"]["page"] <= 400, r["narrow"]
    assert r["file"] == 10, f"{NAME} did not start from file://"
    assert r["errors"] == []
