"""Figures the book draws more than once. Each function draws on ``ax`` (a new one if None)
and returns it; the notebook calls ``plt.show()``."""

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes

from . import validate


def _to_numpy(A, name: str = "A") -> np.ndarray:
    """``A`` (a tensor, an array or nested lists of real numbers) as float64."""
    if isinstance(A, torch.Tensor):
        A = A.detach().cpu().numpy()
    if isinstance(A, str) or np.iscomplexobj(A):
        raise TypeError(f"{name} must hold real numbers; got {type(A).__name__} "
                        f"{validate._show(A)}")
    try:
        return np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must hold real numbers; got {validate._show(A)}") from None


def _check_ax(ax, name: str = "ax") -> None:
    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"{name} must be a matplotlib Axes (plt.subplots()[1]) or None; got "
                        f"{type(ax).__name__}")


def _check_axes(axes, n: int, what: str) -> None:
    if isinstance(axes, Axes) or not hasattr(axes, "__len__") or len(axes) != n:
        got = "one Axes" if isinstance(axes, Axes) else (
            f"{len(axes)}" if hasattr(axes, "__len__") else type(axes).__name__)
        count = {2: "two"}.get(n, str(n))
        raise ValueError(f"need {count} axes ({what}); got {got}")
    for i, ax in enumerate(axes):
        _check_ax(ax, f"axes[{i}]")


def _labels(labels, size: int, name: str):
    """``labels`` as a list of ``size`` entries (or None); a str or a set is refused."""
    if labels is None:
        return None
    if isinstance(labels, (str, bytes, set, frozenset)) or not hasattr(labels, "__len__"):
        why = " (a set has no order)" if isinstance(labels, (set, frozenset)) else ""
        raise TypeError(f"{name} must be a list of labels{why}; got {type(labels).__name__} "
                        f"{validate._show(labels)}")
    if len(labels) != size:
        raise ValueError(f"{name} has {len(labels)} labels for {size} rows or columns")
    return list(labels)


def attention_heatmap(A, row_labels=None, col_labels=None, ax=None, title=None,
                      annotate: bool = False, cmap: str = "viridis", colorbar: bool = True,
                      vmin: float | None = 0.0, vmax: float | None = None):
    """Draw an attention matrix: row i (a query) shows how token i spreads its weight over the
    columns (keys).

    A: (t_q, t_k). row_labels: t_q strings; col_labels: t_k strings.
    annotate writes each weight in its cell (for small matrices).
    """
    if not isinstance(A, (torch.Tensor, np.ndarray, list, tuple)):
        raise TypeError(f"A must be a tensor or an array (t_q, t_k); got {type(A).__name__}")
    A = _to_numpy(A)
    if A.ndim != 2:
        raise ValueError(f"attention_heatmap draws one (t_q, t_k) matrix; got shape {A.shape}")
    _check_ax(ax)
    for labels, axis in ((row_labels, "row_labels"), (col_labels, "col_labels")):
        if isinstance(labels, str):
            raise TypeError(f"{axis} must be a list of labels, not one string {labels!r}")
    t_q, t_k = A.shape
    for labels, size, axis in ((row_labels, t_q, "row"), (col_labels, t_k, "column")):
        if labels is not None and hasattr(labels, "__len__") and len(labels) != size:
            raise ValueError(f"{len(labels)} {axis} labels for a matrix of shape {A.shape}")
    row_labels = _labels(row_labels, t_q, "row_labels")
    col_labels = _labels(col_labels, t_k, "col_labels")
    if ax is None:
        width = min(2.0 + 0.55 * t_k, 12)
        _, ax = plt.subplots(figsize=(width, min(1.6 + 0.45 * t_q, 10)))
    im = ax.imshow(A, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    has_cols = col_labels is not None  # labels may be a NumPy array: no truth value
    if has_cols:
        col_labels = [str(c) for c in col_labels]
    if row_labels is not None:
        row_labels = [str(r) for r in row_labels]
    ax.set_xticks(range(t_k), col_labels if has_cols else range(t_k),
                  rotation=45 if has_cols else 0, ha="right" if has_cols else "center")
    ax.set_yticks(range(t_q), row_labels if row_labels is not None else range(t_q))
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (attending)")
    if title:
        ax.set_title(title)
    if annotate:
        hi = np.nanmax(A) if A.size else 1.0
        for i in range(t_q):
            for j in range(t_k):
                ax.text(j, i, f"{A[i, j]:.2f}", ha="center", va="center", fontsize=8,
                        color="black" if A[i, j] > 0.6 * hi else "white")
    if colorbar:
        ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label="attention weight")
    return ax


