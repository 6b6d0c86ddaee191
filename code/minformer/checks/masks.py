"""Checkers for chapter 5: the causal mask and masked scaled dot-product attention.

Masks are bool with True = may attend (see :mod:`minformer.masks`).
"""

import math

import numpy as np
import torch

from ..attention import scaled_dot_product_attention, softmax
from ..masks import causal_mask, padding_mask, sliding_window_mask
from ._core import (
    CheckFailed,
    call,
    checker,
    expect_close,
    expect_shape,
    expect_tensor,
    fail,
    random_name,
    to_numpy,
)


def _sdpa(Q, K, V, mask):
    """The package's attention as the reference; the reader's masks may leave rows empty."""
    return scaled_dot_product_attention(Q, K, V, mask, allow_empty_rows=True)


def _bool_matrix(out, t):
    """The reader's mask as a NumPy bool array, failing on the wrong kind of answer."""
    if out is None:
        fail("your mask function returned None: did you forget the `return` statement?")
    if isinstance(out, torch.Tensor):
        dtype, arr = out.dtype, out.detach().cpu().numpy()
        is_bool = dtype == torch.bool
    else:
        arr = np.asarray(out)
        dtype, is_bool = arr.dtype, arr.dtype == bool
    expect_shape(arr, (t, t), labels="(t, t): one row per query, one column per key")
    if not is_bool:
        values = set(np.unique(arr.astype(np.float64)).tolist())
        if values <= {0.0, -math.inf} and -math.inf in values:
            fail(f"for t={t} you returned an additive float mask (0 and -inf); the book's masks "
                 "are bool with True = may attend — return a torch.bool tensor")
        fail(f"for t={t} the mask has dtype {dtype}; return a bool tensor (torch.bool, "
             "True = may attend), e.g. with .bool() or a comparison such as j <= i")
    return arr


@checker("causal mask")
def check_causal_mask(fn, *, rng, seed) -> int:
    """Check ``fn(t)``: the causal mask, bool (t, t) with mask[i, j] = (j ≤ i), True = may attend."""
    # lengths beyond 8 and odd ones (a mask cut from a fixed-size buffer fails), one drawn at
    # random; t=1 last: its one entry cannot tell the mistakes apart
    sizes = [5, 8, 13, 2, 9, int(rng.integers(14, 70)), 1]
    for t in sizes:
        try:
            out = call(fn, t, what="your mask", where=f"t={t}")
        except CheckFailed as e:
            if t == sizes[-2]:
                raise CheckFailed(f"{e} ({random_name(seed, f't={t}')})") from None
            raise
        try:
            got = _bool_matrix(out, t)
        except CheckFailed as e:
            if t == sizes[-2]:
                raise CheckFailed(f"{e} ({random_name(seed, f't={t}')})") from None
            raise
        expected = np.tril(np.ones((t, t), dtype=bool))
        if np.array_equal(got, expected):
            continue
        if np.array_equal(got, ~expected):
            fail(f"for t={t} your mask is True where attention is forbidden (j > i): that is "
                 "nn.MultiheadAttention's convention; in this book True = may attend — invert it")
        if np.array_equal(got, expected.T):
            fail(f"for t={t} your mask is upper-triangular: query i would see the future keys "
                 "j > i and not the past; the causal mask is lower-triangular (tril), j ≤ i")
        if np.array_equal(got, np.tril(expected, -1)):
            fail(f"for t={t} the diagonal is False: each token must attend to itself (off by "
                 "one: allow j ≤ i, not j < i); otherwise the first row has no key at all")
        if np.array_equal(got, np.triu(expected.T, 1)):
            fail(f"for t={t} your mask allows only j > i: the future instead of the past — use "
                 "j ≤ i (lower triangle, diagonal included)")
        i, j = (int(x) for x in np.argwhere(got != expected)[0])
        should = "True (j ≤ i: the past and itself)" if expected[i, j] else \
            "False (j > i: the future)"
        seeded = f" ({random_name(seed, f't={t}')})" if t == sizes[-2] else ""
        fail(f"for t={t}, mask[{i}, {j}] should be {should}{seeded}")
    return len(sizes)


