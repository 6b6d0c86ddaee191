"""minformer.decode for encoder-decoders: greedy and beam search through source_mask/encode/decode,
on Transformer and Seq2SeqGRU alike — beam 1 is greedy, a wide beam finds the best sequence,
<eos> ends a sentence, the length penalty, a learned task decoded exactly, and bad input."""

import itertools
import math

import pytest
import torch

from minformer.decode import (
    _MAX_LOG_PENALTY,
    beam_search,
    generate,
    gnmt_length_penalty,
    greedy_search,
    loop_tokens,
    sample_next,
    sequence_scores,
)
from minformer.rnn import Seq2SeqGRU
from minformer.train import sequence_loss, train
from minformer.transformer import DecoderOnly, Transformer, TransformerConfig

PAD, BOS, EOS = 0, 1, 2
V = 15


def transformer(seed=0, vocab=V, **kw):
    torch.manual_seed(seed)
    cfg = dict(vocab_size=vocab, d_model=16, n_heads=2, d_ff=32, n_layers=2, dropout=0.0, max_len=32)
    return Transformer(TransformerConfig(**{**cfg, **kw}))


def gru(seed=0, attention=True, vocab=V):
    torch.manual_seed(seed)
    return Seq2SeqGRU(vocab, vocab, d_emb=8, d_hidden=16, attention=attention)


MODELS = {"transformer": transformer, "gru": gru, "gru-no-attention": lambda seed=0: gru(seed, attention=False)}


