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
import time
from pathlib import Path

import pytest
from browser import CHROMIUM, MOVE_FIRST_CONTROL, Browser
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


# --- Accessibility and touch (issue 44) ---------------------------------------------------------

def live(name):
    return f"{root(name)}.querySelector('[role=status][aria-live=polite]')?.textContent || ''"


def open_figure(browser, base, name):
    browser.goto(base + PAGES[name], settle=0.2)
    browser.wait_for(f"{root(name)}?.dataset.mffReady === '1'", 10)
    browser.evaluate(f"{root(name)}.scrollIntoView({{block: 'center'}}), 1")


def set_input(browser, name, inp, value, events=("input",)):
    browser.evaluate(f"(() => {{ const e = {root(name)}.querySelector('[data-input=\"{inp}\"]');"
                     f" e.value = {json.dumps(value)};"
                     + "".join(f" e.dispatchEvent(new Event('{ev}', {{bubbles: true}}));" for ev in events)
                     + " return 1; })()")


def test_every_figure_announces_its_new_values_politely(book):  # noqa: F811
    """No figure had a live region: a screen reader never heard the new weights. Now each has one
    (role status, aria-live polite) that says the new values once the reader pauses, and says
    nothing while the page loads."""
    base, _ = book
    browser = Browser()
    said = {}
    try:
        for name in PAGES:
            open_figure(browser, base, name)
            if name == "ch04-scaling":
                browser.wait_for(f"{root(name)}.dataset.mffDrawn === '1024'", 10)
            time.sleep(0.5)
            before = browser.evaluate(live(name))
            browser.evaluate(f"({MOVE_FIRST_CONTROL})({root(name)}), 1")
            said[name] = (before, browser.wait_for(live(name), 5))
    finally:
        browser.close()
    assert all(before == "" for before, _ in said.values()), said
    assert "weights x1" in said["ch01-attention"][1] and "Weights A" in said["ch03-qkv"][1], said
    assert said["ch04-scaling"][1].startswith("d_k = 1, seed 0"), said  # the slider to its minimum
    assert "Row sums" in said["ch05-masking"][1] and said["ch08-positions"][1].startswith("p = 0, k = 5"), said


def test_chapter_4s_slider_announces_d_k_and_a_new_seed_never_blocks_the_page(book):  # noqa: F811
    """The slider announced its position ("6"), not d_k = 64; changing the seed at d_k = 1024 drew
    1.7 million numbers in one task, freezing the page for 105-187 ms."""
    base, _ = book
    name = "ch04-scaling"
    browser = Browser()
    try:
        open_figure(browser, base, name)
        assert browser.evaluate(f"{root(name)}.querySelector('[data-input=dk]').getAttribute('aria-valuetext')") \
            == "d_k = 64"
        browser.wait_for(f"{root(name)}.dataset.mffDrawn === '1024'", 10)
        set_input(browser, name, "dk", "10")
        assert browser.evaluate(f"{root(name)}.querySelector('[data-input=dk]').getAttribute('aria-valuetext')") \
            == "d_k = 1024"
        got = browser.evaluate(f"""(async () => {{
          const root = {root(name)}, tasks = [];
          const seen = new PerformanceObserver(l => {{ for (const e of l.getEntries()) tasks.push(e.duration); }});
          seen.observe({{type: 'longtask'}});
          const box = root.querySelector('[data-input=seed]'), cell = root.querySelector('[data-out=std-unscaled]');
          const before = cell.textContent, t0 = performance.now();
          for (const v of ['7', '8']) {{
            box.value = v; box.dispatchEvent(new Event('input', {{bubbles: true}}));
            await new Promise(r => setTimeout(r, 30));
          }}
          while ((cell.textContent === before || cell.textContent === '…') && performance.now() - t0 < 10000)
            await new Promise(r => setTimeout(r, 20));
          const shown = performance.now() - t0;
          while (root.dataset.mffDrawn !== '1024' || performance.now() - t0 < 300)
            await new Promise(r => setTimeout(r, 20));
          seen.disconnect();
          return {{tasks, shown, text: cell.textContent}}; }})()""")
        want = run_figures([{"op": "ch04", "seed": 8, "d_k": 1024}])[0]["unscaled"]
    finally:
        browser.close()
    assert got["tasks"] == [], f"main-thread tasks over 50 ms: {got['tasks']}"
    assert got["text"] == fmt(want["std"]), got
    assert got["shown"] < 3000, got


