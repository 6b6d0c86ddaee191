"""Chapter 2's and chapter 10's interactive figures (issue 46) in the built book, in headless
Chromium: `make check-book` runs these after `make book` (BOOK_HTML names the built book);
`make test` skips them. The same checks as tests/test_figures_browser.py makes of Part I's:

- after each input moves as a reader moves it (a real <input> and its event), the page shows what
  the figure's code computes under Node (tests/js/figures_ch02_ch10.mjs, the one
  tests/test_figures_ch02_ch10.py compares with minformer);
- every update, and every step of what the figure computes after its start or after an update
  (chapter 2's 18 fits for the error curves, two per task), takes under 50 ms, with no
  main-thread task over 50 ms meanwhile (chapter 2: bandwidths swept and a sample's y dragged through 40
  values; chapter 10: a sentence typed a character at a time, then every merge step);
- a drag with the mouse and one with a finger (touch events) move a sample of chapter 2;
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
from test_figures_browser import BOOK, CONTRAST, fmt, pytestmark, root  # noqa: F401 (the skips)
from test_figures_ch02_ch10 import run

PAGES = {"ch02-bandwidth": "chapters/02_attention_as_lookup.html",
         "ch10-bpe": "chapters/10_tokenization.html"}


def fmt_h(h: float) -> str:
    """ch02.js's fmtH: 0.05, 0.2, 0.25, 1, 1.5."""
    if h < 0.1:
        return repr(h)
    s = f"{h:.{2 if h < 1 else 1}f}"
    s = s[:-1] if s.endswith("0") else s
    return s[:-1] if s.endswith(".") else s


def shown(s: str) -> str:
    return s.replace(" ", "␣").replace("\n", "⏎").replace("\t", "⇥").replace("\r", "␍")


Y_MOVED, SAMPLE, H_INDEX = 4.0, 5, 4  # sample 5's y dragged to 4, then h = HS[4] = 0.05
TYPED = "Yo hablaría, tú hablarías."
STEP = 5


def moves():
    """For each figure, its moves in order: (data-input, value, event, sweep before it, the texts
    the page must then show: data-out -> text)."""
    (data,) = run([{"op": "ch02data"}])
    x, y = list(data["x"]), list(data["y"])
    y[SAMPLE - 1] = Y_MOVED
    hs = data["hs"]
    at_start, moved, curves = run([{"op": "ch02", "h": hs[H_INDEX]},
                                   {"op": "ch02", "x": x, "y": y, "h": hs[H_INDEX]},
                                   {"op": "ch02curves", "x": x, "y": y}])

    def numbers(r, c=None):
        out = {"loo": fmt(r["loo"], 4), "test": fmt(r["test"], 4), "train": fmt(r["train"], 4),
               "hardness": fmt(r["hardness"], 3)}
        if c:
            out.update({"best-loo": fmt_h(c["bestLoo"]), "best-test": fmt_h(c["bestTest"]),
                        "best-train": fmt_h(c["bestTrain"])})
        return out

    ch10, vocab = run([{"op": "ch10", "text": TYPED}, {"op": "ch10vocab"}])
    text = vocab["text"]
    n_steps = len(ch10["steps"])
    s = ch10["steps"][STEP - 1]
    merge = (f"Step {STEP} of {n_steps}: merge {s['rank'] + 1:,} of {vocab['mergeCount']:,}, "
             f"“{shown(text[s['left']])}” + “{shown(text[s['right']])}” → “{shown(text[s['id']])}”, in "
             f"{s['places']} {'place' if s['places'] == 1 else 'places'}.")
    n_final, n_step = len(ch10["encode"]), len(ch10["states"][STEP])
    nbytes = len(TYPED.encode("utf-8"))
    return {
        "ch02-bandwidth": [
            ("h", str(H_INDEX), "input", [str(i) for i in list(range(18)) + list(range(17, -1, -1))],
             numbers(at_start)),
            ("point", str(SAMPLE), "input", [], {}),
            ("y", str(Y_MOVED), "input", [f"{v / 10:.1f}" for v in range(-15, 45, 2)] + ["4.2"],
             numbers(moved, curves)),
        ],
        "ch10-bpe": [
            ("text", TYPED, "input", [TYPED[:k] for k in range(1, len(TYPED))],
             {"count": f"{n_final} tokens from {nbytes} bytes: the tokenizer's encoding, the same as "
                       "BPETokenizer.encode", "ids": "ids: " + " ".join(map(str, ch10["encode"]))}),
            ("step", str(STEP), "input", [str(k) for k in range(n_steps, -1, -1)],
             {"merge": merge, "count": f"{n_step} tokens from {nbytes} bytes", "ids": ""}),
        ],
    }


