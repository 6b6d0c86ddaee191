// Drives chapter 11's figure (_static/figures/ch11.js) under Node for tests/test_figures_ch11.py
// and tests/test_figures_browser_ch11.py.
//
//   node tests/js/figures_ch11.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: ch11data → the words and the dequantized vectors (float32, little-endian, base64);
//      ch11neighbours {words, k} → each word's k nearest [[word, cosine], …];
//      ch11cosines {words} → each word's cosine with every word of the figure;
//      ch11analogy {questions: [[a, b, c], …], k} → each question's k answers [[word, cosine], …];
//      ch11suggest {words} → the figure's suggestions for each (unknown) word, and the start.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ch11 = require("../../_static/figures/ch11.js");

const request = JSON.parse(readFileSync(0, "utf8"));
const m = ch11.model();

const ops = {
  ch11data: () => ({words: m.words, dim: m.dim,
                    vectors: Buffer.from(new Float32Array(m.v).buffer).toString("base64")}),
  ch11neighbours: (t) => t.words.map((w) => ch11.neighbours(m, w, t.k)),
  ch11cosines: (t) => t.words.map((w) => {
    const i = m.index.get(w);
    return Array.from(m.cosines(m.u.subarray(i * m.dim, (i + 1) * m.dim)));
  }),
  ch11analogy: (t) => t.questions.map(([a, b, c]) => ch11.analogy(m, a, b, c, t.k)),
  ch11suggest: (t) => ({suggestions: t.words.map((w) => ch11.suggestions(m, ch11.clean(w), 6)),
                        has: t.words.map((w) => m.has(ch11.clean(w))), start: ch11.START, k: ch11.K,
                        kAnalogy: ch11.K_ANALOGY}),
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}));
