"""The interactive figures of Part I (issue 34) in the built book, in headless Chromium: `make
check-book` runs these after `make book` (BOOK_HTML names the built book); `make test` skips them.

One browser visits the five chapters once. For each figure it moves an input as a reader would
(a real <input>, its input or change event) and checks that the page shows the numbers that the
figure's computation gives under Node (tests/js/figures.mjs, the one tests/test_figures_js.py
compares with minformer); that each update takes under 50 ms and no main-thread task over 50 ms
runs meanwhile; that every text in the figure reads at 4.5:1 or more in the light and the dark
theme; that the figure fits a 400 px screen; and that it works from file:// too. And no chapter
page logs a console error.
"""

import json
import os
import re
from pathlib import Path

import pytest
from browser import CHROMIUM, Browser
from test_built_book import book, faults  # noqa: F401 (the fixture: the built book, served)
from test_figures_js import NODE, run_figures

BOOK = Path(os.environ["BOOK_HTML"]) if os.environ.get("BOOK_HTML") else None
pytestmark = [
    pytest.mark.skipif(BOOK is None, reason="checks the built book: `make check-book` after `make book`"),
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)"),
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
]

PAGES = {"ch01-attention": "chapters/01_dot_product_attention.html",
         "ch03-qkv": "chapters/03_queries_keys_values.html",
         "ch04-scaling": "chapters/04_scaling.html",
         "ch05-masking": "chapters/05_masking.html",
         "ch08-positions": "chapters/08_positional_encoding.html"}


def fmt(x: float, digits: int = 2) -> str:
    """core.js's fmt: fixed decimals, a true minus sign, no negative zero, NaN spelled out."""
    if x != x:
        return "NaN"
    s = f"{x:.{digits}f}"
    if re.fullmatch(r"-0\.?0*", s):
        s = s[1:]
    return s.replace("-", "−")


def sig(x: float) -> str:
    """ch04.js's sig: three significant digits, or powers of ten."""
    if x == 0:
        return "0"
    if 0.01 <= abs(x) < 1000:
        return f"{x:#.3g}".rstrip(".")  # JavaScript's toPrecision(3): trailing zeros kept
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}".replace("e-", "e−")


# For each figure: the inputs moved, in order (data-input, the new value or None for a radio
# button, the event), and the texts the page must then show (data-out -> text), from the state
# the figure is then in as a Node task.
def expected():
    tasks = [{"op": "ch01", "X": [[1.0, 0.0], [-1.2, 0.6], [0.0, 1.0]], "i": 1},
             {"op": "ch03", "theta": 120},
             {"op": "ch04", "seed": 0, "d_k": 512},
             {"op": "ch05", "state": {"causal": True, "padding": True, "padsAtStart": True, "plain": True}},
             {"op": "ch08", "p": 40, "k": 5}]
    ch1, ch3, ch4, ch5, ch8 = run_figures(tasks)
    ch4_texts = {}
    for kind in ("unscaled", "scaled"):
        r = ch4[kind]
        ch4_texts.update({f"std-{kind}": fmt(r["std"]), f"maxWeight-{kind}": fmt(r["maxWeight"], 3),
                          f"entropy-{kind}": fmt(r["entropy"], 3), f"medianJ-{kind}": sig(r["medianJ"]),
                          f"medianGrad-{kind}": sig(r["medianGrad"])})
    return {
        "ch01-attention": ([("x", "-1.2", "input")], {
            **{f"w-{j}": fmt(w) for j, w in enumerate(ch1["weights"])},
            **{f"score-{j}": fmt(s) for j, s in enumerate(ch1["scores"])},
            "y": f"y2 = Σ_j a_2j x_j = ({fmt(ch1['y'][0])}, {fmt(ch1['y'][1])})"}),
        "ch03-qkv": ([("theta", "120", "input")], {
            **{f"A-{i}-{j}": fmt(a) for i, row in enumerate(ch3["A"]) for j, a in enumerate(row)},
            **{f"S-{i}-{j}": fmt(s) for i, row in enumerate(ch3["S"]) for j, s in enumerate(row)},
            **{f"raw-{i}-{j}": fmt(s) for i, row in enumerate(ch3["raw"]) for j, s in enumerate(row)}}),
        "ch04-scaling": ([("dk", "9", "input")], ch4_texts),
        "ch05-masking": ([("pads-1", None, "change"), ("softmax-1", None, "change")], {
            **{f"A-{i}-{j}": ("NaN" if a != a else fmt(a) if ok else "·")
               for i, (row, mrow) in enumerate(zip(ch5["A"], ch5["mask"])) for j, (a, ok) in enumerate(zip(row, mrow))},
            **{f"sum-{i}": fmt(s) for i, s in enumerate(ch5["sums"])}}),
        "ch08-positions": ([("p", "40", "input")], {
            "dot": f"PE(40) · PE(45) = {fmt(ch8['dot'])} = Σ_i cos(ω_i · 5) = {fmt(ch8['closed'])}"}),
    }


