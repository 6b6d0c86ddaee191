"""Checkers for chapter 4: scaled dot-product attention softmax(Q Kᵀ / √d_k) V."""

import math

import numpy as np
import torch

from ..attention import softmax
from ._core import (
    CheckFailed,
    call,
    checker,
    expect_array,
    expect_close,
    expect_finite,
    expect_shape,
    fail,
    matches,
    random_name,
    to_numpy,
)


def _scaled_cases(rng, seed):
    """(name, Q, K, V) in float64. The sizes t_q, t_k, d_k, d_v differ within a case, so a
    scale by the wrong size gives a different answer and can be named."""
    g = torch.Generator().manual_seed(4)

    def r(*shape, scale=1.0, g=g):
        return scale * torch.randn(*shape, generator=g, dtype=torch.float64)

    rg = torch.Generator().manual_seed(seed)
    B, t_q, t_k = int(rng.integers(1, 4)), int(rng.integers(9, 14)), 2 * int(rng.integers(4, 8)) + 1
    d_k, d_v = int(rng.integers(3, 12)), int(rng.integers(1, 6))
    far = r(5, 6)
    far[1] *= 400.0  # one query's scores reach thousands, its neighbours' stay near 0
    far[3] *= -300.0
    same_keys = r(1, 4).expand(6, 4).clone()  # six identical keys: exact ties
    same_keys[2] = 0.0
    return [
        ("t_q=3, t_k=5, d_k=6, d_v=2", r(3, 6), r(5, 6), r(5, 2)),
        ("a square K: t_k = d_k = 4, t_q=3, d_v=5", r(3, 4), r(4, 4), r(4, 5)),
        ("a single query: t_q=1, t_k=7, d_k=9, d_v=3", r(1, 9), r(7, 9), r(7, 3)),
        ("a batch of 2 sequences x 2 heads: Q (2, 2, 3, 8), K (2, 2, 5, 8), V (2, 2, 5, 6)",
         r(2, 2, 3, 8), r(2, 2, 5, 8), r(2, 2, 5, 6)),
        ("large scores (entries of Q and K ~ 30)", r(4, 6, scale=30), r(5, 6, scale=30),
         r(5, 3)),
        ("queries whose score maxima differ by thousands: Q (5, 6), K (7, 6), V (7, 3)", far,
         r(7, 6), r(7, 3)),
        ("a batch of 1 sequence x 3 heads: Q (1, 3, 9, 5), K (1, 3, 11, 5), V (1, 3, 11, 2)",
         r(1, 3, 9, 5), r(1, 3, 11, 5), r(1, 3, 11, 2)),
        ("a batch of 3 x 1 head: Q (3, 1, 2, 7), K (3, 1, 1, 7), V (3, 1, 1, 4)",
         r(3, 1, 2, 7), r(3, 1, 1, 7), r(3, 1, 1, 4)),
        ("identical keys and a zero key (ties): Q (3, 4), K (6, 4), V (6, 2)", r(3, 4),
         same_keys, r(6, 2)),
        (random_name(seed, f"Q ({B}, {t_q}, {d_k}), K ({B}, {t_k}, {d_k}), V ({B}, {t_k}, "
                     f"{d_v})"), r(B, t_q, d_k, g=rg), r(B, t_k, d_k, scale=3.0, g=rg),
         r(B, t_k, d_v, g=rg)),
    ]


def _call(fn, Q, K, V, name):
    """Call fn(Q, K, V) on copies; a crash becomes a message with the shapes and a hint."""
    try:
        return call(fn, Q.clone(), K.clone(), V.clone(), what="your attention", where=name)
    except CheckFailed as e:
        if " raised " not in str(e):
            raise
        hint = ("check the shapes: the scores Q Kᵀ are (..., t_q, t_k), so transpose K's last "
                "two axes with K.transpose(-2, -1) (K.T reverses *all* axes of a batched K)")
        fail(f"{e} — {hint}")


