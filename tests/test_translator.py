"""The translator pipeline of chapter 13: grouping, batching, the loss, the Translator and its
checkpoint, and the training recipe on a toy task."""

import json
import os

import pytest
import torch

from minformer.data import load_translation_pairs
from minformer.decode import beam_search, greedy_search
from minformer.metrics import corpus_bleu
from minformer.tokenizer import BPETokenizer
from minformer.train import sequence_loss
from minformer.train_translator import (
    average_states,
    bucketed_batches,
    encode_pairs,
    padding_fraction,
    train_translator,
    translation_loss,
)
from minformer.transformer import Transformer, TransformerConfig
from minformer.translator import CheckpointError, Translator, references_by_source

PAIRS = [("I am here.", "Estoy aquí."), ("Go.", "Ve."), ("I am here.", "Aquí estoy."),
         ("Where is it?", "¿Dónde está?"), ("Go.", "Vete."), ("Run!", "¡Corre!")]


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train([t for p in PAIRS for t in p] * 3, 300)


def tiny_model(tok, seed=0, **kw):
    torch.manual_seed(seed)
    cfg = dict(vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=40,
               dropout=0.0, pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
    cfg.update(kw)
    return Transformer(TransformerConfig(**cfg)).eval()


def test_references_by_source_groups_translations_in_first_seen_order():
    sources, refs = references_by_source(PAIRS)
    assert sources == ["I am here.", "Go.", "Where is it?", "Run!"]
    assert refs[0] == ["Estoy aquí.", "Aquí estoy."] and refs[1] == ["Ve.", "Vete."]
    with pytest.raises(ValueError, match=r"pairs\[1\]"):
        references_by_source([("a", "b"), ("c",)])


def test_encode_pairs_marks_eos_and_bos(tok):
    (src, tgt), = encode_pairs(tok, [PAIRS[0]])
    assert src[-1] == tok.eos_id and tok.bos_id not in src
    assert tgt[0] == tok.bos_id and tgt[-1] == tok.eos_id
    assert tok.decode(src[:-1]) == "I am here." and tok.decode(tgt[1:-1]) == "Estoy aquí."
    with pytest.raises(TypeError):
        encode_pairs(tok, "I am here.")


def random_examples(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(2, 30, (n, 2), generator=g).tolist()
    return [([5] * a, [6] * b) for a, b in lens]


@pytest.mark.parametrize("bucket", [True, False])
def test_bucketed_batches_use_every_example_once_and_pad_on_the_right(bucket):
    ex = random_examples(1000)
    batches = bucketed_batches(ex, 64, pad_id=0, seed=3, pool=4, bucket=bucket)
    assert sum(s.shape[0] for s, _ in batches) == 1000
    assert all(s.shape[0] <= 64 for s, _ in batches)
    seen = sorted((int((s != 0).sum(1)[i]), int((t != 0).sum(1)[i]))
                  for s, t in batches for i in range(s.shape[0]))
    assert seen == sorted((len(a), len(b)) for a, b in ex)
    for s, t in batches:  # right padding: once a row pads, it pads to the end
        for x in (s, t):
            real = x != 0
            assert torch.equal(real, real.cummin(dim=1).values)


def test_bucketing_saves_padding_and_is_reproducible():
    # as in real pairs, a longer source tends to have a longer target
    ex = [(a, a + b[: len(a) % 3]) for a, b in random_examples(2000)]
    bucketed = bucketed_batches(ex, 64, seed=1)
    plain = bucketed_batches(ex, 64, seed=1, bucket=False)
    assert padding_fraction(bucketed) < 0.5 * padding_fraction(plain)
    again = bucketed_batches(ex, 64, seed=1)
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(bucketed, again))
    other = bucketed_batches(ex, 64, seed=2)
    assert not all(a[0].shape == b[0].shape and torch.equal(a[0], b[0]) for a, b in zip(bucketed, other))


def test_bucketed_batches_without_seed_keeps_the_order():
    ex = random_examples(10)
    (src, tgt), = bucketed_batches(ex, 10, seed=None, bucket=False)
    assert [int(n) for n in (src != 0).sum(1)] == [len(a) for a, _ in ex]


def test_bucketed_batches_bad_input():
    with pytest.raises(ValueError, match="empty"):
        bucketed_batches([], 8)
    with pytest.raises(TypeError, match="batch_size"):
        bucketed_batches(random_examples(3), 8.0)
    with pytest.raises(ValueError, match="batch_size"):
        bucketed_batches(random_examples(3), 0)


def test_padding_fraction_counts_pad_positions():
    src = torch.tensor([[3, 4, 0, 0]])
    tgt = torch.tensor([[1, 5, 2, 0]])
    assert padding_fraction([(src, tgt)]) == pytest.approx(3 / 8)


def test_translation_loss_is_teacher_forced_label_smoothed_ce(tok):
    model = tiny_model(tok)
    batch = bucketed_batches(encode_pairs(tok, PAIRS), 6, tok.pad_id, seed=None, bucket=False)[0]
    src, tgt = batch
    loss, n = translation_loss(0.1, tok.pad_id)(model, batch)
    expect = sequence_loss(model(src, tgt[:, :-1]), tgt[:, 1:], tok.pad_id, 0.1)
    assert torch.allclose(loss, expect)
    assert n == int((tgt[:, 1:] != tok.pad_id).sum())


def test_translation_loss_ignores_padding(tok):
    """Extra padding on a batch changes neither the loss nor the token count."""
    model = tiny_model(tok)
    src, tgt = bucketed_batches(encode_pairs(tok, PAIRS), 6, tok.pad_id, seed=None, bucket=False)[0]
    pad = torch.full((6, 3), tok.pad_id)
    a = translation_loss(0.0, tok.pad_id)(model, (src, tgt))
    b = translation_loss(0.0, tok.pad_id)(model, (torch.cat([src, pad], 1), torch.cat([tgt, pad], 1)))
    assert torch.allclose(a[0], b[0], atol=1e-6) and a[1] == b[1]


def test_the_fused_translation_loss_is_the_plain_one_with_the_same_gradients(tok):
    """fused=True projects only the real target tokens and uses the hand-written loss: the same
    value and the same gradient for every weight as PyTorch's label-smoothed cross-entropy over
    every position with padding ignored (float64, so rounding cannot hide a difference; the
    plain path computes its loss in float32), whatever extra padding the batch carries."""
    import torch.nn.functional as F

    model = tiny_model(tok, dropout=0.0).double().train()
    src, tgt = bucketed_batches(encode_pairs(tok, PAIRS), 6, tok.pad_id, seed=None, bucket=False)[0]

    def grads(loss):
        model.zero_grad()
        loss.backward()
        return [p.grad.clone() for p in model.parameters()]

    logits = model(src, tgt[:, :-1])  # (batch, t - 1, V)
    ref = F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=tok.pad_id,
                          label_smoothing=0.1)
    ref_loss, ref_grads = ref.detach(), grads(ref)
    pad = torch.full((6, 2), tok.pad_id)
    for batch in ((src, tgt), (torch.cat([src, pad], 1), torch.cat([tgt, pad], 1))):
        loss, n = translation_loss(0.1, tok.pad_id, fused=True)(model, batch)
        assert n == int((tgt[:, 1:] != tok.pad_id).sum())
        torch.testing.assert_close(loss.detach(), ref_loss, rtol=1e-12, atol=1e-12)
        for a, b in zip(grads(loss), ref_grads):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    plain, _ = translation_loss(0.1, tok.pad_id)(model, (src, tgt))  # float32 inside
    torch.testing.assert_close(plain.double(), ref_loss, rtol=1e-6, atol=1e-6)


