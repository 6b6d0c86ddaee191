"""minformer.utils and minformer.DATA_DIR."""

import random
import time

import numpy as np
import pytest
import torch

import minformer
from minformer.utils import Timer, data_dir, pick_device, seed_everything


def test_seed_everything_makes_all_generators_repeat():
    seed_everything(123)
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(123)
    b = (random.random(), np.random.rand(), torch.rand(1).item())
    assert a == b
    seed_everything(124)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) != a


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.5, TypeError), ("3", TypeError),
                                        (True, TypeError)])
def test_seed_everything_rejects_bad_seeds(bad, error):
    with pytest.raises(error, match="seed must be an int"):
        seed_everything(bad)


def test_pick_device_prefers_accelerators(monkeypatch):
    assert pick_device().type in {"cuda", "mps", "cpu"}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device().type == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert pick_device().type == "cpu"
    assert pick_device("cpu") == torch.device("cpu")


def test_pick_device_errors():
    with pytest.raises(ValueError, match="unknown device"):
        pick_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="not available"):
            pick_device("cuda")


def test_timer_measures_elapsed_time():
    with Timer() as t:
        time.sleep(0.05)
        running = t.seconds
    assert 0.04 < t.seconds < 1.0
    assert running <= t.seconds
    assert "s)" in repr(t)
    with pytest.raises(RuntimeError, match="never started"):
        _ = Timer().seconds


def test_data_dir_finds_repository_data(monkeypatch):
    monkeypatch.delenv("MINFORMER_DATA", raising=False)
    path = data_dir()
    assert path.name == "data" and (path.parent / "code" / "minformer").is_dir()
    assert minformer.DATA_DIR == path


def test_data_dir_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("MINFORMER_DATA", str(tmp_path))
    assert data_dir() == tmp_path.resolve()
    monkeypatch.setenv("MINFORMER_DATA", str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="MINFORMER_DATA=.*not a folder"):
        data_dir()


def test_data_dir_missing_says_where_it_looked(monkeypatch, tmp_path):
    """A package installed outside a clone has no data/ beside it: the error says where we
    looked and how to fix it."""
    import minformer.utils as utils

    fake_module = tmp_path / "site" / "minformer" / "utils.py"
    fake_module.parent.mkdir(parents=True)
    monkeypatch.delenv("MINFORMER_DATA", raising=False)
    monkeypatch.setattr(utils, "__file__", str(fake_module))
    with pytest.raises(FileNotFoundError) as err:
        utils.data_dir()
    msg = str(err.value)
    assert str(tmp_path / "data") in msg and "MINFORMER_DATA" in msg and "pip install -e" in msg


def test_unknown_package_attribute():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        minformer.nope  # noqa: B018
