"""Attention: softmax, attention as a weighted average of the tokens, and scaled dot-product
attention softmax(Q Kᵀ / √d_k) V with masks.

The book's convention: a sequence is a matrix ``X`` of shape ``(n, d)`` whose rows are tokens.
``softmax``, ``attention_weights`` and ``dot_product_attention`` accept NumPy arrays or PyTorch
tensors and return the same kind; ``scaled_dot_product_attention`` works on PyTorch tensors.
Masks are bool with True = may attend (see :mod:`minformer.masks`), and must have a shape that
cannot be misread: ``(t_q, t_k)``, or the scores' own rank with each axis equal to the scores'
or 1 (see :func:`check_mask`).
"""

import contextlib
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
    if x.ndim and x.shape[axis] == 0:
        raise ValueError(f"softmax over an empty axis: axis={axis} of shape {tuple(x.shape)} has "
                         "no entry to spread the weight over")
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


def _all_finite(x) -> bool:
    """Whether every entry of ``x`` is finite, without a temporary of ``x``'s size (the memory
    chapter 14 measures): a NaN or inf makes the sum non-finite. A sum that overflows from
    finite values only sends the caller down its careful path, which gives the same answer."""
    return math.isfinite(x.sum().item())


def _mix(A, V, visible):
    """``A @ V``, where a value row that ``visible`` (bool, broadcastable to A; None: all) hides
    from a query cannot change that query's output, even when it holds NaN or inf (0 · NaN is
    NaN: a padded position's garbage would leak through its zero weight). Values all finite:
    A @ V itself, bit for bit. Otherwise the non-finite entries are left out of the product and
    added back only where they are visible."""
    Y = A @ V
    if visible is None or _all_finite(V):
        return Y
    bad = ~torch.isfinite(V)  # (..., t_k, d_v)
    Y = A @ V.masked_fill(bad, 0.0)  # hidden rows contribute exactly 0, as for finite values
    shown = visible[..., None] & bad[..., None, :, :]  # (..., t_q, t_k, d_v)
    # the hidden entries are replaced before the product (not after), so that no gradient
    # meets them either (0 · NaN in the backward pass of a product taken first)
    return Y + (A[..., None] * torch.where(shown, V[..., None, :, :], 0.0)).sum(dim=-2)


def as_float32_if_half(*tensors) -> tuple:
    """``tensors`` in float32 when they are float16, else as they are (float32, float64 and
    bfloat16 untouched, so their results do not change by a bit).

    Attention's scores Q Kᵀ overflow float16 (largest 65504) long before its inputs do: entries
    near 300 with d_k = 64 give 64 · 300² / 8 ≈ 7 · 10⁵ even after scaling, and softmax of inf is
    NaN. PyTorch's kernels keep scores and weights in float32; so do the package's attention
    functions (:func:`scaled_dot_product_attention`, :func:`chunked_attention`,
    :class:`~minformer.multihead.MultiHeadAttention`'s explicit path), and cast the result
    back to float16."""
    if tensors and tensors[0].dtype == torch.float16:
        return tuple(x.float() for x in tensors)
    return tensors


def float32_products(x: torch.Tensor):
    """A context in which :func:`as_float32_if_half`'s float32 products stay float32: under
    ``torch.autocast`` to float16 (which would cast them back), autocast is switched off while a
    float16 ``x`` is attended to; otherwise nothing changes."""
    device = x.device.type
    if x.dtype == torch.float16 and torch.is_autocast_enabled(device):
        return torch.autocast(device, enabled=False)
    return contextlib.nullcontext()


