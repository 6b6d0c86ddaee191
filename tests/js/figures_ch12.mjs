// Drives chapter 12's figure (_static/figures/ch12.js) under Node for tests/test_figures_ch12.py
// and tests/test_figures_browser_ch12.py.
//
//   node tests/js/figures_ch12.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: ch12 {state} (missing keys: the page's start) → the tokens, mask, scores, weights, the
//      vectors X of the queries and keys, the page's summary line and what each query reads;
//      ch12data → W_Q, W_K, d, the start state and the limits.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ch12 = require("../../_static/figures/ch12.js");

const request = JSON.parse(readFileSync(0, "utf8"));

const ops = {
  ch12: (t) => {
    const state = Object.assign({}, ch12.START, t.state || {});
    const r = ch12.compute(state);
    return Object.assign(r, {summary: ch12.summary(state.arch, r),
                             reads: r.queries.map((_, i) => ch12.reads(r, i))});
  },
  ch12data: () => ({WQ: ch12.W.Q, WK: ch12.W.K, d: ch12.D, start: ch12.START, has: ch12.HAS,
                    maxWords: ch12.MAX_WORDS, maxPads: ch12.MAX_PADS}),
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}));
