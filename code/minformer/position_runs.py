"""Chapter 8's experiment that needs order: is a sequence of 8 distinct tokens sorted?

Each example is a random set of 8 of 16 tokens, once in increasing order (label 1) and once with
two tokens swapped (label 0). A one-layer Transformer classifier (embeddings, optionally
positions, one encoder layer, the mean over the tokens, two logits) learns it with no positions,
sinusoidal positions or a learned table, 600 Adam steps of 128 sequences.

The chapter builds the task, the model and the loop in its own cells and trains seed 0 live. The
five seeds 0-4 are trained by ``python -m minformer.position_runs`` (:func:`train_runs`, about a
minute of one CPU thread) and shipped as one small JSON file,
``data/checkpoints/position-runs/results.json`` (checked against ``data/manifest.json``): per
seed and variant the test-accuracy curve, and per seed what the chapter measures of its trained
models (P(sorted) of the first test pair, the sinusoidal model on longer sequences). The chapter
checks that its live seed 0 agrees with the shipped seed 0.

- :func:`make_pairs`, :class:`SortedClassifier` the task and the model (as the chapter has them);
- :func:`train` one run (seeded; returns the model and its curve of (step, loss, test accuracy));
- :func:`measure` what the chapter reads of a seed's trained models;
- :func:`load_results` the shipped results.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from . import validate
from .blocks import EncoderLayer
from .data import cpu_name, read_shipped, retrain_command
from .positional import LearnedPositions, SinusoidalPositions
from .utils import data_dir, pick_device, seed_everything

FOLDER = "checkpoints/position-runs"  # under data/
REPRODUCE = "python -m minformer.position_runs"
SEEDS = (0, 1, 2, 3, 4)  # the shipped seeds (the chapter trains seed 0 itself)
VOCAB, T = 16, 8
STEPS, BATCH, EVAL_EVERY = 600, 128, 25
POSITIONS = ("none", "sinusoidal", "learned")
LONG = (8, 9, 10, 12)  # the lengths the sinusoidal models are tested on


def make_pairs(n_sets: int, t: int = T, gen: torch.Generator | None = None):
    """n_sets random sets of t distinct tokens, each once sorted (label 1) and once with two
    tokens swapped (label 0). Returns tokens (2·n_sets, t) and labels (2·n_sets,)."""
    scores = torch.rand(n_sets, VOCAB, generator=gen)
    tokens = scores.argsort(dim=1)[:, :t].sort(dim=1).values  # (n_sets, t)
    swapped = tokens.clone()
    i = torch.randint(0, t, (n_sets,), generator=gen)
    j = (i + torch.randint(1, t, (n_sets,), generator=gen)) % t  # j != i
    rows = torch.arange(n_sets)
    swapped[rows, i], swapped[rows, j] = tokens[rows, j], tokens[rows, i]
    labels = torch.cat([torch.ones(n_sets), torch.zeros(n_sets)]).long()
    return torch.cat([tokens, swapped]), labels


def test_pairs():
    """The chapter's test set: 1,000 sorted sequences and their swapped twins (seed 123)."""
    return make_pairs(1000, gen=torch.Generator().manual_seed(123))


class SortedClassifier(nn.Module):
    """tokens (batch, t) → embeddings (+ positions) → 1 encoder layer → mean over tokens
    → 2 logits (batch, 2)."""

    def __init__(self, positions: str, d_model: int = 32):
        super().__init__()
        if positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}; got {positions!r}")
        self.embed = nn.Embedding(VOCAB, d_model)
        self.layer = EncoderLayer(d_model, n_heads=2, d_ff=64, dropout=0.0)
        self.head = nn.Linear(d_model, 2)
        # positions last, so the other weights start equal in all variants
        if positions == "sinusoidal":  # max_len 16: room for longer tests
            self.positions = SinusoidalPositions(max_len=16, d_model=d_model)
        elif positions == "learned":
            self.positions = LearnedPositions(max_len=T, d_model=d_model)
        else:
            self.positions = None

    def forward(self, tokens):
        x = self.embed(tokens)  # (batch, t, d_model)
        if self.positions is not None:
            x = self.positions(x)  # (batch, t, d_model)
        h = self.layer(x)  # (batch, t, d_model)
        return self.head(h.mean(dim=1))  # (batch, 2)


@torch.no_grad()
def accuracy(model, X, y) -> float:
    """The share of the sequences X (n, t) whose predicted label is y (n,)."""
    device = next(model.parameters()).device
    model.eval()
    pred = model(X.to(device)).argmax(dim=1).cpu()
    model.train()
    return (pred == y).float().mean().item()


