"""Chapter 6's interactive figure ("ch06-heads", issue 46) in the built book, in headless Chromium:
`make check-book` runs this after `make book` (BOOK_HTML names the built book); `make test` skips
it. The same checks as tests/test_figures_browser_ch02_ch10.py makes of its figures:

- after each input moves as a reader moves it (a real <select>, radio button or slider and its
  event), the page shows what the figure's code computes under Node (tests/js/figures_ch06.mjs,
  the one tests/test_figures_ch06.py compares with minformer): every weight, guess and sentence;
- every update takes under 50 ms, and no main-thread task over 50 ms runs meanwhile (a word
  changed through all 16 words, the three heads, the query word and the feature slid end to end);
- the keyboard reaches every control with Tab and works each (arrow keys on a menu, a radio
  button and both sliders, Enter on the reset button); a tap (touch) on a row of the table picks
  its word;
- the polite live region says the new values once the reader pauses;
- every text reads at 4.5:1 or more in the light and the dark theme; the figure fits a 400 px
  screen; it starts from file:// too; the page logs no error.
"""

import json
import os
import time
from pathlib import Path

import pytest
from browser import Browser
from test_built_book import book, faults  # noqa: F401 (the fixture: the built book, served)
from test_figures_browser import BOOK, CONTRAST, pytestmark, root  # noqa: F401 (the skips)
from test_figures_ch06 import run

NAME, PAGE = "ch06-heads", "chapters/06_multi_head_attention.html"
CAT = 7  # "cat", the word that replaces word 4


def moves():
    """The moves in order: (data-input, value or None for a radio button, event, the sweep before
    it, the state the figure is then in)."""
    (data,) = run([{"op": "data"}])
    state = dict(data["start"], ids=list(data["start"]["ids"]))
    out = []

    def move(inp, value, event, sweep, **change):
        if "ids" in change:
            change["ids"] = list(change["ids"])
        state.update(change)
        out.append((inp, value, event, sweep, json.loads(json.dumps(state))))

    ids = list(state["ids"])
    ids[3] = CAT
    move("w4", str(CAT), "change", [str(k) for k in range(16)], ids=ids)
    move("head-2", None, "change", [], view=2)
    move("query", "5", "input", [str(k) for k in range(1, 9)] + [str(k) for k in range(8, 0, -1)], query=4)
    move("feature", "11", "input", [str(k) for k in range(16)], feature=11)
    move("head-0", None, "change", [], view=0)
    return out


MOVE = r"""(async (root, name, values, event) => {
  const input = root.querySelector(`[data-input="${name}"]`);
  const tasks = [], seen = new PerformanceObserver(l => { for (const e of l.getEntries()) tasks.push(e.duration); });
  seen.observe({type: 'longtask'});
  const times = [];
  for (const v of values) {
    const t0 = performance.now();
    if (v === null) input.checked = true; else input.value = v;
    input.dispatchEvent(new Event(event, {bubbles: true}));
    void root.offsetHeight;  // style and layout now, inside the timing
    times.push(performance.now() - t0);
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  }
  await new Promise(r => setTimeout(r, 100));
  seen.disconnect();
  const shown = [...root.querySelectorAll('[data-out]')].map(e => [e.dataset.out, e.textContent]);
  return {times, tasks, shown: Object.fromEntries(shown)}; })"""

SHOWN = (f"Object.fromEntries([...{root(NAME)}.querySelectorAll('[data-out]')]"
         ".map(e => [e.dataset.out, e.textContent]))")
FOCUSED = "document.activeElement?.dataset?.input || document.activeElement?.textContent || ''"


def key(browser, name, code, vk, text=None):
    down = {"type": "keyDown", "text": text} if text else {"type": "rawKeyDown"}
    for event in (down, {"type": "keyUp"}):
        browser.send("Input.dispatchKeyEvent", key=name, code=code, windowsVirtualKeyCode=vk,
                     nativeVirtualKeyCode=vk, **event)
    time.sleep(0.05)


def keyboard(browser):
    """Tab from just before the figure through all its controls; then arrow keys on a menu, the
    radio buttons and the sliders, and Enter on reset. Returns what was reached and the states."""
    browser.evaluate(f"(() => {{ const b = document.createElement('button'); b.id = 'before-ch06';"
                     f" {root(NAME)}.before(b); b.focus(); }})()")
    reached = []
    for _ in range(16):
        key(browser, "Tab", "Tab", 9)
        reached.append(browser.evaluate(FOCUSED))
    states = {}
    browser.evaluate(f"{root(NAME)}.querySelector('[data-input=w2]').focus(), 1")
    key(browser, "ArrowDown", "ArrowDown", 40)
    states["menu"] = browser.evaluate(f"{root(NAME)}.querySelector('[data-input=w2]').value")
    browser.evaluate(f"{root(NAME)}.querySelector('[data-input=head-1]').focus(), 1")
    key(browser, "ArrowRight", "ArrowRight", 39)
    states["radio"] = browser.evaluate(f"{root(NAME)}.querySelector('[data-input=head-2]').checked")
    for name in ("query", "feature"):
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input={name}]').focus(), 1")
        key(browser, "ArrowRight", "ArrowRight", 39)
        states[name] = browser.evaluate(f"{root(NAME)}.querySelector('[data-input={name}]').value")
    states["shown"] = browser.evaluate(SHOWN)
    browser.evaluate(f"[...{root(NAME)}.querySelectorAll('button')].at(-1).focus(), 1")
    key(browser, "Enter", "Enter", 13, text="\r")
    states["reset"] = browser.evaluate(SHOWN)
    return reached, states