def _masked_cases(rng, seed):
    """(name, Q, K, V, mask) in float64; masks are bool, True = may attend."""
    g = torch.Generator().manual_seed(5)

    def r(*shape, g=g):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    zeros_q = r(2, 11, 4)
    zeros_q[:, ::3] = 0.0  # queries of zeros: every score of theirs is exactly 0
    zeros_k = r(2, 11, 4)
    zeros_k[0, 1] = 0.0
    zeros_k[1, :5] = zeros_k[1, 0]  # five equal keys (ties) ...
    u = zeros_k[1, 0]
    zeros_q[1, 4] = -80000.0 * u / u.dot(u)  # ... that query 4 scores at -40000: a finite
    # fill such as -1e4 for the hidden keys would outweigh every key it may see
    rg = torch.Generator().manual_seed(seed)
    B, t_q, t_k = int(rng.integers(1, 4)), int(rng.integers(9, 14)), int(rng.integers(9, 16))
    random_mask = torch.from_numpy(rng.random((B, 1, t_q, t_k)) < 0.5)
    random_mask[..., int(rng.integers(t_k))] = True  # every query sees at least one key
    empty_row = torch.rand(4, 6, generator=g) < 0.6  # (t_q, t_k)
    empty_row[:, 0] = True
    empty_row[2] = False  # query 2 may attend to no key at all
    return [
        ("causal self-attention, t=5, d_k=4, d_v=3", r(5, 4), r(5, 4), r(5, 3), causal_mask(5)),
        ("a sliding window of 2, t=6, d_k=3, d_v=2", r(6, 3), r(6, 3), r(6, 2),
         sliding_window_mask(6, 2)),
        ("a padded batch: lengths [4, 2], mask (2, 1, 4)", r(2, 4, 6), r(2, 4, 6), r(2, 4, 3),
         padding_mask(torch.tensor([4, 2]), head_axis=False)),
        ("cross-attention t_q=4, t_k=6 where query 2 may attend to no key", r(4, 5), r(6, 5),
         r(6, 3), empty_row),
        ("causal self-attention over a batch of 2, t=11, with zero queries and keys "
         "(exact-zero scores) and scores near -40000", zeros_q, zeros_k, r(2, 11, 3),
         causal_mask(11)),
        ("heads: Q (1, 3, 9, 4), mask (1, 1, 9, 9) causal & padding (length 7)",
         r(1, 3, 9, 4), r(1, 3, 9, 4), r(1, 3, 9, 5),
         causal_mask(9) & padding_mask(torch.tensor([7]), 9)),
        ("a batch of 3 with one query each: Q (3, 1, 1, 6), K (3, 1, 5, 6), mask (3, 1, 1, 5)",
         r(3, 1, 1, 6), r(3, 1, 5, 6), r(3, 1, 5, 2), padding_mask(torch.tensor([5, 1, 3]))),
        (random_name(seed, f"Q ({B}, 2, {t_q}, 4), K ({B}, 2, {t_k}, 4), a random mask "
                     f"({B}, 1, {t_q}, {t_k})"), r(B, 2, t_q, 4, g=rg), r(B, 2, t_k, 4, g=rg),
         r(B, 2, t_k, 3, g=rg), random_mask),
    ]


def _call(fn, Q, K, V, mask, name):
    out = call(fn, Q.clone(), K.clone(), V.clone(), mask.clone(), what="your masked attention",
               where=name)
    expect_tensor(out, "your masked attention", Q.dtype, where=name)
    return out


def _same(got, candidate, rows=None) -> bool:
    """got == candidate, NaN equal to NaN; rows: bool (..., t_q) selecting the query rows."""
    if got.shape != candidate.shape:
        return False
    if rows is not None:
        got, candidate = got[rows], candidate[rows]
    return bool(np.allclose(got, candidate, atol=1e-6, rtol=1e-5, equal_nan=True))