def _convex_hull(P: np.ndarray) -> np.ndarray:
    """Vertices of the convex hull of 2-D points P (m, 2), counter-clockwise (monotone chain)."""
    pts = sorted(map(tuple, P))
    if len(pts) <= 2:
        return np.array(pts)

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(pts):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def tokens_and_outputs_2d(X, Y, labels=None, ax=None, title=None):
    """Draw 2-D tokens X (n, 2) as dots, their convex hull shaded, and the attention outputs
    Y (n, 2) as crosses joined to the token they belong to."""
    X, Y = _to_numpy(X, "X"), _to_numpy(Y, "Y")
    if X.ndim != 2 or X.shape[1] != 2 or Y.shape != X.shape or len(X) == 0:
        raise ValueError(f"need X and Y of the same shape (n, 2), n ≥ 1; got X {X.shape}, "
                         f"Y {Y.shape}")
    for name, P in (("X", X), ("Y", Y)):
        if not np.isfinite(P).all():
            raise ValueError(f"{name} holds NaN or inf: no point to draw there")
    _check_ax(ax)
    labels = _labels(labels, len(X), "labels")
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5))
    hull = _convex_hull(X)
    ax.fill(hull[:, 0], hull[:, 1], color="tab:blue", alpha=0.12, label="convex hull of the tokens")
    ax.scatter(X[:, 0], X[:, 1], color="tab:blue", zorder=3, label="token $x_i$")
    ax.scatter(Y[:, 0], Y[:, 1], color="tab:red", marker="x", s=60, zorder=3, label="output $y_i$")
    for i in range(len(X)):
        ax.annotate("", xy=Y[i], xytext=X[i],
                    arrowprops=dict(arrowstyle="->", color="0.5", lw=0.8))
        if labels is not None:
            ax.annotate(labels[i], X[i], textcoords="offset points", xytext=(5, 5))
    ax.set_xlabel("feature 1")
    ax.set_ylabel("feature 2")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="best", fontsize=8)
    if title:
        ax.set_title(title)
    return ax


# ------------------------------------------------------------------------------------ diagrams
# Architecture and shape diagrams, drawn from a list of boxes and arrows so that they stay
# legible when the page is narrow (each is taller than wide). Coordinates are in "box units":
# a box is centred at (x, y) and is ``w`` wide and 0.8 high.

_COLOURS = {
    "data": "#dbe9f6",      # tensors
    "op": "#fde9c9",        # matrix products, softmax, ...
    "param": "#e3f1dc",     # learned weights
    "norm": "#f6e0e9",      # Add & Norm
    "state": "#e8e3f3",     # recurrent states
}


def _box(ax, x, y, text, kind="op", w=2.6, h=0.8, fontsize=9):
    from matplotlib.patches import FancyBboxPatch

    if kind not in _COLOURS:
        raise ValueError(f"unknown box kind {kind!r}; use one of {sorted(_COLOURS)}")
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.04,rounding_size=0.12",
                                facecolor=_COLOURS[kind], edgecolor="0.3", lw=1.0, zorder=2))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, zorder=3)
    return (x, y, w, h)


def _arrow(ax, start, end, text=None, style="-|>", colour="0.25", rad=0.0, fontsize=8,
           text_offset=(0.08, 0.0), ls="-"):
    """An arrow from box ``start`` to box ``end`` (boxes as returned by _box, or points)."""

    def edge(a, b):  # the point where the segment a -> b leaves box a
        if len(a) == 2:
            return a[0], a[1]
        (x, y, w, h), (bx, by) = a, b[:2]
        dx, dy = bx - x, by - y
        if dx == 0 and dy == 0:
            return x, y
        t = min(w / 2 / abs(dx) if dx else np.inf, h / 2 / abs(dy) if dy else np.inf)
        return x + t * dx, y + t * dy

    p0, p1 = edge(start, end), edge(end, start)
    ax.annotate("", xy=p1, xytext=p0, zorder=1,
                arrowprops=dict(arrowstyle=style, color=colour, lw=1.1, ls=ls,
                                connectionstyle=f"arc3,rad={rad}", shrinkA=1, shrinkB=1))
    if text:
        ax.text((p0[0] + p1[0]) / 2 + text_offset[0], (p0[1] + p1[1]) / 2 + text_offset[1],
                text, fontsize=fontsize, ha="left", va="center", color="0.2", zorder=3)


def _canvas(ax, xlim, ylim, figsize, title):
    _check_ax(ax)
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, constrained_layout=True)
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax


