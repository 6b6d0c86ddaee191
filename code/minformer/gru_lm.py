"""Chapter 9's GRU language model on WikiText-2: 1,200 steps of truncated backpropagation through
time, the chapter's recipe, shipped so that the chapter can load it.

The chapter writes the training loop in its own cell and runs its first :data:`LIVE_STEPS` steps,
enough to watch the loss fall; then it loads the whole run from ``data/checkpoints/gru-lm``
(float16 weights and every step's loss, checked against ``data/manifest.json``), checks that
the live steps are the run's first ones, and scores the run against the n-gram models.
``python -m minformer.gru_lm`` (:func:`train_gru_lm`) retrains and rewrites it.

- :func:`frequency_ids` the words numbered by decreasing training frequency, as the adaptive
  softmax needs them;
- :func:`build_model` the model, seeded as the chapter builds it;
- :func:`train_steps` the training loop (32 streams, windows of 35 words, Adam and SparseAdam
  with a learning rate falling linearly to zero, gradients clipped to norm 1);
- :func:`load_gru_lm` the shipped run: the model and its loss at every step.
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from . import validate
from .data import (
    cpu_name,
    float_state,
    half_state,
    load_weights,
    read_shipped,
    read_shipped_json,
    read_shipped_state,
    record_shipped,
    retrain_command,
    shipped_where,
)
from .rnn import GRULanguageModel
from .utils import data_dir, pick_device, seed_everything

FOLDER = "checkpoints/gru-lm"  # under data/
REPRODUCE = "python -m minformer.gru_lm"
STEPS, BATCH, BPTT = 1200, 32, 35
LIVE_STEPS = 200  # what the chapter trains itself before loading the rest
LR = 1e-2
CUTOFFS = (2000, 10000)
MODEL = dict(d_emb=128, d_hidden=128, div_value=4.0, sparse=True)
SEED = 0


def frequency_ids(train: Sequence[str]) -> dict[str, int]:
    """Each word of ``train`` numbered by decreasing count (ties: first seen first)."""
    if isinstance(train, (str, bytes)):
        validate.str_list(train, "train", "training words")  # the error for a single str
    return {w: i for i, (w, _) in enumerate(collections.Counter(train).most_common())}


def build_model(vocab_size: int, seed: int = SEED, device="cpu") -> GRULanguageModel:
    """The chapter's model on ``vocab_size`` words, its weights drawn after ``seed_everything``."""
    seed_everything(seed)
    device = pick_device(device) if isinstance(device, str) else device
    return GRULanguageModel(vocab_size, cutoffs=list(CUTOFFS), **MODEL).to(device)


def streams_of(ids: torch.Tensor, batch: int = BATCH) -> torch.Tensor:
    """The id stream cut into ``batch`` contiguous streams, side by side: (batch, stream_len)."""
    validate.tensor(ids, "ids")
    validate.positive_int(batch, "batch")
    if ids.dim() != 1 or len(ids) < 2 * batch:
        raise ValueError(f"ids must be a 1-D stream of at least {2 * batch} ids; got shape "
                         f"{tuple(ids.shape)}")
    stream_len = len(ids) // batch
    return ids[:batch * stream_len].view(batch, stream_len)  # (batch, stream_len)


def train_steps(model: GRULanguageModel, ids: torch.Tensor, steps: int, total: int = STEPS,
                lr: float = LR) -> list[float]:
    """Train ``model`` for the first ``steps`` of a ``total``-step run on the stream ``ids``
    (the learning rate falls linearly to zero at ``total``); returns the loss of each step."""
    validate.positive_int(steps, "steps")
    validate.positive_int(total, "total")
    validate.number(lr, "lr", low=0.0, low_open=True)
    if steps > total:
        raise ValueError(f"steps ({steps}) must not exceed total ({total})")
    device = next(model.parameters()).device
    streams = streams_of(ids).to(device)  # (32, stream_len)
    stream_len = streams.shape[1]
    optimizers = [torch.optim.Adam(model.dense_parameters(), lr=lr),
                  torch.optim.SparseAdam([model.embed.weight], lr=lr)]
    schedules = [torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 1 - step / total)
                 for opt in optimizers]
    model.train()
    losses, h, pos = [], None, 0
    for _ in range(steps):
        if pos + BPTT + 1 > stream_len:  # end of the text: start again
            pos, h = 0, None
        x = streams[:, pos:pos + BPTT]  # (32, 35) words
        y = streams[:, pos + 1:pos + BPTT + 1]  # each one's next word
        pos += BPTT
        nll, h = model.nll(x, y, h)  # (32, 35) nats
        h = h.detach()  # keep the state, cut the gradient
        loss = nll.mean()
        if not torch.isfinite(loss):
            raise FloatingPointError(f"the loss became {loss.item()} at step {len(losses)} (lr "
                                     f"{lr:g}): lower the learning rate")
        for opt in optimizers:
            opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.dense_parameters(), 1.0)
        for opt, schedule in zip(optimizers, schedules):
            opt.step()
            schedule.step()
        losses.append(loss.item())
    return losses