def _wrong_scales(Q, K, V):
    """(divisor c, what went wrong) for sizes a reader might use instead of d_k in
    softmax(Q Kᵀ / √c) V."""
    t_q, d_k = Q.shape[-2], Q.shape[-1]
    t_k, d_v = K.shape[-2], V.shape[-1]
    right = f"the scale is √d_k = √{d_k}, the length of each query and key (Q.shape[-1])"
    sizes = [
        (d_k ** 2, ("you divided the scores by d_k; divide by its square root √d_k (the "
                    "standard deviation of q·k, not its variance)")),
        (1.0 / d_k, "you multiplied the scores by √d_k; divide by it"),
        (t_k, f"you scaled by √t_k = √{t_k}, the number of keys; {right}"),
        (t_q, f"you scaled by √t_q = √{t_q}, the number of queries; {right}"),
        (d_v, f"you scaled by √d_v = √{d_v}, the size of the values; {right}"),
    ]
    if Q.ndim >= 3:
        sizes.append((Q.shape[1], (f"you scaled by √Q.shape[1] = √{Q.shape[1]}: for a batched "
                                   f"Q axis 1 is not d_k; {right}")))
    if Q.ndim == 4:
        h = Q.shape[1]
        sizes.append((h * d_k, (f"you scaled by √(h·d_k) = √{h * d_k}, d_model of all heads "
                                f"together; each head scales by its own d_k: {right}")))
    return [(c, message) for c, message in sizes if not math.isclose(c, d_k)]


def _diagnose(got, Q, K, V, name):
    """Compare the reader's output with typical wrong answers and fail naming the mistake."""
    q, k, v = (X.numpy() for X in (Q, K, V))
    d_k = q.shape[-1]
    S = q @ np.swapaxes(k, -2, -1)  # (..., t_q, t_k)
    where = f"on {name}"
    if matches(got, softmax(S, axis=-1) @ v):
        fail(f"{where}: the scores are not scaled — divide Q Kᵀ by √d_k before the softmax")
    for c, message in _wrong_scales(Q, K, V):
        if matches(got, softmax(S / math.sqrt(c), axis=-1) @ v):
            fail(f"{where}: {message}")
    if matches(got, softmax(S, axis=-1) @ v / math.sqrt(d_k)):
        fail(f"{where}: you divided the output (or V) by √d_k; the scale belongs inside the "
             "softmax, on the scores Q Kᵀ")
    if matches(got, softmax(S / math.sqrt(d_k), axis=-2) @ v):
        fail(f"{where}: softmax over the wrong axis — each query's weights over the keys "
             "(the last axis, dim=-1) must sum to 1")
    if k.shape[-2] == k.shape[-1] and matches(got, softmax(q @ k / math.sqrt(d_k), axis=-1) @ v):
        fail(f"{where}: you multiplied by K, not Kᵀ — the scores are Q @ K.transpose(-2, -1)")
    if matches(got, S / math.sqrt(d_k) @ v):
        fail(f"{where}: there is no softmax — the weights are softmax(Q Kᵀ / √d_k) along the "
             "last axis")


@checker("scaled dot-product attention")
def check_scaled_attention(fn, *, rng, seed) -> int:
    """Check ``fn(Q, K, V)`` = softmax(Q Kᵀ / √d_k) V for PyTorch tensors
    Q (..., t_q, d_k), K (..., t_k, d_k), V (..., t_k, d_v); returns (..., t_q, d_v)."""
    cases = _scaled_cases(rng, seed)
    for name, Q, K, V in cases:
        out = _call(fn, Q, K, V, name)
        got = to_numpy(out, what="your attention")
        t_q, t_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
        expected_shape = (*Q.shape[:-2], t_q, d_v)
        hint = ""
        if tuple(got.shape) == (*Q.shape[:-2], t_q, t_k):
            hint = "did you return the weights A instead of A @ V?"
        elif tuple(got.shape) == (*Q.shape[:-2], d_v, t_q):
            hint = "is the output transposed?"
        expect_shape(got, expected_shape, labels="(..., t_q, d_v)", hint=hint)
        expect_array(out, "your attention", where=name)  # NumPy or torch, float64 like the inputs
        expect_finite(got, f"on {name}: large scores overflow exp — use torch.softmax (or "
                      "subtract each row's max before exp)")
        S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])  # (..., t_q, t_k)
        expected = (torch.softmax(S, dim=-1) @ V).numpy()  # (..., t_q, d_v)
        if not matches(got, expected):
            _diagnose(got, Q, K, V, name)
            expect_close(got, expected, f"on {name}, the output")
    return len(cases)
