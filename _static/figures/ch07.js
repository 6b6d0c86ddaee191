/* Chapter 7's figure, "ch07-norms": a stack of encoder layers at initialization, post-norm or
 * pre-norm, and what one backward pass finds in it. The reader chooses the placement (or both),
 * the depth L, the width d and a scale g of the initial weights; the page draws a fresh stack from
 * a seeded generator, runs it forward and backward, and plots
 *
 *   the residual stream   rms(x_ℓ) = ‖x_ℓ‖ / √(n d), the size of the stream after layer ℓ
 *                         (x_0 the input), per feature;
 *   the gradients         ‖∂loss/∂θ_ℓ‖, the norm of the gradient of all the parameters of
 *                         layer ℓ (as the chapter measures it), and ‖∂loss/∂x_ℓ‖, the gradient
 *                         that reaches the stream.
 *
 * The stack is minformer.blocks.Encoder(L, d, 4 heads, d_ff = 4d, dropout 0, norm_first): each
 * layer is the package's EncoderLayer (multi-head self-attention with a fused in-projection, a
 * ReLU feed-forward network, two LayerNorms with ε = 1e-5), post-norm
 *     a = x + MHA(x), z = LN₁(a), x' = LN₂(z + FFN(z)),
 * or pre-norm
 *     a = x + MHA(LN₁(x)), x' = a + FFN(LN₂(a)),
 * and a pre-norm stack ends with a final LayerNorm (Encoder's `norm`). The input x_0 is n = 6
 * tokens of standard normal features, and the loss the mean of (output − target)² for a
 * standard normal target, as the chapter's residual experiment uses.
 *
 * The weights follow PyTorch's initialization (the package's): in_proj_weight Xavier-uniform,
 * U(±√(6 / 4d)), in_proj_bias and out_proj.bias zero, out_proj.weight and linear1 U(±1/√d),
 * linear2 U(±1/√(4d)) (weights and biases), γ = 1 and β = 0; each weight and bias of the two
 * sublayers is then multiplied by g (g = 1: PyTorch's scale). They are drawn from mulberry32(seed)
 * in a fixed order (x_0, the target, then layer 1, 2, … each in the order of its state_dict), and
 * rounded to float32, so that minformer can be given exactly the same numbers.
 *
 * compute(opts) is what the page shows; tests/test_figures_ch07.py compares its forward values
 * and every gradient with torch autograd through minformer's Encoder, in float32 and float64.
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var N_TOK = 6, HEADS = 4, EPS = 1e-5, MAX_L = 24;
  var WIDTHS = [8, 12, 16];
  var GAINS = [0.25, 0.5, 1, 1.5, 2, 3, 4];
  var START = {placement: "both", L: 24, d: 16, gain: 1, seed: 0};
  var fround = Math.fround;

  // ============================================================ the weights

  /* The parameters of one EncoderLayer, in the order of its state_dict, with their shapes. */
  function shapes(d) {
    return [["self_attn.in_proj_weight", [3 * d, d]], ["self_attn.in_proj_bias", [3 * d]],
            ["self_attn.out_proj.weight", [d, d]], ["self_attn.out_proj.bias", [d]],
            ["ffn.linear1.weight", [4 * d, d]], ["ffn.linear1.bias", [4 * d]],
            ["ffn.linear2.weight", [d, 4 * d]], ["ffn.linear2.bias", [d]],
            ["norm1.weight", [d]], ["norm1.bias", [d]], ["norm2.weight", [d]], ["norm2.bias", [d]]];
  }

  /* The bound b of U(-b, b) for each parameter at PyTorch's initialization; 0 for a zero, and
   * null for a LayerNorm's γ (ones) or β (zeros). */
  function bound(name, d) {
    if (name === "self_attn.in_proj_weight") return Math.sqrt(6 / (d + 3 * d));
    if (name === "self_attn.in_proj_bias" || name === "self_attn.out_proj.bias") return 0;
    if (name === "self_attn.out_proj.weight" || name.indexOf("ffn.linear1") === 0) return 1 / Math.sqrt(d);
    if (name.indexOf("ffn.linear2") === 0) return 1 / Math.sqrt(4 * d);
    return null;
  }

  var cache = {key: null, value: null};

  /* The input, the target and MAX_L layers for (seed, d, gain): layer ℓ's weights do not depend
   * on the depth chosen. Returns {x0, target, layers: [{name: Float64Array}]}. */
  function draw(seed, d, gain) {
    var key = seed + "/" + d + "/" + gain;
    if (cache.key === key) return cache.value;
    var rand = F.mulberry32(seed), next = F.gaussian(rand), i;
    var x0 = new Float64Array(N_TOK * d), target = new Float64Array(N_TOK * d);
    for (i = 0; i < x0.length; i++) x0[i] = fround(next());
    for (i = 0; i < target.length; i++) target[i] = fround(next());
    var layers = [];
    for (var l = 0; l < MAX_L; l++) {
      var p = {};
      shapes(d).forEach(function (s) {
        var size = s[1].reduce(function (a, b) { return a * b; }, 1), b = bound(s[0], d);
        var a = new Float64Array(size);
        if (b === null) { if (/weight$/.test(s[0])) a.fill(1); }
        else if (b > 0) for (var k = 0; k < size; k++) a[k] = fround(gain * fround((2 * rand() - 1) * b));
        p[s[0]] = a;
      });
      layers.push(p);
    }
    cache.key = key;
    cache.value = {x0: x0, target: target, layers: layers};
    return cache.value;
  }

  // ============================================================ forward and backward

  /* Y = X Wᵀ + b: X (n, din), W (dout, din) as PyTorch stores a Linear's weight. The sums run
   * over four partial sums (about 1.5 times faster in V8); din is a multiple of 4. */
  function linear(X, n, din, W, b, dout) {
    var Y = new Float64Array(n * dout);
    for (var i = 0; i < n; i++) {
      var xi = i * din;
      for (var o = 0; o < dout; o++) {
        var s0 = 0, s1 = 0, s2 = 0, s3 = 0, wo = o * din;
        for (var k = 0; k < din; k += 4) {
          s0 += X[xi + k] * W[wo + k];
          s1 += X[xi + k + 1] * W[wo + k + 1];
          s2 += X[xi + k + 2] * W[wo + k + 2];
          s3 += X[xi + k + 3] * W[wo + k + 3];
        }
        Y[i * dout + o] = b[o] + ((s0 + s1) + (s2 + s3));
      }
    }
    return Y;
  }

  /* A layer's gradients as the backward pass goes: g.sq sums the squares of every gradient of
   * the layer's parameters, and with g.keep each gradient is kept too, by name (the tests). */
  function grads(keep) { return {keep: keep, sq: 0}; }

  function put(g, name, a) {
    for (var i = 0; i < a.length; i++) g.sq += a[i] * a[i];
    if (g.keep) g[name] = a;
  }

  /* The backward of linear: returns dX, and puts ∂/∂W and ∂/∂b into g. ∂/∂W = dYᵀ X is only
   * formed when it is kept; its squared norm is otherwise Σ_ij (x_i · x_j)(dy_i · dy_j), which
   * costs n² (din + dout) products instead of n · din · dout. */
  function linearBack(dY, X, n, din, W, dout, g, wName, bName) {
    var dX = new Float64Array(n * din), gb = new Float64Array(dout), i, j, k, o;
    for (i = 0; i < n; i++) {
      var xi = i * din;
      for (o = 0; o < dout; o++) {
        var v = dY[i * dout + o];
        if (v === 0) continue;
        gb[o] += v;
        var wo = o * din;
        for (k = 0; k < din; k += 4) {
          dX[xi + k] += v * W[wo + k];
          dX[xi + k + 1] += v * W[wo + k + 1];
          dX[xi + k + 2] += v * W[wo + k + 2];
          dX[xi + k + 3] += v * W[wo + k + 3];
        }
      }
    }
    if (g.keep) {
      var gW = new Float64Array(dout * din);
      for (i = 0; i < n; i++) {
        for (o = 0; o < dout; o++) {
          var u = dY[i * dout + o];
          for (k = 0; k < din; k++) gW[o * din + k] += u * X[i * din + k];
        }
      }
      put(g, wName, gW);
    } else {
      for (i = 0; i < n; i++) {
        for (j = 0; j <= i; j++) {
          var xx = 0, yy = 0;
          for (k = 0; k < din; k++) xx += X[i * din + k] * X[j * din + k];
          for (o = 0; o < dout; o++) yy += dY[i * dout + o] * dY[j * dout + o];
          g.sq += (i === j ? 1 : 2) * xx * yy;
        }
      }
    }
    put(g, bName, gb);
    return dX;
  }

  /* LayerNorm over each token's d features: {y, xhat, rstd}. */
  function layerNorm(X, n, d, gamma, beta) {
    var y = new Float64Array(n * d), xhat = new Float64Array(n * d), rstd = new Float64Array(n);
    for (var i = 0; i < n; i++) {
      var mu = 0, v = 0, k;
      for (k = 0; k < d; k++) mu += X[i * d + k];
      mu /= d;
      for (k = 0; k < d; k++) { var c = X[i * d + k] - mu; v += c * c; }
      rstd[i] = 1 / Math.sqrt(v / d + EPS);
      for (k = 0; k < d; k++) {
        xhat[i * d + k] = (X[i * d + k] - mu) * rstd[i];
        y[i * d + k] = gamma[k] * xhat[i * d + k] + beta[k];
      }
    }
    return {y: y, xhat: xhat, rstd: rstd};
  }

  function layerNormBack(dy, ln, n, d, gamma, out, gName, bName) {
    var dx = new Float64Array(n * d), g = new Float64Array(d);
    var gg = new Float64Array(d), gb = new Float64Array(d);
    for (var i = 0; i < n; i++) {
      var m1 = 0, m2 = 0, k, j = i * d;
      for (k = 0; k < d; k++) {
        gg[k] += dy[j + k] * ln.xhat[j + k];
        gb[k] += dy[j + k];
        g[k] = dy[j + k] * gamma[k];
        m1 += g[k];
        m2 += g[k] * ln.xhat[j + k];
      }
      m1 /= d;
      m2 /= d;
      for (k = 0; k < d; k++) dx[j + k] = ln.rstd[i] * (g[k] - m1 - ln.xhat[j + k] * m2);
    }
    if (out) { put(out, gName, gg); put(out, bName, gb); }
    return dx;
  }

  /* Multi-head self-attention (the package's MultiHeadAttention, no mask): {y, qkv, A, O}. */
  function attention(u, n, d, p) {
    var qkv = linear(u, n, d, p["self_attn.in_proj_weight"], p["self_attn.in_proj_bias"], 3 * d);
    var dk = d / HEADS, scale = 1 / Math.sqrt(dk), d3 = 3 * d;
    var A = new Float64Array(HEADS * n * n), O = new Float64Array(n * d);
    for (var h = 0; h < HEADS; h++) {
      var q0 = h * dk, k0 = d + h * dk, v0 = 2 * d + h * dk;
      for (var i = 0; i < n; i++) {
        var row = (h * n + i) * n, max = -Infinity, j, k;
        for (j = 0; j < n; j++) {
          var s = 0;
          for (k = 0; k < dk; k++) s += qkv[i * d3 + q0 + k] * qkv[j * d3 + k0 + k];
          A[row + j] = s * scale;
          if (A[row + j] > max) max = A[row + j];
        }
        var sum = 0;
        for (j = 0; j < n; j++) { A[row + j] = Math.exp(A[row + j] - max); sum += A[row + j]; }
        for (j = 0; j < n; j++) A[row + j] /= sum;
        for (j = 0; j < n; j++) {
          var a = A[row + j];
          for (k = 0; k < dk; k++) O[i * d + q0 + k] += a * qkv[j * d3 + v0 + k];
        }
      }
    }
    var y = linear(O, n, d, p["self_attn.out_proj.weight"], p["self_attn.out_proj.bias"], d);
    return {y: y, qkv: qkv, A: A, O: O, u: u};
  }

  function attentionBack(dy, at, n, d, p, g) {
    var dO = linearBack(dy, at.O, n, d, p["self_attn.out_proj.weight"], d, g,
                        "self_attn.out_proj.weight", "self_attn.out_proj.bias");
    var dk = d / HEADS, scale = 1 / Math.sqrt(dk), d3 = 3 * d, qkv = at.qkv, A = at.A;
    var dqkv = new Float64Array(n * d3), dA = new Float64Array(n);
    for (var h = 0; h < HEADS; h++) {
      var q0 = h * dk, k0 = d + h * dk, v0 = 2 * d + h * dk;
      for (var i = 0; i < n; i++) {
        var row = (h * n + i) * n, dot = 0, j, k;
        for (j = 0; j < n; j++) {
          var s = 0, a = A[row + j];
          for (k = 0; k < dk; k++) {
            s += dO[i * d + q0 + k] * qkv[j * d3 + v0 + k];
            dqkv[j * d3 + v0 + k] += a * dO[i * d + q0 + k];
          }
          dA[j] = s;
          dot += a * s;
        }
        for (j = 0; j < n; j++) {
          var dS = A[row + j] * (dA[j] - dot) * scale;
          if (dS === 0) continue;
          for (k = 0; k < dk; k++) {
            dqkv[i * d3 + q0 + k] += dS * qkv[j * d3 + k0 + k];
            dqkv[j * d3 + k0 + k] += dS * qkv[i * d3 + q0 + k];
          }
        }
      }
    }
    return linearBack(dqkv, at.u, n, d, p["self_attn.in_proj_weight"], d3, g,
                      "self_attn.in_proj_weight", "self_attn.in_proj_bias");
  }

  /* The feed-forward network: linear1, ReLU, linear2. */
  function ffn(v, n, d, p) {
    var h = linear(v, n, d, p["ffn.linear1.weight"], p["ffn.linear1.bias"], 4 * d);
    var r = new Float64Array(h.length);
    for (var i = 0; i < h.length; i++) r[i] = h[i] > 0 ? h[i] : 0;
    return {y: linear(r, n, 4 * d, p["ffn.linear2.weight"], p["ffn.linear2.bias"], d), h: h, r: r, v: v};
  }

  function ffnBack(dy, f, n, d, p, g) {
    var dr = linearBack(dy, f.r, n, 4 * d, p["ffn.linear2.weight"], d, g, "ffn.linear2.weight",
                        "ffn.linear2.bias");
    for (var i = 0; i < dr.length; i++) if (!(f.h[i] > 0)) dr[i] = 0; // ReLU: gradient 0 at 0
    return linearBack(dr, f.v, n, d, p["ffn.linear1.weight"], 4 * d, g, "ffn.linear1.weight",
                      "ffn.linear1.bias");
  }

  function add(a, b) {
    var c = new Float64Array(a.length);
    for (var i = 0; i < a.length; i++) c[i] = a[i] + b[i];
    return c;
  }

  function norm(a) {
    var s = 0;
    for (var i = 0; i < a.length; i++) s += a[i] * a[i];
    return Math.sqrt(s);
  }

  /* One stack: L layers of the placement (preNorm true or false) with weights w, computed a
   * step at a time (a layer forward, the loss, a layer backward: the page spreads its first
   * computation over a few short tasks). run.step() does the next step and says whether the stack
   * is done; run.result() is then the output y, the loss, rms(x_ℓ) for ℓ = 0 … L,
   * ‖∂loss/∂x_ℓ‖ for ℓ = 0 … L, ‖∂loss/∂θ_ℓ‖ for ℓ = 1 … L, and (keep) every layer's
   * gradients and ∂loss/∂x_0. */
  function Run(w, L, d, preNorm, keep) {
    this.w = w; this.L = L; this.d = d; this.preNorm = preNorm; this.keep = keep;
    this.x = w.x0; this.xs = [w.x0]; this.saved = []; this.l = 0; this.back = false;
    this.streamGrad = new Array(L + 1); this.paramGrad = new Array(L);
    this.kept = keep ? new Array(L) : null;
  }

  Run.prototype.step = function () {
    var n = N_TOK, d = this.d, L = this.L, w = this.w, p, x = this.x;
    if (!this.back && this.l < L) { // layer l + 1, forward
      p = w.layers[this.l];
      var s = {};
      if (this.preNorm) {
        s.ln1 = layerNorm(x, n, d, p["norm1.weight"], p["norm1.bias"]);
        s.at = attention(s.ln1.y, n, d, p);
        var a = add(x, s.at.y);
        s.ln2 = layerNorm(a, n, d, p["norm2.weight"], p["norm2.bias"]);
        s.ff = ffn(s.ln2.y, n, d, p);
        x = add(a, s.ff.y);
      } else {
        s.at = attention(x, n, d, p);
        s.ln1 = layerNorm(add(x, s.at.y), n, d, p["norm1.weight"], p["norm1.bias"]);
        s.ff = ffn(s.ln1.y, n, d, p);
        s.ln2 = layerNorm(add(s.ln1.y, s.ff.y), n, d, p["norm2.weight"], p["norm2.bias"]);
        x = s.ln2.y;
      }
      this.saved.push(s);
      this.xs.push(x);
      this.x = x;
      this.l += 1;
      return false;
    }
    if (!this.back) { // the final norm (pre-norm), the loss and its gradient
      var ones = new Float64Array(d).fill(1), fin = null, y = x;
      if (this.preNorm) { fin = layerNorm(x, n, d, ones, new Float64Array(d)); y = fin.y; }
      var m = n * d, loss = 0, dy = new Float64Array(m);
      for (var i = 0; i < m; i++) {
        var e = y[i] - w.target[i];
        loss += e * e;
        dy[i] = 2 * e / m;
      }
      this.y = y;
      this.loss = loss / m;
      this.dx = this.preNorm ? layerNormBack(dy, fin, n, d, ones, null) : dy;
      this.streamGrad[L] = norm(this.dx);
      this.back = true;
      return L === 0;
    }
    var l = this.l - 1, dx = this.dx, g = grads(this.keep), sv = this.saved[l]; // layer l + 1, backward
    p = w.layers[l];
    if (this.preNorm) {
      var da = add(dx, layerNormBack(ffnBack(dx, sv.ff, n, d, p, g), sv.ln2, n, d, p["norm2.weight"], g,
                                     "norm2.weight", "norm2.bias"));
      dx = add(da, layerNormBack(attentionBack(da, sv.at, n, d, p, g), sv.ln1, n, d, p["norm1.weight"], g,
                                 "norm1.weight", "norm1.bias"));
    } else {
      var db = layerNormBack(dx, sv.ln2, n, d, p["norm2.weight"], g, "norm2.weight", "norm2.bias");
      var dz = add(db, ffnBack(db, sv.ff, n, d, p, g));
      var dA = layerNormBack(dz, sv.ln1, n, d, p["norm1.weight"], g, "norm1.weight", "norm1.bias");
      dx = add(dA, attentionBack(dA, sv.at, n, d, p, g));
    }
    this.saved[l] = null; // no longer needed
    this.dx = dx;
    this.streamGrad[l] = norm(dx);
    this.paramGrad[l] = Math.sqrt(g.sq);
    if (this.keep) this.kept[l] = g;
    this.l = l;
    return l === 0;
  };

  Run.prototype.result = function () {
    var m = N_TOK * this.d;
    var out = {loss: this.loss, rms: this.xs.map(function (v) { return norm(v) / Math.sqrt(m); }),
               streamGrad: this.streamGrad, paramGrad: this.paramGrad};
    if (this.keep) { out.y = this.y; out.grads = this.kept; out.dx0 = this.dx; }
    return out;
  };

  function stack(w, L, d, preNorm, keep) {
    var run = new Run(w, L, d, preNorm, keep);
    while (!run.step()) { /* the next layer */ }
    return run.result();
  }

  /* What the page shows for opts {placement: "post" | "pre" | "both", L, d, gain, seed}:
   * {post, pre} (each a stack's numbers, or absent). keep: every gradient too (the tests). */
  function compute(opts, keep) {
    var w = draw(opts.seed, opts.d, opts.gain), out = {};
    if (opts.placement !== "pre") out.post = stack(w, opts.L, opts.d, false, keep);
    if (opts.placement !== "post") out.pre = stack(w, opts.L, opts.d, true, keep);
    return out;
  }

  // ============================================================ the figure

  var COLORS = {post: "var(--mff-warn)", pre: "var(--mff-accent)"};
  var NAMES = {post: "post-norm", pre: "pre-norm"};

  function sig(x) { // three significant digits, or a power of ten
    if (x === 0) return "0";
    if (Math.abs(x) >= 0.01 && Math.abs(x) < 1000) return x.toPrecision(3);
    return x.toExponential(1).replace("e+", "e").replace("-", "−");
  }

  function tenTo(e) { // 10^e as a tick label: 0.01, 0.1, 1, 10, 100, else 1e−5
    return e >= -2 && e <= 2 ? String(Math.pow(10, e)) : "1e" + String(e).replace("-", "−");
  }

  function mount(root) {
    var state = Object.assign({}, START);
    root.appendChild(F.el("p", {class: "mff-title"}, [
      "A stack at initialization: the stream's size and the gradient each layer gets"]));
    var controls = F.el("div", {class: "mff-controls"});
    var placeId = F.uid("place");
    var place = F.el("select", {id: placeId, "data-input": "placement"}, [
      F.el("option", {value: "both"}, ["both"]), F.el("option", {value: "post"}, ["post-norm"]),
      F.el("option", {value: "pre"}, ["pre-norm"])]);
    place.value = state.placement;
    place.style.font = "inherit";
    place.style.fontSize = "14px";
    place.style.color = "var(--mff-fg)";
    place.style.background = "var(--mff-bg)";
    place.style.border = "1px solid var(--mff-line)";
    place.style.borderRadius = "4px";
    var placeBox = F.el("label", {for: placeId}, ["placement "]);
    var placeWrap = F.el("span", {}, [placeBox, place]);
    placeWrap.style.display = "inline-flex";
    placeWrap.style.alignItems = "center";
    placeWrap.style.gap = "6px";
    var depth = F.control("range", "depth L", {min: 1, max: MAX_L, step: 1, "data-input": "depth"});
    var showL = F.output(depth.box);
    var width = F.control("range", "width d", {min: 0, max: WIDTHS.length - 1, step: 1, "data-input": "width"});
    var showD = F.output(width.box);
    var gain = F.control("range", "weight scale g", {min: 0, max: GAINS.length - 1, step: 1, "data-input": "gain"});
    var showG = F.output(gain.box);
    var seed = F.control("number", "seed", {min: 0, max: 999, step: 1, "data-input": "seed"});
    [placeWrap, depth.box, width.box, gain.box, seed.box].forEach(function (c) { controls.appendChild(c); });
    root.appendChild(controls);

    // two plots: the stream's rms against ℓ (linear axis from 0), the parameters' gradient norm
    // against ℓ (log axis)
    var W = 340, H = 220, pad = {l: 44, r: 10, t: 22, b: 30};
    function plot(label, title) {
      var svg = F.svgEl("svg", {viewBox: "0 0 " + W + " " + H, width: W, height: H, role: "img",
                                style: "flex:1 1 300px;max-width:340px", "aria-label": label});
      svg.appendChild(F.svgEl("text", {x: pad.l, y: 13}, [title]));
      svg.appendChild(F.svgEl("text", {x: W - pad.r, y: H - 4, "text-anchor": "end", class: "mff-muted"},
                              ["layer ℓ"]));
      var ticks = F.svgEl("g", {}), lines = F.svgEl("g", {});
      svg.appendChild(ticks);
      svg.appendChild(lines);
      return {svg: svg, ticks: ticks, lines: lines};
    }
    var streamPlot = plot("the size of the residual stream after each layer",
                          "stream rms(x_ℓ)");
    var gradPlot = plot("the norm of each layer's parameter gradient, on a log scale",
                        "‖∂loss/∂θ_ℓ‖ (log scale)");
    root.appendChild(F.el("div", {class: "mff-row"}, [streamPlot.svg, gradPlot.svg]));

    var keyLine = F.el("p", {class: "mff-key"}, []);
    ["post", "pre"].forEach(function (k) {
      var sw = F.svgEl("svg", {width: 26, height: 10, "aria-hidden": "true",
                               style: "display:inline-block;vertical-align:middle;margin:0 4px 0 10px"},
                       [F.svgEl("line", {x1: 1, x2: 25, y1: 5, y2: 5, "stroke-width": 2.5,
                                         style: "stroke:" + COLORS[k]})]);
      keyLine.appendChild(sw);
      keyLine.appendChild(document.createTextNode(NAMES[k]));
    });
    root.appendChild(keyLine);

    var rows = [["rms-last", "stream rms(x_L)"], ["grad-first", "‖∂loss/∂θ‖, layer 1"],
                ["grad-last", "‖∂loss/∂θ‖, layer L"], ["ratio", "layer L / layer 1"],
                ["input-grad", "‖∂loss/∂x_0‖"]];
    var table = F.grid(rows.map(function (r) { return r[1]; }), ["post-norm", "pre-norm"], "");
    rows.forEach(function (r, k) {
      table.cells[k][0].dataset.out = "post-" + r[0];
      table.cells[k][1].dataset.out = "pre-" + r[0];
    });
    root.appendChild(table.table);
    var say = F.announcer(root);
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Each change draws a fresh stack of encoder layers (4 heads, d_ff = 4d, n = 6 tokens) at ",
      "PyTorch's initialization times g, and runs one forward and one backward pass of the loss ",
      "mean((output − target)²). Left: the size of the residual stream after each layer (0: the ",
      "input). Right: the norm of the gradient of each layer's parameters."]));

    function scaleOf(values) { // a log axis over whole powers of ten around the values
      var lo = Infinity, hi = -Infinity;
      values.forEach(function (v) { if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); } });
      if (!(lo < Infinity)) { lo = 1e-3; hi = 1; }
      var a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
      if (b - a < 1) b = a + 1;
      return [a, b];
    }

    function draw2(p, L, series, yOf, yTicks) {
      var x0 = pad.l, x1 = W - pad.r;
      function px(l) { return x0 + (L === 0 ? 0 : l / L) * (x1 - x0); }
      p.ticks.textContent = "";
      p.lines.textContent = "";
      yTicks.forEach(function (t) {
        var y = yOf(t.v);
        p.ticks.appendChild(F.svgEl("line", {x1: x0, x2: x1, y1: y, y2: y, stroke: "currentColor",
                                             "stroke-opacity": 0.12}));
        p.ticks.appendChild(F.svgEl("text", {x: x0 - 4, y: y + 4, "text-anchor": "end", class: "mff-muted"}, [t.text]));
      });
      var step = L <= 12 ? (L <= 6 ? 1 : 2) : 4;
      for (var l = 0; l <= L; l += step) {
        p.ticks.appendChild(F.svgEl("text", {x: px(l), y: H - pad.b + 14, "text-anchor": "middle",
                                             class: "mff-muted"}, [String(l)]));
      }
      series.forEach(function (s) {
        var pts = s.values.map(function (v, k) { return px(s.from + k).toFixed(1) + "," + yOf(v).toFixed(1); });
        p.lines.appendChild(F.svgEl("polyline", {points: pts.join(" "), fill: "none", "stroke-width": 2.2,
                                                 style: "stroke:" + COLORS[s.kind]}));
        s.values.forEach(function (v, k) {
          p.lines.appendChild(F.svgEl("circle", {cx: px(s.from + k).toFixed(1), cy: yOf(v).toFixed(1),
                                                 r: L > 12 ? 2 : 3, style: "fill:" + COLORS[s.kind]}));
        });
      });
    }

    /* Draw the numbers r = {post, pre} of the state st. */
    function render(r, st) {
      var kinds = ["post", "pre"].filter(function (k) { return r[k]; });
      // the stream: 0 … the largest rms, in round steps
      var top = 0;
      kinds.forEach(function (k) { r[k].rms.forEach(function (v) { top = Math.max(top, v); }); });
      var stepY = top <= 1.2 ? 0.25 : top <= 2.5 ? 0.5 : top <= 6 ? 1 : top <= 12 ? 2 : Math.ceil(top / 5);
      var ymax = stepY * Math.ceil(top / stepY + 1e-9);
      var sTicks = [];
      for (var v = 0; v <= ymax + 1e-9; v += stepY) sTicks.push({v: v, text: stepY < 1 ? F.fmt(v, 2) : F.fmt(v, 0)});
      draw2(streamPlot, st.L, kinds.map(function (k) { return {kind: k, from: 0, values: r[k].rms}; }),
            function (v) { return pad.t + (1 - v / ymax) * (H - pad.t - pad.b); }, sTicks);
      var all = [];
      kinds.forEach(function (k) { all = all.concat(r[k].paramGrad); });
      var ab = scaleOf(all), gTicks = [];
      var every = ab[1] - ab[0] > 4 ? 2 : 1;
      for (var e = ab[0]; e <= ab[1]; e += every) gTicks.push({v: Math.pow(10, e), text: tenTo(e)});
      draw2(gradPlot, st.L, kinds.map(function (k) { return {kind: k, from: 1, values: r[k].paramGrad}; }),
            function (v) {
              var lv = Math.log10(Math.max(v, Math.pow(10, ab[0])));
              return pad.t + (1 - (lv - ab[0]) / (ab[1] - ab[0])) * (H - pad.t - pad.b);
            }, gTicks);
      var parts = [], L = st.L;
      ["post", "pre"].forEach(function (k, c) {
        var s = r[k];
        var vals = s ? [F.fmt(s.rms[L], 2), sig(s.paramGrad[0]), sig(s.paramGrad[L - 1]),
                        F.fmt(s.paramGrad[L - 1] / s.paramGrad[0], 2), sig(s.streamGrad[0])]
                     : ["–", "–", "–", "–", "–"];
        vals.forEach(function (text, row) { F.paint(table.cells[row][c], text); });
        if (s) {
          parts.push(NAMES[k] + ": stream rms " + vals[0] + " after layer " + L + "; gradient " + vals[1] +
                     " at layer 1, " + vals[2] + " at layer " + L);
        }
      });
      var text = parts.join(". ") + ".";
      root.dataset.now = text;
      say(text);
    }

    function busy(on) { // the plots and the table wait for a computation (.ci/pdf_figures.py waits)
      [streamPlot.svg, gradPlot.svg, table.table].forEach(function (e) { e.setAttribute("aria-busy", on ? "true" : "false"); });
      root.dataset.mffPending = on ? "1" : "0";
    }

    /* A change: the controls show the new state at once, and the stacks are computed in slices
     * of at most 8 ms, the first in the reader's own event; at the page's usual speed the whole
     * computation fits in it and is drawn at once. A slower machine gets the result a few tasks
     * later without a long task meanwhile; a newer change drops the computation under way. */
    var job = 0, longest = 0;
    function update() {
      var t0 = performance.now(), mine = ++job, st = Object.assign({}, state);
      depth.input.value = st.L;
      depth.input.setAttribute("aria-valuetext", "L = " + st.L);
      showL("L = " + st.L);
      width.input.value = WIDTHS.indexOf(st.d);
      width.input.setAttribute("aria-valuetext", "d = " + st.d);
      showD("d = " + st.d);
      gain.input.value = GAINS.indexOf(st.gain);
      gain.input.setAttribute("aria-valuetext", "g = " + st.gain);
      showG("g = " + st.gain);
      var w = draw(st.seed, st.d, st.gain), runs = [], k = 0;
      if (st.placement !== "pre") runs.push(["post", new Run(w, st.L, st.d, false, false)]);
      if (st.placement !== "post") runs.push(["pre", new Run(w, st.L, st.d, true, false)]);
      busy(true);
      (function more() {
        if (mine !== job) return;
        var t1 = performance.now();
        while (k < runs.length && performance.now() - t1 < 8) if (runs[k][1].step()) k++;
        if (k === runs.length) {
          var r = {};
          runs.forEach(function (x) { r[x[0]] = x[1].result(); });
          render(r, st);
          busy(false);
          root.dataset.mffStarted = "1";
          root.dataset.mffTotalMs = (performance.now() - t0).toFixed(1); // start to drawn, all slices
        } else setTimeout(more, 0);
        longest = Math.max(longest, performance.now() - t1);
        root.dataset.mffLongestStepMs = longest.toFixed(1); // the tests read it
      })();
    }

    place.addEventListener("change", function () { state.placement = place.value; update(); });
    depth.input.addEventListener("input", function () { state.L = Number(depth.input.value); update(); });
    width.input.addEventListener("input", function () { state.d = WIDTHS[Number(width.input.value)]; update(); });
    gain.input.addEventListener("input", function () { state.gain = GAINS[Number(gain.input.value)]; update(); });
    seed.input.value = state.seed;
    F.bindNumber(seed.input, {min: 0, max: 999, integer: true}, function () { return state.seed; },
                 function (v) { state.seed = v; update(); });

    // the start, in tasks of its own after the page's (its first computation runs before the
    // browser has compiled its loops: several slices)
    busy(true);
    setTimeout(update, 0);
  }

  F.register("ch07-norms", {mount: mount});
  return {compute: compute, draw: draw, shapes: shapes, START: START, WIDTHS: WIDTHS, GAINS: GAINS,
          MAX_L: MAX_L, N_TOK: N_TOK, HEADS: HEADS};
});
