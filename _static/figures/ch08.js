/* Chapter 8's figure, "ch08-positions": sliders for a position p and an offset k over the
 * sinusoidal encodings (d = 64). The two encodings PE(p) and PE(p + k) as strips of 64 features;
 * four of the 32 (sin, cos) pairs as points on their circles, where the shift by k is a turn by
 * ω_i k whatever p is; and the dot product PE(p) · PE(p + k) = Σ_i cos(ω_i k) against the offset,
 * which moves with k and not with p.
 *
 * compute(p, k, d) is what the page shows (tests/test_figures_js.py compares it with
 * minformer.positional.sinusoidal_encoding).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var D = 64, P_MAX = 99, K_MAX = 50, PROFILE = 100;
  var PAIRS = [0, 4, 8, 16]; // the pairs drawn as circles (the chapter plots the same four)

  function omega(i, d) { return 1 / Math.pow(10000, 2 * i / d); }

  /* The encodings of p and p + k (rows p and p + k of sinusoidal_encoding(p + k + 1, d)), their
   * dot product, the closed form Σ_i cos(ω_i k), and the profile Σ_i cos(ω_i m), m = 0 … 100. */
  function compute(p, k, d) {
    d = d || D;
    var rows = F.sinusoidal(p + k + 1, d);
    var a = rows[p], b = rows[p + k];
    var profile = [];
    for (var m = 0; m <= PROFILE; m++) {
      var s = 0;
      for (var i = 0; i < d / 2; i++) s += Math.cos(omega(i, d) * m);
      profile.push(s);
    }
    var closed = 0;
    for (var i2 = 0; i2 < d / 2; i2++) closed += Math.cos(omega(i2, d) * k);
    return {a: a, b: b, dot: F.dot(a, b), closed: closed, profile: profile};
  }

  /* A diverging colour for a value in [-1, 1]: blue below 0, white at 0, red above. */
  function diverging(v) {
    var w = Math.min(1, Math.abs(v));
    var hi = v < 0 ? [33, 102, 172] : [178, 24, 43];
    return "rgb(" + hi.map(function (h) { return Math.round(255 + (h - 255) * w); }).join(",") + ")";
  }

  function mount(root) {
    var p = 10, k = 5;
    root.appendChild(F.el("p", {class: "mff-title"}, ["Slide p and k: PE(p) · PE(p + k) depends on k alone"]));
    var controls = F.el("div", {class: "mff-controls"});
    var sp = F.control("range", "position p", {min: 0, max: P_MAX, step: 1, "data-input": "p"});
    var showP = F.output(sp.box);
    var sk = F.control("range", "offset k", {min: 0, max: K_MAX, step: 1, "data-input": "k"});
    var showK = F.output(sk.box);
    controls.appendChild(sp.box);
    controls.appendChild(sk.box);
    root.appendChild(controls);

    // two strips of 64 features
    var cell = 4.5, lab = 58, W = lab + D * cell;
    var strips = F.svgEl("svg", {viewBox: "0 0 " + W + " 56", width: W, height: 56, role: "img",
                                 "aria-label": "the two encodings, feature by feature"});
    function strip(y) {
      var rects = [];
      for (var j = 0; j < D; j++) {
        var r = F.svgEl("rect", {x: lab + j * cell, y: y, width: cell, height: 16});
        strips.appendChild(r);
        rects.push(r);
      }
      var t = F.svgEl("text", {x: 0, y: y + 12}, [""]);
      strips.appendChild(t);
      return {rects: rects, label: t};
    }
    var s0 = strip(2), s1 = strip(22);
    strips.appendChild(F.svgEl("text", {x: lab, y: 53, class: "mff-muted"}, ["feature 0 → 63 (sin, cos pairs)"]));
    root.appendChild(strips);

    // four pairs as points on the unit circle
    var R = 24, box = 76;
    var circles = F.svgEl("svg", {viewBox: "0 0 " + (box * PAIRS.length) + " " + (box + 26),
                                  width: box * PAIRS.length, height: box + 26, role: "img",
                                  "aria-label": "four (sin, cos) pairs on their circles"});
    var marks = PAIRS.map(function (i, n) {
      var cx = box * n + box / 2, cy = box / 2 + 2;
      circles.appendChild(F.svgEl("circle", {cx: cx, cy: cy, r: R, fill: "none", stroke: "currentColor",
                                             "stroke-opacity": 0.4}));
      var arc = F.svgEl("path", {fill: "none", stroke: "#d9480f", "stroke-width": 2});
      var from = F.svgEl("circle", {r: 4.5, fill: "#0b63c5"});
      var to = F.svgEl("circle", {r: 4.5, fill: "#d9480f"});
      circles.appendChild(arc);
      circles.appendChild(from);
      circles.appendChild(to);
      var t1 = F.svgEl("text", {x: cx, y: box + 10, "text-anchor": "middle"}, ["pair " + i]);
      var t2 = F.svgEl("text", {x: cx, y: box + 23, "text-anchor": "middle", class: "mff-muted"}, [""]);
      circles.appendChild(t1);
      circles.appendChild(t2);
      return {i: i, cx: cx, cy: cy, arc: arc, from: from, to: to, turn: t2};
    });
    root.appendChild(circles);

    // the dot product against the offset: both axes from 0, ticks labelled inside the picture
    var PW = 300, PH = 136, left = 30, right = 12, top = 8, bottom = 34;
    var prof = compute(0, 0).profile;
    var lo = 0, hi = D / 2; // Σ_i cos(ω_i m) lies in (0, 32] for m ≤ 100 (its least, 10.77, at 96)
    function X(m) { return left + m / PROFILE * (PW - left - right); }
    function Y(v) { return top + (hi - v) / (hi - lo) * (PH - top - bottom); }
    var chart = F.svgEl("svg", {viewBox: "0 0 " + PW + " " + PH, width: PW, height: PH, role: "img",
                                "aria-label": "the dot product PE(p) · PE(p + k) against the offset k, whatever p is: " +
                                "32 at k = 0, falling to its least, 10.8, at k = 96"});
    [0, 16, 32].forEach(function (v) {
      chart.appendChild(F.svgEl("line", {x1: left, y1: Y(v), x2: PW - right, y2: Y(v), stroke: "currentColor",
                                         "stroke-opacity": v === 0 ? 0.4 : 0.12}));
      chart.appendChild(F.svgEl("text", {x: left - 4, y: Y(v) + 4, "text-anchor": "end", class: "mff-muted"},
                                [String(v)]));
    });
    chart.appendChild(F.svgEl("line", {x1: left, y1: top, x2: left, y2: Y(lo), stroke: "currentColor",
                                       "stroke-opacity": 0.4}));
    [0, 25, 50, 75, 100].forEach(function (m) {
      chart.appendChild(F.svgEl("line", {x1: X(m), y1: Y(lo), x2: X(m), y2: Y(lo) + 3, stroke: "currentColor",
                                         "stroke-opacity": 0.4}));
      chart.appendChild(F.svgEl("text", {x: X(m), y: Y(lo) + 14, "text-anchor": "middle", class: "mff-muted"},
                                [String(m)]));
    });
    chart.appendChild(F.svgEl("text", {x: (left + PW - right) / 2, y: PH - 4, "text-anchor": "middle",
                                       class: "mff-muted"}, ["offset k"]));
    chart.appendChild(F.svgEl("path", {fill: "none", stroke: "#0b63c5", "stroke-width": 1.5,
                                       d: prof.map(function (v, m) { return (m ? "L" : "M") + X(m).toFixed(1) + " " + Y(v).toFixed(1); }).join("")}));
    var dot = F.svgEl("circle", {r: 5, fill: "#d9480f"});
    chart.appendChild(dot);
    root.appendChild(chart);

    var key = F.el("p", {class: "mff-key", "data-out": "dot"});
    var setKey = F.output(key);
    root.appendChild(key);
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Blue: position p; orange: p + k. Move p with k fixed: every pair keeps its turn ω_i k, and ",
      "the dot product does not change."]));

    function point(m, angle) {
      return [m.cx + R * Math.cos(angle), m.cy - R * Math.sin(angle)];
    }

    var say = F.announcer(root), started = false;

    function update() {
      var r = compute(p, k);
      sp.input.value = p;
      sk.input.value = k;
      showP(String(p));
      showK(String(k));
      s0.label.textContent = "PE(" + p + ")";
      s1.label.textContent = "PE(" + (p + k) + ")";
      for (var j = 0; j < D; j++) {
        s0.rects[j].setAttribute("fill", diverging(r.a[j]));
        s1.rects[j].setAttribute("fill", diverging(r.b[j]));
      }
      marks.forEach(function (m) {
        var w = omega(m.i, D), a0 = w * p, a1 = w * (p + k);
        var f = point(m, a0), t = point(m, a1);
        m.from.setAttribute("cx", f[0].toFixed(2));
        m.from.setAttribute("cy", f[1].toFixed(2));
        m.to.setAttribute("cx", t[0].toFixed(2));
        m.to.setAttribute("cy", t[1].toFixed(2));
        var turn = (w * k) % (2 * Math.PI);
        var large = turn > Math.PI ? 1 : 0;
        m.arc.setAttribute("d", k === 0 ? "" : "M" + f[0].toFixed(2) + " " + f[1].toFixed(2) + "A" + R + " " + R +
                           " 0 " + large + " 0 " + t[0].toFixed(2) + " " + t[1].toFixed(2));
        m.turn.textContent = F.fmt(w * k, 2) + " rad";
      });
      dot.setAttribute("cx", X(k).toFixed(2));
      dot.setAttribute("cy", Y(r.dot).toFixed(2));
      var text = "PE(" + p + ") · PE(" + (p + k) + ") = " + F.fmt(r.dot, 2) + " = Σ_i cos(ω_i · " + k + ") = " +
                 F.fmt(r.closed, 2);
      setKey(text);
      if (started) say("p = " + p + ", k = " + k + ": " + text);
    }

    sp.input.addEventListener("input", function () { p = Number(sp.input.value); update(); });
    sk.input.addEventListener("input", function () { k = Number(sk.input.value); update(); });
    update();
    started = true;
  }

  F.register("ch08-positions", {mount: mount});
  return {compute: compute, omega: omega, D: D};
});
