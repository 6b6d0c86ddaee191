"""Checkers for chapter 3: self-attention with queries, keys and values (no scaling yet)."""

import itertools
import math

import numpy as np

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


def _qkv_attention(X, W_Q, W_K, W_V):
    """Reference: Y = softmax(Q Kᵀ) V with Q = X W_Q, K = X W_K, V = X W_V.

    X: (n, d)   W_Q, W_K: (d, d_k)   W_V: (d, d_v).   Returns Y (n, d_v) and A (n, n).
    """
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (n, d_k), (n, d_k), (n, d_v)
    A = softmax(Q @ K.T, axis=-1)  # (n, n) row i: query i's weights over the keys
    return A @ V, A  # (n, d_v), (n, n)


def _qkv_cases(rand, seed):
    rng = np.random.default_rng(3)

    def case(name, n, d, d_k, d_v, scale=1.0, X=None, rng=rng):
        X = rng.normal(size=(n, d)) if X is None else X
        Ws = [scale * rng.normal(size=shape) / math.sqrt(d)
              for shape in ((d, d_k), (d, d_k), (d, d_v))]
        return (name, X, *Ws)

    return [
        # d, d_k and d_v all differ, so a wrong shape says which matrix was misused
        case("4 tokens, d = 5, d_k = 3, d_v = 2", 4, 5, 3, 2),
        # square projections: transposing a W still runs, and is caught by value
        case("6 tokens, d = d_k = d_v = 4", 6, 4, 4, 4),
        case("a single token, d = 3, d_k = 2, d_v = 3", 1, 3, 2, 3),
        case("5 tokens with large scores", 5, 6, 6, 6, scale=20.0),
        case("9 tokens with repeats and a zero token, d = 7, d_k = 3, d_v = 5", 9, 7, 3, 5,
             X=np.array([[1.0, 0, 2, 0, 0, 1, 0]] * 3 + [[0.0] * 7]
                        + [[-1.0, 2, 0, 1, 3, 0, 1]] * 2 + list(rng.normal(size=(3, 7))))),
        case("tokens whose row maxima differ by thousands", 4, 3, 3, 2, scale=1.0,
             X=np.array([[80.0, 0, 0], [0.0, 1, 0], [0.0, 0, -60], [1.0, 1, 1]])),
        case(random_name(seed, "an odd number of tokens, odd sizes"),
             2 * int(rand.integers(5, 8)) + 1, int(rand.integers(3, 9)),
             int(rand.integers(1, 6)), int(rand.integers(1, 6)), rng=rand),
    ]


def _unpack(out):
    if out is None:
        fail("your qkv_attention returned None: did you forget `return Y, A`?")
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        kind = type(out).__name__
        fail(f"your qkv_attention returned a {kind}; return the pair (Y, A): the output and "
             "the attention weights")
    return (to_numpy(out[0], what="the Y you returned"),
            to_numpy(out[1], what="the A you returned"))