def test_the_fused_step_trains_the_same_weights_to_rounding(tok):
    """train_translator(fused=True): fused loss and PyTorch's fused Adam take the same steps."""
    cfg = tiny_model(tok).config
    states = []
    for fused in (False, True):
        tr, history = train_translator(cfg, tok, PAIRS, steps=5, batch_size=3, warmup=2,
                                       progress=False, device="cpu", fused=fused)
        states.append((tr.model.state_dict(), history.losses))
    torch.testing.assert_close(states[1][1], states[0][1], rtol=1e-5, atol=1e-6)
    d = cfg.d_model
    for k, v in states[0][0].items():
        w = states[1][0][k]
        if k.endswith("in_proj_bias"):  # [query; key; value] biases. A key bias adds the same
            # number to every score of a query, which softmax ignores: its gradient is zero up
            # to rounding, and Adam turns that rounding into steps of ±lr. Skip it.
            v, w = torch.cat([v[:d], v[2 * d:]]), torch.cat([w[:d], w[2 * d:]])
        torch.testing.assert_close(w, v, rtol=1e-4, atol=1e-5, msg=k)


def test_the_fused_loss_needs_a_transformer(tok):
    from minformer.rnn import Seq2SeqGRU

    gru = Seq2SeqGRU(tok.vocab_size, tok.vocab_size, d_emb=8, d_hidden=8, pad_id=tok.pad_id)
    batch = bucketed_batches(encode_pairs(tok, PAIRS), 6, tok.pad_id, seed=None)[0]
    with pytest.raises(TypeError, match="fused=True needs a Transformer.*got Seq2SeqGRU"):
        translation_loss(0.1, tok.pad_id, fused=True)(gru, batch)
    with pytest.raises(TypeError, match="fused=True needs a Transformer.*got Seq2SeqGRU"):
        train_translator(gru, tok, PAIRS, steps=1, progress=False, device="cpu", fused=True)


