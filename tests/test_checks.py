"""Every exercise checker accepts a correct answer and rejects typical wrong ones with a
message that says what is wrong."""

import numpy as np
from helpers import rejects

from minformer.attention import dot_product_attention, softmax
from minformer.checks import check_attention, check_softmax

# -- check_softmax -------------------------------------------------------------------------

def good_softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)


def test_check_softmax_accepts_correct(capsys):
    check_softmax(good_softmax)
    check_softmax(softmax)
    assert "✓ softmax: 13 cases passed" in capsys.readouterr().out


def test_check_softmax_rejects_overflow():
    def naive(z):
        with np.errstate(over="ignore", invalid="ignore"):
            return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    rejects(check_softmax, naive, "overflow", "subtract the row max")


def test_check_softmax_rejects_wrong_axis():
    rejects(check_softmax, lambda z: good_softmax(z.T).T if z.ndim == 2 else good_softmax(z),
            "axis 0", "last axis")


def test_check_softmax_rejects_unnormalized():
    rejects(check_softmax, lambda z: np.exp(z - z.max(axis=-1, keepdims=True)),
            "sum to 1")
    rejects(check_softmax, lambda z: np.exp(z), "divide by the sum")


def test_check_softmax_rejects_stub_none_and_shape():
    rejects(check_softmax, lambda z: None, "returned None")
    rejects(check_softmax, lambda z: good_softmax(z).ravel(), "expected shape")


def test_check_softmax_reports_crash_with_input_shape():
    rejects(check_softmax, lambda z: z[:, 0], "raised IndexError", "z (3,)")


# -- check_attention -----------------------------------------------------------------------

def test_check_attention_accepts_correct(capsys):
    check_attention(lambda X: good_softmax(X @ X.T) @ X)
    check_attention(dot_product_attention)
    assert "✓ dot-product attention: 8 cases passed" in capsys.readouterr().out


def test_check_attention_rejects_transposed_output():
    rejects(check_attention, lambda X: (good_softmax(X @ X.T) @ X).T, "expected shape (3, 4)",
            "got (4, 3)", "transposed")


def test_check_attention_rejects_unnormalized_weights():
    rejects(check_attention, lambda X: np.exp(X @ X.T) @ X, "not normalized")
    rejects(check_attention, lambda X: (X @ X.T) @ X, "raw scores")


def test_check_attention_rejects_softmax_over_columns():
    rejects(check_attention, lambda X: good_softmax((X @ X.T).T).T @ X, "wrong axis")


def test_check_attention_rejects_returning_weights():
    rejects(check_attention, lambda X: good_softmax(X @ X.T), "expected shape")


def test_check_attention_rejects_unstable_softmax():
    def naive(X):
        with np.errstate(over="ignore", invalid="ignore"):
            S = np.exp(X @ X.T)
            return (S / S.sum(-1, keepdims=True)) @ X
    rejects(check_attention, naive, "overflow")


def test_check_attention_rejects_other_wrong_values():
    rejects(check_attention, lambda X: good_softmax(X @ X.T) @ X + 0.01, "is wrong at index")