def scaled_dot_product_attention(Q, K, V, mask=None, return_weights: bool = False,
                                 allow_empty_rows: bool = False):
    """softmax(Q Kᵀ / √d_k) V, keeping only the keys that ``mask`` allows.

    Q: (..., t_q, d_k)   K: (..., t_k, d_k)   V: (..., t_k, d_v)   (PyTorch tensors, one dtype)
    mask: bool, True = may attend (see ``minformer.masks``), of shape (t_q, t_k) or with the
    scores' rank, each axis equal to the scores' or 1 (see :func:`check_mask`).
    Returns Y (..., t_q, d_v), and A (..., t_q, t_k) if return_weights.
    A query whose keys are all masked gets A = 0 and Y = 0 (never NaN); when t_q = t_k
    (self-attention) that draws a warning, once, unless allow_empty_rows=True.
    Q is scaled by 1/√d_k before the product, as PyTorch does; float16 inputs are multiplied
    in float32 (:func:`as_float32_if_half`), so their scores do not overflow, and Y and A come
    back in float16.
    """
    batch = _check_attention_inputs(Q, K, V)
    if mask is not None:
        check_mask(mask, (*batch, Q.shape[-2], K.shape[-2]))
        warn_empty_rows(mask, Q.shape[-2] == K.shape[-2], allow_empty_rows, Q.shape[-2])
    d_k, dtype = Q.shape[-1], Q.dtype
    with float32_products(Q):
        Q, K, V = as_float32_if_half(Q, K, V)
        scores = (Q / math.sqrt(d_k)) @ K.transpose(-2, -1)  # (..., t_q, t_k), Q scaled first
        A = _masked_softmax(scores, mask)  # (..., t_q, t_k); rows sum to 1 (0 if fully masked)
        Y = _mix(A, V, mask)  # A @ V: (..., t_q, d_v)
    Y, A = Y.to(dtype), A.to(dtype)  # no-ops unless float16
    return (Y, A) if return_weights else Y


def _check_attention_inputs(Q, K, V):
    """Q (..., t_q, d_k), K (..., t_k, d_k), V (..., t_k, d_v): one dtype, one device, leading
    axes that broadcast. Returns the broadcast leading (batch) shape."""
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
    return batch


# ----------------------------------------------------------------------------- online softmax

def online_softmax_update(m, ell, acc, S, V_block):
    """One step of online softmax: fold a block of keys into the running statistics.

    For each query row, m is the largest score seen so far, ℓ (``ell``) = Σ exp(s_j - m) over the
    keys seen so far and acc = Σ exp(s_j - m) v_j. A new block of scores S (its masked keys at
    -inf) with values V_block moves the maximum to m' = max(m, max_j S_j); the old sums were
    taken relative to m, so they are rescaled by exp(m - m') before the block's terms are added:

        ℓ' = exp(m - m') ℓ + Σ_j exp(S_j - m'),   acc' = exp(m - m') acc + Σ_j exp(S_j - m') v_j

    After the last block acc / ℓ is softmax(scores) V exactly. A row that has seen only masked
    keys keeps m = -inf, ℓ = 0, acc = 0 (the shift is taken as 0 there, so no NaN appears).
    m, ell: (..., t_q, 1); acc: (..., t_q, d_v); S: (..., t_q, b); V_block: (..., b, d_v).
    Returns the new (m, ell, acc).
    """
    for name, X in (("m", m), ("ell", ell), ("acc", acc), ("S", S), ("V_block", V_block)):
        validate.tensor(X, name, floating=True)
    t_q, b = S.shape[-2], S.shape[-1]
    ok = (m.shape[-2:] == (t_q, 1) and ell.shape[-2:] == (t_q, 1) and S.ndim >= 2
          and V_block.shape[-2] == b and acc.shape[-2:] == (t_q, V_block.shape[-1]))
    if not ok:
        raise ValueError(f"shapes do not fit m, ell (..., t_q, 1), acc (..., t_q, d_v), S (..., "
                         f"t_q, b), V_block (..., b, d_v): m {tuple(m.shape)}, ell "
                         f"{tuple(ell.shape)}, acc {tuple(acc.shape)}, S {tuple(S.shape)}, "
                         f"V_block {tuple(V_block.shape)}")
    return _online_update(m, ell, acc, S, V_block)


