// Drives chapter 7's figure (_static/figures/ch07.js) under Node for tests/test_figures_ch07.py
// and tests/test_figures_browser_ch07.py.
//
//   node tests/js/figures_ch07.mjs < request.json > answer.json
//
// request: {"tasks": [{"op": ..., ...}, ...]}   answer: {"results": [one per task]}
// ops: ch07 {placement, L, d, gain, seed, keep, weights} → what the page computes for those
//      settings: per placement the loss, rms(x_ℓ), ‖∂loss/∂x_ℓ‖, ‖∂loss/∂θ_ℓ‖; with keep, the
//      output and every gradient (∂loss/∂x_0 and each layer's, by state_dict name); with weights,
//      the input, the target and the first L layers' parameters the page drew;
//      ch07data → the page's start and the choices of its sliders.
// The long arrays (weights, input, target, output, gradients) come back as base64 of their
// little-endian bytes, float32 for what the page drew (float32 numbers), float64 for the rest:
// the JSON stays a few MB and quick to read.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const ch07 = require("../../_static/figures/ch07.js");

const request = JSON.parse(readFileSync(0, "utf8"));
const f64 = (a) => Buffer.from(Float64Array.from(a).buffer).toString("base64");
const f32 = (a) => Buffer.from(Float32Array.from(a).buffer).toString("base64"); // exact: already float32

function stackOut(s, keep) {
  const out = {loss: s.loss, rms: s.rms, streamGrad: s.streamGrad, paramGrad: s.paramGrad};
  if (keep) {
    out.y = f64(s.y);
    out.dx0 = f64(s.dx0);
    out.grads = s.grads.map((g) => Object.fromEntries(
      Object.keys(g).filter((k) => k !== "keep" && k !== "sq").map((k) => [k, f64(g[k])])));
  }
  return out;
}

const ops = {
  ch07: (t) => {
    const opts = {placement: t.placement || "both", L: t.L, d: t.d, gain: t.gain, seed: t.seed};
    const r = ch07.compute(opts, !!t.keep);
    const out = {};
    for (const k of ["post", "pre"]) if (r[k]) out[k] = stackOut(r[k], t.keep);
    if (t.weights) {
      const w = ch07.draw(opts.seed, opts.d, opts.gain);
      out.x0 = f32(w.x0);
      out.target = f32(w.target);
      out.layers = w.layers.slice(0, opts.L).map((p) => Object.fromEntries(
        Object.keys(p).map((k) => [k, f32(p[k])])));
    }
    return out;
  },
  ch07data: () => ({start: ch07.START, widths: ch07.WIDTHS, gains: ch07.GAINS, maxL: ch07.MAX_L,
                    n: ch07.N_TOK, heads: ch07.HEADS}),
};

const results = request.tasks.map((task) => {
  try {
    return ops[task.op](task);
  } catch (e) {
    return {error: e.message};
  }
});
process.stdout.write(JSON.stringify({results}));