def test_translate_keeps_input_order_and_matches_greedy_search(tok):
    model = tiny_model(tok)
    tr = Translator(model, tok, max_source_tokens=30)
    sentences = ["Where is it?", "Go.", "I am here.", "Run!"]
    out = tr.translate(sentences, batch_size=3)
    for s, o in zip(sentences, out):
        src = torch.tensor([tok.encode(s, add_eos=True)])
        ys = greedy_search(model, src, min(2 * src.shape[1] + 10, 39), tok.bos_id, tok.eos_id)
        assert o == tr.detokenize(ys[0].tolist())
    assert tr.translate(sentences, beam_size=1) == out
    assert len(tr.translate(sentences, beam_size=3)) == 4


def test_search_is_greedy_or_beam_and_stays_inside_the_positions(tok):
    model = tiny_model(tok, max_len=12)
    tr = Translator(model, tok)
    src = tok.pad([tok.encode(s, add_eos=True) for s in ("Go.", "Where is it?")])[0]
    # default limit 2 * s + 10 is past max_len - 1 = 11: cut there
    assert torch.equal(tr.search(src), greedy_search(model, src, 11, tok.bos_id, tok.eos_id))
    assert torch.equal(tr.search(src, max_new_tokens=3),
                       greedy_search(model, src, 3, tok.bos_id, tok.eos_id))
    assert torch.equal(tr.search(src, beam_size=3, length_penalty=1.0),
                       beam_search(model, src, 3, 11, tok.bos_id, tok.eos_id, length_penalty=1.0))
    with pytest.raises(ValueError, match="beam_size"):
        tr.search(src, beam_size=0)


def test_translate_refuses_empty_and_overlong_sentences(tok):
    tr = Translator(tiny_model(tok), tok, max_source_tokens=8)
    with pytest.raises(ValueError, match="sentence 2 is empty"):
        tr.translate(["Go.", "  "])
    with pytest.raises(ValueError, match=r"sentence 1 is too long: \d+ tokens.*at most 8"):
        tr.translate(["Where is it? " * 5])
    with pytest.raises(TypeError):
        tr.translate("Go.")
    with pytest.raises(TypeError, match="BPETokenizer"):
        Translator(tiny_model(tok), "tokenizer")


def test_bleu_scores_each_source_once_against_all_references(tok):
    tr = Translator(tiny_model(tok), tok)
    score, sources, hyps, refs = tr.bleu(PAIRS)
    assert len(sources) == len(hyps) == len(refs) == 4
    assert score.score == corpus_bleu(hyps, refs).score


def test_save_and_load_round_trip_in_fp16(tok, tmp_path):
    model = tiny_model(tok, norm_first=True)
    tr = Translator(model, tok, max_source_tokens=30)
    sums = tr.save(tmp_path / "ck", log={"steps": 3})
    state = torch.load(tmp_path / "ck" / "model.pt", weights_only=True)
    assert all(v.dtype == torch.float16 for v in state.values() if v.is_floating_point())
    back = Translator.load(tmp_path / "ck", sha256=sums)
    assert back.max_source_tokens == 30 and back.model.config == model.config
    assert not back.model.training
    for k, v in model.state_dict().items():  # fp32 → fp16 → fp32 loses only fp16's rounding
        assert torch.equal(back.model.state_dict()[k], v.half().float())
    assert json.loads((tmp_path / "ck" / "train_log.json").read_text()) == {"steps": 3}
    # the tied embedding matrix (source, target, output) is stored once: one shared storage
    tied = ["src_embed.weight", "tgt_embed.weight"]
    assert len(tied) == 2 and state[tied[0]].data_ptr() == state[tied[1]].data_ptr()
    assert back.tokenizer.merges == tok.merges


