"""The benchmarks' device plumbing (`--device cpu|cuda`) and a tiny run of each on the CPU.

The benchmarks themselves are timed by `make bench`, never here: these tests only check that
each one runs on the device it is given, waits for a GPU before it reads the clock, and refuses
a device it cannot use with a sentence rather than a stack trace from inside torch."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
sys.path.insert(0, str(BENCH))  # the benchmarks import their shared `interleave` module


def load(name):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


interleave = load("interleave")
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present here")


def test_device_from_names_cpu_and_refuses_others():
    assert interleave.device_from(None) == torch.device("cpu")
    assert interleave.device_from("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match=r"one of \('cpu', 'cuda'\); got device 'tpu'"):
        interleave.device_from("tpu")


@no_cuda
def test_device_from_cuda_without_a_gpu_says_so():
    with pytest.raises(ValueError, match="'cuda' is not available"):
        interleave.device_from("cuda")


def test_timed_waits_for_the_gpu_before_both_clock_reads(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append("sync"))
    run = interleave.timed(lambda: calls.append("work") or 7, torch.device("cuda"))
    seconds, out = run()
    assert out == 7 and seconds >= 0
    assert calls == ["sync", "work", "sync"]
    calls.clear()
    interleave.timed(lambda: calls.append("work"))()  # the CPU runs kernels inline
    assert calls == ["work"]


def test_interleaved_alternates_the_order():
    order = []
    out = interleave.interleaved({"a": lambda: order.append("a") or 1,
                                  "b": lambda: order.append("b") or 2}, 3)
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert out == {"a": [1, 1, 1], "b": [2, 2, 2]}


def test_attention_benchmark_runs_on_the_given_device():
    ours, theirs = load("attention").measure(16, 2, "cpu", batch=2)
    assert len(ours) == len(theirs) == 2 and min(ours + theirs) > 0


def test_memory_benchmark_on_the_cpu_sees_chunking_save_memory():
    bench = load("memory")
    results = bench.measure(1, "cpu", length=512)
    naive, chunked = (max(p for p, _ in results[k]) for k in ("naive", "chunked"))
    assert 0 < chunked < naive


def test_train_step_benchmark_moves_model_and_batches_to_the_device():
    rates = load("train_step").bench(1, None, "cpu", warmup=0)
    assert set(rates) == {"minformer", "nn.Transformer"}
    assert all(len(v) == 1 and v[0] > 0 for v in rates.values())


def test_translator_step_benchmark_times_both_steps_on_the_recipes_batches():
    bench = load("translator_step")
    from minformer.translator import Translator

    batches, per_step = bench.recipe_batches(Translator.load().tokenizer, 3)
    assert len(batches) == 3 and all(src.shape[0] == bench.FULL["batch_size"] for src, _ in batches)
    assert 1000 < per_step < 2500  # the mix's mean target tokens per step (1,572)
    # one step of each (a step of the recipe's batch takes seconds on a CPU; the suite times 4)
    r = bench.bench(1, "cpu", warmup=0, steps_per_rep=1)
    assert len(r["plain"]) == len(r["fused"]) == 1 and min(r["plain"] + r["fused"]) > 0
    assert bench.recipe_minutes(1.0, 1000.0) == pytest.approx(bench.FULL["steps"] / 60)


def test_decoding_benchmark_puts_translator_and_sources_on_the_device():
    bench = load("decoding")
    translator, src = bench.translator_and_sources("cpu")
    assert src.device.type == "cpu" and src.shape[0] == bench.BATCH
    assert next(translator.model.parameters()).device == src.device
    times = bench.measure(3, 1, translator, src)
    assert len(times["cached"]) == len(times["uncached"]) == 1


@no_cuda
def test_suite_refuses_cuda_here_before_any_work():
    got = subprocess.run([sys.executable, str(BENCH / "suite.py"), "--device", "cuda"],
                         capture_output=True, text=True, cwd=REPO, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(REPO / "code")})
    assert got.returncode != 0
    assert "'cuda' is not available" in got.stderr and "Traceback" not in got.stderr
    assert "[attention" not in got.stderr  # it stopped before the first benchmark
