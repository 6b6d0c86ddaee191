"""Checkers for chapter 6: splitting and merging heads, and fused multi-head attention.

Shapes: X (batch, t, d_model); per-head tensors (batch, h, t, d_k) with d_k = d_model / h.
Head i holds the contiguous features i·d_k … (i+1)·d_k - 1 of every token.
"""

import math
from functools import partial

import torch

from ..attention import scaled_dot_product_attention
from ..masks import causal_mask, padding_mask
from ._core import (
    call,
    checker,
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    fail,
    matches,
    random_name,
    to_numpy,
)


def _sdpa(Q, K, V, mask):
    """The package's attention as the reference; the reader's masks may leave rows empty."""
    return scaled_dot_product_attention(Q, K, V, mask, allow_empty_rows=True)


def _split(X, h):
    B, t, d = X.shape
    return X.view(B, t, h, d // h).transpose(1, 2)  # (batch, h, t, d_k)


def _merge(H):
    B, h, t, d_k = H.shape
    return H.transpose(1, 2).reshape(B, t, h * d_k)  # (batch, t, d_model)


def _split_cases(rng, seed):
    g = torch.Generator().manual_seed(0)
    rg = torch.Generator().manual_seed(seed)
    B, t, h, d_k = (int(rng.integers(1, 4)), int(rng.integers(9, 16)), int(rng.integers(2, 6)),
                    int(rng.integers(1, 5)))
    return [
        ("X (2, 5, 8) with h = 2", torch.randn(2, 5, 8, generator=g), 2),
        ("X (2, 5, 8) with h = 4", torch.randn(2, 5, 8, generator=g), 4),
        ("X (3, 4, 6) with h = 3", torch.randn(3, 4, 6, generator=g), 3),
        ("X (1, 3, 4) with h = 1", torch.randn(1, 3, 4, generator=g), 1),
        ("X (2, 3, 4) with h = d_model = 4", torch.randn(2, 3, 4, generator=g), 4),
        ("X (1, 11, 12) with h = 3 (one sequence, odd length)", torch.randn(1, 11, 12,
                                                                           generator=g), 3),
        ("X (3, 1, 6) with h = 2 (one token per sequence)", torch.randn(3, 1, 6, generator=g), 2),
        (random_name(seed, f"X ({B}, {t}, {h * d_k}) with h = {h}"),
         torch.randn(B, t, h * d_k, generator=rg), h),
    ]


def _diagnose_split(got, X, h, name):
    B, t, d = X.shape
    d_k = d // h
    if tuple(got.shape) == (B, t, h, d_k):
        fail(f"on {name}: got shape (batch, t, h, d_k) = {tuple(got.shape)}; the heads must come "
             "before the positions: transpose axes 1 and 2")
    if matches(got, X.reshape(B, h, t, d_k).numpy()) and t > 1 and h > 1:
        fail(f"on {name}: you reshaped straight to (batch, h, t, d_k), which mixes positions "
             "(head 0 gets features of several tokens): view as (batch, t, h, d_k), then "
             "transpose(1, 2)")
    strided = X.view(B, t, d_k, h).permute(0, 3, 1, 2)  # head i = every h-th feature
    if matches(got, strided.numpy()) and h > 1 and d_k > 1:
        fail(f"on {name}: head 0 holds every h-th feature; it must hold the contiguous block of "
             "features 0 … d_k - 1 (view as (batch, t, h, d_k), not (batch, t, d_k, h))")


@checker("split and merge heads")
def check_split_heads(split_heads, merge_heads, *, rng, seed) -> int:
    """Check ``split_heads(X, h)``: (batch, t, d_model) → (batch, h, t, d_k), and
    ``merge_heads(H)``: (batch, h, t, d_k) → (batch, t, h·d_k), its inverse."""
    cases = _split_cases(rng, seed)
    for name, X, h in cases:
        B, t, d = X.shape
        expected = _split(X, h)
        out = call(split_heads, X.clone(), h, what="split_heads", where=name)
        got = to_numpy(out, what="split_heads")
        if not matches(got, expected.numpy()):
            _diagnose_split(got, X, h, name)
            expect_shape(got, tuple(expected.shape), labels="(batch, h, t, d_k)",
                         hint="d_k = d_model / h")
            expect_close(got, expected.numpy(), f"on {name}, split_heads")
        expect_tensor(out, "split_heads", X.dtype, where=name)
        H = torch.randn(B, h, t, d // h, generator=torch.Generator().manual_seed(t + h))
        out = call(merge_heads, H.clone(), what="merge_heads", where=name)
        got = to_numpy(out, what="merge_heads")
        expected = _merge(H).numpy()
        if not matches(got, expected):
            if matches(got, H.reshape(B, t, d).numpy()) and t > 1 and h > 1:
                fail(f"on {name}: merge_heads reshaped (batch, h, t, d_k) straight to "
                     "(batch, t, d_model), which mixes positions: transpose(1, 2) first, then "
                     "reshape")
            expect_shape(got, expected.shape, labels="(batch, t, d_model)",
                         hint="merge_heads must undo split_heads")
            expect_close(got, expected, f"on {name}, merge_heads")
        expect_tensor(out, "merge_heads", H.dtype, where=name)
        back = to_numpy(call(merge_heads, _split(X, h), what="merge_heads", where=name),
                        what="merge_heads")
        expect_close(back, X.numpy(), f"on {name}, merge_heads(split_heads(X)) (it must give X)")
    return len(cases)


def _reference(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask, *, transpose=True, scale=None,
               use_W_O=True, use_mask=True):
    """Multi-head attention and some typical wrong versions of it (for the diagnosis)."""
    B, t_q, d = X_q.shape
    d_k = d // h

    def split(Z):
        if transpose:
            return _split(Z, h)  # (batch, h, t, d_k)
        return Z.reshape(B, h, Z.shape[1], d_k)  # the mistake: mixes positions

    Q, K, V = split(X_q @ W_Q), split(X_kv @ W_K), split(X_kv @ W_V)  # (batch, h, t, d_k)
    if scale is not None:  # a wrong scale: undo the package's 1/√d_k, apply the given one
        Q = Q * math.sqrt(d_k) / scale
    Y = _sdpa(Q, K, V, mask if use_mask else None)  # (batch, h, t_q, d_k)
    Y = _merge(Y) if transpose else Y.reshape(B, t_q, d)  # (batch, t_q, d_model)
    return Y @ W_O if use_W_O else Y


def _is(got, variant, **kw) -> bool:
    """Does the reader's output equal ``variant(**kw)``, a known wrong answer?"""
    return matches(got, variant(**kw).numpy())


def _mha_cases(rng, seed):
    g = torch.Generator().manual_seed(1)

    def weights(d, g=g):
        return [torch.randn(d, d, generator=g) / math.sqrt(d) for _ in range(4)]

    rg = torch.Generator().manual_seed(seed)
    B, t_q, t_k, h = (int(rng.integers(1, 4)), int(rng.integers(9, 14)), int(rng.integers(1, 12)),
                      int(rng.choice([2, 3, 4])))
    d = h * int(rng.integers(2, 5))
    lengths = torch.from_numpy(rng.integers(1, t_k + 1, size=B))
    X9 = torch.randn(1, 9, 12, generator=g)
    X8 = torch.randn(2, 5, 8, generator=g)
    X_dec, X_enc = torch.randn(2, 3, 8, generator=g), torch.randn(2, 6, 8, generator=g)
    causal = torch.ones(5, 5, dtype=torch.bool).tril()  # (t, t)
    pad = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])[:, None, None, :]  # (2, 1, 1, 6)
    X_big = 3 * torch.randn(1, 4, 16, generator=g)
    return [
        ("self-attention, X (2, 5, 8), h = 2", X8, X8, *weights(8), 2, None),
        ("self-attention, X (2, 5, 8), h = 4, causal mask", X8, X8, *weights(8), 4, causal),
        ("cross-attention, X_q (2, 3, 8), X_kv (2, 6, 8), h = 2, padding mask",
         X_dec, X_enc, *weights(8), 2, pad),
        ("cross-attention with t_q = t_k and h = 1: X_q (2, 5, 8), another X_kv (2, 5, 8)",
         X8, 2 * torch.randn(2, 5, 8, generator=g) + 1, *weights(8), 1, None),
        ("self-attention, X (1, 4, 16), h = 4, large inputs", X_big, X_big, *weights(16), 4,
         None),
        ("self-attention, X (1, 9, 12), h = 3, causal & padding (length 7)", X9, X9,
         *weights(12), 3, causal_mask(9) & padding_mask(torch.tensor([7]), 9)),
        ("cross-attention, one query per sequence: X_q (3, 1, 8), X_kv (3, 11, 8), h = 4, "
         "padding mask (3, 1, 1, 11)", torch.randn(3, 1, 8, generator=g),
         torch.randn(3, 11, 8, generator=g), *weights(8), 4,
         padding_mask(torch.tensor([11, 2, 7]))),
        (random_name(seed, f"cross-attention, X_q ({B}, {t_q}, {d}), X_kv ({B}, {t_k}, {d}), "
                     f"h = {h}, padding lengths {lengths.tolist()}"),
         torch.randn(B, t_q, d, generator=rg), torch.randn(B, t_k, d, generator=rg),
         *weights(d, g=rg), h, padding_mask(lengths, t_k)),
    ]


