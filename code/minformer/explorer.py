"""An interactive cross-attention explorer for the book's pages (chapter 13).

:func:`attention_explorer_html` turns the decoder's cross-attention weights of a few sentences
into ONE self-contained HTML fragment: inline ``<style>`` and ``<script>``, no CDN, no file
beside it, no kernel. In a notebook, ``IPython.display.HTML(attention_explorer_html(examples))``
shows it; the built Jupyter Book page keeps the output's HTML and its script runs there.

The reader picks a sentence, a decoder layer and a head (or the average of the heads). Hovering,
focusing or tapping a target (Spanish) token shades each source (English) token in proportion
to the weight the target token gives it, and prints the weight under it; a heatmap shows the
whole (target × source) matrix of that layer and head.

:func:`examples_from_translator` makes the examples from a :class:`~minformer.translator.Translator`
(its own translations, teacher-forced once more to read the weights), and :func:`save_explorer`
writes a standalone page, for checking in a browser.

A page script can add a sentence to a running explorer: ``element.mfxAdd({label, src, tgt, w})``
with ``w`` in the payload's form (layers × heads × t × s weights in thousandths); the page
translator of chapter 13 shows the reader's own sentence this way.

For screenshots without a pointer, the page honours a URL hash such as
``#mfx-sentence=2&mfx-layer=1&mfx-head=avg&mfx-hover=3`` (1-based sentence, layer, head; 0-based
target token), which every explorer on the page applies on load.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from . import validate
from .utils import evaluating

DECIMALS = 3  # weights are stored as integers in thousandths: 0.123 → 123

_CSS = """
.mfx{--mfx-bg:#fff;--mfx-fg:#1f2328;--mfx-muted:#59636e;--mfx-line:#d0d7de;--mfx-hot:245,158,11;
 background:var(--mfx-bg);color:var(--mfx-fg);border:1px solid var(--mfx-line);border-radius:8px;
 padding:12px;margin:1em 0;max-width:100%;box-sizing:border-box;font-size:15px;line-height:1.4;
 font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
html[data-theme=dark] .mfx{--mfx-bg:#1c2128;--mfx-fg:#e6edf3;--mfx-muted:#9198a1;--mfx-line:#444c56}
.mfx *{box-sizing:border-box}
.mfx-title{font-weight:600;margin:0 0 8px}
.mfx-controls{display:flex;flex-wrap:wrap;gap:6px 12px;margin-bottom:10px}
.mfx-controls label{display:flex;align-items:center;gap:4px;color:var(--mfx-muted);font-size:13px}
.mfx-controls .mfx-wide{flex:1 1 100%;min-width:0}
.mfx select{font:inherit;font-size:14px;color:var(--mfx-fg);background:var(--mfx-bg);
 border:1px solid var(--mfx-line);border-radius:4px;padding:2px 4px;max-width:100%;min-width:0}
.mfx-wide select{flex:1 1 0;width:0;min-width:0}
.mfx-row{display:flex;gap:8px;align-items:flex-start;margin:6px 0}
.mfx-lab{flex:0 0 58px;color:var(--mfx-muted);font-size:12px;padding-top:5px}
.mfx-toks{display:flex;flex-wrap:wrap;gap:4px;flex:1 1 auto;min-width:0}
.mfx-tok{display:inline-flex;flex-direction:column;align-items:center;border:1px solid var(--mfx-line);
 border-radius:4px;padding:2px 5px;min-width:26px;white-space:pre;font-family:ui-monospace,
 SFMono-Regular,Menlo,Consolas,monospace;font-size:14px}
.mfx-tgt .mfx-tok{cursor:pointer;user-select:none;-webkit-tap-highlight-color:transparent}
.mfx-tgt .mfx-tok:focus{outline:2px solid rgb(var(--mfx-hot));outline-offset:1px}
.mfx-tok.mfx-on{border-color:rgb(var(--mfx-hot));box-shadow:0 0 0 2px rgb(var(--mfx-hot))}
.mfx-w{font-size:10px;color:var(--mfx-muted);min-height:12px;font-family:system-ui,sans-serif}
.mfx-w:not(:empty){color:var(--mfx-fg);background:var(--mfx-bg);border-radius:3px;padding:0 3px;margin-top:1px}
.mfx-hint{color:var(--mfx-muted);font-size:12px;margin:6px 0 8px}
.mfx-heatwrap{overflow-x:auto;max-width:100%}
.mfx-heat{display:inline-grid;gap:1px;align-items:end;font-size:11px;
 font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.mfx-heat .mfx-c{width:var(--mfx-cell);height:var(--mfx-cell);border-radius:2px;
 outline:1px solid var(--mfx-line);outline-offset:-1px}
.mfx-heat .mfx-col{writing-mode:vertical-rl;transform:rotate(180deg);white-space:pre;justify-self:center;
 max-height:90px;overflow:hidden;text-overflow:ellipsis;color:var(--mfx-muted)}
.mfx-heat .mfx-rowlab{white-space:pre;padding-right:4px;text-align:right;align-self:center;cursor:pointer;
 max-width:110px;overflow:hidden;text-overflow:ellipsis;color:var(--mfx-muted)}
.mfx-heat .mfx-rowlab.mfx-on{color:var(--mfx-fg);font-weight:700}
.mfx-heat .mfx-c.mfx-on{outline:2px solid var(--mfx-fg)}
.mfx-key{font-size:11px;color:var(--mfx-muted);margin-top:6px;display:flex;align-items:center;gap:6px}
.mfx-key i{display:inline-block;width:80px;height:10px;border:1px solid var(--mfx-line);
 background:linear-gradient(90deg,rgba(var(--mfx-hot),0),rgba(var(--mfx-hot),1))}
@media (max-width:480px){.mfx{padding:8px;font-size:14px}.mfx-lab{flex-basis:48px}
 .mfx-tok{font-size:13px;padding:2px 3px;min-width:22px}}
"""

# Plain ES5 so that any browser that can show the book can run it. Tokens are written with
# textContent, never innerHTML: a token cannot inject markup.
_JS = r"""
(function () {
  var ID = "__ID__", D = __DATA__;
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function shown(text) { return /^\s+$/.test(text) ? "\u2423" : text; }  // a bare space: ␣
  function opt(sel, value, text) { var o = el("option", null, text); o.value = value; sel.appendChild(o); }
  function hashParams() {
    var p = {}, re = /mfx-(sentence|layer|head|hover)=(\w+)/g, m, h = String(location.hash || "");
    while ((m = re.exec(h))) p[m[1]] = m[2];
    return p;
  }
  function setup(root) {
    root.setAttribute("data-mfx-ready", "1");
    var q = function (role) { return root.querySelector("[data-role=" + role + "]"); };
    var sSel = q("sentence"), lSel = q("layer"), hSel = q("head"), srcBox = q("src"), tgtBox = q("tgt");
    var heat = q("heat"), hint = q("hint");
    var i, ex = D.examples, pinned = null, cur = null, srcEls = [], tgtEls = [], rowEls = [], cellEls = [];
    for (i = 0; i < ex.length; i++) opt(sSel, i, (i + 1) + ". " + ex[i].label);
    for (i = 0; i < D.layers; i++) opt(lSel, i, "layer " + (i + 1));
    opt(hSel, "avg", "average of heads");
    for (i = 0; i < D.heads; i++) opt(hSel, i, "head " + (i + 1));
    lSel.value = String(D.layers - 1);
    hSel.value = "avg";
    var P = hashParams();
    if (P.sentence && +P.sentence >= 1 && +P.sentence <= ex.length) sSel.value = String(P.sentence - 1);
    if (P.layer && +P.layer >= 1 && +P.layer <= D.layers) lSel.value = String(P.layer - 1);
    if (P.head === "avg" || (P.head && +P.head >= 1 && +P.head <= D.heads))
      hSel.value = P.head === "avg" ? "avg" : String(P.head - 1);
    function matrix() {  // the (t, s) weights of the chosen sentence, layer and head, in [0, 1]
      var e = ex[+sSel.value], L = e.w[+lSel.value], h = hSel.value, t, s, k, row, out = [];
      for (t = 0; t < e.tgt.length; t++) {
        row = [];
        for (s = 0; s < e.src.length; s++) {
          if (h === "avg") {
            var sum = 0;
            for (k = 0; k < D.heads; k++) sum += L[k][t][s];
            row.push(sum / D.heads / D.scale);
          } else row.push(L[+h][t][s] / D.scale);
        }
        out.push(row);
      }
      return out;
    }
    var onRow = null;  // the heatmap row drawn as chosen
    function mark(t, on) {
      if (t === null || t >= tgtEls.length) return;
      tgtEls[t].className = "mfx-tok" + (on ? " mfx-on" : "");
      rowEls[t].className = "mfx-rowlab" + (on ? " mfx-on" : "");
      for (var c = 0; c < cellEls[t].length; c++) cellEls[t][c].className = "mfx-c" + (on ? " mfx-on" : "");
    }
    function paint(w, t) {  // highlight target token t (null: none)
      var s, e = ex[+sSel.value];
      for (s = 0; s < srcEls.length; s++) {
        var v = t === null ? 0 : w[t][s];
        srcEls[s].style.backgroundColor = t === null ? "" : "rgba(var(--mfx-hot)," + v.toFixed(3) + ")";
        srcEls[s].style.color = v > 0.55 ? "#1f2328" : "";
        srcEls[s].lastChild.textContent = t === null ? "" : v.toFixed(2);
        srcEls[s].setAttribute("aria-label", e.src[s] + (t === null ? "" : ", weight " + v.toFixed(2)));
      }
      if (onRow !== t) { mark(onRow, false); mark(t, true); onRow = t; }  // two rows, not every cell
      hint.textContent = t === null
        ? "Hover over or tap a " + D.tgtName + " token to shade the " + D.srcName + " tokens it attends to."
        : "\u201c" + e.tgt[t] + "\u201d attends to: shading and numbers are its attention weights" +
          (pinned === null ? "." : " (tap it again to release).");
    }
    function render() {
      // Built off the page and added at once: a script that watches the page for changes (the
      // theme's FontAwesome) then sees one change, not one per cell (11,000 for a long sentence
      // froze the page for seconds). One set of listeners for the whole heatmap, not one per cell.
      var e = ex[+sSel.value], w = matrix(), t, s, heatParts = document.createDocumentFragment();
      var srcParts = document.createDocumentFragment(), tgtParts = document.createDocumentFragment();
      cur = w; onRow = null;
      srcEls = []; tgtEls = []; rowEls = []; cellEls = [];
      for (s = 0; s < e.src.length; s++) {
        var a = tokEl(e.src[s]);
        srcParts.appendChild(a); srcEls.push(a);
      }
      fit();
      heatParts.appendChild(el("span"));
      for (s = 0; s < e.src.length; s++) heatParts.appendChild(el("span", "mfx-col", shown(e.src[s])));
      for (t = 0; t < e.tgt.length; t++) {
        var b = tokEl(e.tgt[t]);
        b.tabIndex = 0; b.setAttribute("role", "button"); b.setAttribute("data-t", t);
        tgtParts.appendChild(b); tgtEls.push(b);
        var r = el("span", "mfx-rowlab", shown(e.tgt[t])); r.setAttribute("data-t", t);
        heatParts.appendChild(r); rowEls.push(r);
        var cells = [];
        for (s = 0; s < e.src.length; s++) {
          var c = el("span", "mfx-c");
          c.style.backgroundColor = "rgba(var(--mfx-hot)," + w[t][s].toFixed(3) + ")";
          c.title = e.tgt[t] + " \u2192 " + e.src[s] + ": " + w[t][s].toFixed(3);
          c.setAttribute("data-t", t);
          heatParts.appendChild(c); cells.push(c);
        }
        cellEls.push(cells);
      }
      srcBox.textContent = ""; tgtBox.textContent = ""; heat.textContent = "";
      srcBox.appendChild(srcParts); tgtBox.appendChild(tgtParts); heat.appendChild(heatParts);
      if (pinned !== null && pinned >= e.tgt.length) pinned = null;
      paint(w, pinned);
    }
    function fit() {  // heatmap cells as large as the width allows, 12 to 26 px
      var n = ex[+sSel.value].src.length, width = root.clientWidth || 700;  // 0 while hidden
      var cell = Math.max(12, Math.min(26, Math.floor((width - 150) / n) - 1));
      heat.style.setProperty("--mfx-cell", cell + "px");
      heat.style.gridTemplateColumns = "auto repeat(" + n + ", " + cell + "px)";
    }
    function tokEl(text) {  // a token box: its text, and a line for its weight
      var b = el("span", "mfx-tok");
      b.appendChild(el("span", null, shown(text)));
      b.appendChild(el("span", "mfx-w", ""));
      return b;
    }
    function toggle(t) { pinned = pinned === t ? null : t; paint(cur, pinned); }  // tap: pin or release
    function tokenOf(ev) {  // the target token (row) an event is about, or null
      var n = ev.target;
      while (n && n !== root && !(n.getAttribute && n.hasAttribute("data-t"))) n = n.parentNode;
      return n && n !== root ? +n.getAttribute("data-t") : null;
    }
    function listen(box) {  // the target tokens, and the heatmap's row labels and cells
      box.addEventListener("mouseover", function (ev) { var t = tokenOf(ev); if (t !== null) paint(cur, t); });
      box.addEventListener("mouseleave", function () { paint(cur, pinned); });
      box.addEventListener("focusin", function (ev) { var t = tokenOf(ev); if (t !== null) paint(cur, t); });
      box.addEventListener("click", function (ev) { var t = tokenOf(ev); if (t !== null) toggle(t); });
      box.addEventListener("keydown", function (ev) {
        var t = tokenOf(ev);
        if (t !== null && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); toggle(t); }
      });
    }
    listen(tgtBox);
    listen(heat);
    root.mfxAdd = function (e) {  // one more sentence (e.g. the page translator's), shown at once
      ex.push(e);
      opt(sSel, ex.length - 1, ex.length + ". " + e.label);
      sSel.value = String(ex.length - 1);
      pinned = null;
      render();
    };
    sSel.addEventListener("change", function () { pinned = null; render(); });
    lSel.addEventListener("change", render);
    hSel.addEventListener("change", render);
    window.addEventListener("resize", fit);
    if (P.hover !== undefined && +P.hover >= 0) pinned = +P.hover;
    render();
  }
  var sel = "div.mfx[data-mfx='" + ID + "']:not([data-mfx-ready])";
  function find(scope) {  // in the page, else in open shadow roots (where some notebook front ends put outputs)
    var found = [].slice.call(scope.querySelectorAll(sel)), all = scope.querySelectorAll("*");
    for (var k = 0; k < all.length && !found.length; k++) if (all[k].shadowRoot) found = find(all[k].shadowRoot);
    return found;
  }
  var roots = find(document);
  for (var r = 0; r < roots.length; r++) setup(roots[r]);
})();
"""


ROW_SUM_TOLERANCE = 0.01  # a row of softmax weights sums to 1 within float16's rounding


def _weights_array(w, n: int) -> np.ndarray:
    """examples[n]["weights"] as a float64 array of rank 4."""
    if isinstance(w, torch.Tensor):
        arr = w.detach().cpu().double().numpy()
    elif isinstance(w, np.ndarray):
        if not (np.issubdtype(w.dtype, np.floating) or np.issubdtype(w.dtype, np.integer)):
            raise TypeError(f"examples[{n}]['weights'] must hold numbers; got an array of dtype {w.dtype}")
        arr = w.astype(np.float64)
    elif isinstance(w, (list, tuple)):
        try:
            arr = np.array(w, dtype=np.float64)
        except (ValueError, TypeError) as e:
            raise ValueError(f"examples[{n}]['weights'] must be a rectangular nested list of numbers "
                             f"(layers, heads, t_target, s_source): {e}") from None
    else:
        raise TypeError(f"examples[{n}]['weights'] must be a tensor, an array or a nested list; "
                        f"got {type(w).__name__}")
    if arr.ndim != 4:
        raise ValueError(f"examples[{n}]['weights'] must have shape (layers, heads, t_target, s_source); "
                         f"got shape {arr.shape} ({arr.ndim} dims)")
    return arr


def _tokens(v, n: int, key: str) -> list[str]:
    if isinstance(v, str) or not isinstance(v, (list, tuple)):
        raise TypeError(f"examples[{n}][{key!r}] must be a list of token strings; got {type(v).__name__}")
    for k, tok in enumerate(v):
        if not isinstance(tok, str):
            raise TypeError(f"examples[{n}][{key!r}][{k}] must be a str; got {type(tok).__name__}")
    if not v:
        raise ValueError(f"examples[{n}][{key!r}] is empty: every sentence needs at least one token")
    return list(v)


def _payload(examples) -> dict:
    """Check ``examples`` and pack them: tokens, labels and weights in thousandths."""
    if isinstance(examples, dict) or not isinstance(examples, (list, tuple)):
        raise TypeError(f"examples must be a list of dicts; got {type(examples).__name__}")
    if not examples:
        raise ValueError("examples is empty: give at least one sentence")
    packed, shape = [], None
    for n, ex in enumerate(examples):
        if not isinstance(ex, dict):
            raise TypeError(f"examples[{n}] must be a dict with 'source', 'target' and 'weights'; "
                            f"got {type(ex).__name__}")
        missing = [k for k in ("source", "target", "weights") if k not in ex]
        if missing:
            raise ValueError(f"examples[{n}] lacks {', '.join(repr(k) for k in missing)}; it needs "
                             f"'source', 'target' and 'weights'")
        src, tgt = _tokens(ex["source"], n, "source"), _tokens(ex["target"], n, "target")
        w = _weights_array(ex["weights"], n)
        if w.shape[2:] != (len(tgt), len(src)):
            raise ValueError(
                f"examples[{n}]: weights of shape {w.shape} do not match its {len(tgt)} target and "
                f"{len(src)} source tokens: expected (layers, heads, {len(tgt)}, {len(src)})")
        if w.shape[0] == 0 or w.shape[1] == 0:
            raise ValueError(f"examples[{n}]: weights of shape {w.shape} hold no layer or no head")
        if shape is None:
            shape = w.shape[:2]
        elif w.shape[:2] != shape:
            raise ValueError(f"examples[{n}]: weights have {w.shape[0]} layers × {w.shape[1]} heads, but "
                             f"examples[0] has {shape[0]} × {shape[1]}; every sentence needs the same")
        if not np.isfinite(w).all():
            raise ValueError(f"examples[{n}]: weights hold NaN or infinity")
        if w.min() < -1e-6 or w.max() > 1 + 1e-6:
            raise ValueError(f"examples[{n}]: attention weights must lie in [0, 1]; found values in "
                             f"[{w.min():.4g}, {w.max():.4g}]")
        sums = w.sum(axis=-1)  # (layers, heads, t): each target row spreads 1 over the source
        off = np.abs(sums - 1)
        if off.max() > ROW_SUM_TOLERANCE:
            layer, head, row = np.unravel_index(int(off.argmax()), off.shape)
            hint = (" (with as many target as source tokens, transposed weights (s, t) fit the "
                    "shape: pass them as (layers, heads, t_target, s_source))"
                    if len(src) == len(tgt) and np.abs(w.sum(axis=-2) - 1).max() <= ROW_SUM_TOLERANCE
                    else "")
            raise ValueError(f"examples[{n}]: each row of attention weights (one target token over "
                             f"the source tokens) must sum to 1; layer {layer}, head {head}, row "
                             f"{row} sums to {sums[layer, head, row]:.4g}{hint}")
        label = ex.get("label")
        if label is None:
            label = " ".join(t.strip() for t in src if t.strip())
        elif not isinstance(label, str):
            raise TypeError(f"examples[{n}]['label'] must be a str; got {type(label).__name__}")
        if len(label) > 60:
            label = label[:59] + "…"
        scaled = np.rint(np.clip(w, 0.0, 1.0) * 10**DECIMALS).astype(np.int64)
        packed.append({"label": label, "src": src, "tgt": tgt, "w": scaled.tolist()})
    return {"layers": int(shape[0]), "heads": int(shape[1]), "scale": 10**DECIMALS, "examples": packed}


def _json_for_script(obj) -> str:
    """JSON that is safe inside a <script> element: no "<", ">" or "&" can end the script or open
    a comment, and the line separators U+2028/U+2029 are escaped for old JavaScript parsers."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return text


def attention_explorer_html(examples: Sequence[dict], title: str = "Cross-attention explorer",
                            source_name: str = "English", target_name: str = "Spanish") -> str:
    """One self-contained HTML fragment (inline style and script) that explores cross-attention.

    examples: a list of dicts, one per sentence, with
        ``"source"``  the source tokens (list of str, s of them),
        ``"target"``  the target tokens (list of str, t of them),
        ``"weights"`` the cross-attention weights, shape (layers, heads, t, s), as a tensor, an
                      array or a nested list, values in [0, 1] (row t: how target token t spreads
                      its attention over the source tokens; each row sums to 1, within 0.01),
        ``"label"``   optional: the text shown in the sentence menu (default: the source tokens).
    Every example needs the same numbers of layers and heads. Weights are stored rounded to
    3 decimals. title, source_name, target_name: the heading and the names of the two languages.

    The output is deterministic: its element ids come from a hash of its content, so several
    explorers on one page do not clash and a re-run notebook stores the same output. Show it with
    ``IPython.display.HTML(...)``. Raises TypeError / ValueError (naming the sentence index and the
    shapes) on bad input.
    """
    for name, v in (("title", title), ("source_name", source_name), ("target_name", target_name)):
        if not isinstance(v, str):
            raise TypeError(f"{name} must be a str; got {type(v).__name__}")
    payload = _payload(examples)
    payload.update(srcName=source_name, tgtName=target_name)
    data = _json_for_script(payload)
    uid = "mfx-" + hashlib.sha256((title + "\0" + data).encode("utf-8")).hexdigest()[:12]
    script = _JS.replace("__ID__", uid).replace("__DATA__", data)
    esc = html.escape
    return (
        # tex2jax_ignore, mathjax_ignore: the book's MathJax also scans outputs, and a token is no formula
        f'<div class="mfx tex2jax_ignore mathjax_ignore" data-mfx="{uid}" id="{uid}">'
        f"<style>{_CSS}</style>"
        f'<div class="mfx-title">{esc(title)}</div>'
        '<div class="mfx-controls">'
        '<label class="mfx-wide">Sentence <select data-role="sentence"></select></label>'
        '<label>Layer <select data-role="layer"></select></label>'
        '<label>Head <select data-role="head"></select></label>'
        "</div>"
        f'<div class="mfx-row"><span class="mfx-lab">{esc(source_name)}</span>'
        '<div class="mfx-toks mfx-src" data-role="src"></div></div>'
        f'<div class="mfx-row"><span class="mfx-lab">{esc(target_name)}</span>'
        '<div class="mfx-toks mfx-tgt" data-role="tgt"></div></div>'
        '<div class="mfx-hint" data-role="hint">This interactive figure needs JavaScript: in Jupyter, '
        "run the cell (or trust the notebook); in the book, allow scripts.</div>"
        '<div class="mfx-heatwrap"><div class="mfx-heat" data-role="heat"></div></div>'
        f'<div class="mfx-key">0<i></i>1 &nbsp;attention weight (rows: {esc(target_name)}, '
        f"columns: {esc(source_name)})</div>"
        f"<script>{script}</script>"
        "</div>"
    )


def save_explorer(path, examples: Sequence[dict], title: str = "Cross-attention explorer", **kwargs) -> Path:
    """Write a standalone HTML page holding :func:`attention_explorer_html` of ``examples`` (for
    checking in a browser); returns the path. Extra keyword arguments go to that function."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or a Path; got {type(path).__name__}")
    fragment = attention_explorer_html(examples, title=title, **kwargs)
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title></head>\n"
            "<body style=\"margin:8px;max-width:960px\">\n" + fragment + "\n</body></html>\n")
    path = Path(path)
    path.write_text(page, encoding="utf-8")
    return path


def examples_from_translator(translator, sentences: Sequence[str], beam_size: int = 1,
                             length_penalty: float = 0.6) -> list[dict]:
    """Examples for :func:`attention_explorer_html` from a :class:`~minformer.translator.Translator`.

    Each sentence is translated on its own (``Translator.search``: greedy, or beam search with
    ``beam_size``), then its output is fed back through the decoder once to read
    every layer's cross-attention weights. Source tokens are ``en <eos>``; target tokens are the
    output tokens (``<eos>`` included when it was emitted), row t being the attention paid while
    predicting token t. Returns one dict per sentence with "source", "target", "weights" (a
    (layers, heads, t, s) tensor) and "label" (the sentence).
    """
    validate.positive_int(beam_size, "beam_size")
    ids = translator.encode_sources(sentences)  # checks the sentences, names a bad one
    tok, model = translator.tokenizer, translator.model
    out = []
    with evaluating(model):
        for sentence, src_ids in zip(sentences, ids):
            src = torch.tensor([src_ids], device=translator.device)  # (1, s)
            ys = translator.search(src, beam_size, length_penalty)  # (1, t_out)
            y = []
            for i in ys[0].tolist():  # the output up to and with its <eos>
                if i == tok.pad_id:
                    break
                y.append(i)
                if i == tok.eos_id:
                    break
            tgt_in = torch.tensor([[tok.bos_id] + y[:-1]], device=src.device)  # (1, t): <bos> y1 …
            _, weights = model.decode(tgt_in, model.encode(src), need_weights=True)
            w = torch.stack([a[0] for a in weights]).float().cpu()  # (layers, heads, t, s)
            out.append({"source": [tok.id_to_token(i) for i in src_ids],
                        "target": [tok.id_to_token(i) for i in y], "weights": w, "label": sentence})
    return out
