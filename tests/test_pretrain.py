"""Chapter 12's pretraining runs (minformer.pretrain): the windows, the recipe, the shipped runs and
the command that retrains them (on a small stand-in of the text)."""

import json

import pytest
import torch

import minformer.pretrain as pretrain
from minformer.pretrain import (
    build_run,
    chapter_tokenizer,
    encode_stream,
    load_pretrained,
    load_pretrained_tokenizer,
    random_windows,
    record_in_manifest,
    train_pretrained,
    train_run,
    window_batches,
    windows_of,
    word_stream,
)
from minformer.tokenizer import BPETokenizer
from minformer.transformer import DecoderOnly, EncoderOnly

WORDS = [w for i in range(400) for w in f"the cat {i % 7} sat on a mat <unk> near {i % 5}".split()]


def small_stream(n=5000):
    return torch.arange(n) % pretrain.V


def test_windows_of_cuts_consecutive_windows_and_drops_the_rest():
    W = windows_of(torch.arange(10), 3)
    assert W.tolist() == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    with pytest.raises(ValueError, match=r"at least length=4 .* shape \(3,\)"):
        windows_of(torch.arange(3), 4)
    with pytest.raises(ValueError, match=r"1-D .* shape \(2, 5\)"):
        windows_of(torch.zeros(2, 5), 2)


def test_random_windows_are_slices_of_the_stream_fixed_by_the_generator():
    ids = torch.arange(100)
    a = random_windows(ids, 8, 5, torch.Generator().manual_seed(3))
    b = random_windows(ids, 8, 5, torch.Generator().manual_seed(3))
    assert a.shape == (8, 5) and torch.equal(a, b)
    assert ((a[:, 1:] - a[:, :-1]) == 1).all()  # consecutive ids
    with pytest.raises(ValueError, match="longer than length=100"):
        random_windows(ids, 2, 100, torch.Generator())
    batches = window_batches(ids, 6, seed=1, device="cpu")
    first = next(batches)
    assert first.shape == (pretrain.BATCH, 6)
    assert torch.equal(first, random_windows(ids, pretrain.BATCH, 6,
                                             torch.Generator().manual_seed(1)))


def test_word_stream_replaces_words_seen_fewer_than_three_times_in_train():
    train, known = word_stream("train")
    valid, same = word_stream("valid", known)
    assert same is known and "<unk>" in train and "the" in known
    assert set(valid) <= known | {"<unk>"}
    assert len(train) == 1_750_946  # chapter 9's and chapter 11's count


def test_chapter_tokenizer_and_encode_stream_on_a_small_text():
    tok = chapter_tokenizer(WORDS)
    assert tok.id_to_token(pretrain.MASK) == "<mask>" and tok.id_to_token(pretrain.UNK) == "<unk>"
    ids = encode_stream(tok, ["the", "cat", "<unk>"])
    assert ids.dim() == 1 and pretrain.UNK in ids.tolist()  # <unk> is one special token
    assert tok.decode(ids.tolist()) == "the cat <unk>"


@pytest.mark.parametrize("name, kind", [("mlm", EncoderOnly), ("lm", DecoderOnly)])
def test_build_run_seeds_the_model_and_gives_a_loss_that_trains(name, kind):
    ids = small_stream()
    model, batches, loss_fn, optimizer, eval_fn = build_run(name, ids, ids)
    again = build_run(name, ids, ids)[0]
    assert isinstance(model, kind)
    for a, b in zip(model.parameters(), again.parameters()):
        assert torch.equal(a, b)  # seeded before it is built
    window = next(batches)
    assert window.shape == (pretrain.BATCH, pretrain.T + (name == "lm"))
    loss, n = loss_fn(model, window)
    assert loss.dim() == 0 and n > 0 and torch.isfinite(loss)
    assert 7.0 < eval_fn(model) < 9.5  # near ln V = 8.29 before training
    model2, history = train_run(name, ids, ids, steps=3, progress=False)
    assert history.steps == 3 and [s for s, _, _ in history.evals][-1] == 3
    with pytest.raises(ValueError, match=r"one of \['lm', 'mlm'\]; got 'gpt'"):
        build_run("gpt", ids, ids)


def test_the_shipped_runs_load_with_their_whole_histories():
    tok = load_pretrained_tokenizer()
    assert tok.vocab_size == pretrain.V
    for name, kind in (("mlm", EncoderOnly), ("lm", DecoderOnly)):
        model, history = load_pretrained(name, tok)
        assert isinstance(model, kind) and not model.training
        assert history.steps == pretrain.STEPS == len(history.lrs)
        assert [s for s, _, _ in history.evals][-1] == pretrain.STEPS
        assert history.evals[-1][2] < history.evals[0][2] - 0.3  # it learned
    log = json.loads((pretrain.data_dir() / pretrain.FOLDER / "runs.json").read_text())
    assert log["command"] == pretrain.REPRODUCE and log["steps"] == pretrain.STEPS


def test_load_pretrained_refuses_another_tokenizer_and_unknown_names():
    other = BPETokenizer.train(["a b c a b"], 270)
    with pytest.raises(ValueError, match="not the one the lm run was trained with"):
        load_pretrained("lm", other)
    with pytest.raises(ValueError, match=r"one of \['lm', 'mlm'\]; got 'bert'"):
        load_pretrained("bert")


def test_train_pretrained_writes_runs_that_load_back(tmp_path, monkeypatch):
    def small(split, known=None):
        words = WORDS if split == "train" else WORDS[:400]
        return list(words), known if known is not None else set(WORDS)

    monkeypatch.setattr(pretrain, "word_stream", small)
    out = tmp_path / "runs"
    log = train_pretrained(out, steps=2, progress=False)
    assert log["steps"] == 2 and log["threads"] == 1
    assert sorted(p.name for p in out.iterdir()) == [
        "lm-history.json", "lm.pt", "mlm-history.json", "mlm.pt", "runs.json", "tokenizer.json"]
    tok = load_pretrained_tokenizer(out)
    for name in ("mlm", "lm"):
        model, history = load_pretrained(name, tok, folder=out)
        assert history.steps == 2
    with pytest.raises(FileNotFoundError, match="no lm.pt in"):
        load_pretrained("lm", folder=tmp_path)


def test_record_in_manifest_lists_the_runs_with_their_command(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / pretrain.FOLDER).mkdir(parents=True)
    (data / pretrain.FOLDER / "lm.pt").write_bytes(b"weights")
    other = {"translation/train.tsv": {"sha256": "0" * 64, "bytes": 1, "source": "x"}}
    (data / "manifest.json").write_text(json.dumps({"about": "a", "files": other}))
    monkeypatch.setenv("MINFORMER_DATA", str(data))
    assert record_in_manifest() == [f"{pretrain.FOLDER}/lm.pt"]
    files = json.loads((data / "manifest.json").read_text())["files"]
    assert files[f"{pretrain.FOLDER}/lm.pt"]["source"] == pretrain.REPRODUCE
    assert "translation/train.tsv" in files