@checker("multi-head attention")
def check_multi_head_attention(fn, *, rng, seed) -> int:
    """Check ``fn(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask)``: fused multi-head attention.

    X_q (batch, t_q, d_model) gives the queries, X_kv (batch, t_k, d_model) the keys and values;
    W_Q, W_K, W_V, W_O are (d_model, d_model) (the book's notation: Q = X_q W_Q); mask is None or
    bool broadcastable to (batch, h, t_q, t_k), True = may attend. Returns (batch, t_q, d_model).
    """
    cases = _mha_cases(rng, seed)
    for name, X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask in cases:
        same_x = X_q is X_kv
        X_q = X_q.clone()
        X_kv = X_q if same_x else X_kv.clone()
        args = (X_q, X_kv, W_Q.clone(), W_K.clone(), W_V.clone(), W_O.clone(), h,
                None if mask is None else mask.clone())
        out = call(fn, *args, what="your multi-head attention", where=name)
        got = to_numpy(out, what="your multi-head attention")
        B, t_q, d = X_q.shape
        expect_shape(got, (B, t_q, d), labels="(batch, t_q, d_model): one row per query")
        expect_tensor(out, "your multi-head attention", X_q.dtype, where=name)
        expect_finite(got, "a fully masked row or an overflow? use the package's "
                      "scaled_dot_product_attention")
        ref = _reference(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask)
        expected = ref.numpy()
        if matches(got, expected):
            continue

        variant = partial(_reference, X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask)


        d_k = d // h
        if h > 1 and _is(got, variant, transpose=False):
            fail(f"on {name}: the heads mix positions: reshape to (batch, t, h, d_k) and "
                 "transpose(1, 2); a direct reshape to (batch, h, t, d_k) is wrong")
        for h_wrong in range(1, d + 1):
            if d % h_wrong == 0 and h_wrong != h and matches(got, _reference(
                    X_q, X_kv, W_Q, W_K, W_V, W_O, h_wrong, mask).numpy()):
                fail(f"on {name}: you split into {h_wrong} heads; use the argument h = {h} "
                     "(not a fixed number)")
        if _is(got, variant, use_W_O=False):
            fail(f"on {name}: the concatenated heads must go through the output projection W_O")
        if h > 1 and _is(got, variant, scale=math.sqrt(d)):
            fail(f"on {name}: scores are divided by √d_model = {math.sqrt(d):.3g}; divide by "
                 f"√d_k = √(d_model / h) = {math.sqrt(d_k):.3g}, the size of one head")
        if _is(got, variant, scale=1.0):
            fail(f"on {name}: the scores are not scaled: divide Q Kᵀ by √d_k")
        if mask is not None and _is(got, variant, use_mask=False):
            fail(f"on {name}: the mask is not applied (the output changes with keys it hides)")
        if X_q is not X_kv and matches(
                got, _reference(X_q, X_q, W_Q, W_K, W_V, W_O, h, None).numpy()):
            fail(f"on {name}: keys and values must come from X_kv (the encoder's output), "
                 "queries from X_q")
        expect_close(got, expected, f"on {name}, the output", atol=1e-5, rtol=1e-4)
    return len(cases)
