"""Attention: softmax, attention as a weighted average of the tokens, and scaled dot-product
attention softmax(Q Kᵀ / √d_k) V with masks.

The book's convention: a sequence is a matrix ``X`` of shape ``(n, d)`` whose rows are tokens.
``softmax``, ``attention_weights`` and ``dot_product_attention`` accept NumPy arrays or PyTorch
tensors and return the same kind; ``scaled_dot_product_attention`` works on PyTorch tensors.
Masks are bool with True = may attend (see :mod:`minformer.masks`), and must have a shape that
cannot be misread: ``(t_q, t_k)``, or the scores' own rank with each axis equal to the scores'
or 1 (see :func:`check_mask`).
"""

import math
import warnings
from pathlib import Path

import numpy as np
import torch

from . import validate


def _is_torch(x) -> bool:
    return isinstance(x, torch.Tensor)


def softmax(x, axis: int = -1):
    """softmax(x)_i = exp(x_i) / Σ_j exp(x_j) along ``axis``, computed stably.

    Subtracting the maximum along ``axis`` first changes nothing mathematically (it cancels in
    the ratio) but keeps ``exp`` from overflowing for large inputs.
    x: array or tensor of any shape. Returns the same shape, non-negative, summing to 1 along axis.
    """
    axis = validate.integer(axis, "axis")
    if not (_is_torch(x) or isinstance(x, np.ndarray)):
        if isinstance(x, (str, bytes, dict, set)) or x is None:
            raise TypeError(f"softmax takes an array or a tensor of numbers; got "
                            f"{type(x).__name__}")
        try:
            x = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"softmax takes an array or a tensor of numbers; got "
                            f"{type(x).__name__} that is not one") from None
    if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        raise ValueError(f"axis={axis} is out of range for an input of shape {tuple(x.shape)}")
    if _is_torch(x):
        if x.ndim == 0:
            raise ValueError("softmax needs at least one axis, got a 0-d tensor")
        if not torch.is_floating_point(x):
            x = x.float()
        z = x - x.amax(dim=axis, keepdim=True)
        e = torch.exp(z)
        return e / e.sum(dim=axis, keepdim=True)
    if x.dtype.kind not in "fiub":
        raise TypeError(f"softmax takes numbers; got an array of dtype {x.dtype}")
    if x.dtype.kind != "f":
        x = x.astype(np.float64)  # integers and booleans: exp needs floats
    if x.ndim == 0:
        raise ValueError("softmax needs at least one axis, got a 0-d array")
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _check_tokens(X, name: str = "X"):
    if not (_is_torch(X) or isinstance(X, np.ndarray)):
        try:
            X = np.asarray(X, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be an array or a tensor of numbers (n, d); got "
                            f"{type(X).__name__}") from None
    if _is_torch(X) and not X.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor; got dtype {X.dtype} "
                        "(convert with .float())")
    if isinstance(X, np.ndarray) and X.dtype.kind not in "fiu":
        raise TypeError(f"{name} must hold numbers; got an array of dtype {X.dtype}")
    if X.ndim not in (2, 3):
        raise ValueError(
            f"{name} must be (n, d) or (batch, n, d) with tokens as rows; got shape {tuple(X.shape)}"
        )
    n, d = X.shape[-2], X.shape[-1]
    if n == 0 or d == 0:
        raise ValueError(f"{name} is empty: shape {tuple(X.shape)} has n={n} tokens of size d={d}")
    return X


def _transpose(X):
    return X.transpose(-2, -1) if _is_torch(X) else np.swapaxes(X, -2, -1)


def attention_weights(X):
    """A = softmax(X Xᵀ), row-wise: A[i, j] is how much token i attends to token j.

    X: (n, d) or (batch, n, d). Returns (n, n) or (batch, n, n); every row sums to 1.
    """
    X = _check_tokens(X)
    scores = X @ _transpose(X)  # (..., n, n): scores[i, j] = x_i · x_j
    return softmax(scores, axis=-1)


def dot_product_attention(X, return_weights: bool = False):
    """Y = softmax(X Xᵀ) X: each output row y_i = Σ_j softmax_j(x_i · x_j) x_j.

    X: (n, d) or (batch, n, d), NumPy or PyTorch.
    Returns Y with the shape of X, and A = softmax(X Xᵀ) of shape (..., n, n) if return_weights.
    """
    X = _check_tokens(X)
    A = attention_weights(X)  # (..., n, n)
    Y = A @ X  # (..., n, d): row i is a convex combination of the rows of X
    return (Y, A) if return_weights else Y


