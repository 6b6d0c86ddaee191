// Drives chapter 9's figure (_static/figures/ch09.js) under Node for tests/test_figures_ch09.py
// and tests/test_figures_browser_ch09.py.
//
//   node tests/js/figures_ch09.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: words {text} → the words the figure reads and their ids;
//      run {text} or {ids} → the gates r, z, the candidate n and the state h at every word;
//      summary {text, t} → the readout's numbers for word t (0-based);
//      incremental {before, text} → whether run(text's ids, run(before's ids)), which keeps the
//        steps of the words both start with, equals a fresh run of text, number for number;
//      vocab → the carried words, <unk>'s id, the size of the state, the start sentence.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ch09 = require("../../_static/figures/ch09.js");

const request = JSON.parse(readFileSync(0, "utf8"));
const model = ch09.model();
const arrays = (rows) => rows.map((r) => Array.from(r));

const ops = {
  words: (t) => ch09.words(model, t.text),
  run: (t) => {
    const ids = t.ids || ch09.words(model, t.text).ids;
    const r = model.run(ids);
    return {ids, r: arrays(r.r), z: arrays(r.z), n: arrays(r.n), h: arrays(r.h)};
  },
  summary: (t) => {
    const w = ch09.words(model, t.text);
    return Object.assign({words: w.words, ids: w.ids}, ch09.summary(model.run(w.ids), t.t));
  },
  incremental: (t) => {
    const a = ch09.words(model, t.before).ids, b = ch09.words(model, t.text).ids;
    const inc = model.run(b, model.run(a)), fresh = model.run(b);
    const same = ["r", "z", "n", "h"].every((k) => inc[k].length === fresh[k].length &&
      inc[k].every((row, i) => row.every((v, j) => Object.is(v, fresh[k][i][j]))));
    return {same, kept: a.findIndex((x, i) => x !== b[i])};
  },
  vocab: () => ({words: model.vocab, unk: model.unk, d: model.d, start: ch09.START,
                 maxWords: ch09.MAX_WORDS, keep: ch09.KEEP, drop: ch09.DROP}),
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}));
