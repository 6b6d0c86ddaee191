"""minformer.attention: softmax and parameter-free dot-product attention (chapter 1)."""

import numpy as np
import pytest
import torch

from minformer.attention import attention_weights, dot_product_attention, softmax


def test_softmax_reference_values():
    # e^1, e^2, e^3 normalized, computed by hand
    e = np.exp([1.0, 2.0, 3.0])
    np.testing.assert_allclose(softmax(np.array([1.0, 2.0, 3.0])), e / e.sum())
    np.testing.assert_allclose(softmax(np.zeros(4)), np.full(4, 0.25))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_any_axis_sums_to_one(axis):
    x = np.random.default_rng(0).normal(size=(3, 5))
    out = softmax(x, axis=axis)
    np.testing.assert_allclose(out.sum(axis=axis), 1.0)
    assert (out > 0).all()


def test_softmax_is_stable_for_large_inputs():
    x = np.array([1000.0, 999.0, -1000.0])
    out = softmax(x)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, softmax(x - 1000.0))
    t = softmax(torch.tensor([1000.0, 999.0]))
    assert torch.isfinite(t).all()


def test_softmax_torch_matches_torch_softmax():
    x = torch.randn(2, 3, 7)
    for dim in (0, 1, 2):
        torch.testing.assert_close(softmax(x, axis=dim), torch.softmax(x, dim=dim))


def test_softmax_integer_input_and_scalar_rejected():
    np.testing.assert_allclose(softmax([0, 0]), [0.5, 0.5])
    assert softmax(torch.tensor([1, 1])).dtype == torch.float32
    with pytest.raises(ValueError, match="at least one axis"):
        softmax(np.float64(3.0))


def test_attention_matches_formula_loop():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 3))
    Y = dot_product_attention(X)
    for i in range(5):
        w = np.exp([X[i] @ X[j] for j in range(5)])
        w /= w.sum()
        np.testing.assert_allclose(Y[i], sum(w[j] * X[j] for j in range(5)))


def test_attention_known_two_token_value():
    X = np.array([[1.0, 0.0], [3.0, 0.0]])
    A = attention_weights(X)
    # row 0 scores: [1, 3] -> weights [1/(1+e^2), e^2/(1+e^2)]
    np.testing.assert_allclose(A[0], [1 / (1 + np.e**2), np.e**2 / (1 + np.e**2)])


def test_attention_rows_are_convex_weights():
    X = np.random.default_rng(2).normal(size=(6, 4))
    Y, A = dot_product_attention(X, return_weights=True)
    np.testing.assert_allclose(A.sum(-1), 1.0)
    assert (A >= 0).all()
    # convex combination: every output coordinate lies within the inputs' range
    assert (Y <= X.max(0) + 1e-12).all() and (Y >= X.min(0) - 1e-12).all()


@pytest.mark.parametrize("seed", range(10))
def test_attention_is_permutation_equivariant(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    X = rng.normal(size=(n, 3))
    perm = rng.permutation(n)
    np.testing.assert_allclose(dot_product_attention(X[perm]), dot_product_attention(X)[perm])


def test_attention_batched_torch_equals_numpy_per_sequence():
    X = torch.randn(4, 6, 5, dtype=torch.float64)
    Y = dot_product_attention(X)
    assert isinstance(Y, torch.Tensor) and Y.shape == X.shape
    for b in range(4):
        np.testing.assert_allclose(Y[b].numpy(), dot_product_attention(X[b].numpy()))


def test_attention_gradients_flow():
    X = torch.randn(3, 4, requires_grad=True)
    dot_product_attention(X).sum().backward()
    assert X.grad is not None and torch.isfinite(X.grad).all()


@pytest.mark.parametrize("shape", [(4,), (2, 2, 2, 2), ()])
def test_attention_rejects_wrong_rank(shape):
    with pytest.raises(ValueError, match=r"\(n, d\).*got shape"):
        dot_product_attention(np.zeros(shape))


@pytest.mark.parametrize("shape", [(0, 3), (2, 0, 3), (3, 0)])
def test_attention_rejects_empty(shape):
    with pytest.raises(ValueError, match="empty"):
        dot_product_attention(np.zeros(shape))
