"""The KV cache: incremental decoding (only the new tokens fed, earlier keys and values reused)
gives the logits of the full decoder to rounding and the same tokens in greedy search, beam search
and generation; positions are offset by the cache length; beams re-order the cache; models
without a cache fall back; bad input is refused."""

import pytest
import torch

from minformer.blocks import LayerCache
from minformer.decode import beam_search, generate, greedy_search, sequence_scores
from minformer.multihead import AttentionCache, MultiHeadAttention
from minformer.positional import LearnedPositions, SinusoidalPositions
from minformer.rnn import Seq2SeqGRU
from minformer.transformer import DecoderOnly, EncoderOnly, KVCache, Transformer, TransformerConfig

PAD, BOS, EOS = 0, 1, 2
V = 17

VARIANTS = [dict(norm_first=False), dict(norm_first=True),
            dict(norm_first=True, positions="learned", n_heads=4),
            dict(norm_first=False, tie_embeddings=False, n_decoder_layers=3, activation="gelu")]


def config(**kw):
    base = dict(vocab_size=V, d_model=24, n_heads=2, d_ff=40, n_layers=2, dropout=0.0,
                max_len=40)
    return TransformerConfig(**{**base, **kw})


def model_of(cls, seed, **kw):
    torch.manual_seed(seed)
    model = cls(config(**kw)).eval()
    if kw.get("positions") == "learned":  # N(0, 0.02²) would hide a position offset bug
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, LearnedPositions):
                    m.weight.normal_()
    return model


