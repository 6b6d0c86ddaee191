"""Chapter 12's interactive figure (issue 46) in the built book, in headless Chromium: `make
check-book` runs these after `make book` (BOOK_HTML names the built book); `make test` skips them.
The same checks as tests/test_figures_browser_ch02_ch10.py makes of chapters 2 and 10:

- after each input moves as a reader moves it (a real radio button, text box or number box and its
  event; the input typed a character at a time), the page shows what the figure's code computes
  under Node (tests/js/figures_ch12.mjs, the one tests/test_figures_ch12.py compares with
  minformer): every cell of the grid, the summary line and what the chosen query reads;
- every update takes under 50 ms, with no main-thread task over 50 ms meanwhile;
- the mouse over a query's row, a finger's tap on one, and the keyboard (Tab from the first
  control through every control, the arrow keys among the radio buttons and the queries) choose
  what the page shows;
- the polite live region says the new values once the reader pauses;
- every text reads at 4.5:1 or more in the light and the dark theme; the figure fits a 400 px
  screen (its largest grid too); it starts from file://; the page logs no error.
"""

import json
import os
import time
from pathlib import Path

import pytest
from browser import Browser
from test_built_book import book, faults  # noqa: F401 (the fixture: the built book, served)
from test_figures_browser import BOOK, CONTRAST, fmt, pytestmark, root  # noqa: F401 (the skips)
from test_figures_ch12 import run

NAME, PAGE = "ch12-masks", "chapters/12_three_architectures.html"
TYPED = "the dog ate my homework"
TARGET = "el perro comió mis deberes"

# The reader's moves in order: (data-input, value or None for a radio button, event, the values
# a sweep passes through first, the state the figure is then in).
MOVES = [
    ("arch-decoder-only", None, "change", [], {"arch": "decoder-only", "attn": "masked"}),
    ("source", TYPED, "input", [TYPED[:k] for k in range(1, len(TYPED))], {"source": TYPED}),
    ("srcPads", "3", "input", ["0", "1", "2"], {"srcPads": 3}),
    ("arch-encoder-decoder", None, "change", [], {"arch": "encoder-decoder"}),  # masked self stays
    ("target", TARGET, "input", [TARGET[:k] for k in range(1, len(TARGET))], {"target": TARGET}),
    ("tgtPads", "2", "input", ["3", "0", "1"], {"tgtPads": 2}),
    ("attn-cross", None, "change", [], {"attn": "cross"}),
]


def texts(r, query=0):
    """What the page shows for the Node answer r: every cell, the summary line, the chosen query."""
    out = {f"A-{i}-{j}": (fmt(a) if ok else "·") for i, (row, m) in enumerate(zip(r["A"], r["mask"]))
           for j, (a, ok) in enumerate(zip(row, m))}
    out["rule"] = f"{r['summary']} mask = {r['rule']}."
    out["focus"] = r["reads"][min(query, len(r["reads"]) - 1)]
    return out


def expected():
    state, states = {}, []
    for *_, change in MOVES:
        state = {**state, **change}
        states.append(dict(state))
    answers = run([{"op": "ch12", "state": s} for s in states])
    return states, answers


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


def shown(browser):
    return browser.evaluate(f"Object.fromEntries([...{root(NAME)}.querySelectorAll('[data-out]')]"
                            ".map(e => [e.dataset.out, e.textContent]))")