def sdpa_diagram(ax=None, title="Scaled dot-product attention"):
    """The pipeline softmax(Q Kᵀ / √d_k) V, top to bottom, with the shape after each step."""
    ax = _canvas(ax, (-0.4, 7.0), (-0.6, 8.1), (4.6, 5.6), title)
    Q = _box(ax, 1.0, 7.5, "$Q$\n$(t_q, d_k)$", "data", w=1.6, h=0.9)
    K = _box(ax, 3.3, 7.5, "$K$\n$(t_k, d_k)$", "data", w=1.6, h=0.9)
    V = _box(ax, 5.6, 7.5, "$V$\n$(t_k, d_v)$", "data", w=1.6, h=0.9)
    S = _box(ax, 2.15, 6.0, "$Q K^\\top$", "op", w=2.4)
    scale = _box(ax, 2.15, 4.7, "divide by $\\sqrt{d_k}$", "op", w=2.4)
    mask = _box(ax, 2.15, 3.4, "mask (optional):\nhidden scores to $-\\infty$", "op", w=2.9, h=0.9)
    soft = _box(ax, 2.15, 2.1, "softmax over each row", "op", w=2.9)
    AV = _box(ax, 3.6, 0.75, "$A V$", "op", w=2.0)
    _arrow(ax, Q, S)
    _arrow(ax, K, S, "$K^\\top$")
    _arrow(ax, S, scale, "scores $(t_q, t_k)$")
    _arrow(ax, scale, mask, "$(t_q, t_k)$")
    _arrow(ax, mask, soft, "$(t_q, t_k)$")
    _arrow(ax, soft, AV, "  weights $A$ $(t_q, t_k)$,\n  rows sum to 1", text_offset=(0.2, 0.1))
    _arrow(ax, V, AV)
    ax.annotate("", xy=(3.6, -0.55), xytext=(3.6, 0.33),
                arrowprops=dict(arrowstyle="-|>", color="0.25", lw=1.1))
    ax.text(3.75, -0.2, "output $(t_q, d_v)$", fontsize=8, va="center")
    return ax


def multihead_diagram(ax=None, title="Multi-head attention: split, attend, concatenate"):
    """X → Q, K, V → view and transpose into h heads → attention per head → transpose back and
    concatenate → W_O, with the tensor shape at every step (batch dimension b)."""
    ax = _canvas(ax, (-0.2, 9.4), (-0.7, 9.4), (5.6, 6.6), title)
    X = _box(ax, 4.6, 8.9, "$X$  $(b, t, d_{model})$", "data", w=3.4)
    proj = [_box(ax, x, 7.6, f"$X W_{n}$", "param", w=1.6) for x, n in ((2.3, "Q"), (4.6, "K"), (6.9, "V"))]
    split = _box(ax, 4.6, 6.1, "view $(b, t, h, d_k)$,\ntranspose $\\to (b, h, t, d_k)$", "op",
                 w=5.4, h=0.95)
    heads = [_box(ax, x, 4.5, lab, "op", w=1.9, h=0.9)
             for x, lab in ((1.5, "head 1\nattention"), (3.8, "head 2\nattention"),
                            (6.1, "$\\cdots$"), (8.2, "head $h$\nattention"))]
    merge = _box(ax, 4.6, 2.9, "transpose $\\to (b, t, h, d_k)$,\nreshape $(b, t, h d_k)$: concat",
                 "op", w=5.4, h=0.95)
    WO = _box(ax, 4.6, 1.55, "$\\cdot\\, W_O$  $(h d_k, d_{model})$", "param", w=3.4)
    for p in proj:
        _arrow(ax, X, p)
        _arrow(ax, p, split)
    ax.text(7.9, 6.85, "each $(b, t, d_{model})$", fontsize=8, va="center")
    for hd in heads:
        _arrow(ax, split, hd)
        _arrow(ax, hd, merge)
    ax.text(8.35, 3.7, "each\n$(b, t, d_k)$", fontsize=8, va="center")
    _arrow(ax, merge, WO)
    ax.annotate("", xy=(4.6, -0.55), xytext=(4.6, 1.13),
                arrowprops=dict(arrowstyle="-|>", color="0.25", lw=1.1))
    ax.text(4.75, 0.3, "output $(b, t, d_{model})$", fontsize=8, va="center")
    ax.text(-0.1, 5.3, "$d_k = d_{model} / h$", fontsize=9, va="center")
    return ax


def _sublayer_stack(ax, x, y0, sublayers, input_label, output_label):
    """Draw input → [sublayer → Add & Norm]* → output upwards from y0, residual arrows on the
    left. ``sublayers``: list of (text, kind, side_input or None)."""
    inp = _box(ax, x, y0, input_label, "data", w=2.8)
    prev, y = inp, y0
    for text, kind, side in sublayers:
        y += 1.35
        sub = _box(ax, x, y, text, kind, w=2.8, h=0.9)
        _arrow(ax, prev, sub)
        if side is not None:
            src = _box(ax, x + 3.0, y - 0.6, side, "data", w=2.0, h=0.8, fontsize=8)
            _arrow(ax, src, sub)
        y += 1.2
        norm = _box(ax, x, y, "Add & Norm", "norm", w=2.8, h=0.7)
        _arrow(ax, sub, norm)
        # residual: from below the sublayer, around its left side, into the Add & Norm
        xs, ys = x - 1.4, prev[1] + prev[3] / 2 + 0.15
        ax.annotate("", xy=(x - 1.4, y), xytext=(xs, ys),
                    arrowprops=dict(arrowstyle="-|>", color="tab:gray", lw=1.1,
                                    connectionstyle="bar,fraction=-0.35"))
        prev = norm
    ax.annotate("", xy=(x, y + 1.0), xytext=(x, y + 0.35),
                arrowprops=dict(arrowstyle="-|>", color="0.25", lw=1.1))
    ax.text(x, y + 1.2, output_label, ha="center", va="bottom", fontsize=9)
    return y


