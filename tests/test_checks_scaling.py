"""check_scaled_attention accepts softmax(Q Kᵀ / √d_k) V in its usual spellings and rejects the
typical mistakes with a message that names them."""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from helpers import rejects as reject_with

from minformer.attention import scaled_dot_product_attention
from minformer.checks import check_scaled_attention


def rejects(fn, *fragments):
    reject_with(check_scaled_attention, fn, *fragments)


def attention(Q, K, V, divisor=None, axis=-1):
    """softmax(Q Kᵀ / √divisor) V, divisor defaulting to d_k."""
    divisor = Q.shape[-1] if divisor is None else divisor
    return torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(divisor), dim=axis) @ V


def test_accepts_correct_answers(capsys):
    check_scaled_attention(attention)
    check_scaled_attention(scaled_dot_product_attention)
    check_scaled_attention(F.scaled_dot_product_attention)
    check_scaled_attention(lambda Q, K, V: attention(Q, K, V).numpy())  # NumPy output is fine
    out = capsys.readouterr().out
    assert out.count("✓ scaled dot-product attention: 10 cases passed") == 4


def test_rejects_missing_scale():
    rejects(lambda Q, K, V: attention(Q, K, V, divisor=1), "not scaled", "√d_k")


def test_rejects_dividing_by_d_k():
    rejects(lambda Q, K, V: attention(Q, K, V, divisor=Q.shape[-1] ** 2),
            "divided the scores by d_k", "square root")


def test_rejects_multiplying_by_sqrt_d_k():
    rejects(lambda Q, K, V: attention(Q, K, V, divisor=1 / Q.shape[-1]), "multiplied")


@pytest.mark.parametrize("size, fragment", [
    (lambda Q, K, V: K.shape[-2], "number of keys"),
    (lambda Q, K, V: Q.shape[-2], "number of queries"),
    (lambda Q, K, V: V.shape[-1], "size of the values"),
])
def test_rejects_scaling_by_the_wrong_size(size, fragment):
    rejects(lambda Q, K, V: attention(Q, K, V, divisor=size(Q, K, V)), fragment, "Q.shape[-1]")


def test_rejects_axis_one_on_batched_input():
    # right for a 2-d Q (t_q, d_k), wrong once Q is (batch, heads, t_q, d_k)
    rejects(lambda Q, K, V: attention(Q, K, V, divisor=Q.shape[1]), "batch of 2", "axis 1")


def test_rejects_d_model_of_all_heads():
    def d_model_scale(Q, K, V):
        if Q.ndim == 4:
            return attention(Q, K, V, divisor=Q.shape[1] * Q.shape[-1])
        return attention(Q, K, V)
    rejects(d_model_scale, "h·d_k", "each head")


def test_rejects_scaling_the_output():
    rejects(lambda Q, K, V: attention(Q, K, V, divisor=1) / math.sqrt(Q.shape[-1]),
            "divided the output", "inside the softmax")


def test_rejects_wrong_softmax_axis():
    rejects(lambda Q, K, V: attention(Q, K, V, axis=-2), "wrong axis", "dim=-1")


def test_rejects_k_not_transposed():
    # crashes when t_k != d_k: the message names the shapes and the fix
    rejects(lambda Q, K, V: torch.softmax(Q @ K / math.sqrt(Q.shape[-1]), -1) @ V,
            "raised RuntimeError", "K (5, 6)", "K.transpose(-2, -1)")


def test_rejects_k_not_transposed_when_k_is_square():
    def sneaky(Q, K, V):  # right whenever K is not square, silently wrong when it is
        if K.shape[-2] == K.shape[-1]:
            return torch.softmax(Q @ K / math.sqrt(Q.shape[-1]), -1) @ V
        return attention(Q, K, V)
    rejects(sneaky, "square K", "K, not Kᵀ")


def test_rejects_k_dot_t_on_batches():
    def dot_t(Q, K, V):
        with warnings.catch_warnings():  # torch deprecates .T on more than 2 axes
            warnings.simplefilter("ignore", UserWarning)
            return torch.softmax(Q @ K.T / math.sqrt(Q.shape[-1]), -1) @ V
    rejects(dot_t, "batch of 2", "raised", "reverses *all* axes")


def test_rejects_missing_softmax():
    rejects(lambda Q, K, V: Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]) @ V,
            "no softmax")


def test_rejects_weights_instead_of_output():
    rejects(lambda Q, K, V: torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1),
            "expected shape (3, 2)", "weights A instead of A @ V")


def test_rejects_transposed_output():
    rejects(lambda Q, K, V: attention(Q, K, V).transpose(-2, -1), "got (2, 3)", "transposed")


def test_rejects_overflow():
    def naive(Q, K, V):
        e = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]))
        return e / e.sum(-1, keepdim=True) @ V
    rejects(naive, "large scores", "overflow")


def test_rejects_stub_and_none():
    rejects(lambda Q, K, V: None, "returned None")


def test_unknown_mistake_gets_the_first_wrong_entry():
    rejects(lambda Q, K, V: attention(Q, K, V) + 0.01, "the output is wrong at index")
