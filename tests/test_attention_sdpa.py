"""scaled_dot_product_attention: equal to PyTorch's with every mask kind; masks really hide keys;
fully masked rows give zeros; bad input fails at the door."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from minformer.attention import scaled_dot_product_attention as sdpa
from minformer.masks import causal_mask, padding_mask, sliding_window_mask


def qkv(batch=2, heads=None, t_q=5, t_k=5, d_k=8, d_v=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    lead = (batch,) if heads is None else (batch, heads)
    return (torch.randn(*lead, t_q, d_k, generator=g), torch.randn(*lead, t_k, d_k, generator=g),
            torch.randn(*lead, t_k, d_v, generator=g))


MASKS = {
    "none": lambda t_q, t_k: None,
    "causal": lambda t_q, t_k: causal_mask(t_q),
    "padding": lambda t_q, t_k: padding_mask(torch.tensor([t_k, 2]), t_k, head_axis=False),
    "padding+causal": lambda t_q, t_k: causal_mask(t_q)
    & padding_mask(torch.tensor([t_k, 3]), t_k, head_axis=False),
    "sliding window, causal": lambda t_q, t_k: sliding_window_mask(t_q, 2),
    "sliding window, both sides": lambda t_q, t_k: sliding_window_mask(t_q, 1, causal=False),
}


@pytest.mark.parametrize("kind", MASKS)
def test_equals_torch_sdpa_with_each_mask(kind):
    Q, K, V = qkv(t_q=6, t_k=6)
    mask = MASKS[kind](6, 6)
    got = sdpa(Q, K, V, mask)
    want = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    assert got.shape == (2, 6, 6)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_equals_torch_sdpa_multihead_cross_attention_with_padding():
    Q, K, V = qkv(batch=3, heads=4, t_q=3, t_k=7)
    mask = padding_mask(torch.tensor([7, 1, 4]))  # (3, 1, 1, 7)
    got, A = sdpa(Q, K, V, mask, return_weights=True)
    want = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert A.shape == (3, 4, 3, 7)
    assert (A[1, :, :, 1:] == 0).all() and (A[2, :, :, 4:] == 0).all()


def test_weights_are_softmax_of_scaled_scores():
    Q, K, V = qkv(t_q=4, t_k=6, d_k=16)
    Y, A = sdpa(Q, K, V, return_weights=True)
    scores = torch.einsum("bqd,bkd->bqk", Q, K) / math.sqrt(16)  # a different route to Q Kᵀ
    torch.testing.assert_close(A, torch.softmax(scores, -1))
    torch.testing.assert_close(A.sum(-1), torch.ones(2, 4))
    torch.testing.assert_close(Y, torch.einsum("bqk,bkd->bqd", A, V))


def test_scaling_is_by_sqrt_d_k_not_d_v():
    Q, K, V = qkv(d_k=4, d_v=9)
    _, A = sdpa(Q, K, V, return_weights=True)
    torch.testing.assert_close(A, torch.softmax(Q @ K.mT / 2.0, -1))


def test_fully_masked_row_gives_zeros_not_nan():
    Q, K, V = qkv(t_q=4, t_k=5)
    Q.requires_grad_(True)
    mask = torch.ones(4, 5, dtype=torch.bool)
    mask[2] = False  # query 2 may attend to nothing
    Y, A = sdpa(Q, K, V, mask, return_weights=True)
    assert torch.isfinite(Y).all() and torch.isfinite(A).all()
    assert (Y[:, 2] == 0).all() and (A[:, 2] == 0).all()
    torch.testing.assert_close(A[:, [0, 1, 3]].sum(-1), torch.ones(2, 3))
    Y.sum().backward()
    assert torch.isfinite(Q.grad).all() and (Q.grad[:, 2] == 0).all()


def test_masked_keys_get_exactly_zero_weight():
    Q, K, V = qkv(t_q=6, t_k=6)
    _, A = sdpa(Q, K, V, sliding_window_mask(6, 3), return_weights=True)
    assert (A[:, ~sliding_window_mask(6, 3)] == 0).all()
    assert (A[:, sliding_window_mask(6, 3)] > 0).all()


@settings(max_examples=30, deadline=None)
@given(t=st.integers(2, 9), p=st.integers(0, 8), seed=st.integers(0, 10_000))
def test_causal_future_tokens_never_change_the_past(t, p, seed):
    p = p % (t - 1)  # the last position that must not change; tokens after it are altered
    Q, K, V = qkv(t_q=t, t_k=t, seed=seed)
    Y = sdpa(Q, K, V, causal_mask(t))
    K2, V2, Q2 = K.clone(), V.clone(), Q.clone()
    K2[:, p + 1:] += 3 * torch.randn_like(K2[:, p + 1:])
    V2[:, p + 1:] += 3 * torch.randn_like(V2[:, p + 1:])
    Q2[:, p + 1:] += 3 * torch.randn_like(Q2[:, p + 1:])
    Y2 = sdpa(Q2, K2, V2, causal_mask(t))
    torch.testing.assert_close(Y2[:, : p + 1], Y[:, : p + 1], atol=1e-6, rtol=1e-6)
    # the check can fail: without the mask the past does change
    assert not torch.allclose(sdpa(Q2, K2, V2)[:, : p + 1], sdpa(Q, K, V)[:, : p + 1])


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(1, 7), min_size=1, max_size=4), seed=st.integers(0, 10_000))
def test_padded_keys_never_change_outputs(lengths, seed):
    t = 7
    Q, K, V = qkv(batch=len(lengths), t_q=t, t_k=t, seed=seed)
    mask = padding_mask(torch.tensor(lengths), t, head_axis=False)  # (batch, 1, t)
    Y = sdpa(Q, K, V, mask)
    pad = ~mask[:, 0, :, None]  # (batch, t, 1): True at padding
    Y2 = sdpa(Q, torch.where(pad, 5 * torch.randn_like(K), K), torch.where(pad, -V, V), mask)
    torch.testing.assert_close(Y2, Y, atol=1e-6, rtol=1e-6)


def test_rejects_q_k_size_mismatch_naming_shapes():
    Q, K, V = qkv()
    with pytest.raises(ValueError, match=r"d_k.*Q \(2, 5, 8\), K \(2, 5, 7\)"):
        sdpa(Q, K[..., :7], V)


def test_rejects_k_v_length_mismatch():
    Q, K, V = qkv()
    with pytest.raises(ValueError, match=r"t_k.*K \(2, 5, 8\), V \(2, 4, 6\)"):
        sdpa(Q, K, V[:, :4])


def test_rejects_mask_that_does_not_broadcast():
    Q, K, V = qkv(t_q=5, t_k=5)
    with pytest.raises(ValueError, match=r"\(4, 4\).*\(2, 5, 5\)"):
        sdpa(Q, K, V, causal_mask(4))


def test_rejects_head_axis_padding_mask_on_single_head_scores():
    # (batch, 1, 1, t) would silently broadcast (batch, t, t) scores to (batch, batch, t, t)
    Q, K, V = qkv(t_q=5, t_k=5)
    with pytest.raises(ValueError, match=r"\(2, 1, 1, 5\).*\(2, 5, 5\)"):
        sdpa(Q, K, V, padding_mask(torch.tensor([5, 3])))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_rejects_non_bool_mask(dtype):
    Q, K, V = qkv()
    with pytest.raises(TypeError, match=rf"bool.*{str(dtype).split('.')[1]}.*\(5, 5\)"):
        sdpa(Q, K, V, causal_mask(5).to(dtype))


@pytest.mark.parametrize("which", ["t_q", "t_k", "d_k"])
def test_rejects_empty_sequences(which):
    sizes = {"t_q": 3, "t_k": 4, "d_k": 2} | {which: 0}
    Q, K, V = qkv(**sizes)
    with pytest.raises(ValueError, match=r"empty.*Q \("):
        sdpa(Q, K, V)


def test_rejects_numpy_and_1d_inputs():
    Q, K, V = qkv()
    with pytest.raises(TypeError, match="torch tensor"):
        sdpa(np.zeros((3, 2)), K, V)
    with pytest.raises(ValueError, match=r"shape \(8,\)"):
        sdpa(Q[0, 0], K, V)


def test_backward_gives_finite_gradients():
    Q, K, V = (x.requires_grad_(True) for x in qkv(t_q=5, t_k=5))
    sdpa(Q, K, V, causal_mask(5)).square().sum().backward()
    for x in (Q, K, V):
        assert x.grad is not None and torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