def transformer_layers_diagram(axes=None, title=None):
    """The encoder layer (self-attention, FFN) and the decoder layer (masked self-attention,
    cross-attention with keys and values from the encoder, FFN) of the original, post-norm
    Transformer; every sublayer is followed by Add & Norm (residual, then LayerNorm)."""
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(6.4, 6.0), constrained_layout=True,
                                 gridspec_kw=dict(width_ratios=[1, 1.25]))
    _check_axes(axes, 2, "encoder, decoder")
    enc, dec = axes
    for ax, xlim in ((enc, (-1.2, 4.2)), (dec, (-1.2, 6.0))):
        _canvas(ax, xlim, (-0.6, 10.4), None, None)
    _sublayer_stack(enc, 1.6, 0.0,
                    [("multi-head\nself-attention", "op", None),
                     ("feed-forward\n(position-wise)", "op", None)],
                    "$X$  $(b, t_{src}, d_{model})$", "to the next layer")
    enc.set_title("Encoder layer")
    _sublayer_stack(dec, 1.6, 0.0,
                    [("masked multi-head\nself-attention", "op", None),
                     ("multi-head\ncross-attention", "op", "K, V: encoder\noutput"),
                     ("feed-forward\n(position-wise)", "op", None)],
                    "$Y$  $(b, t_{tgt}, d_{model})$", "to the next layer")
    dec.text(1.6 + 1.55, 1.35 + 0.55, "causal\nmask", fontsize=8, va="center")
    dec.text(1.6 + 1.55, 3.9 + 0.6, "Q: decoder", fontsize=8, va="center")
    dec.set_title("Decoder layer")
    if title:
        axes[0].figure.suptitle(title)
    return axes


def rnn_unrolled_diagram(ax=None, steps=4, title="A recurrent network, unrolled in time"):
    """x_t → h_t → y_t for t = 1..steps, with the same W_h carrying h_{t-1} into h_t."""
    steps = validate.integer(steps, "steps")
    if steps < 2:
        raise ValueError(f"need at least 2 steps to show the recurrence; got {steps}")
    width = 1.8 * steps + 1.2
    ax = _canvas(ax, (-0.4, width), (-1.1, 4.2), (min(6.4, 1.3 * steps + 1.2), 3.4), title)
    h0 = _box(ax, 0.4, 1.8, "$h_0$", "state", w=0.8)
    prev = h0
    for t in range(1, steps + 1):
        x = 0.2 + 1.8 * t
        label = "T" if t == steps else str(t)
        h = _box(ax, x, 1.8, f"$h_{label}$", "state", w=1.0)
        xt = _box(ax, x, 0.0, f"$x_{label}$", "data", w=1.0)
        yt = _box(ax, x, 3.6, f"$y_{label}$", "data", w=1.0)
        _arrow(ax, xt, h, "$W_x$")
        _arrow(ax, h, yt)
        _arrow(ax, prev, h, "$W_h$" if t == 1 else None, text_offset=(-0.3, 0.28))
        prev = h
    ax.text(width / 2, -0.85, "$h_t = \\tanh(W_h h_{t-1} + W_x x_t + b)$: the same weights at "
            "every step", ha="center", fontsize=9)
    return ax


