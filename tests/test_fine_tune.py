"""Chapter 12's fine-tuning experiment (minformer.fine_tune): the blank-word task, the classifier,
the two encoders, the shipped accuracies and the command that reruns them (on small stand-ins)."""

import json

import pytest
import torch

import minformer.fine_tune as ft
from minformer.pretrain import PAD, load_pretrained, load_pretrained_tokenizer
from minformer.transformer import EncoderOnly, TransformerConfig
from minformer.translator import Translator

TINY = TransformerConfig(vocab_size=40, d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16,
                         norm_first=True, dropout=0.0)


def test_hide_topic_word_masks_the_one_topic_word_in_wikitext_spelling():
    assert ft.hide_topic_word("How much do you feed your dog?") == (
        "how much do you feed your <mask>", ft.CLASSES.index("animal"))
    assert ft.hide_topic_word("Don't drink the water.") == (
        "don t drink the <mask>", ft.CLASSES.index("food and drink"))
    assert ft.hide_topic_word("My dog likes my cat.") is None  # two topic words
    assert ft.hide_topic_word("It is raining.") is None  # none
    with pytest.raises(TypeError, match="sentence must be a str, got int"):
        ft.hide_topic_word(3)


def test_the_task_keeps_texts_with_one_label_in_a_fixed_shuffle():
    family = [f"My mother is {i}." for i in range(700)]
    places = [f"The school is {i}." for i in range(700)]
    pairs = [(e, "x") for e in family + places + ["I love my dog.", "I love my house.",
                                                  "My mother is 3."]]
    task = ft.blank_task(pairs)
    assert len(task.texts) == 1400 and "i love my <mask>" not in task.texts
    again = ft.blank_task(list(reversed(pairs)))  # the order of the pairs does not matter
    assert again.texts == task.texts and torch.equal(again.labels, task.labels)
    assert sorted(task.texts) != task.texts  # shuffled
    for text, english, label in zip(task.texts, task.english, task.labels.tolist()):
        assert ft.hide_topic_word(english) == (text, label)
    with pytest.raises(ValueError, match="more than 1000 sentences .* give 2"):
        ft.blank_task([("My mother is here.", "x"), ("The dog is here.", "x")])


def test_the_shipped_task_has_four_classes_and_a_pool_beyond_the_test_set():
    task = ft.blank_task()
    assert len(task.texts) > ft.TEST + max(ft.LABELS)
    assert set(task.labels.tolist()) == set(range(len(ft.CLASSES)))
    assert all(t.count("<mask>") == 1 for t in task.texts)


def test_translator_text_and_with_blank_point_the_head_at_something():
    assert ft.translator_text("Dogs bark at my cat's toy.") == "Something bark at my something's toy."
    translator = Translator.load()
    text = ft.translator_text("How much do you feed your dog?")
    ids, at = ft.with_blank(translator.tokenizer, text)
    assert "".join(translator.tokenizer.tokenize(text)[at:]).strip().startswith("something")
    assert ids == translator.tokenizer.encode(text)
    with pytest.raises(ValueError, match="no 'something' in 'Hello.'"):
        ft.with_blank(translator.tokenizer, "Hello.")


def test_the_classifier_reads_the_body_at_the_blank_only():
    torch.manual_seed(0)
    model = ft.BlankClassifier(EncoderOnly(TINY), 4).eval()
    ids = torch.randint(5, 40, (3, 6))
    blank = torch.tensor([0, 2, 5])
    h = model.body.hidden(ids)
    expected = model.head(h[torch.arange(3), blank])
    torch.testing.assert_close(model(ids, blank), expected)
    assert model(ids, blank).shape == (3, 4)
    assert ft.trim(torch.tensor([[3, 4, 0, 0], [5, 0, 0, 0]]), 0).tolist() == [[3, 4], [5, 0]]


def _tiny_encoder(n=1100, seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 40, (n, 5), generator=g)
    blank = torch.randint(0, 5, (n,), generator=g)
    ids[torch.arange(n), blank] = ft.MASK
    labels = ids[torch.arange(n), (blank + 1) % 5] % 4  # readable from the neighbour
    torch.manual_seed(1)
    weights = EncoderOnly(TINY).state_dict()
    return ft.Encoder(lambda: EncoderOnly(TINY), weights, ids, blank, PAD), labels


def test_fine_tune_is_seeded_and_learns_a_task_the_body_can_read():
    encoder, labels = _tiny_encoder()
    a = ft.fine_tune(encoder, labels, 100, seed=3, from_pretrained=True, steps=5, device="cpu")
    assert a == ft.fine_tune(encoder, labels, 100, seed=3, from_pretrained=True, steps=5,
                             device="cpu")
    assert 0 <= a <= 1 and a * ft.TEST == round(a * ft.TEST)
    with pytest.raises(ValueError, match="n_labels=101 is more than the pool's 100"):
        ft.fine_tune(encoder, labels, 101, seed=0, from_pretrained=False, device="cpu")
    with pytest.raises(ValueError, match="steps"):
        ft.fine_tune(encoder, labels, 10, seed=0, from_pretrained=False, steps=0, device="cpu")
    runs = ft.compare(encoder, labels, dict(steps=2, lr=1e-3), seeds=[0, 1], label_counts=[20],
                      device="cpu")
    assert set(runs) == {"scratch", "pretrained"} and len(runs["scratch"][20]) == 2
    assert "20" in ft.summarize(runs) and "points" in ft.summarize(runs)