def center(browser, selector, index=0):
    return browser.evaluate(f"""(() => {{ const e = {root(NAME)}.querySelectorAll({json.dumps(selector)})[{index}];
      e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();
      return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")


def key(browser, name, code=None, shift=False):
    for kind in ("rawKeyDown", "keyUp"):
        browser.send("Input.dispatchKeyEvent", type=kind, key=name, code=code or name,
                     windowsVirtualKeyCode={"Tab": 9, "ArrowDown": 40, "ArrowUp": 38, "ArrowRight": 39,
                                            "ArrowLeft": 37, "End": 35}[name], modifiers=8 if shift else 0)
    time.sleep(0.05)


FOCUSED = f"""(() => {{ const a = document.activeElement, r = {root(NAME)};
  if (!r.contains(a)) return null;
  return a.dataset.input || (a.dataset.query !== undefined ? 'query-' + a.dataset.query : a.tagName); }})()"""


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    base, _ = book
    states, answers = expected()
    out = {"times": [], "tasks": [], "shown": [], "want": []}
    browser = Browser(width=1280, height=900)
    try:
        browser.goto(base + PAGE, settle=0.2)
        browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1'", 20)
        out["mount_ms"] = float(browser.evaluate(f"{root(NAME)}.dataset.mffMountMs"))
        out["start"] = (shown(browser), texts(run([{"op": "ch12"}])[0]))
        browser.evaluate(f"{root(NAME)}.scrollIntoView({{block: 'center'}}), 1")
        for (inp, value, event, sweep, _), r in zip(MOVES, answers):
            moved = browser.evaluate(f"({MOVE})({root(NAME)}, {json.dumps(inp)}, "
                                     f"{json.dumps(sweep + [value])}, {json.dumps(event)})")
            out["times"] += moved["times"]
            out["tasks"] += moved["tasks"]
            out.setdefault("tasks_by_move", []).append(moved["tasks"])
            want = texts(r)
            out["shown"].append({k: moved["shown"].get(k) for k in want})
            out["want"].append(want)
        final = answers[-1]
        # the mouse over query 3's row: it becomes the chosen query
        x, y = center(browser, "tbody tr", 3)
        browser.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y)
        time.sleep(0.1)
        out["hover"] = (shown(browser)["focus"], final["reads"][3])
        time.sleep(1.0)  # the reader pauses: the live region speaks
        out["live"] = (browser.evaluate(f"[...{root(NAME)}.querySelectorAll('[aria-live=polite]')]"
                                        ".map(e => e.textContent)"), final["reads"][3])
        # a finger's tap on query 5's row
        browser.send("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
        x, y = center(browser, "tbody tr", 5)
        browser.send("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": x, "y": y}])
        browser.send("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
        time.sleep(0.3)
        browser.send("Emulation.setTouchEmulationEnabled", enabled=False)
        out["tap"] = (shown(browser)["focus"], final["reads"][5])
        # the keyboard: from the first radio button, Tab through every control and the queries
        browser.evaluate(f"{root(NAME)}.querySelector('input:checked').focus(), 1")
        order = [browser.evaluate(FOCUSED)]
        for _ in range(30):
            key(browser, "Tab")
            order.append(browser.evaluate(FOCUSED))
            if order[-1] is None:
                break
        out["tab_order"] = (order, len(final["queries"]))
        # arrows: the first query, ArrowDown twice; then the architecture's radio buttons
        browser.evaluate(f"{root(NAME)}.querySelector('[data-query=\"0\"]').focus(), 1")
        key(browser, "ArrowDown")
        key(browser, "ArrowDown")
        out["arrows"] = (browser.evaluate(FOCUSED), shown(browser)["focus"], final["reads"][2])
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=\"arch-encoder-decoder\"]').focus(), 1")
        key(browser, "ArrowLeft")
        after = run([{"op": "ch12", "state": {**states[-1], "arch": "decoder-only", "attn": "masked"}}])[0]
        want = {k: v for k, v in texts(after).items() if k != "focus"}
        page = shown(browser)
        out["radio_keys"] = ({k: page.get(k) for k in want}, want)
        out["contrast"] = {}
        for theme in ("light", "dark"):
            browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
            out["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(NAME)})")
        out["errors"] = faults(browser)
        # a phone: at the start, and with the largest grid (10 queries by 10 keys)
        browser.send("Emulation.setDeviceMetricsOverride", width=400, height=800, deviceScaleFactor=1, mobile=True)
        browser.goto(base + PAGE, settle=0.2)
        browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1'", 20)
        narrow = ("(() => { const e = " + root(NAME) + "; const b = e.getBoundingClientRect();"
                  " const w = e.querySelector('table').parentElement;"
                  " return {right: b.right, scroll: e.scrollWidth, client: e.clientWidth,"
                  " page: document.documentElement.scrollWidth, grid: w.scrollWidth, box: w.clientWidth}; })()")
        out["narrow"] = [browser.evaluate(narrow)]
        for inp, value, event in [("arch-encoder-decoder", None, "change"), ("attn-masked", None, "change"),
                                  ("target", "uno dos tres cuatro cinco seis", "input"), ("tgtPads", "3", "input")]:
            browser.evaluate(f"({MOVE})({root(NAME)}, {json.dumps(inp)}, {json.dumps([value])}, {json.dumps(event)})")
        out["narrow"].append(browser.evaluate(narrow))
        out["narrow_rows"] = browser.evaluate(f"{root(NAME)}.querySelectorAll('tbody tr').length")
        out["errors"] += faults(browser)
        browser.goto((BOOK / PAGE).resolve().as_uri(), settle=0.5)
        browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1'", 20)
        out["file"] = browser.evaluate(f"{root(NAME)}?.dataset.mffReady === '1'")
    finally:
        browser.close()
    if os.environ.get("FIGURES_REPORT"):
        Path(os.environ["FIGURES_REPORT"]).write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return out


def test_the_figure_shows_what_node_computes(tour):
    page, node = tour["start"]
    assert {k: page.get(k) for k in node} == node
    assert tour["shown"] == tour["want"]


def test_the_figure_is_quick(tour):
    assert len(tour["times"]) > 40
    assert max(tour["times"]) < 50, f"slowest update {max(tour['times']):.1f} ms"
    assert tour["tasks"] == [], f"main-thread tasks over 50 ms: {tour['tasks']}"
    assert tour["mount_ms"] < 50, tour["mount_ms"]


def test_a_query_is_chosen_by_mouse_finger_and_keys(tour):
    for how in ("hover", "tap"):
        got, want = tour[how]
        assert got == want, how
    focused, got, want = tour["arrows"]
    assert focused == "query-2" and got == want
    got, want = tour["radio_keys"]
    assert got == want  # ArrowLeft from encoder-decoder: decoder-only


def test_every_control_is_reached_by_tab(tour):
    order, queries = tour["tab_order"]
    order = [x for x in order if x is not None]
    # one stop per radio group (the checked one), the texts, the pads, then every query
    assert order[:6] == ["arch-encoder-decoder", "attn-cross", "source", "srcPads", "target", "tgtPads"], order
    assert order[6:] == [f"query-{i}" for i in range(queries)], order


def test_the_figure_speaks_politely_and_reads_in_both_themes(tour):
    said, query = tour["live"]
    assert len(said) == 1 and said[0] == query, said
    for theme, (worst, where, n) in tour["contrast"].items():
        assert n > 20
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


def test_the_figure_fits_a_phone_opens_from_file_and_logs_nothing(tour):
    assert tour["narrow_rows"] == 10
    for n in tour["narrow"]:
        assert n["right"] <= 400 and n["scroll"] <= n["client"] and n["page"] <= 400, n
        assert n["grid"] <= n["box"], n  # the grid itself fits, no scrolling inside it
    assert tour["file"], "the figure did not start from file://"
    assert tour["errors"] == []