def test_load_refuses_a_missing_or_altered_checkpoint(tok, tmp_path):
    sums = Translator(tiny_model(tok), tok).save(tmp_path / "ck")
    (tmp_path / "ck" / "config.json").write_text("{}")
    with pytest.raises(CheckpointError, match="config.json differs"):
        Translator.load(tmp_path / "ck", sha256=sums)
    (tmp_path / "ck" / "model.pt").unlink()
    with pytest.raises(CheckpointError, match="missing .*model.pt"):
        Translator.load(tmp_path / "ck")


def test_load_without_a_shipped_checkpoint_says_how_to_make_one(tmp_path, monkeypatch):
    (tmp_path / "manifest.json").write_text(json.dumps({"files": {}}))
    monkeypatch.setenv("MINFORMER_DATA", str(tmp_path))
    with pytest.raises(CheckpointError, match="python -m minformer.train_translator --full"):
        Translator.load()


def test_average_states_is_the_elementwise_mean():
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor(3)}
    b = {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor(3)}
    avg = average_states([a, b])
    assert torch.equal(avg["w"], torch.tensor([2.0, 4.0])) and avg["n"] == 3
    with pytest.raises(ValueError):
        average_states([])


def test_train_translator_learns_a_toy_copy_task():
    """Copying digit strings: after 300 steps greedy decoding gets most of them right."""
    g = torch.Generator().manual_seed(0)
    digits = "0123456789"
    pairs = []
    for _ in range(400):
        n = int(torch.randint(2, 6, (1,), generator=g))
        s = " ".join(digits[int(i)] for i in torch.randint(0, 10, (n,), generator=g))
        pairs.append((s, s))
    tok = BPETokenizer.train([p[0] for p in pairs], 259 + 3)
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=32, n_heads=2, d_ff=64, n_layers=1,
                            max_len=32, dropout=0.0, pad_id=tok.pad_id, bos_id=tok.bos_id,
                            eos_id=tok.eos_id)
    tr, history = train_translator(cfg, tok, pairs, valid_pairs=pairs[:20], steps=300, lr=3e-3,
                                   warmup=20, batch_size=32, label_smoothing=0.0, eval_every=50,
                                   eval_sentences=20, average_last=2, progress=False, device="cpu")
    assert history.steps == 300 and [e[0] for e in history.evals] == [50, 100, 150, 200, 250, 300]
    assert history.losses[-1] < 0.05 * history.losses[0]
    assert history.evals[-1][2] > 30  # BLEU of 2-5 digit strings (few 4-grams: BLEU is harsh)
    copied = tr.translate([p[0] for p in pairs[:50]])
    assert sum(c == p[0] for c, p in zip(copied, pairs)) >= 25  # of 50; chance: none
    assert history.averaged is not None and len(history.averaged) == 3
    assert not tr.model.training


def test_train_translator_trains_a_given_model_such_as_the_gru(tok):
    from minformer.rnn import Seq2SeqGRU

    torch.manual_seed(0)
    gru = Seq2SeqGRU(tok.vocab_size, tok.vocab_size, d_emb=8, d_hidden=8, pad_id=tok.pad_id)
    tr, history = train_translator(gru, tok, PAIRS, steps=5, batch_size=3, progress=False, device="cpu")
    assert tr.model is gru and history.steps == 5
    assert len(tr.translate(["Go."])) == 1
    with pytest.raises(TypeError, match="TransformerConfig or a model"):
        train_translator("config", tok, PAIRS, steps=1)


# ---------------------------------------------------------------- the shipped checkpoint


