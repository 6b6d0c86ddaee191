"""Checkers for chapter 1: softmax and parameter-free dot-product attention."""

import numpy as np

from ..attention import dot_product_attention, softmax
from ._core import call, expect_close, expect_finite, expect_shape, fail, matches, passed, to_numpy


def _softmax_cases():
    rng = np.random.default_rng(0)
    return [
        ("a row vector", np.array([1.0, 2.0, 3.0])),
        ("a (3, 4) matrix", rng.normal(size=(3, 4))),
        ("a (2, 3, 5) batch", rng.normal(size=(2, 3, 5))),
        ("equal entries", np.zeros((2, 4))),
        ("large inputs (up to 1000)", np.array([[1000.0, 999.0, 998.0], [-5.0, 0.0, 800.0]])),
        ("very negative inputs", np.array([[-1000.0, -1001.0, -1002.0]])),
    ]


def check_softmax(fn) -> None:
    """Check ``fn(x)``: a numerically stable softmax over the last axis of a NumPy array."""
    cases = _softmax_cases()
    for name, x in cases:
        got = to_numpy(call(fn, x.copy(), what="softmax"), what="softmax")
        expect_shape(got, x.shape, hint="softmax keeps the input's shape")
        large = np.abs(x).max() > 100
        expect_finite(got, f"on {name}: overflow for large inputs: did you subtract the row max before exp?"
                      if large else f"on {name}: check for a division by zero")
        if x.ndim >= 2 and x.shape[0] > 1 and matches(got, softmax(x, axis=0)) and not matches(
                got, softmax(x, axis=-1)):
            fail(f"on {name}: the entries sum to 1 down the columns (axis 0), not along each row: "
                 "normalize over the last axis (axis=-1)")
        sums = got.sum(axis=-1)
        if not np.allclose(sums, 1.0, atol=1e-6):
            hint = ("did you divide by the sum of the exponentials?"
                    if matches(got, np.exp(x)) else "did you normalize over the last axis?")
            if sums.ndim == 0:
                fail(f"on {name}: the entries must sum to 1 but sum to {sums:.4g} — {hint}")
            idx = np.unravel_index(np.argmax(np.abs(sums - 1)), sums.shape)
            row = int(idx[0]) if len(idx) == 1 else tuple(int(i) for i in idx)
            fail(f"on {name}: rows must sum to 1; row {row} sums to {sums[idx]:.4g} — {hint}")
        if (got < 0).any():
            fail(f"on {name}: softmax outputs are probabilities, but some are negative")
        expect_close(got, softmax(x, axis=-1), f"on {name}, the softmax")
    passed("softmax", len(cases))


def _attention_cases():
    rng = np.random.default_rng(1)
    return [
        ("3 tokens of size 4", rng.normal(size=(3, 4))),
        ("5 tokens of size 2", rng.normal(size=(5, 2))),
        ("a single token", rng.normal(size=(1, 3))),
        ("identical tokens", np.ones((4, 3))),
        ("long tokens (large dot products)", 12 * rng.normal(size=(4, 6))),
    ]


def check_attention(fn) -> None:
    """Check ``fn(X)`` = softmax(X Xᵀ) X for a NumPy matrix X of shape (n, d), rows = tokens."""
    cases = _attention_cases()
    for name, X in cases:
        got = to_numpy(call(fn, X.copy(), what="your attention"), what="your attention")
        n, d = X.shape
        expect_shape(got, (n, d), labels="(n, d): one output row per token")
        expect_finite(got, "overflow: large dot products need a stable softmax (subtract the row max)")
        expected = dot_product_attention(X)
        if matches(got, expected):
            continue
        scores = X @ X.T
        if matches(got, np.exp(scores) @ X):
            fail(f"on {name}: the weights are not normalized — apply softmax to X Xᵀ, not just exp")
        if matches(got, scores @ X):
            fail(f"on {name}: you used the raw scores X Xᵀ as weights; apply softmax to each row")
        if matches(got, softmax(scores, axis=0) @ X):
            fail(f"on {name}: softmax over the wrong axis — each row of the weights (axis -1) "
                 "must sum to 1")
        if matches(got, softmax(scores, axis=-1)):
            fail(f"on {name}: you returned the weights A; the output is A @ X")
        expect_close(got, expected, f"on {name}, the output")
    passed("dot-product attention", len(cases))
