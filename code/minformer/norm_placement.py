"""Chapter 7's experiment on where the LayerNorm goes: a 6-layer encoder that sorts 12 digits,
post-norm against pre-norm, at two fixed learning rates, 250 Adam steps each.

The chapter builds the task, the model and the loop in its own cell and trains the first steps
of seed 0's four runs live. The whole runs, seed 0 and seeds 1 and 2 for the table over seeds,
are trained by ``python -m minformer.norm_placement`` (:func:`train_runs`) and shipped in
``data/checkpoints/norm-placement`` (every step's loss and the weights, float32, checked against
``data/manifest.json``); the chapter checks that this module's loop is its own, step for step,
that its live steps follow the shipped history, and measures the test accuracy of the shipped
weights itself.

- :class:`Sorter`, :func:`sort_batch` the task and the model;
- :func:`train_sorter` one run (seeded; returns the model and its losses);
- :func:`test_accuracy` the share of the 12,000 digits of 1,000 test strings put in place;
- :func:`load_run` a shipped run: the model and its losses.

The same runs at the larger learning rate with a linear warmup over the first 100 steps, both
placements, seeds 0, 1 and 2, are trained by ``python -m minformer.norm_placement --warmup``
(:func:`train_warmup_runs`) and shipped as one small file, ``data/checkpoints/
norm-placement-warmup/results.json`` (every step's loss, the test accuracy, the seconds; no
weights): :func:`load_warmup_runs` reads it.
"""

from __future__ import annotations

import io
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from . import validate
from .blocks import Encoder
from .data import cpu_name, read_shipped, record_shipped, retrain_command
from .utils import data_dir, pick_device, seed_everything

FOLDER = "checkpoints/norm-placement"  # under data/
REPRODUCE = "python -m minformer.norm_placement"
VOCAB, T = 10, 12  # digits, string length
STEPS, BATCH = 250, 32
LRS = (3e-3, 1e-2)
SEEDS = (0, 1, 2)  # the shipped seeds (the chapter trains the first steps of seed 0 itself)
# The warmup runs: both placements at the larger rate, its first WARMUP steps a linear ramp
WARMUP_FOLDER = "checkpoints/norm-placement-warmup"  # under data/
WARMUP_COMMAND = "python -m minformer.norm_placement --warmup"
WARMUP, WARMUP_LR = 100, 1e-2


def sort_batch(size: int, generator: torch.Generator):
    """``size`` random digit strings and their sorted versions: (size, T) each."""
    x = torch.randint(0, VOCAB, (size, T), generator=generator)
    return x, x.sort(dim=-1).values  # input, target (batch, T)


class Sorter(nn.Module):
    """Digits and positions embedded, a 6-layer encoder, a digit read out at every position."""

    def __init__(self, norm_first: bool, n_layers: int = 6, d_model: int = 64, n_heads: int = 4):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        self.position = nn.Embedding(T, d_model)
        self.encoder = Encoder(n_layers, d_model, n_heads, 4 * d_model, dropout=0.0,
                               norm_first=norm_first)
        self.read_out = nn.Linear(d_model, VOCAB)

    def forward(self, x):  # x: (batch, T)
        Z = self.embed(x) + self.position.weight  # (batch, T, D)
        return self.read_out(self.encoder(Z))  # (batch, T, VOCAB)


def train_sorter(norm_first: bool, lr: float, steps: int = STEPS, seed: int = 0, device="cpu",
                 warmup: int = 0):
    """One run as the chapter trains it: Adam at the fixed ``lr``, batches of 32 from a generator
    seeded with ``seed + 1``. Returns (model, the loss of every step).

    ``warmup`` > 0: the learning rate of step s (1, 2, ...) is ``lr * min(1, s / warmup)``, a
    linear ramp over the first ``warmup`` steps, then ``lr`` (the same model, batches and
    optimizer otherwise; ``warmup=0`` is the fixed-rate run, bit for bit)."""
    validate.positive_int(steps, "steps")
    validate.number(lr, "lr", low=0.0, low_open=True)
    validate.integer(warmup, "warmup", minimum=0)
    seed_everything(seed)
    device = pick_device(device) if isinstance(device, str) else device
    model = Sorter(norm_first).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)  # fixed lr unless warmup
    gen = torch.Generator().manual_seed(seed + 1)
    losses = []
    for step in range(1, steps + 1):
        if warmup:
            for group in opt.param_groups:
                group["lr"] = lr * min(1.0, step / warmup)
        x, y = (z.to(device) for z in sort_batch(BATCH, gen))
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if not math.isfinite(losses[-1]):
            raise FloatingPointError(f"train_sorter: the loss is {losses[-1]} at step {step} "
                                     f"(lr={lr:g}): training diverged; try a smaller lr")
    return model, losses


