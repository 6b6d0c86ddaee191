"""Chapter 9's interactive figure, ch09-gates (issue 46), in the built book, in headless
Chromium: `make check-book` runs this after `make book` (BOOK_HTML names the built book);
`make test` skips it. The checks of tests/test_figures_browser_ch02_ch10.py:

- after each input moves as a reader moves it (a real <input> and its event), the page shows what
  the figure's code computes under Node (tests/js/figures_ch09.mjs, the one
  tests/test_figures_ch09.py compares with minformer): a sentence typed a character at a time,
  then the word slider swept over every word and back;
- every update, and every task of the figure's start (the weights decoded in three tasks, the
  start sentence read two words a task), takes under 50 ms, with no main-thread task over 50 ms
  while the reader moves the inputs;
- by the keyboard alone: Tab goes from the sentence to the slider and to both buttons, the right
  arrow on the slider and Enter on "next word" each move one word on;
- the polite live region says the new values once the reader pauses;
- every text reads at 4.5:1 or more in the light and the dark theme; the figure fits a 400 px
  screen; it starts from file:// too; the pages log no error.
"""

import json
import os
import time
from pathlib import Path

import pytest
from browser import Browser
from test_built_book import book, faults  # noqa: F401 (the fixture: the built book, served)
from test_figures_browser import BOOK, CONTRAST, pytestmark, root  # noqa: F401 (the skips)
from test_figures_ch09 import run

NAME, PAGE = "ch09-gates", "chapters/09_sequence_models.html"
TYPED = "the war ended in 1945 and the army returned home after four years"
WORD = 5  # the slider's value after its sweep (1-based)


def texts(s, vocab) -> dict:
    """The three lines the page shows for summary s (ch09.js's render)."""
    t, n = s["t"], len(s["ids"])
    w, i = s["words"][t], s["ids"][t]
    unk = " (read as <unk>)" if i == vocab["unk"] and w != "<unk>" else ""
    later = s["later"]
    carry = ("The last word: its state is the one the model predicts from." if later == 0 else
             f"Copied along the gate path to the last word (the product of z over the {later} "
             f"{'later word' if later == 1 else 'later words'}): mean {s['carry'][later]:.3f}; {s['half']}"
             f"{' dimension keeps' if s['half'] == 1 else ' dimensions keep'} more than half.")
    return {"word": f"Word {t + 1} of {n}: “{w}”{unk}, id {i}.",
            "gate": f"Update gate z: mean {s['meanZ']:.3f}; {s['keep']} of {vocab['d']} dimensions above "
                    f"{vocab['keep']} (old value copied), {s['drop']} below {vocab['drop']} (overwritten).",
            "carry": carry}


def summaries():
    (vocab,) = run([{"op": "vocab"}])
    # typed over the start sentence from its first letter: the sentence has one word at first, so
    # the figure is at word 1, and stays there as the sentence grows
    tasks = [(vocab["start"], 1), (TYPED, 0), (TYPED, WORD - 1), (TYPED, WORD), (TYPED, WORD + 1)]
    got = run([{"op": "summary", "text": text, "t": t} for text, t in tasks])
    for s, (_, t) in zip(got, tasks):
        s["t"] = t
    return vocab, [texts(s, vocab) for s in got]


MOVE = r"""(async (root, name, values, event) => {
  const input = root.querySelector(`[data-input="${name}"]`);
  const tasks = [], seen = new PerformanceObserver(l => { for (const e of l.getEntries()) tasks.push(e.duration); });
  seen.observe({type: 'longtask'});
  const times = [];
  for (const v of values) {
    const t0 = performance.now();
    input.value = v;
    input.dispatchEvent(new Event(event, {bubbles: true}));
    void root.offsetHeight;  // style and layout now, inside the timing
    times.push(performance.now() - t0);
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  }
  await new Promise(r => setTimeout(r, 100));
  seen.disconnect();
  return {times, tasks, shown: SHOWN(root)}; })"""
SHOWN = ("(root => Object.fromEntries([...root.querySelectorAll('[data-out]')]"
         ".map(e => [e.dataset.out, e.textContent])))")
MOVE = MOVE.replace("SHOWN", SHOWN)
KEYS = {"Tab": 9, "Enter": 13, "ArrowRight": 39}


def press(browser, key: str):
    extra = {"text": "\r"} if key == "Enter" else {}
    browser.send("Input.dispatchKeyEvent", type="keyDown", key=key, code=key,
                 windowsVirtualKeyCode=KEYS[key], **extra)
    browser.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=key, windowsVirtualKeyCode=KEYS[key])
    time.sleep(0.05)


def focused(browser) -> str:
    return browser.evaluate("document.activeElement?.dataset?.input || document.activeElement?.tagName || ''")