def _online_update(m, ell, acc, S, V_block, guard: bool = True):
    """guard False: the caller knows V_block is finite (skips the check, a sync on a GPU)."""
    m_new = torch.maximum(m, S.amax(dim=-1, keepdim=True))  # (..., t_q, 1)
    shift = m_new.masked_fill(m_new == float("-inf"), 0.0)  # rows with nothing seen yet: 0
    P = torch.exp(S - shift)  # (..., t_q, b); masked keys give exactly 0
    alpha = torch.exp(m - shift)  # (..., t_q, 1): rescales the old sums; 0 when m = -inf
    # P @ V_block, a masked key's value (at -inf) never reaching the output, even if NaN
    return (m_new, alpha * ell + P.sum(dim=-1, keepdim=True),
            alpha * acc + _mix(P, V_block, S != float("-inf") if guard else None))


def _blocks(t: int, block_size: int):
    return [(j, min(j + block_size, t)) for j in range(0, t, block_size)]


def _block_pairs(t_q: int, t_k: int, block_size: int, causal: bool):
    """(i0, i1, j0, j1) for each block of queries i0 … i1 - 1 and of keys j0 … j1 - 1 that has
    at least one visible pair. Causal: query i sees key j when j ≤ i + (t_k - t_q) (the queries
    are the last t_q positions, as with a KV cache), so the key blocks right of the diagonal
    are skipped: about half of them at t_q = t_k."""
    offset = t_k - t_q
    return [(i0, i1, j0, j1) for i0, i1 in _blocks(t_q, block_size)
            for j0, j1 in _blocks(t_k, block_size) if not causal or j0 <= i1 - 1 + offset]


def _block_scores(Q_scaled, K, mask, i0, i1, j0, j1, causal):
    """Scores of queries i0 … i1 - 1 against keys j0 … j1 - 1, masked keys at -inf:
    (..., i1 - i0, j1 - j0). The causal mask of a block is built from its indices."""
    S = Q_scaled[..., i0:i1, :] @ K[..., j0:j1, :].transpose(-2, -1)  # (..., bq, bk)
    if mask is not None:
        S = S.masked_fill(~mask[..., i0:i1, j0:j1], float("-inf"))
    offset = K.shape[-2] - Q_scaled.shape[-2]
    if causal and j1 - 1 > i0 + offset:  # the block crosses the diagonal
        i = torch.arange(i0, i1, device=S.device)[:, None]  # (bq, 1)
        j = torch.arange(j0, j1, device=S.device)[None, :]  # (1, bk)
        S = S.masked_fill(j > i + offset, float("-inf"))
    return S


class _ChunkedAttention(torch.autograd.Function):
    """Forward by online softmax over blocks of keys, for one block of queries at a time;
    backward recomputes each block's weights from the saved row log-sum-exp (FlashAttention's
    recipe), so neither pass holds more than (block_size, block_size) scores per batch entry."""

    @staticmethod
    def forward(ctx, Q, K, V, mask, block_size, causal):
        Q_scaled = Q / math.sqrt(Q.shape[-1])  # (..., t_q, d_k)
        m = Q.new_full((*Q.shape[:-1], 1), float("-inf"))  # running max
        ell = Q.new_zeros((*Q.shape[:-1], 1))  # running sum of exp(s - m)
        acc = Q.new_zeros((*Q.shape[:-1], V.shape[-1]))  # running Σ exp(s - m) v
        guard = not _all_finite(V)  # else no block needs _mix's check
        for i0, i1, j0, j1 in _block_pairs(Q.shape[-2], K.shape[-2], block_size, causal):
            S = _block_scores(Q_scaled, K, mask, i0, i1, j0, j1, causal)  # (..., bq, bk)
            m[..., i0:i1, :], ell[..., i0:i1, :], acc[..., i0:i1, :] = _online_update(
                m[..., i0:i1, :], ell[..., i0:i1, :], acc[..., i0:i1, :], S,
                V[..., j0:j1, :], guard)
        seen = ell > 0  # (..., t_q, 1): rows with at least one visible key
        Y = acc / ell.masked_fill(~seen, 1.0)  # fully masked rows: acc = 0, so Y = 0
        lse = (m + torch.log(ell)).masked_fill(~seen, float("inf"))  # exp(s - lse) = softmax
        ctx.save_for_backward(Q, K, V, Y, lse, mask)
        ctx.block_size, ctx.causal, ctx.guard = block_size, causal, guard
        return Y

    @staticmethod
    def backward(ctx, dY):
        Q, K, V, Y, lse, mask = ctx.saved_tensors
        scale = 1.0 / math.sqrt(Q.shape[-1])
        Q_scaled = Q * scale
        D = (dY * Y).sum(dim=-1, keepdim=True)  # (..., t_q, 1): Σ_j A_ij dA_ij
        dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
        for i0, i1, j0, j1 in _block_pairs(Q.shape[-2], K.shape[-2], ctx.block_size,
                                           ctx.causal):
            S = _block_scores(Q_scaled, K, mask, i0, i1, j0, j1, ctx.causal)
            P = torch.exp(S - lse[..., i0:i1, :])  # A's block: (..., bq, bk)
            dY_i = dY[..., i0:i1, :]  # (..., bq, d_v)
            dV[..., j0:j1, :] += P.transpose(-2, -1) @ dY_i
            dS = P * (dY_i @ V[..., j0:j1, :].transpose(-2, -1) - D[..., i0:i1, :])
            if ctx.guard:  # a hidden key's NaN value must not reach the gradients either
                dS = dS.masked_fill(S == float("-inf"), 0.0)
            dQ[..., i0:i1, :] += (dS @ K[..., j0:j1, :]) * scale
            dK[..., j0:j1, :] += dS.transpose(-2, -1) @ Q_scaled[..., i0:i1, :]
        return dQ, dK, dV, None, None, None


