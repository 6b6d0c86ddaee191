/* Chapter 12's figure, "ch12-masks": who may attend to whom in the three architectures. The
 * reader edits an input (and, for the encoder-decoder, a target), chooses how much padding each
 * has, picks the architecture and which of its attentions to look at, and sees the mask as a grid
 * with the attention weights that result in the allowed cells. Hovering, tapping or focusing a
 * query's row says which keys it reads.
 *
 *   encoder-only, self-attention          EncoderOnly.mask(ids) = padding_mask(tokens=ids, pad_id=0)
 *   decoder-only, masked self-attention   DecoderOnly.mask(ids) = causal_mask(t) & padding_mask(...)
 *   encoder-decoder, the encoder's self   Transformer.source_mask(src), over the source
 *   encoder-decoder, the decoder's masked Transformer.target_mask(tgt) = causal & padding, over
 *                                         <bos> and the target
 *   encoder-decoder, cross-attention      source_mask(src): target queries, source keys
 *
 * The vectors are made up: each word has a seeded vector (the same word, the same vector), <pad>
 * the zero vector (an nn.Embedding's padding_idx row), and chapter 8's sinusoidal position is
 * added to each; one pair W_Q, W_K (seeded) serves every attention, so that from one picture to
 * the next only the mask and the side the queries come from change. A = softmax(Q Kᵀ/√d) over
 * the allowed keys, as minformer.attention.scaled_dot_product_attention (zeros in a row with no
 * key).
 *
 * compute(state) is what the page shows (tests/test_figures_ch12.py compares its masks with
 * minformer's exactly, and its weights with scaled_dot_product_attention in float32).
 */
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory(require("./core.js"));
  else factory(root.MinformerFigures);
})(typeof globalThis !== "undefined" ? globalThis : this, function (F) {
  "use strict";

  var D = 8, SEED = 12, MAX_WORDS = 6, MAX_PADS = 3, PAD = "<pad>", BOS = "<bos>";
  var ARCHS = ["encoder-only", "decoder-only", "encoder-decoder"];
  var ATTNS = ["self", "masked", "cross"];
  var ATTN_NAMES = {self: "self-attention", masked: "masked self-attention", cross: "cross-attention"};
  var HAS = {"encoder-only": ["self"], "decoder-only": ["masked"], "encoder-decoder": ["self", "masked", "cross"]};
  var START = {arch: "encoder-only", attn: "self", source: "the cat sat down", srcPads: 2,
               target: "el gato se sentó", tgtPads: 0, query: 0};

  /* One W_Q and one W_K, (d, d), entries N(0, 1/d) from the seeded generator. */
  var W = (function () {
    var z = F.normals(F.mulberry32(SEED), 2 * D * D), s = 1 / Math.sqrt(D);
    function mat(off) {
      var M = [];
      for (var i = 0; i < D; i++) {
        M.push([]);
        for (var j = 0; j < D; j++) M[i].push(z[off + i * D + j] * s);
      }
      return M;
    }
    return {Q: mat(0), K: mat(D * D)};
  })();

  /* A word's vector: d normal numbers from a generator seeded by the word (FNV-1a of its UTF-16
   * code units); <pad> is the zero vector. */
  var cache = {};
  function embed(word) {
    if (word === PAD) return new Array(D).fill(0);
    if (!cache[word]) {
      var h = 0x811c9dc5;
      for (var i = 0; i < word.length; i++) h = Math.imul(h ^ word.charCodeAt(i), 0x01000193) >>> 0;
      cache[word] = Array.from(F.normals(F.mulberry32(h ^ SEED), D));
    }
    return cache[word].slice();
  }

  /* The words of a text (split at white space, at most MAX_WORDS; a typed "<pad>" is padding). */
  function words(text) {
    return String(text).trim().split(/\s+/).filter(Boolean).slice(0, MAX_WORDS);
  }

  function pads(k) { var p = []; for (var i = 0; i < k; i++) p.push(PAD); return p; }

  /* Token vectors: the word's vector plus the position's sinusoidal encoding (chapter 8). */
  function vectors(tokens) {
    var P = F.sinusoidal(tokens.length, D);
    return tokens.map(function (w, i) { return embed(w).map(function (x, k) { return x + P[i][k]; }); });
  }

  /* The rule of each picture, as the package writes it. */
  var RULES = {
    "encoder-only/self": "model.mask(ids) = padding_mask(tokens=ids, pad_id=0)",
    "decoder-only/masked": "model.mask(ids) = causal_mask(t) & padding_mask(tokens=ids, pad_id=0)",
    "encoder-decoder/self": "model.source_mask(src) = padding_mask(tokens=src, pad_id=0)",
    "encoder-decoder/masked": "model.target_mask(tgt) = causal_mask(t) & padding_mask(tokens=tgt, pad_id=0)",
    "encoder-decoder/cross": "model.source_mask(src), the same for every target query"
  };

  /* state: {arch, attn, source, srcPads, target, tgtPads}. Returns the query and key tokens, the
   * mask (true = may attend), the scores S and the weights A, the vectors and the rule. */
  function compute(state) {
    var attn = HAS[state.arch].indexOf(state.attn) >= 0 ? state.attn : HAS[state.arch][0];
    var src = words(state.source).concat(pads(state.srcPads));
    var tgt = [BOS].concat(words(state.target)).concat(pads(state.tgtPads));
    var decoderSide = state.arch === "encoder-decoder" && attn !== "self";
    var queries = decoderSide ? tgt : src, keys = attn === "cross" ? src : queries;
    var real = keys.map(function (w) { return w !== PAD; });
    var mask = queries.map(function () { return real.slice(); }); // padding_mask, broadcast
    if (attn === "masked") mask = F.andMasks(mask, F.causalMask(keys.length));
    var Xq = vectors(queries), Xk = attn === "cross" ? vectors(keys) : Xq;
    var Q = F.matmul(Xq, W.Q), K = F.matmul(Xk, W.K), scale = 1 / Math.sqrt(D);
    var S = Q.map(function (q) { return K.map(function (k) { return F.dot(q, k) * scale; }); });
    return {attn: attn, queries: queries, keys: keys, mask: mask, S: S, A: F.maskedSoftmax(S, mask),
            Xq: Xq, Xk: Xk, rule: RULES[state.arch + "/" + attn]};
  }

  /* What one query reads: its allowed keys with their weights, and the keys hidden from it. */
  function reads(r, i) {
    var seen = [], hidden = [];
    r.keys.forEach(function (w, j) {
      if (r.mask[i][j]) seen.push(j + " " + w + " " + F.fmt(r.A[i][j]));
      else hidden.push(j + " " + w);
    });
    return "Query " + i + " “" + r.queries[i] + "” reads " +
      (seen.length ? (seen.length === 1 ? "1 key: " : seen.length + " keys: ") + seen.join(", ") : "no key (its weights are all 0)") +
      (hidden.length ? "; hidden from it: " + hidden.join(", ") : "; nothing is hidden from it") + ".";
  }

  /* One sentence on the whole picture: its size and how many entries the mask allows. */
  function summary(arch, r) {
    var allowed = r.mask.reduce(function (n, row) { return n + row.filter(Boolean).length; }, 0);
    return arch + ", " + ATTN_NAMES[r.attn] + ": " + r.queries.length + " queries × " + r.keys.length +
      " keys, " + allowed + " of " + r.queries.length * r.keys.length + " pairs allowed.";
  }

  var CSS = [
    ".mff-ch12 td.mff-cell{min-width:2.3em;padding:2px 1px}",
    ".mff-ch12 td.mff-hide{background:var(--mff-soft);color:var(--mff-muted)}",
    ".mff-ch12 th.mff-key{vertical-align:bottom;font-weight:600;height:7.4em}",
    ".mff-ch12 th.mff-key span{writing-mode:vertical-rl;transform:rotate(180deg);display:block;margin:0 auto;",
    " max-height:6.5em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}",
    // the grid keeps its largest height (unused rows invisible) and the lines below keep theirs:
    // on the book's long page, a figure that changed height made the frame after a keystroke
    // take up to 100 ms to render
    ".mff-ch12 tr.mff-unused{visibility:hidden}",
    ".mff-ch12 p.mff-rule{min-height:2.8em}.mff-ch12 p.mff-reads{flex:1 1 14em;margin-top:2em;min-height:4.2em}",
    "@media (max-width:640px){.mff-ch12 p.mff-rule{min-height:5.6em}.mff-ch12 p.mff-reads{min-height:8.4em;margin-top:4px}}",
    ".mff-ch12 th.mff-read{color:var(--mff-accent)}",
    ".mff-ch12 tr.mff-on td.mff-cell{outline:2px solid var(--mff-accent);outline-offset:-2px}",
    ".mff-ch12 th button{font-size:12px;padding:1px 4px;max-width:7.5em;overflow:hidden;",
    " text-overflow:ellipsis;white-space:nowrap;text-align:right}",
    ".mff-ch12 tr.mff-on th button{border-color:var(--mff-accent);font-weight:600}",
    ".mff-ch12 input[type=text]{font:inherit;font-size:14px;width:11em;max-width:100%;color:var(--mff-fg);",
    " background:var(--mff-bg);border:1px solid var(--mff-line);border-radius:4px;padding:1px 4px}",
    ".mff-ch12 input:disabled{opacity:.75}",
    ".mff-ch12 .mff-dis{color:var(--mff-muted)}",
    ".mff-ch12 .mff-pair{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;flex-basis:100%}",
    "@media (max-width:480px){.mff-ch12 th button{max-width:5.8em;font-size:11px;padding:1px 2px}",
    " .mff-ch12 td.mff-cell{min-width:0;font-size:11px;padding:2px 1px}.mff-ch12 th.mff-key{font-size:11px}}"
  ].join("\n");

  function mount(root) {
    var state = Object.assign({}, START);
    root.classList.add("mff-ch12");
    if (!document.getElementById("mff-style-ch12")) {
      var style = document.createElement("style");
      style.id = "mff-style-ch12";
      style.textContent = CSS;
      document.head.appendChild(style);
    }
    root.appendChild(F.el("p", {class: "mff-title"}, ["Who may attend to whom: pick an architecture and an attention, edit the input"]));
    var controls = F.el("div", {class: "mff-controls"});
    function radios(legend, values, names, key) {
      var set = F.el("fieldset", {}, [F.el("legend", {}, [legend])]);
      var group = F.uid("r");
      var out = values.map(function (v, k) {
        var c = F.control("radio", names[k], {name: group, value: v, "data-input": key + "-" + v});
        set.appendChild(c.box);
        return c;
      });
      controls.appendChild(set);
      return out;
    }
    var archs = radios("architecture", ARCHS, ARCHS, "arch");
    var attns = radios("attention", ATTNS, ["self", "masked self", "cross"], "attn");
    var source = F.control("text", "input (source)", {"data-input": "source", spellcheck: "false", autocomplete: "off"});
    var srcPads = F.control("number", "pads", {min: 0, max: MAX_PADS, step: 1, "data-input": "srcPads"});
    var target = F.control("text", "target, after <bos>", {"data-input": "target", spellcheck: "false", autocomplete: "off"});
    var tgtPads = F.control("number", "pads", {min: 0, max: MAX_PADS, step: 1, "data-input": "tgtPads"});
    srcPads.input.setAttribute("aria-label", "pads after the input");
    tgtPads.input.setAttribute("aria-label", "pads after the target");
    // one box of controls (the PDF's still hides its children): each text with its pads
    [[source, srcPads], [target, tgtPads]].forEach(function (pair) {
      controls.appendChild(F.el("div", {class: "mff-pair"}, [pair[0].box, pair[1].box]));
    });
    root.appendChild(controls);
    source.input.value = state.source;
    target.input.value = state.target;
    srcPads.input.value = String(state.srcPads);
    tgtPads.input.value = String(state.tgtPads);

    var rule = F.el("p", {class: "mff-key mff-rule", "data-out": "rule"});
    var setRule = F.output(rule);
    root.appendChild(rule);
    var wrap = F.el("div", {});
    wrap.style.overflowX = "auto";
    var focusLine = F.el("p", {class: "mff-key mff-reads", "data-out": "focus"});
    var setFocus = F.output(focusLine);
    root.appendChild(F.el("div", {class: "mff-row"}, [wrap, focusLine])); // side by side where they fit
    root.appendChild(F.el("p", {class: "mff-note"}, [
      "Rows are queries, columns keys; · is a pair the mask forbids. Hover, tap or focus a query. ",
      "Weights softmax(q·k/√8) of made-up 8-d vectors (a seeded vector per word, <pad> zero, ",
      "plus chapter 8's position); one W_Q and W_K for every attention."]));

    var say = F.announcer(root), started = false, last = null;

    /* The grid is built once, at its largest (MAX_T queries by MAX_T keys): an update writes its
     * labels and cells and hides the rows and columns it does not use. (Rebuilding it at every
     * keystroke made the book's long page take up to 100 ms to render a frame.) */
    var MAX_T = 1 + MAX_WORDS + MAX_PADS;
    var built = (function () {
      var heads = [], keySpans = [], buttons = [], rows = [], cells = [];
      for (var j = 0; j < MAX_T; j++) {
        var span = F.el("span", {}, [""]);
        keySpans.push(span);
        heads.push(F.el("th", {scope: "col", class: "mff-key"}, [span]));
      }
      var head = F.el("tr", {}, [F.el("th", {scope: "col"}, ["q \\ k"])].concat(heads));
      for (var i = 0; i < MAX_T; i++) {
        (function (i) {
          var b = F.el("button", {type: "button", "data-query": String(i)}, [String(i)]); // a label keeps its height
          buttons.push(b);
          var tds = [];
          for (var j = 0; j < MAX_T; j++) tds.push(F.el("td", {class: "mff-cell", "data-out": "A-" + i + "-" + j}, [""]));
          cells.push(tds);
          var tr = F.el("tr", {}, [F.el("th", {scope: "row"}, [b])].concat(tds));
          tr.addEventListener("mouseenter", function () { pick(i); });
          tr.addEventListener("click", function () { pick(i); });
          b.addEventListener("focus", function () { pick(i); });
          b.addEventListener("keydown", function (ev) {
            var n = last ? last.queries.length : 1, k = {ArrowDown: 1, ArrowUp: -1}[ev.key];
            if (ev.key === "Home") k = -i;
            if (ev.key === "End") k = n - 1 - i;
            if (k === undefined) return;
            ev.preventDefault();
            buttons[Math.max(0, Math.min(n - 1, i + k))].focus();
          });
          rows.push(tr);
        })(i);
      }
      wrap.appendChild(F.el("table", {}, [F.el("thead", {}, [head]), F.el("tbody", {}, rows)]));
      return {heads: heads, keySpans: keySpans, buttons: buttons, rows: rows, cells: cells};
    })();

    function setText(e, text) { if (e.firstChild.nodeValue !== text) e.firstChild.nodeValue = text; }
    function setHidden(e, hide) { if (e.hidden !== hide) e.hidden = hide; }

    function build(r) {
      var b = built, tq = r.queries.length, tk = r.keys.length;
      for (var j = 0; j < MAX_T; j++) {
        setHidden(b.heads[j], j >= tk);
        if (j < tk) {
          setText(b.keySpans[j], j + " " + r.keys[j]);
          b.heads[j].title = r.keys[j];
        }
      }
      for (var i = 0; i < MAX_T; i++) {
        if (b.rows[i].classList.contains("mff-unused") !== (i >= tq)) b.rows[i].classList.toggle("mff-unused", i >= tq);
        if (i < tq) {
          setText(b.buttons[i], i + " " + r.queries[i]);
          b.buttons[i].title = r.queries[i];
          b.buttons[i].setAttribute("aria-label", "query " + i + ", " + r.queries[i]);
        }
        for (j = 0; j < MAX_T; j++) {
          var td = b.cells[i][j], use = i < tq && j < tk;
          setHidden(td, !use);
          if (!use) { td.classList.remove("mff-hide"); F.paint(td, ""); }
        }
      }
      return b;
    }

    function showQuery(r) {
      var i = Math.min(state.query, r.queries.length - 1);
      state.query = i;
      built.rows.forEach(function (tr, k) { tr.classList.toggle("mff-on", k === i); });
      built.heads.forEach(function (th, j) { th.classList.toggle("mff-read", j < r.keys.length && r.mask[i][j]); });
      var text = reads(r, i);
      setFocus(text);
      return text;
    }

    function pick(i) {
      if (i === state.query || !last) return;
      state.query = i;
      var text = showQuery(last);
      say(text);
    }

    function update() {
      var r = compute(state);
      state.attn = r.attn;
      last = r;
      archs.forEach(function (c) { c.input.checked = c.input.value === state.arch; });
      attns.forEach(function (c) {
        var has = HAS[state.arch].indexOf(c.input.value) >= 0;
        c.input.disabled = !has;
        c.label.classList.toggle("mff-dis", !has);
        c.input.checked = c.input.value === r.attn;
      });
      var decoderSide = state.arch === "encoder-decoder" && r.attn !== "self";
      target.input.disabled = tgtPads.input.disabled = !decoderSide;
      target.label.classList.toggle("mff-dis", !decoderSide);
      tgtPads.label.classList.toggle("mff-dis", !decoderSide);
      var b = build(r);
      r.A.forEach(function (row, i) {
        row.forEach(function (a, j) {
          var td = b.cells[i][j];
          td.classList.toggle("mff-hide", !r.mask[i][j]);
          if (r.mask[i][j]) F.paint(td, F.fmt(a), a);
          else F.paint(td, "·");
        });
      });
      var sum = summary(state.arch, r);
      setRule(sum + " mask = " + r.rule + ".");
      var text = showQuery(r);
      if (started) say(sum + " " + text);
    }

    archs.forEach(function (c) {
      c.input.addEventListener("change", function () {
        if (!c.input.checked) return;
        state.arch = c.input.value;
        if (HAS[state.arch].indexOf(state.attn) < 0) state.attn = state.arch === "encoder-decoder" ? "cross" : HAS[state.arch][0];
        update();
      });
    });
    attns.forEach(function (c) {
      c.input.addEventListener("change", function () { if (c.input.checked) { state.attn = c.input.value; update(); } });
    });
    function bindText(input, key) {
      input.addEventListener("input", function () {
        var ok = words(input.value).length > 0 || key === "target";
        input.setAttribute("aria-invalid", ok ? "false" : "true");
        if (ok && input.value !== state[key]) { state[key] = input.value; update(); }
      });
      input.addEventListener("change", function () {
        input.value = state[key];
        input.setAttribute("aria-invalid", "false");
      });
    }
    bindText(source.input, "source");
    bindText(target.input, "target");
    F.bindNumber(srcPads.input, {min: 0, max: MAX_PADS, integer: true}, function () { return state.srcPads; },
                 function (v) { state.srcPads = v; update(); });
    F.bindNumber(tgtPads.input, {min: 0, max: MAX_PADS, integer: true}, function () { return state.tgtPads; },
                 function (v) { state.tgtPads = v; update(); });
    update();
    started = true;
  }

  F.register("ch12-masks", {mount: mount});
  return {compute: compute, reads: reads, summary: summary, words: words, embed: embed, W: W, D: D,
          START: START, HAS: HAS, MAX_WORDS: MAX_WORDS, MAX_PADS: MAX_PADS};
});
