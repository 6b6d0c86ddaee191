/* Chapter 4's figure, "ch04-scaling": a slider for d_k, and side by side what unscaled and scaled
 * attention do with random queries and keys of that size: the spread of the scores, how close the
 * softmax rows come to one-hot (largest weight, entropy), and how much gradient gets through
 * (the Jacobian's size ‖J‖_F and ‖∂L/∂q‖ for the chapter's stand-in loss L = Σ_j a_j g_j).
 *
 * The samples are drawn in the page from a seeded generator (core.js: mulberry32, Box-Muller), so
 * every reader, and the tests, see the same numbers for a seed: N queries, each with T keys, of
 * D_MAX features; size d_k uses the first d_k features of each vector. The features are drawn one
 * at a time for every vector (feature 0 of all of them, then feature 1, ...), so the page draws
 * only what the sizes shown so far need, and the rest in small steps after it has started: no
 * step holds the page up for long (1.7 million numbers at d_k = 1024).
 *
 * sample(seed) and compute(s, d_k, scaled) are what the page shows (tests/test_figures_js.py
 * compares them with minformer.attention's softmax and scaled_dot_product_attention, the
 * gradient by autograd).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var N = 50, T = 32, D_MAX = 1024;
  var SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

  /* The page's random numbers for one seed: the upstream gradient g = ∂L/∂a (n, t) first, then
   * q (n, D) and K (n, t, D) feature by feature as ensure() asks for them. */
  function sample(seed, n, t, D) {
    n = n || N; t = t || T; D = D || D_MAX;
    var next = F.gaussian(F.mulberry32(seed));
    var g = new Float64Array(n * t);
    for (var i = 0; i < n * t; i++) g[i] = next();
    return {n: n, t: t, D: D, next: next, drawn: 0, g: g, q: new Float64Array(n * D),
            K: new Float64Array(n * t * D)};
  }

  /* Draw features drawn … d - 1 of every query, then of every key (a no-op once d are drawn). */
  function ensure(s, d) {
    for (var c = s.drawn; c < Math.min(d, s.D); c++) {
      for (var r = 0; r < s.n; r++) s.q[r * s.D + c] = s.next();
      for (var k = 0; k < s.n * s.t; k++) s.K[k * s.D + c] = s.next();
      s.drawn = c + 1;
    }
  }

  /* Scores q · k_j over the first d_k features, (n, t) row-major, cached per d_k. With `rows`,
   * at most that many more rows (the page's small steps; null until the last row is done). */
  function scores(s, d_k, rows) {
    s.cache = s.cache || {};
    s.partial = s.partial || {};
    if (s.cache[d_k]) return s.cache[d_k];
    if (s.drawn !== undefined) ensure(s, d_k);
    var n = s.n, t = s.t, D = s.D, key = "S" + d_k;
    var p = s.partial[key] || (s.partial[key] = {out: new Float64Array(n * t), next: 0});
    var end = rows ? Math.min(n, p.next + rows) : n, out = p.out;
    for (var r = p.next; r < end; r++) {
      for (var j = 0; j < t; j++) {
        var sum = 0, qo = r * D, ko = (r * t + j) * D;
        for (var c = 0; c < d_k; c++) sum += s.q[qo + c] * s.K[ko + c];
        out[r * t + j] = sum;
      }
    }
    p.next = end;
    if (end < n) return null;
    delete s.partial[key];
    s.cache[d_k] = out;
    return out;
  }

  /* What the figure shows for size d_k, scaled by 1/√d_k or not: the standard deviation of the
   * n · t scores (n · t - 1 in the denominator, as torch.std), the mean largest weight and mean
   * entropy -Σ a log a of the rows, the median ‖J‖_F of J = diag(a) - a aᵀ and the median
   * ‖∂L/∂q‖, and the first query's weights sorted from the largest. With `rows`, as scores(). */
  function compute(s, d_k, scaled, rows) {
    s.results = s.results || {};
    var memo = d_k + (scaled ? "s" : "u");
    if (!s.results[memo]) {
      var r = measure(s, d_k, scaled, rows);
      if (!r) return null;
      s.results[memo] = r;
    }
    return s.results[memo];
  }

  function measure(s, d_k, scaled, rows) {
    var n = s.n, t = s.t, D = s.D, k, key = "M" + d_k + (scaled ? "s" : "u");
    s.partial = s.partial || {};
    var p = s.partial[key];
    if (!p) {
      var c0 = scaled ? 1 / Math.sqrt(d_k) : 1, raw0 = scores(s, d_k), mean = 0, sq = 0;
      for (k = 0; k < n * t; k++) mean += raw0[k] * c0;
      mean /= n * t;
      for (k = 0; k < n * t; k++) sq += (raw0[k] * c0 - mean) * (raw0[k] * c0 - mean);
      p = s.partial[key] = {raw: raw0, c: c0, sq: sq, maxSum: 0, entSum: 0, Js: new Float64Array(n),
                            grads: new Float64Array(n), first: null, grad: new Float64Array(d_k), next: 0};
    }
    var raw = p.raw, c = p.c, grad = p.grad, end = rows ? Math.min(n, p.next + rows) : n;
    for (var r = p.next; r < end; r++) {
      var a = F.softmax(Array.prototype.slice.call(raw, r * t, (r + 1) * t).map(function (x) { return x * c; }));
      var ag = 0, sumSq = 0, sum4 = 0, diag = 0, ent = 0, j;
      for (j = 0; j < t; j++) {
        ag += a[j] * s.g[r * t + j];
        sumSq += a[j] * a[j];
        sum4 += a[j] * a[j] * a[j] * a[j];
        diag += (a[j] - a[j] * a[j]) * (a[j] - a[j] * a[j]);
        ent -= a[j] * Math.log(Math.max(a[j], 1e-30));
      }
      p.maxSum += Math.max.apply(null, a);
      p.entSum += ent;
      p.Js[r] = Math.sqrt(diag + sumSq * sumSq - sum4); // off-diagonal: Σ_{i≠j} a_i² a_j²
      // ∂L/∂s_j = a_j (g_j - Σ_k a_k g_k);  ∂L/∂q = c Σ_j ∂L/∂s_j k_j (first d_k features)
      grad.fill(0);
      for (j = 0; j < t; j++) {
        var w = c * a[j] * (s.g[r * t + j] - ag), ko = (r * t + j) * D;
        for (var f = 0; f < d_k; f++) grad[f] += w * s.K[ko + f];
      }
      var norm = 0;
      for (var f2 = 0; f2 < d_k; f2++) norm += grad[f2] * grad[f2];
      p.grads[r] = Math.sqrt(norm);
      if (r === 0) p.first = a.slice().sort(function (x, y) { return y - x; });
    }
    p.next = end;
    if (end < n) return null;
    delete s.partial[key];
    return {std: Math.sqrt(p.sq / (n * t - 1)), maxWeight: p.maxSum / n, entropy: p.entSum / n,
            medianJ: F.median(p.Js), medianGrad: F.median(p.grads), first: p.first};
  }

  /* Rows per step of the page's background work for size d (about 12,000 multiply-adds per
   * row and feature in all: a few milliseconds a step, even at d_k = 1024). */
  function rowsPerStep(d) { return Math.max(1, Math.floor(12288 / d)); }

  /* Three significant digits, or powers of ten for the very small and large. */
  function sig(x) {
    if (x === 0) return "0";
    if (Math.abs(x) >= 0.01 && Math.abs(x) < 1000) return x.toPrecision(3);
    return x.toExponential(1).replace("e-", "e−").replace("e+", "e");
  }

  var ROWS = [
    ["std", "std of the scores", function (r) { return F.fmt(r.std, 2); }],
    ["maxWeight", "mean largest weight (uniform 0.031, one-hot 1)", function (r) { return F.fmt(r.maxWeight, 3); }],
    ["entropy", "mean entropy, nats (uniform log 32 = 3.47)", function (r) { return F.fmt(r.entropy, 3); }],
    ["medianJ", "median ‖J‖_F", function (r) { return sig(r.medianJ); }],
    ["medianGrad", "median ‖∂L/∂q‖", function (r) { return sig(r.medianGrad); }]
  ];

  function mount(root) {
    var seed = 0, index = 6; // d_k = 64
    var s = null, waiting = false;

    // a new sample, all of it in steps of 16 features (about 26,000 numbers, a few milliseconds),
    // one step per task: no step holds the page up, even at d_k = 1024 (1.7 million numbers,
    // which took 105-187 ms in one task when the seed changed there). The size shown appears as
    // soon as its features are drawn and it is measured. Then every size's scores, and its
    // measurements unscaled and scaled, a few rows a step, so that moving the slider only reads
    // them.
    function measured(d, scaled) { return !!(s.results && s.results[d + (scaled ? "s" : "u")]); }

    function draw() {
      s = sample(seed);
      var mine = s, next = 0, longest = 0;
      function more() {
        if (mine !== s) return;
        if (waiting && s.drawn >= SIZES[index]) { // the size shown: its scores, its two
          var shown = SIZES[index];                 // measurements, then the page, a task each
          if (!s.cache || !s.cache[shown]) scores(s, shown, rowsPerStep(shown));
          else if (!measured(shown, false)) compute(s, shown, false, rowsPerStep(shown));
          else if (!measured(shown, true)) compute(s, shown, true, rowsPerStep(shown));
          else update();
          setTimeout(more, 0);
          return;
        }
        var start = performance.now();
        if (s.drawn < s.D) ensure(s, s.drawn + 16);
        else if (next < 2 * SIZES.length) {
          var d = SIZES[next >> 1];
          if (!s.cache || !s.cache[d]) scores(s, d, rowsPerStep(d)); // a size's scores, in steps
          else if (compute(s, d, next % 2 === 1, rowsPerStep(d))) next++;
        }
        else {
          root.dataset.mffDrawn = s.drawn;
          root.dataset.mffLongestStepMs = longest.toFixed(1); // the tests read it
          return;
        }
        longest = Math.max(longest, performance.now() - start);
        setTimeout(more, 0);
      }
      setTimeout(more, 0); // not in the task that asked for it (a seed typed, the page's start)
    }

    root.appendChild(F.el("p", {class: "mff-title"}, ["Grow d_k: unscaled rows turn one-hot; their gradients scatter, then collapse"]));
    var controls = F.el("div", {class: "mff-controls"});
    var slider = F.control("range", "d_k", {min: 0, max: SIZES.length - 1, step: 1, "data-input": "dk"});
    controls.appendChild(slider.box);
    var showDk = F.output(controls);
    var seedBox = F.control("number", "seed", {min: 0, max: 999, step: 1, value: 0, "data-input": "seed"});
    controls.appendChild(seedBox.box);
    root.appendChild(controls);

    var table = F.grid(ROWS.map(function (r) { return r[1]; }), ["unscaled", "scaled by 1/√d_k"], "");
    Array.prototype.forEach.call(table.table.querySelectorAll("tbody th"), function (th) {
      th.style.textAlign = "left";
      th.style.fontWeight = "400";
      th.style.color = "var(--mff-fg)";
      th.style.whiteSpace = "normal";
    });
    table.cells.forEach(function (row, i) {
      row[0].dataset.out = ROWS[i][0] + "-unscaled";
      row[1].dataset.out = ROWS[i][0] + "-scaled";
    });
    root.appendChild(table.table);

    // the first query's 32 weights, sorted, as bars
    var W = 160, H = 60;
    function bars(title) {
      var svg = F.svgEl("svg", {viewBox: "0 0 " + W + " " + (H + 18), width: W, height: H + 18, role: "img",
                                "aria-label": title});
      svg.appendChild(F.svgEl("line", {x1: 0, y1: H, x2: W, y2: H, stroke: "currentColor", "stroke-opacity": 0.4}));
      var rects = [];
      for (var j = 0; j < T; j++) {
        var rect = F.svgEl("rect", {x: j * W / T + 0.5, width: W / T - 1, fill: "#0b63c5"});
        svg.appendChild(rect);
        rects.push(rect);
      }
      var label = F.svgEl("text", {x: 0, y: H + 14, class: "mff-muted"}, [title]);
      svg.appendChild(label);
      return {svg: svg, rects: rects, label: label, title: title};
    }
    var b0 = bars("unscaled"), b1 = bars("scaled");
    root.appendChild(F.el("div", {class: "mff-row"}, [b0.svg, b1.svg]));
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Bars: one query's 32 weights, largest first (full height = 1). " + N + " random queries, " +
      "each with " + T + " keys, entries drawn from N(0, 1) in this page."]));

    function drawBars(b, r) {
      b.rects.forEach(function (rect, j) {
        var h = Math.max(0.5, r.first[j] * H);
        rect.setAttribute("y", (H - h).toFixed(2));
        rect.setAttribute("height", h.toFixed(2));
      });
      b.label.textContent = b.title + ": largest " + F.fmt(r.first[0], 3);
    }

    var say = F.announcer(root), started = false;

    function update() {
      var d_k = SIZES[index];
      slider.input.value = index;
      // a screen reader announces d_k, not the slider's position (6 for d_k = 64)
      slider.input.setAttribute("aria-valuetext", "d_k = " + d_k);
      showDk("d_k = " + d_k + ", √d_k = " + F.fmt(Math.sqrt(d_k), 2));
      // its features are still being drawn, or it is not measured yet: shown when it is
      waiting = !s || s.drawn < d_k || !measured(d_k, false) || !measured(d_k, true);
      table.table.setAttribute("aria-busy", String(waiting));
      if (waiting) {
        ROWS.forEach(function (row, i) { F.paint(table.cells[i][0], "…"); F.paint(table.cells[i][1], "…"); });
        return;
      }
      var r0 = compute(s, d_k, false), r1 = compute(s, d_k, true);
      ROWS.forEach(function (row, i) {
        F.paint(table.cells[i][0], row[2](r0));
        F.paint(table.cells[i][1], row[2](r1));
      });
      drawBars(b0, r0);
      drawBars(b1, r1);
      if (started) {
        say("d_k = " + d_k + ", seed " + seed + ". Unscaled: std of the scores " + row0(r0) +
            ". Scaled by 1/√d_k: std " + row0(r1) + ".");
      }
      started = true;
    }

    function row0(r) {
      return F.fmt(r.std, 2) + ", mean largest weight " + F.fmt(r.maxWeight, 3) + ", median gradient " +
        sig(r.medianGrad);
    }

    slider.input.addEventListener("input", function () { index = Number(slider.input.value); update(); });
    // the seed: an integer in [0, 999]; a value beyond is taken at the nearest limit
    F.bindNumber(seedBox.input, {min: 0, max: 999, integer: true}, function () { return seed; },
                 function (v) { seed = v; draw(); update(); });
    // the first sample (its 64 features, about 100,000 draws, and their measurements) in a task
    // of its own, right after the figure's elements are on the page
    setTimeout(function () { if (!s) { draw(); update(); } }, 0);
  }

  F.register("ch04-scaling", {mount: mount});
  return {sample: sample, ensure: ensure, compute: compute, sig: sig, SIZES: SIZES, N: N, T: T, D_MAX: D_MAX};
});
