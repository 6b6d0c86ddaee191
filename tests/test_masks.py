"""Masks: True = may attend, the shapes they broadcast to, and the conversions to PyTorch's
conventions."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minformer.attention import scaled_dot_product_attention as sdpa
from minformer.masks import (
    causal_mask,
    padding_mask,
    sliding_window_mask,
    to_additive_mask,
    to_torch_mask,
)


def reference(t, allowed):
    return torch.tensor([[allowed(i, j) for j in range(t)] for i in range(t)])


def test_causal_mask_is_lower_triangular():
    m = causal_mask(5)
    assert m.dtype == torch.bool and m.shape == (5, 5)
    assert torch.equal(m, reference(5, lambda i, j: j <= i))
    assert causal_mask(1).tolist() == [[True]]


def test_causal_mask_device():
    assert causal_mask(3, device="cpu").device.type == "cpu"
    assert causal_mask(3, device=torch.device("meta")).device.type == "meta"


@pytest.mark.parametrize("window", [1, 2, 3, 8])
def test_sliding_window_causal(window):
    m = sliding_window_mask(6, window)
    assert torch.equal(m, reference(6, lambda i, j: i - window < j <= i))
    assert m.sum(-1).max() == min(window, 6)  # no row sees more than `window` keys


@pytest.mark.parametrize("window", [1, 2, 5])
def test_sliding_window_both_sides(window):
    m = sliding_window_mask(6, window, causal=False)
    assert torch.equal(m, reference(6, lambda i, j: abs(i - j) <= window))
    assert torch.equal(m, m.T)


def test_sliding_window_limits():
    assert torch.equal(sliding_window_mask(5, 5), causal_mask(5))
    assert torch.equal(sliding_window_mask(5, 1), torch.eye(5, dtype=torch.bool))
    assert sliding_window_mask(5, 4, causal=False).all()


def test_padding_mask_from_lengths():
    m = padding_mask(torch.tensor([3, 1, 4]))
    assert m.dtype == torch.bool and m.shape == (3, 1, 1, 4)  # t defaults to the longest
    assert m[:, 0, 0].tolist() == [[True, True, True, False], [True, False, False, False],
                                   [True, True, True, True]]
    assert padding_mask([2, 0], t=3).shape == (2, 1, 1, 3)
    assert padding_mask([2, 0], t=3)[1].sum() == 0


def test_padding_mask_without_head_axis():
    m = padding_mask(torch.tensor([2, 3]), 4, head_axis=False)
    assert m.shape == (2, 1, 4)
    assert m[:, 0].tolist() == [[True, True, False, False], [True, True, True, False]]


def test_padding_mask_from_tokens():
    tokens = torch.tensor([[5, 6, 0, 0], [7, 0, 0, 0]])
    m = padding_mask(tokens=tokens, pad_id=0)
    assert torch.equal(m, padding_mask(torch.tensor([2, 1]), 4))


def test_masks_combine_with_and():
    m = causal_mask(4) & padding_mask(torch.tensor([4, 2]))  # (4, 4) & (2, 1, 1, 4)
    assert m.shape == (2, 1, 4, 4)
    assert torch.equal(m[0, 0], causal_mask(4))
    assert m[1, 0].tolist() == [[True, False, False, False], [True, True, False, False],
                                [True, True, False, False], [True, True, False, False]]


@pytest.mark.parametrize("bad", [0, -1])
def test_lengths_must_be_positive_ints(bad):
    with pytest.raises(ValueError, match="positive int"):
        causal_mask(bad)
    with pytest.raises(ValueError, match="window must be a positive int"):
        sliding_window_mask(4, bad)


@pytest.mark.parametrize("bad", [2.0, 2.5, True, "3"])
def test_lengths_must_be_ints(bad):
    with pytest.raises(TypeError, match=r"t must be an int; got"):
        causal_mask(bad)
    with pytest.raises(TypeError, match="window must be an int"):
        sliding_window_mask(4, bad)


def test_padding_mask_errors():
    with pytest.raises(ValueError, match="exactly one"):
        padding_mask()
    with pytest.raises(ValueError, match="exactly one"):
        padding_mask([1], tokens=torch.zeros(1, 2), pad_id=0)
    with pytest.raises(ValueError, match="pad_id"):
        padding_mask(tokens=torch.zeros(1, 2))
    with pytest.raises(ValueError, match=r"0\.\.t=3.*\[1, 4\]"):
        padding_mask([1, 4], t=3)
    with pytest.raises(TypeError, match=r"integer.*float32.*\(2,\)"):
        padding_mask(torch.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match=r"\(batch, t\).*\(3,\)"):
        padding_mask(tokens=torch.tensor([1, 2, 0]), pad_id=0)


def test_to_torch_mask_matches_nn_multihead_attention_convention():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    mha = nn.MultiheadAttention(8, 1, batch_first=True, bias=False).eval()
    pad = padding_mask(torch.tensor([5, 3]))  # ours: True = real token
    ours = causal_mask(5) & pad[:, 0]  # (2, 5, 5), single head
    y_torch, A_torch = mha(x, x, x, attn_mask=to_torch_mask(causal_mask(5)),
                           key_padding_mask=to_torch_mask(pad[:, 0, 0]))
    # the same attention written with our mask and the module's own weights
    Wq, Wk, Wv = mha.in_proj_weight.chunk(3)
    _, A = sdpa(x @ Wq.T, x @ Wk.T, x @ Wv.T, ours, return_weights=True)
    torch.testing.assert_close(A, A_torch, atol=1e-6, rtol=1e-5)
    assert torch.equal(to_torch_mask(to_torch_mask(ours)), ours)


def test_to_additive_mask_gives_the_same_attention():
    torch.manual_seed(1)
    Q, K, V = torch.randn(3, 2, 6, 4), torch.randn(3, 2, 6, 4), torch.randn(3, 2, 6, 4)
    mask = sliding_window_mask(6, 2) & padding_mask(torch.tensor([6, 4, 5]))
    add = to_additive_mask(mask)
    assert add.dtype == torch.float32 and set(add.unique().tolist()) == {0.0, float("-inf")}
    torch.testing.assert_close(F.scaled_dot_product_attention(Q, K, V, attn_mask=add),
                               sdpa(Q, K, V, mask), atol=1e-6, rtol=1e-5)


def test_conversions_reject_non_bool():
    with pytest.raises(TypeError, match="bool"):
        to_torch_mask(torch.zeros(2, 2))
    with pytest.raises(TypeError, match="bool"):
        to_additive_mask(torch.zeros(2, 2, dtype=torch.int64))