def tap(browser, row):
    """A finger taps the label of row `row` (0-based) of the weights' table."""
    where = browser.evaluate(f"""(() => {{ const th = {root(NAME)}.querySelectorAll('tbody th')[{row}];
      th.scrollIntoView({{block: 'center'}}); const r = th.getBoundingClientRect();
      return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
    x, y = where
    browser.send("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": x, "y": y}])
    browser.send("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
    time.sleep(0.3)
    return browser.evaluate(f"{root(NAME)}.querySelector('[data-input=query]').value")


def wait_ready(browser):
    browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1' && {root(NAME)}.dataset.mffDrawn === '1'", 20)
    time.sleep(0.1)  # the figure's last start-up task (the other model) has run


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    base, _ = book
    plan = moves()
    want = run([{"op": "texts", "state": s} for *_, s in plan])
    start = run([{"op": "data"}])[0]["start"]
    after_keys = {**start, "ids": [start["ids"][0], start["ids"][1] + 1] + start["ids"][2:], "view": 2,
                  "query": start["query"] + 1, "feature": start["feature"] + 1}
    keyboard_want = run([{"op": "texts", "state": after_keys}, {"op": "texts", "state": start}])
    r = {"times": [], "tasks": [], "shown": [], "want": want}
    browser = Browser(width=1280, height=900)
    try:
        browser.errors.clear()
        browser.goto(base + PAGE, settle=0.2)
        wait_ready(browser)
        r["dataset"] = json.loads(browser.evaluate(f"JSON.stringify({root(NAME)}.dataset)"))
        browser.evaluate(f"{root(NAME)}.scrollIntoView({{block: 'center'}}), 1")
        for inp, value, event, sweep, _ in plan:
            moved = browser.evaluate(f"({MOVE})({root(NAME)}, {json.dumps(inp)}, "
                                     f"{json.dumps(sweep + [value])}, {json.dumps(event)})")
            r["times"] += moved["times"]
            r["tasks"] += moved["tasks"]
            r["shown"].append(moved["shown"])
        time.sleep(1.0)  # the reader pauses: the live region speaks
        r["live"] = browser.evaluate(f"[...{root(NAME)}.querySelectorAll('[aria-live=polite]')]"
                                     ".map(e => e.textContent)")
        r["contrast"] = {}
        for theme in ("light", "dark"):
            browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
            r["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(NAME)})")
        browser.evaluate("document.documentElement.dataset.theme = 'light', 1")
        browser.goto(base + PAGE, settle=0.2)
        wait_ready(browser)
        r["reached"], r["keys"] = keyboard(browser)
        r["keyboard_want"] = keyboard_want
        browser.send("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
        r["tap"] = tap(browser, 6)
        browser.send("Emulation.setTouchEmulationEnabled", enabled=False)
        r["errors"] = faults(browser)
        browser.send("Emulation.setDeviceMetricsOverride", width=400, height=800, deviceScaleFactor=1,
                     mobile=True)
        browser.goto(base + PAGE, settle=0.2)
        wait_ready(browser)
        r["narrow"] = browser.evaluate(
            f"(() => {{ const e = {root(NAME)}; const b = e.getBoundingClientRect();"
            " return {right: b.right, scroll: e.scrollWidth, client: e.clientWidth,"
            " page: document.documentElement.scrollWidth}; })()")
        r["errors"] += faults(browser)
        browser.goto((BOOK / PAGE).resolve().as_uri(), settle=0.5)
        wait_ready(browser)
        r["file"] = browser.evaluate(f"{root(NAME)}?.dataset.mffReady === '1'")
    finally:
        browser.close()
    if os.environ.get("FIGURES_REPORT"):
        Path(os.environ["FIGURES_REPORT"]).write_text(json.dumps(r, indent=1, ensure_ascii=False))
    return r


def test_the_figure_shows_what_node_computes(tour):
    for shown, want in zip(tour["shown"], tour["want"]):
        assert {k: shown.get(k) for k in want} == want
    assert len(tour["shown"]) == 5


def test_the_figure_is_quick(tour):
    assert len(tour["times"]) > 40
    assert max(tour["times"]) < 50, f"slowest update {max(tour['times']):.1f} ms"
    assert tour["tasks"] == [], f"main-thread tasks over 50 ms: {tour['tasks']}"
    assert float(tour["dataset"]["mffMountMs"]) < 50, tour["dataset"]
    assert float(tour["dataset"]["mffFirstMs"]) < 50, tour["dataset"]


def test_the_keyboard_reaches_and_works_every_control_and_a_tap_picks_a_word(tour):
    reached = tour["reached"]
    wanted = [f"w{k}" for k in range(1, 9)] + ["head-1", "query", "feature", "reset"]
    assert [c for c in reached if c in wanted][:len(wanted)] == wanted, reached
    keys, (after, start) = tour["keys"], tour["keyboard_want"]
    # word 2, "big" (id 2), one down the menu; head 2; query word 4; feature 1
    assert (keys["menu"], keys["radio"], keys["query"], keys["feature"]) == ("3", True, "4", "1"), keys
    assert {k: keys["shown"].get(k) for k in after} == after
    assert {k: keys["reset"].get(k) for k in start} == start
    assert tour["tap"] == "7"


def test_the_figure_speaks_politely_and_reads_in_both_themes(tour):
    live = tour["live"]
    final = tour["want"][-1]
    assert len(live) == 1 and live[0] == final["summary"] + " " + final["entry"], live
    for theme, (worst, where, n) in tour["contrast"].items():
        assert n > 5
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


def test_the_figure_fits_a_phone_opens_from_file_and_logs_nothing(tour):
    r = tour
    assert r["narrow"]["right"] <= 400 and r["narrow"]["scroll"] <= r["narrow"]["client"], r["narrow"]
    assert r["narrow"]["page"] <= 400, r["narrow"]
    assert r["file"], "ch06-heads did not start from file://"
    assert r["errors"] == []
