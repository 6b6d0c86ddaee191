/* Chapter 2's figure, "ch02-bandwidth": Nadaraya–Watson regression as attention. The 40 noisy
 * samples of f(x) = sin 2x + x/2 are the chapter's (seed 0, exported below); the queries are the
 * chapter's 200 grid points on [0, 5]. A slider sets the bandwidth h, and any sample can be
 * dragged (or chosen by number and moved with two sliders): the fit, the leave-one-out error and
 * the test error follow, and a second plot draws both errors against h for the current samples.
 *
 *   weights   a_ij = softmax_j(-(q_i - k_j)² / (2h²)), fit ŷ_i = Σ_j a_ij v_j   (the chapter's nw_weights)
 *   test      mean over the grid of (ŷ_i - f(q_i))²   (needs the true f: a real problem has not got it)
 *   leave-one-out   mean over the samples of (ŷ_-j(k_j) - v_j)², sample j hidden from its own
 *                   prediction (its score set to -∞ before the softmax, as ex-loo-bandwidth does)
 *   training  mean over the samples of (ŷ(k_j) - v_j)², each sample seeing itself
 *   hardness  the largest weight of a grid query's row, averaged over the grid
 *
 * compute(xs, ys, h) and curves(xs, ys) are what the page shows (tests/test_figures_ch02_ch10.py
 * compares them with the chapter's computation through minformer.attention.softmax).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  // BEGIN EXPORT: python -m minformer.figure_data writes the next two lines
  // sha256 of the next line: b8ed2a8c61aca36381faf715df0974ab327923e609a11893b0a6733814820824
  var DATA = {"x":[0.013692500850740474,0.08263817764264547,0.14159835572731483,0.16792787652732177,0.20486761968097345,0.6214163824978197,0.6754825251120561,0.8782781030127951,1.3489335688193516,1.498559452686924,1.5512093777947782,1.7889759835453511,1.9183877713094173,1.9446071198955188,2.113436105988292,2.4291767941589453,2.6267716123786293,2.7073061012454587,2.7181249573271145,3.0331788788358995,3.0769255574062693,3.1848084366072715,3.2359475578712504,3.2522963813390815,3.3531220734681515,3.4277099224034737,3.4422336528547004,3.6074417009704085,3.647482804919992,3.64827723214972,4.066351196001362,4.079267770607661,4.287021382937847,4.315894611749433,4.4474391717450015,4.563777886388609,4.670217579781248,4.675362118938841,4.90417669388115,4.986049678946055],"y":[-0.3434918302197277,0.6600211478839011,0.7539882532251416,0.6479345898753479,0.5801369954614196,1.16323162190575,1.7510817235071823,2.0100127361529196,1.6442644134880386,1.2877825362421025,0.9219826915240701,0.10934966973586518,0.3173317483024807,0.4893494656726707,-0.21422429537217613,0.3437589481360369,0.5852302430695174,0.7990578085490165,0.25457279755418166,1.102946124054406,1.2785582801024702,1.3277876389087386,2.3273759067606705,1.696977910846518,2.185803459424328,2.17779515690188,2.76185877821751,3.0024631100134385,2.8615245644756166,2.0117046091623756,3.0101924678734773,3.1987205588039873,3.1964645825190776,2.6850288978449792,3.2757697226078273,2.1786249769418378,2.2208932217699666,2.692182112818421,2.0925662670056298,2.573340832659609]};
  // END EXPORT

  // the bandwidths of the slider (the chapter's table's among them) and the one it starts at
  var HS = [0.01, 0.015, 0.02, 0.03, 0.05, 0.07, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1, 1.5, 2, 3];
  var H0 = 8; // h = 0.2
  var T_Q = 200, X_MAX = 5, Y_MIN = -1.5, Y_MAX = 4.5;

  function f(x) { return Math.sin(2 * x) + 0.5 * x; }

  /* np.linspace(0, 5, 200): i · step, and the last point exactly 5. */
  var QUERIES = new Float64Array(T_Q), TRUTH = new Float64Array(T_Q);
  for (var qi = 0; qi < T_Q; qi++) {
    QUERIES[qi] = qi === T_Q - 1 ? X_MAX : qi * (X_MAX / (T_Q - 1));
    TRUTH[qi] = f(QUERIES[qi]);
  }

  /* One query's softmax over the keys (skip: a key hidden from it, or -1), stably as
   * minformer.attention.softmax: the largest score subtracted first. Writes the weights into w;
   * returns Σ_j w_j v_j. */
  function lookup(q, xs, ys, h, skip, w) {
    var n = xs.length, two_h2 = 2 * (h * h), max = -Infinity, j, d;
    for (j = 0; j < n; j++) {
      if (j === skip) { w[j] = -Infinity; continue; }
      d = q - xs[j];
      w[j] = -(d * d) / two_h2;
      if (w[j] > max) max = w[j];
    }
    var sum = 0;
    for (j = 0; j < n; j++) { w[j] = j === skip ? 0 : Math.exp(w[j] - max); sum += w[j]; }
    var y = 0, top = 0;
    for (j = 0; j < n; j++) { w[j] /= sum; y += w[j] * ys[j]; if (w[j] > top) top = w[j]; }
    lookup.top = top; // the largest weight, for the hardness
    return y;
  }

  /* Everything the page shows for one bandwidth: the fit on the grid and the four numbers. */
  function compute(xs, ys, h) {
    var n = xs.length, w = new Float64Array(n), fit = new Float64Array(T_Q);
    var test = 0, hardness = 0, loo = 0, train = 0, i, e;
    for (i = 0; i < T_Q; i++) {
      fit[i] = lookup(QUERIES[i], xs, ys, h, -1, w);
      e = fit[i] - TRUTH[i];
      test += e * e;
      hardness += lookup.top;
    }
    for (i = 0; i < n; i++) {
      e = lookup(xs[i], xs, ys, h, i, w) - ys[i];
      loo += e * e;
      e = lookup(xs[i], xs, ys, h, -1, w) - ys[i];
      train += e * e;
    }
    return {fit: fit, test: test / T_Q, loo: loo / n, train: train / n, hardness: hardness / T_Q};
  }

  /* The leave-one-out, test and training errors at every bandwidth of the slider, and where each
   * is least (the first of equal values, as np.argmin). from, to: compute only those bandwidths
   * into `into` (the page spreads the first computation over a few tasks). */
  function curves(xs, ys, into, from, to) {
    var c = into || {h: HS.slice(), loo: [], test: [], train: []};
    for (var k = from || 0; k < (to === undefined ? HS.length : to); k++) {
      var r = compute(xs, ys, HS[k]);
      c.loo[k] = r.loo;
      c.test[k] = r.test;
      c.train[k] = r.train;
    }
    function argmin(v) { var b = 0; for (var i = 1; i < v.length; i++) if (v[i] < v[b]) b = i; return b; }
    c.done = c.loo.length === HS.length;
    if (c.done) {
      c.bestLoo = HS[argmin(c.loo)];
      c.bestTest = HS[argmin(c.test)];
      c.bestTrain = HS[argmin(c.train)];
    }
    return c;
  }

  function fmtH(h) { return h < 0.1 ? String(h) : h.toFixed(h < 1 ? 2 : 1).replace(/0$/, "").replace(/\.$/, ""); }

  function mount(root) {
    var xs = DATA.x.slice(), ys = DATA.y.slice();
    var hIndex = H0, sel = 0, drag = null, lines = null;
    var n = xs.length;

    root.appendChild(F.el("p", {class: "mff-title"}, [
      "Change the bandwidth or move a sample: the fit and both errors follow"]));
    var controls = F.el("div", {class: "mff-controls"});
    var sh = F.control("range", "bandwidth h", {min: 0, max: HS.length - 1, step: 1, "data-input": "h"});
    var showH = F.output(sh.box);
    var pick = F.control("number", "sample", {min: 1, max: n, step: 1, "data-input": "point"});
    var sx = F.control("range", "x", {min: 0, max: X_MAX, step: 0.01, "data-input": "x"});
    var sy = F.control("range", "y", {min: Y_MIN, max: Y_MAX, step: 0.01, "data-input": "y"});
    var reset = F.el("button", {type: "button"}, ["reset"]);
    [sh.box, pick.box, sx.box, sy.box, reset].forEach(function (c) { controls.appendChild(c); });
    root.appendChild(controls);

    // left: samples, the true f, the fit; right: both errors against h (log axis)
    var W = 340, H = 230, pad = {l: 30, r: 8, t: 10, b: 26};
    function px(x) { return pad.l + x / X_MAX * (W - pad.l - pad.r); }
    function py(y) { return pad.t + (Y_MAX - y) / (Y_MAX - Y_MIN) * (H - pad.t - pad.b); }
    var fitSvg = F.svgEl("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
                                 // side by side down to 612 px (the book's column), a finger drags a sample
                                 style: "touch-action:none;flex:1 1 300px;max-width:340px",
                                 "aria-label": "the samples, the true function and the fit"});
    [0, 1, 2, 3, 4, 5].forEach(function (t) {
      fitSvg.appendChild(F.svgEl("text", {x: px(t), y: H - 8, "text-anchor": "middle", class: "mff-muted"}, [String(t)]));
    });
    [-1, 0, 1, 2, 3, 4].forEach(function (t) {
      fitSvg.appendChild(F.svgEl("line", {x1: pad.l, x2: W - pad.r, y1: py(t), y2: py(t), stroke: "currentColor",
                                          "stroke-opacity": t === 0 ? 0.3 : 0.1}));
      fitSvg.appendChild(F.svgEl("text", {x: pad.l - 4, y: py(t) + 4, "text-anchor": "end", class: "mff-muted"},
                                 [F.fmt(t, 0)]));
    });
    var truth = [];
    for (var i = 0; i <= 100; i++) truth.push(px(i / 20) + "," + py(f(i / 20)));
    fitSvg.appendChild(F.svgEl("polyline", {points: truth.join(" "), fill: "none", stroke: "currentColor",
                                            "stroke-opacity": 0.55, "stroke-width": 1.5, "stroke-dasharray": "5 4"}));
    var fitLine = F.svgEl("polyline", {fill: "none", style: "stroke:var(--mff-warn)", "stroke-width": 2.2});
    fitSvg.appendChild(fitLine);
    var dots = xs.map(function (_, j) {
      var g = F.svgEl("g", {class: "mff-grab"});
      g.appendChild(F.svgEl("circle", {r: 11, fill: "transparent"})); // a finger-sized target
      var c = F.svgEl("circle", {r: 3.6, style: "fill:var(--mff-accent)"});
      g.appendChild(c);
      fitSvg.appendChild(g);
      g.addEventListener("pointerdown", function (ev) {
        ev.preventDefault();
        sel = j;
        drag = ev.pointerId;
        g.setPointerCapture(ev.pointerId);
        update(false);
      });
      g.addEventListener("pointermove", function (ev) {
        if (drag !== ev.pointerId) return;
        var p = fitSvg.createSVGPoint();
        p.x = ev.clientX;
        p.y = ev.clientY;
        p = p.matrixTransform(fitSvg.getScreenCTM().inverse());
        xs[sel] = clamp((p.x - pad.l) / (W - pad.l - pad.r) * X_MAX, 0, X_MAX);
        ys[sel] = clamp(Y_MAX - (p.y - pad.t) / (H - pad.t - pad.b) * (Y_MAX - Y_MIN), Y_MIN, Y_MAX);
        update(true);
      });
      g.addEventListener("pointerup", function () { drag = null; });
      g.addEventListener("pointercancel", function () { drag = null; });
      return c;
    });
    var ring = F.svgEl("circle", {r: 7, fill: "none", stroke: "currentColor", "stroke-width": 1.5});
    fitSvg.appendChild(ring);

    var L = {l: 36, r: 8, t: 10, b: 26}, LOG0 = Math.log10(HS[0]), LOG1 = Math.log10(HS[HS.length - 1]);
    function lx(h) { return L.l + (Math.log10(h) - LOG0) / (LOG1 - LOG0) * (W - L.l - L.r); }
    var errSvg = F.svgEl("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
                                 style: "flex:1 1 300px;max-width:340px",
                                 "aria-label": "the leave-one-out and the test error against the bandwidth"});
    [0.01, 0.1, 1].forEach(function (t) {
      errSvg.appendChild(F.svgEl("text", {x: lx(t), y: H - 8, "text-anchor": "middle", class: "mff-muted"}, [String(t)]));
    });
    errSvg.appendChild(F.svgEl("text", {x: W - L.r, y: H - 8, "text-anchor": "end", class: "mff-muted"}, ["h"]));
    var yTicks = [0, 1, 2].map(function () {
      var line = F.svgEl("line", {x1: L.l, x2: W - L.r, stroke: "currentColor", "stroke-opacity": 0.12});
      var text = F.svgEl("text", {x: L.l - 4, "text-anchor": "end", class: "mff-muted"}, [""]);
      errSvg.appendChild(line);
      errSvg.appendChild(text);
      return {line: line, text: text};
    });
    var hLine = F.svgEl("line", {y1: L.t, y2: H - L.b, stroke: "currentColor", "stroke-opacity": 0.5});
    errSvg.appendChild(hLine);
    var looLine = F.svgEl("polyline", {fill: "none", style: "stroke:var(--mff-warn)", "stroke-width": 2});
    var testLine = F.svgEl("polyline", {fill: "none", style: "stroke:var(--mff-accent)", "stroke-width": 2,
                                        "stroke-dasharray": "6 3"});
    var looDot = F.svgEl("circle", {r: 4, style: "fill:var(--mff-warn)"});
    var testDot = F.svgEl("circle", {r: 4, style: "fill:var(--mff-accent)"});
    [looLine, testLine, looDot, testDot].forEach(function (e) { errSvg.appendChild(e); });
    [["leave-one-out error", "var(--mff-warn)", null], ["test error", "var(--mff-accent)", "6 3"]].forEach(function (k, i) {
      var y = L.t + 10 + 16 * i;
      errSvg.appendChild(F.svgEl("line", {x1: L.l + 8, x2: L.l + 30, y1: y - 4, y2: y - 4, style: "stroke:" + k[1],
                                          "stroke-width": 2, "stroke-dasharray": k[2]}));
      errSvg.appendChild(F.svgEl("text", {x: L.l + 36, y: y}, [k[0]]));
    });
    root.appendChild(F.el("div", {class: "mff-row"}, [fitSvg, errSvg]));

    // the numbers, as a table a screen reader can walk, and one polite summary
    var rows = [["loo", "leave-one-out error"], ["test", "test error (true f)"],
                ["train", "training error"], ["hardness", "hardness"]];
    var table = F.grid(rows.map(function (r) { return r[1]; }), ["at this h", "least at h"], "");
    rows.forEach(function (r, k) {
      table.cells[k][0].dataset.out = r[0];
      table.cells[k][1].dataset.out = "best-" + r[0];
    });
    root.appendChild(table.table);
    var summary = F.el("p", {class: "mff-key", "aria-live": "polite", "data-out": "summary"}, [""]);
    root.appendChild(summary);
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Drag a sample (a blue dot), or choose one by number and move it with the x and y sliders ",
      "(keyboard: arrow keys). Red: the fit; dashed: the true f. Right: both errors at every h of ",
      "the slider, for the samples as they are now. Hardness: a query's largest weight, averaged ",
      "over the 200 queries."]));

    function clamp(v, lo, hi) { return Math.max(lo, Math.min(hi, Math.round(v * 100) / 100)); }

    /* The errors against h, on an axis from 0 to the largest error shown, in round steps. */
    function drawCurves(r, h) {
      var top = Math.max.apply(null, lines.loo.concat(lines.test));
      var step = top <= 0.3 ? 0.1 : top <= 0.6 ? 0.2 : top <= 1.5 ? 0.5 : top <= 3 ? 1 : Math.ceil(top / 2);
      var ymax = step * Math.ceil(top / step + 1e-9);
      function ey(v) { return L.t + (1 - v / ymax) * (H - L.t - L.b); }
      yTicks.forEach(function (t, k) {
        var v = step * k * Math.max(1, Math.round(ymax / step / 2));
        var show = v <= ymax + 1e-9;
        t.line.setAttribute("y1", ey(v));
        t.line.setAttribute("y2", ey(v));
        t.text.setAttribute("y", ey(v) + 4);
        t.text.textContent = show ? F.fmt(v, step < 1 ? 1 : 0) : "";
        t.line.setAttribute("stroke-opacity", show ? 0.12 : 0);
      });
      looLine.setAttribute("points", HS.map(function (hh, k) { return lx(hh).toFixed(1) + "," + ey(lines.loo[k]).toFixed(1); }).join(" "));
      testLine.setAttribute("points", HS.map(function (hh, k) { return lx(hh).toFixed(1) + "," + ey(lines.test[k]).toFixed(1); }).join(" "));
      hLine.setAttribute("x1", lx(h));
      hLine.setAttribute("x2", lx(h));
      looDot.setAttribute("cx", lx(h));
      looDot.setAttribute("cy", ey(r.loo));
      testDot.setAttribute("cx", lx(h));
      testDot.setAttribute("cy", ey(r.test));
    }

    var announce = null;
    function update(moved) {
      var h = HS[hIndex];
      if (moved) recount();
      var r = compute(xs, ys, h);
      sh.input.value = hIndex;
      sh.input.setAttribute("aria-valuetext", "h = " + fmtH(h));
      showH("h = " + fmtH(h));
      pick.input.value = sel + 1;
      sx.input.value = xs[sel];
      sy.input.value = ys[sel];
      sx.label.textContent = "x" + (sel + 1);
      sy.label.textContent = "y" + (sel + 1);
      var pts = [];
      for (var i = 0; i < T_Q; i++) pts.push(px(QUERIES[i]).toFixed(1) + "," + py(Math.max(Y_MIN, Math.min(Y_MAX, r.fit[i]))).toFixed(1));
      fitLine.setAttribute("points", pts.join(" "));
      for (var j = 0; j < n; j++) {
        dots[j].parentNode.setAttribute("transform", "translate(" + px(xs[j]).toFixed(1) + "," + py(ys[j]).toFixed(1) + ")");
      }
      ring.setAttribute("cx", px(xs[sel]));
      ring.setAttribute("cy", py(ys[sel]));
      if (lines && lines.done) drawCurves(r, h);
      F.paint(table.cells[0][0], F.fmt(r.loo, 4));
      F.paint(table.cells[1][0], F.fmt(r.test, 4));
      F.paint(table.cells[2][0], F.fmt(r.train, 4));
      F.paint(table.cells[3][0], F.fmt(r.hardness, 3));
      var done = lines && lines.done;
      F.paint(table.cells[0][1], done ? fmtH(lines.bestLoo) : "…");
      F.paint(table.cells[1][1], done ? fmtH(lines.bestTest) : "…");
      F.paint(table.cells[2][1], done ? fmtH(lines.bestTrain) : "…");
      F.paint(table.cells[3][1], "");
      var text = "h = " + fmtH(h) + ": leave-one-out error " + F.fmt(r.loo, 4) + ", test error " +
                 F.fmt(r.test, 4) + (done ? "; least at h = " + fmtH(lines.bestLoo) + " and " +
                 fmtH(lines.bestTest) : "") + ".";
      // the live region is told once the reader pauses, not at every step of a drag
      clearTimeout(announce);
      announce = setTimeout(function () { summary.textContent = text; }, moved ? 600 : 250);
      summary.dataset.now = text;
    }

    sh.input.addEventListener("input", function () { hIndex = Number(sh.input.value); update(false); });
    pick.input.addEventListener("input", function () {
      var v = Math.round(Number(pick.input.value));
      if (pick.input.value.trim() !== "" && v >= 1 && v <= n) { sel = v - 1; update(false); }
    });
    // leaving the box shows the sample in use again (a number out of 1 … 40 changed nothing)
    pick.input.addEventListener("change", function () { pick.input.value = sel + 1; });
    sx.input.addEventListener("input", function () { xs[sel] = Number(sx.input.value); update(true); });
    sy.input.addEventListener("input", function () { ys[sel] = Number(sy.input.value); update(true); });
    reset.addEventListener("click", function () {
      xs = DATA.x.slice();
      ys = DATA.y.slice();
      hIndex = H0;
      sel = 0;
      update(true);
    });
    // The errors at every h are 18 fits: they are computed in tasks of two bandwidths each after
    // the samples change (the curves and the best h shown meanwhile are the last ones), so that
    // moving a sample only waits for one fit. A newer change restarts the count.
    var job = 0, longest = 0;
    function busy(on) { // the curves and the best h are being recounted (.ci/pdf_figures.py waits)
      [errSvg, table.table].forEach(function (e) { e.setAttribute("aria-busy", on ? "true" : "false"); });
    }
    busy(true);
    function recount() {
      var mine = ++job, part = curves(xs, ys, null, 0, 0), k = 0;
      var sx0 = xs.slice(), sy0 = ys.slice();
      root.dataset.mffPending = "1";
      busy(true);
      function more() {
        if (mine !== job) return;
        var t0 = performance.now();
        curves(sx0, sy0, part, k, Math.min(k + 2, HS.length));
        k = Math.min(k + 2, HS.length);
        if (k === HS.length) {
          lines = part;
          update(false);
          root.dataset.mffPending = "0";
          busy(false);
          root.dataset.mffCurves = "1";
        }
        longest = Math.max(longest, performance.now() - t0);
        root.dataset.mffLongestStepMs = longest.toFixed(1); // the tests read it
        if (k < HS.length) setTimeout(more, 0);
      }
      setTimeout(more, 0);
    }

    // the start, after the page has the figure's elements: the fit in one short task, then the
    // errors at every h in a few more
    setTimeout(function () {
      var t0 = performance.now();
      update(false);
      summary.textContent = summary.dataset.now;
      longest = performance.now() - t0;
      root.dataset.mffLongestStepMs = longest.toFixed(1);
      recount();
    }, 0);
  }

  F.register("ch02-bandwidth", {mount: mount});
  return {compute: compute, curves: curves, HS: HS, H0: H0, QUERIES: QUERIES, DATA: DATA, f: f};
});
