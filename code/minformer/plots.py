"""Figures the book draws more than once. Each function draws on ``ax`` (a new one if None)
and returns it; the notebook calls ``plt.show()``."""

import matplotlib.pyplot as plt
import numpy as np
import torch


def _to_numpy(A) -> np.ndarray:
    if isinstance(A, torch.Tensor):
        A = A.detach().cpu().numpy()
    return np.asarray(A, dtype=np.float64)


def attention_heatmap(A, row_labels=None, col_labels=None, ax=None, title=None,
                      annotate: bool = False, cmap: str = "viridis", colorbar: bool = True,
                      vmin: float | None = 0.0, vmax: float | None = None):
    """Draw an attention matrix: row i (a query) shows how token i spreads its weight over the
    columns (keys).

    A: (t_q, t_k). row_labels: t_q strings; col_labels: t_k strings.
    annotate writes each weight in its cell (for small matrices).
    """
    A = _to_numpy(A)
    if A.ndim != 2:
        raise ValueError(f"attention_heatmap draws one (t_q, t_k) matrix; got shape {A.shape}")
    t_q, t_k = A.shape
    for labels, size, axis in ((row_labels, t_q, "row"), (col_labels, t_k, "column")):
        if labels is not None and len(labels) != size:
            raise ValueError(f"{len(labels)} {axis} labels for a matrix of shape {A.shape}")
    if ax is None:
        width = min(2.0 + 0.55 * t_k, 12)
        _, ax = plt.subplots(figsize=(width, min(1.6 + 0.45 * t_q, 10)))
    im = ax.imshow(A, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(t_k), col_labels if col_labels is not None else range(t_k),
                  rotation=45 if col_labels is not None else 0, ha="right" if col_labels else "center")
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
    X, Y = _to_numpy(X), _to_numpy(Y)
    if X.ndim != 2 or X.shape[1] != 2 or Y.shape != X.shape:
        raise ValueError(f"need X and Y of the same shape (n, 2); got X {X.shape}, Y {Y.shape}")
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