def test_the_shipped_checkpoint_is_listed_small_fp16_and_translates():
    from minformer.data import load_manifest
    from minformer.train_translator import FULL
    from minformer.translator import CHECKPOINT, FILES
    from minformer.utils import data_dir

    files = load_manifest()["files"]
    for name in FILES:
        assert f"{CHECKPOINT}/{name}" in files, name
    model_file = data_dir() / CHECKPOINT / "model.pt"
    assert model_file.stat().st_size <= 20_000_000
    state = torch.load(model_file, map_location="cpu", weights_only=True)
    assert {v.dtype for v in state.values() if v.is_floating_point()} == {torch.float16}
    tr = Translator.load()  # checked against the manifest's sha256
    c = tr.model.config
    assert (c.d_model, c.n_layers, c.norm_first) == (FULL["d_model"], FULL["n_layers"], FULL["norm_first"])
    assert tr.tokenizer.vocab_size == FULL["vocab_size"]
    out = tr.translate(["I am hungry.", "Where is the train station?"], beam_size=4)
    assert all(o and o != s for o, s in zip(out, ["I am hungry.", "Where is the train station?"]))
    log = json.loads((data_dir() / CHECKPOINT / "train_log.json").read_text(encoding="utf-8"))
    assert {"test_beam1", "test_beam4", "holdout_beam4", "valid_beam4", "long_valid_beam4",
            "long_test_beam4"} <= set(log["bleu"])
    assert log["train_splits"] == ["train", "extra", "long_train"]
    assert log["command"] == "python -m minformer.train_translator --full"
    assert log["recipe"] == json.loads(json.dumps(FULL))  # the recipe in the package made it
    assert log["history"]["steps"] == FULL["steps"]
    assert c.dropout == FULL["dropout"]


def test_validation_pairs_take_whole_english_groups_from_valid_and_long_valid():
    from minformer.train_translator import validation_pairs

    pairs = validation_pairs(3, 2)
    sources, refs = references_by_source(pairs)
    assert len(sources) == 5
    valid, long_valid = (references_by_source(load_translation_pairs(s)) for s in ("valid", "long_valid"))
    assert sources == valid[0][:3] + long_valid[0][:2]
    assert refs == valid[1][:3] + long_valid[1][:2]  # every reference of each sentence


def test_the_recipe_command_refuses_bad_options(capsys):
    from minformer.train_translator import main

    with pytest.raises(SystemExit) as err:
        main([])
    assert err.value.code == 2 and "add --full" in capsys.readouterr().err
    with pytest.raises(SystemExit) as err:
        main(["--full", "--steps", "0"])
    assert err.value.code == 2 and "steps" in capsys.readouterr().err
    if not torch.cuda.is_available():
        with pytest.raises(SystemExit) as err:
            main(["--full", "--device", "cuda"])
        assert err.value.code == 2 and "not available" in capsys.readouterr().err


def test_train_translator_skips_pairs_longer_than_the_positions(tok):
    long_pair = ("Go. " * 30, "Ve. " * 30)  # far more than 40 tokens a side
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                            max_len=40, dropout=0.0, pad_id=tok.pad_id, bos_id=tok.bos_id,
                            eos_id=tok.eos_id)
    tr, history = train_translator(cfg, tok, PAIRS + [long_pair], steps=2, batch_size=3,
                                   progress=False, device="cpu")
    assert history.skipped == 1
    with pytest.raises(ValueError, match="longer than the model's 40 positions"):
        train_translator(cfg, tok, [long_pair], steps=1, progress=False, device="cpu")


def test_the_kv_cache_gives_the_shipped_translator_identical_tokens():
    from minformer.decode import beam_search

    tr = Translator.load()
    tok, model = tr.tokenizer, tr.model
    sources, _ = references_by_source(load_translation_pairs("test"))
    src = tok.pad(tr.encode_sources(sources[::100]))[0]  # 17 sentences, padded
    for search, kw in ((greedy_search, {}), (beam_search, {"beam_size": 4, "length_penalty": 0.6})):
        args = (model, src) if search is greedy_search else (model, src, kw.pop("beam_size"))
        cached = search(*args, 40, tok.bos_id, tok.eos_id, pad_id=tok.pad_id, **kw)
        plain = search(*args, 40, tok.bos_id, tok.eos_id, pad_id=tok.pad_id, use_cache=False, **kw)
        assert torch.equal(cached, plain), search.__name__


def test_search_refuses_a_zero_or_negative_max_new_tokens(tok):
    tr = Translator(tiny_model(tok), tok)
    src = tok.pad(tr.encode_sources(["Go."]))[0]
    for bad in (0, -3):
        with pytest.raises(ValueError, match="max_new_tokens"):
            tr.search(src, max_new_tokens=bad)
        with pytest.raises(ValueError, match="max_new_tokens"):
            tr.translate(["Go."], max_new_tokens=bad)
    assert tr.search(src, max_new_tokens=1).shape[1] <= 1


