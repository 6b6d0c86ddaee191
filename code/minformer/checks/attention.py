"""Checkers for chapter 1: softmax and parameter-free dot-product attention."""

import numpy as np

from ..attention import dot_product_attention, softmax
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


def _softmax_cases(rng, seed):
    fixed = np.random.default_rng(0)
    shape = (int(rng.integers(2, 6)), int(rng.integers(9, 17)))
    big = rng.normal(size=shape) + rng.choice([-4000.0, 0.0, 3000.0], size=(shape[0], 1))
    return [
        ("a row vector", np.array([1.0, 2.0, 3.0])),
        ("a (3, 4) matrix", fixed.normal(size=(3, 4))),
        ("a (2, 3, 5) batch", fixed.normal(size=(2, 3, 5))),
        ("equal entries", np.zeros((2, 4))),
        ("large inputs (up to 1000)", np.array([[1000.0, 999.0, 998.0], [-5.0, 0.0, 800.0]])),
        ("very negative inputs", np.array([[-1000.0, -1001.0, -1002.0]])),
        ("rows whose maxima differ by thousands",
         np.array([[0.0, 1.0, 2.0], [-3000.0, -2999.0, -2998.0], [5000.0, 4000.0, 4999.0]])),
        ("one row spanning ±1000 (mean 0)", np.array([[1000.0, 0.0, -1000.0, 999.0]])),
        ("a (4, 1) input: one entry per row", fixed.normal(size=(4, 1))),
        ("a (1, 11) input: one row of 11, with ties", np.array([[3.0, 1, 3, 0, 0, -2, 3, 1, 0,
                                                               5, 5]])),
        ("a (3, 1, 9) batch", fixed.normal(size=(3, 1, 9))),
        (random_name(seed, f"{shape} with rows offset by thousands"), big),
        (random_name(seed, "a (2, 3, 13) batch"), 5 * rng.normal(size=(2, 3, 13))),
    ]


@checker("softmax")
def check_softmax(fn, *, rng, seed) -> int:
    """Check ``fn(x)``: a numerically stable softmax over the last axis of a NumPy array."""
    cases = _softmax_cases(rng, seed)
    for name, x in cases:
        out = call(fn, x.copy(), what="softmax", where=name)
        got = to_numpy(out, what="softmax")
        expect_shape(got, x.shape, hint="softmax keeps the input's shape")
        expect_array(out, "softmax", where=name)
        large = np.abs(x).max() > 100
        if large and not np.isfinite(got).all():
            spread = np.ptp(x.max(axis=-1)) if x.ndim > 1 else 0.0
            if spread > 1000:
                fail(f"on {name}: the output has NaN or inf: the row maxima differ by "
                     f"{spread:.0f}, so subtracting one max for the whole array (or the row "
                     "mean) still overflows or underflows some row — subtract each row's own "
                     "max: x.max(axis=-1, keepdims=True)")
            fail(f"on {name}: the output has NaN or inf: overflow for large inputs: did you "
                 "subtract the row max before exp? (each row's own max, keepdims=True)")
        expect_finite(got, f"on {name}: check for a division by zero")
        if x.ndim >= 2 and x.shape[0] > 1 and matches(got, softmax(x, axis=0)) and not matches(
                got, softmax(x, axis=-1)):
            fail(f"on {name}: the entries sum to 1 down the columns (axis 0), not along each row: "
                 "normalize over the last axis (axis=-1)")
        sums = got.sum(axis=-1)
        if not np.allclose(sums, 1.0, atol=1e-6):
            with np.errstate(over="ignore"):
                hint = ("did you divide by the sum of the exponentials?"
                        if matches(got, np.exp(x)) else "did you normalize over the last axis "
                        "(sum with axis=-1, keepdims=True)?")
            if sums.ndim == 0:
                fail(f"on {name}: the entries must sum to 1 but sum to {sums:.4g} — {hint}")
            idx = np.unravel_index(np.argmax(np.abs(sums - 1)), sums.shape)
            row = int(idx[0]) if len(idx) == 1 else tuple(int(i) for i in idx)
            fail(f"on {name}: rows must sum to 1; row {row} sums to {sums[idx]:.4g} — {hint}")
        if (got < 0).any():
            fail(f"on {name}: softmax outputs are probabilities, but some are negative")
        expect_close(got, softmax(x, axis=-1), f"on {name}, the softmax")
    return len(cases)


def _attention_cases(rng, seed):
    fixed = np.random.default_rng(1)
    n, d = int(rng.integers(9, 14)), int(rng.integers(2, 8))
    return [
        ("3 tokens of size 4", fixed.normal(size=(3, 4))),
        ("5 tokens of size 2", fixed.normal(size=(5, 2))),
        ("a single token", fixed.normal(size=(1, 3))),
        ("identical tokens", np.ones((4, 3))),
        ("long tokens (large dot products)", 12 * fixed.normal(size=(4, 6))),
        ("11 tokens of size 1 with repeats and a zero token",
         np.array([[2.0], [-1.0], [2.0], [0.0], [0.5], [-1.0], [3.0], [2.0], [0.0], [1.0],
                   [-2.5]])),
        ("tokens of very different lengths (row maxima differ by thousands)",
         np.array([[60.0, 0.0, 1.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.5], [-40.0, 1.0, 0.0]])),
        (random_name(seed, f"{n} tokens of size {d}"), 2 * rng.normal(size=(n, d))),
    ]


@checker("dot-product attention")
def check_attention(fn, *, rng, seed) -> int:
    """Check ``fn(X)`` = softmax(X Xᵀ) X for a NumPy matrix X of shape (n, d), rows = tokens."""
    cases = _attention_cases(rng, seed)
    for name, X in cases:
        out = call(fn, X.copy(), what="your attention", where=name)
        got = to_numpy(out, what="your attention")
        n, d = X.shape
        expect_shape(got, (n, d), labels="(n, d): one output row per token")
        expect_array(out, "your attention", where=name)
        expect_finite(got, f"on {name}: overflow: large dot products need a stable softmax "
                      "(subtract each row's own max)")
        expected = dot_product_attention(X)
        if matches(got, expected):
            continue
        scores = X @ X.T
        with np.errstate(over="ignore", invalid="ignore"):
            if matches(got, np.exp(scores) @ X):
                fail(f"on {name}: the weights are not normalized — apply softmax to X Xᵀ, not "
                     "just exp")
        if matches(got, scores @ X):
            fail(f"on {name}: you used the raw scores X Xᵀ as weights; apply softmax to each row")
        if matches(got, softmax(scores, axis=0) @ X):
            fail(f"on {name}: softmax over the wrong axis — each row of the weights (axis -1) "
                 "must sum to 1")
        if matches(got, softmax(scores, axis=-1)):
            fail(f"on {name}: you returned the weights A; the output is A @ X")
        if matches(got, softmax(scores / np.sqrt(d), axis=-1) @ X) and d > 1:
            fail(f"on {name}: you divided the scores by √d; this chapter's attention has no "
                 "scaling yet (chapter 4 adds it)")
        expect_close(got, expected, f"on {name}, the output")
    return len(cases)