def test_the_encoders_read_the_same_sentences_with_the_head_at_the_blank():
    task = ft.blank_task()
    tokenizer = load_pretrained_tokenizer()
    mlm, _ = load_pretrained("mlm", tokenizer, "cpu")
    masked = ft.masked_lm_encoder(task, tokenizer, mlm)
    assert masked.ids.shape[0] == len(task.texts)
    assert (masked.ids[torch.arange(len(task.texts)), masked.blank] == ft.MASK).all()
    body = masked.new_body()
    body.load_state_dict(masked.weights)
    translator = Translator.load()
    t = ft.translator_encoder(task, translator)
    assert t.ids.shape[0] == len(task.texts) and t.pad == translator.tokenizer.pad_id
    pieces = translator.tokenizer.tokenize(ft.translator_text(task.english[7]))
    assert "".join(pieces[int(t.blank[7]):]).strip().lower().startswith("something")


def test_the_shipped_accuracies_cover_every_run(tmp_path):
    accuracy, log = ft.load_results()
    assert log["seeds"] == list(ft.SEEDS) and log["command"] == ft.REPRODUCE
    for name in ("mlm", "translator"):
        assert set(accuracy[name]) == set(ft.STARTS)
        for start in ft.STARTS:
            assert sorted(accuracy[name][start]) == list(ft.LABELS)
            assert all(len(r) == len(ft.SEEDS) and all(0.25 < a < 0.8 for a in r)
                       for r in accuracy[name][start].values())
    with pytest.raises(FileNotFoundError, match="no results.json in"):
        ft.load_results(tmp_path)


def test_train_runs_writes_accuracies_that_load_back(tmp_path, monkeypatch):
    encoder, labels = _tiny_encoder()
    task = ft.BlankTask(["x"] * len(labels), ["x"] * len(labels), labels)
    monkeypatch.setattr(ft, "blank_task", lambda: task)
    monkeypatch.setattr(ft, "masked_lm_encoder", lambda *a: encoder)
    monkeypatch.setattr(ft, "translator_encoder", lambda *a: encoder)
    monkeypatch.setattr(ft, "LABELS", (10,))
    monkeypatch.setattr(ft, "RECIPES", {"mlm": dict(steps=1, lr=1e-3),
                                        "translator": dict(steps=1, lr=1e-3)})
    monkeypatch.setattr(ft, "VALID", 50)
    monkeypatch.setattr(ft, "GRID", (dict(steps=1, lr=1e-3), dict(steps=2, lr=1e-3)))
    monkeypatch.setattr(ft, "PROBE_LABELS", (10,))
    monkeypatch.setattr(ft, "PROBE", dict(steps=1, lr=1e-2, freeze=True))
    done = ft.train_runs(tmp_path, seeds=[4], threads=1)
    assert "mlm" in done and "translator" in done and "s of CPU" in done
    accuracy, log = ft.load_results(tmp_path)
    assert log["seeds"] == [4] and list(accuracy["mlm"]["pretrained"]) == [10]
    assert json.loads((tmp_path / "results.json").read_text())["threads"] == 1
    # each start's translator recipe is one of the grid, chosen on validation
    assert set(log["chosen"]) == set(ft.STARTS) and all(
        r in log["grid"] for r in log["chosen"].values())
    assert set(log["validation"]["scratch"]) == {"1@0.001", "2@0.001"}
    assert list(accuracy["translator_chosen"]["scratch"]) == [10]
    # the linear probe of the chapter's exercise: the masked LM, both starts, its recipe logged
    assert list(accuracy["probe"]["pretrained"]) == [10] and log["probe"]["freeze"] is True


def test_validation_labels_never_come_from_the_validation_sentences(monkeypatch):
    encoder, labels = _tiny_encoder()
    monkeypatch.setattr(ft, "VALID", 50)
    with pytest.raises(ValueError, match="pool"):   # pool 100 - 50 = 50 sentences
        ft.fine_tune(encoder, labels, 51, seed=0, from_pretrained=False, steps=1,
                     device="cpu", validation=True)
    a = ft.fine_tune(encoder, labels, 50, seed=0, from_pretrained=False, steps=1,
                     device="cpu", validation=True)
    assert abs(a * 50 - round(a * 50)) < 1e-9  # an accuracy over the 50 validation sentences


def test_a_frozen_body_does_not_change_and_only_the_head_learns(monkeypatch):
    encoder, labels = _tiny_encoder()
    made = []
    real = ft.BlankClassifier

    def spy(body, n):
        made.append(real(body, n))
        return made[-1]

    monkeypatch.setattr(ft, "BlankClassifier", spy)
    ft.fine_tune(encoder, labels, 20, seed=0, from_pretrained=True, steps=3, lr=1e-2,
                 device="cpu", freeze=True)
    body, head = made[-1].body, made[-1].head
    assert all(torch.equal(body.state_dict()[k], v) for k, v in encoder.weights.items())
    assert not any(p.requires_grad for p in body.parameters())
    ft.fine_tune(encoder, labels, 20, seed=0, from_pretrained=True, steps=3, lr=1e-2,
                 device="cpu")
    moved = made[-1]
    assert not all(torch.equal(moved.body.state_dict()[k], v)
                   for k, v in encoder.weights.items())
    assert not torch.equal(moved.head.weight, head.weight)  # the same start, trained more
