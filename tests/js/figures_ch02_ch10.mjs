// Drives chapter 2's and chapter 10's figures (_static/figures/ch02.js, ch10.js) under Node for
// tests/test_figures_ch02_ch10.py and tests/test_figures_browser_ch02_ch10.py.
//
//   node tests/js/figures_ch02_ch10.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: ch02 {x, y, h} (x, y default: the page's samples) → compute's numbers and the fit;
//      ch02curves {x, y} → the errors at every h of the slider and where each is least;
//      ch02data → the exported samples, the slider's h and the grid of queries;
//      ch10 {text} → the steps (rank, left, right, id, places) and the ids after each step;
//      ch10vocab → the readable text of every id, and the merges as id pairs.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ch02 = require("../../_static/figures/ch02.js");
const ch10 = require("../../_static/figures/ch10.js");

const request = JSON.parse(readFileSync(0, "utf8"));

const ops = {
  ch02: (t) => {
    const r = ch02.compute(t.x || ch02.DATA.x, t.y || ch02.DATA.y, t.h);
    return {fit: Array.from(r.fit), loo: r.loo, test: r.test, train: r.train, hardness: r.hardness};
  },
  ch02curves: (t) => ch02.curves(t.x || ch02.DATA.x, t.y || ch02.DATA.y),
  ch02data: () => ({x: ch02.DATA.x, y: ch02.DATA.y, hs: ch02.HS, h0: ch02.HS[ch02.H0],
                    queries: Array.from(ch02.QUERIES)}),
  ch10: (t) => {
    const tok = ch10.tokenizer();
    const r = ch10.steps(tok, t.text);
    const states = [];
    for (let s = 0; s <= r.steps.length; s++) states.push(ch10.flat(r, s));
    return {chunks: r.chunks, bytes: r.bytes, encode: tok.encode(t.text), states,
            steps: r.steps.map((s) => ({rank: s.rank, left: s.left, right: s.right, id: s.id, places: s.places}))};
  },
  ch10vocab: () => {
    const tok = ch10.tokenizer();
    return {size: tok.vocabSize, mergeCount: tok.mergeCount, pairs: tok.pairs,
            text: Array.from({length: tok.vocabSize}, (_, i) => tok.text(i))};
  },
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}));
