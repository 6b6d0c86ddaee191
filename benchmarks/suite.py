"""`make bench`: every speed and memory claim of the book, measured in one run, in one table.

Runs the benchmarks of this folder one after another (each interleaves the two things it
compares, alternating which goes first, so a shared machine's load falls on both), prints one
table of ratios (median over repetitions, with min–max of the per-repetition ratios) and writes
it with a description of the machine to benchmarks/results.md, which the book shows as an
appendix. The whole-book row comes from the per-notebook times that the last `make test` left in
_build/notebook-times.txt (or --test-log FILE, the output of a `make test`); without one the row
says so. Takes about 3 minutes on the book's 2-core machine; kept out of `make test`.

    python benchmarks/suite.py [--quick] [--device cpu|cuda] [--test-log FILE] [--out FILE]

--device cuda runs the attention, training-step, KV-cache and memory benchmarks on the GPU
(the BPE rows stay on the CPU, where tokenizers run) and writes benchmarks/results-cuda.md
unless --out says otherwise, so the CPU table the book shows is not overwritten.

BENCH_NOTE="..." adds a line to the machine description (say what else was running).
"""

import argparse
import datetime
import importlib.util
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from interleave import DEVICES, device_from

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NUMERIC_ENV = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS",
               "MKL_NUM_THREADS", "RAYON_NUM_THREADS")


