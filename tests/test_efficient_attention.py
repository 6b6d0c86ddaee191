"""Chapter 14's package pieces: chunked attention by online softmax (equal to PyTorch's attention
for every mask, block size and length, gradients included, fully masked rows zero, less memory),
the online-softmax step itself, peak_memory, rotary positions (dot products depend only on the
offset) and grouped-query attention (multi-head attention when groups = heads)."""

import math

import pytest
import torch
import torch.nn.functional as F

from minformer.attention import chunked_attention, online_softmax_update, scaled_dot_product_attention
from minformer.masks import causal_mask, padding_mask, sliding_window_mask
from minformer.multihead import grouped_query_attention
from minformer.positional import rotary
from minformer.utils import peak_memory


def qkv(lead=(2, 3), t_q=13, t_k=13, d_k=8, d_v=5, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*lead, t_q, d_k, generator=g, dtype=dtype),
            torch.randn(*lead, t_k, d_k, generator=g, dtype=dtype),
            torch.randn(*lead, t_k, d_v, generator=g, dtype=dtype))


MASKS = {
    "none": lambda t_q, t_k: None,
    "causal": lambda t_q, t_k: causal_mask(t_q),
    "padding": lambda t_q, t_k: padding_mask(torch.tensor([t_k, 4]), t_k),
    "padding+causal": lambda t_q, t_k: causal_mask(t_q) & padding_mask(torch.tensor([5, t_k]),
                                                                        t_k),
    "sliding window": lambda t_q, t_k: sliding_window_mask(t_q, 3),
}


# ----------------------------------------------------------------------------- chunked attention

@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("block_size", [1, 4, 5, 13, 64])
def test_chunked_equals_torch_sdpa(kind, block_size):
    Q, K, V = qkv()
    mask = MASKS[kind](13, 13)
    got = chunked_attention(Q, K, V, mask, block_size=block_size)
    want = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    assert got.shape == (2, 3, 13, 5)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("t_q, t_k, block_size", [(1, 17, 4), (17, 1, 3), (7, 31, 8),
                                                  (31, 7, 2), (9, 100, 33)])
