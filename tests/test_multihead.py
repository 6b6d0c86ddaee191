"""MultiHeadAttention equals nn.MultiheadAttention with copied weights; the loop version equals the
fused one; masks hide what they should; bad input fails at the door."""

import pytest
import torch
from torch import nn

from minformer.masks import causal_mask, padding_mask, to_torch_mask
from minformer.multihead import MultiHeadAttention, MultiHeadAttentionLoop

D, H = 16, 4
TOL = dict(atol=1e-5, rtol=1e-5)


def pair(bias=True, seed=0):
    """Our module and PyTorch's, same weights, eval mode."""
    torch.manual_seed(seed)
    theirs = nn.MultiheadAttention(D, H, bias=bias, batch_first=True).eval()
    with torch.no_grad():  # non-zero biases, so a bias mix-up shows
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = MultiHeadAttention(D, H, bias=bias).eval()
    ours.load_state_dict(theirs.state_dict())
    return ours, theirs


def inputs(batch=3, t_q=5, t_k=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, t_q, D, generator=g), torch.randn(batch, t_k, D, generator=g)


CASES = {  # name: (cross-attention?, our mask, torch's attn_mask, torch's key_padding_mask)
    "self": (False, lambda: None, lambda: None, lambda: None),
    "self, causal": (False, lambda: causal_mask(5), lambda: to_torch_mask(causal_mask(5)),
                     lambda: None),
    "self, padding": (False, lambda: padding_mask(torch.tensor([5, 3, 1])), lambda: None,
                      lambda: to_torch_mask(padding_mask(torch.tensor([5, 3, 1]))[:, 0, 0])),
    "self, causal & padding": (
        False, lambda: causal_mask(5) & padding_mask(torch.tensor([5, 3, 2])),
        lambda: to_torch_mask(causal_mask(5)),
        lambda: to_torch_mask(padding_mask(torch.tensor([5, 3, 2]))[:, 0, 0])),
    "cross": (True, lambda: None, lambda: None, lambda: None),
    "cross, padding": (True, lambda: padding_mask(torch.tensor([7, 2, 4])), lambda: None,
                       lambda: to_torch_mask(padding_mask(torch.tensor([7, 2, 4]))[:, 0, 0])),
}


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CASES)
def test_equals_nn_multihead_attention(case, bias):
    cross, mask, attn_mask, kpm = (f() if callable(f) else f for f in CASES[case])
    ours, theirs = pair(bias)
    x, m = inputs()
    kv = m if cross else x
    want, want_avg = theirs(x, kv, kv, attn_mask=attn_mask, key_padding_mask=kpm)
    _, want_heads = theirs(x, kv, kv, attn_mask=attn_mask, key_padding_mask=kpm,
                           average_attn_weights=False)
    fast = ours(x, kv, mask=mask)  # the F.scaled_dot_product_attention path
    slow, A = ours(x, kv, mask=mask, need_weights=True)  # the explicit path
    torch.testing.assert_close(fast, want, **TOL)
    torch.testing.assert_close(slow, want, **TOL)
    assert A.shape == (3, H, 5, kv.shape[1])
    torch.testing.assert_close(A, want_heads, **TOL)
    torch.testing.assert_close(A.mean(dim=1), want_avg, **TOL)


def test_self_attention_by_default_and_when_same_tensor():
    ours, theirs = pair()
    x, _ = inputs()
    want = theirs(x, x, x, need_weights=False)[0]
    torch.testing.assert_close(ours(x), want, **TOL)
    torch.testing.assert_close(ours(x, x), want, **TOL)
    torch.testing.assert_close(ours(x, x.clone()), want, **TOL)  # cross path, same numbers


def test_weights_copy_back_to_torch():
    torch.manual_seed(3)
    ours = MultiHeadAttention(D, H)
    theirs = nn.MultiheadAttention(D, H, batch_first=True)
    theirs.load_state_dict(ours.state_dict())
    x, m = inputs()
    torch.testing.assert_close(ours(x, m), theirs(x, m, m)[0], **TOL)


