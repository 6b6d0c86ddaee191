"""Rotary positions and grouped-query attention trained side by side (chapter 14).

A small decoder-only language model learns the Spanish sentences of the Tatoeba training split,
one UTF-8 byte per token (no tokenizer to train: ids are byte values, and 0, 1, 2 — never in the
text — serve as <pad>, <bos>, <eos>), in random windows of consecutive bytes, as chapter 12's
model learns WikiText. The variants differ only in their :class:`TransformerConfig` options:

    sinusoidal   positions added to the embeddings (chapter 8), 4 heads, 4 key/value heads
    rope         rotary positions in every self-attention, nothing added
    gqa          2 key/value heads, each shared by 2 of the 4 query heads
    rope + gqa   both

The model (:data:`MODEL`): d_model 64, 4 heads, 2 pre-norm layers, FFN 256, 256 byte ids,
windows of 64 bytes, 16 a batch, AdamW at 6e-3 with 30 warmup steps, 200 steps (about 200,000
training bytes, a fifth of the text).

Each variant trains the same number of steps on the same batches from the same seed, so the
seeds are paired. :func:`compare_variants` returns one :class:`VariantResult` per (seed,
variant): validation loss (nats per byte), training tokens per second, and the bytes of the KV
cache after ``context`` tokens; :func:`summarize` gives the mean and spread over seeds, and each
variant's paired difference from the first variant.

The chapter trains seed 0's sinusoidal and RoPE variants live and reads the whole comparison, seeds 0, 1 and
2, from ``data/checkpoints/variants/results.json`` (checked against ``data/manifest.json``),
written by the command that reproduces it (:func:`train_runs`, :func:`load_results`):

    python -m minformer.variants            # the chapter's comparison: 3 seeds, 70-80 s
                                            # of one CPU thread
"""

from __future__ import annotations

import dataclasses
import json
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from . import validate
from .data import cpu_name, load_translation_pairs, read_shipped, retrain_command
from .objectives import shift_for_next_token
from .train import sequence_loss, train
from .transformer import DecoderOnly, TransformerConfig, count_parameters
from .utils import data_dir, evaluating, seed_everything
from .validate import positive_int

FOLDER = "checkpoints/variants"  # under data/
REPRODUCE = "python -m minformer.variants"
SEEDS = (0, 1, 2)  # the shipped comparison's seeds (the chapter trains seed 0 itself)
PAD, BOS, EOS = 0, 1, 2  # bytes that never occur in the text
VOCAB = 256  # one id per byte value

VARIANTS = {
    "sinusoidal": dict(positions="sinusoidal"),
    "rope": dict(positions="rope"),
    "gqa": dict(n_kv_heads=2),
    "rope + gqa": dict(positions="rope", n_kv_heads=2),
}

MODEL = dict(vocab_size=VOCAB, d_model=64, n_heads=4, d_ff=256, n_layers=2, dropout=0.0,
             norm_first=True, pad_id=PAD, bos_id=BOS, eos_id=EOS)


def byte_stream(split: str, max_sentences: int | None = None) -> torch.Tensor:
    """The distinct Spanish sentences of a Tatoeba ``split`` in a fixed shuffled order, one per
    line, as UTF-8 byte values: (n_bytes,) long. (The files are sorted by English sentence;
    shuffling keeps neighbouring lines from being translations of one sentence.)"""
    sentences = list(dict.fromkeys(es for _, es in load_translation_pairs(split)))
    random.Random(0).shuffle(sentences)
    if max_sentences is not None:
        sentences = sentences[:positive_int(max_sentences, "max_sentences")]
    data = "\n".join(sentences).encode("utf-8")
    ids = torch.frombuffer(bytearray(data), dtype=torch.uint8).long()  # (n_bytes,)
    if bool((ids <= EOS).any()):
        raise ValueError(f"the {split} text holds a byte 0, 1 or 2, reserved for special ids")
    return ids