def test_oversample_long_repeats_pairs_by_english_length():
    from minformer.train_translator import FULL, oversample_long

    pairs = [("one two", "a"), (" ".join(["w"] * 9), "b"), (" ".join(["w"] * 13), "c"),
             (" ".join(["w"] * 25), "d")]
    out = oversample_long(pairs, repeat=((9, 2), (13, 4), (19, 8)))
    assert [es for _, es in out] == ["a"] + ["b"] * 2 + ["c"] * 4 + ["d"] * 8
    assert oversample_long(pairs, repeat=()) == pairs  # nothing repeated
    assert oversample_long(pairs, FULL["repeat"]) == oversample_long(pairs)  # the default


@pytest.mark.parametrize("repeat, message", [
    (((13, 4), (9, 2)), "must rise"),
    (((9, 0),), "times"),
    (((0, 2),), "words"),
    (((9,),), r"repeat\[0\] must be a \(words, times\) pair"),
])
def test_oversample_long_refuses_a_bad_repeat(repeat, message):
    from minformer.train_translator import oversample_long

    with pytest.raises(ValueError, match=message):
        oversample_long([("a b", "c")], repeat=repeat)
    with pytest.raises(TypeError, match="not a string"):
        oversample_long("a b")


def test_concatenate_pairs_joins_distinct_real_pairs_deterministically():
    from minformer.train_translator import concatenate_pairs

    pairs = [(f"E{i}.", f"S{i}.") for i in range(10)]
    out = concatenate_pairs(pairs, 200, seed=3)
    assert len(out) == 200 and out == concatenate_pairs(pairs, 200, seed=3)
    assert out != concatenate_pairs(pairs, 200, seed=4)
    for en, es in out:
        a, b = en.split(" ")
        assert a != b  # two different pairs
        assert es == f"S{a[1:-1]}. S{b[1:-1]}."  # each English part keeps its own translation
    assert {en.split(" ")[0] for en, _ in out} == {en for en, _ in pairs}  # drawn from them all
    three = concatenate_pairs(pairs, 5, seed=0, parts=3)
    assert all(len(en.split(" ")) == 3 for en, _ in three)
    assert concatenate_pairs(pairs, 0) == []


@pytest.mark.parametrize("args, error, message", [
    (("a b", 2), TypeError, "not a string"),
    (([("a", "b")], 1), ValueError, "cannot join 2 distinct pairs out of 1"),
    (([("a", "b"), ("c", "d")], -1), ValueError, "n"),
    (([("a", "b"), ("c", "d")], 1, 0, 1), ValueError, "parts"),
])
def test_concatenate_pairs_refuses_bad_arguments(args, error, message):
    from minformer.train_translator import concatenate_pairs

    with pytest.raises(error, match=message):
        concatenate_pairs(*args)


def test_training_mix_repeats_long_pairs_then_adds_made_up_ones():
    from minformer.train_translator import FULL, concatenate_pairs, oversample_long, training_mix

    pairs = [(f"E{i}.", f"S{i}.") for i in range(20)] + [(" ".join(["w"] * 19), "long")]
    recipe = {**FULL, "concatenated": 7}
    mix = training_mix(pairs, recipe)
    assert mix == oversample_long(pairs, FULL["repeat"]) + concatenate_pairs(pairs, 7, FULL["seed"])
    assert mix.count(pairs[-1]) == dict(FULL["repeat"])[19] and len(mix) == 20 + 16 + 7