def architectures_diagram(ax=None, title="One stack of blocks, three wirings"):
    """Encoder-only, decoder-only and encoder-decoder side by side (chapter 12): what goes in,
    which attention each stack uses, what comes out and what it is trained to predict."""
    ax = _canvas(ax, (-0.3, 12.5), (-0.5, 6.4), (8.6, 4.6), title)
    for x, name in ((1.6, "encoder-only (BERT)"), (5.2, "decoder-only (GPT)"),
                    (9.85, "encoder-decoder (T5, translation)")):
        ax.text(x, 6.1, name, ha="center", fontsize=9, weight="bold")
    # encoder-only
    enc_in = _box(ax, 1.6, 0.4, "the cat <mask> on", "data", w=2.6)
    enc = _box(ax, 1.6, 2.5, "N blocks,\nbidirectional\n(padding mask only)", "op", w=2.6, h=1.3)
    enc_out = _box(ax, 1.6, 4.8, "a vector per token:\n<mask> → sat", "data", w=2.6, h=0.9)
    _arrow(ax, enc_in, enc)
    _arrow(ax, enc, enc_out)
    # decoder-only
    dec_in = _box(ax, 5.2, 0.4, "the cat sat", "data", w=2.4)
    dec = _box(ax, 5.2, 2.5, "N blocks,\ncausal mask", "op", w=2.4, h=1.3)
    dec_out = _box(ax, 5.2, 4.8, "next token at each\nposition: cat sat on", "data", w=2.6, h=0.9)
    _arrow(ax, dec_in, dec)
    _arrow(ax, dec, dec_out)
    # encoder-decoder
    src = _box(ax, 8.4, 0.4, "source: the cat", "data", w=2.2)
    encoder = _box(ax, 8.4, 2.5, "encoder:\nbidirectional", "op", w=2.0, h=1.3)
    tgt = _box(ax, 11.3, 0.4, "<bos> el", "data", w=1.9)
    decoder = _box(ax, 11.3, 2.5, "decoder: causal\n+ cross-attention", "op", w=2.1, h=1.3)
    out = _box(ax, 11.3, 4.8, "next token:\nel gato", "data", w=2.0, h=0.9)
    _arrow(ax, src, encoder)
    _arrow(ax, tgt, decoder)
    _arrow(ax, encoder, decoder)
    ax.text(9.82, 2.0, "keys and\nvalues", fontsize=7.5, ha="center", va="top", color="0.2")
    _arrow(ax, decoder, out)
    return ax


def gru_cell_diagram(ax=None, title="One step of a GRU"):
    """h_{t-1} and x_t → reset gate r_t, update gate z_t → candidate n_t → the mix
    h_t = (1 - z_t) ⊙ n_t + z_t ⊙ h_{t-1}, with the direct path from h_{t-1} to h_t along the top
    (chapter 9's equations, PyTorch's convention)."""
    ax = _canvas(ax, (-0.2, 11.8), (-0.1, 6.0), (7.2, 3.8), title)
    h_prev = _box(ax, 0.9, 5.2, "$h_{t-1}$", "state", w=1.3)
    x = _box(ax, 0.9, 0.6, "$x_t$", "data", w=1.3)
    r = _box(ax, 2.8, 3.0, "reset gate\n$r_t = \\sigma(\\ldots)$", "op", w=2.0, h=0.95)
    n = _box(ax, 5.9, 3.0, "candidate $n_t =$\n$\\tanh(W x_t + r_t \\odot W h_{t-1})$", "op",
             w=3.0, h=0.95)
    z = _box(ax, 9.0, 3.0, "update gate\n$z_t = \\sigma(\\ldots)$", "op", w=2.1, h=0.95)
    mix = _box(ax, 8.7, 5.2, "$(1 - z_t) \\odot n_t + z_t \\odot h_{t-1}$", "op", w=3.2, h=0.7)
    h = _box(ax, 11.3, 5.2, "$h_t$", "state", w=0.8)
    for target in (r, n, z):
        _arrow(ax, h_prev, target)
        _arrow(ax, x, target)
    _arrow(ax, r, n)
    ax.text(4.1, 3.2, "$r_t$", fontsize=8, ha="center", color="0.2")
    _arrow(ax, n, mix)
    _arrow(ax, z, mix)
    ax.text(9.05, 4.1, "$z_t$", fontsize=8, ha="left", color="0.2")
    _arrow(ax, h_prev, mix)
    ax.text(4.2, 5.45, "$h_{t-1}$ itself, scaled by $z_t$: no $\\tanh$, no $W$", fontsize=8,
            ha="center", color="0.2")
    _arrow(ax, mix, h)
    return ax