def test_unbatched_input():
    ours, theirs = pair()
    x, m = inputs()
    y, A = ours(x[0], m[0], need_weights=True)
    assert y.shape == (5, D) and A.shape == (H, 5, 7)
    torch.testing.assert_close(y, ours(x, m)[0], **TOL)
    torch.testing.assert_close(y, theirs(x[0], m[0], m[0])[0], **TOL)


@pytest.mark.parametrize("cross", [False, True])
def test_loop_version_equals_fused_version(cross):
    fused, _ = pair()
    loop = MultiHeadAttentionLoop(D, H).load_fused_weights(fused)
    x, m = inputs()
    kv = m if cross else x
    mask = padding_mask(torch.tensor([7, 2, 4])) if cross else causal_mask(5)
    y_fused, A_fused = fused(x, kv, mask=mask, need_weights=True)
    y_loop, A_loop = loop(x, kv, mask=mask, need_weights=True)
    torch.testing.assert_close(y_loop, y_fused, **TOL)
    torch.testing.assert_close(A_loop, A_fused, **TOL)
    torch.testing.assert_close(loop(x, kv, mask=mask), fused(x, kv, mask=mask), **TOL)


def test_loop_loads_from_nn_multihead_attention_and_per_head_masks():
    _, theirs = pair()
    loop = MultiHeadAttentionLoop(D, H).load_fused_weights(theirs)
    x, _ = inputs()
    mask = torch.rand(3, H, 5, 5) > 0.3
    mask[..., 0] = True  # every query sees at least one key
    y, A = loop(x, mask=mask, need_weights=True)
    want, want_A = theirs(x, x, x, attn_mask=to_torch_mask(mask).reshape(3 * H, 5, 5),
                          average_attn_weights=False)
    torch.testing.assert_close(y, want, **TOL)
    torch.testing.assert_close(A, want_A, **TOL)


def test_parameter_count_does_not_depend_on_heads():
    def count(m):
        return sum(p.numel() for p in m.parameters())
    expected = 4 * D * D + 4 * D
    for h in (1, 2, 4, 8, 16):
        assert count(MultiHeadAttention(D, h)) == expected
        assert count(MultiHeadAttentionLoop(D, h)) == expected
    assert count(nn.MultiheadAttention(D, 4)) == expected


@pytest.mark.parametrize("need_weights", [False, True])
def test_future_tokens_never_change_the_past(need_weights):
    ours, _ = pair()
    for seed in range(10):
        x, _ = inputs(t_q=8, seed=seed)
        p = seed % 7
        x2 = x.clone()
        x2[:, p + 1:] = torch.randn_like(x2[:, p + 1:])
        out = [ours(z, mask=causal_mask(8), need_weights=need_weights) for z in (x, x2)]
        y, y2 = (o[0] if need_weights else o for o in out)
        torch.testing.assert_close(y2[:, : p + 1], y[:, : p + 1], atol=1e-6, rtol=1e-6)
        assert not torch.allclose(ours(x2)[:, : p + 1], ours(x)[:, : p + 1])  # mask matters


def test_padded_tokens_never_change_real_tokens_outputs():
    ours, _ = pair()
    lengths = torch.tensor([6, 2, 4])
    mask = padding_mask(lengths)  # (3, 1, 1, 6)
    real = mask[:, 0, 0]  # (3, 6): True at real tokens
    for seed in range(10):
        x, _ = inputs(t_q=6, seed=seed)
        x2 = torch.where(real[..., None], x, 10 * torch.randn_like(x))
        for nw in (False, True):
            y = ours(x, mask=mask, need_weights=nw)
            y2 = ours(x2, mask=mask, need_weights=nw)
            y, y2 = (y[0], y2[0]) if nw else (y, y2)
            torch.testing.assert_close(y2[real], y[real], atol=1e-6, rtol=1e-6)


def test_fully_masked_query_gives_finite_output():
    ours, _ = pair()
    x, _ = inputs(t_q=4)
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[1] = False
    for nw in (False, True):
        y = ours(x, mask=mask, need_weights=nw, allow_empty_rows=True)
        y = y[0] if nw else y
        assert torch.isfinite(y).all()
        torch.testing.assert_close(y[:, 1], ours.out_proj.bias.expand(3, D))  # no value mixed in


