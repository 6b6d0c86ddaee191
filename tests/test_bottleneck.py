"""Chapter 9's bottleneck experiment (minformer.bottleneck): the word-level data, the training loop,
the shipped runs and the command that retrains them (on a small stand-in of the pairs)."""

import json

import pytest

import minformer.bottleneck as bn
from minformer.rnn import Seq2SeqGRU

PAIRS = [(["i", "see", f"w{i % 9}"], ["veo", f"w{i % 9}"]) for i in range(200)]


def test_build_vocab_puts_the_specials_first_then_the_frequent_words_sorted():
    stoi, itos = bn.build_vocab([["b", "a", "b"], ["c", "b", "a", "a"]], min_count=2)
    assert itos == ["<pad>", "<bos>", "<eos>", "<unk>", "a", "b"]
    assert stoi["b"] == 5 and "c" not in stoi


def test_encode_pairs_pads_on_the_right_and_shifts_the_target():
    stoi, _ = bn.build_vocab([["x", "y"]] * 3)
    src, tgt_in, tgt_out = bn.encode_pairs([(["x", "z"], ["y"])], stoi, stoi)
    assert src.tolist() == [[4, bn.UNK, 0, 0, 0, 0]]  # z is unknown
    assert tgt_in.tolist() == [[bn.BOS, 5, 0, 0, 0, 0, 0]]
    assert tgt_out.tolist() == [[5, bn.EOS, 0, 0, 0, 0, 0]]
    with pytest.raises(ValueError, match="pair 0 has 7 and 1 words"):
        bn.encode_pairs([(["x"] * 7, ["y"])], stoi, stoi)
    assert [x.shape[1] for x in bn.trim(src, tgt_in, tgt_out)] == [2, 2, 2]


def test_short_pairs_keep_one_to_six_words_a_side():
    pairs = bn.short_pairs("valid")
    assert pairs and all(1 <= len(s) <= 6 and 1 <= len(t) <= 6 for s, t in pairs)


def test_training_is_seeded_and_the_first_steps_do_not_depend_on_the_total():
    stoi, itos = bn.build_vocab([w for p in PAIRS for w in p])
    data = bn.encode_pairs(PAIRS, stoi, stoi)
    model, losses = bn.train_translator(True, 3, data, len(itos), len(itos), steps=4)
    _, again = bn.train_translator(True, 3, data, len(itos), len(itos), steps=2)
    assert isinstance(model, Seq2SeqGRU) and len(losses) == 4 and again == losses[:2]
    assert bn.train_translator(True, 4, data, len(itos), len(itos), steps=2)[1] != again
    with pytest.raises(ValueError, match="steps"):
        bn.train_translator(True, 3, data, len(itos), len(itos), steps=0)


def test_the_shipped_runs_load_with_their_losses():
    log = json.loads((bn.data_dir() / bn.FOLDER / "runs.json").read_text())
    for attention in (False, True):
        model, losses = bn.load_run(attention, 1, log["n_src"], log["n_tgt"])
        assert model.attention is attention
        assert not model.training and len(losses) == bn.STEPS
        assert sum(losses[-50:]) < sum(losses[:50]) - 50  # it learned (mean down by 1+ nat)
    with pytest.raises(ValueError, match="vocabularies of"):
        bn.load_run(True, 1, 10, 10)
    with pytest.raises(ValueError, match="seed 7 is not shipped"):
        bn.load_run(True, 7, log["n_src"], log["n_tgt"])
    with pytest.raises(TypeError, match="attention must be True or False"):
        bn.run_name("yes", 1)


def test_train_runs_writes_runs_that_load_back(tmp_path, monkeypatch):
    stoi, itos = bn.build_vocab([w for p in PAIRS for w in p])
    monkeypatch.setattr(bn, "chapter_data",
                        lambda: (bn.encode_pairs(PAIRS, stoi, stoi), len(itos), len(itos)))
    log = bn.train_runs(tmp_path / "runs", seeds=[5], steps=2)
    assert log["seeds"] == [5] and log["n_src"] == len(itos)
    model, losses = bn.load_run(False, 5, len(itos), len(itos), folder=tmp_path / "runs")
    assert len(losses) == 2
    with pytest.raises(FileNotFoundError, match="no runs.json in"):
        bn.load_run(False, 5, len(itos), len(itos), folder=tmp_path)


def test_record_in_manifest_lists_the_runs_with_their_command(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / bn.FOLDER / "attention-seed1").mkdir(parents=True)
    (data / bn.FOLDER / "attention-seed1" / "model.pt").write_bytes(b"w")
    (data / "manifest.json").write_text(json.dumps({"about": "a", "files": {}}))
    monkeypatch.setenv("MINFORMER_DATA", str(data))
    assert bn.record_in_manifest() == [f"{bn.FOLDER}/attention-seed1/model.pt"]
    files = json.loads((data / "manifest.json").read_text())["files"]
    assert files[f"{bn.FOLDER}/attention-seed1/model.pt"]["source"] == bn.REPRODUCE


def test_the_shipped_control_loads_with_as_many_parameters_as_the_attention_model():
    log = json.loads((bn.data_dir() / bn.FOLDER / "runs.json").read_text())
    wide, losses = bn.load_wide(log["n_src"], log["n_tgt"])
    attention, _ = bn.load_run(True, 0, log["n_src"], log["n_tgt"])
    count = [sum(p.numel() for p in m.parameters()) for m in (wide, attention)]
    assert not wide.attention and abs(count[0] / count[1] - 1) < 0.01
    assert len(losses) == bn.STEPS and sum(losses[-50:]) < sum(losses[:50]) - 50
    with pytest.raises(ValueError, match="vocabularies of"):
        bn.load_wide(10, 10)
