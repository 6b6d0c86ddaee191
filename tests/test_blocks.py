"""LayerNorm, FeedForward, encoder and decoder layers and stacks: equal to PyTorch's modules with
copied weights, in both norm placements and with masks; causal and padding properties."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minformer.blocks import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    FeedForward,
    LayerNorm,
    copy_weights_from_torch,
    copy_weights_to_torch,
)
from minformer.masks import causal_mask, padding_mask, to_torch_mask

D, H, FF = 16, 4, 32
TOL = dict(atol=2e-5, rtol=2e-5)


def perturb(module, seed=0):
    """Random non-default weights (LayerNorm γ ≠ 1, β ≠ 0), so a mix-up shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=g))
    return module


def seqs(batch=3, t=5, s=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(batch, t, D, generator=g), torch.randn(batch, s, D, generator=g)


def test_layernorm_equals_torch():
    x = 3 * torch.randn(4, 6, D) + 2
    ours, theirs = LayerNorm(D, eps=1e-3), perturb(nn.LayerNorm(D, eps=1e-3))
    copy_weights_from_torch(ours, theirs)
    torch.testing.assert_close(ours(x), theirs(x), **TOL)


def test_layernorm_formula_equals_the_fused_forward_with_gradients():
    x = (3 * torch.randn(4, 6, D) + 2).requires_grad_()
    ours = perturb(LayerNorm(D, eps=1e-3))
    fused, formula = ours(x), ours.reference(x)
    torch.testing.assert_close(fused, formula, **TOL)
    g = torch.randn_like(fused)
    grads_fused = torch.autograd.grad(fused, [x, ours.weight, ours.bias], g)
    grads_formula = torch.autograd.grad(formula, [x, ours.weight, ours.bias], g)
    for a, b in zip(grads_fused, grads_formula):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


def test_layernorm_normalizes_each_token():
    x = 5 * torch.randn(2, 7, D) - 4
    y = LayerNorm(D)(x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(2, 7), atol=1e-5, rtol=0)
    torch.testing.assert_close(y.var(-1, unbiased=False), torch.ones(2, 7), atol=1e-3, rtol=0)


def test_layernorm_rejects_wrong_size():
    with pytest.raises(ValueError, match=r"LayerNorm\(16\).*\(2, 3, 8\)"):
        LayerNorm(D)(torch.randn(2, 3, 8))
    with pytest.raises(ValueError, match="positive int"):
        LayerNorm(0)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feedforward_is_the_formula_and_position_wise(activation):
    ffn = perturb(FeedForward(D, FF, activation=activation))
    assert ffn.linear1.bias.shape == (FF,) and ffn.linear2.bias.shape == (D,)  # vectors
    x, _ = seqs()
    act = F.relu if activation == "relu" else F.gelu
    W1, b1, W2, b2 = ffn.linear1.weight.T, ffn.linear1.bias, ffn.linear2.weight.T, ffn.linear2.bias
    torch.testing.assert_close(ffn(x), act(x @ W1 + b1) @ W2 + b2, **TOL)
    perm = torch.tensor([3, 0, 4, 1, 2])
    torch.testing.assert_close(ffn(x[:, perm]), ffn(x)[:, perm], **TOL)  # each position alone


def test_unknown_activation():
    with pytest.raises(ValueError, match="'tanhh'"):
        FeedForward(D, FF, activation="tanhh")


def encoder_pair(norm_first, activation="relu"):
    torch.manual_seed(0)
    theirs = nn.TransformerEncoderLayer(D, H, FF, dropout=0.1, activation=activation,
                                        batch_first=True, norm_first=norm_first)
    ours = EncoderLayer(D, H, FF, dropout=0.1, norm_first=norm_first, activation=activation)
    copy_weights_from_torch(ours, perturb(theirs))
    return ours.eval(), theirs.eval()


def decoder_pair(norm_first):
    torch.manual_seed(0)
    theirs = nn.TransformerDecoderLayer(D, H, FF, dropout=0.1, batch_first=True,
                                        norm_first=norm_first)
    ours = DecoderLayer(D, H, FF, dropout=0.1, norm_first=norm_first)
    copy_weights_from_torch(ours, perturb(theirs))
    return ours.eval(), theirs.eval()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "padding", "causal & padding"])