def train(positions: str, steps: int = STEPS, seed: int = 0, device="cpu"):
    """One run as the chapter trains it: weights from ``seed``, batches of 128 from a generator
    seeded with ``seed + 1``, Adam at 3e-3, the test accuracy every 25 steps. Returns (model,
    curve), the curve a list of (step, loss of that step's batch, test accuracy)."""
    validate.positive_int(steps, "steps")
    seed = validate.integer(seed, "seed", minimum=0)
    device = pick_device(device) if isinstance(device, str) else device
    X_test, y_test = test_pairs()
    seed_everything(seed)
    model = SortedClassifier(positions).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed + 1)  # same batches for all
    curve = []
    for step in range(1, steps + 1):
        X, y = make_pairs(BATCH // 2, gen=gen)
        loss = F.cross_entropy(model(X.to(device)), y.to(device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % EVAL_EVERY == 0:
            curve.append((step, loss.item(), accuracy(model, X_test, y_test)))
    return model, curve


@torch.no_grad()
def measure(models: dict) -> dict:
    """What the chapter reads of one seed's trained models ({positions: model}):
    ``p_sorted`` {"none", "sinusoidal": [P(sorted) of the first test sequence, of its swapped
    twin]}; ``long`` {t: accuracy of the sinusoidal model on 1,000 sorted sequences of t tokens
    and their twins (generator seed 7)} for t in 8, 9, 10, 12; ``called_sorted_12`` the share of
    the 12-token sequences it calls sorted."""
    X_test, _ = test_pairs()
    out = {"p_sorted": {}}
    for positions in ("none", "sinusoidal"):
        model = models[positions].eval()
        device = next(model.parameters()).device
        pair = torch.stack([X_test[0], X_test[1000]]).to(device)  # (2, t)
        out["p_sorted"][positions] = model(pair).softmax(dim=1)[:, 1].cpu().tolist()
    model = models["sinusoidal"]
    out["long"] = {}
    for t in LONG:
        X_long, y_long = make_pairs(1000, t=t, gen=torch.Generator().manual_seed(7))
        out["long"][t] = accuracy(model, X_long, y_long)
    model.eval()  # X_long is the t = 12 set
    called = model(X_long.to(next(model.parameters()).device)).argmax(dim=1).float().mean()
    out["called_sorted_12"] = called.item()
    return out


def train_runs(out=None, seeds: Sequence[int] = SEEDS, threads: int | None = 1,
               steps: int = STEPS) -> str:
    """Train the three variants from each seed on the CPU and write ``out``/results.json
    (default data/checkpoints/position-runs): per seed the curves, the parameter counts and
    :func:`measure`'s numbers; the recipe, torch's version, the threads and the machine. Returns
    a line with the time it took."""
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    steps = validate.positive_int(steps, "steps")
    out = Path(out) if out is not None else data_dir() / FOLDER
    start, cpu = time.perf_counter(), time.process_time()
    runs = {}
    for seed in seeds:
        models, curves = {}, {}
        for positions in POSITIONS:
            models[positions], curves[positions] = train(positions, steps, seed)
        runs[str(seed)] = {
            "curves": curves,
            "parameters": {p: sum(w.numel() for w in m.parameters()) for p, m in models.items()},
            **measure(models)}
        print(f"seed {seed}: final test accuracy "
              + ", ".join(f"{p} {c[-1][2]:.3f}" for p, c in curves.items()), flush=True)
    log = {"command": REPRODUCE, "seeds": seeds, "steps": steps, "batch": BATCH,
           "eval_every": EVAL_EVERY, "torch": torch.__version__,
           "threads": torch.get_num_threads(), "machine": cpu_name(),
           "cpu_seconds": round(time.process_time() - cpu, 1), "runs": runs}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return (f"total {time.perf_counter() - start:.0f} s of wall clock, {log['cpu_seconds']:.0f} s "
            f"of CPU, {torch.get_num_threads()} thread(s)")


def load_results(folder=None) -> dict:
    """The shipped runs (results.json, checked against data/manifest.json, or read from
    ``folder``): the file's contents with the seeds and lengths as integers and each curve a
    list of (step, loss, accuracy) tuples, ``runs`` = {seed: {"curves": {positions: curve},
    "parameters", "p_sorted", "long": {t: accuracy}, "called_sorted_12"}}."""
    log = json.loads(read_shipped(FOLDER, "results.json", folder, "train_runs"))
    runs = {}
    for seed, run in log["runs"].items():
        run["curves"] = {p: [tuple(point) for point in c] for p, c in run["curves"].items()}
        run["long"] = {int(t): acc for t, acc in run["long"].items()}
        runs[int(seed)] = run
    log["runs"] = runs
    return log


def main(argv=None) -> int:
    """``python -m minformer.position_runs [--out DIR] [--seeds S ...] [--threads N]``: retrain
    chapter 8's shipped runs (:func:`minformer.data.retrain_command`)."""
    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Retrain chapter 8's is-it-sorted classifiers (no positions, sinusoidal, learned; seeds "
        "0 to 4, 600 steps each) on the CPU into data/checkpoints/position-runs/results.json. "
        "About 70 s on one thread.",
        lambda args: train_runs(args.out, args.seeds, args.threads), seeds=SEEDS)


if __name__ == "__main__":
    raise SystemExit(main())