class EmptyRowWarning(UserWarning):
    """A mask leaves some query with no key it may attend to."""


_empty_row_warned = False


def check_mask(mask, scores_shape, name: str = "mask") -> None:
    """Refuse a mask that is not bool, or whose shape could be misread.

    The accepted shapes, for scores of shape (..., t_q, t_k):

    - ``(t_q, t_k)`` (or ``(1, t_k)``): one mask for every sequence and head, e.g. causal;
    - the scores' own rank, each axis equal to the scores' or 1, the last one t_k: for
      multi-head scores (batch, heads, t_q, t_k) that is (batch | 1, heads | 1, t_q | 1, t_k),
      e.g. ``padding_mask(lengths)`` (batch, 1, 1, t_k); for single-head scores
      (batch, t_q, t_k) it is (batch | 1, t_q | 1, t_k), e.g. ``padding_mask(lengths,
      head_axis=False)`` (batch, 1, t_k).

    Any other rank is refused, however it would broadcast: a (batch, t_k) key-padding mask
    would be read as (t_q, t_k), and a (batch, 1, t_k) mask against multi-head scores as
    (heads, t_q, t_k) — both run and give wrong answers when batch equals t_q or heads.
    """
    validate.bool_tensor(mask, name)
    target = tuple(scores_shape)
    shape, t_q, t_k = tuple(mask.shape), target[-2], target[-1]
    wanted = (f"(t_q, t_k) = ({t_q}, {t_k}), or {len(target)} axes matching the scores "
              f"{target} (each axis equal or 1)")
    if len(shape) == 2:
        ok = shape[0] in (t_q, 1) and shape[1] == t_k
    elif len(shape) == len(target) and len(shape) >= 3:
        ok = shape[-1] == t_k and all(m in (s, 1) for m, s in zip(shape, target))
    else:
        ok = False
    if ok:
        return
    batch = target[0] if len(target) >= 3 else None
    if len(shape) == 2 and shape == (batch, t_k):
        if len(target) == 4:
            fix = ("mask[:, None, None, :] (batch, 1, 1, t_k), which is what "
                   "padding_mask(lengths) returns")
        else:
            fix = "mask[:, None, :] (batch, 1, t_k), as padding_mask(lengths, head_axis=False)"
        raise ValueError(f"{name} of shape {shape} looks like a (batch, t_k) key-padding "
                         f"mask, but a 2-axis mask means (t_q, t_k) and would apply the same "
                         f"rows to every sequence; for scores {target} pass {fix}")
    if len(shape) == 3 and len(target) == 4 and shape[0] in (target[0], 1) and shape[-1] == t_k:
        raise ValueError(f"{name} of shape {shape} is ambiguous against multi-head scores "
                         f"{target} (batch, heads, t_q, t_k): it would line up with (heads, "
                         f"t_q, t_k), reading the batch axis as the heads; add the head axis, "
                         f"mask[:, None] {(shape[0], 1, *shape[1:])} — padding_mask(lengths) "
                         f"already returns (batch, 1, 1, t_k)")
    if len(shape) == 1:
        raise ValueError(f"{name} of shape {shape} has one axis; it needs {wanted}: for the "
                         "same keys for every query pass mask[None, :] (1, t_k)")
    raise ValueError(f"{name} of shape {shape} does not fit the attention scores' shape "
                     f"{target} (..., t_q, t_k); it must be {wanted}")


def warn_empty_rows(mask, self_attention: bool, allow_empty_rows: bool, t: int | None = None
                    ) -> None:
    """Warn (once per session) when a self-attention mask leaves a real query with no visible
    key: usually a flipped convention (True = masked) or a wrong mask; such rows output zeros.

    A query whose own position is hidden from every query (a padding token) may see nothing
    without a warning: padding plus a causal or sliding-window mask does that legitimately. A
    sequence in which no query sees anything (a flipped padding mask, or a sequence of length
    0) is warned about.
    """
    global _empty_row_warned
    if allow_empty_rows or not self_attention or _empty_row_warned:
        return
    t = mask.shape[-1] if t is None else t
    m = mask.expand(*mask.shape[:-2], t, t)  # (..., t, t) a view: queries × keys
    empty = ~m.any(dim=-1)  # (..., t) queries with no allowed key
    if not bool(empty.any()):
        return
    padding = ~m.any(dim=-2)  # (..., t) positions no query may see: padding
    suspicious = (empty & ~padding) | empty.all(dim=-1, keepdim=True)
    if bool(suspicious.any()):
        _empty_row_warned = True
        where = tuple(int(i) for i in torch.nonzero(suspicious)[0])
        warnings.warn(
            f"the mask leaves query {where[-1]} (mask index {where}) of a self-attention with "
            "no key it may attend to; its output will be zeros. If the mask's convention is "
            "flipped (True = masked, as nn.MultiheadAttention's), invert it with ~mask; if "
            "this is intended, pass allow_empty_rows=True (warned once per session)",
            EmptyRowWarning, stacklevel=_caller_level())


