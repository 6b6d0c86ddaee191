"""Rotary positions and grouped-query attention as options of TransformerConfig (chapter 14):
the default is the model it always was; GQA equals PyTorch's attention on repeated key/value
heads; RoPE is a rotation (lengths kept, the complex-number form, scores that depend only on
position differences); both keep the causal property and give the KV cache's tokens; the cache
shrinks by n_heads / n_kv_heads; checkpoints without the new field load unchanged; bad values
are refused with messages that name them."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import minformer.multihead as multihead
from minformer.decode import beam_search, generate, greedy_search
from minformer.masks import causal_mask, padding_mask
from minformer.multihead import AttentionCache, MultiHeadAttention, grouped_query_attention
from minformer.positional import rotary
from minformer.tokenizer import BPETokenizer
from minformer.transformer import DecoderOnly, Transformer, TransformerConfig
from minformer.translator import Translator, _read_config
from minformer.utils import data_dir

PAD, BOS, EOS = 0, 1, 2
V = 19

OPTIONS = [dict(positions="rope"), dict(n_kv_heads=2), dict(n_kv_heads=1),
           dict(positions="rope", n_kv_heads=1)]
NAMES = ["rope", "gqa2", "mqa", "rope+mqa"]


def config(**kw):
    base = dict(vocab_size=V, d_model=32, n_heads=4, d_ff=48, n_layers=2, dropout=0.0,
                max_len=40)
    return TransformerConfig(**{**base, **kw})


def model_of(cls, seed=0, **kw):
    torch.manual_seed(seed)
    return cls(config(**kw)).eval()


def ids(batch, t, seed=0, lengths=None):
    """Random ids ≥ 3 (no special token), right-padded with PAD to ``lengths``."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(3, V, (batch, t), generator=g)
    if lengths is not None:
        for b, n in enumerate(lengths):
            x[b, n:] = PAD
    return x


# ----------------------------------------------------------------------------- references

