/* Chapter 3's figure, "ch03-qkv": edit W_Q and W_K (or turn the queries with one slider) and
 * watch the scores S = Q Kᵀ = X W_Q (X W_K)ᵀ and the weights A = softmax(S) change, while the raw
 * similarity X Xᵀ of chapter 1 stays where it is. The tokens are chapter 1's three 2-D tokens.
 *
 * compute(X, WQ, WK) is what the page shows (tests/test_figures_js.py compares it with
 * minformer.attention.scaled_dot_product_attention, the scale undone as the chapter does).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var X = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]; // chapter 1's tokens
  var GAIN = 2; // W_Q = 2 R(θ), W_K = 2 I at the start: scores four times chapter 1's at θ = 0

  /* W_Q = GAIN · R(θ), the rotation of row vectors by θ degrees (q = x W_Q), its entries rounded
   * to two decimals: the number boxes then show exactly the matrix used. */
  function turn(theta) {
    var t = theta * Math.PI / 180;
    var c = Math.round(GAIN * Math.cos(t) * 100) / 100, s = Math.round(GAIN * Math.sin(t) * 100) / 100;
    return [[c, s], [-s || 0, c]];
  }

  /* Q = X W_Q, K = X W_K, S = Q Kᵀ (no 1/√d_k: chapter 4's topic), A = softmax(S) row by row,
   * B = W_Q W_Kᵀ, and the raw similarity X Xᵀ. */
  function compute(X, WQ, WK) {
    var Q = F.matmul(X, WQ), K = F.matmul(X, WK);
    var r = F.attention(Q, K, X, null, 1); // V = X (W_V = I): the figure shows S and A
    var asym = 0;
    r.S.forEach(function (row, i) {
      row.forEach(function (s, j) { asym = Math.max(asym, Math.abs(s - r.S[j][i])); });
    });
    return {Q: Q, K: K, S: r.S, A: r.A, Y: r.Y, B: F.matmul(WQ, F.transpose(WK)),
            raw: F.matmul(X, F.transpose(X)), asymmetry: asym};
  }

  function mount(root) {
    var theta = 45;
    var WQ = turn(theta), WK = [[GAIN, 0], [0, GAIN]];
    var names = X.map(function (_, j) { return "x" + (j + 1); });

    root.appendChild(F.el("p", {class: "mff-title"}, ["Change W_Q and W_K: the scores move, X Xᵀ does not"]));
    var controls = F.el("div", {class: "mff-controls"});
    var slider = F.control("range", "turn the queries: W_Q = 2 R(θ), θ", {min: -180, max: 180, step: 5,
                                                                           "data-input": "theta"});
    controls.appendChild(slider.box);
    var showTheta = F.output(controls);
    var reset = F.el("button", {type: "button"}, ["W_Q = W_K = 2 I"]);
    controls.appendChild(reset);
    root.appendChild(controls);

    // W_Q and W_K as 2 × 2 grids of number inputs
    function matrixInputs(name, M) {
      var inputs = [[], []];
      var rows = [0, 1].map(function (a) {
        return F.el("tr", {}, [0, 1].map(function (b) {
          var id = F.uid("w");
          var input = F.el("input", {type: "number", id: id, step: 0.1, min: -9, max: 9,
                                     "data-input": name + a + b});
          var label = F.el("label", {for: id, class: "mff-sr"}, [name + " row " + (a + 1) + ", column " + (b + 1)]);
          label.style.cssText = "position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)";
          inputs[a].push(input);
          // a typed entry is kept within the box's limits, [-9, 9]; a cleared box changes nothing
          // and shows the entry in use again when the reader leaves it
          F.bindNumber(input, {min: -9, max: 9}, function () { return M()[a][b]; },
                       function (v) { M()[a][b] = v; update(false); });
          return F.el("td", {}, [label, input]);
        }));
      });
      var box = F.el("div", {}, [F.el("div", {class: "mff-key"}, [name]),
                                 F.el("table", {}, [F.el("tbody", {}, rows)])]);
      return {box: box, inputs: inputs};
    }
    var inQ = matrixInputs("W_Q", function () { return WQ; });
    var inK = matrixInputs("W_K", function () { return WK; });
    var Bbox = F.el("div", {}, [F.el("div", {class: "mff-key"}, ["B = W_Q W_Kᵀ"])]);
    var Bgrid = F.grid(["", ""], ["", ""]);
    Bgrid.table.querySelector("thead").remove();
    Array.prototype.forEach.call(Bgrid.table.querySelectorAll("th"), function (th) { th.remove(); });
    Bbox.appendChild(Bgrid.table);
    root.appendChild(F.el("div", {class: "mff-row"}, [inQ.box, inK.box, Bbox]));

    function matrixBox(title, out) {
      var g = F.grid(names, names, "q \\ k");
      g.cells.forEach(function (row, i) { row.forEach(function (td, j) { td.dataset.out = out + "-" + i + "-" + j; }); });
      return {box: F.el("div", {}, [F.el("div", {class: "mff-key"}, [title]), g.table]), cells: g.cells};
    }
    var raw = matrixBox("chapter 1: X Xᵀ (fixed)", "raw");
    var S = matrixBox("scores S = Q Kᵀ", "S");
    var A = matrixBox("weights A = softmax(S)", "A");
    root.appendChild(F.el("div", {class: "mff-row"}, [raw.box, S.box, A.box]));
    var key = F.el("p", {class: "mff-key", "data-out": "asymmetry"});
    var setKey = F.output(key);
    root.appendChild(key);
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Rows are queries, columns keys. Each row of A sums to 1; S mirrors across its diagonal only ",
      "when B does."]));

    var say = F.announcer(root), started = false;

    function update(writeInputs) {
      var r = compute(X, WQ, WK);
      showTheta("θ = " + theta + "°");
      slider.input.value = theta;
      if (writeInputs) {
        [[inQ, WQ], [inK, WK]].forEach(function (p) {
          for (var a = 0; a < 2; a++) for (var b = 0; b < 2; b++) p[0].inputs[a][b].value = p[1][a][b];
        });
      }
      for (var a = 0; a < 2; a++) for (var b = 0; b < 2; b++) F.paint(Bgrid.cells[a][b], F.fmt(r.B[a][b]));
      for (var i = 0; i < X.length; i++) {
        for (var j = 0; j < X.length; j++) {
          F.paint(raw.cells[i][j], F.fmt(r.raw[i][j]));
          F.paint(S.cells[i][j], F.fmt(r.S[i][j]));
          F.paint(A.cells[i][j], F.fmt(r.A[i][j]), r.A[i][j]);
        }
      }
      setKey("max |S − Sᵀ| = " + F.fmt(r.asymmetry) + (r.asymmetry < 5e-3 ?
        ": the scores are symmetric, as in chapter 1" : ": x_i scores x_j differently from x_j scoring x_i"));
      if (started) {
        say("θ = " + theta + "°. Weights A, row by row: " + r.A.map(function (row, i) {
          return names[i] + ": " + row.map(function (a) { return F.fmt(a); }).join(", ");
        }).join("; ") + ". max |S − Sᵀ| = " + F.fmt(r.asymmetry));
      }
    }

    slider.input.addEventListener("input", function () {
      theta = Number(slider.input.value);
      WQ = turn(theta);
      update(true);
    });
    reset.addEventListener("click", function () {
      theta = 0;
      WQ = turn(0);
      WK = [[GAIN, 0], [0, GAIN]];
      update(true);
    });
    update(true);
    started = true;
  }

  F.register("ch03-qkv", {mount: mount});
  return {compute: compute, turn: turn, X: X};
});