def _caller_level() -> int:
    """The stacklevel of the first frame outside minformer and torch: the warning then points
    at the reader's line, not at nn.Module's call machinery."""
    import sys

    skip = (str(Path(__file__).parent), str(Path(torch.__file__).parent))
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(skip):
        frame, level = frame.f_back, level + 1
    return level


def _check_bool_mask(mask, target_shape, name: str = "mask"):
    """Kept for callers of the old name: :func:`check_mask`."""
    check_mask(mask, target_shape, name)


def _masked_softmax(scores, mask):
    """Row-wise softmax of ``scores`` over the keys allowed by ``mask``; a row with no allowed key
    gets all-zero weights instead of the NaN that softmax over only -inf entries would give.

    scores: (..., t_q, t_k). mask: bool broadcastable to scores, or None.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    any_key = mask.any(dim=-1, keepdim=True)  # (..., t_q, 1): does the row see any key at all?
    scores = scores.masked_fill(~mask, float("-inf"))
    scores = scores.masked_fill(~any_key, 0.0)  # a fully masked row: finite, so no NaN
    return torch.softmax(scores, dim=-1) * mask  # masked keys get exactly 0, empty rows all 0


def scaled_dot_product_attention(Q, K, V, mask=None, return_weights: bool = False,
                                 allow_empty_rows: bool = False):
    """softmax(Q Kᵀ / √d_k) V, keeping only the keys that ``mask`` allows.

    Q: (..., t_q, d_k)   K: (..., t_k, d_k)   V: (..., t_k, d_v)   (PyTorch tensors, one dtype)
    mask: bool, True = may attend (see ``minformer.masks``), of shape (t_q, t_k) or with the
    scores' rank, each axis equal to the scores' or 1 (see :func:`check_mask`).
    Returns Y (..., t_q, d_v), and A (..., t_q, t_k) if return_weights.
    A query whose keys are all masked gets A = 0 and Y = 0 (never NaN); when t_q = t_k
    (self-attention) that draws a warning, once, unless allow_empty_rows=True.
    Q is scaled by 1/√d_k before the product, as PyTorch does, so float16 scores do not
    overflow where the scaled ones fit.
    """
    for name, X in (("Q", Q), ("K", K), ("V", V)):
        validate.tensor(X, name, floating=True)
        if X.ndim < 2:
            raise ValueError(
                f"{name} must be (..., t, d) with tokens as rows; got shape {tuple(X.shape)}"
            )
    validate.same_dtype(Q=Q, K=K, V=V)
    validate.same_device(Q=Q, K=K, V=V)
    shapes = f"Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}"
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must share d_k (their last axis): {shapes}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same number of tokens t_k (axis -2): {shapes}")
    if Q.shape[-2] == 0 or K.shape[-2] == 0 or Q.shape[-1] == 0:
        raise ValueError(f"empty sequence: attention needs t_q, t_k, d_k ≥ 1; got {shapes}")
    try:
        batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the leading (batch) axes of Q, K, V do not broadcast: {shapes}") \
            from None
    if mask is not None:
        check_mask(mask, (*batch, Q.shape[-2], K.shape[-2]))
        warn_empty_rows(mask, Q.shape[-2] == K.shape[-2], allow_empty_rows, Q.shape[-2])
    d_k = Q.shape[-1]
    scores = (Q / math.sqrt(d_k)) @ K.transpose(-2, -1)  # (..., t_q, t_k), Q scaled first
    A = _masked_softmax(scores, mask)  # (..., t_q, t_k); rows sum to 1 (0 if fully masked)
    Y = A @ V  # (..., t_q, d_v)
    return (Y, A) if return_weights else Y
