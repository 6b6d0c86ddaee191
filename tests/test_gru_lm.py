"""Chapter 9's GRU language model run (minformer.gru_lm): the numbering, the loop, the shipped run
and the command that retrains it (on a stand-in of the text)."""

import json

import pytest
import torch

import minformer.gru_lm as gru_lm
import minformer.pretrain
from minformer.gru_lm import (
    build_model,
    frequency_ids,
    load_gru_lm,
    record_in_manifest,
    streams_of,
    train_gru_lm,
    train_steps,
)
from minformer.rnn import GRULanguageModel

# 10,100 distinct words (more than the adaptive softmax's last cutoff, 10,000), then a stream
WORDS = [f"w{i}" for i in range(10_100)] + [f"w{i % 50}" for i in range(6000)]


def test_frequency_ids_number_the_most_frequent_first_and_ties_by_first_sight():
    assert frequency_ids("b a c a b a".split()) == {"a": 0, "b": 1, "c": 2}
    assert frequency_ids("x y".split()) == {"x": 0, "y": 1}


def test_streams_of_cuts_the_stream_into_side_by_side_rows():
    S = streams_of(torch.arange(70), batch=4)
    assert S.shape == (4, 17) and S[1, 0] == 17 and S[3, -1] == 67
    with pytest.raises(ValueError, match=r"at least 64 ids; got shape \(10,\)"):
        streams_of(torch.arange(10))


def test_build_model_is_seeded():
    a, b = build_model(10_050), build_model(10_050)
    assert isinstance(a, GRULanguageModel) and a.embed.sparse
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_the_first_steps_of_a_run_are_the_same_whatever_steps_are_taken():
    """What the chapter relies on: its live steps are the shipped run's first ones."""
    ids = torch.randint(0, 10_050, (32 * 40 * 3,), generator=torch.Generator().manual_seed(0))
    short = train_steps(build_model(10_050), ids, 3, total=10)
    longer = train_steps(build_model(10_050), ids, 5, total=10)
    assert len(short) == 3 and len(longer) == 5 and short == longer[:3]
    other = train_steps(build_model(10_050), ids, 3, total=4)  # the schedule matters:
    assert other[:2] == short[:2] and other[2] != short[2]  # the second step's rate differs
    with pytest.raises(ValueError, match=r"steps \(5\) must not exceed total \(3\)"):
        train_steps(build_model(10_050), ids, 5, total=3)


def test_the_shipped_run_loads_with_its_losses():
    model, history = load_gru_lm()
    assert not model.training and len(history["losses"]) == gru_lm.STEPS
    assert all(v.dtype == torch.float32 for v in model.state_dict().values()
               if v.is_floating_point())
    first, last = history["losses"][:100], history["losses"][-100:]
    assert sum(last) / 100 < sum(first) / 100 - 0.5  # it learned
    with pytest.raises(ValueError, match="has 29,407 words; got vocab_size=100"):
        load_gru_lm(100)


def test_train_gru_lm_writes_a_run_that_loads_back(tmp_path, monkeypatch):
    monkeypatch.setattr(minformer.pretrain, "word_stream",
                        lambda split, known=None: (list(WORDS), set(WORDS)))
    log = train_gru_lm(tmp_path / "run", steps=2)
    assert log["steps"] == 2 and log["vocab_size"] == 10_100
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [
        "history.json", "model.pt", "run.json"]
    model, history = load_gru_lm(10_100, folder=tmp_path / "run")
    assert len(history["losses"]) == 2 and model.vocab_size == 10_100
    with pytest.raises(FileNotFoundError, match="no run.json in"):
        load_gru_lm(folder=tmp_path)


def test_record_in_manifest_lists_the_run_with_its_command(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / gru_lm.FOLDER).mkdir(parents=True)
    (data / gru_lm.FOLDER / "model.pt").write_bytes(b"weights")
    (data / "manifest.json").write_text(json.dumps({"about": "a", "files": {}}))
    monkeypatch.setenv("MINFORMER_DATA", str(data))
    assert record_in_manifest() == [f"{gru_lm.FOLDER}/model.pt"]
    files = json.loads((data / "manifest.json").read_text())["files"]
    assert files[f"{gru_lm.FOLDER}/model.pt"]["source"] == gru_lm.REPRODUCE


def test_a_damaged_run_folder_is_named_not_a_torch_traceback(tmp_path):
    import shutil

    from minformer.utils import data_dir

    folder = tmp_path / "run"
    shutil.copytree(data_dir() / gru_lm.FOLDER, folder)
    raw = (folder / "model.pt").read_bytes()
    (folder / "model.pt").write_bytes(raw[: len(raw) // 2])  # a cut download
    with pytest.raises(ValueError, match=r"run/model.pt is not a PyTorch checkpoint that can be "
                                         r"read .*damaged file; write it again with train_gru_lm"):
        load_gru_lm(folder=folder)
    torch.save([1, 2], folder / "model.pt")
    with pytest.raises(ValueError, match=r"model.pt holds a list, not a state dict"):
        load_gru_lm(folder=folder)
    torch.save({"embed.weight": torch.zeros(3, 2)}, folder / "model.pt")
    with pytest.raises(ValueError, match=r"model.pt does not fit GRULanguageModel: .*Missing key"):
        load_gru_lm(folder=folder)
    (folder / "run.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"run/run.json is not valid JSON"):
        load_gru_lm(folder=folder)
