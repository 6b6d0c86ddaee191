// Drives _static/translator/translator.js under Node for tests/test_browser_translator.py.
//
//   node tests/js/translate.mjs < request.json > answer.json
//
// request: {"model": a folder or an http:// URL holding model.json and weights.bin (omit it for
//           the tasks that need no model), "tasks": [{"op": ..., ...}, ...]}
// answer:  {"load": {"ms", "progress": [[bytes read, total], ...]} or {"error": message},
//           "results": [one per task]}
// ops: encode {texts, eos}, detokenize {ids}, tokens {}, translate {sentences, beam, alpha,
//      attention, max_new_tokens, ratio, slack, no_loops, split}, logits {source, output},
//      signatures {}, loops {ids, copies}, clauses {texts}, api {}, time {sentence, beam,
//      repeat, attention, ratio, slack, no_loops, split}.
// A call that throws answers {"error": its message} in place of its result.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const T = require("../../_static/translator/translator.js");

const request = JSON.parse(readFileSync(0, "utf8"));

function attempt(fn) {
  try {
    return fn();
  } catch (e) {
    return { error: e.message };
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// The pre-tokenizer's view of every code point c: the chunk lengths (in code points) of
// "a" + c + "1" + " " + c, run-length encoded as [[first code point, signature], ...].
function signatures(tok) {
  const runs = [];
  let last = null;
  for (let c = 0; c < 0x110000; c++) {
    if (c >= 0xd800 && c <= 0xdfff) continue; // lone surrogates are refused before this
    const ch = String.fromCodePoint(c);
    const sig = tok.pretokenize("a" + ch + "1 " + ch).map((x) => Array.from(x).length).join(",");
    if (sig !== last) {
      runs.push([c, sig]);
      last = sig;
    }
  }
  return runs;
}

let tr = null;
const answer = { results: [] };
if (request.model) {
  const progress = [];
  const start = performance.now();
  try {
    tr = await T.load(request.model, { onProgress: (read, total) => progress.push([read, total]) });
    answer.load = { ms: performance.now() - start, progress };
  } catch (e) {
    answer.load = { error: e.message, progress };
  }
}

const ops = {
  encode: (t) => t.texts.map((x) => attempt(() => tr.tokenizer.encode(x, { addEos: t.eos }))),
  detokenize: (t) => t.ids.map((ids) => attempt(() => tr.detokenize(ids))),
  tokens: () => Array.from({ length: tr.tokenizer.vocabSize }, (_, i) => tr.tokenizer.idToToken(i)),
  translate: (t) =>
    t.sentences.map((x) =>
      attempt(() => {
        const options = { beamSize: t.beam, lengthPenalty: t.alpha, attention: !!t.attention };
        if (t.max_new_tokens !== undefined) options.maxNewTokens = t.max_new_tokens;
        if (t.ratio !== undefined) options.minLengthRatio = t.ratio;
        if (t.slack !== undefined) options.minLengthSlack = t.slack;
        if (t.no_loops !== undefined) options.noLoops = t.no_loops;
        if (t.split !== undefined) options.splitClauses = t.split;
        const out = tr.translate(x, options);
        const res = { ids: out.output.ids, text: out.text, ms: out.ms, score: out.score };
        if (t.attention) {
          const a = out.attention;
          res.attention = { layers: a.layers, heads: a.heads, t: a.t, s: a.s };
          res.attention.weights = a.weights.map((layer) => layer.map((w) => Array.from(w)));
          res.source_tokens = out.source.tokens;
          res.output_tokens = out.output.tokens;
        }
        return res;
      }),
    ),
  // teacher-forced next-token logits (t_out, vocab) of the outputs after <bos>, for source ids
  logits: (t) => {
    const model = tr.model;
    const memory = model.encode(t.source);
    const cache = model.newCache(memory, t.source.length, 1, t.output.length);
    const rows = [];
    let token = tr.tokenizer.bosId;
    for (const next of t.output) {
      rows.push(Array.from(model.step(cache, [token], [0])));
      token = next;
    }
    return rows;
  },
  signatures: () => signatures(tr.tokenizer),
  // loop_tokens of each id list; split_clauses of each text (and join_clauses of its own pieces)
  loops: (t) => t.ids.map((ids) => T.loopTokens(ids, t.copies)),
  clauses: (t) =>
    t.texts.map((x) => {
      const pieces = T.splitClauses(x);
      return { pieces, joined: T.joinClauses(pieces, pieces.map((p) => p[0])) };
    }),
  api: () => ({
    unsupported: T.unsupported(),
    length_penalty: [0, 1, 5, 20].map((n) => T.lengthPenalty(n, 0.6)),
    names: Object.keys(T).sort(),
  }),
  time: (t) => {
    const wall = [];
    const cpu = [];
    for (let i = 0; i < t.repeat; i++) {
      const c0 = process.cpuUsage();
      const w0 = performance.now();
      tr.translate(t.sentence, { beamSize: t.beam, attention: t.attention !== false,
                                 minLengthRatio: t.ratio || 0, minLengthSlack: t.slack || 0,
                                 noLoops: !!t.no_loops, splitClauses: !!t.split });
      wall.push(performance.now() - w0);
      const c = process.cpuUsage(c0);
      cpu.push((c.user + c.system) / 1000);
    }
    return { wall_ms: median(wall), cpu_ms: median(cpu) };
  },
};

for (const t of request.tasks || []) {
  if (!(t.op in ops)) throw new Error(`unknown op ${t.op}`);
  answer.results.push(ops[t.op](t));
}
process.stdout.write(JSON.stringify(answer));
