"""Tests for minformer.rnn: additive attention and the GRU encoder-decoder."""

import pytest
import torch

from minformer.rnn import AdditiveAttention, GRUDecoderState, Seq2SeqGRU, sequence_loss

PAD, BOS, EOS = 0, 1, 2



def padded_batch(lengths, t_src, vocab=10, seed=0):
    """Random ids in [3, vocab) with PAD after each row's length. Returns src (batch, t_src)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.as_tensor(lengths)
    src = torch.randint(3, vocab, (len(lengths), t_src), generator=g)
    return src.masked_fill(torch.arange(t_src) >= lengths[:, None], PAD)


def reverse_batch(n, L=5, g=None):
    """The reversal task: src (n, L) right-padded, tgt_in = [bos, reversed], tgt_out = [reversed, eos]."""
    lengths = torch.randint(2, L + 1, (n,), generator=g)
    src = torch.randint(3, 10, (n, L), generator=g)
    real = torch.arange(L) < lengths[:, None]  # (n, L)
    src = src.masked_fill(~real, PAD)
    # reversed real part: position j takes source position length-1-j
    idx = (lengths[:, None] - 1 - torch.arange(L)).clamp(min=0)  # (n, L)
    rev = torch.gather(src, 1, idx).masked_fill(~real, PAD)
    tgt_out = torch.cat([rev, torch.full((n, 1), PAD)], dim=1)  # (n, L+1)
    tgt_out[torch.arange(n), lengths] = EOS
    tgt_in = torch.cat([torch.full((n, 1), BOS), rev], dim=1)  # (n, L+1)
    return src, lengths, tgt_in, tgt_out


# ---------------------------------------------------------------------------- AdditiveAttention
def test_additive_attention_matches_formula_and_masks():
    torch.manual_seed(0)
    att = AdditiveAttention(d_query=5, d_key=6, d_attn=7)
    s, H = torch.randn(3, 5), torch.randn(3, 4, 6)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0]], dtype=torch.bool)
    c, a = att(s, H, mask)
    assert c.shape == (3, 6) and a.shape == (3, 4)
    torch.testing.assert_close(a.sum(-1), torch.ones(3))
    assert (a[~mask] == 0).all() and (a[mask] > 0).all()
    # the formula, one query and one key at a time
    for b in range(3):
        e = torch.stack(
            [att.v.weight @ torch.tanh(att.W_q.weight @ s[b] + att.W_k(H[b, j])) for j in range(4)]
        ).squeeze(-1)
        e[~mask[b]] = float("-inf")
        alpha = torch.softmax(e, dim=0)
        torch.testing.assert_close(a[b], alpha)
        torch.testing.assert_close(c[b], alpha @ H[b])
    # padded keys cannot change anything
    H2 = H.clone()
    H2[~mask] = 100.0
    c2, a2 = att(s, H2, mask)
    torch.testing.assert_close(c2, c)
    torch.testing.assert_close(a2, a)
    # precomputed keys give the same result
    c3, _ = att(s, H, mask, keys_proj=att.project_keys(H))
    torch.testing.assert_close(c3, c)


def test_additive_attention_bad_input():
    att = AdditiveAttention(4, 6, 8)
    with pytest.raises(ValueError, match=r"batch.*\(2, 4\).*\(3, 5, 6\)"):
        att(torch.randn(2, 4), torch.randn(3, 5, 6))
    with pytest.raises(ValueError, match="d_key=6"):
        att(torch.randn(2, 4), torch.randn(2, 5, 7))
    with pytest.raises(ValueError, match="d_query=4"):
        att(torch.randn(2, 3), torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match=r"\(2, 5\)"):
        att(torch.randn(2, 4), torch.randn(2, 5, 6), torch.ones(2, 4, dtype=torch.bool))
    mask = torch.ones(2, 5, dtype=torch.bool)
    mask[1] = False
    with pytest.raises(ValueError, match=r"rows \[1\] have no real token"):
        att(torch.randn(2, 4), torch.randn(2, 5, 6), mask)
    with pytest.raises(ValueError, match="d_attn"):
        AdditiveAttention(4, 6, 0)


# ---------------------------------------------------------------------------- Seq2SeqGRU
@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("n_layers", [1, 2])
def test_shapes(attention, n_layers):
    torch.manual_seed(0)
    m = Seq2SeqGRU(
        11, 13, d_emb=8, d_hidden=12, n_layers=n_layers, attention=attention, dropout=0.1
    )
    src = padded_batch([5, 3, 1], t_src=5, vocab=11)
    tgt_in = torch.randint(1, 13, (3, 4))
    logits, A = m(src, torch.tensor([5, 3, 1]), tgt_in, return_attention=True)
    assert logits.shape == (3, 4, 13)
    H, s0, mask = m.encode(src)
    assert H.shape == (3, 5, 24) and s0.shape == (n_layers, 3, 12) and mask.shape == (3, 5)
    if attention:
        assert A.shape == (3, 4, 5)
        torch.testing.assert_close(A.sum(-1), torch.ones(3, 4))
        assert (A[1, :, 3:] == 0).all() and (A[2, :, 1:] == 0).all()
    else:
        assert A is None
    assert m(src, None, tgt_in).shape == (3, 4, 13)  # mask from src != pad_id


@pytest.mark.parametrize("attention", [True, False])
def test_padding_cannot_change_outputs(attention):
    torch.manual_seed(0)
    m = Seq2SeqGRU(10, 10, d_emb=8, d_hidden=12, attention=attention).eval()
    lengths = torch.tensor([6, 4, 2])
    src = padded_batch(lengths, t_src=6)
    tgt_in = torch.randint(1, 10, (3, 5))
    H, s0, mask = m.encode(src, lengths)
    logits = m(src, lengths, tgt_in)
    # whatever the padded positions read as (here: the pad embedding, made random), nothing
    # changes; ids other than PAD past a length are refused, since they may be real tokens
    # that lengths too short would drop silently
    noisy = src.clone()
    noisy[~mask] = torch.randint(3, 10, (int((~mask).sum()),))
    with pytest.raises(ValueError, match="src_lengths gives row 1 4 tokens, but src has the real"):
        m.encode(noisy, lengths)
    with torch.no_grad():
        saved = m.src_emb.weight[PAD].clone()
        m.src_emb.weight[PAD] = torch.randn(8)
    try:
        H2, s02, _ = m.encode(src, lengths)
        torch.testing.assert_close(H2[mask], H[mask])
        assert (H2[~mask] == 0).all()
        torch.testing.assert_close(s02, s0)
        torch.testing.assert_close(m(src, lengths, tgt_in), logits)
    finally:
        with torch.no_grad():
            m.src_emb.weight[PAD] = saved
    # a row alone (no padding at all) gives the same encoder states and logits as inside the batch
    for b, n in enumerate(lengths.tolist()):
        Hb, _, _ = m.encode(src[b : b + 1, :n])
        torch.testing.assert_close(Hb[0], H[b, :n], atol=1e-6, rtol=1e-5)
        torch.testing.assert_close(
            m(src[b : b + 1, :n], None, tgt_in[b : b + 1])[0], logits[b], atol=1e-6, rtol=1e-5
        )
    # mask, lengths and None (src != pad) are three spellings of the same thing
    torch.testing.assert_close(m(src, mask, tgt_in), logits)
    torch.testing.assert_close(m(src, None, tgt_in), logits)


def test_decoder_is_causal_in_the_target():
    torch.manual_seed(0)
    m = Seq2SeqGRU(10, 10, d_emb=8, d_hidden=12).eval()
    src = padded_batch([4, 2], t_src=4)
    tgt_in = torch.randint(1, 10, (2, 6))
    logits = m(src, None, tgt_in)
    changed = tgt_in.clone()
    changed[:, 3:] = PAD  # e.g. target padding
    logits2 = m(src, None, changed)
    torch.testing.assert_close(logits2[:, :3], logits[:, :3])
    assert not torch.allclose(logits2[:, 3:], logits[:, 3:])


def test_sequence_loss_ignores_padding():
    torch.manual_seed(0)
    logits = torch.randn(2, 3, 5)
    tgt = torch.tensor([[3, 4, PAD], [1, PAD, PAD]])
    picked = [(0, 0, 3), (0, 1, 4), (1, 0, 1)]
    expected = torch.stack([-torch.log_softmax(logits[b, t], -1)[y] for b, t, y in picked]).mean()
    torch.testing.assert_close(sequence_loss(logits, tgt), expected)
    with pytest.raises(ValueError, match=r"\(2, 3, 5\).*\(2, 4\)"):
        sequence_loss(logits, torch.zeros(2, 4, dtype=torch.long))


def train_reverse(attention, steps, seed=0):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    m = Seq2SeqGRU(10, 10, d_emb=16, d_hidden=32, attention=attention)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    for _ in range(steps):
        src, lengths, tgt_in, tgt_out = reverse_batch(64, g=g)
        loss = sequence_loss(m(src, lengths, tgt_in), tgt_out)
        opt.zero_grad()
        loss.backward()
        opt.step()
    src, lengths, tgt_in, tgt_out = reverse_batch(300, g=g)  # fresh sequences
    with torch.no_grad():
        logits = m.eval()(src, lengths, tgt_in)
    real = tgt_out != PAD
    acc = (logits.argmax(-1) == tgt_out)[real].float().mean().item()
    return m, sequence_loss(logits, tgt_out).item(), acc, (src, lengths, tgt_out)


def test_learns_to_reverse_and_beats_the_bottleneck():
    m, loss, acc, (src, lengths, tgt_out) = train_reverse(attention=True, steps=100)
    assert acc > 0.95, f"attention model reached only {acc:.3f} token accuracy"
    _, loss_nb, _, _ = train_reverse(attention=False, steps=100)
    assert loss_nb < 1.5, f"bottleneck model did not learn at all (loss {loss_nb:.2f}; ln 7 = 1.95)"
    assert loss < loss_nb, "attention should learn the reversal faster than the bottleneck"
    # greedy decoding reproduces the reversed sequences and stops at eos
    ids, A = m.greedy_decode(src, lengths, BOS, EOS, max_len=10, return_attention=True)
    assert ids.shape[1] < 10, "decoding should stop once every row has emitted eos"
    stops = (ids == EOS).int().argmax(dim=1)  # position of the first eos
    assert (stops == lengths).float().mean() > 0.9, "eos should follow the reversed tokens"
    width = tgt_out.shape[1]  # 6: five tokens and eos
    out = torch.nn.functional.pad(ids, (0, max(0, width - ids.shape[1])), value=PAD)[:, :width]
    exact = (out == tgt_out).all(dim=1).float().mean().item()
    assert exact > 0.8, f"only {exact:.2f} of the sequences decoded exactly"
    # the alignment is the anti-diagonal: output step 0 looks at the last real source token
    top = A[:, 0].argmax(-1)
    assert (top == lengths - 1).float().mean() > 0.8


def test_greedy_decode_stops_at_eos_and_pads():
    torch.manual_seed(0)
    m = Seq2SeqGRU(10, 10, d_emb=8, d_hidden=12)
    src = padded_batch([4, 2], t_src=4)
    with torch.no_grad():
        m.out.bias.fill_(-1e4)
        m.out.bias[EOS] = 1e4  # eos always wins
    ids = m.greedy_decode(src, None, BOS, EOS, max_len=7)
    assert ids.tolist() == [[EOS], [EOS]]
    with torch.no_grad():
        m.out.bias.fill_(-1e4)
        m.out.bias[5] = 1e4  # eos never wins
    ids, A = m.greedy_decode(src, None, BOS, EOS, max_len=7, return_attention=True)
    assert ids.shape == (2, 7) and (ids == 5).all() and A.shape == (2, 7, 4)


def test_greedy_decode_agrees_with_teacher_forcing():
    torch.manual_seed(0)
    for attention in (True, False):
        m = Seq2SeqGRU(10, 10, d_emb=8, d_hidden=12, attention=attention, dropout=0.3).train()
        src = padded_batch([4, 3, 2], t_src=4, seed=1)
        ids = m.greedy_decode(src, None, BOS, EOS, max_len=6)
        assert m.training, "greedy_decode must restore training mode"
        first_eos = [row.index(EOS) if EOS in row else len(row) for row in ids.tolist()]
        for b, row in enumerate(ids.tolist()):
            assert all(t == PAD for t in row[first_eos[b] + 1 :])
        tgt_in = torch.cat([torch.full((3, 1), BOS), ids[:, :-1]], dim=1)
        with torch.no_grad():
            logits = m.eval()(src, None, tgt_in)
        pred = logits.argmax(-1)
        for b in range(3):
            n = min(first_eos[b] + 1, ids.shape[1])
            assert pred[b, :n].tolist() == ids[b, :n].tolist()


def test_bad_input_errors():
    m = Seq2SeqGRU(10, 12, d_emb=8, d_hidden=12)
    src = padded_batch([4, 2], t_src=4)
    tgt = torch.randint(1, 12, (2, 3))
    with pytest.raises(ValueError, match=r"batch.*\(2, 4\).*\(3, 3\)"):
        m(src, None, torch.randint(1, 12, (3, 3)))
    with pytest.raises(ValueError, match=r"t_src=4.*\(2, 4\).*5"):
        m(src, torch.tensor([5, 2]), tgt)
    with pytest.raises(ValueError, match=r"\(2,\)"):
        m(src, torch.tensor([4, 2, 1]), tgt)
    with pytest.raises(ValueError, match=r"rows \[1\] have none"):
        m(src, torch.tensor([4, 0]), tgt)
    with pytest.raises(ValueError, match=r"\(2, 4\).*\(2, 3\)"):
        m(src, torch.ones(2, 3, dtype=torch.bool), tgt)
    with pytest.raises(ValueError, match="prefix"):
        m(src, torch.tensor([[True, False, True, True], [True, True, False, False]]), tgt)
    with pytest.raises(TypeError, match=r"src must be an integer tensor.*float32 with shape "
                                        r"\(2, 4\)"):
        m(src.float(), None, tgt)
    with pytest.raises(TypeError, match=r"src must be an integer tensor.*torch.bool"):
        m(src.bool(), None, tgt)  # a bool tensor is not a tensor of ids 0 and 1
    with pytest.raises(ValueError, match=r"src must be an integer tensor \(batch, t\), got \(8,\)"):
        m(src.flatten(), None, tgt)
    with pytest.raises(ValueError, match=r"tgt_in ids must lie in \[0, 12\)"):
        m(src, None, torch.full((2, 3), 12))
    with pytest.raises(ValueError, match=r"src ids must lie in \[0, 10\)"):
        m(torch.full((2, 4), 10), None, tgt)
    with pytest.raises(ValueError, match="max_len"):
        m.greedy_decode(src, None, BOS, EOS, max_len=0)
    with pytest.raises(ValueError, match="eos_id=12"):
        m.greedy_decode(src, None, BOS, 12)
    with pytest.raises(ValueError, match="dropout"):
        Seq2SeqGRU(10, 10, 8, 8, dropout=1.0)
    with pytest.raises(ValueError, match="pad_id"):
        Seq2SeqGRU(10, 10, 8, 8, pad_id=10)


# ---------------------------------------------------------------------------- the Transformer's interface

@pytest.mark.parametrize("attention", [True, False])
def test_decode_interface_equals_forward(attention):
    """source_mask / encode / decode, as on Transformer: decode(tgt, encode(src)) is forward."""
    torch.manual_seed(0)
    m = Seq2SeqGRU(10, 12, d_emb=8, d_hidden=12, attention=attention).eval()
    src = padded_batch([4, 2, 3], t_src=4)
    tgt = torch.randint(1, 12, (3, 5))
    mask = m.source_mask(src)
    memory = m.encode(src, mask)
    assert torch.equal(m.decode(tgt, memory, mask), m(src, None, tgt))
    assert torch.equal(m.decode(tgt, memory), m(src, None, tgt))  # the mask inside memory
    # a prefix's logits do not depend on what comes after it: the whole prefix is decoded each time
    assert torch.equal(m.decode(tgt[:, :2], memory, mask), m.decode(tgt, memory, mask)[:, :2])
    logits, weights = m.decode(tgt, memory, mask, return_attention=True)
    assert logits.shape == (3, 5, 12) and (weights is None) == (not attention)


def test_decode_interface_bad_input():
    m = Seq2SeqGRU(10, 12, d_emb=8, d_hidden=12)
    src = padded_batch([4, 2], t_src=4)
    memory = m.encode(src)
    tgt = torch.randint(1, 12, (2, 3))
    with pytest.raises(ValueError, match=r"memory must be the \(H, s0, mask\) that encode returned; got Tensor"):
        m.decode(tgt, memory[0])
    with pytest.raises(ValueError, match=r"memory and tgt disagree on batch: H \(2, 4, 24\), tgt \(3, 3\)"):
        m.decode(torch.randint(1, 12, (3, 3)), memory)
    with pytest.raises(ValueError, match=r"src_mask must be the bool \(batch, t_src\) = \(2, 4\) mask"):
        m.decode(tgt, memory, m.source_mask(src)[:, None, None, :])
    with pytest.raises(ValueError, match=r"tgt ids must lie in \[0, 12\)"):
        m.decode(torch.full((2, 3), 12), memory)


@pytest.mark.parametrize("attention", [True, False])
def test_the_decoder_state_continues_where_the_prefix_left_off(attention):
    """decode with a cache (GRUDecoderState), fed one token at a time, gives the logits that
    re-reading the whole prefix gives, to rounding; reorder follows the rows."""
    torch.manual_seed(0)
    m = Seq2SeqGRU(10, 12, d_emb=8, d_hidden=12, n_layers=2, attention=attention).eval()
    src = padded_batch([4, 2, 3], t_src=4)
    tgt = torch.randint(1, 12, (3, 5))
    memory = m.encode(src)
    whole = m.decode(tgt, memory)  # (3, 5, 12)
    cache = m.new_cache()
    assert isinstance(cache, GRUDecoderState) and cache.length == 0 and cache.nbytes == 0
    steps = [m.decode(tgt[:, i:i + 1], memory, cache=cache) for i in range(5)]
    torch.testing.assert_close(torch.cat(steps, dim=1), whole, rtol=1e-5, atol=1e-6)
    assert cache.length == 5 and cache.s.shape == (2, 3, 12)
    assert cache.nbytes == 4 * (2 * 3 * 12 + (3 * 4 * m.attn.W_k.out_features if attention else 0))
    # two tokens at once continue the same way as one at a time
    cache2 = m.new_cache()
    torch.testing.assert_close(torch.cat([m.decode(tgt[:, :2], memory, cache=cache2),
                                          m.decode(tgt[:, 2:], memory, cache=cache2)], dim=1),
                               whole, rtol=1e-5, atol=1e-6)
    # rows reordered (beam search): row i continues the state of row index[i]
    index = torch.tensor([2, 2, 0])
    cache3 = m.new_cache()
    m.decode(tgt[:, :3], memory, cache=cache3)
    cache3.reorder(index)
    H, s0, mask = memory
    moved = (H[index], s0[:, index], mask[index])
    torch.testing.assert_close(m.decode(tgt[index, 3:], moved, cache=cache3),
                               whole[index, 3:], rtol=1e-5, atol=1e-6)


def test_searches_give_the_same_tokens_with_and_without_the_decoder_state():
    from minformer.decode import beam_search, greedy_search

    torch.manual_seed(0)
    for attention in (True, False):
        m = Seq2SeqGRU(50, 60, d_emb=16, d_hidden=32, n_layers=2, attention=attention, pad_id=0).eval()
        src = torch.randint(3, 50, (7, 9))
        src[2, 5:] = 0
        src[4, 3:] = 0
        assert torch.equal(greedy_search(m, src, 15, 1, 2, use_cache=True),
                           greedy_search(m, src, 15, 1, 2, use_cache=False))
        assert torch.equal(beam_search(m, src, 4, 15, 1, 2, length_penalty=0.6, use_cache=True),
                           beam_search(m, src, 4, 15, 1, 2, length_penalty=0.6, use_cache=False))


def test_the_decoder_state_refuses_what_does_not_fit():
    m = Seq2SeqGRU(10, 12, d_emb=8, d_hidden=12)
    memory = m.encode(padded_batch([4, 2], t_src=4))
    with pytest.raises(TypeError, match="cache must be a GRUDecoderState .*got dict"):
        m.decode(torch.ones(2, 1, dtype=torch.long), memory, cache={})
    cache = m.new_cache()
    m.decode(torch.ones(2, 1, dtype=torch.long), memory, cache=cache)
    with pytest.raises(ValueError, match="the cache holds 2 sequences but tgt has 3; reorder it"):
        m.decode(torch.ones(3, 1, dtype=torch.long), m.encode(padded_batch([4, 2, 1], t_src=4)),
                 cache=cache)
    with pytest.raises(TypeError, match=r"index must be a \(batch,\) tensor of row numbers"):
        cache.reorder(torch.tensor([0.0, 1.0]))


# ---------------------------------------------------------------------------- GRULanguageModel
from minformer.rnn import GRULanguageModel  # noqa: E402


@pytest.mark.parametrize("cutoffs", [None, [4, 9]])
@pytest.mark.parametrize("n_layers", [1, 2])
def test_gru_lm_shapes_and_normalized(cutoffs, n_layers):
    torch.manual_seed(0)
    lm = GRULanguageModel(20, d_emb=6, d_hidden=8, n_layers=n_layers, cutoffs=cutoffs,
                          div_value=2.0)
    ids = torch.randint(0, 20, (3, 5))
    states, h = lm(ids)
    assert states.shape == (3, 5, 8) and h.shape == (n_layers, 3, 8)
    lp, _ = lm.log_probs(ids)
    assert lp.shape == (3, 5, 20)
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(3, 5))
    targets = torch.randint(0, 20, (3, 5))
    nll, h2 = lm.nll(ids, targets)
    assert nll.shape == (3, 5) and (nll > 0).all()
    torch.testing.assert_close(nll, -lp.gather(-1, targets[..., None])[..., 0])
    torch.testing.assert_close(h2, h)


def test_gru_lm_state_carries_over_chunks():
    """Truncated BPTT: two chunks with the state passed on give the states of one pass."""
    torch.manual_seed(0)
    lm = GRULanguageModel(12, d_emb=5, d_hidden=8, cutoffs=[3, 6], div_value=2.0)
    ids = torch.randint(0, 12, (2, 9))
    whole, _ = lm(ids)
    first, h = lm(ids[:, :4])
    second, _ = lm(ids[:, 4:], h.detach())
    torch.testing.assert_close(torch.cat([first, second], 1), whole)


def test_gru_lm_learns_a_cycle_and_sparse_parameters():
    torch.manual_seed(0)
    lm = GRULanguageModel(10, d_emb=8, d_hidden=16, cutoffs=[4], sparse=True)
    n_dense = sum(p.numel() for p in lm.dense_parameters())
    assert n_dense == sum(p.numel() for p in lm.parameters()) - lm.embed.weight.numel()
    opt = torch.optim.Adam(lm.dense_parameters(), lr=1e-2)
    sopt = torch.optim.SparseAdam([lm.embed.weight], lr=1e-2)
    stream = torch.arange(60) % 10                    # 0 1 2 … 9 0 1 …
    x, y = stream[:-1].view(1, -1), stream[1:].view(1, -1)
    for _ in range(150):
        loss = lm.nll(x, y)[0].mean()
        opt.zero_grad()
        sopt.zero_grad()
        loss.backward()
        opt.step()
        sopt.step()
    assert loss.item() < 0.1


def test_gru_lm_bad_input():
    lm = GRULanguageModel(10, d_emb=4, d_hidden=6, n_layers=2)
    ids = torch.zeros(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match=r"ids must hold ids in \[0, 10\)"):
        lm(torch.full((2, 3), 10))
    with pytest.raises(TypeError, match="integer ids"):
        lm(torch.zeros(2, 3))
    with pytest.raises(ValueError, match=r"\(batch, t\)"):
        lm(torch.zeros(3, dtype=torch.long))
    with pytest.raises(TypeError, match="torch tensor"):
        lm([[1, 2]])
    with pytest.raises(ValueError, match=r"\(n_layers, batch, d_hidden\) = \(2, 2, 6\)"):
        lm(ids, torch.zeros(1, 2, 6))
    with pytest.raises(ValueError, match="same shape"):
        lm.nll(ids, torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="strictly increasing"):
        GRULanguageModel(10, 4, 6, cutoffs=[5, 3])
    with pytest.raises(ValueError, match="strictly increasing"):
        GRULanguageModel(10, 4, 6, cutoffs=[10])
    with pytest.raises(TypeError, match="d_hidden must be an int"):
        GRULanguageModel(10, 4, 6.0)
    with pytest.raises(ValueError, match="vocab_size must be at least 2"):
        GRULanguageModel(1, 4, 6)
