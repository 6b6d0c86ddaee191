// Drives the interactive figures' computations (_static/figures/*.js) under Node for
// tests/test_figures_js.py and tests/test_figures_browser.py.
//
//   node tests/js/figures.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: ch01 {X, i}; ch03 {WQ, WK} or {theta}; ch04 {q, K, g, n, t, D, d_k, scaled} (fixed inputs)
//      or {seed, d_k, scaled, dump} (the page's own draws; dump returns their first d_k features);
//      ch05 {state}; ch08 {p, k}; sinusoidal {n, d}; mulberry32 {seed, count}.
// NaN and ±Infinity travel as the strings "NaN", "Infinity", "-Infinity".
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const F = require("../../_static/figures/core.js");
const ch01 = require("../../_static/figures/ch01.js");
const ch03 = require("../../_static/figures/ch03.js");
const ch04 = require("../../_static/figures/ch04.js");
const ch05 = require("../../_static/figures/ch05.js");
const ch08 = require("../../_static/figures/ch08.js");

const request = JSON.parse(readFileSync(0, "utf8"));

function firstFeatures(flat, rows, D, d) { // (rows, D) row-major → (rows, d) as nested arrays
  const out = [];
  for (let r = 0; r < rows; r++) out.push(Array.from(flat.subarray(r * D, r * D + d)));
  return out;
}

const ops = {
  ch01: (t) => ch01.compute(t.X, t.i),
  ch03: (t) => {
    const WQ = t.WQ || ch03.turn(t.theta);
    const WK = t.WK || [[2, 0], [0, 2]];
    return Object.assign({WQ, WK}, ch03.compute(t.X || ch03.X, WQ, WK));
  },
  ch04: (t) => {
    if (t.seed === undefined) {
      const s = {n: t.n, t: t.t, D: t.D, q: Float64Array.from(t.q.flat()), K: Float64Array.from(t.K.flat(2)),
                 g: Float64Array.from(t.g.flat())};
      return ch04.compute(s, t.d_k, t.scaled);
    }
    const s = ch04.sample(t.seed);
    ch04.ensure(s, t.d_k);
    const out = {unscaled: ch04.compute(s, t.d_k, false), scaled: ch04.compute(s, t.d_k, true),
                 n: s.n, t: s.t, D: s.D};
    if (t.dump) {
      out.q = firstFeatures(s.q, s.n, s.D, t.d_k);
      out.K = firstFeatures(s.K, s.n * s.t, s.D, t.d_k);
      out.g = firstFeatures(s.g, s.n, s.t, s.t);
    }
    return out;
  },
  ch05: (t) => ch05.compute(t.state),
  ch08: (t) => ch08.compute(t.p, t.k),
  sinusoidal: (t) => F.sinusoidal(t.n, t.d),
  mulberry32: (t) => {
    const rand = F.mulberry32(t.seed);
    return Array.from({length: t.count}, () => rand());
  },
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}, (key, value) => {
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  if (ArrayBuffer.isView(value)) return Array.from(value);
  return value;
}));