# Move an input through a sweep of values and then the tested one, timing each update (the
# handler, style and layout), and watch for long tasks; then let the figure finish what it
# computes after an update (chapter 2's errors at every h: data-mff-pending) and read it.
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
  return {times, tasks, shown: Object.fromEntries(shown)}; })"""

READY = {"ch02-bandwidth": "mffCurves", "ch10-bpe": "mffBuilt"}


def wait_ready(browser, name):
    browser.wait_for(f"{root(name)}?.dataset.mffReady === '1' && {root(name)}.dataset.{READY[name]} === '1'", 20)


def drag(browser, name, kind):
    """Drag sample 1 of chapter 2 up by 60 px with the mouse or a finger; its y before and after."""
    where = browser.evaluate(f"""(() => {{ const g = {root(name)}.querySelectorAll('.mff-grab')[0];
      g.scrollIntoView({{block: 'center'}}); const r = g.getBoundingClientRect();
      return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
    pick = f"{root(name)}.querySelector('[data-input=\"point\"]')"
    browser.evaluate(f"({pick}.value = '1', {pick}.dispatchEvent(new Event('input', {{bubbles: true}})), 1)")
    y_of = f"Number({root(name)}.querySelector('[data-input=\"y\"]').value)"
    before = browser.evaluate(y_of)
    x, y = where
    if kind == "mouse":
        browser.send("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", clickCount=1)
        for k in range(1, 7):
            browser.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y - 10 * k, button="left")
        browser.send("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y - 60, button="left", clickCount=1)
    else:
        browser.send("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": x, "y": y}])
        for k in range(1, 7):
            browser.send("Input.dispatchTouchEvent", type="touchMove", touchPoints=[{"x": x, "y": y - 10 * k}])
        browser.send("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
    time.sleep(0.2)
    return before, browser.evaluate(y_of)


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    base, _ = book
    want = moves()
    out = {}
    browser = Browser(width=1280, height=900)
    try:
        for name, page in PAGES.items():
            browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1,
                         mobile=False)
            browser.errors.clear()
            browser.goto(base + page, settle=0.2)
            wait_ready(browser, name)
            data = browser.evaluate(f"JSON.stringify({root(name)}.dataset)")
            r = {"dataset": json.loads(data), "times": [], "tasks": [], "shown": [], "want": []}
            browser.evaluate(f"{root(name)}.scrollIntoView({{block: 'center'}}), 1")
            for inp, value, event, sweep, texts in want[name]:
                moved = browser.evaluate(f"({MOVE})({root(name)}, {json.dumps(inp)}, "
                                         f"{json.dumps(sweep + [value])}, {json.dumps(event)})")
                r["times"] += moved["times"]
                r["tasks"] += moved["tasks"]
                r["shown"].append({k: moved["shown"].get(k) for k in texts})
                r["want"].append(texts)
            time.sleep(1.0)  # the reader pauses: the live region speaks
            r["live"] = browser.evaluate(f"[...{root(name)}.querySelectorAll('[aria-live=polite]')]"
                                         ".map(e => e.textContent)")
            r["contrast"] = {}
            for theme in ("light", "dark"):
                browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
                r["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(name)})")
            if name == "ch02-bandwidth":
                r["mouse"] = drag(browser, name, "mouse")
                browser.send("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
                r["touch"] = drag(browser, name, "touch")
                browser.send("Emulation.setTouchEmulationEnabled", enabled=False)
            r["errors"] = faults(browser)
            browser.send("Emulation.setDeviceMetricsOverride", width=400, height=800, deviceScaleFactor=1,
                         mobile=True)
            browser.goto(base + page, settle=0.2)
            wait_ready(browser, name)
            r["narrow"] = browser.evaluate(
                f"(() => {{ const e = {root(name)}; const b = e.getBoundingClientRect();"
                " return {right: b.right, scroll: e.scrollWidth, client: e.clientWidth,"
                " page: document.documentElement.scrollWidth}; })()")
            r["errors"] += faults(browser)
            out[name] = r
        for name, page in PAGES.items():
            browser.goto((BOOK / page).resolve().as_uri(), settle=0.5)
            wait_ready(browser, name)
            out[name]["file"] = browser.evaluate(f"{root(name)}?.dataset.mffReady === '1'")
    finally:
        browser.close()
    if os.environ.get("FIGURES_REPORT"):
        Path(os.environ["FIGURES_REPORT"]).write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return out


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_shows_what_node_computes(tour, name):
    r = tour[name]
    assert r["shown"] == r["want"]


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_is_quick(tour, name):
    r = tour[name]
    assert len(r["times"]) > 30
    assert max(r["times"]) < 50, f"slowest update {max(r['times']):.1f} ms"
    assert r["tasks"] == [], f"main-thread tasks over 50 ms: {r['tasks']}"
    assert float(r["dataset"]["mffMountMs"]) < 50, r["dataset"]
    assert float(r["dataset"]["mffLongestStepMs"]) < 50, r["dataset"]


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_speaks_politely_and_reads_in_both_themes(tour, name):
    r = tour[name]
    assert len(r["live"]) == 1 and r["live"][0].strip(), r["live"]
    final = r["shown"][-1]
    if name == "ch02-bandwidth":
        assert f"leave-one-out error {final['loo']}, test error {final['test']}" in r["live"][0]
    else:
        assert r["live"][0].startswith(final["merge"])
    for theme, (worst, where, n) in r["contrast"].items():
        assert n > 5
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


def test_a_sample_follows_the_mouse_and_the_finger(tour):
    r = tour["ch02-bandwidth"]
    for kind in ("mouse", "touch"):
        before, after = r[kind]
        assert after > before + 1, (kind, before, after)  # 60 px up is about 1.6 on the y axis


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_fits_a_phone_opens_from_file_and_logs_nothing(tour, name):
    r = tour[name]
    assert r["narrow"]["right"] <= 400 and r["narrow"]["scroll"] <= r["narrow"]["client"], r["narrow"]
    assert r["narrow"]["page"] <= 400, r["narrow"]
    assert r["file"], f"{name} did not start from file://"
    assert r["errors"] == []