def random_windows(ids, n: int, length: int, generator: torch.Generator):
    """n windows of ``length`` consecutive ids at random offsets: (n, length). ids: (n_ids,)
    with n_ids ≥ length ≥ 1, n ≥ 1."""
    validate.tensor(ids, "ids", ndim=1)
    if ids.is_floating_point():
        raise TypeError(f"ids must be integer token ids; got dtype {ids.dtype}")
    positive_int(n, "n")
    positive_int(length, "length")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (torch.Generator().manual_seed(s)); "
                        f"got {type(generator).__name__}")
    if length > len(ids):
        raise ValueError(f"length={length} is longer than ids ({len(ids)} ids): no window fits")
    starts = torch.randint(0, len(ids) - length + 1, (n,), generator=generator)  # (n,)
    return torch.stack([ids[s:s + length] for s in starts.tolist()])  # (n, length)


@dataclass
class VariantResult:
    """One trained variant. valid_loss: mean cross-entropy per validation byte (nats);
    tokens_per_second: training input tokens per second of training time (wall clock);
    cpu_seconds: the CPU time of the training, all threads (on a shared machine it counts
    only this process's work, so tokens / cpu_seconds is the steadier speed with one thread);
    kv_cache_bytes: the cache of one sequence after ``context`` tokens (float32)."""

    name: str
    seed: int
    valid_loss: float
    tokens_per_second: float
    cpu_seconds: float
    tokens: int
    kv_cache_bytes: int
    context: int
    parameters: int
    steps: int
    seconds: float
    config: TransformerConfig

    def to_dict(self) -> dict:
        """Every field as JSON-ready values (the config as its fields)."""
        return {**dataclasses.asdict(self), "config": dataclasses.asdict(self.config)}

    @classmethod
    def from_dict(cls, d: dict) -> VariantResult:
        """The result that :meth:`to_dict` wrote; a missing or unknown field is named."""
        names = {f.name for f in dataclasses.fields(cls)}
        if not isinstance(d, dict) or set(d) != names:
            got = set(d) if isinstance(d, dict) else type(d).__name__
            raise ValueError(f"a variant result has the fields {sorted(names)}; got {got}")
        return cls(**{**d, "config": TransformerConfig(**d["config"])})


@torch.no_grad()
def validation_loss(model, windows, batch: int = 64) -> float:
    """Mean next-byte cross-entropy (nats) of ``model`` over ``windows`` (n, T + 1)."""
    validate.tensor(windows, "windows", ndim=2)
    positive_int(batch, "batch")
    if len(windows) == 0:
        raise ValueError(f"windows is empty (shape {tuple(windows.shape)}): no window to score")
    total, count = 0.0, 0
    with evaluating(model):
        for i in range(0, len(windows), batch):
            inputs, targets = shift_for_next_token(windows[i:i + batch])  # (b, T) each
            logits = model(inputs)  # (b, T, vocab)
            total += F.cross_entropy(logits.flatten(0, 1), targets.flatten(),
                                     reduction="sum").item()
            count += targets.numel()
    return total / count


@torch.no_grad()
def kv_cache_bytes(model, context: int) -> int:
    """Bytes of ``model``'s KV cache after reading one sequence of ``context`` tokens."""
    positive_int(context, "context")
    cache = model.new_cache()
    token = min(3 + ord("a"), model.config.vocab_size - 1)  # any id: the size is the same
    with evaluating(model):
        model(torch.full((1, context), token), cache=cache)
    return cache.nbytes


