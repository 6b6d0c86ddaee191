"""The chapter 6 checkers accept correct answers and reject typical wrong ones with a message
that says what is wrong."""

import math

import pytest
import torch

from minformer.attention import scaled_dot_product_attention
from minformer.checks import CheckFailed, check_multi_head_attention, check_split_heads
from minformer.multihead import MultiHeadAttention


def rejects(checker, *fns, fragments=()):
    with pytest.raises(CheckFailed) as err:
        checker(*fns)
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)


# -- check_split_heads ---------------------------------------------------------------------

def split(X, h):
    B, t, d = X.shape
    return X.view(B, t, h, d // h).transpose(1, 2)  # (batch, h, t, d_k)


def merge(H):
    B, h, t, d_k = H.shape
    return H.transpose(1, 2).reshape(B, t, h * d_k)  # (batch, t, d_model)


def test_check_split_heads_accepts_correct(capsys):
    check_split_heads(split, merge)
    # a different correct spelling: einops-style permute + contiguous
    check_split_heads(lambda X, h: X.reshape(*X.shape[:2], h, -1).permute(0, 2, 1, 3),
                      lambda H: H.permute(0, 2, 1, 3).flatten(2))
    assert capsys.readouterr().out.count("✓ split and merge heads: 8 cases passed") == 2


def test_check_split_heads_rejects_reshape_without_transpose():
    def bad_split(X, h):
        B, t, d = X.shape
        return X.reshape(B, h, t, d // h)
    rejects(check_split_heads, bad_split, merge, fragments=("mixes positions", "transpose"))


def test_check_split_heads_rejects_missing_transpose_and_strided_heads():
    rejects(check_split_heads, lambda X, h: X.view(*X.shape[:2], h, -1), merge,
            fragments=("(batch, t, h, d_k)", "transpose axes 1 and 2"))
    rejects(check_split_heads,
            lambda X, h: X.view(*X.shape[:2], -1, h).permute(0, 3, 1, 2), merge,
            fragments=("every h-th feature", "contiguous"))


def test_check_split_heads_rejects_bad_merge():
    rejects(check_split_heads, split, lambda H: H.reshape(H.shape[0], H.shape[2], -1),
            fragments=("merge_heads", "mixes positions"))
    rejects(check_split_heads, split, lambda H: H.transpose(1, 2),
            fragments=("merge_heads", "expected shape"))


# -- check_multi_head_attention --------------------------------------------------------------

def mha(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask=None, *, transpose=True, scale=None,
        use_W_O=True, use_mask=True, kv_from_q=False):
    B, t_q, d = X_q.shape
    d_k = d // h
    X_kv = X_q if kv_from_q else X_kv

    def sp(Z):
        return split(Z, h) if transpose else Z.reshape(B, h, Z.shape[1], d_k)

    Q, K, V = sp(X_q @ W_Q), sp(X_kv @ W_K), sp(X_kv @ W_V)
    scores = Q @ K.transpose(-2, -1) / (math.sqrt(d_k) if scale is None else scale)
    if mask is not None and use_mask:
        scores = scores.masked_fill(~mask, float("-inf"))
    Y = torch.softmax(scores, dim=-1) @ V  # (batch, h, t_q, d_k)
    Y = merge(Y) if transpose else Y.reshape(B, t_q, d)
    return Y @ W_O if use_W_O else Y


def test_check_multi_head_attention_accepts_correct(capsys):
    check_multi_head_attention(mha)

    def with_package_sdpa(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask=None):
        Q, K, V = split(X_q @ W_Q, h), split(X_kv @ W_K, h), split(X_kv @ W_V, h)
        return merge(scaled_dot_product_attention(Q, K, V, mask)) @ W_O
    check_multi_head_attention(with_package_sdpa)
    out = capsys.readouterr().out
    assert out.count("✓ multi-head attention: 8 cases passed") == 2


def test_check_multi_head_attention_agrees_with_the_package_module():
    """The checker's reference is the package's MultiHeadAttention without biases."""
    def via_module(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask=None):
        d = X_q.shape[-1]
        m = MultiHeadAttention(d, h, bias=False)
        with torch.no_grad():
            m.in_proj_weight.copy_(torch.cat([W_Q.T, W_K.T, W_V.T]))  # PyTorch stores Wᵀ
            m.out_proj.weight.copy_(W_O.T)
            return m(X_q, X_kv, mask=mask)
    check_multi_head_attention(via_module)


@pytest.mark.parametrize("kw, fragment", [
    ({"transpose": False}, "mix positions"),
    ({"use_W_O": False}, "output projection W_O"),
    ({"scale": math.sqrt(8)}, "√d_model"),
    ({"scale": 1.0}, "not scaled"),
    ({"use_mask": False}, "mask is not applied"),
])
def test_check_multi_head_attention_rejects_typical_mistakes(kw, fragment):
    rejects(check_multi_head_attention, lambda *a: mha(*a, **kw), fragments=(fragment,))


def test_check_multi_head_attention_rejects_keys_from_the_decoder():
    def kv_from_q(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask=None):
        if X_q.shape[1] != X_kv.shape[1]:  # the cross-attention case
            return mha(X_q, X_kv, W_Q, W_K, W_V, W_O, h, None, kv_from_q=True)
        return mha(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask)
    rejects(check_multi_head_attention, kv_from_q, fragments=("must come from X_kv",))


def test_check_multi_head_attention_rejects_wrong_shape_and_crash():
    rejects(check_multi_head_attention, lambda X_q, *a: X_q[:, 0],
            fragments=("expected shape",))
    rejects(check_multi_head_attention, lambda *a: mha(*a[:6], 3, a[7]),
            fragments=("raised",))
