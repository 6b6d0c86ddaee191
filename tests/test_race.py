"""Chapter 13's race (minformer.race): the step-time ratio, equal compute, the shipped runs and the
command that retrains them (on a tiny stand-in of the data)."""

import json

import pytest
import torch

import minformer.data
import minformer.race as race
from minformer.data import float_state, half_state
from minformer.race import (
    build_model,
    equal_compute_steps,
    load_race_log,
    load_race_run,
    load_race_tokenizer,
    record_in_manifest,
    run_name,
    step_seconds,
    step_time_ratio,
    train_race,
)
from minformer.rnn import Seq2SeqGRU
from minformer.tokenizer import BPETokenizer
from minformer.transformer import Transformer

PAIRS = [(f"I see {w} {i}.", f"Veo {w} {i}.") for i in range(70)
         for w in ("the cat", "a dog", "the red house")]


@pytest.fixture(scope="module")
def small_tok():
    return BPETokenizer.train([s for p in PAIRS for s in p], 300)


def test_equal_compute_steps_divides_by_the_ratio():
    assert equal_compute_steps(1400, 1.4) == 1000
    assert equal_compute_steps(1400, 1.0) == 1400
    assert equal_compute_steps(1400, 0.5) == 2800  # a cheaper step gets more of them
    assert equal_compute_steps(3, 100.0) == 1  # never zero steps
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="ratio"):
            equal_compute_steps(1400, bad)
    with pytest.raises(ValueError, match="transformer_steps"):
        equal_compute_steps(0, 1.4)


def test_step_time_ratio_is_the_ratio_of_the_medians():
    seconds = {"transformer": [0.2, 0.1, 0.9], "gru": [0.3, 0.3, 0.1]}
    assert step_time_ratio(seconds) == pytest.approx(0.3 / 0.2)


def test_build_model_follows_the_recipes(small_tok):
    tf, gru = build_model("transformer", small_tok), build_model("gru", small_tok)
    assert isinstance(tf, Transformer) and isinstance(gru, Seq2SeqGRU)
    assert tf.config.d_model == race.RECIPES["transformer"]["d_model"]
    assert tf.config.vocab_size == small_tok.vocab_size and tf.config.pad_id == small_tok.pad_id
    assert race.transformer_config(small_tok) == tf.config  # what train_race hands train_translator
    with pytest.raises(ValueError, match="'lstm'"):
        build_model("lstm", small_tok)
    with pytest.raises(ValueError, match="seed"):
        run_name("gru", -1)
    assert run_name("gru", 3) == "gru-seed3"


def test_step_seconds_times_both_models_each_round(small_tok, monkeypatch):
    with pytest.raises(ValueError, match="batches"):
        step_seconds(small_tok, PAIRS, steps=3)  # 210 pairs make two batches of 128
    monkeypatch.setattr(race, "SHARED", {**race.SHARED, "batch_size": 16})
    seconds = step_seconds(small_tok, PAIRS, steps=3, rounds=2)
    assert set(seconds) == {"transformer", "gru"}
    assert all(len(v) == 2 and all(s > 0 for s in v) for v in seconds.values())
    with pytest.raises(ValueError, match="steps"):
        step_seconds(small_tok, PAIRS, steps=1)


def test_the_shipped_runs_load_checked_and_translate():
    log = load_race_log()
    assert log["steps"]["gru"] == equal_compute_steps(log["steps"]["transformer"], log["ratio"])
    assert len(log["seeds"]) >= 2
    tok = load_race_tokenizer()
    for name in race.RECIPES:
        for seed in log["seeds"]:
            translator, history = load_race_run(name, seed, tok)
            assert history.steps == log["steps"][name]
            assert not translator.model.training
            assert all(torch.isfinite(p).all() for p in translator.model.parameters())
    out = translator.translate(["Where is the cat?"])
    assert len(out) == 1 and out[0].strip()


def test_a_run_refuses_another_tokenizer(small_tok):
    with pytest.raises(ValueError, match="tokenizer is not the one"):
        load_race_run("transformer", 0, small_tok)


def test_a_changed_shipped_file_is_refused(tmp_path, monkeypatch):
    """The runs are read through the manifest's checksums: an altered history is refused."""
    data = minformer.data.data_dir()
    copy = tmp_path / "data"
    copy.mkdir()
    (copy / "manifest.json").write_bytes((data / "manifest.json").read_bytes())
    src = data / race.RACE
    dst = copy / race.RACE
    dst.mkdir(parents=True)
    for path in src.rglob("*"):
        if path.is_file():
            target = dst / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    history = dst / "gru-seed0" / "history.json"
    h = json.loads(history.read_text())
    h["evals"][-1][2] += 10.0  # a better-looking GRU
    history.write_text(json.dumps(h))
    monkeypatch.setenv("MINFORMER_DATA", str(copy))
    with pytest.raises(Exception, match="history.json"):
        load_race_run("gru", 0)


