"""minformer.utils and minformer.DATA_DIR."""

import io
import random
import sys
import time

import numpy as np
import pytest
import torch

import minformer
from minformer.utils import (
    Timer,
    data_dir,
    evaluating,
    pick_device,
    run_command,
    seed_everything,
)


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


# ----------------------------------------------------------------------------- evaluating


def _net():
    return torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5), torch.nn.Linear(3, 1))


def test_evaluating_switches_to_eval_without_grad_and_restores_the_mode():
    net = _net().train()
    x = torch.ones(4, 3)
    with evaluating(net) as inside:
        assert inside is net
        assert not any(m.training for m in net.modules())
        assert not torch.is_grad_enabled()
        y = net(x)
        assert not y.requires_grad
        assert torch.equal(net(x), y)  # dropout off: the same output twice
    assert all(m.training for m in net.modules()) and torch.is_grad_enabled()
    net.eval()
    with evaluating(net):
        pass
    assert not any(m.training for m in net.modules())  # an eval model stays in eval mode


def test_evaluating_restores_the_mode_after_an_exception():
    net = _net().train()
    with pytest.raises(RuntimeError, match="inside"):
        with evaluating(net):
            raise RuntimeError("inside")
    assert all(m.training for m in net.modules()) and torch.is_grad_enabled()


def test_evaluating_restores_each_submodules_own_flag():
    """A submodule kept in eval mode inside a training model (a frozen part) stays so."""
    net = _net().train()
    net[1].eval()
    with evaluating(net):
        pass
    assert [m.training for m in net] == [True, False, True] and net.training


def test_evaluating_nests():
    net = _net().train()
    with evaluating(net, no_grad=False):
        assert not net.training and torch.is_grad_enabled()
        with evaluating(net):
            assert not net.training and not torch.is_grad_enabled()
            with evaluating(net, no_grad=False):  # leaves the grad mode as it finds it
                assert not net.training and not torch.is_grad_enabled()
            assert not net.training and not torch.is_grad_enabled()
        assert not net.training and torch.is_grad_enabled()  # the inner exit kept eval mode
    assert net.training and torch.is_grad_enabled()


def test_evaluating_can_keep_gradients():
    net = _net().train()
    x = torch.ones(2, 3, requires_grad=True)
    with evaluating(net, no_grad=False):
        net(x).sum().backward()
        assert not net.training
    assert x.grad is not None and net.training


@pytest.mark.parametrize("model, no_grad, error, match", [
    ("net", True, TypeError, "model must be a torch.nn.Module; got str"),
    (None, "yes", TypeError, "no_grad must be True or False; got 'yes'"),
])
def test_evaluating_refuses_bad_arguments(model, no_grad, error, match):
    net = _net().train()
    with pytest.raises(error, match=match):
        with evaluating(net if model is None else model, no_grad=no_grad):
            pass
    assert net.training


class _Full(io.StringIO):
    def write(self, text):
        raise OSError(28, "No space left on device")


@pytest.mark.parametrize(("raised", "status", "line"), [
    (KeyboardInterrupt, 130, "prog: interrupted"),
    (BrokenPipeError, 0, ""),
])
def test_run_command_ends_with_one_line(monkeypatch, capsys, raised, status, line):
    def main(argv):
        raise raised

    assert run_command(main, "prog") == status
    assert capsys.readouterr().err.strip() == line


def test_run_command_names_an_output_that_cannot_be_written(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _Full())

    def main(argv):
        print("a line")
        return 0

    assert run_command(main, "prog") == 1
    assert capsys.readouterr().err == ("prog: error: cannot write to standard output: No space "
                                       "left on device\n")


def test_run_command_refuses_a_closed_output(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", None)
    assert run_command(lambda argv: 0, "prog") == 1
    assert "prog: error: standard output is closed" in capsys.readouterr().err


def test_run_command_leaves_other_os_errors_to_the_command(capsys):
    def main(argv):
        open("/nonexistent/file")  # noqa: SIM115 (an error reading, not writing)

    with pytest.raises(FileNotFoundError):
        run_command(main, "prog")