@torch.no_grad()
def test_accuracy(model: Sorter) -> float:
    """The share of digits put in their place, on 1,000 test strings (generator seed 99)."""
    device = next(model.parameters()).device
    x, y = (z.to(device) for z in sort_batch(1000, torch.Generator().manual_seed(99)))
    return (model(x).argmax(-1) == y).float().mean().item()


def run_name(norm_first: bool, lr: float, seed: int) -> str:
    """The folder of one run, e.g. "pre-norm-lr0.003-seed1"."""
    if not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be True or False; got {norm_first!r}")
    if lr not in LRS:
        raise ValueError(f"lr must be one of {LRS}; got {lr!r}")
    return f"{'pre' if norm_first else 'post'}-norm-lr{lr:g}-seed{validate.integer(seed, 'seed')}"


def train_runs(out=None, seeds: Sequence[int] = SEEDS, threads: int | None = 1,
               steps: int = STEPS) -> dict:
    """Retrain the shipped runs into ``out`` (default data/checkpoints/norm-placement): per seed,
    learning rate and norm placement, ``<run>/model.pt`` (float32 state dict) and
    ``<run>/history.json`` (every step's loss, the seconds); runs.json (recipe, machine)."""
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    out = Path(out) if out is not None else data_dir() / FOLDER
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    for seed in seeds:
        for lr in LRS:
            for norm_first in (False, True):
                start = time.perf_counter()
                model, losses = train_sorter(norm_first, lr, steps, seed)
                seconds = time.perf_counter() - start
                folder = out / run_name(norm_first, lr, seed)
                folder.mkdir(parents=True, exist_ok=True)
                torch.save({k: v.detach().cpu() for k, v in model.state_dict().items()},
                           folder / "model.pt")
                (folder / "history.json").write_text(
                    json.dumps({"losses": losses, "seconds": seconds}) + "\n", encoding="utf-8")
                print(f"{run_name(norm_first, lr, seed)}: {steps} steps in {seconds:.1f} s",
                      flush=True)
    log = {"command": REPRODUCE, "seeds": seeds, "steps": steps, "batch": BATCH, "lrs": LRS,
           "torch": torch.__version__, "threads": torch.get_num_threads(), "machine": cpu_name()}
    (out / "runs.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return log


def _bytes(relative: str, folder=None) -> bytes:
    return read_shipped(FOLDER, relative, folder, "train_runs")


def load_run(norm_first: bool, lr: float, seed: int, device=None,
             folder=None) -> tuple[Sorter, list[float]]:
    """A shipped run (checked against data/manifest.json, or read from ``folder``): the model in
    eval mode on ``device``, and the loss of every step."""
    run = run_name(norm_first, lr, seed)
    seeds = json.loads(_bytes("runs.json", folder))["seeds"]
    if seed not in seeds:
        raise ValueError(f"seed {seed} is not shipped; the shipped seeds are {seeds}")
    model = Sorter(norm_first)
    model.load_state_dict(torch.load(io.BytesIO(_bytes(f"{run}/model.pt", folder)),
                                     weights_only=True))
    device = pick_device(device) if device is None or isinstance(device, str) else device
    model.to(device).eval()
    return model, json.loads(_bytes(f"{run}/history.json", folder))["losses"]


def warmup_name(norm_first: bool, seed: int) -> str:
    """The key of one warmup run in results.json, e.g. "post-norm-seed1"."""
    if not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be True or False; got {norm_first!r}")
    return f"{'pre' if norm_first else 'post'}-norm-seed{validate.integer(seed, 'seed')}"


def train_warmup_runs(out=None, seeds: Sequence[int] = SEEDS, threads: int | None = 1,
                      steps: int = STEPS, warmup: int = WARMUP) -> dict:
    """Train both placements at WARMUP_LR with a linear warmup over the first ``warmup`` steps
    (:func:`train_sorter`), per seed, and write ``out``/results.json (default
    data/checkpoints/norm-placement-warmup): per run every step's loss, the test accuracy and
    the seconds (process time, one thread); with the recipe, torch's version and the machine."""
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    out = Path(out) if out is not None else data_dir() / WARMUP_FOLDER
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    runs = {}
    for seed in seeds:
        for norm_first in (False, True):
            start = time.process_time()
            model, losses = train_sorter(norm_first, WARMUP_LR, steps, seed, warmup=warmup)
            seconds = time.process_time() - start
            name = warmup_name(norm_first, seed)
            runs[name] = {"losses": losses, "accuracy": test_accuracy(model),
                          "cpu_seconds": round(seconds, 2)}
            print(f"{name}: {steps} steps, warmup {warmup}, in {seconds:.1f} s of CPU, "
                  f"test accuracy {runs[name]['accuracy']:.3f}", flush=True)
    log = {"command": WARMUP_COMMAND, "lr": WARMUP_LR, "warmup": warmup, "seeds": seeds,
           "steps": steps, "batch": BATCH, "torch": torch.__version__,
           "threads": torch.get_num_threads(), "machine": cpu_name(), "runs": runs}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(log) + "\n", encoding="utf-8")
    return log