def _diagnose(Y, A, X, W_Q, W_K, W_V, name):
    """Compare a wrong (Y, A) with the usual mistakes; fail with the one it matches."""
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    S = Q @ K.T  # (n, n) the right scores
    if W_Q.shape[0] == W_Q.shape[1] == W_V.shape[1]:  # transposing runs only for square W
        for flips in itertools.product((False, True), repeat=3):
            if not any(flips):
                continue
            Ws = [W.T if flip else W for W, flip in zip((W_Q, W_K, W_V), flips)]
            Y_t, A_t = _qkv_attention(X, *Ws)
            if matches(A, A_t) and matches(Y, Y_t):
                which = ", ".join(n for n, flip in zip(("W_Q", "W_K", "W_V"), flips) if flip)
                fail(f"on {name}: transposed projection ({which}): each W has shape (d, d_k) "
                     "or (d, d_v), so Q = X @ W_Q with no .T (X @ W.T is what nn.Linear does "
                     "with its (out, in) weight)")
    if matches(A, softmax(S.T, axis=-1)) and not matches(A, softmax(S, axis=-1)):
        fail(f"on {name}: Q and K are swapped (A is transposed): the scores are Q Kᵀ, so row i "
             "holds query i's weights over the keys")
    if matches(A, softmax(S, axis=0)) and not matches(A, softmax(S, axis=-1)):
        fail(f"on {name}: the weights are normalized down the columns (axis 0); each row of A "
             "(axis -1) must sum to 1")
    if matches(A, softmax(S / math.sqrt(Q.shape[-1]), axis=-1)) and Q.shape[-1] > 1:
        fail(f"on {name}: you divided the scores by √d_k; this chapter's attention has no "
             "scaling yet (chapter 4 adds it)")
    if matches(A, S):
        fail(f"on {name}: A holds the raw scores Q Kᵀ; apply a softmax to each row")
    with np.errstate(over="ignore", invalid="ignore"):
        if matches(A, np.exp(S)):
            fail(f"on {name}: the rows of A are exp(scores) without normalizing: apply a "
                 "softmax to each row")
    sums = A.sum(axis=-1)
    if not np.allclose(sums, 1.0, atol=1e-6):
        row = int(np.argmax(np.abs(sums - 1)))
        fail(f"on {name}: rows of A must sum to 1; row {row} sums to {sums[row]:.4g} — "
             "did you apply the softmax over the last axis?")
    if matches(Y, A @ X) and not matches(Y, A @ V):
        fail(f"on {name}: Y averages the tokens X; it must average the values V = X @ W_V")


@checker("QKV attention")
def check_qkv_attention(fn, *, rng, seed) -> int:
    """Check ``fn(X, W_Q, W_K, W_V)`` returns (Y, A) with A = softmax(X W_Q (X W_K)ᵀ), Y = A X W_V.

    X: (n, d)   W_Q, W_K: (d, d_k)   W_V: (d, d_v) NumPy arrays; rows of X are tokens.
    Expected: Y (n, d_v) and A (n, n), each row of A summing to 1. No 1/√d_k (chapter 4).
    """
    cases = _qkv_cases(rng, seed)
    for name, X, W_Q, W_K, W_V in cases:
        n, d = X.shape
        d_v = W_V.shape[1]
        try:
            out = call(fn, X.copy(), W_Q.copy(), W_K.copy(), W_V.copy(),
                       what="your qkv_attention", where=name)
        except CheckFailed as e:
            if " raised " not in str(e):
                raise
            fail(f"{e} — check each product's shapes: Q = X @ W_Q is (n, d)(d, d_k), the scores "
                 "Q @ K.T are (n, n), Y = A @ V is (n, n)(n, d_v)")
        Y, A = _unpack(out)
        for part, label in ((out[0], "the Y you returned"), (out[1], "the A you returned")):
            expect_array(part, label, where=name)
        if Y.shape == (n, n) and A.shape == (n, d_v) and n != d_v:
            fail(f"on {name}: you returned (A, Y); return (Y, A)")
        if Y.shape == (n, d) and d != d_v:
            expect_shape(Y, (n, d_v), labels="(n, d_v)",
                         hint="Y has d columns: did you average X instead of V = X @ W_V?")
        expect_shape(Y, (n, d_v), labels="(n, d_v): one output row per token")
        expect_shape(A, (n, n), labels="(n, n): one row of weights per query")
        hint = "large scores overflow exp: subtract each row's max (or use a softmax)"
        expect_finite(A, f"on {name}: {hint}")
        expect_finite(Y, f"on {name}: {hint}")
        Y_ref, A_ref = _qkv_attention(X, W_Q, W_K, W_V)
        if matches(Y, Y_ref) and matches(A, A_ref):
            continue
        if matches(Y, A_ref) and matches(A, Y_ref):
            fail(f"on {name}: you returned (A, Y); return (Y, A)")
        if matches(Y, Y_ref) and matches(A, A_ref.T):
            fail(f"on {name}: Y is right but you returned A transposed (Aᵀ): row i of A must "
                 "hold query i's weights over the keys, so that each row sums to 1")
        _diagnose(Y, A, X, W_Q, W_K, W_V, name)
        expect_close(A, A_ref, f"on {name}, A")
        expect_close(Y, Y_ref, f"on {name}, Y")
    return len(cases)
