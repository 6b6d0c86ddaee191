/* Chapter 1's figure, "ch01-attention": move one of three 2-D tokens and watch its attention
 * weights and its output y_i = Σ_j softmax_j(x_i · x_j) x_j, a convex combination of the tokens,
 * move with it. The tokens start as the chapter's X = (1, 0), (0.8, 0.6), (0, 1), with token 2
 * as the query: scores 0.80, 1.00, 0.60, weights 0.33, 0.40, 0.27, y_2 = (0.65, 0.51).
 *
 * compute(X, i) is what the page shows (tests/test_figures_js.py compares it with
 * minformer.attention.dot_product_attention).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var X0 = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]; // chapter 1's tokens, rows of X
  var LIMIT = 1.5; // the sliders' range: each feature in [-1.5, 1.5]

  /* Self-attention without parameters (no scaling): scores S = X Xᵀ, A = softmax(S) row by row,
   * Y = A X. Returns {scores, weights, y} of query i and the whole {A, Y}. */
  function compute(X, i) {
    var r = F.attention(X, X, X, null, 1);
    return {scores: r.S[i], weights: r.A[i], y: r.Y[i], A: r.A, Y: r.Y};
  }

  function mount(root) {
    var X = X0.map(function (x) { return x.slice(); });
    var query = 1;
    var n = X.length;

    root.appendChild(F.el("p", {class: "mff-title"}, ["Move a token: its weights and its output y follow"]));
    var controls = F.el("div", {class: "mff-controls"});
    var radios = F.el("fieldset", {}, [F.el("legend", {}, ["query token"])]);
    var pick = X.map(function (_, j) {
      var c = F.control("radio", "x" + (j + 1), {name: F.uid("q"), value: String(j)});
      radios.appendChild(c.box);
      return c.input;
    });
    pick.forEach(function (r) { r.name = pick[0].name; });
    controls.appendChild(radios);
    var sx = F.control("range", "", {min: -LIMIT, max: LIMIT, step: 0.05, "data-input": "x"});
    var sy = F.control("range", "", {min: -LIMIT, max: LIMIT, step: 0.05, "data-input": "y"});
    controls.appendChild(sx.box);
    controls.appendChild(sy.box);
    var reset = F.el("button", {type: "button"}, ["reset"]);
    controls.appendChild(reset);
    root.appendChild(controls);

    // the plane: tokens, their hull, lines from y_i to each token (width ∝ weight), the outputs
    var size = 280, pad = 14;
    function px(v) { return pad + (v + LIMIT) / (2 * LIMIT) * (size - 2 * pad); }
    function py(v) { return size - px(v); }
    var svg = F.svgEl("svg", {viewBox: "0 0 " + size + " " + size, width: size, height: size, class: "mff-drag",
                              role: "img", "aria-label": "the tokens in the plane"});
    svg.appendChild(F.svgEl("line", {x1: px(-LIMIT), y1: py(0), x2: px(LIMIT), y2: py(0), stroke: "currentColor",
                                      "stroke-opacity": 0.25}));
    svg.appendChild(F.svgEl("line", {x1: px(0), y1: py(-LIMIT), x2: px(0), y2: py(LIMIT), stroke: "currentColor",
                                      "stroke-opacity": 0.25}));
    var hull = F.svgEl("polygon", {fill: "currentColor", "fill-opacity": 0.08, stroke: "currentColor",
                                    "stroke-opacity": 0.35});
    svg.appendChild(hull);
    var spokes = X.map(function () {
      var l = F.svgEl("line", {stroke: "#d9480f", "stroke-linecap": "round"});
      svg.appendChild(l);
      return l;
    });
    var others = X.map(function () {
      var c = F.svgEl("path", {stroke: "currentColor", "stroke-opacity": 0.45, "stroke-width": 1.5, fill: "none"});
      svg.appendChild(c);
      return c;
    });
    var yMark = F.svgEl("path", {stroke: "#d9480f", "stroke-width": 3, fill: "none"});
    svg.appendChild(yMark);
    var yLabel = F.svgEl("text", {}, ["y"]);
    svg.appendChild(yLabel);
    var dots = X.map(function (_, j) {
      var g = F.svgEl("g", {class: "mff-grab"});
      var c = F.svgEl("circle", {r: 9, fill: "#0b63c5", stroke: "#fff", "stroke-width": 1.5});
      var t = F.svgEl("text", {}, ["x" + (j + 1)]);
      g.appendChild(c);
      g.appendChild(t);
      svg.appendChild(g);
      g.addEventListener("pointerdown", function (ev) {
        ev.preventDefault();
        query = j;
        g.setPointerCapture(ev.pointerId);
        drag = ev.pointerId;
        update();
      });
      g.addEventListener("pointermove", function (ev) {
        if (drag !== ev.pointerId) return;
        var m = svg.getScreenCTM().inverse();
        var p = svg.createSVGPoint();
        p.x = ev.clientX;
        p.y = ev.clientY;
        p = p.matrixTransform(m);
        var v = [(p.x - pad) / (size - 2 * pad) * 2 * LIMIT - LIMIT,
                 (size - p.y - pad) / (size - 2 * pad) * 2 * LIMIT - LIMIT];
        X[query] = v.map(function (a) { return Math.max(-LIMIT, Math.min(LIMIT, Math.round(a * 20) / 20)); });
        update();
      });
      g.addEventListener("pointerup", function () { drag = null; });
      g.addEventListener("pointercancel", function () { drag = null; });
      return {g: g, c: c, t: t};
    });
    var drag = null;

    var table = F.grid(X.map(function (_, j) { return "x" + (j + 1); }),
                       ["x_j", "x_i · x_j", "weight a_ij"], "token j");
    var side = F.el("div", {}, [table.table]);
    table.cells.forEach(function (row, j) { row[1].dataset.out = "score-" + j; row[2].dataset.out = "w-" + j; });
    var key = F.el("p", {class: "mff-key", "data-out": "y"});
    var setY = F.output(key);
    side.appendChild(key);
    var sum = F.el("p", {class: "mff-key"});
    var setSum = F.output(sum);
    side.appendChild(sum);
    root.appendChild(F.el("div", {class: "mff-row"}, [svg, side]));
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Drag a token or use the sliders (keyboard: arrow keys). The orange lines join y to each ",
      "token, as thick as its weight; grey crosses are the other tokens' outputs."]));

    var say = F.announcer(root), started = false;

    function cross(x, y, r) {
      return "M" + (x - r) + " " + (y - r) + "L" + (x + r) + " " + (y + r) +
             "M" + (x - r) + " " + (y + r) + "L" + (x + r) + " " + (y - r);
    }

    function update() {
      var r = compute(X, query);
      var i = query;
      pick[i].checked = true;
      sx.label.textContent = "x" + (i + 1) + ", feature 1";
      sy.label.textContent = "x" + (i + 1) + ", feature 2";
      sx.input.value = X[i][0];
      sy.input.value = X[i][1];
      hull.setAttribute("points", X.map(function (x) { return px(x[0]) + "," + py(x[1]); }).join(" "));
      for (var j = 0; j < n; j++) {
        dots[j].g.setAttribute("transform", "translate(" + px(X[j][0]) + "," + py(X[j][1]) + ")");
        dots[j].c.setAttribute("fill", j === i ? "#d9480f" : "#0b63c5");
        dots[j].t.setAttribute("x", 11);
        dots[j].t.setAttribute("y", -9);
        spokes[j].setAttribute("x1", px(r.y[0]));
        spokes[j].setAttribute("y1", py(r.y[1]));
        spokes[j].setAttribute("x2", px(X[j][0]));
        spokes[j].setAttribute("y2", py(X[j][1]));
        spokes[j].setAttribute("stroke-width", (0.5 + 9 * r.weights[j]).toFixed(2));
        others[j].setAttribute("d", j === i ? "" : cross(px(r.Y[j][0]), py(r.Y[j][1]), 4));
        F.paint(table.cells[j][0], "(" + F.fmt(X[j][0]) + ", " + F.fmt(X[j][1]) + ")");
        F.paint(table.cells[j][1], F.fmt(r.scores[j]));
        F.paint(table.cells[j][2], F.fmt(r.weights[j]), r.weights[j]);
      }
      yMark.setAttribute("d", cross(px(r.y[0]), py(r.y[1]), 7));
      yLabel.setAttribute("x", px(r.y[0]) + 8);
      yLabel.setAttribute("y", py(r.y[1]) + 16);
      yLabel.textContent = "y" + (i + 1);
      setY("y" + (i + 1) + " = Σ_j a_" + (i + 1) + "j x_j = (" + F.fmt(r.y[0]) + ", " + F.fmt(r.y[1]) + ")");
      setSum("weights sum to " + F.fmt(r.weights.reduce(function (a, b) { return a + b; }, 0)) +
             ": y" + (i + 1) + " lies in the shaded triangle");
      if (started) {
        say("x" + (i + 1) + " at (" + F.fmt(X[i][0]) + ", " + F.fmt(X[i][1]) + "): weights " +
            r.weights.map(function (w, j) { return "x" + (j + 1) + " " + F.fmt(w); }).join(", ") +
            "; y" + (i + 1) + " = (" + F.fmt(r.y[0]) + ", " + F.fmt(r.y[1]) + ")");
      }
    }

    pick.forEach(function (r, j) { r.addEventListener("change", function () { query = j; update(); }); });
    sx.input.addEventListener("input", function () { X[query][0] = Number(sx.input.value); update(); });
    sy.input.addEventListener("input", function () { X[query][1] = Number(sy.input.value); update(); });
    reset.addEventListener("click", function () {
      X = X0.map(function (x) { return x.slice(); });
      query = 1;
      update();
    });
    update();
    started = true;
  }

  F.register("ch01-attention", {mount: mount});
  return {compute: compute, X0: X0};
});