def test_train_race_end_to_end_on_a_tiny_stand_in(tmp_path, monkeypatch):
    """The command's whole path on 120 pairs, a 300-token BPE and 4 Transformer steps: the files
    it writes load back, the GRU's steps follow the ratio, and a second process's seeds are kept
    in race.json."""
    monkeypatch.setattr(minformer.data, "load_translation_pairs", lambda split: PAIRS)
    monkeypatch.setattr(race, "VOCAB", 300)
    monkeypatch.setattr(race, "TRANSFORMER_STEPS", 4)
    monkeypatch.setattr(race, "SHARED", {**race.SHARED, "batch_size": 16, "eval_every": 2,
                                         "eval_sentences": 5})
    monkeypatch.setitem(race.SLOW_LR, "steps", 3)
    out = tmp_path / "race"
    log = train_race(out, seeds=[0], ratio=2.0, progress=False)
    assert log["steps"] == {"transformer": 4, "gru": 2} and log["seeds"] == [0]
    slow = race.load_slow_lr_history(out)  # the lower learning rate's first steps, seed 0
    assert slow.steps == 3 and slow.losses[0] == load_race_run("transformer", 0, folder=out)[1].losses[0]
    log = train_race(out, seeds=[1], ratio=2.0, progress=False)
    assert log["seeds"] == [0, 1] and load_race_log(out)["seeds"] == [0, 1]
    for name in race.RECIPES:
        translator, history = load_race_run(name, 1, folder=out)
        assert history.steps == log["steps"][name]
        assert [s for s, _, _ in history.evals] == list(range(2, log["steps"][name] + 1, 2))
    # a ratio measured, not given: recorded with its seconds
    log = train_race(tmp_path / "measured", seeds=[0], progress=False)
    assert log["ratio"] > 0 and len(log["step_seconds"]["gru"]) == 5


def test_record_in_manifest_lists_every_file_with_its_command(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / race.RACE / "gru-seed0").mkdir(parents=True)
    (data / race.RACE / "gru-seed0" / "model.pt").write_bytes(b"weights")
    (data / race.RACE / "race.json").write_text("{}")
    other = {"translation/train.tsv": {"sha256": "0" * 64, "bytes": 1, "source": "x"},
             f"{race.RACE}/gone.json": {"sha256": "1" * 64, "bytes": 1, "source": "old"}}
    (data / "manifest.json").write_text(json.dumps({"about": "a", "files": other}))
    monkeypatch.setenv("MINFORMER_DATA", str(data))
    names = record_in_manifest()
    assert names == [f"{race.RACE}/gru-seed0/model.pt", f"{race.RACE}/race.json"]
    files = json.loads((data / "manifest.json").read_text())["files"]
    assert set(files) == {"translation/train.tsv", *names}  # a file no longer there is dropped
    assert files[names[0]]["bytes"] == 7 and files[names[0]]["source"] == race.REPRODUCE
    sums = (data / "SHA256SUMS").read_text().splitlines()
    assert len(sums) == 3 and sums[0].endswith(f"  {names[0]}")


def test_half_state_keeps_shared_tensors_shared(small_tok, tmp_path):
    model = build_model("transformer", small_tok)
    state = half_state(model.state_dict())
    assert all(v.dtype == torch.float16 for v in state.values() if v.is_floating_point())
    assert state["src_embed.weight"] is state["tgt_embed.weight"]  # tied: one tensor, saved once
    torch.save(state, tmp_path / "a.pt")
    untied = {k: v.clone() for k, v in state.items()}
    torch.save(untied, tmp_path / "b.pt")
    assert (tmp_path / "a.pt").stat().st_size < (tmp_path / "b.pt").stat().st_size
    for k, v in model.state_dict().items():
        assert torch.equal(state[k], v.half()), k
    back = float_state(state)  # read back: float32 again, within float16's rounding
    assert back.keys() == state.keys()
    for k, v in model.state_dict().items():
        assert back[k].dtype == v.dtype, k
        assert (torch.allclose(back[k], v, rtol=1e-3, atol=1e-4) if v.is_floating_point()
                else torch.equal(back[k], v)), k


def test_the_shipped_slow_learning_rate_run_starts_like_the_transformer_and_falls_slower():
    slow = race.load_slow_lr_history()
    _, fast = load_race_run("transformer", 0)
    assert slow.steps == race.SLOW_LR["steps"] == 100
    assert abs(slow.losses[0] - fast.losses[0]) < 1e-4  # same weights and first batch
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert mean(slow.losses[50:100]) > mean(fast.losses[50:100]) + 0.3
