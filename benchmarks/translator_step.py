"""The shipped translator's training step, plain against fused, and what the recipe costs.

The step of ``python -m minformer.train_translator --full``: the FULL configuration (d_model 256,
3 + 3 layers, 7,000-token vocabulary, no dropout), batches of 128 real pairs of the recipe's
training mix, bucketed by length as training does them. "plain" is the step chapter 13 explains
(the decoder projects every position, PyTorch's label-smoothed cross-entropy ignores the padding,
Adam); "fused" is the step the recipe runs (``train_translator(fused=True)``: only the real target
positions are projected, the hand-written :func:`minformer.train.smoothed_cross_entropy`, PyTorch's
fused Adam). Both start from the same weights and see the same batches, in interleaved
repetitions. Printed: ms per target token of each, their ratio, and the training time that the
fused step gives the recipe (FULL steps × the mix's mean target tokens per step × ms per token).

    python benchmarks/translator_step.py [--reps N] [--device cpu|cuda]   (run it alone, with
    OMP_NUM_THREADS=1 for the one-thread figure the recipe's budget is stated in)
"""

import argparse
import copy
import random
import statistics
import time
from functools import partial

import torch
from interleave import DEVICES, device_from, interleaved, synchronize

from minformer.data import load_translation_pairs
from minformer.train_translator import (
    FULL,
    TRAIN_SPLITS,
    bucketed_batches,
    encode_pairs,
    training_mix,
    translation_loss,
)
from minformer.transformer import Transformer
from minformer.translator import Translator

STEPS_PER_REP = 4  # training steps timed together in one repetition


_MIXES = {}  # the encoded mix, by the merges and specials of the tokenizer that encoded it


def encoded_mix(tokenizer) -> list:
    """The recipe's training mix encoded by ``tokenizer`` (seconds of BPE: kept for the next
    call with the same tokenizer, even a freshly loaded copy)."""
    key = (tuple(tokenizer.merges), tuple(tokenizer.special_tokens))
    if key not in _MIXES:
        pairs = [p for split in TRAIN_SPLITS for p in load_translation_pairs(split)]
        _MIXES[key] = encode_pairs(tokenizer, training_mix(pairs))
    return _MIXES[key]


def recipe_batches(tokenizer, n: int, seed: int = 0):
    """(n batches of the recipe's mix encoded by ``tokenizer``, bucketed as in training, mean
    target tokens per step over the whole mix)."""
    mix = encoded_mix(tokenizer)
    per_step = FULL["batch_size"] * sum(len(t) - 1 for _, t in mix) / len(mix)
    pool = 50 * FULL["batch_size"]  # bucketed_batches' pool: whole pools, as training sees them
    sample = random.Random(seed).sample(mix, pool * (1 + n * FULL["batch_size"] // pool))
    batches = bucketed_batches(sample, FULL["batch_size"], tokenizer.pad_id, seed=seed)
    return batches[:n], per_step


def bench(reps: int, device: str | None = "cpu", warmup: int = 1,
          steps_per_rep: int = STEPS_PER_REP) -> dict:
    """{"plain": [ms per target token, ...], "fused": [...], "tokens_per_step": mean over the
    mix}: ``reps`` interleaved repetitions of ``steps_per_rep`` steps each, after ``warmup``
    untimed steps of each."""
    device = device_from(device)
    shipped = Translator.load()
    tokenizer = shipped.tokenizer
    batches, per_step = recipe_batches(tokenizer, warmup + reps * steps_per_rep)
    batches = [tuple(x.to(device) for x in b) for b in batches]
    torch.manual_seed(0)
    first = Transformer(shipped.model.config).to(device).train()  # the shipped shape, fresh weights
    runs, feeds = {}, {}
    for name, fused in (("plain", False), ("fused", True)):
        model = copy.deepcopy(first)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9,
                               **({"fused": True} if fused else {}))
        runs[name] = (model, opt, translation_loss(FULL["label_smoothing"], tokenizer.pad_id, fused))
        feeds[name] = iter(batches)

    def step(name):
        model, opt, loss_fn = runs[name]
        loss, n = loss_fn(model, next(feeds[name]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return n

    def rate(name):  # ms per target token over steps_per_rep steps
        synchronize(device)
        start, tokens = time.perf_counter(), 0
        for _ in range(steps_per_rep):
            tokens += step(name)
        synchronize(device)
        return 1e3 * (time.perf_counter() - start) / tokens

    for name in runs:
        for _ in range(warmup):
            step(name)
    out = interleaved({name: partial(rate, name) for name in runs}, reps)
    out["tokens_per_step"] = per_step
    return out


def recipe_minutes(ms_per_token: float, tokens_per_step: float) -> float:
    """Training minutes of the FULL recipe at ``ms_per_token``."""
    return FULL["steps"] * tokens_per_step * ms_per_token / 6e4


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    args = parser.parse_args()
    r = bench(args.reps, args.device)
    print(f"shipped translator's training step, {args.device}, {torch.get_num_threads()} "
          f"thread(s); ms per target token, median (min-max) of {args.reps} x {STEPS_PER_REP} "
          f"steps")
    for name in ("plain", "fused"):
        v = r[name]
        print(f"  {name:6s} {statistics.median(v):.3f} ({min(v):.3f}-{max(v):.3f})  -> "
              f"{recipe_minutes(statistics.median(v), r['tokens_per_step']):.0f} min of training")
    ratios = [f / p for f, p in zip(r["fused"], r["plain"])]
    print(f"  ratio fused / plain = {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f}); {FULL['steps']} steps x "
          f"{r['tokens_per_step']:.0f} target tokens")


if __name__ == "__main__":
    main()