def train_gru_lm(out=None, steps: int = STEPS, threads: int | None = 1, device="cpu") -> dict:
    """Retrain the shipped run into ``out`` (default data/checkpoints/gru-lm): model.pt (float16
    state dict), history.json (every step's loss, the seconds), run.json (recipe, machine).
    Returns run.json's contents."""
    from .pretrain import word_stream
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    device = pick_device(device)
    out = Path(out) if out is not None else data_dir() / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    train, _ = word_stream("train")
    stoi = frequency_ids(train)
    model = build_model(len(stoi), device=device)
    ids = torch.tensor([stoi[w] for w in train])
    start = time.perf_counter()
    losses = train_steps(model, ids, steps, total=steps)
    seconds = time.perf_counter() - start
    torch.save(half_state(model.state_dict()), out / "model.pt")
    (out / "history.json").write_text(json.dumps({"losses": losses, "seconds": seconds}) + "\n",
                                      encoding="utf-8")
    log = {"command": REPRODUCE, "steps": steps, "batch": BATCH, "bptt": BPTT, "lr": LR,
           "cutoffs": list(CUTOFFS), "model": MODEL, "seed": SEED, "vocab_size": len(stoi),
           "torch": torch.__version__, "device": str(device), "threads": torch.get_num_threads(),
           "machine": cpu_name()}
    (out / "run.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    print(f"{steps} steps in {seconds:.0f} s; mean loss of the last 100 "
          f"{sum(losses[-100:]) / len(losses[-100:]):.2f}", flush=True)
    return log


def _bytes(relative: str, folder=None) -> bytes:
    return read_shipped(FOLDER, relative, folder, "train_gru_lm")


def load_gru_lm(vocab_size: int | None = None, device=None,
                folder=None) -> tuple[GRULanguageModel, dict]:
    """The shipped run (checked against data/manifest.json, or read from ``folder``): the model
    in float32, in eval mode on ``device``, and its history {"losses": [...], "seconds": s}.
    ``vocab_size``, if given, must be the run's: a ValueError says so otherwise."""
    log = read_shipped_json(FOLDER, "run.json", folder, "train_gru_lm")
    if vocab_size is not None and vocab_size != log["vocab_size"]:
        raise ValueError(f"the shipped GRU language model has {log['vocab_size']:,} words; got "
                         f"vocab_size={vocab_size!r}: number the words with frequency_ids("
                         f"chapter 9's training words)")
    state = read_shipped_state(FOLDER, "model.pt", folder, "train_gru_lm")
    model = GRULanguageModel(log["vocab_size"], cutoffs=list(CUTOFFS), **MODEL)
    load_weights(model, float_state(state), shipped_where(FOLDER, "model.pt", folder))
    device = pick_device(device) if device is None or isinstance(device, str) else device
    model.to(device).eval()
    return model, read_shipped_json(FOLDER, "history.json", folder, "train_gru_lm")


def record_in_manifest(folder=None) -> list[str]:
    """List every file of ``folder`` (default data/checkpoints/gru-lm) in data/manifest.json and
    data/SHA256SUMS with its sha256, size and command; returns the names recorded."""
    return record_shipped(FOLDER, REPRODUCE, folder)


def main(argv=None) -> int:
    """``python -m minformer.gru_lm [--out DIR] [--steps N] [--threads N] [--device D]``: retrain
    chapter 9's GRU language model (:func:`minformer.data.retrain_command`)."""
    def options(parser):
        parser.add_argument("--steps", type=int, default=STEPS)
        parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")

    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Retrain chapter 9's GRU language model (1,200 steps) into data/checkpoints/gru-lm. About "
        "1.5 minutes on one thread.",
        lambda args: train_gru_lm(args.out, args.steps, args.threads, args.device), options)


if __name__ == "__main__":
    raise SystemExit(main())