def test_encoder_layer_equals_torch(norm_first, masks):
    ours, theirs = encoder_pair(norm_first, activation="gelu" if norm_first else "relu")
    x, _ = seqs()
    lengths = torch.tensor([5, 2, 4])
    mask = kw = None
    if masks != "none":
        mask = padding_mask(lengths)
        kw = dict(src_key_padding_mask=to_torch_mask(mask[:, 0, 0]))
    if masks == "causal & padding":
        mask = causal_mask(5) & mask
        kw["src_mask"] = to_torch_mask(causal_mask(5))
    torch.testing.assert_close(ours(x, mask), theirs(x, **(kw or {})), **TOL)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masks", ["causal", "causal & padding, memory padding"])
def test_decoder_layer_equals_torch(norm_first, masks):
    ours, theirs = decoder_pair(norm_first)
    x, memory = seqs()
    mask, memory_mask = causal_mask(5), None
    kw = dict(tgt_mask=to_torch_mask(causal_mask(5)))
    if masks != "causal":
        tgt_pad, src_pad = padding_mask(torch.tensor([5, 3, 4])), padding_mask(torch.tensor([7, 2, 6]))
        mask, memory_mask = mask & tgt_pad, src_pad
        kw |= dict(tgt_key_padding_mask=to_torch_mask(tgt_pad[:, 0, 0]),
                   memory_key_padding_mask=to_torch_mask(src_pad[:, 0, 0]))
    want = theirs(x, memory, **kw)
    torch.testing.assert_close(ours(x, memory, mask, memory_mask), want, **TOL)
    y, A = ours(x, memory, mask, memory_mask, need_weights=True)
    torch.testing.assert_close(y, want, **TOL)
    assert A.shape == (3, H, 5, 7)
    torch.testing.assert_close(A.sum(-1), torch.ones(3, H, 5), **TOL)
    if memory_mask is not None:
        assert (A[1, :, :, 2:] == 0).all()  # no weight on the source's padding


@pytest.mark.parametrize("norm_first", [False, True])
def test_stacks_equal_torch(norm_first):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D, H, FF, batch_first=True, norm_first=norm_first)
    norm = nn.LayerNorm(D) if norm_first else None
    t_enc = perturb(nn.TransformerEncoder(layer, 2, norm=norm, enable_nested_tensor=False)).eval()
    dlayer = nn.TransformerDecoderLayer(D, H, FF, batch_first=True, norm_first=norm_first)
    dnorm = nn.LayerNorm(D) if norm_first else None
    t_dec = perturb(nn.TransformerDecoder(dlayer, 2, norm=dnorm)).eval()
    enc = copy_weights_from_torch(Encoder(2, D, H, FF, norm_first=norm_first), t_enc).eval()
    dec = copy_weights_from_torch(Decoder(2, D, H, FF, norm_first=norm_first), t_dec).eval()
    assert (enc.norm is None) == (not norm_first)
    tgt, src = seqs(t=5, s=7)
    src_pad = padding_mask(torch.tensor([7, 3, 6]))
    memory = enc(src, src_pad)
    want_memory = t_enc(src, src_key_padding_mask=to_torch_mask(src_pad[:, 0, 0]))
    torch.testing.assert_close(memory, want_memory, **TOL)
    y, weights = dec(tgt, memory, causal_mask(5), src_pad, need_weights=True)
    want = t_dec(tgt, memory, tgt_mask=to_torch_mask(causal_mask(5)),
                 memory_key_padding_mask=to_torch_mask(src_pad[:, 0, 0]))
    torch.testing.assert_close(y, want, **TOL)
    assert len(weights) == 2 and weights[0].shape == (3, H, 5, 7)


def test_weights_copy_to_torch():
    torch.manual_seed(1)
    ours = perturb(DecoderLayer(D, H, FF, norm_first=True)).eval()
    theirs = nn.TransformerDecoderLayer(D, H, FF, batch_first=True, norm_first=True).eval()
    copy_weights_to_torch(ours, theirs)
    x, memory = seqs()
    torch.testing.assert_close(ours(x, memory), theirs(x, memory), **TOL)
    assert "cross_attn.in_proj_weight" in ours.state_dict()
    assert "ffn.linear1.weight" in ours.state_dict()


def test_copy_is_strict():
    with pytest.raises(RuntimeError, match="size mismatch"):
        copy_weights_from_torch(EncoderLayer(D, H, FF), nn.TransformerEncoderLayer(D, H, 64))
    with pytest.raises(RuntimeError, match="Missing key"):
        copy_weights_from_torch(DecoderLayer(D, H, FF), nn.TransformerEncoderLayer(D, H, FF))