def train_variant(name: str, options: dict, seed: int, train_ids, valid_windows, *,
                  steps: int = 200, batch: int = 16, length: int = 64, lr: float = 6e-3,
                  warmup: int = 30, context: int | None = None,
                  progress: bool = False) -> VariantResult:
    """Train one variant of the decoder-only byte model for ``steps`` AdamW steps on windows of
    ``length`` + 1 bytes drawn from ``train_ids`` with a generator seeded by ``seed`` (the same
    batches for every variant of a seed); return its :class:`VariantResult`."""
    if not isinstance(options, dict):
        raise TypeError(f"options must be a dict of TransformerConfig fields (a value of "
                        f"VARIANTS); got {type(options).__name__} {options!r:.40}")
    fields = {f.name for f in dataclasses.fields(TransformerConfig)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ValueError(f"options holds {unknown}, not TransformerConfig fields")
    positive_int(batch, "batch")
    positive_int(length, "length")
    validate.number(lr, "lr", low=0.0, high=float("inf"), low_open=True, high_open=True)
    if context is not None:
        positive_int(context, "context")
    seed_everything(seed)
    config = TransformerConfig(**{**MODEL, "max_len": length, **options})
    model = DecoderOnly(config)
    generator = torch.Generator().manual_seed(seed)

    def batches():
        while True:
            yield random_windows(train_ids, batch, length + 1, generator)  # (batch, length + 1)

    def lm_loss(model, window):
        inputs, targets = shift_for_next_token(window)  # (batch, length) each
        return sequence_loss(model(inputs), targets, pad_id=PAD), targets.numel()

    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    cpu = time.process_time()
    history = train(model, batches(), lm_loss, optimizer, steps=steps, warmup=warmup,
                    progress=progress, desc=name)
    cpu = time.process_time() - cpu
    context = length if context is None else context
    return VariantResult(name=name, seed=seed, valid_loss=validation_loss(model, valid_windows),
                         tokens_per_second=history.tokens_per_second, cpu_seconds=cpu,
                         tokens=history.tokens, kv_cache_bytes=kv_cache_bytes(model, context), context=context,
                         parameters=count_parameters(model), steps=history.steps,
                         seconds=history.seconds, config=config)


def compare_variants(variants: dict | None = None, seeds=(0, 1, 2), *, steps: int = 200,
                     batch: int = 16, length: int = 64, lr: float = 6e-3,
                     valid_windows: int | None = None,
                     progress: bool = False) -> list[VariantResult]:
    """Train every variant (default :data:`VARIANTS`) once per seed, interleaved (for each seed,
    every variant in turn, the order reversed on odd seeds, so that a burst of load on a shared
    machine slows them alike), and return the results in that order. The validation set is
    the valid split's byte stream cut into non-overlapping windows of ``length`` + 1 bytes
    (all of them, about 30,000 bytes, or the first ``valid_windows``)."""
    variants = VARIANTS if variants is None else variants
    if not isinstance(variants, dict):
        raise TypeError(f"variants must be a dict name -> options, like VARIANTS; got "
                        f"{type(variants).__name__} {variants!r:.40}")
    if not variants:
        raise ValueError("variants is empty: give at least one, e.g. {'rope': VARIANTS['rope']}")
    if isinstance(seeds, int) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds must be a list of ints, e.g. (0, 1, 2); got {seeds!r}")
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    if not seeds:
        raise ValueError("seeds is empty: give at least one seed")
    positive_int(length, "length")
    train_ids = byte_stream("train")
    valid = byte_stream("valid")
    n = len(valid) // (length + 1)
    n = n if valid_windows is None else min(positive_int(valid_windows, "valid_windows"), n)
    windows = valid[:n * (length + 1)].view(n, length + 1)  # (n, length + 1)
    results = []
    for i, seed in enumerate(seeds):
        names = list(variants) if i % 2 == 0 else list(variants)[::-1]
        for name in names:
            results.append(train_variant(name, variants[name], seed, train_ids, windows,
                                         steps=steps, batch=batch, length=length, lr=lr,
                                         progress=progress))
    return results


def _size(n: int) -> str:
    """Bytes in B, KiB or MiB: 512 B, 64 KiB, 1.5 MiB."""
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.4g} {unit}"
    return f"{n} B"


def _spread(values) -> str:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.3f} ± {sd:.3f}"