# The lowest contrast of any text in the figure, against what is painted behind it.
CONTRAST = r"""((root) => {
  function rgb(s) { const m = s.match(/[\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; }
  function f(v) { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }
  function lum(c) { return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); }
  function over(top, under) { return [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]); }
  function backdrop(e) {
    const layers = []; for (let n = e; n; n = n.parentElement) layers.push(rgb(getComputedStyle(n).backgroundColor));
    let c = [255, 255, 255, 1]; for (const v of layers.reverse()) if (v[3] > 0) c = over(v, c); return c; }
  let worst = [99, ''], n = 0;
  for (const e of root.querySelectorAll('*')) {
    const own = [...e.childNodes].filter(c => c.nodeType === 3).map(c => c.nodeValue).join('').trim();
    if (!own || e.getClientRects().length === 0) continue;
    const style = getComputedStyle(e), svg = e instanceof SVGElement;
    const bg = backdrop(svg ? e.ownerSVGElement.parentElement : e);
    const fg = over(rgb(svg ? style.fill : style.color), bg), a = lum(fg), b = lum(bg);
    const r = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05); n++;
    if (r < worst[0]) worst = [r, own.slice(0, 40)]; }
  return [worst[0], worst[1], n]; })"""

# Move an input, time the update (the handler, style and layout), and watch for long tasks.
MOVE = r"""(async (root, name, value, event, sweep) => {
  const input = root.querySelector(`[data-input="${name}"]`);
  const tasks = [], seen = new PerformanceObserver(l => { for (const e of l.getEntries()) tasks.push(e.duration); });
  seen.observe({type: 'longtask'});
  const times = [];
  const values = sweep.concat([value]);
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
  return {times, tasks}; })"""

# Values each sweep passes through before the tested one (the reader dragging the slider).
SWEEPS = {"ch01-attention": [f"{x / 20:.2f}" for x in range(16, -25, -2)],
          "ch03-qkv": [str(t) for t in range(45, 125, 5)],
          "ch04-scaling": [str(i) for i in list(range(6, 11)) + list(range(10, -1, -1)) + [8]],
          "ch05-masking": [], "ch08-positions": [str(p) for p in range(10, 41)]}


def root(name):
    return f"document.querySelector('.mff[data-figure=\"{name}\"]')"