def test_train_full_writes_a_checkpoint_that_loads_and_logs_its_recipe(tmp_path, monkeypatch):
    """The shipped recipe end to end on a few pairs per split (the real run takes hours)."""
    import minformer.data as data
    from minformer import train_translator as T

    real = data.load_translation_pairs
    monkeypatch.setattr(data, "load_translation_pairs", lambda split: real(split)[:40])
    monkeypatch.setitem(T.FULL, "vocab_size", 300)
    monkeypatch.setitem(T.FULL, "concatenated", 10)
    monkeypatch.setitem(T.FULL, "eval_every", 2)
    # a small model: the recipe's path is under test, not its size (the full size took 49 s,
    # most of it an untrained model decoding to its length limit)
    for key, value in dict(d_model=32, n_heads=2, d_ff=64, n_layers=1).items():
        monkeypatch.setitem(T.FULL, key, value)
    log = T.train_full(tmp_path / "ck", steps=4, threads=1, progress=False)
    assert log["recipe"]["steps"] == 4 and log["recipe"]["schedule"] == "linear"
    assert log["fused_step"] is True
    assert log["history"]["steps"] == 4 and log["source_pairs"] == 120
    pairs = [p for split in T.TRAIN_SPLITS for p in data.load_translation_pairs(split)]
    assert log["train_pairs"] == len(T.training_mix(pairs, log["recipe"]))
    assert set(log["bleu"]) == {f"{s}_beam{b}" for s in T.SCORED_SPLITS for b in (1, 4)}
    tr = Translator.load(tmp_path / "ck", sha256=None)
    assert tr.model.config.dropout == T.FULL["dropout"] and tr.tokenizer.vocab_size == 300
    saved = json.loads((tmp_path / "ck" / "train_log.json").read_text(encoding="utf-8"))
    assert saved["bleu"] == log["bleu"] and saved["total_seconds"] >= saved["train_seconds"]


def test_a_given_transformer_keeps_its_own_position_limit(tok):
    """Training a given model on (as in fine-tuning): pairs longer than its positions are
    skipped as they are for a config."""
    long_pair = ("Go. " * 30, "Ve. " * 30)
    cfg = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                            max_len=40, dropout=0.0, pad_id=tok.pad_id, bos_id=tok.bos_id,
                            eos_id=tok.eos_id)
    first, _ = train_translator(cfg, tok, PAIRS, steps=2, batch_size=3, progress=False,
                                device="cpu")
    tr, history = train_translator(first.model, tok, PAIRS + [long_pair], steps=2, batch_size=3,
                                   progress=False, device="cpu")
    assert history.skipped == 1 and tr.max_source_tokens == 40


# --- bad inputs found by the sweep of issue 44 ------------------------------------------------


def test_save_never_replaces_a_file_or_a_folder_holding_other_files(tok, tmp_path):
    translator = Translator(tiny_model(tok), tok)
    mine = tmp_path / "notes.txt"
    mine.write_text("a reader's own file")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        translator.save(mine)
    assert mine.read_text() == "a reader's own file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # no temporaries left
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "thesis.tex").write_text("keep me")
    with pytest.raises(ValueError, match="thesis.tex"):
        translator.save(shared)
    assert (shared / "thesis.tex").read_text() == "keep me"
    # an old checkpoint is replaced, and the folder is an ordinary one (not mkdtemp's 0700)
    old = tmp_path / "ckpt"
    translator.save(old)
    translator.save(old)
    assert sorted(p.name for p in old.iterdir()) == sorted(
        ["model.pt", "config.json", "tokenizer.json", "train_log.json", "SHA256SUMS"])
    umask = os.umask(0)
    os.umask(umask)
    assert old.stat().st_mode & 0o777 == 0o777 & ~umask


@pytest.mark.parametrize("pairs, error", [
    (None, TypeError), ("en\tes", TypeError), ([("a", 1)], TypeError), ([(1, 2)], TypeError)])
def test_references_by_source_names_bad_pairs(pairs, error):
    with pytest.raises(error, match="pairs"):
        references_by_source(pairs)


def test_translator_refuses_what_is_not_a_model_and_bad_search_args(tok):
    with pytest.raises(TypeError, match="model must be a torch module"):
        Translator("m", tok)
    translator = Translator(tiny_model(tok), tok)
    with pytest.raises(ValueError, match="length_penalty must be a number, got NaN"):
        translator.translate(["a cat"], beam_size=4, length_penalty=float("nan"))
    src = torch.tensor(translator.encode_sources(["a cat"])[0])
    with pytest.raises(ValueError, match=r"src must be a \(batch, s\) tensor.*src\[None\]"):
        translator.search(src)
    assert translator.search(src[None]).shape[0] == 1


def test_output_ids_keep_the_eos_and_drop_the_padding():
    from minformer.translator import output_ids
    assert output_ids([5, 6, 2, 7], eos_id=2, pad_id=0) == [5, 6, 2]
    assert output_ids([5, 6, 0, 0], eos_id=2, pad_id=0) == [5, 6]
    assert output_ids([5, 6], eos_id=2, pad_id=0) == [5, 6]
    assert output_ids([], eos_id=2, pad_id=0) == []
