"""Attention: softmax, attention as a weighted average of the tokens, and scaled dot-product
attention softmax(Q Kᵀ / √d_k) V with masks.

The book's convention: a sequence is a matrix ``X`` of shape ``(n, d)`` whose rows are tokens.
``softmax``, ``attention_weights`` and ``dot_product_attention`` accept NumPy arrays or PyTorch
tensors and return the same kind; ``scaled_dot_product_attention`` works on PyTorch tensors.
Masks are bool with True = may attend (see :mod:`minformer.masks`).
"""

import math

import numpy as np
import torch


def _is_torch(x) -> bool:
    return isinstance(x, torch.Tensor)


def softmax(x, axis: int = -1):
    """softmax(x)_i = exp(x_i) / Σ_j exp(x_j) along ``axis``, computed stably.

    Subtracting the maximum along ``axis`` first changes nothing mathematically (it cancels in
    the ratio) but keeps ``exp`` from overflowing for large inputs.
    x: array or tensor of any shape. Returns the same shape, non-negative, summing to 1 along axis.
    """
    if _is_torch(x):
        if x.ndim == 0:
            raise ValueError("softmax needs at least one axis, got a 0-d tensor")
        if not torch.is_floating_point(x):
            x = x.float()
        z = x - x.amax(dim=axis, keepdim=True)
        e = torch.exp(z)
        return e / e.sum(dim=axis, keepdim=True)
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)  # integers and booleans: exp needs floats
    if x.ndim == 0:
        raise ValueError("softmax needs at least one axis, got a 0-d array")
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _check_tokens(X, name: str = "X"):
    if not (_is_torch(X) or isinstance(X, np.ndarray)):
        X = np.asarray(X, dtype=np.float64)
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


def _check_bool_mask(mask, target_shape, name: str = "mask"):
    """Fail at the door unless ``mask`` is a bool tensor that broadcasts to ``target_shape``."""
    if not _is_torch(mask):
        raise ValueError(
            f"{name} must be a torch.bool tensor (True = may attend); got {type(mask).__name__}"
        )
    if mask.dtype != torch.bool:
        raise ValueError(
            f"{name} must be bool (True = may attend), got dtype {mask.dtype} with shape "
            f"{tuple(mask.shape)}; an additive float mask (0 / -inf) is a different convention: "
            "convert it with `mask == 0`"
        )
    try:
        shape = torch.broadcast_shapes(mask.shape, target_shape)
    except RuntimeError:
        shape = None
    if shape != torch.Size(target_shape):
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not broadcast to the attention scores' "
            f"shape {tuple(target_shape)} (..., t_q, t_k)"
        )


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


def scaled_dot_product_attention(Q, K, V, mask=None, return_weights: bool = False):
    """softmax(Q Kᵀ / √d_k) V, keeping only the keys that ``mask`` allows.

    Q: (..., t_q, d_k)   K: (..., t_k, d_k)   V: (..., t_k, d_v)   (PyTorch tensors)
    mask: bool, broadcastable to (..., t_q, t_k); True = may attend (see ``minformer.masks``).
    Returns Y (..., t_q, d_v), and A (..., t_q, t_k) if return_weights.
    A query whose keys are all masked gets A = 0 and Y = 0 (never NaN).
    """
    for name, X in (("Q", Q), ("K", K), ("V", V)):
        if not _is_torch(X):
            raise ValueError(f"{name} must be a torch tensor; got {type(X).__name__}")
        if X.ndim < 2:
            raise ValueError(
                f"{name} must be (..., t, d) with tokens as rows; got shape {tuple(X.shape)}"
            )
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
        _check_bool_mask(mask, (*batch, Q.shape[-2], K.shape[-2]))
    d_k = Q.shape[-1]
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)  # (..., t_q, t_k)
    A = _masked_softmax(scores, mask)  # (..., t_q, t_k); rows sum to 1 (0 if fully masked)
    Y = A @ V  # (..., t_q, d_v)
    return (Y, A) if return_weights else Y
