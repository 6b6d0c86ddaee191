"""Checkers for chapter 2: attention as soft lookup (Nadaraya–Watson kernel regression)."""

import numpy as np

from ..attention import softmax
from ._core import (
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


def _nadaraya_watson(queries, keys, values, bandwidth):
    """Reference: Σ_j softmax_j(-(q_i - k_j)² / (2h²)) v_j for every query q_i.

    queries: (t_q,)   keys: (t_k,)   values: (t_k,)   bandwidth h > 0.   Returns (t_q,).
    """
    scores = -(queries[:, None] - keys[None, :]) ** 2 / (2 * bandwidth**2)  # (t_q, t_k)
    return softmax(scores, axis=-1) @ values  # (t_q,)


def _nadaraya_watson_cases(rand, seed):
    rng = np.random.default_rng(2)
    keys = np.sort(rng.uniform(0, 5, 8))
    t_q, t_k = int(rand.integers(9, 16)), 2 * int(rand.integers(5, 9)) + 1
    h = float(rand.uniform(0.3, 1.5))
    r_keys = rand.uniform(-3, 3, t_k)
    return [
        # the first case has h ≠ 1, h ≠ 0.5 (where 2h² = h and (2h)² = 2h) and t_q ≠ t_k,
        # so most mistakes show up there
        ("5 queries, 8 keys, h = 0.7", rng.uniform(0, 5, 5), keys, np.sin(keys) + 2, 0.7),
        ("6 queries at the 6 keys, h = 0.3", np.linspace(0, 1, 6), np.linspace(0, 1, 6),
         rng.normal(size=6), 0.3),
        ("1 query, 3 keys, h = 2", np.array([0.7]), np.array([0.0, 1.0, 3.0]),
         np.array([1.0, -2.0, 5.0]), 2.0),
        ("12 queries, 4 keys, h = 4", np.linspace(-1, 6, 12), np.array([0.0, 1.5, 3.0, 4.5]),
         np.array([3.0, 1.0, -1.0, 2.0]), 4.0),
        ("queries far from every key, h = 0.05", np.array([10.0, 0.5]),
         np.array([0.0, 1.0, 2.0]), np.array([4.0, 6.0, -1.0]), 0.05),
        ("11 queries, 9 keys with repeats and zeros (ties), h = 0.8",
         np.linspace(-2, 3, 11), np.array([0.0, 0.0, 1.0, 1.0, 1.0, 2.5, 0.0, -1.0, 3.0]),
         np.array([0.0, 2.0, -1.0, 0.0, 4.0, 1.0, 0.0, 3.0, -2.0]), 0.8),
        ("a single key, 4 queries, h = 1.5", np.array([0.0, 1.0, -2.0, 7.0]), np.array([0.5]),
         np.array([3.0]), 1.5),
        (random_name(seed, f"{t_q} queries, {t_k} keys, h = {h:.3f}"),
         rand.uniform(-3, 3, t_q), r_keys, rand.normal(size=t_k), h),
    ]


def _diagnose(got, q, k, v, h, name):
    """Compare a wrong answer with the usual mistakes; fail with the one it matches."""
    D2 = (q[:, None] - k[None, :]) ** 2  # (t_q, t_k) squared distances
    S = -D2 / (2 * h**2)  # (t_q, t_k) the right scores
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        suspects = [
            (softmax(-D2 / (2 * h) ** 2, axis=-1) @ v,
             "you divided by (2h)² = 4h²; the Gaussian kernel divides by 2h², i.e. 2 * h**2"),
            (softmax(S, axis=0) @ v,
             ("the weights are normalized over the queries (axis 0); each query's weights "
              "over the keys (axis -1) must sum to 1")),
            (np.exp(S) @ v,
             ("the kernel values are not normalized: divide by their sum over the keys "
              "(or use a softmax)")),
            (softmax(-D2 / (2 * h), axis=-1) @ v,
             "the bandwidth enters squared: the score is -(q - k)² / (2h²), not / (2h)"),
            (softmax(-D2 / h**2, axis=-1) @ v,
             "the Gaussian kernel has 2h² in the denominator: -(q - k)² / (2h²), not / h²"),
            (softmax(-D2 * h**2 / 2, axis=-1) @ v,
             "divide the squared distance by 2h², do not multiply by it"),
            (softmax(-np.sqrt(D2) / (2 * h**2), axis=-1) @ v,
             "the distance must be squared: -(q - k)² / (2h²)"),
            (softmax(-S, axis=-1) @ v,
             "the weights grow with distance: the score is minus the squared distance"),
        ]
    for candidate, message in suspects:
        if np.isfinite(candidate).all() and matches(got, candidate):
            fail(f"on {name}: {message}")


@checker("Nadaraya–Watson regression")
def check_nadaraya_watson(fn, *, rng, seed) -> int:
    """Check ``fn(queries, keys, values, bandwidth)`` = Nadaraya–Watson kernel regression.

    queries: (t_q,)   keys: (t_k,)   values: (t_k,) NumPy arrays; bandwidth: h > 0.
    Expected: predictions (t_q,), prediction i = Σ_j softmax_j(-(q_i - k_j)² / (2h²)) v_j.
    """
    cases = _nadaraya_watson_cases(rng, seed)
    for name, q, k, v, h in cases:
        out = call(fn, q.copy(), k.copy(), v.copy(), h, what="your nadaraya_watson", where=name)
        got = to_numpy(out, what="your nadaraya_watson")
        t_q, t_k = len(q), len(k)
        if got.shape == (t_q, t_k) and t_q != t_k:
            fail(f"on {name}: you returned the ({t_q}, {t_k}) weight matrix; the predictions "
                 "are the weights times the values")
        if got.shape == (t_k,) and t_q != t_k:
            expect_shape(got, (t_q,), labels="(t_q,)",
                         hint="one prediction per query: the output has t_q entries, not t_k")
        if got.shape in ((t_q, 1), (1, t_q)):
            expect_shape(got, (t_q,), labels="(t_q,)", hint="return a 1-D array of predictions")
        expect_shape(got, (t_q,), labels="(t_q,): one prediction per query")
        expect_array(out, "your nadaraya_watson", where=name)
        expect_finite(got, f"on {name}: every kernel value underflowed to 0 and 0/0 gave NaN — "
                           "subtract each query's largest score before exp (or use a softmax)")
        expected = _nadaraya_watson(q, k, v, h)
        if matches(got, expected):
            continue
        _diagnose(got, q, k, v, h, name)
        expect_close(got, expected, f"on {name}, the prediction")
    return len(cases)
