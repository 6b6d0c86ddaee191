/* core.js: what the interactive figures of Part I share (issue 34): the operations of the package
 * they show, in plain JavaScript, and a few helpers to build a figure in the page.
 *
 *   matmul, transpose, dot          the products of chapter 1 (rows are tokens, as in the book)
 *   softmax                         minformer.attention.softmax: one row, stably (max subtracted)
 *   maskedSoftmax                   the package's masked softmax (attention._masked_softmax): a row
 *                                   with no allowed key gets all-zero weights, never NaN
 *   plainMaskedSoftmax              the inline version of chapter 5: masked scores at -Infinity,
 *                                   then softmax, so a fully masked row is 0/0 = NaN
 *   attention                       scaled_dot_product_attention(Q, K, V, mask): weights and output
 *   causalMask, paddingMask, andMasks    minformer.masks (true = may attend)
 *   sinusoidal                      minformer.positional.sinusoidal_encoding(n, d)
 *   mulberry32, normals             a seeded generator, and standard normal draws from it
 *
 * A matrix is an array of rows (plain arrays of numbers): the figures' matrices are small, and
 * readable code matters more here than speed. Arithmetic is JavaScript's float64; the package
 * computes in float32, and tests/test_figures_js.py checks that the two agree within 1e-6.
 *
 * One file, no dependency: a classic script in a page (global MinformerFigures), a CommonJS module
 * in Node. Each figure is a script of its own (_static/figures/chNN.js) that calls register(); a
 * page holds the figure's element, <div class="mff" data-figure="NAME">, and the two scripts.
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.MinformerFigures = root.MinformerFigures || factory();
})(typeof globalThis !== "undefined" ? globalThis : this, function () {
  "use strict";

  // ============================================================ 1. The mathematics

  function dot(a, b) {
    var s = 0;
    for (var i = 0; i < a.length; i++) s += a[i] * b[i];
    return s;
  }

  function transpose(A) {
    return A[0].map(function (_, j) { return A.map(function (row) { return row[j]; }); });
  }

  /* A (n, m) times B (m, p): (n, p). */
  function matmul(A, B) {
    if (A[0].length !== B.length) {
      throw new Error("matmul: shapes (" + A.length + ", " + A[0].length + ") and (" +
                      B.length + ", " + B[0].length + ") do not fit");
    }
    var Bt = transpose(B);
    return A.map(function (row) { return Bt.map(function (col) { return dot(row, col); }); });
  }

  /* softmax of one row: exp(x_j - max) / Σ_k exp(x_k - max). A row of -Infinity only gives NaN,
   * as torch.softmax does. */
  function softmax(row) {
    var max = Math.max.apply(null, row);
    var e = row.map(function (x) { return Math.exp(x - max); });
    var sum = e.reduce(function (a, b) { return a + b; }, 0);
    return e.map(function (x) { return x / sum; });
  }

  /* Chapter 5's inline masked attention: masked scores set to -Infinity, then softmax. */
  function plainMaskedSoftmax(S, M) {
    return S.map(function (row, i) {
      return softmax(row.map(function (s, j) { return M[i][j] ? s : -Infinity; }));
    });
  }

  /* The package's: masked keys get exactly 0; a row that may see no key gets all zeros. */
  function maskedSoftmax(S, M) {
    return S.map(function (row, i) {
      if (!M[i].some(Boolean)) return row.map(function () { return 0; });
      return softmax(row.map(function (s, j) { return M[i][j] ? s : -Infinity; }));
    });
  }

  /* scaled_dot_product_attention: A = softmax(Q Kᵀ · scale) over the keys mask allows (scale
   * 1/√d_k unless given), Y = A V. mask: (t_q, t_k) booleans or null. Returns {S, A, Y}. */
  function attention(Q, K, V, mask, scale) {
    if (scale === undefined) scale = 1 / Math.sqrt(Q[0].length);
    var S = Q.map(function (q) { return K.map(function (k) { return dot(q, k) * scale; }); });
    var A = mask ? maskedSoftmax(S, mask) : S.map(softmax);
    return {S: S, A: A, Y: matmul(A, V)};
  }

  /* causal_mask(t): query i may attend to keys j ≤ i. */
  function causalMask(t) {
    var M = [];
    for (var i = 0; i < t; i++) {
      M.push([]);
      for (var j = 0; j < t; j++) M[i].push(j <= i);
    }
    return M;
  }

  /* A (t, t) padding mask: key j allowed iff real[j] (the same row for every query), as
   * padding_mask(tokens=..., pad_id=...) broadcast over the queries. */
  function paddingMask(real) {
    return real.map(function () { return real.slice(); });
  }

  function andMasks(A, B) {
    return A.map(function (row, i) { return row.map(function (a, j) { return a && B[i][j]; }); });
  }

  /* sinusoidal_encoding(n, d): P[pos][2i] = sin(pos / base^(2i/d)), P[pos][2i+1] = cos. */
  function sinusoidal(n, d, base) {
    base = base || 10000;
    var P = [];
    for (var pos = 0; pos < n; pos++) {
      var row = new Array(d);
      for (var two_i = 0; two_i < d; two_i += 2) {
        var angle = pos / Math.pow(base, two_i / d);
        row[two_i] = Math.sin(angle);
        if (two_i + 1 < d) row[two_i + 1] = Math.cos(angle);
      }
      P.push(row);
    }
    return P;
  }

  /* mulberry32: a small seeded generator of uniform numbers in [0, 1), the same in every browser
   * and in Node. */
  function mulberry32(seed) {
    var a = seed >>> 0;
    return function () {
      a = (a + 0x6d2b79f5) >>> 0;
      var t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  /* A stream of standard normal numbers (Box-Muller, each pair of uniforms giving two) from the
   * generator rand: gaussian(rand)() is the next one. */
  function gaussian(rand) {
    var spare = null;
    return function () {
      if (spare !== null) { var s = spare; spare = null; return s; }
      var u = 1 - rand(), v = rand(); // u in (0, 1]: log(u) is finite
      var r = Math.sqrt(-2 * Math.log(u));
      spare = r * Math.sin(2 * Math.PI * v);
      return r * Math.cos(2 * Math.PI * v);
    };
  }

  /* n standard normal numbers from the generator rand, as a Float64Array. */
  function normals(rand, n) {
    var next = gaussian(rand), out = new Float64Array(n);
    for (var i = 0; i < n; i++) out[i] = next();
    return out;
  }

  /* The lower median, as torch.median gives it for an even count. */
  function median(xs) {
    var s = Array.prototype.slice.call(xs).sort(function (a, b) { return a - b; });
    return s[(s.length - 1) >> 1];
  }

  // ============================================================ 2. Building a figure

  var CSS = [
    ".mff{--mff-bg:#fff;--mff-fg:#1f2328;--mff-muted:#59636e;--mff-line:#d0d7de;--mff-accent:#0b63c5;",
    " --mff-warn:#b3261e;--mff-soft:#f3f5f7;background:var(--mff-bg);color:var(--mff-fg);",
    " border:1px solid var(--mff-line);border-radius:8px;padding:12px;margin:1em 0;max-width:100%;",
    " box-sizing:border-box;font-size:15px;line-height:1.4;",
    " font-family:system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;overflow-wrap:anywhere}",
    "html[data-theme=dark] .mff{--mff-bg:#1c2128;--mff-fg:#e6edf3;--mff-muted:#9198a1;",
    " --mff-line:#444c56;--mff-accent:#6cb6ff;--mff-warn:#ff8a80;--mff-soft:#262c36}",
    ".mff *{box-sizing:border-box}",
    ".mff-title{font-weight:600;margin:0 0 8px}",
    ".mff-controls{display:flex;flex-wrap:wrap;gap:6px 16px;margin-bottom:10px;align-items:center}",
    ".mff-controls label{display:flex;align-items:center;gap:6px;font-size:14px}",
    ".mff-controls fieldset{border:0;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:4px 12px;",
    " align-items:center;font-size:14px}",
    ".mff-controls legend{float:left;padding:0 6px 0 0;font-size:14px;color:var(--mff-muted)}",
    ".mff input[type=range]{width:150px;max-width:100%;accent-color:var(--mff-accent)}",
    ".mff input[type=checkbox],.mff input[type=radio]{accent-color:var(--mff-accent)}",
    ".mff input[type=number]{width:4.2em;font:inherit;font-size:14px;color:var(--mff-fg);",
    " background:var(--mff-bg);border:1px solid var(--mff-line);border-radius:4px;padding:1px 3px}",
    ".mff button{font:inherit;font-size:13px;color:var(--mff-fg);background:var(--mff-soft);",
    " border:1px solid var(--mff-line);border-radius:4px;padding:2px 8px;cursor:pointer}",
    ".mff :focus-visible{outline:2px solid var(--mff-accent);outline-offset:1px}",
    ".mff-out{font-variant-numeric:tabular-nums}",
    ".mff-row{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}",
    ".mff-row>*{min-width:0}",
    ".mff svg{display:block;max-width:100%;height:auto}",
    ".mff svg text{fill:var(--mff-fg);font-size:12px;font-family:inherit}",
    ".mff svg .mff-muted{fill:var(--mff-muted)}",
    ".mff table{border-collapse:collapse;font-size:13px;margin:0;font-variant-numeric:tabular-nums}",
    ".mff th,.mff td{padding:2px 4px;text-align:right;border:0;background:none;color:var(--mff-fg);",
    " white-space:nowrap;overflow-wrap:normal}",
    ".mff th{font-weight:600;color:var(--mff-muted)}",
    ".mff td.mff-cell{min-width:2.4em;text-align:center;border:1px solid var(--mff-line)}",
    ".mff td.mff-off{color:var(--mff-muted)}",
    ".mff td.mff-nan{color:var(--mff-warn);font-weight:700}",
    ".mff-note{font-size:13px;color:var(--mff-muted);margin:8px 0 0}",
    ".mff-key{font-size:14px;margin:6px 0 0}",
    ".mff-warn{color:var(--mff-warn);font-weight:600}",
    ".mff-grab{cursor:grab}",
    // dragging by touch: Chromium honours touch-action on the <svg>, not on a <g> inside it
    ".mff svg.mff-drag{touch-action:none}",
    ".mff-sr{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;",
    " clip:rect(0 0 0 0);white-space:nowrap;border:0}",
    "@media (max-width:480px){.mff{padding:10px 8px}.mff th,.mff td{padding:2px 2px;font-size:12px}",
    " .mff td.mff-cell{min-width:2.2em}}"
  ].join("\n");

  function addStyle(doc) {
    if (doc.getElementById("mff-style")) return;
    var style = doc.createElement("style");
    style.id = "mff-style";
    style.textContent = CSS;
    doc.head.appendChild(style);
  }

  var SVGNS = "http://www.w3.org/2000/svg";

  /* el("label", {class: "x", for: "id"}, [children or strings]) in the element's document. */
  function el(tag, attrs, children, svg) {
    var e = svg ? document.createElementNS(SVGNS, tag) : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) {
      e.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    });
    return e;
  }

  function svgEl(tag, attrs, children) { return el(tag, attrs, children, true); }

  var ids = 0;
  function uid(prefix) { ids += 1; return "mff-" + prefix + "-" + ids; }

  /* A labelled control: <label for=id>text</label><input id=id ...>, wrapped in one label box. */
  function control(type, text, attrs) {
    var id = uid(type);
    var input = el("input", Object.assign({type: type, id: id}, attrs || {}));
    var label = el("label", {for: id}, [text]);
    var box = type === "checkbox" || type === "radio" ?
      el("span", {class: "mff-check"}, [input, label]) : el("span", {class: "mff-field"}, [label, input]);
    box.style.display = "inline-flex";
    box.style.alignItems = "center";
    box.style.gap = "6px";
    return {box: box, input: input, label: label};
  }

  /* x to `digits` decimals, with a true minus sign; NaN and ±Infinity spelled out. */
  function fmt(x, digits) {
    if (Number.isNaN(x)) return "NaN";
    if (x === Infinity) return "∞";
    if (x === -Infinity) return "−∞";
    if (Math.abs(x) >= 1e9) return x.toExponential(2).replace("e+", "e").replace("-", "−");
    var s = x.toFixed(digits === undefined ? 2 : digits);
    if (/^-0\.?0*$/.test(s)) s = s.slice(1); // no "-0.00"
    return s.replace("-", "−");
  }

  /* The colour of a weight in [0, 1] (a ramp from white to deep blue, the same in both themes)
   * and the text colour that reads on it: black or white, whichever contrasts more (at least
   * 4.58:1 for any background). */
  function ramp(w) {
    w = Math.max(0, Math.min(1, w));
    var lo = [255, 255, 255], hi = [8, 69, 148];
    var c = lo.map(function (l, i) { return Math.round(l + (hi[i] - l) * Math.sqrt(w)); });
    return {bg: "rgb(" + c.join(",") + ")", fg: luminance(c) > 0.179 ? "#000" : "#fff"};
  }

  function luminance(c) {
    var f = c.map(function (v) {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2];
  }

  /* A table of numbers: rows of cells that `paint` fills later. Returns {table, cells}. */
  function grid(rowLabels, colLabels, corner) {
    var cells = [];
    var head = el("tr", {}, [el("th", {scope: "col"}, [corner || ""])].concat(colLabels.map(function (c) {
      return el("th", {scope: "col"}, [c]);
    })));
    var rows = rowLabels.map(function (r) {
      var tds = colLabels.map(function () { return el("td", {class: "mff-cell"}, [""]); });
      cells.push(tds);
      return el("tr", {}, [el("th", {scope: "row"}, [r])].concat(tds));
    });
    return {table: el("table", {}, [el("thead", {}, [head]), el("tbody", {}, rows)]), cells: cells};
  }

  /* Write a number into a cell; shade it by weight when `shade` is given (in [0, 1]). */
  function paint(td, text, shade) {
    if (td.firstChild.nodeValue !== text) td.firstChild.nodeValue = text;
    if (shade === undefined || shade === null) {
      td.style.background = "";
      td.style.color = "";
    } else {
      var c = ramp(shade);
      td.style.background = c.bg;
      td.style.color = c.fg;
    }
  }

  /* A text node to update: out(parent) appends a span and returns a setter. */
  function output(parent, cls) {
    var span = el("span", {class: "mff-out" + (cls ? " " + cls : "")}, [""]);
    parent.appendChild(span);
    return function (text) { if (span.firstChild.nodeValue !== text) span.firstChild.nodeValue = text; };
  }

  /* A polite live region for the figure: announcer(root)(text) tells a screen reader the new
   * values once the reader pauses (the last text within `wait` ms: a slider dragged or an arrow
   * key held announces where it stops, not every step), without moving the focus. */
  function announcer(root, wait) {
    var region = el("div", {class: "mff-sr", role: "status", "aria-live": "polite", "aria-atomic": "true",
                            "data-live": ""}, [""]);
    root.appendChild(region);
    var timer = null;
    return function (text) {
      if (timer !== null) clearTimeout(timer);
      timer = setTimeout(function () {
        timer = null;
        if (region.textContent !== text) region.textContent = text;
      }, wait === undefined ? 400 : wait);
    };
  }

  /* A number box that only ever gives its figure a valid value: what is typed is parsed as the
   * reader types; a number outside [min, max] is taken at the nearest limit (and a non-integer
   * rounded when `integer`); an empty box or one that is not a number changes nothing. When the
   * reader leaves the box (change), it shows the value in use again, so it never shows a value
   * the figure is not using. set(v) receives the value; get() gives the one in use. */
  function bindNumber(input, opts, get, set) {
    function parse() {
      var text = input.value.trim();
      if (text === "") return null;
      var v = Number(text);
      if (!Number.isFinite(v)) return null;
      if (opts.integer) v = Math.round(v);
      return Math.min(opts.max, Math.max(opts.min, v));
    }
    input.addEventListener("input", function () {
      var v = parse();
      input.setAttribute("aria-invalid", v === null || v !== Number(input.value) ? "true" : "false");
      if (v !== null && v !== get()) set(v);
    });
    input.addEventListener("change", function () {
      input.value = String(get());
      input.setAttribute("aria-invalid", "false");
    });
  }

  // ============================================================ 3. Figures in the page

  var registry = {};

  /* A figure: register(name, {mount(element)}). Mounts it on every <div class="mff"
   * data-figure=name> of the page, in a task of its own (not inside the task that parses the
   * page, which it would lengthen) once the page's elements are there. */
  function register(name, figure) {
    registry[name] = figure;
    if (typeof document === "undefined") return;
    var later = function () { setTimeout(function () { mountAll(name); }, 0); };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", later);
    else later();
  }

  function mountAll(name) {
    var found = document.querySelectorAll(".mff[data-figure='" + name + "']");
    Array.prototype.forEach.call(found, function (e) {
      if (e.dataset.mffReady) return;
      addStyle(document);
      var start = typeof performance !== "undefined" ? performance.now() : 0;
      e.textContent = ""; // the fallback text for readers without JavaScript
      registry[name].mount(e);
      e.dataset.mffReady = "1";
      if (start) e.dataset.mffMountMs = (performance.now() - start).toFixed(1); // tests read it
    });
  }

  return {
    dot: dot, transpose: transpose, matmul: matmul, softmax: softmax,
    maskedSoftmax: maskedSoftmax, plainMaskedSoftmax: plainMaskedSoftmax, attention: attention,
    causalMask: causalMask, paddingMask: paddingMask, andMasks: andMasks,
    sinusoidal: sinusoidal, mulberry32: mulberry32, gaussian: gaussian, normals: normals, median: median,
    el: el, svgEl: svgEl, control: control, fmt: fmt, ramp: ramp, grid: grid, paint: paint,
    output: output, uid: uid, announcer: announcer, bindNumber: bindNumber, register: register,
    registry: registry
  };
});