@pytest.fixture(scope="module")
def tour(book):  # noqa: F811 (the fixture of test_built_book)
    """Every figure's page visited once: what each shows after its input moved, the timings, the
    contrast in both themes, its width at 400 px, and what the page logged."""
    base, pages = book
    want = expected()
    out = {"figures": {}, "errors": {}}
    browser = Browser(width=1280, height=900)
    try:
        for name, page in PAGES.items():
            browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1,
                         mobile=False)
            browser.errors.clear()
            browser.goto(base + page, settle=0.2)
            browser.wait_for(f"{root(name)}?.dataset.mffReady === '1'", 10)
            r = {"ready": browser.evaluate(f"{root(name)}?.dataset.mffReady === '1'"),
                 "mount_ms": float(browser.evaluate(f"{root(name)}.dataset.mffMountMs"))}
            if name == "ch04-scaling":  # its sample is drawn, and measured, in steps after the page loads
                browser.wait_for(f"{root(name)}.dataset.mffDrawn === '1024'", 10)
                r["step_ms"] = float(browser.evaluate(f"{root(name)}.dataset.mffLongestStepMs"))
            browser.evaluate(f"{root(name)}.scrollIntoView({{block: 'center'}}), 1")
            moves, texts = want[name]
            r.update(times=[], tasks=[])
            for k, (inp, value, event) in enumerate(moves):
                moved = browser.evaluate(f"({MOVE})({root(name)}, {json.dumps(inp)}, {json.dumps(value)}, "
                                         f"{json.dumps(event)}, {json.dumps(SWEEPS[name] if k == 0 else [])})")
                r["times"] += moved["times"]
                r["tasks"] += moved["tasks"]
            r["shown"] = browser.evaluate(
                f"Object.fromEntries([...{root(name)}.querySelectorAll('[data-out]')]"
                ".map(e => [e.dataset.out, e.textContent]))")
            r["want"] = texts
            r["contrast"] = {}
            for theme in ("light", "dark"):
                browser.evaluate(f"document.documentElement.dataset.theme = '{theme}', 1")
                r["contrast"][theme] = browser.evaluate(f"({CONTRAST})({root(name)})")
            browser.send("Emulation.setDeviceMetricsOverride", width=400, height=800, deviceScaleFactor=1,
                         mobile=True)
            browser.goto(base + page, settle=0.2)
            browser.wait_for(f"{root(name)}?.dataset.mffReady === '1'", 10)
            r["narrow"] = browser.evaluate(
                f"(() => {{ const e = {root(name)}; const b = e.getBoundingClientRect();"
                " return {right: b.right, scroll: e.scrollWidth, client: e.clientWidth,"
                " page: document.documentElement.scrollWidth}; })()")
            out["errors"][page] = faults(browser)
            out["figures"][name] = r
        for name, page in PAGES.items():  # the same pages from file://, as a downloaded copy opens them
            browser.goto((BOOK / page).resolve().as_uri(), settle=0.5)
            out["figures"][name]["file"] = browser.evaluate(f"{root(name)}?.dataset.mffReady === '1'")
        for page in pages:  # every chapter page: no console error
            if page.startswith("chapters/") and page not in out["errors"]:
                browser.errors.clear()
                browser.goto(base + page, settle=0.2)
                out["errors"][page] = faults(browser)
    finally:
        browser.close()
    if os.environ.get("FIGURES_REPORT"):  # the numbers for a report (issue 34)
        Path(os.environ["FIGURES_REPORT"]).write_text(json.dumps(out, indent=1, ensure_ascii=False))
    return out


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_shows_what_node_computes(tour, name):
    r = tour["figures"][name]
    assert r["ready"], f"{name} did not start"
    shown = {k: r["shown"].get(k) for k in r["want"]}
    assert shown == r["want"]


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_is_quick(tour, name):
    r = tour["figures"][name]
    assert max(r["times"]) < 50, f"slowest update {max(r['times']):.1f} ms"
    assert r["tasks"] == [], f"main-thread tasks over 50 ms: {r['tasks']}"
    assert r["mount_ms"] < 50, f"the figure took {r['mount_ms']} ms to start"
    assert r.get("step_ms", 0) < 50, f"a step of its drawing took {r['step_ms']} ms"


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_is_legible_in_both_themes(tour, name):
    for theme, (worst, where, n) in tour["figures"][name]["contrast"].items():
        assert n > 5
        assert worst >= 4.5, f"'{where}': contrast {worst:.2f}:1 in the {theme} theme"


@pytest.mark.parametrize("name", PAGES)
def test_the_figure_fits_a_phone_and_opens_from_file(tour, name):
    r = tour["figures"][name]
    assert r["narrow"]["right"] <= 400 and r["narrow"]["scroll"] <= r["narrow"]["client"], r["narrow"]
    assert r["narrow"]["page"] <= 400, r["narrow"]
    assert r["file"], f"{name} did not start from file://"


def test_no_chapter_page_logs_an_error(tour):
    assert len(tour["errors"]) >= 14
    assert {page: e for page, e in tour["errors"].items() if e} == {}
