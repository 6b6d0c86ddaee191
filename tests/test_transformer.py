"""minformer.transformer: the three architectures — shapes, masks as properties through the
whole model, equality with nn.Transformer, tying, state_dict round trip, bad configs, and a
small task learned end to end."""

import pytest
import torch
from torch import nn

from minformer.blocks import copy_weights_from_torch
from minformer.train import sequence_loss, train
from minformer.transformer import (
    DecoderOnly,
    EncoderOnly,
    Transformer,
    TransformerConfig,
    count_parameters,
)

PAD, BOS, EOS = 0, 1, 2


def config(**kw):
    base = dict(vocab_size=23, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.0,
                max_len=32)
    return TransformerConfig(**{**base, **kw})


def ids(batch, t, vocab=23, lengths=None, seed=0):
    """Random ids ≥ 3 (no special token), right-padded with PAD to ``lengths``."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(3, vocab, (batch, t), generator=g)
    if lengths is not None:
        for b, n in enumerate(lengths):
            x[b, n:] = PAD
    return x


# ----------------------------------------------------------------------------- shapes, tying

def test_forward_shapes_of_the_three_architectures():
    torch.manual_seed(0)
    src, tgt = ids(3, 7), ids(3, 5)
    assert Transformer(config(tgt_vocab_size=19))(src, ids(3, 5, vocab=19)).shape == (3, 5, 19)
    assert Transformer(config())(src, tgt).shape == (3, 5, 23)
    assert EncoderOnly(config())(src).shape == (3, 7, 23)
    assert DecoderOnly(config())(src).shape == (3, 7, 23)
    logits, weights = Transformer(config(n_decoder_layers=3))(src, tgt, need_weights=True)
    assert logits.shape == (3, 5, 23) and len(weights) == 3
    assert all(w.shape == (3, 2, 5, 7) for w in weights)  # (batch, heads, t, s)


def test_shared_vocabulary_ties_source_target_and_output():
    m = Transformer(config())
    assert m.tgt_embed is m.src_embed and m.out is None
    untied = Transformer(config(tie_embeddings=False))
    assert untied.out is not None
    # one matrix counted once: tied has exactly vocab·d_model + d_model·vocab + vocab fewer
    assert count_parameters(untied) - count_parameters(m) == 23 * 16 + 23
    separate = Transformer(config(tgt_vocab_size=19))
    assert separate.tgt_embed is not separate.src_embed


def test_output_projection_is_position_wise_and_uses_the_embedding_matrix():
    torch.manual_seed(0)
    m = DecoderOnly(config()).eval()
    x = ids(2, 6)
    h = {}
    m.layers.register_forward_hook(lambda mod, inp, out: h.setdefault("h", out))
    logits = m(x)
    # every position: logits_i = h_i Eᵀ, the same map at each position
    torch.testing.assert_close(logits, h["h"] @ m.embed.weight.T)


@pytest.mark.parametrize("tie", [True, False])
def test_decode_without_projection_then_project_gives_the_logits(tie):
    torch.manual_seed(0)
    m = Transformer(config(tie_embeddings=tie)).eval()
    src, tgt = ids(2, 6), ids(2, 5, lengths=[5, 3])
    memory = m.encode(src)
    logits = m.decode(tgt, memory)
    h = m.decode(tgt, memory, project=False)
    assert h.shape == (2, 5, 16)  # (batch, t, d_model)
    torch.testing.assert_close(m.project(h), logits)
    real = tgt != PAD  # any selection of positions, projected alone: the same rows
    torch.testing.assert_close(m.project(h[real]), logits[real])
    h_w, weights = m.decode(tgt, memory, need_weights=True, project=False)
    torch.testing.assert_close(h_w, h)
    assert len(weights) == 2


def test_embeddings_are_scaled_by_sqrt_d_model():
    m = EncoderOnly(config(d_model=64, n_heads=4, d_ff=64))
    x = ids(1, 4)
    emb = m.embed.weight[x] * 8.0  # √64
    expected = emb + m.embed.positions.pe[:4]
    torch.testing.assert_close(m.embed.eval()(x), expected)
    # N(0, 1/d_model) init: the scaled embedding has unit variance, like the positions
    assert 0.8 < (m.embed.weight * 8.0).var().item() < 1.2


# ----------------------------------------------------------------------------- masks as properties

def test_padding_cannot_change_the_encoder_decoder_output():
    torch.manual_seed(0)
    m = Transformer(config()).eval()
    src, tgt = ids(2, 5, lengths=[5, 3]), ids(2, 4, seed=1)
    more_padding = torch.cat([src, torch.full((2, 4), PAD)], dim=1)  # (2, 9)
    torch.testing.assert_close(m(src, tgt), m(more_padding, tgt), atol=1e-6, rtol=1e-5)
    # without the source mask the appended padding does leak in
    m.source_mask = lambda s: None
    assert (m(src, tgt) - m(more_padding, tgt)).abs().max() > 1e-3


def test_target_padding_cannot_change_real_target_positions():
    torch.manual_seed(0)
    m = Transformer(config()).eval()
    src = ids(2, 5)
    tgt = ids(2, 6, lengths=[6, 4], seed=2)
    other = tgt.clone()
    other[1, 4:] = torch.tensor([7, 9])  # the padding replaced by real tokens
    a, b = m(src, tgt), m(src, other)
    torch.testing.assert_close(a[1, :4], b[1, :4], atol=1e-6, rtol=1e-5)


def test_future_target_tokens_cannot_change_earlier_predictions():
    torch.manual_seed(0)
    for model in (Transformer(config()).eval(), DecoderOnly(config()).eval()):
        x = ids(2, 8)
        y = x.clone()
        y[:, 5:] = ids(2, 3, seed=3)  # change tokens 5, 6, 7
        run = (lambda m, t: m(ids(2, 4, seed=9), t)) if isinstance(model, Transformer) else (
            lambda m, t: m(t))
        a, b = run(model, x), run(model, y)
        torch.testing.assert_close(a[:, :5], b[:, :5], atol=1e-6, rtol=1e-5)
        assert (a[:, 5:] - b[:, 5:]).abs().max() > 1e-3
        # without the causal mask the future leaks into position 0
        if isinstance(model, Transformer):
            model.target_mask = lambda t: None
        else:
            model.mask = lambda t: None
        a, b = run(model, x), run(model, y)
        assert (a[:, :5] - b[:, :5]).abs().max() > 1e-3


def test_encoder_only_sees_both_directions():
    torch.manual_seed(0)
    m = EncoderOnly(config()).eval()
    x = ids(1, 6)
    y = x.clone()
    y[0, 5] = 4 if x[0, 5] != 4 else 5
    assert (m(x)[0, 0] - m(y)[0, 0]).abs().max() > 1e-4  # a later token changes the first


def test_teacher_forcing_equals_token_by_token_prediction():
    torch.manual_seed(0)
    m = Transformer(config()).eval()
    src, tgt = ids(2, 6), ids(2, 7, seed=4)
    full = m(src, tgt)
    memory = m.encode(src)
    for i in range(1, 8):
        step = m.decode(tgt[:, :i], memory, m.source_mask(src))[:, -1]
        torch.testing.assert_close(step, full[:, i - 1], atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------- against PyTorch

@pytest.mark.parametrize("norm_first", [False, True])
def test_equals_nn_transformer_with_copied_weights(norm_first):
    torch.manual_seed(0)
    c = config(norm_first=norm_first, final_norm=True, n_decoder_layers=3)
    ours = Transformer(c).eval()
    theirs = nn.Transformer(16, 2, 2, 3, 32, dropout=0.0, batch_first=True,
                            norm_first=norm_first).eval()
    copy_weights_from_torch(ours.encoder, theirs.encoder)
    copy_weights_from_torch(ours.decoder, theirs.decoder)
    src, tgt = ids(3, 7, lengths=[7, 4, 6]), ids(3, 5, lengths=[5, 5, 3], seed=5)
    x, y = ours.src_embed(src), ours.tgt_embed(tgt)
    src_pad, tgt_pad = src == PAD, tgt == PAD  # PyTorch: True = padding
    # bool like the padding masks (True = hidden): PyTorch deprecates mixing a float and a bool mask
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)
    with torch.no_grad():
        h = theirs(x, y, tgt_mask=causal, src_key_padding_mask=src_pad,
                   tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
        expected = h @ ours.src_embed.weight.T
        got = ours(src, tgt)
    real = ~tgt_pad
    torch.testing.assert_close(got[real], expected[real], atol=1e-5, rtol=1e-4)


def test_decoder_only_equals_a_causal_nn_transformer_encoder():
    torch.manual_seed(0)
    c = config(norm_first=True)
    ours = DecoderOnly(c).eval()
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True)
    theirs = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(16), enable_nested_tensor=False)
    copy_weights_from_torch(ours.layers, theirs.eval())
    x = ids(2, 9)
    with torch.no_grad():
        h = theirs(ours.embed(x), mask=nn.Transformer.generate_square_subsequent_mask(9),
                   is_causal=True)
        torch.testing.assert_close(ours(x), h @ ours.embed.weight.T, atol=1e-5, rtol=1e-4)


def test_state_dict_round_trip_gives_identical_outputs():
    torch.manual_seed(0)
    for cls in (Transformer, EncoderOnly, DecoderOnly):
        a = cls(config(positions="learned")).eval()
        b = cls(config(positions="learned"))
        b.load_state_dict(a.state_dict())
        b.eval()
        args = (ids(2, 5), ids(2, 4)) if cls is Transformer else (ids(2, 5),)
        assert torch.equal(a(*args), b(*args))


def test_a_backward_pass_reaches_every_parameter():
    torch.manual_seed(0)
    m = Transformer(config(dropout=0.1))
    loss = sequence_loss(m(ids(2, 5), ids(2, 4)), ids(2, 4, seed=7))
    loss.backward()
    missing = [n for n, p in m.named_parameters() if p.grad is None or not p.grad.abs().sum()]
    assert missing == []


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("kw, match", [
    (dict(vocab_size=0), "vocab_size must be a positive int"),
    (dict(d_model=10, n_heads=3), "d_model=10 is not divisible by n_heads=3"),
    (dict(dropout=1.0), "dropout must lie in"),
    (dict(positions="rotary"), "positions must be 'sinusoidal', 'learned' or 'rope'; got 'rotary'"),
    (dict(pad_id=23), r"pad_id=23 must be an id in the vocabulary \(0 ≤ id < 23\)"),
    (dict(eos_id=0), "pad_id, bos_id and eos_id must differ"),
    (dict(tgt_vocab_size=2), r"must be an id in the vocabulary \(0 ≤ id < 2\)"),
    (dict(activation="tanh"), "activation must be 'relu' or 'gelu'"),
    (dict(n_decoder_layers=0), "n_decoder_layers must be a positive int"),
])
def test_bad_configs_are_refused_with_clear_messages(kw, match):
    with pytest.raises(ValueError, match=match):
        config(**kw)


@pytest.mark.parametrize("kw, match", [
    (dict(vocab_size=2.5), "vocab_size must be an int; got 2.5"),
    (dict(n_heads=True), "n_heads must be an int; got True"),
    (dict(dropout="0.1"), "dropout must be a number"),
    (dict(norm_first="yes"), "norm_first must be True or False"),
    (dict(pad_id=0.0), "pad_id must be an int"),
])
def test_wrong_types_in_a_config_are_type_errors(kw, match):
    with pytest.raises(TypeError, match=match):
        config(**kw)


def test_config_is_frozen():
    c = config()
    with pytest.raises(AttributeError):
        c.d_model = 32


def test_bad_token_ids_are_refused():
    m = Transformer(config(max_len=8))
    with pytest.raises(ValueError, match="outside the vocabulary 0..22"):
        m(ids(1, 4) + 20, ids(1, 3))
    with pytest.raises(TypeError, match="integer token ids; got dtype torch.float32"):
        m(torch.rand(1, 4), ids(1, 3))
    with pytest.raises(ValueError, match="more than max_len=8"):
        m(ids(1, 9), ids(1, 3))
    with pytest.raises(ValueError, match=r"\(batch, t\) tensor of token ids"):
        m(ids(1, 4)[0], ids(1, 3))
    with pytest.raises(ValueError, match=r"memory must be \(batch=2, s, d_model\)"):
        m.decode(ids(2, 3), torch.zeros(1, 4, 16))
    with pytest.raises(TypeError, match="needs a TransformerConfig"):
        Transformer(dict(vocab_size=10))


# ----------------------------------------------------------------------------- learns a task

def test_learns_to_reverse_sequences_to_full_accuracy():
    """src = 6 random symbols, tgt = them reversed, framed by BOS/EOS: learned in seconds."""
    torch.manual_seed(0)
    V, n = 13, 6
    c = TransformerConfig(vocab_size=V, d_model=32, n_heads=2, d_ff=64, n_layers=1,
                          dropout=0.0, max_len=16)
    model = Transformer(c)

    def batch(size=64):
        src = torch.randint(3, V, (size, n))
        rev = src.flip(1)
        tgt_in = torch.cat([torch.full((size, 1), BOS), rev], 1)
        tgt_out = torch.cat([rev, torch.full((size, 1), EOS)], 1)
        return src, tgt_in, tgt_out

    def loss_fn(m, b):
        src, tgt_in, tgt_out = b
        return sequence_loss(m(src, tgt_in), tgt_out)

    data = (batch() for _ in iter(int, 1))  # endless
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    hist = train(model, data, loss_fn, opt, steps=400, warmup=50, progress=False)
    model.eval()
    src, tgt_in, tgt_out = batch(256)
    with torch.no_grad():
        acc = (model(src, tgt_in).argmax(-1) == tgt_out).float().mean().item()
    assert acc == 1.0, f"reverse accuracy {acc:.3f} after {hist.steps} steps"