def summarize(results: list[VariantResult]) -> str:
    """A table, one row per variant: validation loss mean ± standard deviation over seeds, its
    paired difference from the first variant (mean ± sd, and the range over seeds), training
    tokens per second of wall clock and per CPU-second (medians over seeds), parameters and
    KV-cache size."""
    if isinstance(results, VariantResult) or not results or not all(
            isinstance(r, VariantResult) for r in results):
        raise ValueError("results must be a non-empty list of VariantResult (compare_variants' "
                         f"or load_results' first value); got {type(results).__name__} "
                         f"{results!r}"[:200])
    names = list(dict.fromkeys(r.name for r in results))
    by = {name: {r.seed: r for r in results if r.name == name} for name in names}
    base = by[names[0]]
    seeds = sorted(base)
    context = results[0].context
    lines = [f"{len(seeds)} seeds × {results[0].steps} steps; loss in nats per byte; "
             f"KV cache of one sequence of {context} tokens (float32)",
             f"{'variant':12s} {'valid loss':>14s} {'Δ vs ' + names[0]:>16s} {'Δ range':>17s} "
             f"{'tokens/s':>9s} {'tok/CPU-s':>9s} {'params':>8s} {'KV cache':>9s}"]
    for name in names:
        rs = [by[name][s] for s in seeds]
        diffs = [by[name][s].valid_loss - base[s].valid_loss for s in seeds]
        delta = "" if name == names[0] else _spread(diffs)
        span = "" if name == names[0] else f"{min(diffs):+.3f} … {max(diffs):+.3f}"
        speed = statistics.median(r.tokens_per_second for r in rs)
        cpu_speed = statistics.median(r.tokens / r.cpu_seconds for r in rs)
        lines.append(f"{name:12s} {_spread([r.valid_loss for r in rs]):>14s} {delta:>16s} "
                     f"{span:>17s} {speed:9,.0f} {cpu_speed:9,.0f} {rs[0].parameters:8,d} "
                     f"{_size(rs[0].kv_cache_bytes):>9s}")
    return "\n".join(lines)


def train_runs(out=None, seeds: Sequence[int] = SEEDS, threads: int | None = 1,
               steps: int = 200) -> str:
    """Run the chapter's comparison (:func:`compare_variants`) and write ``out``/results.json
    (default data/checkpoints/variants): every result, the seeds, steps, torch's version, the
    threads and the machine. Returns the summary table and the time it took."""
    if threads is not None:
        torch.set_num_threads(positive_int(threads, "threads"))
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    out = Path(out) if out is not None else data_dir() / FOLDER
    start, cpu = time.perf_counter(), time.process_time()
    results = compare_variants(seeds=seeds, steps=positive_int(steps, "steps"))
    log = {"command": REPRODUCE, "seeds": seeds, "steps": steps, "torch": torch.__version__,
           "threads": torch.get_num_threads(), "machine": cpu_name(),
           "results": [r.to_dict() for r in results]}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return (f"{summarize(results)}\ntotal {time.perf_counter() - start:.0f} s of wall clock, "
            f"{time.process_time() - cpu:.0f} s of CPU, {torch.get_num_threads()} thread(s)")


def load_results(folder=None) -> tuple[list[VariantResult], dict]:
    """The shipped comparison (results.json, checked against data/manifest.json, or read from
    ``folder``): its :class:`VariantResult` list, in training order, and the rest of the file
    (seeds, steps, torch, threads, machine)."""
    log = json.loads(read_shipped(FOLDER, "results.json", folder, "train_runs"))
    results = [VariantResult.from_dict(d) for d in log.pop("results")]
    return results, log


def main(argv=None) -> int:
    """``python -m minformer.variants [--out DIR] [--seeds S ...] [--threads N]``: rerun chapter
    14's comparison of positions and key/value heads (:func:`minformer.data.retrain_command`)."""
    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Rerun chapter 14's comparison of sinusoidal positions, RoPE and GQA (4 variants, seeds 0, "
        "1 and 2, 200 steps each) into data/checkpoints/variants. 70-80 s on one thread.",
        lambda args: train_runs(args.out, args.seeds, args.threads), seeds=SEEDS)


if __name__ == "__main__":
    raise SystemExit(main())
