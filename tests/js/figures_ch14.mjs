// Drives chapter 14's figure (_static/figures/ch14.js) under Node for tests/test_figures_ch14.py
// and tests/test_figures_browser_ch14.py.
//
//   node tests/js/figures_ch14.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: ch14 {seed, b, causal} → the inputs Q, K, V (float32 numbers), every tile in the loop's
//        order (skipped or not, the masked scores inside it), the state after every step (m, ℓ,
//        o, the rescale factors, the rows whose maximum rose), o/ℓ at the end, the full
//        attention, the largest difference, and the sentence the page writes at each step;
//      ch14start → the figure's starting seed, tile size, causal and step.
// JSON has no -Infinity: a running maximum not yet set (−∞) is written as null.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ch14 = require("../../_static/figures/ch14.js");

const request = JSON.parse(readFileSync(0, "utf8"));

const ops = {
  ch14: (t) => {
    const inp = ch14.inputs(t.seed);
    const r = ch14.run(inp, t.b, t.causal);
    const fin = (x) => (x === -Infinity ? null : x);
    return {
      Q: inp.Q, K: inp.K, V: inp.V,
      tiles: r.tiles.map((s) => ({i0: s.i0, i1: s.i1, j0: s.j0, j1: s.j1, skipped: s.skipped,
                                   step: s.skipped ? null : s.step, masked: s.masked || null})),
      steps: r.steps.map((s) => ({
        m: s.m.map(fin), ell: s.ell, acc: s.acc, rose: s.rose,
        alpha: s.alpha && Object.fromEntries(Object.entries(s.alpha).map(([i, a]) => [i, a.first ? null : a.value])),
      })),
      Y: r.Y, full: r.full, diff: r.diff, skipped: r.skipped,
      texts: r.steps.map((_, k) => ch14.describe(r, k)),
    };
  },
  ch14start: () => ({seed: ch14.SEED0, b: ch14.B0, causal: ch14.CAUSAL0, step: ch14.STEP0, t: ch14.T,
                     d_k: ch14.D_K, d_v: ch14.D_V}),
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}));
