// Drives chapter 6's figure (_static/figures/ch06.js) under Node for tests/test_figures_ch06.py
// and tests/test_figures_browser_ch06.py.
//
//   node tests/js/figures_ch06.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: compute {h, ids} → the model's numbers: Z, the fused Q, K, V, each head's scores and
//      weights, the heads side by side H, the output Y, both read-outs' logits and guesses;
//      layout {h, n, d} → view's and transpose's shapes, strides, contiguity, and the memory
//      place of every (head, token, feature);
//      texts {state} → every text the page writes in that state (state default: the start);
//      data → the start, the vocabulary and the views.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ch06 = require("../../_static/figures/ch06.js");

const request = JSON.parse(readFileSync(0, "utf8"));

const ops = {
  compute: (t) => {
    const r = ch06.compute(t.h, t.ids);
    return {Z: r.Z, Q: r.Q, K: r.K, V: r.V, S: r.S, A: r.A, H: r.H, Y: r.Y, logitsPrev: r.logitsPrev,
            logitsNext: r.logitsNext, prev: r.prev, next: r.next, dk: r.dk};
  },
  layout: (t) => {
    const L = ch06.layout(t.h, t.n, t.d);
    const places = [];
    for (let c = 0; c < t.h; c++) {
      const rows = [];
      for (let i = 0; i < t.n; i++) {
        const row = [];
        for (let j = 0; j < L.dk; j++) row.push(L.offset(c, i, j));
        rows.push(row);
      }
      places.push(rows);
    }
    return {view: L.view, transposed: L.transposed, places};
  },
  texts: (t) => ch06.texts(t.state || ch06.START),
  data: () => ({start: ch06.START, words: ch06.WORDS, views: ch06.VIEWS, sentence: ch06.DATA.sentence}),
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}));