def wait_ready(browser):
    browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1' && {root(NAME)}.dataset.mffBuilt === '1'", 20)
    # the page's own work after loading (MathJax typesets the chapter's many formulas) is not the
    # figure's: the reader's moves are timed once it is done
    browser.evaluate("(async () => { if (window.MathJax?.startup?.promise) await MathJax.startup.promise;"
                     " await new Promise(r => setTimeout(r, 300)); return 1; })()")


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    base, _ = book
    vocab, (start, typed, slid, third, fourth) = summaries()
    n = len(run([{"op": "words", "text": TYPED}])[0]["ids"])
    r = {"times": [], "tasks": [], "want": {"start": start, "typed": typed, "slid": slid, "arrow": third,
                                            "enter": fourth}}
    browser = Browser(width=1280, height=900)
    try:
        browser.goto(base + PAGE, settle=0.2)
        wait_ready(browser)
        r["dataset"] = json.loads(browser.evaluate(f"JSON.stringify({root(NAME)}.dataset)"))
        r["start"] = browser.evaluate(f"{SHOWN}({root(NAME)})")
        browser.evaluate(f"{root(NAME)}.scrollIntoView({{block: 'center'}}), 1")
        sweep = [str(k) for k in list(range(1, n + 1)) + list(range(n, WORD - 1, -1))]
        for key, inp, values in [("typed", "text", [TYPED[:k] for k in range(1, len(TYPED) + 1)]),
                                 ("slid", "word", sweep)]:
            moved = browser.evaluate(f"({MOVE})({root(NAME)}, {json.dumps(inp)}, {json.dumps(values)}, 'input')")
            r["times"] += moved["times"]
            r["tasks"] += moved["tasks"]
            r[key] = moved["shown"]
            r[key + "_tasks"] = moved["tasks"]
        # the keyboard: Tab from the sentence through the controls; the right arrow on the slider;
        # Enter on "next word"
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=text]').focus(), 1")
        order = [focused(browser)]
        for _ in range(3):
            press(browser, "Tab")
            order.append(focused(browser))
        r["tab_order"] = order
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=word]').focus(), 1")
        press(browser, "ArrowRight")
        r["arrow"] = browser.evaluate(f"{SHOWN}({root(NAME)})")
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=next]').focus(), 1")
        press(browser, "Enter")
        r["enter"] = browser.evaluate(f"{SHOWN}({root(NAME)})")
        time.sleep(1.0)  # the reader pauses: the live region speaks
        r["live"] = browser.evaluate(f"[...{root(NAME)}.querySelectorAll('[aria-live=polite]')]"
                                     ".map(e => e.textContent)")
        r["contrast"] = {}
        for theme in ("light", "dark"):
            browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
            r["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(NAME)})")
        r["errors"] = faults(browser)
        browser.send("Emulation.setDeviceMetricsOverride", width=400, height=800, deviceScaleFactor=1, mobile=True)
        browser.goto(base + PAGE, settle=0.2)
        wait_ready(browser)
        r["narrow"] = browser.evaluate(
            f"(() => {{ const e = {root(NAME)}; const b = e.getBoundingClientRect();"
            " return {right: b.right, scroll: e.scrollWidth, client: e.clientWidth,"
            " page: document.documentElement.scrollWidth}; })()")
        r["errors"] += faults(browser)
        browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)
        browser.goto((BOOK / PAGE).resolve().as_uri(), settle=0.5)
        wait_ready(browser)
        r["file"] = browser.evaluate(f"{root(NAME)}?.dataset.mffBuilt === '1'")
    finally:
        browser.close()
    if os.environ.get("FIGURES_REPORT"):
        Path(os.environ["FIGURES_REPORT"]).write_text(json.dumps(r, indent=1, ensure_ascii=False))
    return r


def test_the_figure_shows_what_node_computes(tour):
    for key in ("start", "typed", "slid", "arrow", "enter"):
        assert tour[key] == tour["want"][key], key


def test_the_figure_is_quick(tour):
    r = tour
    assert len(r["times"]) > 30
    assert max(r["times"]) < 50, f"slowest update {max(r['times']):.1f} ms"
    assert r["tasks"] == [], f"main-thread tasks over 50 ms: {r['tasks']}"
    assert float(r["dataset"]["mffMountMs"]) < 50, r["dataset"]
    assert float(r["dataset"]["mffLongestStepMs"]) < 50, r["dataset"]


def test_the_figure_works_by_keyboard(tour):
    assert tour["tab_order"] == ["text", "word", "back", "next"], tour["tab_order"]


def test_the_figure_speaks_politely_and_reads_in_both_themes(tour):
    r = tour
    assert len(r["live"]) == 1 and r["live"][0].startswith(r["want"]["enter"]["word"]), r["live"]
    for theme, (worst, where, n) in r["contrast"].items():
        assert n > 5
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


def test_the_figure_fits_a_phone_opens_from_file_and_logs_nothing(tour):
    r = tour
    assert r["narrow"]["right"] <= 400 and r["narrow"]["scroll"] <= r["narrow"]["client"], r["narrow"]
    assert r["narrow"]["page"] <= 400, r["narrow"]
    assert r["file"], f"{NAME} did not start from file://"
    assert r["errors"] == []