def chunked_attention(Q, K, V, mask=None, block_size: int = 128, causal: bool = False):
    """softmax(Q Kᵀ / √d_k) V computed over blocks of ``block_size`` queries and keys by online
    softmax (:func:`online_softmax_update`), never holding the (t_q, t_k) score matrix: the
    idea of FlashAttention (Dao et al., 2022), in plain PyTorch.

    Q: (..., t_q, d_k)   K: (..., t_k, d_k)   V: (..., t_k, d_v)   mask: bool, True = may
    attend, shaped as for :func:`scaled_dot_product_attention` (see :func:`check_mask`).
    causal=True: query i sees key j only when j ≤ i + (t_k - t_q) (the queries are the last
    t_q positions). That mask is built inside each block from the block's indices, never as a
    (t_q, t_k) tensor, and the blocks wholly right of the diagonal are skipped, so a causal
    call does about half the work. It combines with ``mask`` (a key must pass both).
    float16 inputs are computed in float32 and Y returned in float16 (:func:`as_float32_if_half`).
    Returns Y (..., t_q, d_v): the same numbers as :func:`scaled_dot_product_attention` to
    rounding, for any block size (it need not divide t_q or t_k). A query whose keys are all
    masked gets Y = 0 and zero gradients, as in the rest of the package (no warning here).
    Memory: each step holds (..., block_size, block_size) scores; the backward pass recomputes
    them block by block from the saved log-sum-exp of each row instead of storing them.
    """
    batch = _check_attention_inputs(Q, K, V)
    validate.positive_int(block_size, "block_size")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False; got {causal!r}")
    t_q, t_k = Q.shape[-2], K.shape[-2]
    if causal and t_q > t_k:
        raise ValueError(f"causal attention needs at least as many keys as queries (the queries "
                         f"are the last t_q positions); got t_q={t_q}, t_k={t_k}")
    if mask is not None:
        check_mask(mask, (*batch, t_q, t_k))
        mask = mask.expand(*batch, t_q, t_k)  # a view: no memory
    Q, K, V = (X.expand(*batch, *X.shape[-2:]) for X in (Q, K, V))  # views
    dtype = Q.dtype
    with float32_products(Q):
        Q, K, V = as_float32_if_half(Q, K, V)
        Y = _ChunkedAttention.apply(Q, K, V, mask, block_size, causal)  # (..., t_q, d_v)
    return Y.to(dtype)
