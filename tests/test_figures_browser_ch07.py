"""Chapter 7's interactive figure ("ch07-norms", issue 46) in the built book, in headless
Chromium: `make check-book` runs this after `make book` (BOOK_HTML names the built book);
`make test` skips it. The checks of tests/test_figures_browser_ch02_ch10.py:

- after each input moves as a reader moves it (a real <select> or <input> and its event), the
  page shows what the figure's code computes under Node (tests/js/figures_ch07.mjs, the one
  tests/test_figures_ch07.py compares with minformer): the placement chosen, the depth swept from
  1 to 24 and back, the width and the weight scale swept at depth 24 in both placements (the
  largest computations of the page), a seed typed;
- every update takes under 50 ms, with no main-thread task over 50 ms meanwhile (an update
  computes in slices of 8 ms, the first in the reader's event; the figure's start likewise), and
  no slice of any computation takes 50 ms;
- the keyboard alone reaches every control with Tab and works it (arrow keys on the menu and
  the sliders, digits in the seed's box); a finger drags the depth slider;
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
from test_figures_browser import BOOK, CONTRAST, fmt, pytestmark, root  # noqa: F401 (the skips)
from test_figures_ch07 import run

NAME = "ch07-norms"
PAGE = "chapters/07_transformer_block.html"
ROWS = ("rms-last", "grad-first", "grad-last", "ratio", "input-grad")


def sig(x: float) -> str:
    """ch07.js's sig: three significant digits, or a power of ten."""
    if x == 0:
        return "0"
    if 0.01 <= abs(x) < 1000:
        return f"{x:#.3g}".rstrip(".")
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}".replace("e-", "e−")


def texts(state: dict) -> dict:
    """The table the page must show for state {placement, L, d, gain, seed}."""
    (r,) = run([{"op": "ch07", **state}])
    out = {}
    for kind in ("post", "pre"):
        s = r.get(kind)
        L = state["L"]
        values = ([fmt(s["rms"][L]), sig(s["paramGrad"][0]), sig(s["paramGrad"][L - 1]),
                   fmt(s["paramGrad"][L - 1] / s["paramGrad"][0]), sig(s["streamGrad"][0])]
                  if s else ["–"] * 5)
        out.update({f"{kind}-{row}": v for row, v in zip(ROWS, values)})
    return out


def moves():
    """The moves in order: (data-input, value, event, sweep before it, the state after it)."""
    (data,) = run([{"op": "ch07data"}])
    widths, gains = data["widths"], data["gains"]
    state = dict(data["start"])
    out = []

    def move(inp, value, event, sweep, **change):
        state.update(change)
        out.append((inp, value, event, sweep, dict(state)))

    move("placement", "post", "change", [], placement="post")
    move("depth", "7", "input", [str(k) for k in list(range(1, 25)) + list(range(24, 0, -1))], L=7)
    move("placement", "both", "change", ["pre"], placement="both")
    move("depth", "24", "input", [], L=24)
    move("width", str(len(widths) - 1), "input", [str(k) for k in range(len(widths))] * 2, d=widths[-1])
    move("gain", str(len(gains) - 1), "input", [str(k) for k in range(len(gains))], gain=gains[-1])
    move("seed", "5", "input", ["1", "12", "123", "1"], seed=5)
    return out


# Move an input through a sweep of values and then the tested one, timing each update (the
# handler, style and layout), and watch for long tasks.
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
  for (let w = 0; w < 100 && root.dataset.mffPending === '1'; w++) await new Promise(r => setTimeout(r, 20));
  await new Promise(r => setTimeout(r, 100));
  seen.disconnect();
  const shown = [...root.querySelectorAll('[data-out]')].map(e => [e.dataset.out, e.textContent]);
  return {times, tasks, shown: Object.fromEntries(shown), total: Number(root.dataset.mffTotalMs)}; })"""

FOCUSED = "document.activeElement?.dataset?.input || ''"
VALUES = (f"Object.fromEntries([...{root(NAME)}.querySelectorAll('[data-input]')]"
          ".map(e => [e.dataset.input, e.value]))")


def key(browser, name, code, vk, text=None):
    for kind in ("rawKeyDown", "char", "keyUp") if text else ("rawKeyDown", "keyUp"):
        extra = {"text": text} if kind == "char" else {}
        browser.send("Input.dispatchKeyEvent", type=kind, key=name, code=code, windowsVirtualKeyCode=vk,
                     nativeVirtualKeyCode=vk, **extra)
    time.sleep(0.05)


def keyboard(browser):
    """Tab from just before the figure through its controls; then the keys on each. Returns the
    controls reached in order and the inputs' values after each key."""
    browser.evaluate(f"(() => {{ const b = document.createElement('button'); b.id = 'before-ch07';"
                     f" {root(NAME)}.before(b); b.focus(); }})()")
    reached = []
    for _ in range(5):
        key(browser, "Tab", "Tab", 9)
        reached.append(browser.evaluate(FOCUSED))
    steps = []
    for inp, keys in (("placement", [("ArrowDown", "ArrowDown", 40)]),
                      ("depth", [("ArrowLeft", "ArrowLeft", 37)]),
                      ("width", [("ArrowLeft", "ArrowLeft", 37)]),
                      ("gain", [("ArrowRight", "ArrowRight", 39)]),
                      ("seed", [("Backspace", "Backspace", 8), ("7", "Digit7", 55, "7")])):
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input={inp}]').focus(), 1")
        for k in keys:
            key(browser, *k)
        browser.wait_for(f"{root(NAME)}.dataset.mffPending === '0'", 10)
        steps.append((inp, browser.evaluate(VALUES), browser.evaluate(f"{root(NAME)}.dataset.now")))
    return reached, steps