def seq2seq_diagram(axes=None, title=None):
    """Two panels: the RNN encoder-decoder whose only link is s_0 = f(h_T) (the bottleneck), and
    the same with attention, where every decoder step reads a context c_i = Σ_j a_ij h_j."""
    if axes is None:
        fig, axes = plt.subplots(2, 1, figsize=(5.8, 6.2), constrained_layout=True)
    _check_axes(axes, 2, "without, with attention")
    src, tgt = ["I", "am", "hungry"], ["tengo", "hambre", "<eos>"]
    for ax, attention in zip(axes, (False, True)):
        _canvas(ax, (-0.5, 10.6), (-1.2, 4.2), None,
                "with attention: every step reads all $h_j$" if attention
                else "without attention: one vector $s_0$ carries the source")
        hs = []
        for j, w in enumerate(src):
            x = 0.6 + 1.5 * j
            h = _box(ax, x, 1.2, f"$h_{j + 1}$", "state", w=1.0)
            _arrow(ax, _box(ax, x, -0.2, w, "data", w=1.2, fontsize=8), h)
            if hs:
                _arrow(ax, hs[-1], h)
            hs.append(h)
        prev = _box(ax, 5.4, 1.2, "$s_0$", "state", w=0.9)
        _arrow(ax, hs[-1], prev, "$f(h_T)$" if not attention else None, text_offset=(-0.45, 0.3))
        ins = ["<bos>"] + tgt[:-1]
        for i, (w_in, w_out) in enumerate(zip(ins, tgt)):
            x = 6.8 + 1.5 * i
            s = _box(ax, x, 1.2, f"$s_{i + 1}$", "state", w=1.0)
            _arrow(ax, _box(ax, x, -0.2, w_in, "data", w=1.2, fontsize=8), s)
            _arrow(ax, s, _box(ax, x, 3.6, w_out, "data", w=1.2, fontsize=8))
            _arrow(ax, prev, s)
            prev = s
            if attention:  # c_i = sum_j a_ij h_j, read by step i
                c = (x - 0.5, 2.45)
                ax.text(*c, f"$c_{i + 1}$", fontsize=9, ha="center", va="center",
                        color="tab:purple")
                for h in hs:
                    _arrow(ax, (h[0], h[1] + 0.42), (c[0] - 0.3, c[1]), colour="tab:purple",
                           rad=-0.12, ls=":", style="->")
                _arrow(ax, (c[0], c[1] - 0.2), (x - 0.3, 1.62), colour="tab:purple", style="->")
        ax.text(2.1, -0.95, "encoder", ha="center", fontsize=9, color="0.3")
        ax.text(8.3, -0.95, "decoder", ha="center", fontsize=9, color="0.3")
    if title:
        axes[0].figure.suptitle(title)
    return axes


def attention_pipeline_diagram(X, i, ax=None,
                               title="One token's attention: scores, softmax, weighted sum"):
    """Chapter 1's y_i = Σ_j softmax_j(x_i · x_j) x_j for one query, on the numbers of X:
    the tokens x_j, the scores x_i · x_j, the softmax weights a_ij (a row that sums to 1) and
    the output y_i. X: (n, d) with 2 <= n <= 4 and d <= 3 (every number is printed); i: the
    query's index, from 0."""
    X = _to_numpy(X, "X")
    i = validate.integer(i, "i")
    if X.ndim != 2 or not 2 <= X.shape[0] <= 4 or not 1 <= X.shape[1] <= 3:
        raise ValueError(f"need X of shape (n, d) with 2 <= n <= 4 and d <= 3 to print every "
                         f"number; got {tuple(X.shape)}")
    n = len(X)
    if not 0 <= i < n:
        raise ValueError(f"query index i must be in 0..{n - 1}; got {i}")
    with np.errstate(over="ignore", invalid="ignore"):
        s = X @ X[i]                               # (n,) scores x_i · x_j
    if not np.isfinite(s).all():
        raise ValueError(f"X's scores x_i · x_j are not all finite ({s.tolist()}): X holds NaN "
                         "or inf, or numbers too large to multiply in float64")
    a = np.exp(s - s.max())
    a = a / a.sum()                                # (n,) weights a_ij
    y = a @ X                                      # (d,) output y_i

    def vec(v):
        return "(" + ", ".join(f"{x:.2f}" for x in v) + ")"

    q = i + 1                                      # 1-based, as in the text
    width = 2.4 * n + 0.2
    ax = _canvas(ax, (0.0, width), (0.55, 9.8), (1.45 * n + 0.6, 5.2), title)
    cols = [1.3 + 2.4 * j for j in range(n)]
    steps = [(9.35, f"tokens $x_j$; the query is $x_{q}$"),
             (7.35, f"1. scores: $x_{q} \\cdot x_j$ for every $j$"),
             (5.35, "2. softmax: weights $\\geq 0$ that sum to 1"),
             (3.35, "3. weighted sum of the tokens")]
    for y_text, text in steps:
        ax.text(0.1, y_text, text, fontsize=10, va="center", color="0.15", zorder=4,
                bbox=dict(facecolor="white", edgecolor="none", pad=1.5))
    tokens = [_box(ax, c, 8.5, f"$x_{j + 1}$ {vec(X[j])}", "data", w=2.2, h=0.8,
                   fontsize=10) for j, c in enumerate(cols)]
    query = ax.patches[-(n - i)]
    query.set_linewidth(2.2)
    query.set_edgecolor("tab:purple")
    scores = [_box(ax, c, 6.5, f"$x_{q} \\cdot x_{j + 1} = {s[j]:.2f}$", "op", w=2.2, h=0.8,
                   fontsize=10)
              for j, c in enumerate(cols)]
    weights = [_box(ax, c, 4.5, f"$a_{{{q}{j + 1}}} = {a[j]:.2f}$", "op", w=2.2, h=0.8,
                    fontsize=10) for j, c in enumerate(cols)]
    terms = " + ".join(f"{a[j]:.2f}\\,x_{j + 1}" for j in range(n))
    out = _box(ax, width / 2, 1.45, f"$y_{q} = {terms}$\n$= {vec(y)}$", "data",
               w=width - 0.4, h=1.3, fontsize=10)
    for j in range(n):
        _arrow(ax, tokens[j], scores[j])
        if j != i:                                 # the query meets every token
            _arrow(ax, tokens[i], scores[j], colour="tab:purple", ls=":", style="->")
        _arrow(ax, scores[j], weights[j])
        _arrow(ax, weights[j], out)
    return ax