def sources(seed, batch=5, t=7):
    """Random ids ≥ 3 of odd length, right-padded to different lengths."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, V, (batch, t), generator=g)
    for b in range(batch):
        src[b, t - b % 4:] = PAD
    return src


def decode_in_pieces(model, tgt, memory, src_mask, pieces):
    """Feed tgt to the cache in pieces of the given sizes; concatenate the logits."""
    cache, out, start = model.new_cache(), [], 0
    for n in pieces:
        out.append(model.decode(tgt[:, start:start + n], memory, src_mask, cache=cache))
        start += n
    assert cache.length == start
    return torch.cat(out, dim=1)


# ----------------------------------------------------------------------------- logits

@pytest.mark.parametrize("kw", VARIANTS)
def test_cached_logits_equal_the_full_decoders(kw):
    for seed in range(3):
        model, src = model_of(Transformer, seed, **kw), sources(seed)
        tgt = torch.cat([torch.full((5, 1), BOS), sources(seed + 10, t=10)], dim=1)  # padded
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        full = model.decode(tgt, memory, src_mask)  # (5, 11, V)
        for pieces in ([1] * 11, [4, 1, 1, 5], [11]):
            torch.testing.assert_close(decode_in_pieces(model, tgt, memory, src_mask, pieces),
                                       full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kw", VARIANTS[:3])
def test_decoder_only_cached_logits_equal_the_full_models(kw):
    model = model_of(DecoderOnly, 5, **kw)
    ids = sources(5, t=13)
    ids[:, 0] = BOS
    full = model(ids)
    cache = model.new_cache()
    steps = [model(ids[:, :6], cache=cache)] + [model(ids[:, i:i + 1], cache=cache)
                                                 for i in range(6, 13)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_a_wrong_position_offset_would_be_caught():
    """The check above is not vacuous: feeding the new token at position 0 changes the logits."""
    model, src = model_of(Transformer, 0), sources(0)
    tgt = torch.tensor([[BOS, 5, 6, 7]] * 5)
    memory = model.encode(src)
    full = model.decode(tgt, memory, model.source_mask(src))
    cache = model.new_cache()
    model.decode(tgt[:, :3], memory, model.source_mask(src), cache=cache)
    model.tgt_embed.positions.forward = lambda x, start=0: SinusoidalPositions.forward(
        model.tgt_embed.positions, x, 0)
    wrong = model.decode(tgt[:, 3:], memory, model.source_mask(src), cache=cache)
    assert (wrong[:, 0] - full[:, 3]).abs().max() > 1e-3


def test_cross_attention_weights_with_the_cache_are_the_last_rows_of_the_full_ones():
    model, src = model_of(Transformer, 2, norm_first=True), sources(2)
    tgt = torch.tensor([[BOS, 4, 9, 3, 5]] * 5)
    memory = model.encode(src)
    _, full = model.decode(tgt, memory, model.source_mask(src), need_weights=True)
    cache = model.new_cache()
    model.decode(tgt[:, :4], memory, model.source_mask(src), cache=cache)
    _, last = model.decode(tgt[:, 4:], memory, model.source_mask(src), need_weights=True,
                           cache=cache)
    for A_full, A_last in zip(full, last):
        torch.testing.assert_close(A_last, A_full[:, :, 4:], atol=1e-6, rtol=1e-5)


def test_the_memory_is_projected_once():
    model, src = model_of(Transformer, 0), sources(0)
    memory, src_mask = model.encode(src), model.source_mask(src)
    calls = []
    for layer in model.decoder.layers:
        proj = layer.cross_attn._project
        layer.cross_attn._project = lambda *a, proj=proj: calls.append(1) or proj(*a)
    cache = model.new_cache()
    for tok in (BOS, 5, 6, 7):
        model.decode(torch.full((5, 1), tok), memory, src_mask, cache=cache)
    assert len(calls) == len(model.decoder.layers)  # one per layer, not one per step
    assert cache.layers[0].cross_attn.length == src.shape[1]
    assert cache.layers[0].self_attn.length == 4


def test_positions_with_an_offset_are_the_slice_of_the_full_table():
    x = torch.randn(2, 3, 8)
    for pos in (SinusoidalPositions(10, 8), LearnedPositions(10, 8)):
        full = pos(torch.zeros(2, 10, 8))
        torch.testing.assert_close(pos(x, start=4), x + full[:, 4:7])
        with pytest.raises(ValueError, match=r"positions 8 … 10 is longer than max_len=10"):
            pos(x, start=8)
        with pytest.raises(ValueError, match="start must be an int ≥ 0; got -1"):
            pos(x, start=-1)


# ----------------------------------------------------------------------------- reorder

def test_reorder_follows_the_rows():
    """A cache re-ordered by index continues exactly as a cache built on the re-ordered rows."""
    model, src = model_of(Transformer, 3, norm_first=True), sources(3)
    tgt = torch.cat([torch.full((5, 1), BOS), sources(30, t=4)], dim=1)
    index = torch.tensor([4, 4, 0, 2, 1])
    src_mask = model.source_mask(src)
    memory = model.encode(src, src_mask)
    cache = model.new_cache()
    model.decode(tgt[:, :4], memory, src_mask, cache=cache)
    cache.reorder(index)
    got = model.decode(tgt[index, 4:], memory[index], src_mask[index], cache=cache)
    want = model.decode(tgt[index], memory[index], src_mask[index])[:, 4:]
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)


def test_attention_cache_append_and_reorder():
    cache = AttentionCache()
    K, V_ = torch.randn(3, 2, 4, 5), torch.randn(3, 2, 4, 5)
    cache.append(K[:, :, :3], V_[:, :, :3])
    cache.append(K[:, :, 3:], V_[:, :, 3:])
    assert cache.length == 4 and torch.equal(cache.K, K) and torch.equal(cache.V, V_)
    cache.reorder(torch.tensor([2, 0]))
    assert torch.equal(cache.K, K[[2, 0]]) and torch.equal(cache.V, V_[[2, 0]])
    static = AttentionCache(static=True)
    static.append(K, V_)
    static.append(K[:, :, :1], V_[:, :, :1])  # a static cache is replaced, never grown
    assert static.length == 1


def test_multihead_attention_with_a_cache_equals_causal_attention():
    torch.manual_seed(0)
    mha = MultiHeadAttention(12, 3).eval()
    x = torch.randn(2, 6, 12)
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    full = mha(x, mask=causal)
    cache = AttentionCache()
    steps = [mha(x[:, :2], mask=causal[:2, :2], cache=cache)]
    steps += [mha(x[:, i:i + 1], cache=cache) for i in range(2, 6)]  # one query sees all keys
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-6, rtol=1e-5)


# ----------------------------------------------------------------------------- searches

def recording(model):
    """Wrap model.decode to record the number of target tokens it is given at each call."""
    sizes, decode = [], model.decode

    def wrapped(tgt, *args, **kw):
        sizes.append(tgt.shape[1])
        return decode(tgt, *args, **kw)

    model.decode = wrapped
    return sizes


@pytest.mark.parametrize("kw", VARIANTS)
def test_greedy_search_gives_the_same_tokens_with_and_without_the_cache(kw):
    for seed in range(4):
        model, src = model_of(Transformer, seed, **kw), sources(seed, batch=7, t=5 + seed)
        sizes = recording(model)
        cached = greedy_search(model, src, 21, BOS, EOS)
        assert set(sizes) == {1}, "the cached search fed more than the newest token"
        reference = greedy_search(model, src, 21, BOS, EOS, use_cache=False)
        assert max(sizes) > 1
        assert torch.equal(cached, reference)


@pytest.mark.parametrize("kw", VARIANTS)
@pytest.mark.parametrize("k", [1, 3, 5])
def test_beam_search_gives_the_same_tokens_and_scores_with_and_without_the_cache(kw, k):
    for seed in range(3):
        model, src = model_of(Transformer, seed, **kw), sources(seed, batch=4, t=9)
        for alpha in (0.0, 0.6):
            ids, scores = beam_search(model, src, k, 15, BOS, EOS, length_penalty=alpha,
                                      return_scores=True)
            ref, ref_scores = beam_search(model, src, k, 15, BOS, EOS, length_penalty=alpha,
                                          return_scores=True, use_cache=False)
            assert torch.equal(ids, ref), (seed, alpha)
            torch.testing.assert_close(scores, ref_scores, atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(
                scores, sequence_scores(model, src, ids, BOS, EOS, alpha), atol=1e-4, rtol=1e-4)


def test_a_trained_models_beams_with_the_cache_are_the_reference_beams():
    """A peaked (trained-like) model: make the searches run long, with many beam re-orderings."""
    model, src = model_of(Transformer, 7, norm_first=True), sources(7, batch=6, t=9)
    with torch.no_grad():
        model.src_embed.weight.mul_(4.0)  # sharper logits
    for k in (3, 5):
        assert torch.equal(beam_search(model, src, k, 30, BOS, EOS, length_penalty=1.0),
                           beam_search(model, src, k, 30, BOS, EOS, length_penalty=1.0,
                                       use_cache=False))


@pytest.mark.parametrize("kw", VARIANTS[:3])
def test_generate_gives_the_same_tokens_with_and_without_the_cache(kw):
    for seed in range(3):
        model = model_of(DecoderOnly, seed, **kw)
        prompt = sources(seed, batch=3, t=5)
        prompt[:, 0] = BOS
        for sampling in (dict(greedy=True), dict(temperature=0.8), dict(top_k=5)):
            outs = []
            for use_cache in (True, False):
                g = torch.Generator().manual_seed(seed)
                outs.append(generate(model, prompt, 23, generator=g, use_cache=use_cache,
                                     **sampling))
            assert torch.equal(*outs), sampling


def test_generate_past_max_len_slides_the_window_with_or_without_the_cache():
    model = model_of(DecoderOnly, 1)  # max_len 40
    prompt = torch.tensor([[BOS, 5, 6, 7, 8, 9, 10]])
    cached = generate(model, prompt, 50, greedy=True, eos_id=EOS)
    assert torch.equal(cached, generate(model, prompt, 50, greedy=True, eos_id=EOS,
                                        use_cache=False))


class UncachedGRU(Seq2SeqGRU):
    """A model that declares no cache (Seq2SeqGRU itself keeps its decoder state)."""

    supports_cache = False


@pytest.mark.parametrize("attention", [True, False])
def test_a_model_without_a_cache_takes_the_reference_path(attention):
    torch.manual_seed(0)
    gru = UncachedGRU(V, V, d_emb=8, d_hidden=16, attention=attention)
    src = sources(0)
    assert not getattr(gru, "supports_cache", False)
    assert torch.equal(greedy_search(gru, src, 9, BOS, EOS),
                       greedy_search(gru, src, 9, BOS, EOS, use_cache=False))
    assert torch.equal(beam_search(gru, src, 3, 9, BOS, EOS),
                       beam_search(gru, src, 3, 9, BOS, EOS, use_cache=False))


# ----------------------------------------------------------------------------- bad input

def test_bad_caches_are_refused():
    model, src = model_of(Transformer, 0), sources(0)
    memory, tgt = model.encode(src), torch.full((5, 1), BOS)
    with pytest.raises(TypeError, match="cache must be a KVCache"):
        model.decode(tgt, memory, cache=[LayerCache()] * 2)
    with pytest.raises(ValueError, match="cache has 3 layers; this model has 2"):
        model.decode(tgt, memory, cache=KVCache(3, cross=True))
    cache = model.new_cache()
    model.decode(tgt, memory, cache=cache)
    with pytest.raises(ValueError, match="the cache holds 5 sequences but the new tokens have 2"):
        model.decode(tgt[:2], memory[:2], cache=cache)
    with pytest.raises(ValueError, match="positions 1 … 40 is longer than max_len=40"):
        model.decode(torch.full((5, 40), 5), memory, cache=cache)
    with pytest.raises(ValueError, match="a decoder layer needs a LayerCache"):
        model.decode(tgt, memory, cache=DecoderOnly(config()).new_cache())
    with pytest.raises(TypeError, match="index must be a"):
        cache.reorder([0, 1])
    with pytest.raises(TypeError, match="EncoderOnly has no KV cache"):
        EncoderOnly(config())(tgt, cache=KVCache(2, cross=False))
    with pytest.raises(TypeError, match="use_cache must be True or False; got 1"):
        greedy_search(model, src, 5, BOS, EOS, use_cache=1)
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match="cache must be an AttentionCache"):
        mha(torch.randn(1, 2, 8), cache={})
    with pytest.raises(ValueError, match="a cache needs batched"):
        mha(torch.randn(2, 8), cache=AttentionCache())
    with pytest.raises(ValueError, match="static .* needs x_kv"):
        mha(torch.randn(1, 2, 8), cache=AttentionCache(static=True))
