"""check_qkv_attention accepts softmax(Q Kᵀ) V with its weights and rejects the usual mistakes
with a message that names them."""

import math

import numpy as np
import torch
from helpers import rejects as reject_with

from minformer.attention import scaled_dot_product_attention, softmax
from minformer.checks import check_qkv_attention
from minformer.checks.qkv import _qkv_attention


def rejects(fn, *fragments):
    reject_with(check_qkv_attention, fn, *fragments)


def good(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = softmax(Q @ K.T, axis=-1)
    return A @ V, A


def test_reference_equals_scaled_attention_with_the_scale_undone():
    rng = np.random.default_rng(0)
    X, W_Q, W_K, W_V = (rng.normal(size=s) for s in ((5, 4), (4, 3), (4, 3), (4, 2)))
    Y, A = _qkv_attention(X, W_Q, W_K, W_V)
    Q, K, V = (torch.tensor(X @ W) for W in (W_Q, W_K, W_V))
    Y_t, A_t = scaled_dot_product_attention(Q * math.sqrt(3), K, V, return_weights=True)
    np.testing.assert_allclose(Y, Y_t.numpy(), rtol=1e-10)
    np.testing.assert_allclose(A, A_t.numpy(), rtol=1e-10)


def test_accepts_correct(capsys):
    check_qkv_attention(good)
    check_qkv_attention(_qkv_attention)
    assert "✓ QKV attention: 7 cases passed" in capsys.readouterr().out


def test_accepts_torch_outputs():
    def in_torch(X, W_Q, W_K, W_V):
        X, W_Q, W_K, W_V = (torch.tensor(a) for a in (X, W_Q, W_K, W_V))
        A = torch.softmax((X @ W_Q) @ (X @ W_K).T, dim=-1)
        return A @ (X @ W_V), A
    check_qkv_attention(in_torch)


def test_rejects_transposed_projections():
    # d ≠ d_k: X @ W.T cannot run, the crash message explains the shapes
    rejects(lambda X, W_Q, W_K, W_V: good(X, W_Q.T, W_K.T, W_V.T),
            "raised ValueError", "Q = X @ W_Q is (n, d)(d, d_k)")

    # a transpose only where it happens to run (square W): caught by value
    def transpose_if_square(W):
        return W.T if W.shape[0] == W.shape[1] else W
    rejects(lambda X, W_Q, W_K, W_V: good(X, *map(transpose_if_square, (W_Q, W_K, W_V))),
            "transposed projection (W_Q, W_K, W_V)")
    rejects(lambda X, W_Q, W_K, W_V: good(X, W_Q, W_K, transpose_if_square(W_V)),
            "transposed projection (W_V)")


def test_rejects_averaging_X_instead_of_V():
    def uses_X(X, W_Q, W_K, W_V):
        _, A = good(X, W_Q, W_K, W_V)
        return A @ X, A
    rejects(uses_X, "expected shape (4, 2)", "average X instead of V")


def test_rejects_averaging_X_when_shapes_agree():
    def uses_X_if_same_shape(X, W_Q, W_K, W_V):
        Y, A = good(X, W_Q, W_K, W_V)
        return (A @ X, A) if W_V.shape[0] == W_V.shape[1] else (Y, A)
    rejects(uses_X_if_same_shape, "averages the tokens X")


def test_rejects_unnormalized_weights():
    def columns(X, W_Q, W_K, W_V):
        A = softmax((X @ W_Q) @ (X @ W_K).T, axis=0)
        return A @ (X @ W_V), A
    rejects(columns, "down the columns", "axis -1")

    def exp_only(X, W_Q, W_K, W_V):
        with np.errstate(over="ignore"):
            A = np.exp((X @ W_Q) @ (X @ W_K).T)
        return A @ (X @ W_V), A
    rejects(exp_only, "without normalizing")

    def raw(X, W_Q, W_K, W_V):
        A = (X @ W_Q) @ (X @ W_K).T
        return A @ (X @ W_V), A
    rejects(raw, "raw scores")


def test_rejects_swapped_queries_and_keys():
    rejects(lambda X, W_Q, W_K, W_V: good(X, W_K, W_Q, W_V), "Q and K are swapped")


def test_rejects_scaling_in_this_chapter():
    def scaled(X, W_Q, W_K, W_V):
        Q, K = X @ W_Q, X @ W_K
        A = softmax(Q @ K.T / math.sqrt(Q.shape[1]), axis=-1)
        return A @ (X @ W_V), A
    rejects(scaled, "√d_k", "chapter 4")


def test_rejects_wrong_return_values():
    rejects(lambda *a: good(*a)[0], "return the pair (Y, A)")
    rejects(lambda *a: good(*a)[::-1], "you returned (A, Y)")
    rejects(lambda *a: None, "returned None")



def test_rejects_overflow():
    def naive(X, W_Q, W_K, W_V):
        with np.errstate(over="ignore", invalid="ignore"):
            E = np.exp((X @ W_Q) @ (X @ W_K).T)
            A = E / E.sum(axis=-1, keepdims=True)
        return A @ (X @ W_V), A
    rejects(naive, "large scores", "overflow")


def test_rejects_an_unrecognised_wrong_answer_by_value():
    rejects(lambda *a: (good(*a)[0] + 0.01, good(*a)[1]), "Y is wrong at index")
