// The book's JavaScript engine against onnxruntime-web on the same model, under Node, one thread.
//
//   npm install --prefix /tmp/ortweb onnxruntime-web@1.30.0         (not vendored: a one-off measure)
//   python benchmarks/onnx_export.py /tmp/onnx                      (encoder.onnx, step.onnx)
//   node benchmarks/onnx_runtime_web.mjs /tmp/ortweb/node_modules/onnxruntime-web /tmp/onnx
//
// Both engines get the same source ids (the book's tokenizer) and run greedy search on the same
// sentences; the script prints the median time of each and whether the tokens agree, and the
// time of one batch-4 decoder step in onnxruntime-web (beam search's unit of work).
import { createRequire } from "node:module";
import { statSync } from "node:fs";

const require = createRequire(import.meta.url);
const [ortPath, onnxDir] = process.argv.slice(2);
const ort = require(ortPath);
const T = require("../_static/translator/translator.js");
ort.env.wasm.numThreads = 1; // a page without cross-origin isolation gets one thread

const SENTENCES = [
  "The train leaves at eight, so we have to get up early.", // 12 words
  "I forgot my umbrella at the restaurant where we ate last night.",
  "She said that she would call me when she arrived at the airport.",
  "Could you tell me how to get to the nearest pharmacy?",
  "I don't know.",
];
const REPEAT = 7;

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const tr = await T.load(new URL("../_static/translator/", import.meta.url).pathname);
const enc = await ort.InferenceSession.create(`${onnxDir}/encoder.onnx`, { executionProviders: ["wasm"] });
const step = await ort.InferenceSession.create(`${onnxDir}/step.onnx`, { executionProviders: ["wasm"] });
const { bosId: BOS, eosId: EOS, padId: PAD } = tr.tokenizer;

async function encodeSource(srcIds) { // (s,) ids → cross_k, cross_v (L, 1, H, s, d_head)
  const src = new ort.Tensor("int64", BigInt64Array.from(srcIds.map(BigInt)), [1, srcIds.length]);
  return enc.run({ src });
}

async function ortGreedy(srcIds, maxNew) {
  const { cross_k, cross_v } = await encodeSource(srcIds);
  const [L, , H, , dh] = cross_k.dims;
  let pastK = new ort.Tensor("float32", new Float32Array(0), [L, 1, H, 0, dh]);
  let pastV = pastK;
  let tok = BOS;
  const out = [];
  for (let t = 0; t < maxNew; t++) {
    const feed = {
      tok: new ort.Tensor("int64", BigInt64Array.from([BigInt(tok)]), [1, 1]),
      pos: new ort.Tensor("int64", BigInt64Array.from([BigInt(t)]), [1]),
      past_k: pastK, past_v: pastV, cross_k, cross_v,
    };
    const r = await step.run(feed);
    const logits = r.logits.data;
    let best = 0;
    for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
    pastK = r.new_k;
    pastV = r.new_v;
    if (best === EOS) break;
    out.push(best);
    tok = best;
  }
  return out;
}

async function ortStepBatch4(srcIds, t) { // one decoder step for 4 beams after t tokens
  const { cross_k, cross_v } = await encodeSource(srcIds);
  const [L, , H, s, dh] = cross_k.dims;
  const rep = (x) => { // (L, 1, H, s, dh) → (L, 4, H, s, dh)
    const per = H * s * dh, y = new Float32Array(L * 4 * per);
    for (let l = 0; l < L; l++) for (let b = 0; b < 4; b++) y.set(x.data.subarray(l * per, (l + 1) * per), (l * 4 + b) * per);
    return new ort.Tensor("float32", y, [L, 4, H, s, dh]);
  };
  const ck = rep(cross_k), cv = rep(cross_v);
  const past = new ort.Tensor("float32", new Float32Array(L * 4 * H * t * dh), [L, 4, H, t, dh]);
  const feed = {
    tok: new ort.Tensor("int64", BigInt64Array.from([5n, 6n, 7n, 8n]), [4, 1]),
    pos: new ort.Tensor("int64", BigInt64Array.from([BigInt(t)]), [1]),
    past_k: past, past_v: past, cross_k: ck, cross_v: cv,
  };
  const times = [];
  for (let i = 0; i < REPEAT; i++) {
    const w = performance.now();
    await step.run(feed);
    times.push(performance.now() - w);
  }
  return median(times);
}

const rows = [];
let same = 0;
for (const sentence of SENTENCES) {
  const srcIds = tr.tokenizer.encode(sentence, { addEos: true });
  const mine = tr.translate(sentence, { beamSize: 1, attention: false });
  const theirs = await ortGreedy(srcIds, 255);
  const ours = mine.output.ids.filter((i) => i !== BOS && i !== EOS && i !== PAD);
  const agree = JSON.stringify(ours) === JSON.stringify(theirs);
  same += agree;
  const tOurs = [], tOrt = [], tBeam = [];
  for (let i = 0; i < REPEAT; i++) {
    let w = performance.now();
    tr.translate(sentence, { beamSize: 1, attention: false });
    tOurs.push(performance.now() - w);
    w = performance.now();
    await ortGreedy(srcIds, 255);
    tOrt.push(performance.now() - w);
    w = performance.now();
    tr.translate(sentence, { beamSize: 4, attention: false });
    tBeam.push(performance.now() - w);
  }
  rows.push({ sentence, words: sentence.split(/\s+/).length, tokens: ours.length, agree,
              ours_greedy_ms: +median(tOurs).toFixed(1), ort_greedy_ms: +median(tOrt).toFixed(1),
              ours_beam4_ms: +median(tBeam).toFixed(1),
              ort_step_batch4_ms: +(await ortStepBatch4(srcIds, Math.max(1, ours.length))).toFixed(2) });
}
const dist = `${ortPath}/dist`;
const sizes = {
  ours_engine: statSync(new URL("../_static/translator/translator.js", import.meta.url)).size,
  ours_weights: statSync(new URL("../_static/translator/weights.bin", import.meta.url)).size,
  ort_js: statSync(`${dist}/ort.wasm.min.js`).size,
  ort_wasm: statSync(`${dist}/ort-wasm-simd-threaded.wasm`).size,
  onnx_encoder: statSync(`${onnxDir}/encoder.onnx`).size,
  onnx_step: statSync(`${onnxDir}/step.onnx`).size,
};
console.log(JSON.stringify({ node: process.version, ort: ort.env.versions, rows, same, sizes }, null, 1));
