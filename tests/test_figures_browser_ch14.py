"""Chapter 14's interactive figure ("ch14-tiles", issue 46) in the built book, in headless
Chromium: `make check-book` runs these after `make book` (BOOK_HTML names the built book);
`make test` skips them. The checks of tests/test_figures_browser_ch02_ch10.py:

- after each input moves as a reader moves it (a real <input> and its event: the step slider
  swept, the tile size swept from 1 to 16 and back, the causal box unticked, a new seed typed),
  the page shows what the figure's code computes under Node (tests/js/figures_ch14.mjs, the one
  tests/test_figures_ch14.py compares with minformer): every query's m, ℓ, rescale factor and
  o/ℓ, and the sentence under the figure;
- by the keyboard alone: Tab reaches every control, Enter on "next ▶" steps forward, an arrow
  key moves the step slider and the tile size, Space unticks the causal box;
- every update under 50 ms, no main-thread task over 50 ms;
- the polite live region says the new step once the reader pauses;
- every text reads at 4.5:1 or more in the light and the dark theme; the figure fits a 400 px
  screen; it starts from file:// too; the page logs no error.
"""

import json
import os
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from browser import Browser
from test_built_book import book, faults  # noqa: F401 (the fixture: the built book, served)
from test_figures_browser import BOOK, CONTRAST, pytestmark, root  # noqa: F401 (the skips)
from test_figures_ch14 import run

NAME, PAGE = "ch14-tiles", "chapters/14_efficient_attention.html"


