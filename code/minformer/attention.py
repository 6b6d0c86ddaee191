"""Attention: softmax, and attention as a weighted average of the tokens.

The book's convention: a sequence is a matrix ``X`` of shape ``(n, d)`` whose rows are tokens.
Every function here accepts NumPy arrays or PyTorch tensors and returns the same kind.
"""

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
