"""check_causal_mask and check_masked_attention accept correct answers and reject the typical
masking mistakes with a message that names them."""

import math

import numpy as np
import torch
import torch.nn.functional as F
from helpers import rejects

from minformer.attention import scaled_dot_product_attention
from minformer.checks import check_causal_mask, check_masked_attention
from minformer.masks import causal_mask, to_additive_mask

# -- check_causal_mask ---------------------------------------------------------------------

def test_causal_mask_accepts_correct(capsys):
    check_causal_mask(causal_mask)
    check_causal_mask(lambda t: torch.tril(torch.ones(t, t)).bool())
    check_causal_mask(lambda t: np.tril(np.ones((t, t), dtype=bool)))  # NumPy bool is fine
    assert capsys.readouterr().out.count("✓ causal mask: 7 cases passed") == 3


def test_causal_mask_rejects_diagonal_excluded():
    rejects(check_causal_mask, lambda t: torch.ones(t, t).tril(-1).bool(),
            "diagonal is False", "off by", "j ≤ i")


def test_causal_mask_rejects_upper_triangle():
    rejects(check_causal_mask, lambda t: torch.ones(t, t).triu().bool(), "upper-triangular")


def test_causal_mask_rejects_strict_future():
    rejects(check_causal_mask, lambda t: torch.ones(t, t).triu(1).bool(),
            "nn.MultiheadAttention", "True = may attend")


def test_causal_mask_rejects_wrong_dtype_and_additive_masks():
    rejects(check_causal_mask, lambda t: torch.ones(t, t).tril(), "dtype torch.float32", "bool")
    rejects(check_causal_mask, lambda t: to_additive_mask(causal_mask(t)), "additive float mask")


def test_causal_mask_rejects_shape_stub_and_none():
    rejects(check_causal_mask, lambda t: torch.ones(t, t + 1).tril().bool(), "expected shape")
    rejects(check_causal_mask, lambda t: None, "returned None")



def test_causal_mask_names_a_single_wrong_entry():
    def one_off(t):
        m = causal_mask(t)
        if t > 4:
            m[4, 1] = False
        return m
    rejects(check_causal_mask, one_off, "mask[4, 1] should be True")


# -- check_masked_attention ----------------------------------------------------------------

def good(Q, K, V, mask):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    scores = scores.masked_fill(~mask, float("-inf"))
    A = torch.nan_to_num(torch.softmax(scores, dim=-1))  # a row of only -inf gives NaN → 0
    return A @ V


def test_masked_attention_accepts_correct(capsys):
    check_masked_attention(good)
    check_masked_attention(scaled_dot_product_attention)
    check_masked_attention(lambda Q, K, V, m: F.scaled_dot_product_attention(Q, K, V, m))
    assert capsys.readouterr().out.count("✓ masked attention: 10 cases passed") == 3


def test_masked_attention_rejects_no_mask_as_a_leak():
    rejects(check_masked_attention, lambda Q, K, V, m: scaled_dot_product_attention(Q, K, V),
            "output changed when future tokens changed", "causal mask is not applied")


def test_masked_attention_rejects_a_subtle_leak():
    # a small term from every value, the future ones included: the property test names it
    def leaky(Q, K, V, mask):
        return good(Q, K, V, mask) + 1e-3 * V.mean(dim=-2, keepdim=True)
    rejects(check_masked_attention, leaky, "position 0 depends on positions 4..6")


def test_masked_attention_rejects_inverted_convention():
    rejects(check_masked_attention, lambda Q, K, V, m: good(Q, K, V, ~m),
            "blocked the keys where mask is True", "True = may attend")


def test_masked_attention_rejects_mask_after_softmax():
    def after(Q, K, V, mask):
        A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), -1)
        return (A * mask) @ V
    rejects(check_masked_attention, after, "after the softmax", "no longer sum to 1",
            "before the softmax")


def test_masked_attention_rejects_zero_fill():
    def zero_fill(Q, K, V, mask):
        scores = (Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])).masked_fill(~mask, 0.0)
        return torch.softmax(scores, -1) @ V
    rejects(check_masked_attention, zero_fill, "set to 0 are not hidden", "-inf")


def test_masked_attention_rejects_missing_scale():
    rejects(check_masked_attention,
            lambda Q, K, V, m: good(Q * math.sqrt(Q.shape[-1]), K, V, m), "not scaled", "√d_k")


def test_masked_attention_rejects_nan_on_fully_masked_rows():
    def nan_rows(Q, K, V, mask):
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), -1) @ V
    rejects(check_masked_attention, nan_rows, "query 2 may attend to no key", "NaN",
            "return zeros")


def test_masked_attention_rejects_uniform_fully_masked_rows():
    def big_negative(Q, K, V, mask):
        scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
        return torch.softmax(scores.masked_fill(~mask, -1e9), -1) @ V
    rejects(check_masked_attention, big_negative, "average of all values", "-1e9")


def test_masked_attention_rejects_wrong_shape_crash_and_stub():
    rejects(check_masked_attention, lambda Q, K, V, m: good(Q, K, V, m).transpose(-2, -1),
            "expected shape (5, 3)")
    rejects(check_masked_attention, lambda Q, K, V, m: good(Q, K, V, m.float()),
            "raised TypeError", "m (5, 5)")