def sources(seed=0, batch=6, t=6, vocab=V):
    """Random source ids ≥ 3, rows right-padded to different lengths."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, vocab, (batch, t), generator=g)
    for b in range(batch):
        src[b, t - b % 3:] = PAD
    return src


# ----------------------------------------------------------------------------- greedy = beam 1

@pytest.mark.parametrize("kind", MODELS)
def test_beam_of_one_equals_greedy(kind):
    for seed in range(4):
        model, src = MODELS[kind](seed), sources(seed)
        greedy = greedy_search(model, src, 10, BOS, EOS)
        for alpha in (0.0, 0.6):
            assert torch.equal(beam_search(model, src, 1, 10, BOS, EOS, length_penalty=alpha), greedy)


@pytest.mark.parametrize("attention", [True, False])
def test_greedy_search_equals_the_grus_own_greedy_decode(attention):
    model, src = gru(3, attention), sources(3)
    assert torch.equal(greedy_search(model, src, 9, BOS, EOS), model.greedy_decode(src, None, BOS, EOS, max_len=9))


def test_greedy_search_equals_token_by_token_argmax_of_each_sentence_alone():
    model, src = transformer(1), sources(1)
    out = greedy_search(model, src, 8, BOS, EOS)
    for b in range(src.shape[0]):
        n = int((src[b] != PAD).sum())
        alone = greedy_search(model, src[b:b + 1, :n], 8, BOS, EOS)[0]  # no padding, batch of one
        assert torch.equal(out[b, :len(alone)], alone) and (out[b, len(alone):] == PAD).all()


# ----------------------------------------------------------------------------- beam search finds better sequences

@pytest.mark.parametrize("kind", MODELS)
def test_returned_scores_are_the_length_penalized_log_probabilities(kind):
    model, src = MODELS[kind](2), sources(2)
    for alpha in (0.0, 1.0):
        ids, scores = beam_search(model, src, 4, 10, BOS, EOS, length_penalty=alpha, return_scores=True)
        assert torch.allclose(scores, sequence_scores(model, src, ids, BOS, EOS, alpha), atol=1e-4)


def brute_force_best(model, src, max_len, alpha):
    """The best score over every output of at most max_len tokens (ending at <eos> or at max_len)."""
    vocab = model.config.vocab_size
    outputs = []
    for n in range(1, max_len + 1):
        for body in itertools.product(range(vocab), repeat=n - 1):
            if EOS in body:
                continue
            outputs += [list(body) + [tok] + [PAD] * (max_len - n) for tok in range(vocab)
                        if tok == EOS or n == max_len]
    ids = torch.tensor(outputs)  # (candidates, max_len)
    best = []
    for b in range(src.shape[0]):
        rows = src[b:b + 1].expand(len(ids), -1)
        best.append(sequence_scores(model, rows, ids, BOS, EOS, alpha).max())
    return torch.stack(best)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_a_beam_as_wide_as_every_prefix_finds_the_best_sequence(alpha):
    """With k ≥ vocab^(max_len-1) no prefix is ever pruned: beam search is exhaustive, so it must
    match brute force, and so score at least as well as greedy."""
    vocab, max_len = 5, 3
    model, src = transformer(4, vocab=vocab), sources(4, batch=3, vocab=vocab)
    ids, scores = beam_search(model, src, vocab ** (max_len - 1), max_len, BOS, EOS, length_penalty=alpha,
                              return_scores=True)
    assert torch.allclose(scores, brute_force_best(model, src, max_len, alpha), atol=1e-5)
    greedy = sequence_scores(model, src, greedy_search(model, src, max_len, BOS, EOS), BOS, EOS, alpha)
    assert (scores >= greedy - 1e-5).all()


@pytest.mark.parametrize("kind", MODELS)
def test_beam_search_scores_at_least_as_well_as_greedy_almost_always(kind):
    """Beam search is not guaranteed to beat greedy (the greedy prefix can fall out of the beam and
    the survivors end badly), but on random models it almost always does, and on average."""
    worse = total = 0
    gain = 0.0
    for seed in range(5):
        model, src = MODELS[kind](seed), sources(seed, batch=8)
        for alpha in (0.0, 0.6):
            _, beam = beam_search(model, src, 4, 10, BOS, EOS, length_penalty=alpha, return_scores=True)
            greedy = sequence_scores(model, src, greedy_search(model, src, 10, BOS, EOS), BOS, EOS, alpha)
            worse += int((beam < greedy - 1e-5).sum())
            total += len(beam)
            gain += float((beam - greedy).sum())
    assert worse <= total // 20, f"beam worse than greedy on {worse} of {total} sentences"
    assert gain > 0


class Scripted(torch.nn.Module):
    """A fake encoder-decoder whose next-token log-probabilities are a fixed table of the prefix:
    table[tuple(prefix after <bos>)] = {token: probability}; anything else → uniform over tokens 3, 4."""

    vocab = 6

    def __init__(self, table, pad_id=PAD):
        super().__init__()
        self.table, self.pad_id, self.calls = table, pad_id, 0

    def source_mask(self, src):
        return src != self.pad_id

    def encode(self, src, src_mask):
        return src.float()

    def decode(self, tgt, memory, src_mask):
        self.calls += 1
        logits = torch.full((tgt.shape[0], tgt.shape[1], self.vocab), -1e9)
        for b, i in itertools.product(range(tgt.shape[0]), range(tgt.shape[1])):
            probs = self.table.get(tuple(tgt[b, 1:i + 1].tolist()), {3: 0.5, 4: 0.5})
            for tok, p in probs.items():
                logits[b, i, tok] = math.log(p)
        return logits


def test_beam_search_finds_what_greedy_misses_and_the_length_penalty_changes_the_winner():
    # greedy takes 3 (0.6) and ends "3 eos" with P = 0.6 · 0.5 = 0.30; "eos" alone has P = 0.4
    table = {(): {3: 0.6, EOS: 0.4}, (3,): {EOS: 0.5, 4: 0.5}, (3, 4): {EOS: 0.5, 3: 0.5}}
    model, src = Scripted(table), torch.tensor([[5, 5]])
    assert greedy_search(model, src, 5, BOS, EOS).tolist() == [[3, EOS]]
    ids, score = beam_search(model, src, 2, 5, BOS, EOS, return_scores=True)
    assert ids.tolist() == [[EOS]] and score.item() == pytest.approx(math.log(0.4), abs=1e-6)
    # α = 2 divides log 0.3 by ((5 + 2) / 6)² = 1.36 (−0.885), above log 0.4 (−0.916): the longer one wins
    ids, score = beam_search(model, src, 2, 5, BOS, EOS, length_penalty=2.0, return_scores=True)
    assert ids.tolist() == [[3, EOS]]
    assert score.item() == pytest.approx(math.log(0.3) / gnmt_length_penalty(2, 2.0), abs=1e-6)


def test_a_finished_output_pushed_out_of_the_beam_is_still_returned():
    """"<eos>" alone (P 0.2) is finished at step 1; at step 2 "3 4" and "3 5" (P 0.4 each) fill the
    beam of 2 and push it out; then every continuation costs log 0.2 and they end below it."""
    spread = {t: 0.2 for t in (0, 1, 3, 4, 5)}
    table = {(): {3: 0.8, EOS: 0.2}, (3,): {4: 0.5, 5: 0.5}, (3, 4): spread, (3, 5): spread}
    model, src = Scripted(table), torch.tensor([[5]])
    ids, score = beam_search(model, src, 2, 3, BOS, EOS, return_scores=True)
    assert ids.tolist() == [[EOS]] and score.item() == pytest.approx(math.log(0.2), abs=1e-6)
    greedy = greedy_search(model, src, 3, BOS, EOS)
    assert sequence_scores(model, src, greedy, BOS, EOS).item() == pytest.approx(math.log(0.8 * 0.5 * 0.2))


# ----------------------------------------------------------------------------- <eos>

def counting_table(ends):
    """Sentence b (its source's first id) emits 3 3 3 … and <eos> after ends[b] tokens; after <eos>
    the table would prefer 5, which a finished sentence must never get."""
    table = {}
    for n in set(ends):
        for t in range(n):
            table[(3,) * t] = {3: 0.9, EOS: 0.1} if t < n - 1 else {EOS: 0.9, 3: 0.1}
        table[(3,) * (n - 1) + (EOS,)] = {5: 1.0}
    return table


@pytest.mark.parametrize("search", ["greedy", "beam"])
def test_each_sentence_stops_at_its_eos_and_is_padded_after_it(search):
    # one source id picks the length; sentences are decoded alone so the table can depend on them
    for n in (1, 3, 4):
        model = Scripted(counting_table([n]))
        src = torch.tensor([[7, PAD]])
        out = (greedy_search(model, src, 10, BOS, EOS) if search == "greedy"
               else beam_search(model, src, 3, 10, BOS, EOS, length_penalty=0.6))
        assert out.tolist() == [[3] * (n - 1) + [EOS]], n
    # a batch whose sentences end at different steps: rows end at <eos>, then pad; the search stops
    # once all have ended (every table entry of the longer one says so)
    table = {(): {3: 0.9, EOS: 0.1}, (3,): {3: 0.9, EOS: 0.1}, (3, 3): {EOS: 1.0}, (3, 3, EOS): {5: 1.0},
             (EOS,): {5: 1.0}, (3, 3, EOS, 5): {5: 1.0}}

    class Two(Scripted):  # row 0 ends at once, row 1 after "3 3"
        def decode(self, tgt, memory, src_mask):
            logits = super().decode(tgt, memory, src_mask)
            first = memory[:, 0] == 8  # rows whose source asks to stop at once
            if tgt.shape[1] == 1:
                logits[first, -1] = -1e9
                logits[first, -1, EOS] = 0.0
            return logits

    model = Two(table)
    src = torch.tensor([[8, 3], [7, 3]])
    out = (greedy_search(model, src, 10, BOS, EOS) if search == "greedy"
           else beam_search(model, src, 2, 10, BOS, EOS))
    assert out.tolist() == [[EOS, PAD, PAD], [3, 3, EOS]]
    assert model.calls == 3, "the search went on after every sentence ended"


def test_a_sentence_without_eos_stops_at_max_len():
    model = Scripted({})  # never <eos>
    src = torch.tensor([[5]])
    assert greedy_search(model, src, 4, BOS, EOS).shape == (1, 4)
    ids = beam_search(model, src, 3, 4, BOS, EOS)
    assert ids.shape == (1, 4) and EOS not in ids.tolist()[0]


@pytest.mark.parametrize("kind", MODELS)
def test_searches_restore_the_training_mode_and_keep_finished_rows_padded(kind):
    model, src = MODELS[kind](5), sources(5)
    model.train()
    for out in (greedy_search(model, src, 12, BOS, EOS), beam_search(model, src, 3, 12, BOS, EOS)):
        assert model.training
        for row in out.tolist():
            if EOS in row:
                assert all(tok == PAD for tok in row[row.index(EOS) + 1:])


def test_length_penalty_formula():
    assert gnmt_length_penalty(1, 0.0) == 1.0
    assert gnmt_length_penalty(1, 1.0) == 1.0  # (5 + 1) / 6
    assert gnmt_length_penalty(7, 0.5) == pytest.approx(math.sqrt(2))
    assert torch.allclose(gnmt_length_penalty(torch.tensor([1.0, 13.0]), 1.0), torch.tensor([1.0, 3.0]))


# ----------------------------------------------------------------------------- a learned task

def reverse_batch(size, gen, t=5, vocab=11):
    """src: 2..t random symbols, right-padded; tgt: them reversed, then <eos>, then padding."""
    n = torch.randint(2, t + 1, (size,), generator=gen)
    src = torch.randint(3, vocab, (size, t), generator=gen).masked_fill(torch.arange(t) >= n[:, None], PAD)
    out = torch.full((size, t + 1), PAD)
    for b, k in enumerate(n.tolist()):
        out[b, :k] = src[b, :k].flip(0)
        out[b, k] = EOS
    tgt_in = torch.cat([torch.full((size, 1), BOS), out[:, :-1].masked_fill(out[:, :-1] == EOS, PAD)], 1)
    return src, tgt_in, out


def test_a_small_transformer_trained_to_reverse_is_decoded_exactly_by_both_searches():
    """Variable lengths, so each sentence ends at its own step. About 2-3 s of training on one thread."""
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=11, d_model=32, n_heads=2, d_ff=64, n_layers=2,
                                          dropout=0.0, max_len=16))
    gen = torch.Generator().manual_seed(0)
    data = (reverse_batch(48, gen, t=4) for _ in iter(int, 1))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    train(model, data, lambda m, b: sequence_loss(m(b[0], b[1]), b[2]), opt, steps=300, warmup=50,
          progress=False)
    src, _, want = reverse_batch(200, torch.Generator().manual_seed(99), t=4)
    assert torch.equal(greedy_search(model, src, 8, BOS, EOS), want)
    assert torch.equal(beam_search(model, src, 3, 8, BOS, EOS, length_penalty=0.6), want)


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, error, match", [
    (lambda m, s: greedy_search(torch.nn.Linear(2, 2), s, 5, BOS, EOS), TypeError, "Linear has no source_mask"),
    (lambda m, s: greedy_search(m, s[0], 5, BOS, EOS), ValueError, r"src must have 2 axes; got shape \(6,\)"),
    (lambda m, s: greedy_search(m, s[:0], 5, BOS, EOS), ValueError, r"src is empty: shape \(0, 6\)"),
    (lambda m, s: greedy_search(m, s.tolist(), 5, BOS, EOS), TypeError, "src must be a torch tensor; got list"),
    (lambda m, s: greedy_search(m, s.float(), 5, BOS, EOS), TypeError, "integer token ids; got dtype torch.float32"),
    (lambda m, s: greedy_search(m, s, 0, BOS, EOS), ValueError, "max_len must be a positive int; got 0"),
    (lambda m, s: greedy_search(m, s, True, BOS, EOS), TypeError, "max_len must be an int; got True"),
    (lambda m, s: greedy_search(m, s, 40, BOS, EOS), ValueError, r"max_len=40 .* \(config.max_len=32\)"),
    (lambda m, s: greedy_search(m, s, 5, "<bos>", EOS), TypeError, "bos_id must be an int; got '<bos>'"),
    (lambda m, s: greedy_search(m, s, 5, BOS, -1), ValueError, "eos_id must be an int ≥ 0; got -1"),
    (lambda m, s: beam_search(m, s, 0, 5, BOS, EOS), ValueError, "beam_size must be a positive int; got 0"),
    (lambda m, s: beam_search(m, s, 2.0, 5, BOS, EOS), TypeError, "beam_size must be an int; got 2.0"),
    (lambda m, s: beam_search(m, s, 2, 5, BOS, EOS, length_penalty=-0.5), ValueError,
     r"length_penalty must lie in \[0, inf\); got -0.5"),
    (lambda m, s: beam_search(m, s, 2, 5, BOS, EOS, length_penalty="0.6"), TypeError,
     "length_penalty must be a number; got '0.6'"),
    (lambda m, s: sequence_scores(m, s, torch.zeros(2, 3, dtype=torch.long), BOS, EOS), ValueError,
     r"ids must be \(batch, t\) outputs for the \(6, 6\) source; got shape \(2, 3\)"),
])
def test_bad_input_is_refused_with_a_message_naming_it(call, error, match):
    with pytest.raises(error, match=match):
        call(transformer(), sources())


def test_a_model_without_a_pad_id_needs_one_given():
    class NoPad(Scripted):
        def __init__(self):
            super().__init__({})
            del self.pad_id

        def source_mask(self, src):
            return src != 0

    with pytest.raises(ValueError, match="NoPad names no pad_id: pass pad_id="):
        greedy_search(NoPad(), torch.tensor([[5]]), 3, BOS, EOS)
    assert greedy_search(NoPad(), torch.tensor([[5]]), 3, BOS, EOS, pad_id=0).shape == (1, 3)


def test_ids_outside_the_vocabulary_are_refused_by_the_model():
    with pytest.raises(ValueError, match="bos_id|outside the vocabulary|ids must lie"):
        greedy_search(gru(), sources(), 5, 99, EOS)


# ----------------------------------------------------------------------------- no silent wrong answers

def test_a_length_penalty_too_large_for_max_len_is_refused_and_the_largest_accepted_stays_finite():
    """α = 10⁶ made ((5 + |y|) / 6)^α inf, and every beam score nan or 0. The limit keeps lp(max_len)
    ≤ e^44: just below it every score of every length is finite; just above it is refused."""
    model, src = transformer(0), sources(0)
    largest = _MAX_LOG_PENALTY / math.log((5 + 10) / 6)  # the largest α for max_len = 10
    ids, scores = beam_search(model, src, 3, 10, BOS, EOS, length_penalty=0.999 * largest,
                              return_scores=True)
    assert torch.isfinite(scores).all() and (scores < 0).all()
    assert torch.isfinite(sequence_scores(model, src, ids, BOS, EOS, 0.999 * largest)).all()
    for alpha in (1.001 * largest, 1e6):
        with pytest.raises(ValueError, match=r"length_penalty=\S+ is too large for outputs of up to 10 "
                                             r"tokens.*use length_penalty ≤ 48\.4"):
            beam_search(model, src, 3, 10, BOS, EOS, length_penalty=alpha)
    with pytest.raises(ValueError, match=r"length_penalty=1e\+06 is too large for outputs of up to 6"):
        sequence_scores(model, src, ids[:, :6].clone(), BOS, EOS, 1e6)
    # max_len = 1: lp(1) = 1 whatever α, so a large α is harmless there
    assert beam_search(model, src, 2, 1, BOS, EOS, length_penalty=1e6).shape == (6, 1)


@pytest.mark.parametrize("alpha, match", [
    (float("inf"), "length_penalty must be finite; got inf"),
    (float("nan"), "length_penalty must be a number, got NaN"),
])
def test_an_infinite_or_nan_length_penalty_is_refused(alpha, match):
    model, src = transformer(0), sources(0)
    for call in (lambda: beam_search(model, src, 2, 5, BOS, EOS, length_penalty=alpha),
                 lambda: sequence_scores(model, src, src, BOS, EOS, alpha)):
        with pytest.raises(ValueError, match=match):
            call()


def test_the_length_penalty_refuses_what_has_no_answer():
    with pytest.raises(ValueError, match=r"overflows: alpha=1e\+06 is too large for length 10"):
        gnmt_length_penalty(10, 1e6)
    with pytest.raises(ValueError, match=r"overflows: alpha=1e\+06 is too large for length 10"):
        gnmt_length_penalty(torch.tensor([1, 10]), 1e6)
    with pytest.raises(ValueError, match="alpha must be finite; got inf"):
        gnmt_length_penalty(3, float("inf"))
    with pytest.raises(ValueError, match=r"length must lie in \[0, inf\); got -7"):
        gnmt_length_penalty(-7, 0.5)  # ((5 - 7) / 6)^0.5 was a complex number
    with pytest.raises(ValueError, match=r"length must be ≥ 0 .*got -7"):
        gnmt_length_penalty(torch.tensor([3, -7]), 0.5)
    assert gnmt_length_penalty(10, 48.0) == pytest.approx(2.5 ** 48)  # large, but finite
    assert gnmt_length_penalty(1, 1e6) == 1.0  # lp(1) = 1 for every α


@pytest.mark.parametrize("kind", ["transformer", "gru", "scripted"])
@pytest.mark.parametrize("name", ["bos_id", "eos_id", "pad_id"])
def test_token_ids_outside_the_vocabulary_are_named_with_its_size(kind, name):
    """The size comes from the model (config.tgt_vocab, Seq2SeqGRU.tgt_vocab) or, for a model that
    does not say, from the first step's logits (Scripted: 6 tokens)."""
    model = {"transformer": transformer, "gru": gru, "scripted": lambda: Scripted({})}[kind]()
    size = Scripted.vocab if kind == "scripted" else V
    ids = {"bos_id": BOS, "eos_id": EOS, "pad_id": PAD, name: size}
    src = torch.tensor([[5, 6]])
    match = rf"{name}={size} is not in the model's vocabulary of {size} tokens \(ids 0..{size - 1}\)"
    with pytest.raises(ValueError, match=match):
        greedy_search(model, src, 3, **ids)
    with pytest.raises(ValueError, match=match):
        beam_search(model, src, 2, 3, **ids)
    if name != "pad_id":
        with pytest.raises(ValueError, match=match):
            sequence_scores(model, src, torch.tensor([[3, EOS]]), ids["bos_id"], ids["eos_id"])


def test_sequence_scores_refuses_output_ids_outside_the_vocabulary():
    with pytest.raises(ValueError, match=r"ids must hold token ids in the model's vocabulary 0..14; "
                                         r"got 15 at \(0, 1\)"):
        sequence_scores(transformer(), torch.tensor([[5]]), torch.tensor([[3, 15]]), BOS, EOS)
    with pytest.raises(ValueError, match=r"ids must hold token ids in the model's vocabulary 0..5"):
        sequence_scores(Scripted({}), torch.tensor([[5]]), torch.tensor([[3, 6]]), BOS, EOS)


def test_the_searches_restore_the_mode_when_the_model_fails():
    class Broken(Scripted):
        def decode(self, tgt, memory, src_mask):
            raise RuntimeError("broken decoder")

    model = Broken({}).train()
    for search in (lambda: greedy_search(model, torch.tensor([[5]]), 3, BOS, EOS),
                   lambda: beam_search(model, torch.tensor([[5]]), 2, 3, BOS, EOS),
                   lambda: sequence_scores(model, torch.tensor([[5]]), torch.tensor([[3]]), BOS, EOS)):
        with pytest.raises(RuntimeError, match="broken decoder"):
            search()
        assert model.training


# ----------------------------------------------------------------------------- decoder-only

def lm(seed=0):
    torch.manual_seed(seed)
    return DecoderOnly(TransformerConfig(vocab_size=V, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                                         dropout=0.0, max_len=32))


@pytest.mark.parametrize("n, error, match", [
    (0, ValueError, "max_new_tokens must be a positive int; got 0"),
    (-3, ValueError, "max_new_tokens must be a positive int; got -3"),
    (2.5, TypeError, r"max_new_tokens must be an int; got 2\.5"),
])
def test_generate_refuses_a_count_of_new_tokens_below_one(n, error, match):
    with pytest.raises(error, match=match):
        generate(lm(), torch.tensor([[3, 4]]), n)


def test_generate_refuses_an_eos_outside_the_vocabulary_and_restores_the_mode():
    model = lm().train()
    with pytest.raises(ValueError, match=rf"eos_id={V} is not in the model's vocabulary of {V} tokens"):
        generate(model, torch.tensor([[3, 4]]), 3, eos_id=V)
    assert generate(model, torch.tensor([[3, 4]]), 3, greedy=True).shape == (1, 5) and model.training


@pytest.mark.parametrize("greedy", [True, False])
def test_sample_next_refuses_logits_with_no_token_to_choose(greedy):
    logits = torch.tensor([[0.0, 1.0, 2.0], [0.5, 0.5, 0.5]])
    nan = logits.clone()
    nan[1, 2] = float("nan")  # argmax would pick the NaN, sampling would fail deep in multinomial
    with pytest.raises(ValueError, match=r"logits hold NaN \(row 1 of \(2, 3\)\)"):
        sample_next(nan, greedy=greedy)
    masked = logits.clone()
    masked[0] = float("-inf")  # argmax would return token 0 as if it were chosen
    with pytest.raises(ValueError, match=r"logits are -inf for every token in row 0 of \(2, 3\)"):
        sample_next(masked, greedy=greedy)
    partly = logits.clone()
    partly[0, :2] = float("-inf")  # some tokens masked: fine, the others are chosen among
    assert sample_next(partly, greedy=greedy, generator=torch.Generator().manual_seed(0))[0] == 2


def test_sample_next_refuses_infinite_logits_only_when_sampling():
    logits = torch.tensor([[0.0, float("inf"), 1.0]])
    assert sample_next(logits, greedy=True).tolist() == [1]
    with pytest.raises(ValueError, match=r"logits hold \+inf \(row 0 of \(1, 3\)\).*greedy=True"):
        sample_next(logits)


def test_greedy_search_without_an_end_token_writes_exactly_max_len_tokens():
    model, src = transformer(2), sources(2)
    stopped = greedy_search(model, src, 12, BOS, EOS)
    endless = greedy_search(model, src, 12, BOS, None)
    assert endless.shape == (src.shape[0], 12) and not (endless == PAD).all(dim=1).any()
    for b in range(src.shape[0]):  # the same tokens up to and including each row's own <eos>
        row = stopped[b].tolist()
        n = row.index(EOS) + 1 if EOS in row else len(row)
        assert endless[b, :n].tolist() == row[:n]
    with pytest.raises(TypeError, match="eos_id"):
        beam_search(model, src, 2, 12, BOS, None)  # beam search needs an end token


# ----------------------------------------------------------------------------- minimum length

class EagerToEnd(torch.nn.Module):
    """A model that would end every output at once: <eos> gets +20 over its own logits."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.pad_id = PAD

    def source_mask(self, src):
        return self.inner.source_mask(src)

    def encode(self, src, src_mask):
        return self.inner.encode(src, src_mask)

    def decode(self, ys, memory, src_mask):
        logits = self.inner.decode(ys, memory, src_mask).clone()
        logits[..., EOS] += 20.0
        return logits


def ended_at(ys):
    """Tokens before the first <eos> in each row (the whole row when there is none)."""
    return [row.index(EOS) if EOS in row else len(row) for row in ys.tolist()]


@pytest.mark.parametrize("beam", [1, 3])
@pytest.mark.parametrize("ratio, slack", [(0.5, 0), (1.0, 0), (1.5, 0), (1.0, 2), (1.5, 3)])
def test_no_output_ends_before_its_minimum_length(beam, ratio, slack):
    model, src = EagerToEnd(transformer(0)), sources(0)
    real = (src != PAD).sum(dim=1).tolist()
    plain = beam_search(model, src, beam, 20, BOS, EOS, pad_id=PAD)
    assert ended_at(plain) == [0] * len(real)  # without it, every output ends at once
    ys = beam_search(model, src, beam, 20, BOS, EOS, pad_id=PAD, min_length_ratio=ratio,
                     min_length_slack=slack)
    floor = [max(0, math.floor(ratio * s) - slack) for s in real]
    assert ended_at(ys) == floor  # and ends as soon as it may
    if beam == 1:
        assert torch.equal(greedy_search(model, src, 20, BOS, EOS, pad_id=PAD,
                                         min_length_ratio=ratio, min_length_slack=slack), ys)


@pytest.mark.parametrize("kind", MODELS)
def test_a_zero_minimum_length_changes_nothing(kind):
    model, src = MODELS[kind](1), sources(1)
    assert torch.equal(greedy_search(model, src, 10, BOS, EOS, min_length_ratio=0),
                       greedy_search(model, src, 10, BOS, EOS))
    assert torch.equal(beam_search(model, src, 3, 10, BOS, EOS, 0.6, min_length_ratio=0.0),
                       beam_search(model, src, 3, 10, BOS, EOS, 0.6))


@pytest.mark.parametrize("ratio, error, message", [
    (-0.1, ValueError, "min_length_ratio"), (4.5, ValueError, "min_length_ratio"),
    (float("nan"), ValueError, "min_length_ratio"), ("0.8", TypeError, "min_length_ratio"),
    (True, TypeError, "min_length_ratio")])
def test_a_bad_minimum_length_is_refused(ratio, error, message):
    model, src = transformer(0), sources(0)
    for search in (lambda: greedy_search(model, src, 5, BOS, EOS, min_length_ratio=ratio),
                   lambda: beam_search(model, src, 2, 5, BOS, EOS, min_length_ratio=ratio)):
        with pytest.raises(error, match=message):
            search()


@pytest.mark.parametrize("slack, error", [(-1, ValueError), (1.5, TypeError), ("2", TypeError)])
def test_a_bad_slack_is_refused(slack, error):
    model, src = transformer(0), sources(0)
    for search in (lambda: greedy_search(model, src, 5, BOS, EOS, min_length_ratio=1.0,
                                         min_length_slack=slack),
                   lambda: beam_search(model, src, 2, 5, BOS, EOS, min_length_ratio=1.0,
                                       min_length_slack=slack)):
        with pytest.raises(error, match="min_length_slack"):
            search()


# ----------------------------------------------------------------------------- the loop guard

def loops(row, copies=3):
    """The definition the guard enforces: some n-gram (any n ≥ 1) occurs ``copies`` times back
    to back in the row, checked by brute force over every start and length."""
    return any(row[i:i + n] * copies == row[i:i + copies * n]
               for n in range(1, len(row) // copies + 1) for i in range(len(row) - copies * n + 1))


@pytest.mark.parametrize("ids, copies, banned", [
    ([], 3, []), ([5], 3, []), ([5, 5], 3, [5]), ([5, 5], 2, [5]), ([5], 2, [5]),
    ([1, 2, 1, 2, 1], 3, [2]), ([1, 2, 1, 2], 3, []), ([7, 1, 2, 3, 1, 2, 3, 1, 2], 3, [3]),
    ([4, 4, 3, 4, 3, 4], 3, [3]), ([1, 1, 2, 1, 1, 2, 1, 1], 3, [1, 2]), ([1, 2, 3, 4, 5], 3, [])])
def test_loop_tokens_are_the_tokens_that_would_make_a_loop(ids, copies, banned):
    assert loop_tokens(ids, copies) == banned
    for v in range(9):  # exactly those end the row with `copies` copies of one n-gram
        row = ids + [v]
        assert (v in banned) == any(row[-copies * n:] == row[-n:] * copies
                                    for n in range(1, len(row) // copies + 1))


def test_loop_tokens_takes_a_tensor_and_names_bad_input():
    assert loop_tokens(torch.tensor([1, 2, 1, 2, 1])) == [2]
    assert all(type(v) is int for v in loop_tokens(torch.tensor([5, 5])))
    for copies in (0, 1, 2.0, True):
        with pytest.raises(ValueError, match="copies must be an int >= 2"):
            loop_tokens([1, 1], copies)
    with pytest.raises(TypeError, match="ids must be a list of token ids; got str"):
        loop_tokens("aaa")
    with pytest.raises(TypeError, match="ids must hold ints"):
        loop_tokens([1, 1.5])
    with pytest.raises(ValueError, match="1-D integer tensor"):
        loop_tokens(torch.ones(2, 3, dtype=torch.long))


class Repeater(EagerToEnd):
    """A model that wants to loop: the token it just wrote gets +20, <eos> gets -20, so it
    would write its first word again and again."""

    def decode(self, ys, memory, src_mask):
        logits = self.inner.decode(ys, memory, src_mask).clone()  # (batch, t, vocab)
        logits.scatter_add_(2, ys[..., None], torch.full(ys.shape + (1,), 20.0))
        logits[..., EOS] -= 20.0
        return logits


@pytest.mark.parametrize("beam", [1, 3])
def test_the_guard_keeps_every_output_from_looping(beam):
    model, src = Repeater(transformer(0)), sources(0)
    plain = beam_search(model, src, beam, 20, BOS, EOS, pad_id=PAD).tolist()
    assert all(loops(row) for row in plain)  # without it, every output loops
    guarded = beam_search(model, src, beam, 20, BOS, EOS, pad_id=PAD, no_loops=True)
    rows = [row[:row.index(EOS)] if EOS in row else row for row in guarded.tolist()]
    assert not any(loops(row) for row in rows)
    if beam == 1:
        assert torch.equal(greedy_search(model, src, 20, BOS, EOS, pad_id=PAD, no_loops=True),
                           guarded)


def test_a_row_that_begins_to_repeat_may_end_before_the_floor():
    """With the floor at 16 tokens, a model that wants to end and to repeat: without the guard it
    repeats until the floor; with it, it ends as soon as it has written a token twice."""
    class EndOrRepeat(Repeater):
        def decode(self, ys, memory, src_mask):
            logits = super().decode(ys, memory, src_mask)
            logits[..., EOS] += 45.0  # <eos> +25 first, the last token's +20 second
            return logits

    model, src = EndOrRepeat(transformer(0)), sources(0)[:, :6]
    src[src == PAD] = 3  # every source has 6 tokens: a floor of ⌊3 · 6⌋ - 2 = 16
    floored = greedy_search(model, src, 30, BOS, EOS, pad_id=PAD, min_length_ratio=3.0,
                            min_length_slack=2)
    assert ended_at(floored) == [16] * 6 and all(loops(r[:16]) for r in floored.tolist())
    guarded = greedy_search(model, src, 30, BOS, EOS, pad_id=PAD, min_length_ratio=3.0,
                            min_length_slack=2, no_loops=True)
    assert ended_at(guarded) == [2] * 6  # a, a, then <eos>: the floor yields
    assert torch.equal(beam_search(model, src, 1, 30, BOS, EOS, pad_id=PAD, min_length_ratio=3.0,
                                   min_length_slack=2, no_loops=True), guarded)


@pytest.mark.parametrize("kind", MODELS)
def test_the_guard_is_off_by_default(kind):
    model, src = MODELS[kind](2), sources(2)
    assert torch.equal(greedy_search(model, src, 10, BOS, EOS, no_loops=False),
                       greedy_search(model, src, 10, BOS, EOS))
    assert torch.equal(beam_search(model, src, 3, 10, BOS, EOS, 0.6, no_loops=False),
                       beam_search(model, src, 3, 10, BOS, EOS, 0.6))


@pytest.mark.parametrize("value", [1, "yes", None])
def test_a_bad_no_loops_is_refused(value):
    model, src = transformer(0), sources(0)
    for search in (lambda: greedy_search(model, src, 5, BOS, EOS, no_loops=value),
                   lambda: beam_search(model, src, 2, 5, BOS, EOS, no_loops=value)):
        with pytest.raises(TypeError, match="no_loops must be True or False"):
            search()