def test_dropout_only_in_training():
    torch.manual_seed(0)
    m = MultiHeadAttention(D, H, dropout=0.5)
    x, _ = inputs()
    for nw in (False, True):
        m.train()
        a, b = (m(x, need_weights=nw) for _ in range(2))
        a, b = (a[0], b[0]) if nw else (a, b)
        assert not torch.allclose(a, b)
        m.eval()
        a, b = (m(x, need_weights=nw) for _ in range(2))
        a, b = (a[0], b[0]) if nw else (a, b)
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("cls", [MultiHeadAttention, MultiHeadAttentionLoop])
def test_d_model_not_divisible_by_heads(cls):
    with pytest.raises(ValueError, match=r"d_model=10 .*n_heads=4"):
        cls(10, 4)


@pytest.mark.parametrize("cls", [MultiHeadAttention, MultiHeadAttentionLoop])
def test_bad_inputs_name_shapes(cls):
    m = cls(D, H)
    x, kv = inputs()
    with pytest.raises(ValueError, match=r"d_model=16.*\(3, 5, 12\)"):
        m(x[..., :12])
    with pytest.raises(ValueError, match=r"\(4, 4\) does not fit.*\(3, 4, 5, 7\)"):
        m(x, kv, mask=causal_mask(4))
    with pytest.raises(TypeError, match=r"bool.*float32.*\(5, 5\)"):
        m(x, mask=causal_mask(5).float())
    with pytest.raises(ValueError, match=r"empty.*\(3, 0, 16\)"):
        m(x[:, :0])
    with pytest.raises(ValueError, match=r"batch size.*\(3, 5, 16\).*\(2, 7, 16\)"):
        m(x, kv[:2])


def test_loop_rejects_mismatched_fused_module():
    with pytest.raises(ValueError, match=r"n_heads=4"):
        MultiHeadAttentionLoop(D, H).load_fused_weights(MultiHeadAttention(D, 2))
    with pytest.raises(ValueError, match="bias"):
        MultiHeadAttentionLoop(D, H).load_fused_weights(MultiHeadAttention(D, H, bias=False))


@pytest.mark.parametrize("cls", [MultiHeadAttention, MultiHeadAttentionLoop])
@pytest.mark.parametrize("need_weights", [False, True])
def test_backward_reaches_every_parameter(cls, need_weights):
    torch.manual_seed(0)
    m = cls(D, H) if cls is MultiHeadAttentionLoop else cls(D, H, dropout=0.1)
    x, kv = inputs()
    x.requires_grad_(True)
    y = m(x, kv, mask=padding_mask(torch.tensor([7, 3, 5])), need_weights=need_weights)
    (y[0] if need_weights else y).square().sum().backward()
    for name, p in [*m.named_parameters(), ("x", x)]:
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


def test_fast_path_zeroes_queries_with_no_visible_key_even_if_kernel_gives_nan(monkeypatch):
    """Some fused kernels (CUDA) return NaN for a query whose keys are all masked; the module
    must return zeros there, as the explicit path does, and keep gradients finite."""
    import torch.nn.functional as F

    import minformer.multihead as mh

    def nan_prone_sdpa(Q, K, V, attn_mask=None, dropout_p=0.0):
        scores = Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5
        scores = scores.masked_fill(~attn_mask, float("-inf"))
        return torch.softmax(scores, dim=-1) @ V  # NaN on rows with no True

    torch.manual_seed(0)
    mha = mh.MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 4, 8, requires_grad=True)
    mask = torch.ones(2, 1, 4, 4, dtype=torch.bool)
    mask[0, :, 1, :] = False  # query 1 of sequence 0 sees nothing
    monkeypatch.setattr(F, "scaled_dot_product_attention", nan_prone_sdpa)
    y = mha(x, mask=mask, allow_empty_rows=True)
    y_ref, _ = mha(x, mask=mask, need_weights=True, allow_empty_rows=True)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y, y_ref)
    y.sum().backward()
    assert torch.isfinite(x.grad).all()