def load(name: str):
    """benchmarks/<name>.py as a module (its name would clash with minformer's modules)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def summary(ratios) -> tuple[float, float, float]:
    return statistics.median(ratios), min(ratios), max(ratios)


def row(what, measured, ratios, goal=None, met=None):
    med, lo, hi = summary(ratios)
    verdict = "report" if met is None else ("met" if met(med) else "**not met**")
    return {"what": what, "measured": measured, "ratio": f"{med:.3g} ({lo:.3g}–{hi:.3g})",
            "goal": goal or "", "verdict": verdict}


def attention_rows(quick: bool, device: str = "cpu"):
    bench = load("attention")
    rows = []
    for L, reps in ({64: 6, 256: 3, 1024: 2} if quick else {64: 30, 256: 10, 1024: 4}).items():
        ours, theirs = bench.measure(L, reps, device)
        rows.append(row(f"MultiHeadAttention fwd+bwd / nn.MultiheadAttention, L = {L}",
                        f"{statistics.median(ours) * 1e3:.1f} vs "
                        f"{statistics.median(theirs) * 1e3:.1f} ms ({reps} reps)",
                        [a / b for a, b in zip(ours, theirs)], "≤ 0.90", lambda r: r <= 0.90))
    return rows


def train_rows(quick: bool, device: str = "cpu"):
    bench = load("train_step")
    rows, reps = [], 2 if quick else 8
    for label, dtype in (("fp32", None), ("bf16 autocast", torch.bfloat16)):
        rates = bench.bench(reps, dtype, device)
        ours, theirs = rates["minformer"], rates["nn.Transformer"]
        fp32 = dtype is None
        rows.append(row(f"training step tokens/s, minformer / nn.Transformer, {label}",
                        f"{statistics.median(ours):,.0f} vs {statistics.median(theirs):,.0f} "
                        f"tokens/s ({reps} reps)", [a / b for a, b in zip(ours, theirs)],
                        "≥ 1.1" if fp32 else "", (lambda r: r >= 1.1) if fp32 else None))
    return rows


def recipe_rows(quick: bool, device: str = "cpu"):
    bench = load("translator_step")
    reps = 2 if quick else 8
    r = bench.bench(reps, device)
    plain, fused = (statistics.median(r[k]) for k in ("plain", "fused"))
    minutes = bench.recipe_minutes(fused, r["tokens_per_step"])
    return [row("shipped translator's training step (train_translator --full), fused / plain, "
                "ms per target token",
                f"{fused:.3f} vs {plain:.3f} ms ({reps} reps of {bench.STEPS_PER_REP} steps): "
                f"{minutes:.0f} min for the recipe's {bench.FULL['steps']:,} steps",
                [f / p for f, p in zip(r["fused"], r["plain"])])]


def decoding_rows(quick: bool, device: str = "cpu"):
    bench = load("decoding")
    rows = []
    translator, src = bench.translator_and_sources(device)
    for n, goal in bench.GOALS.items():
        reps = 1 if quick else (5 if n < 100 else 3)
        t = bench.measure(n, reps, translator, src)
        rows.append(row(f"greedy decoding speed-up with the KV cache, shipped translator, "
                        f"{bench.BATCH} test sentences, {n} tokens (identical tokens asserted)",
                        f"{statistics.median(t['uncached']):.2f} s without vs "
                        f"{statistics.median(t['cached']):.2f} s with ({reps} reps)",
                        [u / c for u, c in zip(t["uncached"], t["cached"])], f"≥ {goal:.0f}",
                        lambda r, goal=goal: r >= goal))
    return rows


def memory_rows(quick: bool, device: str = "cpu"):
    bench = load("memory")
    results = bench.measure(1 if quick else 2, device)
    naive, chunked = ([p for p, _ in results[k]] for k in ("naive", "chunked"))
    sdpa = max(p for p, _ in results["torch SDPA"])
    return [row(f"peak memory, chunked / naive attention, L = {bench.L} (forward, "
                f"{bench.HEADS} heads, blocks of {bench.BLOCK})",
                f"{max(chunked) / 2**20:.1f} vs {max(naive) / 2**20:.1f} MiB "
                f"(torch SDPA {sdpa / 2**20:.1f})",
                [c / n for c, n in zip(chunked, naive)], "≤ 0.125", lambda r: r <= 1 / 8)]


def bpe_rows(quick: bool, device: str = "cpu"):  # tokenizers run on the CPU whatever device
    bench = load("bpe")
    repeats = 1 if quick else 3
    t, ours, theirs, ours_tps, theirs_tps = bench.measure(repeats)
    rows = []
    for what, key in (("training to 8,000 tokens", "train"), ("encoding the train split",
                                                               "enc")):
        mine, other = t[f"ours_{key}"], t[f"theirs_{key}"]
        rows.append(row(f"BPE {what}, time minformer / tokenizers",
                        f"{statistics.median(mine):.2f} vs {statistics.median(other):.2f} s "
                        f"({repeats} reps)", [a / b for a, b in zip(mine, other)]))
    rows.append(row("BPE tokens per held-out sentence, minformer / tokenizers",
                    f"{ours_tps:.3f} vs {theirs_tps:.3f}", [ours_tps / theirs_tps]))
    return rows


TIME_LINE = re.compile(r"^\s*([\d.]+) s\s+(chapters/\S+\.ipynb|total)\s*$")


def book_rows(test_log: Path | None):
    path = test_log or REPO / "_build" / "notebook-times.txt"
    if not path.exists():
        return [{"what": "whole book under nbval, per chapter", "measured":
                 f"skipped: no {path.relative_to(REPO) if path.is_relative_to(REPO) else path}"
                 " (run `make test` first)", "ratio": "", "goal": "", "verdict": "skipped"}]
    times = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        m = TIME_LINE.match(line)
        if m:
            times[m.group(2)] = float(m.group(1))  # the last section of the log wins
    when = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)
    source = f"from {path.name}, {when:%Y-%m-%d %H:%M} UTC"
    rows = [{"what": f"nbval time, {Path(name).stem}" if name != "total" else
             "nbval time, whole book (sum of cell times; two workers share the cores)",
             "measured": f"{seconds:.1f} s", "ratio": "", "goal": "", "verdict": source}
            for name, seconds in times.items()]
    return rows or [{"what": "whole book under nbval", "measured": f"no times in {path}",
                     "ratio": "", "goal": "", "verdict": "skipped"}]


def cpu_model() -> str:
    """The model name of /proc/cpuinfo, with its family and model numbers (a name such as
    "AMD EPYC" alone does not tell Zen 4, family 25, from Zen 5, family 26)."""
    try:
        fields = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
        bf16 = "avx512_bf16" in fields.get("flags", "").split()
        return (f"{fields['model name']} (cpu family {fields.get('cpu family', '?')}, model "
                f"{fields.get('model', '?')}; bf16 instructions: {'yes' if bf16 else 'no'})")
    except (OSError, KeyError):
        return platform.processor() or platform.machine()


def gpu_model(device: str) -> list[str]:
    """A line naming the GPU the benchmarks ran on, when they ran on one."""
    if device != "cuda":
        return []
    props = torch.cuda.get_device_properties(0)
    return [f"- GPU: {props.name}, {props.total_memory / 2**30:.0f} GiB (CUDA "
            f"{torch.version.cuda}); the BPE rows ran on the CPU"]


def machine(device: str = "cpu") -> list[str]:
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    env = ", ".join(f"{k}={os.environ.get(k, '(unset)')}" for k in NUMERIC_ENV)
    return [f"- CPU: {cpu_model()}, {os.cpu_count()} logical cores "
            f"(PyTorch kernels: {torch.backends.cpu.get_cpu_capability()})",
            f"- PyTorch {torch.__version__}, {torch.get_num_threads()} thread(s); Python "
            f"{platform.python_version()}; {platform.system()} {platform.release()}",
            *gpu_model(device),
            f"- numeric environment: {env}",
            f"- commit {commit}; run on {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
            *([f"- note: {os.environ['BENCH_NOTE']}"] if os.environ.get("BENCH_NOTE") else [])]


def table(rows) -> list[str]:
    lines = ["| benchmark | measured | ratio: median (min–max) | goal | verdict |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['what']} | {r['measured']} | {r['ratio']} | {r['goal']} | {r['verdict']} |"
              for r in rows]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one or two repetitions each")
    parser.add_argument("--test-log", type=Path, default=None)
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    parser.add_argument("--out", type=Path, default=None,
                        help="default benchmarks/results.md (results-cuda.md with --device cuda)")
    args = parser.parse_args()
    try:
        device_from(args.device)  # a clear error before any work when CUDA is absent
    except ValueError as e:
        parser.error(str(e))
    out = args.out or HERE / ("results.md" if args.device == "cpu" else "results-cuda.md")
    start = time.perf_counter()
    rows = []
    for name, fn in (("attention", attention_rows), ("training step", train_rows),
                     ("translator recipe step", recipe_rows), ("KV cache", decoding_rows),
                     ("memory", memory_rows), ("BPE", bpe_rows)):
        t0 = time.perf_counter()
        rows += fn(args.quick, args.device)
        print(f"[{name}: {time.perf_counter() - t0:.0f} s]", file=sys.stderr, flush=True)
    rows += book_rows(args.test_log)
    lines = table(rows)
    print("\n".join(lines))
    total = time.perf_counter() - start
    print(f"\n{total:.0f} s in all")
    text = ["Measured by `make bench` (benchmarks/suite.py) in one run of "
            f"{total / 60:.1f} minutes{' (--quick)' if args.quick else ''}, on "
            f"{args.device}. Each ratio compares "
            "two things timed in interleaved repetitions on the same machine; the median is "
            "over the repetitions, with the smallest and largest per-repetition ratio in "
            "brackets. Times are wall-clock on a machine that other jobs may share.",
            "", *machine(args.device), "", *lines, ""]
    if args.device == "cpu":  # the page translator runs in a browser, on the CPU
        import browser_translator

        try:
            page = browser_translator.table(browser_translator.measure())
        except SystemExit as e:  # no Chromium on this machine
            page = [f"The page translator was not measured: {e}"]
        print("\n".join(page))
        text += ["The translator of the book's pages, in JavaScript, measured in headless "
                 "Chromium (benchmarks/browser_translator.py):", "", *page, ""]
    out.write_text("\n".join(text), encoding="utf-8")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
