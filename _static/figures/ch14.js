/* Chapter 14's figure, "ch14-tiles": attention by online softmax, one tile of scores at a time, as
 * minformer.attention.chunked_attention computes it. 16 positions; Q and K of width 4 and V of
 * width 2, drawn in the page from a seed (mulberry32, standard normal numbers, rounded to
 * float32). The reader picks the tile size b (queries and keys alike), causal or not, and steps
 * through the tiles in the package's order (_block_pairs: query blocks in turn, each walking its
 * key blocks left to right, causal tiles wholly right of the diagonal skipped). After each tile
 * every query row of it has its running maximum m, sum ℓ = Σ exp(s_j − m) and unnormalized
 * output o = Σ exp(s_j − m) v_j updated as the package's _online_update does:
 *
 *   m' = max(m, max_j s_j), shift = m' (0 while m' = −∞), α = exp(m − shift),
 *   ℓ' = α ℓ + Σ_j exp(s_j − shift),   o' = α o + Σ_j exp(s_j − shift) v_j
 *
 * and after the last tile o/ℓ is compared with the full softmax attention softmax(QKᵀ/2)V.
 * Every operation is rounded to float32 (Math.fround), as the package computes, so the largest
 * difference shown is float32 rounding, not a float64 one.
 *
 * inputs(seed) and run(inputs, b, causal) are what the page shows (tests/test_figures_ch14.py
 * compares them with minformer's _block_pairs, _block_scores and _online_update step by step,
 * and the end with chunked_attention and F.scaled_dot_product_attention).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var T = 16, D_K = 4, D_V = 2;
  var SEED0 = 5, B0 = 4, CAUSAL0 = true, STEP0 = 5; // the start: causal, tiles of 4, tile 5 of 10
  var f32 = Math.fround;

  /* Q, K (16, 4) and V (16, 2): standard normal numbers from the seed, rounded to float32. */
  function inputs(seed) {
    var next = F.gaussian(F.mulberry32(seed));
    function matrix(rows, cols) {
      var M = [];
      for (var i = 0; i < rows; i++) {
        M.push([]);
        for (var k = 0; k < cols; k++) M[i].push(f32(next()));
      }
      return M;
    }
    var Q = matrix(T, D_K), K = matrix(T, D_K), V = matrix(T, D_V);
    return {seed: seed, Q: Q, K: K, V: V};
  }

  /* The blocks [start, end) of b positions: the last one shorter when b does not divide 16. */
  function blocks(b) {
    var out = [];
    for (var j = 0; j < T; j += b) out.push([j, Math.min(j + b, T)]);
    return out;
  }

  /* One score in float32: (q / √d_k) · k with √4 = 2, the products summed in order. */
  function score(q, k) {
    var s = 0;
    for (var c = 0; c < D_K; c++) s = f32(s + f32(f32(q[c] / 2) * k[c]));
    return s;
  }

  /* Every tile in the package's order, each {i0, i1, j0, j1, skipped}; the computed ones carry
   * the state after them. The steps are the computed tiles; state k is after k of them. */
  function run(inp, b, causal) {
    var m = [], ell = [], acc = [], i, j, c;
    for (i = 0; i < T; i++) { m.push(-Infinity); ell.push(0); acc.push([0, 0]); }
    var tiles = [], steps = [{m: m.slice(), ell: ell.slice(), acc: acc.map(function (r) { return r.slice(); }),
                              alpha: null, rose: 0}];
    blocks(b).forEach(function (qb) {
      blocks(b).forEach(function (kb) {
        var tile = {i0: qb[0], i1: qb[1], j0: kb[0], j1: kb[1]};
        tile.skipped = causal && kb[0] > qb[1] - 1; // every key after every query of the block
        tile.index = tiles.length;
        tiles.push(tile);
        if (tile.skipped) return;
        tile.step = steps.length; // its state is steps[tile.step]
        tile.masked = []; // (row, column) inside the tile hidden by the causal mask
        var alpha = {}, rose = 0;
        for (i = qb[0]; i < qb[1]; i++) {
          var S = [], top = -Infinity;
          for (j = kb[0]; j < kb[1]; j++) {
            var s = causal && j > i ? -Infinity : score(inp.Q[i], inp.K[j]);
            if (s === -Infinity) tile.masked.push([i - qb[0], j - kb[0]]);
            S.push(s);
            if (s > top) top = s;
          }
          var mNew = Math.max(m[i], top), shift = mNew === -Infinity ? 0 : mNew;
          var a = f32(Math.exp(f32(m[i] - shift))); // 0 while nothing was seen
          var sum = 0, o = [0, 0];
          for (j = 0; j < S.length; j++) {
            var p = f32(Math.exp(f32(S[j] - shift))); // a masked key: exactly 0
            sum = f32(sum + p);
            for (c = 0; c < D_V; c++) o[c] = f32(o[c] + f32(p * inp.V[kb[0] + j][c]));
          }
          if (m[i] !== -Infinity && mNew > m[i]) rose++;
          alpha[i] = {value: a, first: m[i] === -Infinity};
          ell[i] = f32(f32(a * ell[i]) + sum);
          for (c = 0; c < D_V; c++) acc[i][c] = f32(f32(a * acc[i][c]) + o[c]);
          m[i] = mNew;
        }
        steps.push({m: m.slice(), ell: ell.slice(), acc: acc.map(function (r) { return r.slice(); }),
                    alpha: alpha, rose: rose, tile: tile});
      });
    });
    var Y = acc.map(function (r, i) { return r.map(function (x) { return ell[i] > 0 ? f32(x / ell[i]) : 0; }); });
    var ref = full(inp, causal), diff = 0;
    for (i = 0; i < T; i++) for (c = 0; c < D_V; c++) diff = Math.max(diff, Math.abs(Y[i][c] - ref[i][c]));
    return {b: b, causal: causal, tiles: tiles, steps: steps, Y: Y, full: ref, diff: diff,
            skipped: tiles.filter(function (t) { return t.skipped; }).length};
  }

  /* The full softmax attention in float32, the naive way: every score of a row, its maximum, the
   * weights exp(s − max)/Σ, then the weighted sum of the values. */
  function full(inp, causal) {
    return inp.Q.map(function (q, i) {
      var S = inp.K.map(function (k, j) { return causal && j > i ? -Infinity : score(q, k); });
      var top = Math.max.apply(null, S), sum = 0;
      var e = S.map(function (s) { var x = f32(Math.exp(f32(s - top))); sum = f32(sum + x); return x; });
      var y = [0, 0];
      e.forEach(function (x, j) {
        var w = f32(x / sum);
        for (var c = 0; c < D_V; c++) y[c] = f32(y[c] + f32(w * inp.V[j][c]));
      });
      return y;
    });
  }

  /* A difference as the page writes it: 6.0e−8, or 0. */
  function sci(x) {
    if (x === 0) return "0";
    return x.toExponential(1).replace("e-", "e−").replace("e+", "e");
  }

  function range(a, b) { return b - a === 1 ? String(a) : a + "–" + (b - 1); }

  /* The sentence under the figure (and the live region) for state k of a run. */
  function describe(r, k) {
    var n = r.steps.length - 1, skip = r.skipped;
    var where = r.tiles.length + " tiles of " + r.b + (r.b === 1 ? " position" : " positions") + ", " +
                n + " computed" + (r.causal ? ", " + skip + " skipped (causal)" : "");
    if (k === 0) {
      return "Step 0 of " + n + " (" + where + "): nothing seen yet, m = −∞, ℓ = 0 and o = 0 in every row.";
    }
    var s = r.steps[k], t = s.tile, rows = t.i1 - t.i0;
    var first = Object.keys(s.alpha).every(function (i) { return s.alpha[i].first; });
    var text = "Step " + k + " of " + n + " (" + where + "): queries " + range(t.i0, t.i1) + " against keys " +
               range(t.j0, t.j1) + (t.masked.length ? ", " + t.masked.length + " of its scores masked" : "") + "; ";
    if (first) text += "the first keys these rows see.";
    else if (s.rose === 0) text += "no maximum moved, so nothing was rescaled.";
    else text += "the maximum rose in " + s.rose + " of " + rows + (rows === 1 ? " row" : " rows") +
                 ", whose old ℓ and o were multiplied by e^(m − m′) < 1.";
    if (k === n) {
      text += " Done: o/ℓ is softmax(QKᵀ/2)V, largest difference " + sci(r.diff) + " (float32 rounding).";
    }
    return text;
  }

  // ============================================================ the page

  var CELL = 16, PAD = 22;

  function mount(root) {
    var seed = SEED0, b = B0, causal = CAUSAL0, k = STEP0, want = STEP0, inp = inputs(seed), r = run(inp, b, causal);

    root.appendChild(F.el("p", {class: "mff-title"}, [
      "Online softmax, one tile of scores at a time: the running maximum, sum and output"]));
    var controls = F.el("div", {class: "mff-controls"});
    var sb = F.control("range", "tile size b", {min: 1, max: T, step: 1, "data-input": "b"});
    var showB = F.output(sb.box);
    sb.box.lastChild.style.minWidth = "3.6em"; // the outputs keep their width: no reflow as they change
    var cb = F.control("checkbox", "causal", {"data-input": "causal"});
    var ss = F.control("range", "step", {min: 0, max: 1, step: 1, "data-input": "step"});
    var showStep = F.output(ss.box);
    ss.box.lastChild.style.minWidth = "4.6em";
    var back = F.el("button", {type: "button", "data-input": "back", "aria-label": "back one tile"}, ["◀ back"]);
    var next = F.el("button", {type: "button", "data-input": "next", "aria-label": "next tile"}, ["next ▶"]);
    var sd = F.control("number", "seed", {min: 0, max: 999, step: 1, "data-input": "seed"});
    [sb.box, cb.box, ss.box, back, next, sd.box].forEach(function (c) { controls.appendChild(c); });
    root.appendChild(controls);

    // the 16 × 16 scores, cut into tiles
    var W = PAD + T * CELL + 2, H = PAD + T * CELL + 2;
    var svg = F.svgEl("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
                              style: "flex:0 0 auto",
                              "aria-label": "the 16 by 16 score matrix cut into tiles"});
    var pid = F.uid("hatch");
    var defs = F.svgEl("defs", {}, [
      F.svgEl("pattern", {id: pid, width: 5, height: 5, patternUnits: "userSpaceOnUse",
                          patternTransform: "rotate(45)"}, [
        F.svgEl("line", {x1: 0, y1: 0, x2: 0, y2: 5, style: "stroke:var(--mff-muted)", "stroke-width": 1.4})])]);
    svg.appendChild(defs);
    [0, 4, 8, 12].forEach(function (p) {
      svg.appendChild(F.svgEl("text", {x: PAD + p * CELL + CELL / 2, y: PAD - 8, "text-anchor": "middle",
                                       class: "mff-muted"}, [String(p)]));
      svg.appendChild(F.svgEl("text", {x: PAD - 5, y: PAD + p * CELL + CELL / 2 + 4, "text-anchor": "end",
                                       class: "mff-muted"}, [String(p)]));
    });
    var layer = F.svgEl("g", {});
    svg.appendChild(layer);

    // the running state of every query row
    var head = F.el("tr", {}, ["query", "m", "ℓ", "rescale", "o/ℓ₁", "o/ℓ₂"].map(function (h) {
      return F.el("th", {scope: "col"}, [h]);
    }));
    var cells = [], trs = [];
    var body = F.el("tbody", {}, []);
    for (var i = 0; i < T; i++) {
      var tds = ["m", "l", "r", "y0", "y1"].map(function (name) {
        return F.el("td", {"data-out": name + "-" + i}, [""]);
      });
      cells.push(tds);
      var tr = F.el("tr", {}, [F.el("th", {scope: "row"}, [String(i)])].concat(tds));
      trs.push(tr);
      body.appendChild(tr);
    }
    var table = F.el("table", {"aria-label": "the running statistics of every query"}, [F.el("thead", {}, [head]), body]);
    root.appendChild(F.el("div", {class: "mff-row"}, [svg, table]));

    var key = F.el("p", {class: "mff-key", "data-out": "step"}, [""]), keyHeight = 0;
    root.appendChild(key);
    // the sentence's box only grows: a shorter sentence does not move the page below it (that
    // repaints all of the page in view, the slowest part of an update); measured after layout
    if (typeof ResizeObserver !== "undefined") {
      new ResizeObserver(function () {
        var h = key.offsetHeight;
        if (h > keyHeight) { keyHeight = h; key.style.minHeight = h + "px"; }
      }).observe(key);
    }
    var swatch = function (style) {
      return F.svgEl("svg", {width: 14, height: 14, viewBox: "0 0 14 14", "aria-hidden": "true",
                             style: "display:inline-block;vertical-align:-2px;margin:0 4px 0 10px"},
                     [F.svgEl("rect", {x: 0.5, y: 0.5, width: 13, height: 13, style: style})]);
    };
    // the legend stays in the still picture (.ci/pdf_figures.py hides the note)
    root.appendChild(F.el("p", {class: "mff-key"}, [
      swatch("fill:var(--mff-accent);fill-opacity:0.85;stroke:var(--mff-fg)"), "the tile in hand (the only scores held)",
      swatch("fill:var(--mff-accent);fill-opacity:0.25;stroke:var(--mff-fg);stroke-opacity:0.45"), "tiles done",
      swatch("fill:url(#" + pid + ");stroke:var(--mff-fg);stroke-opacity:0.45"),
      "masked: tiles skipped, scores masked inside a tile"]));
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Each step folds one tile into the rows of its queries (highlighted): m′ = max(m, the tile's scores); ",
      "ℓ and o = Σ e^(s − m) v are multiplied by e^(m − m′) (rescale) before the tile's terms are added. ",
      "o/ℓ is the output over the keys seen so far. Step with the slider, the buttons or the arrow keys."]));
    var announce = F.announcer(root);

    // five paths, whatever the tile size: the skipped tiles, the tiles done, the tile in hand,
    // the masked scores inside the computed tiles (covered, then hatched), every tile's border
    function path(style) { var e = F.svgEl("path", {d: "", style: style}); layer.appendChild(e); return e; }
    function setD(e, d) { if (e.getAttribute("d") !== d) e.setAttribute("d", d); } // no needless repaint
    var pSkipped = path("fill:url(#" + pid + ");fill-opacity:0.7");
    var pDone = path("fill:var(--mff-accent);fill-opacity:0.25");
    var pNow = path("fill:var(--mff-accent);fill-opacity:0.85");
    var pMaskBg = path("fill:var(--mff-bg)");
    var pMask = path("fill:url(#" + pid + ")");
    var pBorder = path("fill:none;stroke:var(--mff-fg);stroke-opacity:0.45;stroke-width:1");
    var pNowBorder = path("fill:none;stroke:var(--mff-fg);stroke-width:2.5");

    function box(i0, i1, j0, j1) {
      return "M" + (PAD + j0 * CELL) + " " + (PAD + i0 * CELL) + "h" + (j1 - j0) * CELL + "v" + (i1 - i0) * CELL +
             "h" + -(j1 - j0) * CELL + "z";
    }

    function draw() {
      var now = k > 0 ? r.steps[k].tile : null, skipped = "", done = "", masked = "", border = "";
      r.tiles.forEach(function (t) {
        var d = box(t.i0, t.i1, t.j0, t.j1);
        border += d;
        if (t.skipped) { skipped += d; return; }
        if (t.step > k) return;
        if (!now || t.index !== now.index) done += d;
        t.masked.forEach(function (c) {
          masked += box(t.i0 + c[0], t.i0 + c[0] + 1, t.j0 + c[1], t.j0 + c[1] + 1);
        });
      });
      setD(pSkipped, skipped);
      setD(pDone, done);
      setD(pNow, now ? box(now.i0, now.i1, now.j0, now.j1) : "");
      setD(pMaskBg, masked);
      setD(pMask, masked);
      setD(pBorder, border);
      setD(pNowBorder, now ? box(now.i0, now.i1, now.j0, now.j1) : "");
    }

    function update(speak) {
      var n = r.steps.length - 1, s = r.steps[k], now = k > 0 ? s.tile : null;
      sb.input.value = b;
      sb.input.setAttribute("aria-valuetext", "b = " + b);
      showB("b = " + b);
      cb.input.checked = causal;
      ss.input.max = n;
      ss.input.value = k;
      ss.input.setAttribute("aria-valuetext", "step " + k + " of " + n);
      showStep(k + " of " + n);
      sd.input.value = seed;
      back.setAttribute("aria-disabled", k === 0 ? "true" : "false"); // kept focusable
      next.setAttribute("aria-disabled", k === n ? "true" : "false");
      draw();
      for (var i = 0; i < T; i++) {
        var c = cells[i], inTile = now && i >= now.i0 && i < now.i1;
        if (trs[i].classList.contains("mff-now") !== Boolean(inTile)) { // the tile's queries
          trs[i].classList.toggle("mff-now", Boolean(inTile));
          trs[i].style.background = inTile ? "var(--mff-soft)" : "";
          trs[i].style.fontWeight = inTile ? "600" : "";
        }
        F.paint(c[0], F.fmt(s.m[i], 2));
        F.paint(c[1], F.fmt(s.ell[i], 3));
        var a = inTile ? s.alpha[i] : null;
        F.paint(c[2], a ? (a.first ? "first" : F.fmt(a.value, 3)) : "");
        F.paint(c[3], s.ell[i] > 0 ? F.fmt(s.acc[i][0] / s.ell[i], 3) : "—");
        F.paint(c[4], s.ell[i] > 0 ? F.fmt(s.acc[i][1] / s.ell[i], 3) : "—");
      }
      var text = describe(r, k);
      if (key.firstChild.nodeValue !== text) key.firstChild.nodeValue = text;
      if (speak) announce(text);
    }

    // the step the reader chose is kept: a tile size with fewer steps shows its last one, and
    // going back to the first size shows the chosen step again
    function redo() { r = run(inp, b, causal); k = Math.min(want, r.steps.length - 1); }
    function go(step) { k = want = step; update(true); }

    sb.input.addEventListener("input", function () { b = Number(sb.input.value); redo(); update(true); });
    cb.input.addEventListener("change", function () { causal = cb.input.checked; redo(); update(true); });
    ss.input.addEventListener("input", function () { go(Number(ss.input.value)); });
    back.addEventListener("click", function () { if (k > 0) go(k - 1); });
    next.addEventListener("click", function () { if (k < r.steps.length - 1) go(k + 1); });
    F.bindNumber(sd.input, {min: 0, max: 999, integer: true}, function () { return seed; }, function (v) {
      seed = v;
      inp = inputs(seed);
      redo();
      update(true);
    });
    update(false);
  }

  F.register("ch14-tiles", {mount: mount});
  return {inputs: inputs, run: run, full: full, describe: describe, sci: sci,
          T: T, D_K: D_K, D_V: D_V, SEED0: SEED0, B0: B0, CAUSAL0: CAUSAL0, STEP0: STEP0};
});