def rotary_complex(X, start=0, base=10000.0):
    """RoPE in the complex-number form of Su et al.: pair (x_2i, x_2i+1) is the complex number
    x_2i + i·x_2i+1, multiplied by e^{i·p·θ_i}. X (..., t, d) → (..., t, d), in float64."""
    t, d = X.shape[-2], X.shape[-1]
    z = torch.view_as_complex(X.double().reshape(*X.shape[:-1], d // 2, 2).contiguous())
    pos = torch.arange(start, start + t, dtype=torch.float64)  # (t,)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    turn = torch.polar(torch.ones(t, d // 2, dtype=torch.float64), pos[:, None] * theta)
    return torch.view_as_real(z * turn).reshape(X.shape)  # (..., t, d)


def reference_attention(mha, x_q, x_kv, mask, rope_start=0, enable_gqa=False):
    """The module's function written out with PyTorch's own attention: fused projections
    split by rows, heads by reshape, K and V heads repeated (repeat_interleave) or handed to
    SDPA's enable_gqa, RoPE in its complex form, output projection. (batch, t_q, d_model)."""
    W, b = mha.in_proj_weight, mha.in_proj_bias
    d, dh, h, g = mha.d_model, mha.d_head, mha.n_heads, mha.n_kv_heads
    B, t_q, t_k = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
    Q = F.linear(x_q, W[:d], b[:d]).view(B, t_q, h, dh).transpose(1, 2)  # (B, h, t_q, dh)
    K = F.linear(x_kv, W[d:d + g * dh], b[d:d + g * dh])  # (B, t_k, g·dh)
    Vv = F.linear(x_kv, W[d + g * dh:], b[d + g * dh:])  # (B, t_k, g·dh)
    K = K.view(B, t_k, g, dh).transpose(1, 2)  # (B, g, t_k, dh)
    Vv = Vv.view(B, t_k, g, dh).transpose(1, 2)  # (B, g, t_k, dh)
    if mha.rope:
        Q = rotary_complex(Q, rope_start).to(Q.dtype)
        K = rotary_complex(K, rope_start).to(K.dtype)
    if enable_gqa:
        Y = F.scaled_dot_product_attention(Q, K, Vv, attn_mask=mask, enable_gqa=True)
    else:
        K, Vv = K.repeat_interleave(h // g, dim=1), Vv.repeat_interleave(h // g, dim=1)
        Y = F.scaled_dot_product_attention(Q, K, Vv, attn_mask=mask)  # (B, h, t_q, dh)
    return mha.out_proj(Y.transpose(1, 2).reshape(B, t_q, d))  # (B, t_q, d_model)


# ----------------------------------------------------------------------------- the default

@pytest.mark.parametrize("cls", [DecoderOnly, Transformer])
def test_n_kv_heads_equal_to_n_heads_is_exactly_the_current_model(cls):
    torch.manual_seed(3)
    old = cls(config())
    torch.manual_seed(3)
    new = cls(config(n_kv_heads=4))
    a, b = old.state_dict(), new.state_dict()
    assert list(a) == list(b)
    assert all(a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)
    x = ids(3, 9, lengths=[9, 6, 4])
    if cls is Transformer:
        assert torch.equal(old.eval()(x, x[:, :7]), new.eval()(x, x[:, :7]))
    else:
        assert torch.equal(old.eval()(x), new.eval()(x))


def test_the_default_attention_still_equals_nn_multihead_attention():
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    ours = MultiHeadAttention(32, 4, n_kv_heads=4).eval()
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(2, 6, 32)
    mask = causal_mask(6)
    expected = theirs(x, x, x, attn_mask=~mask, need_weights=False)[0]
    torch.testing.assert_close(ours(x, mask=mask), expected, atol=1e-6, rtol=1e-5)


# ----------------------------------------------------------------------------- GQA

@pytest.mark.parametrize("g", [1, 2, 4, 8])
@pytest.mark.parametrize("need_weights", [False, True])
def test_gqa_equals_pytorch_attention_on_repeated_key_value_heads(g, need_weights):
    torch.manual_seed(g)
    mha = MultiHeadAttention(32, 8, n_kv_heads=g).eval()
    nn.init.normal_(mha.in_proj_bias)  # nonzero biases: rows must be split right
    assert mha.in_proj_weight.shape == (32 + 2 * g * 4, 32)  # (d_model + 2·g·d_head, d_model)
    x = torch.randn(3, 7, 32)
    mask = causal_mask(7) & padding_mask(lengths=torch.tensor([7, 5, 2]), t=7)
    out = mha(x, mask=mask, need_weights=need_weights)
    Y = out[0] if need_weights else out
    torch.testing.assert_close(Y, reference_attention(mha, x, x, mask), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(Y, reference_attention(mha, x, x, mask, enable_gqa=True),
                               atol=1e-5, rtol=1e-5)
    if need_weights:
        assert out[1].shape == (3, 8, 7, 7)
        torch.testing.assert_close(out[1].sum(-1), torch.ones(3, 8, 7))


def test_gqa_in_cross_attention_and_the_books_grouped_query_attention_agree():
    torch.manual_seed(1)
    mha = MultiHeadAttention(32, 4, n_kv_heads=2, bias=True).eval()
    nn.init.normal_(mha.in_proj_bias)
    x_q, memory = torch.randn(2, 5, 32), torch.randn(2, 9, 32)
    mask = padding_mask(lengths=torch.tensor([9, 6]), t=9)
    torch.testing.assert_close(mha(x_q, memory, mask=mask),
                               reference_attention(mha, x_q, memory, mask), atol=1e-5, rtol=1e-5)
    Q, K, V = mha._heads(x_q, memory, self_attention=False)  # (2, 4, 5, 8), (2, 2, 9, 8) × 2
    assert K.shape == V.shape == (2, 2, 9, 8)
    heads = grouped_query_attention(Q, K, V, mask)  # (2, 4, 5, 8), the chapter's function
    torch.testing.assert_close(mha(x_q, memory, mask=mask),
                               mha.out_proj(heads.transpose(1, 2).reshape(2, 5, 32)),
                               atol=1e-5, rtol=1e-5)


def test_gqa_shares_each_key_value_head_among_its_group_only():
    """Changing key/value head j's weights moves exactly the query heads i with
    i // (h/g) == j."""
    torch.manual_seed(2)
    mha = MultiHeadAttention(32, 8, n_kv_heads=2).eval()
    x = torch.randn(1, 6, 32)
    before = mha._attend(*mha._heads(x, x, True), None, need_weights=True)[1]  # (1, 8, 6, 6)
    with torch.no_grad():
        mha.in_proj_weight[32 + 4:32 + 8] += 1.0  # W_K rows of key/value head 1 (d_head 4)
    after = mha._attend(*mha._heads(x, x, True), None, need_weights=True)[1]
    moved = [(after[0, i] - before[0, i]).abs().max().item() > 1e-4 for i in range(8)]
    assert moved == [False] * 4 + [True] * 4


def test_gqa_has_fewer_parameters_and_trains():
    full, grouped = model_of(DecoderOnly), model_of(DecoderOnly, n_kv_heads=1)
    n = sum(p.numel() for p in full.parameters()) - sum(p.numel() for p in grouped.parameters())
    assert n == 2 * 2 * (32 - 8) * (32 + 1)  # layers · (K and V) · removed rows · (weights + bias)
    grouped.train()
    x = ids(4, 12)
    F.cross_entropy(grouped(x).flatten(0, 1), x.flatten()).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in grouped.parameters())


# ----------------------------------------------------------------------------- RoPE

@pytest.mark.parametrize("start", [0, 5, 37])
def test_rotary_matches_the_complex_number_form(start):
    X = torch.randn(2, 3, 11, 16, dtype=torch.float64)
    torch.testing.assert_close(rotary(X, start), rotary_complex(X, start), atol=1e-12, rtol=0)
    X32 = X.float()
    torch.testing.assert_close(rotary(X32, start), rotary_complex(X32, start).float(),
                               atol=1e-5, rtol=1e-5)


def test_rotary_preserves_norms():
    X = torch.randn(4, 30, 16, dtype=torch.float64) * 3
    torch.testing.assert_close(rotary(X, 11).norm(dim=-1), X.norm(dim=-1), atol=1e-12, rtol=0)


@pytest.mark.parametrize("shift", [1, 7, 100])
def test_shifting_every_position_leaves_the_scores_unchanged(shift):
    g = torch.Generator().manual_seed(shift)
    Q = torch.randn(2, 4, 9, 16, generator=g, dtype=torch.float64)
    K = torch.randn(2, 4, 9, 16, generator=g, dtype=torch.float64)
    scores = rotary(Q) @ rotary(K).transpose(-2, -1)  # (2, 4, 9, 9)
    shifted = rotary(Q, shift) @ rotary(K, shift).transpose(-2, -1)
    torch.testing.assert_close(shifted, scores, atol=1e-10, rtol=0)
    assert (scores - Q @ K.transpose(-2, -1)).abs().max() > 1e-2  # but positions do matter


def test_a_rope_module_equals_the_reference_and_is_shift_invariant_through_its_cache():
    """Positions enter the scores only through differences: tokens fed after s cached keys
    that the mask hides (so at positions s, s+1, …) give the outputs they give at 0, 1, …"""
    torch.manual_seed(4)
    mha = MultiHeadAttention(32, 4, n_kv_heads=2, rope=True).eval()
    nn.init.normal_(mha.in_proj_bias)
    x = torch.randn(2, 6, 32)
    mask = causal_mask(6)
    expected = mha(x, mask=mask)
    torch.testing.assert_close(expected, reference_attention(mha, x, x, mask),
                               atol=1e-5, rtol=1e-5)
    for s in (1, 9):
        cache = AttentionCache()
        mha(torch.randn(2, s, 32), mask=causal_mask(s), cache=cache)
        hidden = torch.cat([torch.zeros(6, s, dtype=torch.bool), mask], dim=1)  # (6, s + 6)
        torch.testing.assert_close(mha(x, mask=hidden, cache=cache), expected,
                                   atol=1e-5, rtol=1e-5)
    no_rope = MultiHeadAttention(32, 4, n_kv_heads=2).eval()
    no_rope.load_state_dict(mha.state_dict())
    assert (no_rope(x, mask=mask) - expected).abs().max() > 1e-3


def test_a_rope_model_adds_no_positions_and_has_no_position_parameters():
    model = model_of(DecoderOnly, positions="rope")
    assert model.embed.positions is None
    assert all(m.self_attn.rope for m in model.layers.layers)
    assert not any("position" in k for k in model.state_dict())
    base = model_of(DecoderOnly)
    assert sorted(model.state_dict()) == sorted(base.state_dict())
    x = ids(1, 5)
    emb = F.embedding(x, model.embed.weight) * math.sqrt(32)
    torch.testing.assert_close(model.embed(x), emb)
    t = model_of(Transformer, positions="rope")
    assert all(layer.self_attn.rope and not layer.cross_attn.rope for layer in t.decoder.layers)


# ----------------------------------------------------------------------------- causality

@pytest.mark.parametrize("kw", OPTIONS, ids=NAMES)
def test_future_tokens_cannot_change_earlier_outputs(kw):
    model = model_of(DecoderOnly, 1, **kw)
    x = ids(2, 12, seed=1)
    y = x.clone()
    y[:, 7:] = ids(2, 5, seed=9)  # a different future
    torch.testing.assert_close(model(x)[:, :7], model(y)[:, :7], atol=1e-6, rtol=1e-6)
    assert (model(x)[:, 7:] - model(y)[:, 7:]).abs().max() > 1e-3
    t = model_of(Transformer, 1, **kw)
    src = ids(2, 8, seed=2, lengths=[8, 5])
    torch.testing.assert_close(t(src, x)[:, :7], t(src, y)[:, :7], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("kw", OPTIONS, ids=NAMES)
def test_rope_and_gqa_models_see_order(kw):
    """Without added positions the model must still tell 'a b' from 'b a' (RoPE's job)."""
    model = model_of(DecoderOnly, 2, **kw)
    x = ids(1, 6, seed=3)
    y = x.flip(1)
    assert (model(x)[:, -1] - model(y)[:, -1]).abs().max() > 1e-3


# ----------------------------------------------------------------------------- the KV cache

@pytest.mark.parametrize("kw", OPTIONS, ids=NAMES)
def test_cached_logits_equal_the_full_models(kw):
    model = model_of(DecoderOnly, 5, **kw)
    x = ids(3, 13, seed=5)
    x[:, 0] = BOS
    full = model(x)
    for pieces in ([1] * 13, [6, 1, 4, 2], [13]):
        cache, out, start = model.new_cache(), [], 0
        for n in pieces:
            out.append(model(x[:, start:start + n], cache=cache))
            start += n
        torch.testing.assert_close(torch.cat(out, dim=1), full, atol=1e-5, rtol=1e-5)
    t = model_of(Transformer, 5, **kw)
    src = ids(3, 7, seed=6, lengths=[7, 4, 2])
    memory, src_mask = t.encode(src), t.source_mask(src)
    full = t.decode(x, memory, src_mask)
    cache = t.new_cache()
    steps = [t.decode(x[:, :4], memory, src_mask, cache=cache)]
    steps += [t.decode(x[:, i:i + 1], memory, src_mask, cache=cache) for i in range(4, 13)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_keys_rotated_at_the_wrong_position_would_be_caught(monkeypatch):
    """The check above is not vacuous: rotating the new token as if at position 0 changes it."""
    model = model_of(DecoderOnly, 5, positions="rope")
    x = ids(2, 6, seed=5)
    full = model(x)
    cache = model.new_cache()
    model(x[:, :5], cache=cache)
    monkeypatch.setattr(multihead, "rotary", lambda X, start=0: rotary(X, 0))
    wrong = model(x[:, 5:], cache=cache)
    assert (wrong[:, 0] - full[:, 5]).abs().max() > 1e-3


@pytest.mark.parametrize("kw", OPTIONS, ids=NAMES)
def test_cached_generation_gives_the_uncached_tokens(kw):
    for seed in range(2):
        model = model_of(DecoderOnly, seed, **kw)
        prompt = ids(3, 5, seed=seed)
        prompt[:, 0] = BOS
        for sampling in (dict(greedy=True), dict(temperature=0.8, top_k=5)):
            outs = []
            for use_cache in (True, False):
                g = torch.Generator().manual_seed(seed)
                outs.append(generate(model, prompt, 30, generator=g, use_cache=use_cache,
                                     **sampling))
            assert torch.equal(*outs), sampling
        past = generate(model, prompt, 45, greedy=True)  # past max_len = 40: a sliding window
        assert torch.equal(past, generate(model, prompt, 45, greedy=True, use_cache=False))


@pytest.mark.parametrize("kw", OPTIONS, ids=NAMES)
def test_cached_searches_give_the_uncached_tokens(kw):
    model = model_of(Transformer, 3, **kw)
    src = ids(4, 7, seed=4, lengths=[7, 5, 3, 6])
    assert torch.equal(greedy_search(model, src, 20, BOS, EOS),
                       greedy_search(model, src, 20, BOS, EOS, use_cache=False))
    assert torch.equal(beam_search(model, src, 3, 20, BOS, EOS),
                       beam_search(model, src, 3, 20, BOS, EOS, use_cache=False))


@pytest.mark.parametrize("g", [4, 2, 1])
def test_the_cache_shrinks_by_n_heads_over_n_kv_heads(g):
    model = model_of(DecoderOnly, n_kv_heads=g)
    cache = model.new_cache()
    model(ids(3, 10), cache=cache)
    d_head, n_layers, bytes_per_number = 8, 2, 4
    assert cache.nbytes == 2 * n_layers * 3 * g * 10 * d_head * bytes_per_number
    baseline = model_of(DecoderOnly).new_cache()
    model_of(DecoderOnly)(ids(3, 10), cache=baseline)
    assert baseline.nbytes == cache.nbytes * (4 // g)
    assert all(layer.self_attn.K.shape == (3, g, 10, d_head) for layer in cache)
    t = model_of(Transformer, n_kv_heads=g)
    cross = t.new_cache()
    t.decode(ids(3, 4), t.encode(ids(3, 6)), cache=cross)  # 4 target and 6 source tokens
    assert cross.nbytes == 2 * n_layers * 3 * g * (4 + 6) * d_head * bytes_per_number


# ----------------------------------------------------------------------------- checkpoints

def test_the_shipped_config_without_n_kv_heads_still_loads():
    path = data_dir() / "checkpoints/en-es/config.json"
    assert "n_kv_heads" not in json.loads(path.read_text())  # written before the option existed
    config, _ = _read_config(path)
    assert config.n_kv_heads is None and config.positions == "sinusoidal"


def test_save_writes_the_same_config_json_as_before_and_round_trips_the_options(tmp_path):
    tok = BPETokenizer.train(["a small text", "un texto pequeño"] * 3, 290)
    base = dict(vocab_size=tok.vocab_size, d_model=16, n_heads=4, d_ff=32, n_layers=1,
                max_len=24, pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
    Translator(Transformer(TransformerConfig(**base)), tok, 20).save(tmp_path / "old")
    written = json.loads((tmp_path / "old" / "config.json").read_text())
    assert "n_kv_heads" not in written  # byte for byte the format of the shipped checkpoint
    assert list(written)[-2:] == ["activation", "max_source_tokens"]
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(**base, positions="rope", n_kv_heads=2)).eval()
    Translator(model, tok, 20).save(tmp_path / "new")
    loaded = Translator.load(tmp_path / "new").model
    assert loaded.config == model.config
    src = torch.tensor([[5, 6, 7, tok.eos_id]])
    torch.testing.assert_close(loaded(src, torch.tensor([[tok.bos_id, 8]])),
                               model(src, torch.tensor([[tok.bos_id, 8]])), atol=1e-2, rtol=0)


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("kw, error, match", [
    (dict(n_kv_heads=3), ValueError, "n_kv_heads=3 must be a positive divisor of n_heads=4"),
    (dict(n_kv_heads=8), ValueError, "n_kv_heads=8 must be a positive divisor of n_heads=4"),
    (dict(n_kv_heads=0), ValueError, "n_kv_heads=0 must be a positive divisor of n_heads=4"),
    (dict(n_kv_heads=-2), ValueError, "n_kv_heads=-2 must be a positive divisor of n_heads=4"),
    (dict(n_kv_heads=2.0), TypeError, "n_kv_heads must be an int; got 2.0"),
    (dict(n_kv_heads=True), TypeError, "n_kv_heads must be an int; got True"),
    (dict(positions="rotary"), ValueError,
     "positions must be 'sinusoidal', 'learned' or 'rope'; got 'rotary'"),
    (dict(positions="RoPE"), ValueError, "got 'RoPE'"),
    (dict(positions="rope", d_model=24, n_heads=8), ValueError,
     "d_head = d_model / n_heads = 24 / 8 = 3 must be even"),
])
def test_bad_options_are_refused_naming_the_values(kw, error, match):
    with pytest.raises(error, match=match):
        config(**kw)


def test_the_attention_module_refuses_bad_options_too():
    with pytest.raises(ValueError, match="n_kv_heads=3 must be a positive divisor of n_heads=4"):
        MultiHeadAttention(32, 4, n_kv_heads=3)
    with pytest.raises(ValueError, match="d_model / n_heads = 12 / 4 = 3 must be even"):
        MultiHeadAttention(12, 4, rope=True)
    with pytest.raises(TypeError, match="rope must be True or False; got 'yes'"):
        MultiHeadAttention(32, 4, rope="yes")
    with pytest.raises(ValueError, match="rotary positions are for self-attention"):
        MultiHeadAttention(32, 4, rope=True)(torch.randn(1, 2, 32), torch.randn(1, 3, 32),
                                             cache=AttentionCache(static=True))


def test_a_rope_cache_cannot_run_past_max_len():
    model = model_of(DecoderOnly, positions="rope")  # max_len 40
    cache = model.new_cache()
    model(ids(1, 38), cache=cache)
    with pytest.raises(ValueError, match="positions 38 … 40 is longer than max_len=40"):
        model(ids(1, 3), cache=cache)


# ----------------------------------------------------------------------------- the comparison

def test_the_byte_stream_is_utf8_spanish_without_special_bytes():
    from minformer.variants import EOS as LAST_SPECIAL
    from minformer.variants import byte_stream

    ids = byte_stream("valid", max_sentences=50)
    assert ids.dtype == torch.long and int(ids.min()) > LAST_SPECIAL and int(ids.max()) < 256
    text = bytes(ids.tolist()).decode("utf-8")
    assert text.count("\n") == 49 and any(c in text for c in "áéíóúñ¿")


def test_compare_variants_trains_pairs_of_seeds_and_summarizes(monkeypatch):
    import minformer.variants as variants

    monkeypatch.setattr(variants, "MODEL", {**variants.MODEL, "d_model": 16, "d_ff": 32,
                                            "n_layers": 1})
    chosen = {"sinusoidal": {}, "rope + gqa": dict(positions="rope", n_kv_heads=1)}
    results = variants.compare_variants(chosen, seeds=(0, 1), steps=3, batch=4, length=16,
                                        valid_windows=5)
    assert [(r.seed, r.name) for r in results] == [(0, "sinusoidal"), (0, "rope + gqa"),
                                                   (1, "rope + gqa"), (1, "sinusoidal")]
    for r in results:
        assert r.steps == 3 and r.tokens == 3 * 4 * 16 and r.valid_loss > 0
        g = r.config.n_kv_heads or r.config.n_heads  # K and V · 1 layer · g heads · 16 · 4 · 4 B
        assert r.kv_cache_bytes == 2 * 1 * g * 16 * 4 * 4
    table = variants.summarize(results)
    assert "rope + gqa" in table and "±" in table and "2 KiB" in table and "512 B" in table


def test_variant_results_round_trip_and_the_runs_are_written_and_read(monkeypatch, tmp_path):
    """train_runs writes results.json; load_results reads it back (from a folder, as written;
    the shipped one checked against the manifest); to_dict / from_dict are inverse."""
    import minformer.variants as variants

    monkeypatch.setattr(variants, "MODEL", {**variants.MODEL, "d_model": 16, "d_ff": 32,
                                            "n_layers": 1})
    monkeypatch.setattr(variants, "VARIANTS", {"sinusoidal": {}, "gqa": dict(n_kv_heads=2)})
    real = variants.compare_variants
    monkeypatch.setattr(variants, "compare_variants",
                        lambda seeds, steps: real(seeds=seeds, steps=steps, batch=4, length=16,
                                                  valid_windows=5))
    table = variants.train_runs(tmp_path, seeds=[3], threads=None, steps=2)
    assert "gqa" in table and "total" in table
    results, log = variants.load_results(tmp_path)
    assert [(r.seed, r.name) for r in results] == [(3, "sinusoidal"), (3, "gqa")]
    assert log["seeds"] == [3] and log["steps"] == 2 and log["command"] == variants.REPRODUCE
    for r in results:
        assert variants.VariantResult.from_dict(r.to_dict()) == r
        assert r.config.d_model == 16
    with pytest.raises(ValueError, match=r"a variant result has the fields .*got \{'name'\}"):
        variants.VariantResult.from_dict({"name": "x"})


def test_the_shipped_comparison_loads():
    from minformer.variants import SEEDS, VARIANTS, load_results

    results, log = load_results()
    assert log["seeds"] == list(SEEDS) and log["steps"] == 200
    assert sorted((r.seed, r.name) for r in results) == sorted((s, n) for s in SEEDS for n in VARIANTS)
