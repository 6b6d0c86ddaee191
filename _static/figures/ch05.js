/* Chapter 5's figure, "ch05-masking": causal and padding masks switched on and off over the
 * chapter's sentence "the cake was sour <pad> <pad>", with the pads at the end or at the start.
 * The masked weights vanish and every row that may see a key still sums to 1. With the pads at
 * the start, the causal mask leaves the pad queries no key at all: the plain softmax of
 * chapter 5 gives NaN there, the package's softmax zeros.
 *
 * compute(state) is what the page shows (tests/test_figures_js.py compares its masks with
 * minformer.masks, exactly, and its weights with minformer.attention.scaled_dot_product_attention).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var WORDS = ["the", "cake", "was", "sour"];
  var VECTORS = { // d = 4, made up for the figure; <pad> is the zero vector (an nn.Embedding
    the: [0.2, -0.4, 0.9, 0.1], // padding_idx row)
    cake: [1.1, 0.3, -0.5, 0.8],
    was: [-0.3, 0.9, 0.4, -0.6],
    sour: [0.9, -0.2, -0.7, 1.2],
    "<pad>": [0, 0, 0, 0]
  };
  var PADS = 2;

  /* state: {causal, padding, padsAtStart, plain}. Returns the tokens, X, the mask, the weights A
   * (plain: masked scores at -Infinity then softmax, NaN in a row with no key; else the
   * package's, zeros there), Y = A X and each row's sum. */
  function compute(state) {
    var pads = [];
    for (var p = 0; p < PADS; p++) pads.push("<pad>");
    var tokens = state.padsAtStart ? pads.concat(WORDS) : WORDS.concat(pads);
    var t = tokens.length;
    var X = tokens.map(function (w) { return VECTORS[w].slice(); });
    var mask = tokens.map(function () { return tokens.map(function () { return true; }); });
    if (state.causal) mask = F.andMasks(mask, F.causalMask(t));
    if (state.padding) mask = F.andMasks(mask, F.paddingMask(tokens.map(function (w) { return w !== "<pad>"; })));
    var scale = 1 / Math.sqrt(X[0].length);
    var S = X.map(function (a) { return X.map(function (b) { return F.dot(a, b) * scale; }); });
    var A = state.plain ? F.plainMaskedSoftmax(S, mask) : F.maskedSoftmax(S, mask);
    return {tokens: tokens, X: X, mask: mask, S: S, A: A, Y: F.matmul(A, X),
            sums: A.map(function (row) { return row.reduce(function (a, b) { return a + b; }, 0); })};
  }

  function mount(root) {
    var state = {causal: true, padding: true, padsAtStart: false, plain: false};
    root.appendChild(F.el("p", {class: "mff-title"}, ["Switch masks on and off: masked weights vanish, rows still sum to 1"]));
    var controls = F.el("div", {class: "mff-controls"});
    var causal = F.control("checkbox", "causal mask", {"data-input": "causal"});
    var padding = F.control("checkbox", "padding mask", {"data-input": "padding"});
    controls.appendChild(causal.box);
    controls.appendChild(padding.box);
    function radioPair(legend, a, b, key) {
      var set = F.el("fieldset", {}, [F.el("legend", {}, [legend])]);
      var name = F.uid("r");
      var ra = F.control("radio", a, {name: name, "data-input": key + "-0"});
      var rb = F.control("radio", b, {name: name, "data-input": key + "-1"});
      set.appendChild(ra.box);
      set.appendChild(rb.box);
      controls.appendChild(set);
      return [ra.input, rb.input];
    }
    var side = radioPair("pads", "at the end", "at the start", "pads");
    var soft = radioPair("softmax", "the package's", "plain (−∞ then softmax)", "softmax");
    root.appendChild(controls);

    var g = F.grid(["", "", "", "", "", ""], ["", "", "", "", "", "", "sum"], "q \\ k");
    var headCells = g.table.querySelectorAll("thead th");
    var rowHeads = g.table.querySelectorAll("tbody th");
    g.cells.forEach(function (row, i) {
      row.forEach(function (td, j) { td.dataset.out = "A-" + i + "-" + j; });
      row[6].dataset.out = "sum-" + i;
      row[6].classList.remove("mff-cell");
    });
    var wrap = F.el("div", {}, [g.table]);
    wrap.style.overflowX = "auto";
    root.appendChild(wrap);
    var key = F.el("p", {class: "mff-key", "data-out": "key"});
    var setKey = F.output(key);
    root.appendChild(key);
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Row i is query i; a dot is a key its mask hides. Scores q·k/√d_k of made-up 4-d token ",
      "vectors; <pad> is the zero vector."]));

    var say = F.announcer(root), started = false;

    function update() {
      var r = compute(state);
      causal.input.checked = state.causal;
      padding.input.checked = state.padding;
      side[state.padsAtStart ? 1 : 0].checked = true;
      soft[state.plain ? 1 : 0].checked = true;
      r.tokens.forEach(function (w, i) {
        headCells[i + 1].textContent = w;
        rowHeads[i].textContent = w;
      });
      var empty = 0, nan = 0;
      r.A.forEach(function (row, i) {
        if (!r.mask[i].some(Boolean)) empty++;
        row.forEach(function (a, j) {
          var td = g.cells[i][j];
          td.classList.toggle("mff-off", !r.mask[i][j] && !Number.isNaN(a));
          td.classList.toggle("mff-nan", Number.isNaN(a));
          if (Number.isNaN(a)) F.paint(td, "NaN");
          else if (!r.mask[i][j]) F.paint(td, "·");
          else F.paint(td, F.fmt(a), a);
        });
        var s = r.sums[i];
        if (Number.isNaN(s)) nan++;
        g.cells[i][6].classList.toggle("mff-nan", Number.isNaN(s));
        F.paint(g.cells[i][6], F.fmt(s));
      });
      var text;
      if (!empty) text = "Every query sees at least one key, and every row sums to 1.";
      else if (nan) {
        text = empty + (empty === 1 ? " query sees" : " queries see") + " no key: plain softmax gives 0/0 = NaN in " +
          (empty === 1 ? "its row" : "their rows") + ", and one NaN poisons the gradients.";
      } else {
        text = empty + (empty === 1 ? " query sees" : " queries see") + " no key: the package gives " +
          (empty === 1 ? "it" : "them") + " zero weights and a zero output; the other rows sum to 1.";
      }
      setKey(text);
      key.classList.toggle("mff-warn", nan > 0);
      if (started) {
        say((state.causal ? "causal mask on" : "causal mask off") + ", " +
            (state.padding ? "padding mask on (pads at the " + (state.padsAtStart ? "start" : "end") + ")" :
             "padding mask off") + ", " + (state.plain ? "plain softmax" : "the package's softmax") + ". " +
            "Row sums: " + r.sums.map(function (x) { return F.fmt(x); }).join(", ") + ". " + text);
      }
    }

    causal.input.addEventListener("change", function () { state.causal = causal.input.checked; update(); });
    padding.input.addEventListener("change", function () { state.padding = padding.input.checked; update(); });
    side.forEach(function (r, k) { r.addEventListener("change", function () { state.padsAtStart = k === 1; update(); }); });
    soft.forEach(function (r, k) { r.addEventListener("change", function () { state.plain = k === 1; update(); }); });
    update();
    started = true;
  }

  F.register("ch05-masking", {mount: mount});
  return {compute: compute, WORDS: WORDS, VECTORS: VECTORS};
});