def test_chunked_cross_attention_of_odd_lengths(t_q, t_k, block_size):
    Q, K, V = qkv(lead=(3,), t_q=t_q, t_k=t_k)
    mask = padding_mask(torch.tensor([t_k, max(1, t_k // 2), 1]), t_k, head_axis=False)
    torch.testing.assert_close(chunked_attention(Q, K, V, mask, block_size),
                               F.scaled_dot_product_attention(Q, K, V, attn_mask=mask),
                               atol=1e-5, rtol=1e-5)


def test_chunked_broadcasts_leading_axes_as_scaled_dot_product_attention_does():
    Q, _, _ = qkv(lead=(2, 3))
    _, K, V = qkv(lead=(1, 3), seed=1)
    torch.testing.assert_close(chunked_attention(Q, K, V, block_size=4),
                               scaled_dot_product_attention(Q, K, V), atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_give_zeros_and_zero_gradients():
    Q, K, V = (X.requires_grad_() for X in qkv(dtype=torch.float64))
    mask = torch.rand(2, 1, 13, 13, generator=torch.Generator().manual_seed(0)) > 0.4
    mask[0, :, 3] = False  # query 3 of sequence 0 sees nothing
    mask[1, :, :, :] = False  # sequence 1 sees nothing at all
    Y = chunked_attention(Q, K, V, mask, block_size=4)
    assert not Y.isnan().any()
    assert (Y[0, :, 3] == 0).all() and (Y[1] == 0).all()
    ref = scaled_dot_product_attention(Q, K, V, mask, allow_empty_rows=True)
    torch.testing.assert_close(Y, ref)
    w = torch.randn_like(Y)
    grads = torch.autograd.grad((Y * w).sum(), (Q, K, V))
    want = torch.autograd.grad((ref * w).sum(), (Q, K, V))
    for g, r in zip(grads, want):
        torch.testing.assert_close(g, r)
    assert (grads[0][0, :, 3] == 0).all() and (grads[0][1] == 0).all()


@pytest.mark.parametrize("kind", ["none", "padding+causal", "sliding window"])
def test_chunked_gradients_equal_torch_sdpas(kind):
    Q, K, V = (X.requires_grad_() for X in qkv(t_q=11, t_k=11, dtype=torch.float64))
    mask = MASKS[kind](11, 11)
    w = torch.randn(2, 3, 11, 5, dtype=torch.float64)
    got = torch.autograd.grad((chunked_attention(Q, K, V, mask, 3) * w).sum(), (Q, K, V))
    want = torch.autograd.grad(
        (F.scaled_dot_product_attention(Q, K, V, attn_mask=mask) * w).sum(), (Q, K, V))
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r)


def test_chunked_backward_passes_gradcheck():
    Q, K, V = (X.requires_grad_() for X in qkv(lead=(2,), t_q=6, t_k=9, d_k=3, d_v=2,
                                               dtype=torch.float64))
    mask = padding_mask(torch.tensor([9, 2]), 9, head_axis=False)
    assert torch.autograd.gradcheck(lambda q, k, v: chunked_attention(q, k, v, mask, 4),
                                    (Q, K, V))
    _, K1, V1 = (X.requires_grad_() for X in qkv(lead=(1,), t_q=6, t_k=9, d_k=3, d_v=2,
                                                 dtype=torch.float64))
    assert torch.autograd.gradcheck(lambda q, k, v: chunked_attention(q, k, v, None, 2),
                                    (Q, K1, V1))  # broadcast K, V: their gradients summed


def test_chunked_attention_holds_far_less_memory_than_the_naive_one():
    Q, K, V = qkv(lead=(1, 2), t_q=1024, t_k=1024, d_k=32, d_v=32)
    with torch.no_grad():
        naive, naive_peak = peak_memory(scaled_dot_product_attention, Q, K, V)
        chunked, chunked_peak = peak_memory(chunked_attention, Q, K, V, block_size=64)
    torch.testing.assert_close(chunked, naive, atol=1e-5, rtol=1e-5)
    scores = 2 * 1024 * 1024 * 4  # bytes of one (2, 1024, 1024) float32 score matrix
    assert naive_peak >= scores  # the naive one holds the whole matrix at least once
    assert chunked_peak < scores / 3  # Q/√d_k, m, ℓ, acc twice, one block's S and P
    assert chunked_peak < naive_peak / 5


def causal_reference(Q, K, V, mask=None):
    """Attention with the causal mask of the last t_q positions, dense, for comparison."""
    t_q, t_k = Q.shape[-2], K.shape[-2]
    keep = torch.ones(t_q, t_k, dtype=torch.bool).tril(t_k - t_q)  # j <= i + (t_k - t_q)
    return scaled_dot_product_attention(Q, K, V, keep if mask is None else keep & mask)


@pytest.mark.parametrize("t_q, t_k", [(13, 13), (1, 13), (5, 13), (13, 40), (64, 64)])
@pytest.mark.parametrize("block_size", [1, 4, 5, 13, 64])
def test_causal_chunked_equals_the_dense_causal_mask(t_q, t_k, block_size):
    Q, K, V = qkv(t_q=t_q, t_k=t_k)
    got = chunked_attention(Q, K, V, block_size=block_size, causal=True)
    torch.testing.assert_close(got, causal_reference(Q, K, V), atol=1e-5, rtol=1e-5)
    if t_q == t_k:  # the package's causal mask, and PyTorch's is_causal, agree
        torch.testing.assert_close(got, chunked_attention(Q, K, V, causal_mask(t_q),
                                                          block_size), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(got, F.scaled_dot_product_attention(Q, K, V, is_causal=True),
                                   atol=1e-5, rtol=1e-5)


def test_causal_chunked_combines_with_a_padding_mask_and_keeps_future_keys_out():
    Q, K, V = qkv(lead=(2,), t_q=11, t_k=11)
    mask = padding_mask(torch.tensor([11, 6]), 11, head_axis=False)
    got = chunked_attention(Q, K, V, mask, block_size=4, causal=True)
    torch.testing.assert_close(got, causal_reference(Q, K, V, mask), atol=1e-5, rtol=1e-5)
    K2, V2 = K.clone(), V.clone()
    K2[..., 7:, :], V2[..., 7:, :] = 100.0, -100.0  # the future of queries 0 … 6
    again = chunked_attention(Q, K2, V2, mask, block_size=4, causal=True)
    torch.testing.assert_close(again[..., :7, :], got[..., :7, :], atol=0, rtol=0)


def test_causal_chunked_gradients_match_autograd_and_pass_gradcheck():
    Q, K, V = (X.double().requires_grad_() for X in qkv(lead=(2,), t_q=7, t_k=10))
    w = torch.randn(2, 7, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    got = torch.autograd.grad((chunked_attention(Q, K, V, None, 3, causal=True) * w).sum(),
                              (Q, K, V))
    want = torch.autograd.grad((causal_reference(Q, K, V) * w).sum(), (Q, K, V))
    for g, r in zip(got, want):
        torch.testing.assert_close(g, r)
    assert torch.autograd.gradcheck(
        lambda q, k, v: chunked_attention(q, k, v, None, 4, causal=True),
        tuple(X.detach()[..., :6, :].requires_grad_() if i == 0 else X.detach().requires_grad_()
              for i, X in enumerate((Q, K, V))))


def test_causal_chunked_skips_the_blocks_right_of_the_diagonal():
    from minformer.attention import _block_pairs

    full = _block_pairs(1024, 1024, 128, causal=False)
    causal = _block_pairs(1024, 1024, 128, causal=True)
    assert len(full) == 64 and len(causal) == 8 * 9 // 2  # the diagonal and below
    assert all(j0 <= i1 - 1 for _, i1, j0, _ in causal)


def test_causal_chunked_needs_no_dense_mask_and_little_memory():
    Q, K, V = qkv(lead=(1, 2), t_q=1024, t_k=1024, d_k=32, d_v=32)
    with torch.no_grad():
        dense, _ = peak_memory(scaled_dot_product_attention, Q, K, V, causal_mask(1024))
        got, peak = peak_memory(chunked_attention, Q, K, V, block_size=64, causal=True)
    torch.testing.assert_close(got, dense, atol=1e-5, rtol=1e-5)
    assert peak < 1024 * 1024  # less than one (1024, 1024) bool mask, let alone the scores


def test_bad_input_to_chunked_attention():
    Q, K, V = qkv()
    with pytest.raises(ValueError, match="block_size must be a positive int; got 0"):
        chunked_attention(Q, K, V, block_size=0)
    with pytest.raises(TypeError, match="block_size must be an int; got 2.0"):
        chunked_attention(Q, K, V, block_size=2.0)
    with pytest.raises(TypeError, match="mask must be bool"):
        chunked_attention(Q, K, V, mask=torch.ones(13, 13))
    with pytest.raises(ValueError, match="does not fit the attention scores"):
        chunked_attention(Q, K, V, mask=torch.ones(12, 13, dtype=torch.bool))
    with pytest.raises(ValueError, match="Q and K must share d_k"):
        chunked_attention(Q, K[..., :4], V)
    with pytest.raises(TypeError, match="Q must be a floating-point tensor"):
        chunked_attention(Q.long(), K, V)
    with pytest.raises(TypeError, match="causal must be True or False; got 1"):
        chunked_attention(Q, K, V, causal=1)
    Q2, K2, V2 = qkv(t_q=9, t_k=4)
    with pytest.raises(ValueError, match="at least as many keys as queries.*t_q=9, t_k=4"):
        chunked_attention(Q2, K2, V2, causal=True)


# ----------------------------------------------------------------------------- online softmax

def test_folding_blocks_one_at_a_time_gives_softmax_times_v():
    g = torch.Generator().manual_seed(0)
    S, V = torch.randn(4, 10, generator=g) * 5, torch.randn(10, 3, generator=g)
    m, ell, acc = torch.full((4, 1), -math.inf), torch.zeros(4, 1), torch.zeros(4, 3)
    for j0, j1 in ((0, 3), (3, 4), (4, 10)):
        m, ell, acc = online_softmax_update(m, ell, acc, S[:, j0:j1], V[j0:j1])
    torch.testing.assert_close(m, S.amax(-1, keepdim=True))
    torch.testing.assert_close(ell, torch.exp(S - m).sum(-1, keepdim=True))
    torch.testing.assert_close(acc / ell, S.softmax(-1) @ V)


def test_an_all_masked_block_changes_nothing_and_gives_no_nan():
    m, ell, acc = torch.full((2, 1), -math.inf), torch.zeros(2, 1), torch.zeros(2, 3)
    S = torch.full((2, 4), -math.inf)
    m, ell, acc = online_softmax_update(m, ell, acc, S, torch.randn(4, 3))
    assert (m == -math.inf).all() and (ell == 0).all() and (acc == 0).all()


def test_online_softmax_update_refuses_shapes_that_do_not_fit():
    m, ell, acc = torch.zeros(4, 1), torch.ones(4, 1), torch.zeros(4, 3)
    with pytest.raises(ValueError, match=r"shapes do not fit .* V_block \(5, 3\)"):
        online_softmax_update(m, ell, acc, torch.zeros(4, 6), torch.zeros(5, 3))
    with pytest.raises(TypeError, match="m must be a torch tensor"):
        online_softmax_update(0.0, ell, acc, torch.zeros(4, 6), torch.zeros(6, 3))


# ----------------------------------------------------------------------------- peak_memory

def test_peak_memory_counts_tensors_held_at_once():
    def two_then_one():
        a = torch.empty(1000, 250)  # 1,000,000 bytes
        b = torch.empty(500, 250)  # 500,000 bytes: both held
        del a, b
        return torch.empty(250, 250)  # 250,000 bytes, after the others were freed

    out, peak = peak_memory(two_then_one)
    assert out.shape == (250, 250)
    assert 1_500_000 <= peak < 1_600_000
    with pytest.raises(TypeError, match="fn must be callable"):
        peak_memory(3)


# ----------------------------------------------------------------------------- rotary positions

def test_rotary_dot_products_depend_only_on_the_offset():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 16, generator=g), torch.randn(1, 16, generator=g)
    table = {}
    for m in range(0, 30, 3):
        for n in range(0, 30, 4):
            dot = (rotary(q, start=m) @ rotary(k, start=n).T).item()
            table.setdefault(m - n, []).append(dot)
    for dots in table.values():
        assert max(dots) - min(dots) < 1e-4
    assert len({round(d[0], 3) for d in table.values()}) > len(table) // 2  # offsets do differ


def test_rotary_keeps_lengths_leaves_position_0_alone_and_offsets_by_start():
    X = torch.randn(2, 7, 10)
    R = rotary(X)
    torch.testing.assert_close(R.norm(dim=-1), X.norm(dim=-1))
    torch.testing.assert_close(R[:, 0], X[:, 0])
    torch.testing.assert_close(rotary(X[:, 4:], start=4), R[:, 4:])
    assert not torch.allclose(R[:, 1:], X[:, 1:])


def test_rotary_refuses_bad_input():
    with pytest.raises(ValueError, match="d even"):
        rotary(torch.randn(3, 5))
    with pytest.raises(TypeError, match="floating-point"):
        rotary(torch.ones(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="start must be an int ≥ 0"):
        rotary(torch.randn(3, 4), start=-2)


# ----------------------------------------------------------------------------- grouped-query

def test_gqa_with_as_many_groups_as_heads_is_multi_head_attention():
    Q, K, V = qkv(lead=(2, 4), t_q=6, t_k=9)
    mask = padding_mask(torch.tensor([9, 3]))
    torch.testing.assert_close(grouped_query_attention(Q, K, V, mask),
                               F.scaled_dot_product_attention(Q, K, V, attn_mask=mask),
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("groups", [1, 2, 3])
def test_gqa_query_head_i_uses_key_value_head_i_over_heads_per_group(groups):
    h = 6
    Q, _, _ = qkv(lead=(2, h), t_q=5, t_k=7)
    _, K, V = qkv(lead=(2, groups), t_q=5, t_k=7, seed=1)
    lengths = torch.tensor([7, 4])
    Y = grouped_query_attention(Q, K, V, padding_mask(lengths))  # (2, 1, 1, 7)
    per_head = padding_mask(lengths, head_axis=False)  # (2, 1, 7)
    for i in range(h):
        j = i // (h // groups)
        torch.testing.assert_close(
            Y[:, i], scaled_dot_product_attention(Q[:, i], K[:, j], V[:, j], per_head))


def test_gqa_refuses_groups_that_do_not_divide_the_heads():
    Q, K, V = qkv(lead=(2, 6))
    with pytest.raises(ValueError, match="dividing Q's h"):
        grouped_query_attention(Q, K[:, :4], V[:, :4])
    with pytest.raises(ValueError, match="K must have 4 axes"):
        grouped_query_attention(Q, K[0], V[0])