def _diagnose(got, Q, K, V, mask, name):
    """Compare with typical wrong answers and fail naming the mistake."""
    where = f"on {name}"
    m = torch.broadcast_to(mask, (*Q.shape[:-2], Q.shape[-2], K.shape[-2])).numpy()
    has_key = m.any(-1)  # (..., t_q): rows with at least one allowed key
    q, k, v = (X.numpy() for X in (Q, K, V))
    S = q @ np.swapaxes(k, -2, -1) / math.sqrt(q.shape[-1])  # (..., t_q, t_k)
    expected = _sdpa(Q, K, V, mask).numpy()
    inverted = _sdpa(Q, K, V, ~mask).numpy()
    both = has_key & (~m).any(-1) & np.isfinite(got).all(-1)
    if both.any() and _same(got, inverted, both) and not _same(got, expected, both):
        fail(f"{where}: you blocked the keys where mask is True; in this book True = may attend "
             "(nn.MultiheadAttention's bool masks mean the opposite) — fill where ~mask")
    after = softmax(S, axis=-1) * m  # (..., t_q, t_k) weights zeroed after the softmax
    if _same(got, after @ v, has_key):
        row = np.unravel_index(np.argmin(np.where(has_key, after.sum(-1), 2.0)), has_key.shape)
        fail(f"{where}: you zeroed the masked weights after the softmax, so rows no longer sum "
             f"to 1 (query {row[-1]} sums to {after.sum(-1)[row]:.3f}); set the masked scores "
             "to -inf before the softmax")
    zero_scores = (S == 0) & m  # allowed keys whose score is exactly 0
    if zero_scores.any():
        by_value = torch.from_numpy(m & (S != 0))  # the mask read off the scores
        guess = _sdpa(Q, K, V, by_value).numpy()
        if _same(got, guess) or _same(np.nan_to_num(got), np.nan_to_num(guess)):
            fail(f"{where}: you found the masked entries by looking for scores equal to 0 (or "
                 "multiplied the scores by the mask); a real score can be exactly 0 (a query "
                 "of zeros) — use the mask itself: scores.masked_fill(~mask, -inf)")
    for fill in (-1e4, -1e5, -1e6):
        if (S[has_key] < fill + 50).any() and _same(
                got, softmax(np.where(m, S, fill), axis=-1) @ v * has_key[..., None], has_key):
            fail(f"{where}: the hidden keys got the finite score {fill:g}, but some query may "
                 f"only see keys that score below it (down to {S[m].min():.0f}), so the hidden "
                 "keys win: fill with -inf (float('-inf')) and zero the rows with no key")
    if _same(got, softmax(np.where(m, S, 0.0), axis=-1) @ v, has_key):
        fail(f"{where}: masked scores set to 0 are not hidden (e^0 = 1); set them to -inf")
    unscaled = _sdpa(Q * math.sqrt(Q.shape[-1]), K, V, mask).numpy()
    if _same(got, unscaled, has_key):
        fail(f"{where}: the scores are not scaled — divide Q Kᵀ by √d_k before masking")
    if _same(got, expected, has_key) and not has_key.all():
        row = np.argwhere(~has_key)[0]
        idx = tuple(int(x) for x in row)
        if not np.isfinite(got[idx]).all():
            fail(f"{where}: query {idx[-1]} may attend to no key and its output is NaN: softmax "
                 "of a row of only -inf is 0/0; return zeros for such rows (e.g. "
                 "torch.nan_to_num on the weights, or zero the rows where mask.any(-1) is False)")
        mean_v = np.broadcast_to(v.mean(-2, keepdims=True), got.shape)
        if np.allclose(got[idx], mean_v[idx], atol=1e-6):
            fail(f"{where}: query {idx[-1]} may attend to no key but got the average of all "
                 "values — a large negative fill (like -1e9) makes such a row uniform; return "
                 "zeros for rows with no allowed key")
        fail(f"{where}: query {idx[-1]} may attend to no key, so its output must be all zeros; "
             f"got {np.round(got[idx], 4).tolist()}")
    if not np.isfinite(got).all():
        idx = tuple(int(x) for x in np.argwhere(~np.isfinite(got))[0])
        fail(f"{where}: the output has NaN or inf at {idx} although that query has allowed "
             "keys — fill masked scores with -inf, not the weights, and use torch.softmax")


def _check_no_leak(fn, t=7, cut=4, seed=6):
    """Property: under a causal mask, changing tokens at positions ≥ cut must not change the
    outputs of positions < cut."""
    g = torch.Generator().manual_seed(seed)
    Q, K, V = (torch.randn(t, 5, generator=g, dtype=torch.float64) for _ in range(3))
    mask = causal_mask(t)
    before = to_numpy(_call(fn, Q, K, V, mask, "the future-token test"))
    K2, V2, Q2 = K.clone(), V.clone(), Q.clone()
    for X in (Q2, K2, V2):
        X[cut:] = torch.randn(t - cut, 5, generator=g, dtype=torch.float64) * 3
    after = to_numpy(_call(fn, Q2, K2, V2, mask, "the future-token test"))
    changed = ~np.isclose(before[:cut], after[:cut], atol=1e-9).all(-1)
    if changed.any():
        i = int(np.argmax(changed))
        fail(f"output changed when future tokens changed (position {i} depends on positions "
             f"{cut}..{t - 1}): the causal mask is not applied")


@checker("masked attention")
def check_masked_attention(fn, *, rng, seed) -> int:
    """Check ``fn(Q, K, V, mask)`` = softmax(Q Kᵀ / √d_k, masked) V for PyTorch tensors
    Q (..., t_q, d_k), K (..., t_k, d_k), V (..., t_k, d_v) and a bool ``mask`` broadcastable to
    (..., t_q, t_k), True = may attend. A query with no allowed key must output zeros."""
    cases = _masked_cases(rng, seed)
    for n, (name, Q, K, V, mask) in enumerate(cases):
        got = to_numpy(_call(fn, Q, K, V, mask, name), what="your masked attention")
        expect_shape(got, (*Q.shape[:-2], Q.shape[-2], V.shape[-1]), labels="(..., t_q, d_v)")
        expected = _sdpa(Q, K, V, mask).numpy()
        if n == 0:  # a property: whatever the values, the future must not leak
            try:
                _check_no_leak(fn)
                _check_no_leak(fn, t=13, cut=9, seed=7)
            except CheckFailed:
                if not _same(got, expected):
                    _diagnose(got, Q, K, V, mask, name)  # a known mistake: name it
                raise
        if not _same(got, expected):
            _diagnose(got, Q, K, V, mask, name)
            expect_close(np.nan_to_num(got, nan=1e9), expected, f"on {name}, the output")
    return len(cases) + 2
