/* widget.js: the page translator of the book (chapter 13 and the page "Translate in your browser").
 *
 * It fills every <div class="mft"> on the page (minformer.widget writes it): the reader types
 * English, presses Translate, and reads the Spanish, with the cross-attention of their own sentence
 * added to the explorer that sits inside the div (minformer.explorer; element.mfxAdd). Nothing is
 * downloaded until the reader presses "Load the translator": then translator.js (the model in plain
 * JavaScript) and the weights arrive, with a progress bar.
 *
 * The model runs in a Web Worker, made from the engine's own source (a Blob), so the page never
 * freezes while it translates. Over http(s) the weights come with fetch (weights.bin, with its
 * sha256 checked by the engine); from a file:// copy of the book, where browsers refuse fetch,
 * they come as script files (weights-NN.js, written by `make book`). Output is written as text,
 * never as HTML. Every error a reader can meet gets a sentence.
 *
 * What the reader types is checked as the command line checks it: a line longer than the
 * translator takes is refused with a sentence that says so (the box does not cut it short
 * silently: it has no maxLength), an empty box clears the last translation, and a line that does
 * not look like English (english.js, the command line's rule) is translated with the command
 * line's warning.
 */
(function () {
  "use strict";
  var MAX_CHARS = 300; // the model takes at most 255 source tokens; a sentence is far shorter
  // the length floor of minformer-translate: no translation ends before ⌊1 · s⌋ - 3 tokens
  // (minformer.translate.MIN_LENGTH_RATIO, MIN_LENGTH_SLACK; tests/test_widget.py checks them)
  var MIN_LENGTH_RATIO = 1.0, MIN_LENGTH_SLACK = 3;
  // and its loop guard and clause by clause translation (minformer.translate.NO_LOOPS,
  // SPLIT_CLAUSES; tests/test_widget.py checks them too)
  var NO_LOOPS = true, SPLIT_CLAUSES = true;
  // The folder this script was loaded from (…/_static/translator/): the engine and the weights
  // sit beside it, so a page at any depth only has to load this script with the right path.
  var HERE = ((document.currentScript && document.currentScript.src) || "")
    .replace(/[^\/]*$/, "") || "_static/translator/";

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function loadScript(src) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = function () { resolve(); };
      s.onerror = function () { reject(new Error("could not load " + src)); };
      document.head.appendChild(s);
    });
  }

  // ------------------------------------------------------------------ the weights
  function fetchWithProgress(url, onProgress) {
    return fetch(url).then(function (response) {
      if (!response.ok) throw new Error(url + ": HTTP " + response.status);
      var total = +response.headers.get("Content-Length") || 0;
      if (!response.body || !response.body.getReader) return response.arrayBuffer();
      var reader = response.body.getReader(), parts = [], got = 0;
      function pump() {
        return reader.read().then(function (r) {
          if (r.done) {
            var out = new Uint8Array(got), at = 0;
            for (var i = 0; i < parts.length; i++) { out.set(parts[i], at); at += parts[i].length; }
            return out.buffer;
          }
          parts.push(r.value);
          got += r.value.length;
          if (total) onProgress(got / total);
          return pump();
        });
      }
      return pump();
    });
  }

  function viaFetch(base, onProgress) {
    return fetch(base + "model.json").then(function (r) {
      if (!r.ok) throw new Error("model.json: HTTP " + r.status);
      return r.json();
    }).then(function (model) {
      return fetchWithProgress(base + model.weights.file, onProgress).then(function (buffer) {
        return { model: model, weights: buffer };
      });
    });
  }

  function viaScripts(base, onProgress) { // file://: weights-00.js … hold base64 chunks
    var store = window.MinformerWeights = window.MinformerWeights || { chunks: [] };
    return loadScript(base + "weights-00.js").then(function () {
      var n = store.count, chain = Promise.resolve();
      onProgress(1 / n);
      for (var i = 1; i < n; i++) {
        (function (i) {
          chain = chain.then(function () {
            return loadScript(base + "weights-" + (i < 10 ? "0" : "") + i + ".js");
          }).then(function () { onProgress((i + 1) / n); });
        })(i);
      }
      return chain;
    }).then(function () {
      var total = 0, k, parts = [];
      for (k = 0; k < store.chunks.length; k++) {
        var bin = atob(store.chunks[k]), bytes = new Uint8Array(bin.length);
        for (var j = 0; j < bin.length; j++) bytes[j] = bin.charCodeAt(j);
        parts.push(bytes);
        total += bytes.length;
      }
      var out = new Uint8Array(total), at = 0;
      for (k = 0; k < parts.length; k++) { out.set(parts[k], at); at += parts[k].length; }
      store.chunks = [];
      return { model: store.model, weights: out.buffer };
    });
  }

  // ------------------------------------------------------------------ the worker
  var WORKER_MAIN = [
    "var tr = null;",
    "onmessage = function (e) {",
    "  var m = e.data;",
    "  try {",
    "    if (m.type === 'init') {  // create() checks the weights' length and sha256",
    "      MinformerTranslator.create(m.model, m.weights).then(function (t) {",
    "        tr = t;",
    "        postMessage({type: 'ready'});",
    "      }, function (err) { postMessage({type: 'error', message: String(err && err.message || err)}); });",
    "    } else if (m.type === 'translate') {",
    "      var out = tr.translate(m.text, {beamSize: m.beam, minLengthRatio: m.ratio,",
    "                                     minLengthSlack: m.slack, noLoops: m.noLoops,",
    "                                     splitClauses: m.split});",
    "      postMessage({type: 'result', id: m.id, text: out.text, src: out.source.tokens,",
    "                   tgt: out.output.tokens, attention: out.attention, ms: out.ms});",
    "    }",
    "  } catch (err) {",
    "    postMessage({type: 'error', id: m.id, message: String(err && err.message || err)});",
    "  }",
    "};"
  ].join("\n");

  function Engine() { // the same messages, answered by a Worker, or in the page if none can start
    this.worker = null;
    this.local = null;
    this.pending = {};
    this.next = 1;
  }
  Engine.prototype.start = function (model, weights) {
    var self = this, factory = window.MinformerTranslator && window.MinformerTranslator.factory;
    return new Promise(function (resolve, reject) {
      try {
        if (!factory || typeof Worker === "undefined" || typeof Blob === "undefined") throw 0;
        var source = "var MinformerTranslator = (" + factory.toString() + ")();\n" + WORKER_MAIN;
        var url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
        self.worker = new Worker(url);
      } catch (e) {
        self.worker = null;
      }
      if (!self.worker) { // no worker: translate in the page (it may pause while it works)
        window.MinformerTranslator.create(model, weights).then(function (t) {
          self.local = t;
          resolve("page");
        }, reject);
        return;
      }
      self.worker.onmessage = function (e) {
        var m = e.data;
        if (m.type === "ready") return resolve("worker");
        var p = self.pending[m.id];
        if (!p) return m.type === "error" ? reject(new Error(m.message)) : undefined;
        delete self.pending[m.id];
        if (m.type === "error") p.reject(new Error(m.message)); else p.resolve(m);
      };
      self.worker.onerror = function (e) {
        reject(new Error(e.message || "the translator's worker failed to start"));
      };
      self.worker.postMessage({ type: "init", model: model, weights: weights }, [weights]);
    });
  };
  Engine.prototype.translate = function (text, beam) {
    var self = this;
    if (self.local) {
      return new Promise(function (resolve) { setTimeout(resolve, 0); }).then(function () {
        var out = self.local.translate(text, { beamSize: beam, minLengthRatio: MIN_LENGTH_RATIO,
                                               minLengthSlack: MIN_LENGTH_SLACK, noLoops: NO_LOOPS,
                                               splitClauses: SPLIT_CLAUSES });
        return { text: out.text, src: out.source.tokens, tgt: out.output.tokens,
                 attention: out.attention, ms: out.ms };
      });
    }
    return new Promise(function (resolve, reject) {
      var id = self.next++;
      self.pending[id] = { resolve: resolve, reject: reject };
      self.worker.postMessage({ type: "translate", id: id, text: text, beam: beam,
                                ratio: MIN_LENGTH_RATIO, slack: MIN_LENGTH_SLACK,
                                noLoops: NO_LOOPS, split: SPLIT_CLAUSES });
    });
  };

  // ------------------------------------------------------------------ explorer payload
  function explorerExample(label, r) { // weights in thousandths: (layers, heads, t, s)
    var A = r.attention, w = [], l, h, t, s;
    for (l = 0; l < A.layers; l++) {
      var L = [];
      for (h = 0; h < A.heads; h++) {
        var M = A.weights[l][h], rows = [];
        for (t = 0; t < A.t; t++) {
          var row = [];
          for (s = 0; s < A.s; s++) row.push(Math.round(M[t * A.s + s] * 1000));
          rows.push(row);
        }
        L.push(rows);
      }
      w.push(L);
    }
    return { label: label.length > 60 ? label.slice(0, 59) + "\u2026" : label,
             src: r.src, tgt: r.tgt, w: w };
  }

  // ------------------------------------------------------------------ the widget
  function setup(root) {
    root.setAttribute("data-mft-ready", "1");
    var base = root.getAttribute("data-base") || HERE; // data-base: another folder, if ever needed
    var uid = "mft-" + Math.random().toString(36).slice(2, 8);
    var ui = el("div", "mft-ui");
    var label = el("label", "mft-label", "English sentence");
    label.htmlFor = uid;
    var box = el("textarea", "mft-input");
    box.id = uid;
    box.rows = 2;
    box.value = root.getAttribute("data-example") || "My brother, who lives in Madrid, is coming to visit us next month.";
    var row = el("div", "mft-row");
    var load = el("button", "mft-load", "Load the translator (" + (root.getAttribute("data-size") || "15 MB") + ")");
    load.type = "button";
    var go = el("button", "mft-go", "Translate");
    go.type = "button";
    go.disabled = true;
    var searchLabel = el("label", "mft-search", "Search ");
    var search = el("select");
    [["1", "greedy"], ["4", "beam 4"]].forEach(function (o) {
      var opt = el("option", null, o[1]);
      opt.value = o[0];
      search.appendChild(opt);
    });
    search.value = "4";
    searchLabel.appendChild(search);
    var bar = el("progress", "mft-progress");
    bar.max = 1;
    bar.value = 0;
    bar.hidden = true;
    row.appendChild(load);
    row.appendChild(go);
    row.appendChild(searchLabel);
    row.appendChild(bar);
    var status = el("div", "mft-status", "Nothing is downloaded until you press the button.");
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    var output = el("div", "mft-output");
    output.setAttribute("aria-live", "polite");
    output.setAttribute("lang", "es");
    ui.appendChild(label);
    ui.appendChild(box);
    ui.appendChild(row);
    ui.appendChild(status);
    ui.appendChild(output);
    root.insertBefore(ui, root.firstChild);
    var explorer = root.querySelector("div.mfx");
    var engine = null, busy = false;

    function say(text, bad) {
      status.textContent = text;
      status.className = "mft-status" + (bad ? " mft-bad" : "");
    }

    if (typeof Promise === "undefined" || typeof Float32Array === "undefined" ||
        typeof Uint8Array === "undefined") {
      say("This browser is too old to run the translator here (it lacks Promise or typed arrays). " +
          "The chapter's Python code runs the same model.", true);
      load.disabled = true;
      return;
    }

    load.addEventListener("click", function () {
      load.disabled = true;
      bar.hidden = false;
      say("Loading the translator…");
      var t0 = Date.now();
      var local = location.protocol === "file:";
      loadScript(base + "translator.js").then(function () {
        return loadScript(base + "english-data.js");
      }).then(function () {
        return loadScript(base + "english.js");
      }).then(function () {
        return local ? viaScripts(base, function (f) { bar.value = f; })
                     : viaFetch(base, function (f) { bar.value = f; });
      }).then(function (got) {
        bar.value = 1;
        say("Checking and unpacking the weights…");
        engine = new Engine();
        return engine.start(got.model, got.weights);
      }).then(function (where) {
        bar.hidden = true;
        load.hidden = true;
        go.disabled = false;
        say("Ready (" + ((Date.now() - t0) / 1000).toFixed(1) + " s). Type a sentence and press " +
            "Translate." + (where === "page" ? " (No Web Worker here: the page may pause while " +
            "it translates.)" : ""));
        root.setAttribute("data-mft-state", "ready");
        go.focus();
      }).catch(function (err) {
        bar.hidden = true;
        load.disabled = false;
        root.setAttribute("data-mft-state", "error");
        // what to do depends on where the page came from: a copy on disk lacks the folder; a
        // page from a server that can no longer be reached (offline) lacks the network
        // (an HTTP status: the site answered without the file)
        var message = String(err && err.message || err);
        var network = !local && (navigator.onLine === false || !/HTTP \d/.test(message));
        say("The translator could not be loaded: " + message + ". " + (network ?
            "Its files come from the site when you press the button, and the site could not be " +
            "reached: check the network connection, then press the button again." :
            "The weights live in " + base + "; if you copied the book, copy that folder too."), true);
      });
    });

    function tooLong(text) {
      return "That is " + text.length + " characters; the translator takes one sentence of at most " +
        MAX_CHARS + ". Split it.";
    }
    function refuse(text) { // nothing to translate: no translation of an earlier sentence stays
      output.textContent = "";
      say(text, true);
      root.setAttribute("data-mft-state", "refused");
    }
    function notEnglish(text) { // the command line's warning (minformer-translate), or ""
      var E = window.MinformerEnglish, reason = E && E.notEnglishReason(text);
      return reason ? " Warning: this does not look like English (" + reason + "); its " +
        "translation is likely to be nonsense." : "";
    }

    // While it translates, the button says so (aria-disabled) but is not disabled: a disabled
    // button loses the keyboard focus, which then fell back to <body>.
    function translate() {
      if (!engine || busy) return;
      var text = box.value.replace(/\s+/g, " ").trim();
      if (!text) { refuse("Type an English sentence first."); return; }
      if (text.length > MAX_CHARS) { refuse(tooLong(text)); return; }
      var warning = notEnglish(text);
      busy = true;
      go.setAttribute("aria-disabled", "true");
      say("Translating…");
      var beam = +search.value;
      engine.translate(text, beam).then(function (r) {
        output.textContent = r.text; // text, never HTML
        say("Translated in " + (r.ms / 1000).toFixed(2) + " s (" + (beam === 1 ? "greedy" :
            "beam 4") + "). Its cross-attention is added to the explorer below." + warning, !!warning);
        if (explorer && explorer.mfxAdd && r.attention) explorer.mfxAdd(explorerExample(text, r));
        root.setAttribute("data-mft-state", "translated");
      }).catch(function (err) {
        output.textContent = "";
        say(String(err && err.message || err).replace(/^\w/, function (c) { return c.toUpperCase(); }) +
            ".", true);
      }).then(function () {
        busy = false;
        go.removeAttribute("aria-disabled");
      });
    }
    go.addEventListener("click", translate);
    box.addEventListener("input", function () { // over the limit: refused at once, not at Translate
      var text = box.value.replace(/\s+/g, " ").trim();
      if (text.length > MAX_CHARS) refuse(tooLong(text)); // the last translation goes with it
      else if (/ Split it\.$/.test(status.textContent)) {
        say(engine ? "Press Translate." : "Nothing is downloaded until you press the button.");
      }
    });
    box.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); translate(); }
    });
  }

  function start() {
    var roots = document.querySelectorAll("div.mft:not([data-mft-ready])");
    for (var i = 0; i < roots.length; i++) setup(roots[i]);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