def touch_drag(browser):
    """A finger drags the depth slider from its left end to its middle; its value before and after."""
    where = browser.evaluate(f"""(() => {{ const s = {root(NAME)}.querySelector('[data-input=depth]');
      s.scrollIntoView({{block: 'center'}}); const r = s.getBoundingClientRect();
      return [r.x, r.y + r.height / 2, r.width]; }})()""")
    value = f"Number({root(NAME)}.querySelector('[data-input=depth]').value)"
    before = browser.evaluate(value)
    x, y, w = where
    browser.send("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": x + 3, "y": y}])
    for k in range(1, 9):
        browser.send("Input.dispatchTouchEvent", type="touchMove", touchPoints=[{"x": x + 3 + k * w / 16, "y": y}])
    browser.send("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
    time.sleep(0.3)
    return before, browser.evaluate(value)


def wait_ready(browser):
    browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1' && {root(NAME)}.dataset.mffPending === '0'", 20)


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    base, _ = book
    todo = moves()
    r = {"times": [], "tasks": [], "shown": [], "want": []}
    browser = Browser(width=1280, height=900)
    try:
        browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1,
                     mobile=False)
        browser.errors.clear()
        browser.goto(base + PAGE, settle=0.2)
        wait_ready(browser)
        r["dataset"] = json.loads(browser.evaluate(f"JSON.stringify({root(NAME)}.dataset)"))
        browser.evaluate(f"{root(NAME)}.scrollIntoView({{block: 'center'}}), 1")
        for inp, value, event, sweep, state in todo:
            moved = browser.evaluate(f"({MOVE})({root(NAME)}, {json.dumps(inp)}, "
                                     f"{json.dumps(sweep + [value])}, {json.dumps(event)})")
            r["times"] += moved["times"]
            r["tasks"] += moved["tasks"]
            r["totals"] = r.get("totals", []) + [moved["total"]]
            want = texts(state)
            r["shown"].append({k: moved["shown"].get(k) for k in want})
            r["want"].append(want)
        r["final"] = todo[-1][-1]
        r["longest"] = float(browser.evaluate(f"{root(NAME)}.dataset.mffLongestStepMs"))
        time.sleep(1.0)  # the reader pauses: the live region speaks
        r["live"] = browser.evaluate(f"[...{root(NAME)}.querySelectorAll('[aria-live=polite]')]"
                                     ".map(e => e.textContent)")
        r["now"] = browser.evaluate(f"{root(NAME)}.dataset.now")
        r["contrast"] = {}
        for theme in ("light", "dark"):
            browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
            r["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(NAME)})")
        browser.goto(base + PAGE, settle=0.2)
        wait_ready(browser)
        r["keys"] = keyboard(browser)
        browser.send("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
        r["touch"] = touch_drag(browser)
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
    assert tour["shown"] == tour["want"]


def test_the_figure_is_quick(tour):
    r = tour
    assert len(r["times"]) > 60
    assert max(r["times"]) < 50, f"slowest update {max(r['times']):.1f} ms"
    assert r["tasks"] == [], f"main-thread tasks over 50 ms: {r['tasks']}"
    assert float(r["dataset"]["mffMountMs"]) < 50, r["dataset"]
    assert float(r["dataset"]["mffLongestStepMs"]) < 50, r["dataset"]  # the start's slices
    assert r["longest"] < 50, r["longest"]  # every slice of every computation


def test_the_keyboard_reaches_and_works_every_control(tour):
    reached, steps = tour["keys"]
    assert reached == ["placement", "depth", "width", "gain", "seed"], reached
    data = run([{"op": "ch07data"}])[0]
    start = data["start"]
    values = [s[1] for s in steps]
    assert values[0]["placement"] == "post"  # the menu's next option
    assert values[1]["depth"] == str(start["L"] - 1)
    assert values[2]["width"] == str(data["widths"].index(start["d"]) - 1)
    assert values[3]["gain"] == str(data["gains"].index(start["gain"]) + 1)
    assert values[4]["seed"] == "7"
    # each key changed what the figure says
    nows = [s[2] for s in steps]
    assert len(set(nows)) == len(nows), nows
    assert "pre-norm" not in nows[0]


def test_a_finger_drags_the_depth(tour):
    before, after = tour["touch"]
    assert after < before, (before, after)


def test_the_figure_speaks_politely_and_reads_in_both_themes(tour):
    r = tour
    assert len(r["live"]) == 1 and r["live"][0] == r["now"], (r["live"], r["now"])
    final = r["want"][-1]
    assert (f"post-norm: stream rms {final['post-rms-last']} after layer {r['final']['L']}; gradient "
            f"{final['post-grad-first']} at layer 1") in r["live"][0]
    for theme, (worst, where, n) in r["contrast"].items():
        assert n > 5
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


def test_the_figure_fits_a_phone_opens_from_file_and_logs_nothing(tour):
    r = tour
    assert r["narrow"]["right"] <= 400 and r["narrow"]["scroll"] <= r["narrow"]["client"], r["narrow"]
    assert r["narrow"]["page"] <= 400, r["narrow"]
    assert r["file"], f"{NAME} did not start from file://"
    assert r["errors"] == []