def test_number_boxes_keep_to_their_limits(book):  # noqa: F811
    """Chapter 3's boxes took 25 where 9 is the maximum (and printed 1e200 as
    "−8.459999999999998e+199"), chapter 4's a seed of 100000; a cleared box kept showing nothing
    while the figure used its old value."""
    base, _ = book
    browser = Browser()
    try:
        name = "ch03-qkv"
        open_figure(browser, base, name)
        box = f"{root(name)}.querySelector('[data-input=W_Q00]')"
        set_input(browser, name, "W_Q00", "1e200")
        b = browser.evaluate(f"{root(name)}.querySelectorAll('table')[2].querySelector('td').textContent")
        set_input(browser, name, "W_Q00", "1e200", events=("input", "change"))
        shown_big = browser.evaluate(f"{box}.value")
        set_input(browser, name, "W_Q00", "", events=("input", "change"))
        shown_cleared = browser.evaluate(f"{box}.value")
        set_input(browser, name, "W_Q00", "-25", events=("input", "change"))
        shown_low = browser.evaluate(f"{box}.value")
        name = "ch04-scaling"
        open_figure(browser, base, name)
        set_input(browser, name, "seed", "100000", events=("input", "change"))
        seed = browser.evaluate(f"{root(name)}.querySelector('[data-input=seed]').value")
        set_input(browser, name, "seed", "2.6", events=("input", "change"))
        seed_round = browser.evaluate(f"{root(name)}.querySelector('[data-input=seed]').value")
    finally:
        browser.close()
    # W_Q = [[9, s], [-s, c]] at θ = 45° (c = s = 1.41), W_K = 2 I: B = W_Q W_Kᵀ, B[0][0] = 18
    assert b == "18.00", b
    assert (shown_big, shown_cleared, shown_low) == ("9", "9", "-9")
    assert (seed, seed_round) == ("999", "3")


def test_chapter_1s_token_drags_by_touch(book):  # noqa: F811
    """On a phone, dragging a token scrolled the page instead: the touch-action was on the <g>,
    which Chromium ignores. A touch drag, emulated, now moves token x1 and leaves the page still."""
    base, _ = book
    name = "ch01-attention"
    browser = Browser(width=400, height=800)
    try:
        browser.send("Emulation.setTouchEmulationEnabled", enabled=True, maxTouchPoints=1)
        open_figure(browser, base, name)
        start = browser.evaluate(f"(() => {{ const r = {root(name)}.querySelectorAll('circle')[0]"
                                 ".getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2,"
                                 " window.scrollY]; })()")
        x, y, scroll = start
        browser.send("Input.dispatchTouchEvent", type="touchStart", touchPoints=[{"x": x, "y": y}])
        for k in range(1, 11):
            browser.send("Input.dispatchTouchEvent", type="touchMove",
                         touchPoints=[{"x": x - 6 * k, "y": y + 8 * k}])
            time.sleep(0.02)
        browser.send("Input.dispatchTouchEvent", type="touchEnd", touchPoints=[])
        time.sleep(0.2)
        after = browser.evaluate(f"[{root(name)}.querySelector('td').textContent, window.scrollY,"
                                 f" {root(name)}.querySelector('input[type=radio]:checked').value]")
    finally:
        browser.close()
    assert after[0] != "(1.00, 0.00)", after  # x1 moved
    assert after[0].startswith("(0.") and "−0." in after[0], after  # left and down, as dragged
    assert after[1] == scroll, f"the page scrolled from {scroll} to {after[1]}"
    assert after[2] == "0", after  # the dragged token is the query


def test_chapter_8s_axes_are_labelled_inside_the_picture(book):  # noqa: F811
    """Chapter 8's chart showed an unlabelled axis and drew its "0" outside the box."""
    base, _ = book
    name = "ch08-positions"
    browser = Browser()
    try:
        open_figure(browser, base, name)
        got = browser.evaluate(f"""(() => {{
          const svg = {root(name)}.querySelectorAll('svg')[2], box = svg.getBoundingClientRect();
          const texts = [...svg.querySelectorAll('text')].map(t => {{ const r = t.getBoundingClientRect();
            return [t.textContent, r.left >= box.left - 0.5 && r.right <= box.right + 0.5
                    && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5]; }});
          return texts; }})()""")
    finally:
        browser.close()
    labels = [t for t, _ in got]
    assert {"0", "16", "32", "50", "100", "offset k"} <= set(labels), labels
    assert [t for t, inside in got if not inside] == [], got
