/* translator.js: the book's English→Spanish Transformer (chapter 13) in plain JavaScript.
 *
 * The same model as minformer.translator.Translator, layer for layer, with the weights that
 * minformer.export.export_for_browser wrote beside this file (model.json and weights.bin):
 *
 *   BPETokenizer              minformer.tokenizer.BPETokenizer (encode, decode, id_to_token)
 *   linear, layerNorm, feedForward     nn.Linear, blocks.LayerNorm, blocks.FeedForward
 *   attend                    softmax(Q Kᵀ / √d_k) V for every head (multihead.MultiHeadAttention)
 *   selfAttention, cachedSelfAttention, crossAttention    the three uses of MultiHeadAttention
 *   encoderLayer, decoderLayer          blocks.EncoderLayer / DecoderLayer (pre- or post-norm)
 *   Transformer: embed, encode, step    transformer.Transformer (decode with a KV cache)
 *   greedySearch, beamSearch  decode.greedy_search / beam_search (GNMT length penalty)
 *   loopTokens                decode.loop_tokens (the loop guard)
 *   splitClauses, joinClauses long_sentences.split_clauses / join_clauses
 *   Translator.translate      Translator.translate for one sentence, plus the cross-attention
 *
 * Rows are tokens, as in the book: a sequence of t tokens of d_model features is one
 * Float32Array of t · d_model numbers, row i at [i · d_model, (i + 1) · d_model). Weights are
 * PyTorch's: a Linear's W is (d_out, d_in), so y = x Wᵀ + b. Sums are accumulated in JavaScript's
 * float64 and stored as float32, so results agree with PyTorch's float32 to rounding.
 *
 * One file, no dependency, no bundler: a classic script (global MinformerTranslator) in a page or
 * in a Web Worker (importScripts), and a CommonJS module in Node (require or import).
 *
 *   const tr = await MinformerTranslator.load("_static/translator/", {onProgress});
 *   const out = tr.translate("Where is the station?", {beamSize: 4});
 *   out.text; out.attention.weights[layer][head]   // Float32Array (t_out, s), row-major
 *
 * load() fetches the two files (fs in Node); create(modelJson, weightsArrayBuffer) builds one from
 * bytes obtained any other way, checking their sha256 first (new Translator(...): unchecked).
 * MinformerTranslator.factory is the function that makes this API and uses nothing but globals,
 * so its source can start a Web Worker from a Blob, which also works in a page opened from
 * file://. Bad input throws an Error whose message is a sentence a reader can be shown.
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory();
  else {
    root.MinformerTranslator = factory();
    root.MinformerTranslator.factory = factory; // widget.js starts a Web Worker from its source
  }
})(typeof globalThis !== "undefined" ? globalThis : this, function factory() {
  "use strict";

  var FORMAT = "minformer-browser-translator";
  var VERSION = 1;

  // ============================================================ 1. Reading the export

  // float16 bits → value, for all 65,536 bit patterns (each one exact in float32)
  var HALF_TO_FLOAT = null;

  function halfTable() {
    if (HALF_TO_FLOAT) return HALF_TO_FLOAT;
    HALF_TO_FLOAT = new Float32Array(65536);
    for (var h = 0; h < 65536; h++) {
      var sign = h & 0x8000 ? -1 : 1;
      var exponent = (h >> 10) & 0x1f;
      var fraction = h & 0x3ff;
      var value;
      if (exponent === 0) value = fraction * Math.pow(2, -24); // subnormal
      else if (exponent === 31) value = fraction ? NaN : Infinity;
      else value = (1 + fraction / 1024) * Math.pow(2, exponent - 15);
      HALF_TO_FLOAT[h] = sign * value;
    }
    return HALF_TO_FLOAT;
  }

  function product(shape) {
    return shape.reduce(function (a, b) { return a * b; }, 1);
  }

  // One tensor of the binary as float32: float16 decoded, or int8 rows times their scales.
  function readTensor(entry, bytes) {
    var n = product(entry.shape);
    var view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    var out = new Float32Array(n); // (shape), row-major
    if (entry.offset + entry.bytes > bytes.byteLength) {
      throw new Error("weights.bin is too short for tensor " + entry.name + " (it ends at byte " +
        bytes.byteLength + "; the tensor needs bytes " + entry.offset + "-" +
        (entry.offset + entry.bytes) + "): the file is truncated or from another export");
    }
    if (entry.dtype === "float16") {
      var table = halfTable();
      for (var i = 0; i < n; i++) out[i] = table[view.getUint16(entry.offset + 2 * i, true)];
    } else if (entry.dtype === "int8") {
      var rows = entry.shape[0], cols = n / rows;
      for (var r = 0; r < rows; r++) {
        var scale = view.getFloat32(entry.scale_offset + 4 * r, true);
        for (var c = 0; c < cols; c++) {
          out[r * cols + c] = view.getInt8(entry.offset + r * cols + c) * scale;
        }
      }
    } else {
      throw new Error("tensor " + entry.name + " has dtype " + entry.dtype +
        "; this engine reads float16 and int8");
    }
    return out;
  }

  // {name: Float32Array} of every tensor, tied names pointing at the same array.
  function readWeights(meta, bytes) {
    if (bytes.byteLength !== meta.weights.bytes) {
      throw new Error("weights.bin has " + bytes.byteLength + " bytes but model.json says " +
        meta.weights.bytes + ": the two files come from different exports (run make export-translator)");
    }
    var weights = {};
    meta.tensors.forEach(function (entry) {
      weights[entry.name] = { data: readTensor(entry, bytes), shape: entry.shape };
    });
    Object.keys(meta.aliases || {}).forEach(function (name) {
      weights[name] = weights[meta.aliases[name]];
    });
    return weights;
  }

  // ============================================================ 2. The BPE tokenizer

  // The character classes of minformer.tokenizer.PATTERN, written for Python's `re`:
  //   \s  Python's whitespace (str.isspace): not quite JavaScript's \s, so listed
  //   [^\W\d_]  letters: \p{L} and the numbers that are not decimal digits (Nl, No)
  //   \d  decimal digits \p{Nd};  [^\s\w]|_  everything else ("punctuation")
  var SPACE = "\\t-\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";
  var LETTER = "\\p{L}\\p{Nl}\\p{No}";
  var DIGIT = "\\p{Nd}";
  var PYTHON_SPACE = new RegExp("^[" + SPACE + "]+|[" + SPACE + "]+$", "g");

  // GPT-2's pre-tokenization: contractions | letters | digits | punctuation | whitespace.
  // Built when a tokenizer is made (a browser without \p{...} then fails there, not on load).
  function pretokenizer() {
    return new RegExp(
      "'(?:[sdmt]|ll|ve|re)" +
      "| ?[" + LETTER + "]+" +
      "| ?[" + DIGIT + "]+" +
      "| ?[^" + SPACE + LETTER + DIGIT + "]+" +
      "|[" + SPACE + "]+(?![^" + SPACE + "])" +
      "|[" + SPACE + "]+", "gu");
  }

  // Python's str.strip(): whitespace as Python sees it.
  function pythonStrip(text) {
    return text.replace(PYTHON_SPACE, "");
  }

  function hex2(b) {
    return "<0x" + (b < 16 ? "0" : "") + b.toString(16).toUpperCase() + ">";
  }

  // UTF-8 bytes → text, as Python's bytes.decode("utf-8", errors): a byte run that is not a
  // whole character (its maximal subpart) becomes onError(bytes of the run).
  function utf8Decode(bytes, onError) {
    var out = "";
    var i = 0, n = bytes.length;
    while (i < n) {
      var b0 = bytes[i];
      if (b0 < 0x80) { out += String.fromCharCode(b0); i++; continue; }
      var need = 0, lo = 0x80, hi = 0xbf;
      if (b0 >= 0xc2 && b0 <= 0xdf) need = 1;
      else if (b0 >= 0xe0 && b0 <= 0xef) {
        need = 2;
        if (b0 === 0xe0) lo = 0xa0;
        if (b0 === 0xed) hi = 0x9f; // no surrogates
      } else if (b0 >= 0xf0 && b0 <= 0xf4) {
        need = 3;
        if (b0 === 0xf0) lo = 0x90;
        if (b0 === 0xf4) hi = 0x8f; // nothing past U+10FFFF
      }
      var j = i + 1;
      for (var m = 0; m < need && j < n; m++, j++) {
        var low = m === 0 ? lo : 0x80, high = m === 0 ? hi : 0xbf;
        if (bytes[j] < low || bytes[j] > high) break;
      }
      if (need > 0 && j - i - 1 === need) {
        var cp = need === 1 ? b0 & 0x1f : need === 2 ? b0 & 0x0f : b0 & 0x07;
        for (var k = i + 1; k < j; k++) cp = (cp << 6) | (bytes[k] & 0x3f);
        out += String.fromCodePoint(cp);
      } else {
        out += onError(bytes.subarray(i, j));
      }
      i = j;
    }
    return out;
  }

  function readable(bytes) { // minformer.tokenizer.readable: <0xNN> for a stray byte
    return utf8Decode(bytes, function (run) { return Array.prototype.map.call(run, hex2).join(""); });
  }

  function bytesKey(bytes) { // a Map key for a byte string
    return String.fromCharCode.apply(null, bytes);
  }

  /* minformer.tokenizer.BPETokenizer, rebuilt from model.json's "tokenizer":
   * ids 0 … k-1 the special tokens, k … k+255 the bytes, then one id per merge in order (or
   * the id of the same bytes built earlier by another pair, as _add_merge does). */
  function BPETokenizer(spec) {
    var specials = spec.special_tokens;
    var k = specials.length;
    var encoder = new TextEncoder();
    this.specialTokens = specials.slice();
    this.vocab = specials.map(function (s) { return encoder.encode(s); }); // special tokens' text
    this.bytesToId = new Map(); // bytes → id of the 256 bytes and every merged token
    for (var b = 0; b < 256; b++) {
      this.vocab.push(new Uint8Array([b]));
      this.bytesToId.set(String.fromCharCode(b), k + b);
    }
    this.ranks = new Map(); // pair key → [rank, merged id]; a pair learned twice keeps its first
    for (var r = 0; r < spec.merges.length; r++) {
      var a = spec.merges[r][0], c = spec.merges[r][1];
      var token = new Uint8Array(this.vocab[a].length + this.vocab[c].length);
      token.set(this.vocab[a]);
      token.set(this.vocab[c], this.vocab[a].length);
      var key = bytesKey(token);
      var id = this.bytesToId.get(key);
      if (id === undefined) {
        id = this.vocab.length;
        this.vocab.push(token);
        this.bytesToId.set(key, id);
      }
      if (!this.ranks.has(this.pairKey(a, c))) this.ranks.set(this.pairKey(a, c), [r, id]);
    }
    if (this.vocab.length !== spec.vocab_size) {
      throw new Error("the tokenizer's merges give " + this.vocab.length + " tokens, model.json says " +
        spec.vocab_size + ": model.json is damaged");
    }
    this.pattern = pretokenizer();
    this.encoder = encoder;
    this.cache = new Map(); // chunk → its ids
    this.padId = specials.indexOf("<pad>");
    this.bosId = specials.indexOf("<bos>");
    this.eosId = specials.indexOf("<eos>");
  }

  BPETokenizer.prototype.pairKey = function (a, b) { return a * 1048576 + b; };

  Object.defineProperty(BPETokenizer.prototype, "vocabSize", {
    get: function () { return this.vocab.length; }
  });

  // Cut text into the chunks merges stay inside (minformer.tokenizer.pretokenize).
  BPETokenizer.prototype.pretokenize = function (text) {
    return text.match(this.pattern) || [];
  };

  // The ids of one chunk: its bytes, then the earliest-learned adjacent pair merged, again and
  // again (every non-overlapping occurrence, left to right), until no learned pair is left.
  BPETokenizer.prototype.encodeChunk = function (chunk) {
    var cached = this.cache.get(chunk);
    if (cached) return cached;
    var k = this.specialTokens.length;
    var ids = Array.from(this.encoder.encode(chunk), function (b) { return k + b; });
    while (ids.length > 1) {
      var best = null, at = -1;
      for (var i = 0; i + 1 < ids.length; i++) {
        var rank = this.ranks.get(this.pairKey(ids[i], ids[i + 1])); // [rank, merged id]
        if (rank !== undefined && (best === null || rank[0] < best[0])) { best = rank; at = i; }
      }
      if (best === null) break;
      ids = merge(ids, ids[at], ids[at + 1], best[1]);
    }
    if (this.cache.size >= 200000) this.cache.clear();
    this.cache.set(chunk, ids);
    return ids;
  };

  // Replace every non-overlapping occurrence of the pair (a, b), left to right, by `merged`.
  function merge(ids, a, b, merged) {
    var out = [];
    for (var i = 0; i < ids.length; i++) {
      if (i + 1 < ids.length && ids[i] === a && ids[i + 1] === b) { out.push(merged); i++; }
      else out.push(ids[i]);
    }
    return out;
  }

  /* BPETokenizer.encode(text, add_eos=...): special-token strings in text are plain text. */
  BPETokenizer.prototype.encode = function (text, options) {
    if (typeof text !== "string") throw new TypeError("text must be a string; got " + typeof text);
    var lone = text.match(/\p{Cs}/u);
    if (lone) {
      throw new Error("text contains a lone surrogate U+" + lone[0].charCodeAt(0).toString(16).toUpperCase() +
        " (not valid Unicode); it has no UTF-8 bytes to encode");
    }
    var ids = [];
    var chunks = this.pretokenize(text);
    for (var i = 0; i < chunks.length; i++) ids.push.apply(ids, this.encodeChunk(chunks[i]));
    if (options && options.addEos) ids.push(this.eosId);
    return ids;
  };

  BPETokenizer.prototype.checkIds = function (ids) {
    for (var i = 0; i < ids.length; i++) {
      if (!Number.isInteger(ids[i]) || ids[i] < 0 || ids[i] >= this.vocab.length) {
        throw new RangeError("unknown token id " + ids[i] + " at position " + i +
          ": ids must be ints in [0, " +
          this.vocab.length + ")");
      }
    }
  };

  /* BPETokenizer.decode(ids, skip_special, errors="replace"). */
  BPETokenizer.prototype.decode = function (ids, skipSpecial) {
    this.checkIds(ids);
    var k = this.specialTokens.length;
    var parts = [], length = 0;
    for (var i = 0; i < ids.length; i++) {
      if (skipSpecial && ids[i] < k) continue;
      parts.push(this.vocab[ids[i]]);
      length += this.vocab[ids[i]].length;
    }
    var bytes = new Uint8Array(length);
    for (var p = 0, at = 0; p < parts.length; at += parts[p].length, p++) bytes.set(parts[p], at);
    return utf8Decode(bytes, function () { return "\uFFFD"; });
  };

  /* BPETokenizer.id_to_token: a special token's text, else the token's readable bytes. */
  BPETokenizer.prototype.idToToken = function (id) {
    this.checkIds([id]);
    return id < this.specialTokens.length ? this.specialTokens[id] : readable(this.vocab[id]);
  };

  // ============================================================ 3. The layers

  // y = x · w over n numbers (x from offset xi, w from offset wi), four partial sums.
  function dot(x, xi, w, wi, n) {
    var s0 = 0, s1 = 0, s2 = 0, s3 = 0, i = 0;
    for (; i + 3 < n; i += 4) {
      s0 += x[xi + i] * w[wi + i];
      s1 += x[xi + i + 1] * w[wi + i + 1];
      s2 += x[xi + i + 2] * w[wi + i + 2];
      s3 += x[xi + i + 3] * w[wi + i + 3];
    }
    for (; i < n; i++) s0 += x[xi + i] * w[wi + i];
    return (s0 + s1) + (s2 + s3);
  }

  /* Y[y … y+3] = four rows of W (from w, each d_in long) times one row x of X (from x), plus
   * the four biases b[o … o+3] (b null: none). Each x is read once for the four sums. */
  function fourByOne(X, x, W, w, d_in, b, o, Y, y) {
    var w1 = w + d_in, w2 = w1 + d_in, w3 = w2 + d_in;
    var s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (var j = 0; j < d_in; j++) {
      var xj = X[x + j];
      s0 += xj * W[w + j];
      s1 += xj * W[w1 + j];
      s2 += xj * W[w2 + j];
      s3 += xj * W[w3 + j];
    }
    Y[y] = b ? s0 + b[o] : s0;
    Y[y + 1] = b ? s1 + b[o + 1] : s1;
    Y[y + 2] = b ? s2 + b[o + 2] : s2;
    Y[y + 3] = b ? s3 + b[o + 3] : s3;
  }

  /* The same for two rows of X (x and x + d_in) into Y[y …] and Y[y + d_out …]: each W number
   * is read once for two tokens (the 4 × 2 block is what makes beam search and the encoder fast). */
  function fourByTwo(X, x, W, w, d_in, b, o, Y, y, d_out) {
    var w1 = w + d_in, w2 = w1 + d_in, w3 = w2 + d_in, z = x + d_in;
    var a0 = 0, a1 = 0, a2 = 0, a3 = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (var j = 0; j < d_in; j++) {
      var xj = X[x + j], zj = X[z + j];
      var v0 = W[w + j], v1 = W[w1 + j], v2 = W[w2 + j], v3 = W[w3 + j];
      a0 += xj * v0; a1 += xj * v1; a2 += xj * v2; a3 += xj * v3;
      c0 += zj * v0; c1 += zj * v1; c2 += zj * v2; c3 += zj * v3;
    }
    var bias0 = b ? b[o] : 0, bias1 = b ? b[o + 1] : 0, bias2 = b ? b[o + 2] : 0, bias3 = b ? b[o + 3] : 0;
    Y[y] = a0 + bias0; Y[y + 1] = a1 + bias1; Y[y + 2] = a2 + bias2; Y[y + 3] = a3 + bias3;
    y += d_out;
    Y[y] = c0 + bias0; Y[y + 1] = c1 + bias1; Y[y + 2] = c2 + bias2; Y[y + 3] = c3 + bias3;
  }

  /* nn.Linear: X (t, d_in) → Y (t, d_out) = X Wᵀ + b, W (d_out, d_in). `first` picks rows
   * first … first + d_out - 1 of W and b (the Q rows, or the K and V rows, of an attention's
   * in_proj_weight). d_out must be a multiple of 4 (the Transformer checks its sizes). */
  function linear(X, t, W, b, d_in, d_out, first) {
    first = first || 0;
    var Y = new Float32Array(t * d_out); // (t, d_out)
    for (var o = 0; o < d_out; o += 4) {
      var w = (first + o) * d_in, i = 0;
      for (; i + 1 < t; i += 2) fourByTwo(X, i * d_in, W, w, d_in, b, first + o, Y, i * d_out + o, d_out);
      if (i < t) fourByOne(X, i * d_in, W, w, d_in, b, first + o, Y, i * d_out + o);
    }
    return Y;
  }

  /* LayerNorm: each row (t rows of d) to γ ⊙ (x - μ) / √(σ² + ε) + β. */
  function layerNorm(X, t, d, norm, eps) {
    var gamma = norm.weight, beta = norm.bias;
    var Y = new Float32Array(t * d); // (t, d)
    for (var i = 0; i < t; i++) {
      var row = i * d, mean = 0, variance = 0, j;
      for (j = 0; j < d; j++) mean += X[row + j];
      mean /= d;
      for (j = 0; j < d; j++) variance += (X[row + j] - mean) * (X[row + j] - mean);
      var inv = 1 / Math.sqrt(variance / d + eps);
      for (j = 0; j < d; j++) Y[row + j] = gamma[j] * (X[row + j] - mean) * inv + beta[j];
    }
    return Y;
  }

  function addInPlace(X, Y) { // X += Y, the residual connection
    for (var i = 0; i < X.length; i++) X[i] += Y[i];
    return X;
  }

  /* FeedForward: ReLU(X W₁ᵀ + b₁) W₂ᵀ + b₂, (t, d_model) → (t, d_ff) → (t, d_model). */
  function feedForward(X, t, ffn, d_model, d_ff) {
    var H = linear(X, t, ffn.linear1.weight, ffn.linear1.bias, d_model, d_ff); // (t, d_ff)
    for (var i = 0; i < H.length; i++) if (H[i] < 0) H[i] = 0;
    return linear(H, t, ffn.linear2.weight, ffn.linear2.bias, d_ff, d_model); // (t, d_model)
  }

  /* Columns from … from + d - 1 of M (t, width) as a new (t, d) matrix: Q, K or V out of the
   * fused projection QKV (t, 3·d_model). */
  function columns(M, t, width, from, d) {
    var out = new Float32Array(t * d); // (t, d)
    for (var i = 0; i < t; i++) out.set(M.subarray(i * width + from, i * width + from + d), i * d);
    return out;
  }

  /* One query row against t_k keys, every head: Q (t_q, d_model) row i, K and V (t_k, d_model),
   * head h in columns h · d_k … (h + 1) · d_k - 1 (the fused layout of MultiHeadAttention).
   * Writes the heads' outputs, concatenated, into Y row i; A[h] receives the head's weights
   * softmax(q Kᵀ / √d_k), t_k numbers, when A is given. */
  function attend(Q, i, K, V, t_k, n_heads, d_k, Y, A) {
    var d_model = n_heads * d_k;
    var scale = 1 / Math.sqrt(d_k);
    var a = new Float64Array(t_k); // (t_k,) the weights of one head
    for (var h = 0; h < n_heads; h++) {
      var q = i * d_model + h * d_k, max = -Infinity, sum = 0, j;
      for (j = 0; j < t_k; j++) {
        a[j] = dot(Q, q, K, j * d_model + h * d_k, d_k) * scale;
        if (a[j] > max) max = a[j];
      }
      for (j = 0; j < t_k; j++) { a[j] = Math.exp(a[j] - max); sum += a[j]; }
      for (j = 0; j < t_k; j++) a[j] /= sum;
      for (var c = 0; c < d_k; c++) {
        var y = 0;
        for (j = 0; j < t_k; j++) y += a[j] * V[j * d_model + h * d_k + c];
        Y[q + c] = y;
      }
      if (A) A[h].set(a);
    }
  }

  /* The output projection W_O of the concatenated heads: (t, d_model) → (t, d_model). */
  function outProject(Y, t, attn, d_model) {
    return linear(Y, t, attn.out_proj.weight, attn.out_proj.bias, d_model, d_model);
  }

  /* Self-attention without a cache (the encoder): X (t, d_model) → (t, d_model). */
  function selfAttention(X, t, attn, c) {
    var d = c.d_model;
    var QKV = linear(X, t, attn.in_proj_weight, attn.in_proj_bias, d, 3 * d); // (t, 3·d_model)
    var Q = columns(QKV, t, 3 * d, 0, d); // (t, d_model)
    var K = columns(QKV, t, 3 * d, d, d); // (t, d_model)
    var V = columns(QKV, t, 3 * d, 2 * d, d); // (t, d_model)
    var Y = new Float32Array(t * d); // (t, d_model): the heads, concatenated
    for (var q = 0; q < t; q++) attend(Q, q, K, V, t, c.n_heads, c.d_k, Y, null);
    return outProject(Y, t, attn, d);
  }

  /* EncoderLayer: self-attention then feed-forward, each with its residual and LayerNorm. */
  function encoderLayer(X, t, layer, c) {
    var d = c.d_model;
    function norm(Z, which) { return layerNorm(Z, t, d, layer[which], c.eps); }
    function sa(Z) { return selfAttention(Z, t, layer.self_attn, c); }
    function ff(Z) { return feedForward(Z, t, layer.ffn, d, c.d_ff); }
    if (c.norm_first) { // x + Sublayer(Norm(x))
      addInPlace(X, sa(norm(X, "norm1")));
      return addInPlace(X, ff(norm(X, "norm2")));
    }
    X = norm(addInPlace(X, sa(X)), "norm1"); // Norm(x + Sublayer(x))
    return norm(addInPlace(X, ff(X)), "norm2");
  }

  // ============================================================ 4. The Transformer

  /* The sinusoidal positions P (max_len, d_model): P[pos, 2i] = sin(pos / 10000^(2i/d_model)),
   * P[pos, 2i+1] = cos of the same angle (minformer.positional.sinusoidal_encoding). */
  function sinusoidalPositions(max_len, d) {
    var P = new Float32Array(max_len * d); // (max_len, d_model)
    for (var pos = 0; pos < max_len; pos++) {
      for (var two_i = 0; two_i < d; two_i += 2) {
        var angle = pos / Math.pow(10000, two_i / d);
        P[pos * d + two_i] = Math.sin(angle);
        if (two_i + 1 < d) P[pos * d + two_i + 1] = Math.cos(angle);
      }
    }
    return P;
  }

  // The weights of one module as a tree: tree(w, "encoder.layers.0").self_attn.in_proj_weight.
  function tree(weights, prefix) {
    var root = {};
    Object.keys(weights).forEach(function (name) {
      if (name.indexOf(prefix + ".") !== 0) return;
      var parts = name.slice(prefix.length + 1).split("."), node = root;
      for (var i = 0; i < parts.length - 1; i++) node = node[parts[i]] = node[parts[i]] || {};
      node[parts[parts.length - 1]] = weights[name].data;
    });
    return root;
  }

  function expectShape(weights, name, shape) {
    var w = weights[name];
    if (!w) throw new Error("model.json has no tensor " + name + ": it does not fit its config");
    if (w.shape.join(",") !== shape.join(",")) {
      throw new Error("tensor " + name + " has shape (" + w.shape + "), the config gives (" + shape + ")");
    }
  }

  /* transformer.Transformer: encode(source ids) → memory; step(...) → next-token logits. */
  function Transformer(config, weights) {
    var c = this.config = {
      d_model: config.d_model, n_heads: config.n_heads, d_k: config.d_model / config.n_heads,
      d_ff: config.d_ff, vocab: config.vocab_size, max_len: config.max_len,
      norm_first: config.norm_first, eps: config.layer_norm_eps
    };
    ["d_model", "d_ff", "vocab"].forEach(function (name) { // linear() works four rows at a time
      if (c[name] % 4) {
        throw new Error("this engine needs " + name + " to be a multiple of 4; got " + c[name]);
      }
    });
    expectShape(weights, "src_embed.weight", [c.vocab, c.d_model]);
    this.E = weights["src_embed.weight"].data; // (vocab, d_model), shared by target and output
    if (config.positions === "sinusoidal") this.P = sinusoidalPositions(c.max_len, c.d_model);
    else this.P = weights["src_embed.positions.weight"].data; // (max_len, d_model), learned
    this.encoderLayers = [];
    this.decoderLayers = [];
    for (var l = 0; l < config.n_layers; l++) {
      expectShape(weights, "encoder.layers." + l + ".self_attn.in_proj_weight", [3 * c.d_model, c.d_model]);
      this.encoderLayers.push(tree(weights, "encoder.layers." + l));
    }
    for (l = 0; l < config.n_decoder_layers; l++) {
      expectShape(weights, "decoder.layers." + l + ".cross_attn.in_proj_weight", [3 * c.d_model, c.d_model]);
      this.decoderLayers.push(tree(weights, "decoder.layers." + l));
    }
    this.encoderNorm = config.final_norm ? tree(weights, "encoder").norm : null;
    this.decoderNorm = config.final_norm ? tree(weights, "decoder").norm : null;
    this.out = config.tie_embeddings ? null : tree(weights, "out"); // (vocab, d_model) and (vocab,)
  }

  /* TokenEmbedding: token ids[i] at position positions[i] → row i of
   * X (t, d_model) = E[ids] · √d_model + P[positions]. */
  Transformer.prototype.embed = function (ids, positions) {
    var d = this.config.d_model, scale = Math.sqrt(d);
    var X = new Float32Array(ids.length * d); // (t, d_model)
    for (var i = 0; i < ids.length; i++) {
      var e = ids[i] * d, p = positions[i] * d;
      for (var j = 0; j < d; j++) X[i * d + j] = this.E[e + j] * scale + this.P[p + j];
    }
    return X;
  };

  /* Encoder: source ids (s,) → memory (s, d_model). */
  Transformer.prototype.encode = function (ids) {
    var c = this.config, s = ids.length;
    var X = this.embed(ids, ids.map(function (_, i) { return i; })); // (s, d_model), positions 0 … s-1
    for (var l = 0; l < this.encoderLayers.length; l++) X = encoderLayer(X, s, this.encoderLayers[l], c);
    return this.encoderNorm ? layerNorm(X, s, c.d_model, this.encoderNorm, c.eps) : X;
  };

  /* A KV cache for `rows` target sequences (beams) decoding from one source's memory (s, d_model).
   * Per decoder layer: the self-attention's K and V of every token fed so far, one
   * (capacity, d_model) array per row (capacity: the most tokens that will be fed), and the
   * cross-attention's K and V of the memory, (s, d_model), projected once and shared by all rows. */
  Transformer.prototype.newCache = function (memory, s, rows, capacity) {
    var c = this.config, d = c.d_model;
    var cache = { length: 0, s: s, layers: [] };
    for (var l = 0; l < this.decoderLayers.length; l++) {
      var attn = this.decoderLayers[l].cross_attn;
      var KV = linear(memory, s, attn.in_proj_weight, attn.in_proj_bias, d, 2 * d, d); // (s, 2·d_model)
      var K = columns(KV, s, 2 * d, 0, d); // (s, d_model)
      var V = columns(KV, s, 2 * d, d, d); // (s, d_model)
      var self = { K: [], V: [] };
      for (var r = 0; r < rows; r++) {
        self.K.push(new Float32Array(capacity * d)); // (capacity, d_model), rows 0 … length-1 in use
        self.V.push(new Float32Array(capacity * d));
      }
      cache.layers.push({ self: self, crossK: K, crossV: V, s: s });
    }
    return cache;
  };

  /* Keep the cache's rows `index` in that order (beam search: each row follows its prefix). */
  Transformer.prototype.reorderCache = function (cache, index) {
    cache.layers.forEach(function (layer) {
      layer.self.K = index.map(function (r) { return layer.self.K[r].slice(); });
      layer.self.V = index.map(function (r) { return layer.self.V[r].slice(); });
    });
  };

  /* Masked self-attention of one new token per row, with the cache: the rows `live` of X
   * (t = live.length, d_model) are the new tokens at position cache.length; their K and V join
   * the cache, and each attends to the cache.length + 1 tokens of its own row. */
  Transformer.prototype.cachedSelfAttention = function (X, live, attn, layerCache, pos) {
    var c = this.config, d = c.d_model, t = live.length;
    var QKV = linear(X, t, attn.in_proj_weight, attn.in_proj_bias, d, 3 * d); // (t, 3·d_model)
    var Q = columns(QKV, t, 3 * d, 0, d); // (t, d_model)
    var Y = new Float32Array(t * d); // (t, d_model)
    for (var i = 0; i < t; i++) {
      var K = layerCache.self.K[live[i]], V = layerCache.self.V[live[i]]; // (capacity, d_model)
      K.set(QKV.subarray(i * 3 * d + d, i * 3 * d + 2 * d), pos * d); // row pos: the new token's k
      V.set(QKV.subarray(i * 3 * d + 2 * d, i * 3 * d + 3 * d), pos * d); // and its v
      attend(Q, i, K, V, pos + 1, c.n_heads, c.d_k, Y, null);
    }
    return outProject(Y, t, attn, d);
  };

  /* Cross-attention: queries from the decoder X (t, d_model), keys and values of the memory from
   * the cache. A (when given) receives A[i][h], each row's weights over the s source tokens. */
  Transformer.prototype.crossAttention = function (X, t, attn, layerCache, A) {
    var c = this.config, d = c.d_model;
    var Q = linear(X, t, attn.in_proj_weight, attn.in_proj_bias, d, d, 0); // (t, d_model)
    var Y = new Float32Array(t * d); // (t, d_model)
    for (var i = 0; i < t; i++) {
      attend(Q, i, layerCache.crossK, layerCache.crossV, layerCache.s, c.n_heads, c.d_k, Y, A ? A[i] : null);
    }
    return outProject(Y, t, attn, d);
  };

  /* DecoderLayer: masked self-attention, cross-attention, feed-forward (residuals + norms). */
  Transformer.prototype.decoderLayer = function (X, live, layer, layerCache, pos, A) {
    var self = this, c = this.config, d = c.d_model, t = live.length;
    function norm(Z, which) { return layerNorm(Z, t, d, layer[which], c.eps); }
    function sa(Z) { return self.cachedSelfAttention(Z, live, layer.self_attn, layerCache, pos); }
    function ca(Z) { return self.crossAttention(Z, t, layer.cross_attn, layerCache, A); }
    function ff(Z) { return feedForward(Z, t, layer.ffn, d, c.d_ff); }
    if (c.norm_first) { // x + Sublayer(Norm(x))
      addInPlace(X, sa(norm(X, "norm1")));
      addInPlace(X, ca(norm(X, "norm2")));
      return addInPlace(X, ff(norm(X, "norm3")));
    }
    X = norm(addInPlace(X, sa(X)), "norm1"); // Norm(x + Sublayer(x))
    X = norm(addInPlace(X, ca(X)), "norm2");
    return norm(addInPlace(X, ff(X)), "norm3");
  };

  /* One decoding step (Transformer.decode with a cache): tokens[i] is the newest token of cache
   * row live[i], at position cache.length. Returns the logits (t, vocab) of the next token,
   * t = live.length. With `attention` (an array), also the cross-attention of each row i:
   * attention[i][layer][head] is its (s,) weights over the source. */
  Transformer.prototype.step = function (cache, tokens, live, attention) {
    var c = this.config, t = live.length, pos = cache.length, i, h;
    var X = this.embed(tokens, tokens.map(function () { return pos; })); // (t, d_model), every row at pos
    if (attention) {
      for (i = 0; i < t; i++) attention[i] = [];
    }
    for (var l = 0; l < this.decoderLayers.length; l++) {
      var A = null;
      if (attention) { // A[i][h]: (s,) for row i, head h
        A = [];
        for (i = 0; i < t; i++) {
          A.push([]);
          for (h = 0; h < c.n_heads; h++) A[i].push(new Float64Array(cache.s));
          attention[i].push(A[i]);
        }
      }
      X = this.decoderLayer(X, live, this.decoderLayers[l], cache.layers[l], pos, A);
    }
    cache.length = pos + 1;
    if (this.decoderNorm) X = layerNorm(X, t, c.d_model, this.decoderNorm, c.eps);
    if (this.out) return linear(X, t, this.out.weight, this.out.bias, c.d_model, c.vocab);
    return linear(X, t, this.E, null, c.d_model, c.vocab); // (t, vocab): h Eᵀ, tied
  };

  // ============================================================ 5. Search

  function argmax(logits, row, vocab) {
    var best = 0, bestValue = -Infinity;
    for (var v = 0; v < vocab; v++) {
      if (logits[row * vocab + v] > bestValue) { bestValue = logits[row * vocab + v]; best = v; }
    }
    return best;
  }

  function logSoftmax(logits, row, vocab) { // (vocab,) log P(next token | prefix)
    var max = -Infinity, sum = 0, v;
    for (v = 0; v < vocab; v++) if (logits[row * vocab + v] > max) max = logits[row * vocab + v];
    for (v = 0; v < vocab; v++) sum += Math.exp(logits[row * vocab + v] - max);
    var logZ = max + Math.log(sum), out = new Float64Array(vocab);
    for (v = 0; v < vocab; v++) out[v] = logits[row * vocab + v] - logZ;
    return out;
  }

  /* GNMT's length penalty lp(|y|) = ((5 + |y|) / 6)^α (decode.gnmt_length_penalty). */
  function lengthPenalty(length, alpha) {
    return Math.pow((5 + length) / 6, alpha);
  }

  var LOOP_COPIES = 3; // decode.LOOP_COPIES

  /* decode.loop_tokens: the tokens that, appended to ids, would end them with `copies`
   * back-to-back copies of one n-gram (any n ≥ 1), sorted. For unit length n: the last
   * copies·n - 1 ids repeat with period n, and the token n places back would complete it. */
  function loopTokens(ids, copies) {
    copies = copies || LOOP_COPIES;
    var m = ids.length, found = [];
    for (var n = 1; n <= Math.floor((m + 1) / copies); n++) {
      var a = m + 1 - copies * n, b = m + 1 - (copies - 1) * n, same = true; // [a, m-n) vs [b, m)
      for (var j = 0; j < m - n - a; j++) {
        if (ids[a + j] !== ids[b + j]) { same = false; break; }
      }
      if (same && found.indexOf(ids[m - n]) < 0) found.push(ids[m - n]);
    }
    return found.sort(function (x, y) { return x - y; });
  }

  /* The loop guard and the length floor on one row of logits (row r, prefix `out` without
   * <bos>, n tokens so far): with ids.noLoops every loop token is at -inf, and a row that has
   * begun to repeat (some token is forbidden) may end before the floor; else no <eos> before
   * ids.minLen tokens (decode._guard_loops, then decode._forbid_early_eos). */
  function guardRow(logits, r, V, out, n, ids) {
    var free = false;
    if (ids.noLoops) {
      var banned = loopTokens(out);
      for (var i = 0; i < banned.length; i++) logits[r * V + banned[i]] = -Infinity;
      free = banned.length > 0;
    }
    if (n < ids.minLen && !free) logits[r * V + ids.eos] = -Infinity; // too short to end yet
  }

  /* decode.greedy_search for one sentence: the most likely token at each step, until <eos> or
   * maxLen tokens. Returns {ids, attention}: the ids without <bos>, <eos> included when emitted,
   * and for each of them the cross-attention [layer][head] (s,) of the step that chose it. */
  function greedySearch(model, memory, s, maxLen, ids) {
    var cache = model.newCache(memory, s, 1, maxLen);
    var out = [], attention = [], token = ids.bos;
    for (var n = 0; n < maxLen; n++) {
      var A = [];
      var logits = model.step(cache, [token], [0], A); // (1, vocab)
      guardRow(logits, 0, model.config.vocab, out, n, ids); // the loop guard and the floor
      token = argmax(logits, 0, model.config.vocab);
      out.push(token);
      attention.push(A[0]);
      if (token === ids.eos) break;
    }
    return { ids: out, attention: attention };
  }

  // Insert candidate (score, index) into the k best so far, sorted best first; ties keep the
  // earlier candidate first.
  function keepTop(top, k, score, index) {
    if (top.length === k && !(score > top[k - 1][0])) return;
    var at = top.length;
    while (at > 0 && score > top[at - 1][0]) at--;
    top.splice(at, 0, [score, index]);
    if (top.length > k) top.pop();
  }

  /* The k best one-token extensions of the beams, [score, r · V + token] best first (a finished
   * beam r has one: <pad> at log-probability 0, its score unchanged), and logP[r], the
   * log-probabilities (vocab,) of the next token after live beam r. */
  function bestExtensions(beams, logits, live, k, V, alpha, pad) {
    var top = [], logP = [];
    beams.forEach(function (b, r) {
      if (b.finished) {
        keepTop(top, k, b.logp / lengthPenalty(b.length, alpha), r * V + pad);
        return;
      }
      logP[r] = logSoftmax(logits, live.indexOf(r), V); // (vocab,)
      var lp = lengthPenalty(b.length + 1, alpha);
      for (var v = 0; v < V; v++) keepTop(top, k, (b.logp + logP[r][v]) / lp, r * V + v);
    });
    return { top: top, logP: logP };
  }

  /* Beam r extended by `token`: its prefix ys, log P, length |y| (<eos> included), whether it is
   * finished, the beam it came from, and the cross-attention of each of its tokens. */
  function extend(b, r, token, logP, attention, eos) {
    var ys = b.ys.concat([token]);
    if (b.finished) { // extended by <pad>: nothing else changes
      return { ys: ys, logp: b.logp, length: b.length, finished: true, from: r, attention: b.attention };
    }
    return { ys: ys, logp: b.logp + logP[token], length: b.length + 1, finished: token === eos, from: r,
      attention: b.attention.concat([attention]) };
  }

  /* decode.beam_search for one sentence: the k best prefixes, ranked by log P / lp(|y|). A
   * prefix that emitted <eos> is finished: it stays in the beam with its score fixed, and the
   * best finished output is also kept aside. The search stops when no live prefix can beat
   * it, even at maxLen tokens, or after maxLen tokens. Returns {ids, score, attention} (the
   * cross-attention of each output token, as greedySearch's). */
  function beamSearch(model, memory, s, k, maxLen, alpha, ids) {
    var V = model.config.vocab;
    var cache = model.newCache(memory, s, 1, maxLen); // the k beams start the same: one row, then k
    var beams = [{ ys: [ids.bos], logp: 0, length: 0, finished: false, attention: [] }];
    var best = -Infinity, bestBeam = null;
    function keepIfBest(b) {
      var score = b.logp / lengthPenalty(b.length, alpha);
      if (score > best) { best = score; bestBeam = b; }
    }
    for (var n = 0; n < maxLen; n++) {
      var live = [], tokens = [], A = [];
      beams.forEach(function (b, r) {
        if (!b.finished) { live.push(r); tokens.push(b.ys[b.ys.length - 1]); }
      });
      var logits = model.step(cache, tokens, live, A); // (live, vocab); A[i]: row i's cross-attention
      for (var i = 0; i < live.length; i++) { // every live prefix has n tokens
        guardRow(logits, i, V, beams[live[i]].ys.slice(1), n, ids);
      }
      var found = bestExtensions(beams, logits, live, k, V, alpha, ids.pad);
      beams = found.top.map(function (entry) {
        var r = Math.floor(entry[1] / V), token = entry[1] % V;
        return extend(beams[r], r, token, found.logP[r], A[live.indexOf(r)], ids.eos);
      });
      model.reorderCache(cache, beams.map(function (b) { return b.from; }));
      var reachable = -Infinity; // the best log P of a live prefix
      beams.forEach(function (b) {
        if (b.finished) keepIfBest(b); // keep aside the best finished output
        else reachable = Math.max(reachable, b.logp);
      });
      // done: no live prefix can reach the best finished score, even at length maxLen
      if (best >= reachable / lengthPenalty(maxLen, alpha)) break;
    }
    beams.forEach(function (b) { // no finished output beats it: the best live prefix
      if (!b.finished) keepIfBest(b);
    });
    return { ids: bestBeam.ys.slice(1, 1 + bestBeam.length), score: best, attention: bestBeam.attention };
  }

  // ============================================================ 6. The translator

  var CONFIG_KEYS = {
    vocab_size: "int", d_model: "int", n_heads: "int", d_ff: "int", n_layers: "int",
    n_decoder_layers: "int", max_len: "int", pad_id: "int", bos_id: "int", eos_id: "int",
    max_source_tokens: "int", layer_norm_eps: "number", norm_first: "boolean",
    final_norm: "boolean", tie_embeddings: "boolean", positions: "string", activation: "string"
  };

  function checkMeta(meta) {
    if (!meta || meta.format !== FORMAT) throw new Error("model.json is not a minformer browser export");
    if (meta.version !== VERSION) {
      throw new Error("model.json is export version " + meta.version + "; this translator.js reads version " +
        VERSION + " (regenerate both with make export-translator)");
    }
    Object.keys(CONFIG_KEYS).forEach(function (key) {
      var value = meta.config[key], kind = CONFIG_KEYS[key];
      var ok = kind === "int" ? Number.isInteger(value) && value >= 0 : typeof value === kind;
      if (!ok) {
        throw new Error("model.json's config." + key + " must be " + kind + "; got " + JSON.stringify(value));
      }
    });
    if (meta.config.activation !== "relu" || ["sinusoidal", "learned"].indexOf(meta.config.positions) < 0) {
      throw new Error("this engine runs activation relu with sinusoidal or learned positions; " +
        "model.json has " + meta.config.activation + " and " + meta.config.positions);
    }
  }

  /* A translator from model.json (parsed or text) and the bytes of weights.bin (ArrayBuffer or
   * Uint8Array). Checks sizes and shapes, not the sha256 (load does that). */
  function Translator(meta, weightsBytes) {
    if (typeof meta === "string") meta = JSON.parse(meta);
    checkMeta(meta);
    var bytes = weightsBytes instanceof Uint8Array ? weightsBytes : new Uint8Array(weightsBytes);
    this.meta = meta;
    this.config = meta.config;
    this.tokenizer = new BPETokenizer(meta.tokenizer);
    this.model = new Transformer(meta.config, readWeights(meta, bytes));
  }

  /* Translator.encode_sources for one sentence: its ids, en <eos>, or an error naming the
   * problem (not a string, empty, too long). */
  Translator.prototype.encodeSource = function (sentence) {
    if (typeof sentence !== "string") {
      throw new TypeError("the sentence must be a string; got " + typeof sentence);
    }
    if (!pythonStrip(sentence)) throw new RangeError("the sentence is empty: nothing to translate");
    var ids = this.tokenizer.encode(sentence, { addEos: true });
    var most = this.config.max_source_tokens;
    if (ids.length > most) {
      throw new RangeError("the sentence is too long: " + ids.length +
        " tokens, and this model takes at most " +
        most + " (about " + Math.floor(most / 2) + " words); split it");
    }
    return ids;
  };

  /* Translator.detokenize: the ids up to the first <eos> (or <pad>), decoded, stripped. */
  Translator.prototype.detokenize = function (ids) {
    var tok = this.tokenizer, cut = [];
    for (var i = 0; i < ids.length && ids[i] !== tok.eosId && ids[i] !== tok.padId; i++) cut.push(ids[i]);
    return pythonStrip(tok.decode(cut, true));
  };

  /* The cross-attention of `output` (ids, <eos> included) for source ids `source`, read once
   * more through the decoder (as minformer.explorer does): weights[layer][head] is a
   * Float32Array (t_out, s), row i the attention paid while predicting output token i. */
  Translator.prototype.crossAttention = function (source, output) {
    var model = this.model, s = source.length, rows = [];
    var cache = model.newCache(model.encode(source), s, 1, output.length), token = this.tokenizer.bosId;
    for (var i = 0; i < output.length; i++) {
      var A = [];
      model.step(cache, [token], [0], A);
      rows.push(A[0]);
      token = output[i];
    }
    return packAttention(rows, s);
  };

  // rows[i][layer][head] (s,), one per output token → weights[layer][head] (t_out, s).
  function packAttention(rows, s) {
    var t = rows.length, layers = t ? rows[0].length : 0, heads = t ? rows[0][0].length : 0, weights = [];
    for (var l = 0; l < layers; l++) {
      weights.push([]);
      for (var h = 0; h < heads; h++) {
        var W = new Float32Array(t * s); // (t_out, s)
        for (var i = 0; i < t; i++) W.set(rows[i][l][h], i * s);
        weights[l].push(W);
      }
    }
    return { layers: layers, heads: heads, t: t, s: s, weights: weights };
  }

  /* Translator.translate for one sentence (Translator.search's rules): greedy when beamSize is 1,
   * else beam search with length penalty α = lengthPenalty (default 0.6); at most maxNewTokens
   * output tokens (default 2 · s + 10, and at most max_len - 1); no <eos> before
   * ⌊minLengthRatio · s⌋ - minLengthSlack tokens (minLengthRatio 0, the default: no floor).
   * noLoops (default false): the loop guard of decode.greedy_search/beam_search(no_loops=True).
   * splitClauses (default false): clause by clause at safe split points, as
   * Translator.output_ids(split_clauses=True): each piece translated alone, the translations
   * joined, the output ids those of the joined text then <eos>, its attention read through the
   * model with the whole sentence (crossAttention), and `clauses` [{english, spanish}]. Returns
   * {text, source: {ids, tokens}, output: {ids, tokens}, attention (unless attention: false),
   * score (beam, whole sentences), ms}. */
  Translator.prototype.translate = function (sentence, options) {
    options = options || {};
    var beamSize = options.beamSize === undefined ? 1 : options.beamSize;
    var alpha = options.lengthPenalty === undefined ? 0.6 : options.lengthPenalty;
    if (!Number.isInteger(beamSize) || beamSize < 1) {
      throw new RangeError("beamSize must be an int ≥ 1; got " + beamSize);
    }
    if (!(alpha >= 0) || !isFinite(alpha)) {
      throw new RangeError("lengthPenalty must be a finite number ≥ 0; got " + alpha);
    }
    var ratio = options.minLengthRatio === undefined ? 0 : options.minLengthRatio;
    if (typeof ratio !== "number" || !(ratio >= 0 && ratio <= 4)) {
      throw new RangeError("minLengthRatio must be a number in [0, 4]; got " + ratio);
    }
    var slack = options.minLengthSlack === undefined ? 0 : options.minLengthSlack;
    if (!Number.isInteger(slack) || slack < 0) {
      throw new RangeError("minLengthSlack must be an int ≥ 0; got " + slack);
    }
    var noLoops = options.noLoops === undefined ? false : options.noLoops;
    var split = options.splitClauses === undefined ? false : options.splitClauses;
    if (typeof noLoops !== "boolean") throw new TypeError("noLoops must be true or false; got " + noLoops);
    if (typeof split !== "boolean") throw new TypeError("splitClauses must be true or false; got " + split);
    var started = Date.now();
    var source = this.encodeSource(sentence), s = source.length;
    var tok = this.tokenizer;
    var pieces = split ? splitClauses(sentence) : null;
    if (pieces && pieces.length > 1) { // clause by clause: each piece alone, then joined
      var self = this, pieceOptions = {};
      Object.keys(options).forEach(function (key) { pieceOptions[key] = options[key]; });
      pieceOptions.splitClauses = false;
      pieceOptions.attention = false;
      var texts = pieces.map(function (p) { return self.translate(p[0], pieceOptions).text; });
      var joined = tok.encode(joinClauses(pieces, texts)).concat([tok.eosId]);
      var whole = {
        text: this.detokenize(joined),
        source: { ids: source, tokens: source.map(function (i) { return tok.idToToken(i); }) },
        output: { ids: joined, tokens: joined.map(function (i) { return tok.idToToken(i); }) },
        clauses: pieces.map(function (p, i) { return { english: p[0], spanish: texts[i] }; })
      };
      if (options.attention !== false) whole.attention = this.crossAttention(source, joined);
      whole.ms = Date.now() - started;
      return whole;
    }
    var maxLen = options.maxNewTokens === undefined ? 2 * s + 10 : options.maxNewTokens;
    if (!Number.isInteger(maxLen) || maxLen < 1) {
      throw new RangeError("maxNewTokens must be an int ≥ 1; got " + maxLen);
    }
    maxLen = Math.min(maxLen, this.config.max_len - 1); // the output positions end at max_len - 1
    var ids = { bos: tok.bosId, eos: tok.eosId, pad: tok.padId, noLoops: noLoops,
      minLen: ratio === 0 ? 0 : Math.max(0, Math.floor(ratio * s) - slack) };
    var memory = this.model.encode(source); // (s, d_model)
    var found = beamSize === 1 ? greedySearch(this.model, memory, s, maxLen, ids)
      : beamSearch(this.model, memory, s, beamSize, maxLen, alpha, ids);
    var output = found.ids;
    var result = {
      text: this.detokenize(output),
      source: { ids: source, tokens: source.map(function (i) { return tok.idToToken(i); }) },
      output: { ids: output, tokens: output.map(function (i) { return tok.idToToken(i); }) }
    };
    if (found.score !== undefined) result.score = found.score;
    if (options.attention !== false) result.attention = packAttention(found.attention, s);
    result.ms = Date.now() - started;
    return result;
  };

  // ------------------------------------------------------------ clause by clause

  // long_sentences.SPLIT_POINT and MIN_CLAUSE_WORDS
  var SPLIT_POINT = /(,|;) (?=(?:and|but|so|or|yet|because|while|although|though|whereas) )|(;) (?=[a-zA-Z])/g;
  var MIN_CLAUSE_WORDS = 4;
  var PYTHON_SPACES = new RegExp("[" + SPACE + "]+");

  function pythonWords(text) { // Python's str.split()
    return text.split(PYTHON_SPACES).filter(function (w) { return w !== ""; });
  }

  function endsWithStop(text) {
    return /\.$/.test(text) && !/\.\.$/.test(text);
  }

  /* long_sentences.split_clauses: [[text to translate, mark before it, capitalized], ...]. */
  function splitClauses(sentence) {
    var text = pythonWords(sentence).join(" ");
    if (!endsWithStop(text) && !/[A-Za-z0-9]$/.test(text)) return [[text, "", false]];
    var cuts = [], m;
    SPLIT_POINT.lastIndex = 0;
    while ((m = SPLIT_POINT.exec(text)) !== null) cuts.push([m.index, m.index + m[0].length, m[1] || m[2]]);
    var kept = [], start = 0;
    for (var i = 0; i < cuts.length; i++) {
      var end = i + 1 < cuts.length ? cuts[i + 1][0] : text.length;
      if (pythonWords(text.slice(start, cuts[i][0])).length >= MIN_CLAUSE_WORDS &&
          pythonWords(text.slice(cuts[i][1], end)).length >= MIN_CLAUSE_WORDS) {
        kept.push(cuts[i]);
        start = cuts[i][1];
      }
    }
    while (kept.length && pythonWords(text.slice(kept[kept.length - 1][1])).length < MIN_CLAUSE_WORDS) kept.pop();
    if (!kept.length) return [[text, "", false]];
    var pieces = [], before = "";
    start = 0;
    kept.concat([[text.length, text.length, ""]]).forEach(function (cut) {
      var piece = pythonStrip(text.slice(start, cut[0]));
      if (cut[0] < text.length && !/\.$/.test(piece)) piece += ".";
      var capital = piece[0] !== piece[0].toUpperCase() && piece[0] === piece[0].toLowerCase();
      if (capital) piece = piece[0].toUpperCase() + piece.slice(1);
      pieces.push([piece, before, capital]);
      start = cut[1];
      before = cut[2];
    });
    return pieces;
  }

  function lowerFirstLetter(text) { // long_sentences._lower_first_letter
    var i = text.match(/^[¿¡«"“'(]*/)[0].length;
    return i < text.length ? text.slice(0, i) + text[i].toLowerCase() + text.slice(i + 1) : text;
  }

  /* long_sentences.join_clauses: the pieces' translations joined back into one sentence. */
  function joinClauses(pieces, translations) {
    var out = "";
    pieces.forEach(function (p, i) {
      var text = pythonWords(translations[i]).join(" ");
      if (p[2]) text = lowerFirstLetter(text);
      if (out) out = (endsWithStop(out) ? out.slice(0, -1) : out) + p[1] + " " + text;
      else out = text;
    });
    return out;
  }

  // ------------------------------------------------------------ loading

  function isNode() {
    return typeof process !== "undefined" && process.versions != null && process.versions.node != null;
  }

  function joinPath(base, name) {
    return base === "" ? name : base.replace(/\/?$/, "/") + name;
  }

  // The bytes of one file: fs in Node (a path, not a URL), fetch elsewhere, read as a stream so
  // onProgress(bytesRead, total) can follow it.
  function readFile(url, total, onProgress) {
    if (isNode() && typeof require === "function" && !/^[a-z]+:\/\//i.test(url)) {
      return require("fs").promises.readFile(url).then(function (buf) {
        var bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
        if (total && bytes.byteLength !== total) throw wrongLength(url, bytes.byteLength, total);
        if (onProgress) onProgress(bytes.byteLength, total || bytes.byteLength);
        return bytes;
      });
    }
    return fetch(url).then(function (response) {
      if (!response.ok) throw new Error("could not download " + url + " (HTTP " + response.status + ")");
      if (!response.body || !total) {
        return response.arrayBuffer().then(function (b) {
          if (total && b.byteLength !== total) throw wrongLength(url, b.byteLength, total);
          if (onProgress) onProgress(b.byteLength, total || b.byteLength);
          return new Uint8Array(b);
        });
      }
      var bytes = new Uint8Array(total), at = 0, reader = response.body.getReader();
      function pump() {
        return reader.read().then(function (part) {
          if (part.done) {
            if (at !== total) throw wrongLength(url, at, total);
            return bytes;
          }
          if (at + part.value.byteLength > total) throw wrongLength(url, "more than " + total, total);
          bytes.set(part.value, at);
          at += part.value.byteLength;
          if (onProgress) onProgress(at, total);
          return pump();
        });
      }
      return pump();
    }, function (error) {
      throw new Error("could not download " + url + " (" + error.message + "): a page opened from file:// " +
        "may not fetch files in this browser; serve the book over http");
    });
  }

  function wrongLength(url, found, total) {
    return new Error(url + " has " + found + " bytes but model.json says " + total +
      ": the two files come from different exports (run make export-translator)");
  }

  function hexDigest(buffer) {
    return Array.prototype.map.call(new Uint8Array(buffer), function (b) {
      return (b < 16 ? "0" : "") + b.toString(16);
    }).join("");
  }

  // The sha256 of bytes, or null where Web Crypto is missing (a page not in a secure context).
  function sha256(bytes) {
    var subtle = typeof crypto !== "undefined" && crypto.subtle;
    if (!subtle) return Promise.resolve(null);
    return subtle.digest("SHA-256", bytes).then(hexDigest);
  }

  /* A translator from model.json (parsed or text) and the bytes of weights.bin, checked first:
   * their length, and their sha256 against model.json's where Web Crypto exists (options.verify
   * false: not the sha256). A Promise; `new Translator(...)` is the same without the checks. */
  function create(meta, weightsBytes, options) {
    if (typeof meta === "string") meta = JSON.parse(meta);
    checkMeta(meta);
    var bytes = weightsBytes instanceof Uint8Array ? weightsBytes : new Uint8Array(weightsBytes);
    if (bytes.byteLength !== meta.weights.bytes) {
      return Promise.reject(wrongLength(meta.weights.file, bytes.byteLength, meta.weights.bytes));
    }
    var check = options && options.verify === false ? Promise.resolve(null) : sha256(bytes);
    return check.then(function (digest) {
      if (digest !== null && digest !== meta.weights.sha256) {
        throw new Error(meta.weights.file + " is damaged or from another export: sha256 " +
          digest.slice(0, 12) + "…, model.json says " + meta.weights.sha256.slice(0, 12) + "…");
      }
      return new Translator(meta, bytes);
    });
  }

  /* Load model.json and weights.bin from `base` (a URL or, in Node, a folder) and build the
   * translator with create(). options: onProgress(bytesRead, total) while the weights download;
   * verify (default true): compare weights.bin with model.json's sha256, where Web Crypto exists. */
  function load(base, options) {
    options = options || {};
    var meta;
    return readFile(joinPath(base, "model.json"), 0, null).then(function (bytes) {
      meta = JSON.parse(new TextDecoder().decode(bytes));
      checkMeta(meta);
      return readFile(joinPath(base, meta.weights.file), meta.weights.bytes, options.onProgress);
    }).then(function (bytes) {
      return create(meta, bytes, options);
    });
  }

  /* null when this JavaScript engine has what the translator needs, else the reason. */
  function unsupported() {
    try {
      if (typeof TextEncoder === "undefined" || typeof Float32Array === "undefined") {
        return "no TextEncoder or typed arrays";
      }
      if (typeof Promise === "undefined" || typeof Map === "undefined") return "no Promise or Map";
      pretokenizer(); // Unicode property escapes
      return null;
    } catch (e) {
      return "its regular expressions lack Unicode property escapes (\\p{L})";
    }
  }

  return {
    load: load,
    create: create,
    Translator: Translator,
    BPETokenizer: BPETokenizer,
    Transformer: Transformer,
    greedySearch: greedySearch,
    beamSearch: beamSearch,
    lengthPenalty: lengthPenalty,
    loopTokens: loopTokens,
    splitClauses: splitClauses,
    joinClauses: joinClauses,
    unsupported: unsupported,
    factory: factory, // this whole API from nothing but globals: "(" + factory + ")()" in a Blob Worker
    FORMAT: FORMAT,
    VERSION: VERSION
  };
});