def load_warmup_runs(folder=None) -> dict:
    """The shipped warmup runs (checked against data/manifest.json, or read from ``folder``):
    results.json as a dict; ``["runs"][warmup_name(norm_first, seed)]`` holds "losses",
    "accuracy" and "cpu_seconds"."""
    return json.loads(read_shipped(WARMUP_FOLDER, "results.json", folder, "train_warmup_runs"))


def record_in_manifest(folder=None) -> list[str]:
    """List every file of ``folder`` (default data/checkpoints/norm-placement) in
    data/manifest.json and data/SHA256SUMS with its sha256, size and command."""
    return record_shipped(FOLDER, REPRODUCE, folder)


def _warmup_option(parser) -> None:
    parser.add_argument("--warmup", action="store_true",
                        help=f"train the warmup runs instead (lr {WARMUP_LR:g}, a linear warmup "
                             f"over the first {WARMUP} steps, both placements) into "
                             f"data/{WARMUP_FOLDER}")


def _train_warmup(args) -> str:
    log = train_warmup_runs(args.out, args.seeds, args.threads)
    seconds = sum(run["cpu_seconds"] for run in log["runs"].values())
    return f"{len(log['runs'])} runs in {seconds:.0f} s of CPU"


def main(argv=None) -> int:
    """``python -m minformer.norm_placement [--warmup] [--out DIR] [--seeds S ...] [--threads N]``:
    retrain chapter 7's shipped sorters, or with ``--warmup`` its warmup runs
    (:func:`minformer.data.retrain_command`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--warmup" in argv:
        argv.remove("--warmup")
        return retrain_command(
            argv, WARMUP_FOLDER, WARMUP_COMMAND,
            f"Train chapter 7's warmup runs (post- and pre-norm at lr {WARMUP_LR:g}, a linear "
            f"warmup over the first {WARMUP} of {STEPS} steps, seeds 0, 1 and 2) into "
            f"data/{WARMUP_FOLDER}/results.json. About a minute on one thread.",
            _train_warmup, options=_warmup_option, seeds=SEEDS)
    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Retrain chapter 7's shipped sorters (post- and pre-norm at two learning rates, seeds 0, 1 "
        "and 2) into data/checkpoints/norm-placement. About two minutes on one thread.",
        lambda args: train_runs(args.out, args.seeds, args.threads), options=_warmup_option,
        seeds=SEEDS)


if __name__ == "__main__":
    raise SystemExit(main())