def _grid(ax, x, y, rows, cols, colours, cell=0.36):
    """A rows × cols matrix drawn as cells centred at (x, y); row r filled with colours[r].
    Returns (x, y, w, h) like _box, for _arrow."""
    from matplotlib.patches import Rectangle

    w, h = cols * cell, rows * cell
    for r in range(rows):
        for c in range(cols):
            ax.add_patch(Rectangle((x - w / 2 + c * cell, y + h / 2 - (r + 1) * cell), cell,
                                   cell, facecolor=colours[r], edgecolor="0.35", lw=0.8,
                                   zorder=2))
    return (x, y, w, h)


def qkv_projections_diagram(n=4, d=6, d_k=3, d_v=2, ax=None,
                            title="The same tokens, three projections", through_output=False):
    """Chapter 3's Q = X W_Q, K = X W_K, V = X W_V drawn as matrices: X (n × d) with one
    colour per token row, each weight matrix (d × d_k or d × d_v) and each result, whose row r
    comes from token r alone. through_output=True carries on to the output: the scores
    S = Q Kᵀ (n × n), A = softmax(S) row by row, and Y = A V (n × d_v), where row r of Y is
    the first row that mixes the tokens (the values of all of them, weighted by row r of A)."""
    n, d, d_k, d_v = (validate.integer(v, name) for v, name in
                      ((n, "n"), (d, "d"), (d_k, "d_k"), (d_v, "d_v")))
    if not isinstance(through_output, bool):
        raise TypeError(f"through_output must be True or False; got {through_output!r}")
    if not (2 <= n <= 6 and 2 <= d <= 8 and 1 <= d_k <= 4 and 1 <= d_v <= 4):
        raise ValueError(f"draw with 2 <= n <= 6, 2 <= d <= 8 and d_k, d_v in 1..4; got n={n}, "
                         f"d={d}, d_k={d_k}, d_v={d_v}")
    bottom = -8.6 if through_output else -2.2
    ax = _canvas(ax, (-0.3, 10.3), (bottom, 9.2),
                 (4.8, 9.0) if through_output else (4.8, 5.5), title)
    tokens = [plt.cm.Pastel1(r % 9) for r in range(n)]
    X = _grid(ax, 5.0, 7.7, n, d, tokens)
    ax.text(5.0 + X[2] / 2 + 0.2, 7.7, f"$X$\n$({n} \\times {d})$\none row\nper token",
            fontsize=10, va="center")
    roles = [("Q", d_k, "queries:\nwhat it\nlooks for"), ("K", d_k, "keys:\nwhat it is\nfound by"),
             ("V", d_v, "values:\nwhat it\nhands over")]
    results = []
    for x, (name, size, role) in zip((1.6, 5.0, 8.4), roles):
        W = _grid(ax, x, 4.7, d, size, [_COLOURS["param"]] * d)
        ax.text(x + W[2] / 2 + 0.15, 4.7, f"$W_{name}$\n$({d} \\times {size})$", fontsize=10,
                va="center")
        _arrow(ax, (X[0] - X[2] / 2 + (x - 1.6) / 6.8 * X[2], X[1] - X[3] / 2 - 0.05),
               (x, W[1] + W[3] / 2 + 0.1))
        R = _grid(ax, x, 1.2, n, size, tokens)
        results.append(R)
        _arrow(ax, (x, W[1] - W[3] / 2 - 0.05), (x, R[1] + R[3] / 2 + 0.1))
        ax.text(x + R[2] / 2 + 0.15, 1.2, f"${name} = X W_{name}$\n$({n} \\times {size})$",
                fontsize=10, va="center")
        ax.text(x, -0.75, role, fontsize=9, ha="center", va="center", color="0.2")
    if not through_output:
        ax.text(5.0, -1.95, "row $r$ of $Q$, $K$ and $V$ comes from token $r$ alone (same colour)",
                fontsize=9, ha="center", va="center", color="0.2")
        return ax
    # the attention: scores from Q and K, softmax row by row, then the weighted sum of V's rows
    under = -1.45                                  # below the role labels
    S = _grid(ax, 3.3, -2.9, n, n, tokens)
    for x in (1.6, 5.0):
        _arrow(ax, (x, under), (3.3 + (x - 3.3) * 0.25, S[1] + S[3] / 2 + 0.1))
    ax.text(3.3 + S[2] / 2 + 0.15, -2.9, f"$S = Q K^\\top$\n$({n} \\times {n})$\nrow $i$: token "
            "$i$'s\nscore for each key", fontsize=9.5, va="center")
    A = _grid(ax, 3.3, -5.7, n, n, tokens)
    _arrow(ax, (3.3, S[1] - S[3] / 2 - 0.05), (3.3, A[1] + A[3] / 2 + 0.1),
           text="softmax of\neach row", text_offset=(0.12, 0.0), fontsize=9)
    ax.text(3.3 - A[2] / 2 - 0.15, -5.7, f"$A$\n$({n} \\times {n})$\nrows sum\nto 1",
            fontsize=9.5, va="center", ha="right")
    Y = _grid(ax, 8.4, -5.7, n, d_v, tokens)
    _arrow(ax, (8.4, under), (8.4, Y[1] + Y[3] / 2 + 0.1))
    _arrow(ax, (A[0] + A[2] / 2 + 0.05, -5.7), (Y[0] - Y[2] / 2 - 0.1, -5.7))
    ax.text(8.4, Y[1] - Y[3] / 2 - 0.2, f"$Y = A V$\n$({n} \\times {d_v})$\noutputs",
            fontsize=9.5, ha="center", va="top")
    ax.text(5.0, -8.0, "row $r$ of $Q$, $K$ and $V$ comes from token $r$ alone (same colour);\n"
            "row $r$ of $Y$ mixes the values of all tokens, weighted by row $r$ of $A$",
            fontsize=9, ha="center", va="center", color="0.2")
    return ax