def fmt(x, digits: int = 2) -> str:
    """core.js's fmt, with JavaScript's toFixed (a tie rounds away from zero: 0.125 → "0.13")."""
    if x is None or x == float("-inf"):
        return "−∞"
    s = str(Decimal(abs(x)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    if x < 0 and Decimal(s) != 0:
        s = "−" + s
    return s


def texts(r, k: int) -> dict:
    """What the page shows at step k of the Node run r: data-out → text."""
    s = r["steps"][k]
    tile = next(t for t in r["tiles"] if t["step"] == k) if k else None
    out = {"step": r["texts"][k]}
    for i in range(16):
        out[f"m-{i}"] = fmt(s["m"][i], 2)
        out[f"l-{i}"] = fmt(s["ell"][i], 3)
        inside = tile is not None and tile["i0"] <= i < tile["i1"]
        a = s["alpha"][str(i)] if inside else ""
        out[f"r-{i}"] = "" if not inside else "first" if a is None else fmt(a, 3)
        for c in (0, 1):
            out[f"y{c}-{i}"] = fmt(s["acc"][i][c] / s["ell"][i], 3) if s["ell"][i] > 0 else "—"
    return out


def n_steps(r) -> int:
    return len(r["steps"]) - 1


# The reader's moves from the start (seed 5, tiles of 4, causal, step 5): the step slider swept
# and left at 9; the tile size swept 1 … 16 … 1 and left at 5 (the chosen step, 9, comes back);
# the causal box unticked; seed 7 typed. Then, by the keyboard: Enter twice on "next ▶" (step 11),
# the left arrow on the step slider (10).
STEP, B, SEED = 9, 5, 7


def expected():
    (start,) = run([{"op": "ch14start"}])
    seed, b, causal = start["seed"], start["b"], start["causal"]
    at = {}

    def get(seed, b, causal):
        if (seed, b, causal) not in at:
            (at[(seed, b, causal)],) = run([{"op": "ch14", "seed": seed, "b": b, "causal": causal}])
        return at[(seed, b, causal)]

    sweep_b = [str(v) for v in list(range(1, 17)) + list(range(16, 0, -1))]
    return start, [
        ("step", str(STEP), "input", [str(v) for v in range(0, 11)], texts(get(seed, b, causal), STEP)),
        ("b", str(B), "input", sweep_b, texts(get(seed, B, causal), min(STEP, n_steps(get(seed, B, causal))))),
        ("causal", None, "change", [], texts(get(seed, B, False), STEP)),
        ("seed", str(SEED), "input", ["1", "12", "1"], texts(get(SEED, B, False), STEP)),
    ], {"next": texts(get(SEED, B, False), STEP + 2), "left": texts(get(SEED, B, False), STEP + 1),
        "n": n_steps(get(SEED, B, False))}


# Move an input through a sweep of values and then the tested one, timing each update (the
# handler, style and layout), and watch for long tasks; value null: the checkbox unticked.
MOVE = r"""(async (root, name, values, event) => {
  const input = root.querySelector(`[data-input="${name}"]`);
  const tasks = [], seen = new PerformanceObserver(l => { for (const e of l.getEntries()) tasks.push(e.duration); });
  seen.observe({type: 'longtask'});
  const times = [];
  for (const v of values) {
    const t0 = performance.now();
    if (v === null) input.checked = !input.checked; else input.value = v;
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
KEYS = {"Tab": 9, "Enter": 13, " ": 32, "ArrowLeft": 37, "ArrowRight": 39}


def press(browser, key: str):
    code = {"Tab": "Tab", "Enter": "Enter", " ": "Space", "ArrowLeft": "ArrowLeft", "ArrowRight": "ArrowRight"}[key]
    extra = {"text": key} if key in (" ", "Enter") else {}
    if key == "Enter":
        extra = {"text": "\r"}
    browser.send("Input.dispatchKeyEvent", type="keyDown", key=key, code=code,
                 windowsVirtualKeyCode=KEYS[key], **extra)
    browser.send("Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=KEYS[key])
    time.sleep(0.05)


def focused(browser) -> str:
    return browser.evaluate("document.activeElement?.dataset?.input || document.activeElement?.tagName || ''")


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    base, _ = book
    start, moves, keyboard = expected()
    r = {"times": [], "tasks": [], "shown": [], "want": []}
    browser = Browser(width=1280, height=900)
    try:
        browser.goto(base + PAGE, settle=0.2)
        browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1'", 20)
        r["mount_ms"] = float(browser.evaluate(f"{root(NAME)}.dataset.mffMountMs"))
        # the page's own work first: MathJax typesets the chapter's formulas in long tasks of its own
        browser.evaluate("(async () => { if (window.MathJax?.startup?.promise) await MathJax.startup.promise;"
                         " await new Promise(r => setTimeout(r, 300)); return 1; })()")
        r["start"] = browser.evaluate(f"{SHOWN}({root(NAME)})")
        r["start_want"] = texts(run([{"op": "ch14", "seed": start["seed"], "b": start["b"],
                                      "causal": start["causal"]}])[0], start["step"])
        browser.evaluate(f"{root(NAME)}.scrollIntoView({{block: 'center'}}), 1")
        # the scroll's own paint (the chapter's pictures around the figure) before any timing
        browser.evaluate("new Promise(r => setTimeout(() => requestAnimationFrame(() => setTimeout(r, 300)), 0))")
        for inp, value, event, sweep, want in moves:
            moved = browser.evaluate(f"({MOVE})({root(NAME)}, {json.dumps(inp)}, "
                                     f"{json.dumps(sweep + [value])}, {json.dumps(event)})")
            r["times"] += moved["times"]
            r["tasks"] += moved["tasks"]
            r.setdefault("tasks_by_input", []).append([inp, moved["tasks"]])
            r["shown"].append({k: moved["shown"].get(k) for k in want})
            r["want"].append(want)
        # the keyboard: Tab from the first control through all of them; Enter on "next ▶" twice;
        # the left arrow on the step slider
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=b]').focus(), 1")
        order = [focused(browser)]
        for _ in range(5):
            press(browser, "Tab")
            order.append(focused(browser))
        r["tab_order"] = order
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=next]').focus(), 1")
        press(browser, "Enter")
        press(browser, "Enter")
        r["after_next"] = browser.evaluate(f"{SHOWN}({root(NAME)})")
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=step]').focus(), 1")
        press(browser, "ArrowLeft")
        r["after_left"] = browser.evaluate(f"{SHOWN}({root(NAME)})")
        r["keyboard_want"] = keyboard
        time.sleep(1.0)  # the reader pauses: the live region speaks
        r["live"] = browser.evaluate(f"[...{root(NAME)}.querySelectorAll('[aria-live=polite]')]"
                                     ".map(e => e.textContent)")
        # the tile size by its arrow key, the causal box by Space: both change what is shown
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=b]').focus(), 1")
        press(browser, "ArrowRight")
        r["b_after_arrow"] = browser.evaluate(
            f"{root(NAME)}.querySelector('[data-input=b]').getAttribute('aria-valuetext')")
        browser.evaluate(f"{root(NAME)}.querySelector('[data-input=causal]').focus(), 1")
        press(browser, " ")
        r["causal_after_space"] = browser.evaluate(f"{root(NAME)}.querySelector('[data-input=causal]').checked")
        r["contrast"] = {}
        for theme in ("light", "dark"):
            browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
            r["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(NAME)})")
        r["errors"] = faults(browser)
        browser.send("Emulation.setDeviceMetricsOverride", width=400, height=800, deviceScaleFactor=1, mobile=True)
        browser.goto(base + PAGE, settle=0.2)
        browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1'", 20)
        r["narrow"] = browser.evaluate(
            f"(() => {{ const e = {root(NAME)}; const b = e.getBoundingClientRect();"
            " return {right: b.right, scroll: e.scrollWidth, client: e.clientWidth,"
            " page: document.documentElement.scrollWidth}; })()")
        r["errors"] += faults(browser)
        browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False)
        browser.goto((BOOK / PAGE).resolve().as_uri(), settle=0.5)
        browser.wait_for(f"{root(NAME)}?.dataset.mffReady === '1'", 20)
        r["file"] = browser.evaluate(f"{root(NAME)}?.dataset.mffReady === '1'")
    finally:
        browser.close()
    if os.environ.get("FIGURES_REPORT"):
        Path(os.environ["FIGURES_REPORT"]).write_text(json.dumps(r, indent=1, ensure_ascii=False))
    return r


def test_the_figure_shows_what_node_computes(tour):
    r = tour
    assert {k: r["start"].get(k) for k in r["start_want"]} == r["start_want"]
    for shown, want in zip(r["shown"], r["want"]):
        assert shown == want


def test_the_figure_works_from_the_keyboard(tour):
    r = tour
    assert r["tab_order"] == ["b", "causal", "step", "back", "next", "seed"], r["tab_order"]
    want = r["keyboard_want"]
    assert {k: r["after_next"].get(k) for k in want["next"]} == want["next"]
    assert {k: r["after_left"].get(k) for k in want["left"]} == want["left"]
    assert r["b_after_arrow"] == f"b = {B + 1}"
    assert r["causal_after_space"] is True  # unticked by the tour, ticked again by Space


def test_the_figure_is_quick(tour):
    r = tour
    assert len(r["times"]) > 30
    assert max(r["times"]) < 50, f"slowest update {max(r['times']):.1f} ms"
    assert r["tasks"] == [], f"main-thread tasks over 50 ms: {r['tasks']}"
    assert r["mount_ms"] < 50, r["mount_ms"]


def test_the_figure_speaks_politely_and_reads_in_both_themes(tour):
    r = tour
    assert len(r["live"]) == 1 and r["live"][0] == tour["keyboard_want"]["left"]["step"], r["live"]
    for theme, (worst, where, n) in r["contrast"].items():
        assert n > 5
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


def test_the_figure_fits_a_phone_opens_from_file_and_logs_nothing(tour):
    r = tour
    assert r["narrow"]["right"] <= 400 and r["narrow"]["scroll"] <= r["narrow"]["client"], r["narrow"]
    assert r["narrow"]["page"] <= 400, r["narrow"]
    assert r["file"], f"{NAME} did not start from file://"
    assert r["errors"] == []