def test_post_norm_output_is_normalized():
    layer = EncoderLayer(D, H, FF, norm_first=False).eval()
    x, _ = seqs()
    y = layer(10 * x)
    torch.testing.assert_close(y.mean(-1), torch.zeros(3, 5), atol=1e-5, rtol=0)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_future_targets_never_change_the_past(norm_first):
    ours, _ = decoder_pair(norm_first)
    stack = perturb(Decoder(2, D, H, FF, norm_first=norm_first)).eval()
    for seed in range(8):
        x, memory = seqs(t=6, seed=seed)
        p = seed % 5
        x2 = x.clone()
        x2[:, p + 1:] = torch.randn_like(x2[:, p + 1:])
        for module in (ours, stack):
            y, y2 = module(x, memory, causal_mask(6)), module(x2, memory, causal_mask(6))
            torch.testing.assert_close(y2[:, : p + 1], y[:, : p + 1], atol=1e-5, rtol=1e-5)
            assert not torch.allclose(module(x2, memory)[:, : p + 1], module(x, memory)[:, : p + 1])


@pytest.mark.parametrize("norm_first", [False, True])
def test_padding_never_changes_real_tokens(norm_first):
    enc, _ = encoder_pair(norm_first)
    dec, _ = decoder_pair(norm_first)
    src_len, tgt_len = torch.tensor([7, 3, 5]), torch.tensor([5, 2, 4])
    src_pad, tgt_pad = padding_mask(src_len), padding_mask(tgt_len)
    src_real, tgt_real = src_pad[:, 0, 0], tgt_pad[:, 0, 0]  # (batch, t): True at real tokens
    for seed in range(5):
        x, memory = seqs(seed=seed)
        memory2 = torch.where(src_real[..., None], memory, 9 * torch.randn_like(memory))
        x2 = torch.where(tgt_real[..., None], x, 9 * torch.randn_like(x))
        torch.testing.assert_close(enc(memory2, src_pad)[src_real], enc(memory, src_pad)[src_real],
                                   atol=1e-5, rtol=1e-5)
        mask = causal_mask(5) & tgt_pad
        y = dec(x, memory, mask, src_pad)
        y2 = dec(x2, memory2, mask, src_pad)
        torch.testing.assert_close(y2[tgt_real], y[tgt_real], atol=1e-5, rtol=1e-5)


def test_bad_configuration():
    with pytest.raises(ValueError, match=r"d_model=18 .*n_heads=4"):
        EncoderLayer(18, 4, FF)
    with pytest.raises(ValueError, match=r"d_model=18 .*n_heads=4"):
        DecoderLayer(18, 4, FF)
    with pytest.raises(ValueError, match="n_layers"):
        Encoder(0, D, H, FF)
    with pytest.raises(ValueError, match=r"\(2, 5, 5\)"):
        DecoderLayer(D, H, FF)(*seqs(), mask=torch.ones(2, 5, 5, dtype=torch.bool))


MODULES = {
    "LayerNorm": lambda: LayerNorm(D),
    "FeedForward": lambda: FeedForward(D, FF, dropout=0.1),
    "EncoderLayer post-norm": lambda: EncoderLayer(D, H, FF),
    "EncoderLayer pre-norm": lambda: EncoderLayer(D, H, FF, norm_first=True),
    "DecoderLayer post-norm": lambda: DecoderLayer(D, H, FF),
    "DecoderLayer pre-norm": lambda: DecoderLayer(D, H, FF, norm_first=True),
    "Encoder": lambda: Encoder(2, D, H, FF, norm_first=True),
    "Decoder": lambda: Decoder(2, D, H, FF),
}


@pytest.mark.parametrize("name", MODULES)
def test_backward_reaches_every_parameter(name):
    torch.manual_seed(0)
    module = perturb(MODULES[name]()).train()
    x, memory = seqs()
    x.requires_grad_(True)
    if "Decoder" in name:
        y = module(x, memory, causal_mask(5), padding_mask(torch.tensor([7, 4, 2])))
    elif "Encoder" in name:
        y = module(x, padding_mask(torch.tensor([5, 4, 2])))
    else:
        y = module(x)
    (y * torch.randn_like(y)).sum().backward()
    for pname, p in [*module.named_parameters(), ("x", x)]:
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname
        assert p.grad.abs().sum() > 0, pname