def word2vec_diagram(words, centre, window, axes=None):
    """Two panels, one window of a sentence: skip-gram (the centre word's vector predicts each
    context word, one prediction per pair) and CBOW (the average of the context words' vectors
    predicts the centre word). words: the sentence; centre: the centre's index; window: m."""
    words = validate.str_list(words, "words")
    centre = validate.integer(centre, "centre")
    window = validate.integer(window, "window")
    if not 0 <= centre < len(words):
        raise ValueError(f"centre must index the {len(words)} words; got {centre}")
    if window < 1:
        raise ValueError(f"window must be at least 1; got {window}")
    if len(words) > 8:
        raise ValueError(f"at most 8 words fit across the page; got {len(words)}")
    if axes is None:
        _, axes = plt.subplots(2, 1, figsize=(5.0, 4.6), constrained_layout=True)
    _check_axes(axes, 2, "skip-gram, CBOW")
    context = [j for j in range(len(words)) if 1 <= abs(j - centre) <= window]
    xs = [0.75 + 1.45 * j for j in range(len(words))]
    mid = xs[centre]
    predicted = "tab:red"
    for ax, model in zip(axes, ("skip-gram", "CBOW")):
        _canvas(ax, (0.0, 1.45 * len(words) + 0.05), (-0.75, 3.35), None, None)
        boxes = []
        for j, (x, w) in enumerate(zip(xs, words)):
            kind = "data" if j == centre or j in context else "op"
            boxes.append(_box(ax, x, 0.0, w, kind, w=1.3, h=0.7, fontsize=10))
            if kind == "op":                       # outside the window: greyed out
                ax.patches[-1].set_facecolor("0.93")
                ax.texts[-1].set_color("0.55")
        targets = context if model == "skip-gram" else [centre]
        for j in targets:
            ax.patches[j].set_edgecolor(predicted)
            ax.patches[j].set_linewidth(2.0)
        if model == "skip-gram":
            hub = _box(ax, mid, 2.2, f"$v_{{\\mathrm{{{words[centre]}}}}}$", "param", w=1.6,
                       h=0.75, fontsize=10)
            _arrow(ax, boxes[centre], hub)
            for j in context:
                _arrow(ax, hub, boxes[j], colour=predicted)
            ax.set_title(f"skip-gram: the centre predicts each context word\n"
                         f"({len(context)} pairs, {len(context)} predictions "
                         f"$p(o \\mid \\mathrm{{{words[centre]}}})$)", fontsize=10)
        else:
            hub = _box(ax, mid, 2.2, "$h$ = average of\nthe context's $v$", "param", w=2.6,
                       h=0.85, fontsize=10)
            for j in context:
                _arrow(ax, boxes[j], hub)
            _arrow(ax, hub, boxes[centre], colour=predicted)
            ax.set_title("CBOW: the context together predicts the centre\n"
                         "(one prediction $p(\\mathrm{" + words[centre] + "} \\mid h)$)",
                         fontsize=10)
    axes[1].text(0.05, -0.62, "red: the words predicted; grey: outside the window",
                 fontsize=8.5, color="0.35", va="center")
    return axes
