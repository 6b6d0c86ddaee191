"""The recipe that trains chapter 13's English→Spanish translator, and its command.

- :func:`encode_pairs` turns (en, es) pairs into id lists with one shared BPE tokenizer:
  source ``en <eos>``, target ``<bos> es <eos>``.
- :func:`bucketed_batches` cuts the examples into batches of similar length, so little of each
  batch is padding; :func:`padding_fraction` measures how little.
- :func:`translation_loss` is the training loss (label-smoothed cross-entropy on real target
  tokens), in the ``(model, batch) -> (loss, tokens)`` form :func:`minformer.train.train` takes.
- :func:`train_translator` trains a model on pairs and returns a
  :class:`~minformer.translator.Translator`; :func:`average_states` averages snapshots.
- :func:`oversample_long` repeats the longer pairs, so late target positions get more gradient;
  :func:`concatenate_pairs` makes longer pairs by joining short ones.
- :func:`training_mix` is what the shipped recipe trains on, and :func:`train_full` the recipe
  itself (:data:`FULL`): ``python -m minformer.train_translator --full`` reproduces
  ``data/checkpoints/en-es``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from . import validate
from .metrics import corpus_bleu
from .tokenizer import BPETokenizer, pad_sequences
from .train import History, sequence_loss, smoothed_cross_entropy, train
from .transformer import Transformer, TransformerConfig
from .translator import CHECKPOINT, Translator, references_by_source
from .utils import data_dir, pick_device, seed_everything

REPRODUCE = "python -m minformer.train_translator --full"


def encode_pairs(tokenizer: BPETokenizer, pairs: Sequence[tuple[str, str]]) -> list[tuple[list, list]]:
    """(en, es) pairs → (source ids, target ids): source ``en <eos>``, target ``<bos> es <eos>``.
    A pair may carry more entries (``load_translation_pairs(split, with_attribution=True)``'s
    attribution): only the first two are read."""
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a BPETokenizer; got {type(tokenizer).__name__} (load "
                        "one with BPETokenizer.load(path))")
    out = []
    for n, pair in enumerate(_pair_list(pairs)):
        if not (isinstance(pair, (tuple, list)) and len(pair) >= 2):
            raise ValueError(f"pairs[{n}] must be an (en, es) pair; got {pair!r}")
        out.append((tokenizer.encode(pair[0], add_eos=True),
                    tokenizer.encode(pair[1], add_bos=True, add_eos=True)))
    return out


def _pair_list(pairs, name: str = "pairs") -> list:
    """``pairs`` as a list, refusing a str, a dict (which iterates its keys) and a non-iterable."""
    if isinstance(pairs, (str, bytes)):
        raise TypeError(f"{name} must be a list of (en, es) pairs, not a string")
    if isinstance(pairs, dict):
        raise TypeError(f"{name} must be a list of (en, es) pairs; got dict: use "
                        "list(d.items())")
    try:
        return list(pairs)
    except TypeError:
        raise TypeError(f"{name} must be a list of (en, es) pairs; got "
                        f"{type(pairs).__name__}") from None


def _check_text_pairs(pairs, name: str = "pairs") -> list:
    """A list of (en, es, ...) pairs whose first two entries are str."""
    pairs = _pair_list(pairs, name)
    for n, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) >= 2
                and isinstance(pair[0], str) and isinstance(pair[1], str)):
            raise ValueError(f"{name}[{n}] must be an (en, es) pair of strings; got {pair!r:.60}")
    return pairs


def _is_id_pair(ex) -> bool:
    return (isinstance(ex, (tuple, list)) and len(ex) == 2
            and all(hasattr(ids, "__len__") and not isinstance(ids, str) for ids in ex))


def _check_example(ex, n: int, pad_id: int) -> None:
    """Say what is wrong with examples[n] (bucketed_batches found it wrong)."""
    if not _is_id_pair(ex):
        raise TypeError(f"examples[{n}] must be a (source ids, target ids) pair, as encode_pairs "
                        f"makes them; got {ex!r:.60}")
    for side, ids in zip(("source", "target"), ex):
        if len(ids) == 0:
            raise ValueError(f"examples[{n}] has an empty {side}: every side needs a token")
        if pad_id in ids:
            raise ValueError(f"examples[{n}]'s {side} holds pad_id={pad_id} as a token: it would "
                             "be read as padding (is pad_id the tokenizer's?)")


def bucketed_batches(examples, batch_size: int, pad_id: int = 0, seed: int | None = 0,
                     pool: int = 50, bucket: bool = True) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Cut ``examples`` (a list of (source ids, target ids)) into padded batches.

    seed=None keeps the order; otherwise the examples are shuffled with ``random.Random(seed)``.
    bucket=True: the shuffled examples are taken ``pool · batch_size`` at a time, sorted by
    (target length, source length) inside that pool and cut into batches, so the sentences of a
    batch have nearly the same length and little of it is padding; then the batches themselves
    are shuffled, so training does not see short sentences first. bucket=False: batches of
    consecutive (shuffled) examples, as a plain DataLoader would make them.

    Returns a list of (src, tgt): src (batch, s) and tgt (batch, t) LongTensors right-padded with
    ``pad_id``; the last batch may be smaller.
    """
    validate.positive_int(batch_size, "batch_size")
    validate.positive_int(pool, "pool")
    validate.integer(pad_id, "pad_id", minimum=0)
    if seed is not None:
        validate.integer(seed, "seed")
    if not isinstance(bucket, bool):
        raise TypeError(f"bucket must be True or False; got {bucket!r}")
    if isinstance(examples, (str, bytes, dict)) or not hasattr(examples, "__len__"):
        raise TypeError("examples must be a list of (source ids, target ids) pairs "
                        f"(encode_pairs' output); got {type(examples).__name__}")
    if len(examples) == 0:
        raise ValueError("examples is empty: nothing to batch")
    try:  # one cheap pass; a bad example is then described by _check_example
        bad = next((n for n, (src, tgt) in enumerate(examples)
                    if isinstance(src, str) or isinstance(tgt, str) or not len(src)
                    or not len(tgt) or pad_id in src or pad_id in tgt), None)
    except (TypeError, ValueError):
        bad = next((n for n, ex in enumerate(examples) if not _is_id_pair(ex)), None)
        if bad is None:
            raise
    if bad is not None:
        _check_example(examples[bad], bad, pad_id)
    order = list(range(len(examples)))
    rng = random.Random(seed)
    if seed is not None:
        rng.shuffle(order)
    groups = []
    step = pool * batch_size if bucket else len(order)
    for start in range(0, len(order), step):
        chunk = order[start: start + step]
        if bucket:
            chunk.sort(key=lambda i: (len(examples[i][1]), len(examples[i][0])))
        groups += [chunk[i: i + batch_size] for i in range(0, len(chunk), batch_size)]
    if bucket and seed is not None:
        rng.shuffle(groups)
    return [(pad_sequences([examples[i][0] for i in g], pad_id)[0],  # (batch, s)
             pad_sequences([examples[i][1] for i in g], pad_id)[0])  # (batch, t)
            for g in groups]


def padding_fraction(batches, pad_id: int = 0) -> float:
    """Share of all positions (sources and targets) in ``batches`` that are padding: a list of
    (src, tgt) tensors, as :func:`bucketed_batches` returns them."""
    validate.integer(pad_id, "pad_id")
    if isinstance(batches, tuple) and len(batches) == 2 and all(
            isinstance(x, torch.Tensor) for x in batches):
        raise TypeError("batches must be a list of (src, tgt) batches; got one (src, tgt) pair: "
                        "wrap it, [batch]")
    pad = total = 0
    for n, batch in enumerate(batches):
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise TypeError(f"batches[{n}] must be a (src, tgt) pair of tensors; got "
                            f"{type(batch).__name__}")
        for name, x in zip(("src", "tgt"), batch):
            validate.tensor(x, f"batches[{n}]'s {name}", ndim=2)
        for x in batch:
            pad += int((x == pad_id).sum())
            total += x.numel()
    if total == 0:
        raise ValueError("batches holds no position at all (no batch, or only empty ones): "
                         "no padding fraction to give")
    return pad / total


def _check_fusable(model) -> None:
    if not isinstance(model, Transformer):
        raise TypeError(f"fused=True needs a Transformer (it projects only the real target "
                        f"tokens); got {type(model).__name__}: use fused=False")


def translation_loss(label_smoothing: float = 0.1, pad_id: int = 0, fused: bool = False):
    """The training loss as ``(model, (src, tgt)) -> (loss, target tokens)``: teacher forcing
    with ``tgt[:, :-1]`` in and ``tgt[:, 1:]`` as the labels, label-smoothed cross-entropy over
    the real (non-pad) target tokens.

    fused=True (a :class:`Transformer` only): the same loss, to rounding, computed faster: the
    output projection only at the real target tokens (not at padding), and
    :func:`minformer.train.smoothed_cross_entropy` instead of PyTorch's cross-entropy."""
    validate.number(label_smoothing, "label_smoothing", low=0.0, high=1.0, high_open=True)
    validate.integer(pad_id, "pad_id")
    if not isinstance(fused, bool):
        raise TypeError(f"fused must be True or False; got {fused!r}")

    def loss_fn(model, batch):
        if not (isinstance(model, torch.nn.Module) and hasattr(model, "encode")):
            raise TypeError("model must be an encoder-decoder (a Transformer or a Seq2SeqGRU); "
                            f"got {type(model).__name__}")
        if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
            raise TypeError("batch must be a (src, tgt) pair of tensors, as bucketed_batches "
                            f"makes them; got {type(batch).__name__}")
        for name, x in zip(("src", "tgt"), batch):
            validate.tensor(x, name)
        device = next(model.parameters()).device
        src, tgt = (x.to(device) for x in batch)
        src_mask = model.source_mask(src)  # through encode/decode: the GRU of chapter 9 works too
        memory = model.encode(src, src_mask)
        labels = tgt[:, 1:]  # (batch, t - 1): the next token at every position
        if not fused:
            logits = model.decode(tgt[:, :-1], memory, src_mask)  # (batch, t-1, V)
            loss = sequence_loss(logits, labels, pad_id=pad_id, label_smoothing=label_smoothing)
            return loss, int((labels != pad_id).sum())
        _check_fusable(model)
        real = labels != pad_id  # (batch, t - 1)
        h = model.decode(tgt[:, :-1], memory, src_mask, project=False)  # (batch, t-1, d_model)
        logits = model.project(h[real])  # (n real tokens, V)
        return smoothed_cross_entropy(logits, labels[real], label_smoothing), int(real.sum())

    return loss_fn


def average_states(states: Sequence[dict]) -> dict:
    """Element-wise mean of state dicts with the same keys and shapes (checkpoint averaging);
    ValueError naming the key and the state dict that differ (a key only some of them hold would
    otherwise be dropped, or averaged over fewer of them). Entries that are not floating point
    (integer buffers such as step counters) are taken from the first state dict."""
    if isinstance(states, dict) or not states:
        raise ValueError("average_states needs a non-empty list of state dicts")
    states = list(states)
    for n, s in enumerate(states):
        if not isinstance(s, dict):
            raise TypeError(f"states[{n}] must be a state dict; got {type(s).__name__}")
        if set(s) != set(states[0]):
            extra, missing = sorted(set(s) - set(states[0])), sorted(set(states[0]) - set(s))
            raise ValueError(f"states[{n}] has other keys than states[0]: "
                             + "; ".join(([f"extra {extra[:3]}"] if extra else [])
                                         + ([f"missing {missing[:3]}"] if missing else [])))
        for k, v in s.items():
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"states[{n}][{k!r}] must be a tensor; got {type(v).__name__}")
            if tuple(v.shape) != tuple(states[0][k].shape):
                raise ValueError(f"states[{n}][{k!r}] has shape {tuple(v.shape)}, states[0]'s "
                                 f"{tuple(states[0][k].shape)}")
    return {k: (sum(s[k].float() for s in states) / len(states)).to(states[0][k].dtype)
            if states[0][k].is_floating_point() else states[0][k] for k in states[0]}


def train_translator(config, tokenizer: BPETokenizer, train_pairs, *,
                     valid_pairs=None, steps: int | None = None, max_seconds: float | None = None,
                     lr: float = 3e-3, warmup: int = 400, schedule: str = "inverse_sqrt",
                     batch_size: int = 128, label_smoothing: float = 0.1, weight_decay: float = 0.0,
                     autocast_dtype: torch.dtype | None = None, eval_every: int = 0,
                     eval_sentences: int = 500, average_last: int = 0, seed: int = 0,
                     device=None, progress: bool = True, desc: str = "translator",
                     fused: bool = False):
    """Train a translator; returns (Translator, History).

    config: a :class:`TransformerConfig` (a new :class:`Transformer` is built after seeding), or a
    model with the encode/decode interface (e.g. chapter 9's ``Seq2SeqGRU``), trained as it is.

    Adam(W) at peak ``lr`` with linear warmup over ``warmup`` steps then inverse-square-root decay
    (schedule="linear": linear decay to zero at ``steps``), gradient clipping at 1, label
    smoothing, batches re-bucketed every epoch. With valid_pairs and eval_every, the greedy BLEU
    of the first ``eval_sentences`` English sentences of valid_pairs is recorded in
    history.evals (its time not counted as training time). average_last = k > 1:
    the returned weights are the mean of the last k evaluated snapshots (checkpoint averaging).
    eval_every and average_last are ints ≥ 0 (0: no evaluation but the last; no averaging).
    The config's (or the model's) pad, bos and eos ids and vocabulary size must be the
    tokenizer's: a ValueError names both values otherwise.
    fused=True (a Transformer only): the same step, to rounding, in less time: the fused loss
    of :func:`translation_loss` and PyTorch's fused Adam (the shipped recipe uses it; chapter
    13's run keeps the plain step it explains).
    """
    validate.integer(eval_every, "eval_every", minimum=0)
    validate.integer(average_last, "average_last", minimum=0)
    if not isinstance(tokenizer, BPETokenizer):
        hint = (" (load it first: BPETokenizer.load(path))"
                if isinstance(tokenizer, (str, os.PathLike)) else "")
        raise TypeError(f"tokenizer must be a BPETokenizer; got {type(tokenizer).__name__}{hint}")
    # the ids and vocabulary sizes the model will use, each with the tokenizer's attribute
    inner = config if isinstance(config, TransformerConfig) else getattr(config, "config", None)
    if isinstance(inner, TransformerConfig):  # a config, or a Transformer's own
        where = "config" if inner is config else "model.config"
        ours = [(name, getattr(inner, name), name) for name in ("pad_id", "bos_id", "eos_id",
                                                                "vocab_size")]
        ours.append(("tgt_vocab_size", inner.tgt_vocab, "vocab_size"))
    else:  # a model such as Seq2SeqGRU: what it says of itself
        where = "model"
        ours = [(name, getattr(config, name, None), tok_name) for name, tok_name in (
            ("pad_id", "pad_id"), ("src_vocab", "vocab_size"), ("tgt_vocab", "vocab_size"))]
    for name, value, tok_name in ours:
        theirs = getattr(tokenizer, tok_name, None)
        if isinstance(value, int) and isinstance(theirs, int) and value != theirs:
            raise ValueError(f"{where}.{name}={value} but tokenizer.{tok_name}={theirs}: the model "
                             f"and the tokenizer must agree (build it with "
                             f"{name}=tokenizer.{tok_name})")
    seed_everything(seed)
    device = pick_device(device) if device is None or isinstance(device, str) else device
    if isinstance(config, TransformerConfig):
        model = Transformer(config).to(device)
        max_source = config.max_len
    elif isinstance(config, torch.nn.Module):  # e.g. a trained Transformer, trained on
        model = config.to(device)
        max_source = getattr(getattr(config, "config", None), "max_len", 1024)
    else:
        raise TypeError(f"config must be a TransformerConfig or a model; got {type(config).__name__}")
    if fused:
        _check_fusable(model)
    examples = encode_pairs(tokenizer, train_pairs)
    if not examples:
        raise ValueError("train_pairs is empty: give at least one (en, es) pair to train on")
    kept = [e for e in examples if len(e[0]) <= max_source and len(e[1]) <= max_source]
    skipped, examples = len(examples) - len(kept), kept  # longer than the model's positions
    if not examples:
        raise ValueError(f"every training pair is longer than the model's {max_source} positions")
    translator = Translator(model, tokenizer, max_source_tokens=max_source)

    def data(epoch):
        return bucketed_batches(examples, batch_size, tokenizer.pad_id, seed=seed * 1000 + epoch)

    snapshots: list[dict] = []
    eval_fn = None
    if valid_pairs is not None:
        sources, references = references_by_source(valid_pairs)
        sources, references = sources[:eval_sentences], references[:eval_sentences]

        def score(model):
            return corpus_bleu(translator.translate(sources), references).score

        def eval_fn(model):
            if average_last > 1:
                snapshots.append({k: v.detach().clone() for k, v in model.state_dict().items()})
                del snapshots[:-average_last]
            return score(model)

        eval_fn.__wrapped__ = score

    opt_cls = torch.optim.AdamW if weight_decay else torch.optim.Adam
    extra = {"weight_decay": weight_decay} if weight_decay else {}
    if fused:
        extra["fused"] = True
    optimizer = opt_cls(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9, **extra)
    loss_fn = translation_loss(label_smoothing, tokenizer.pad_id, fused)
    history = train(model, data, loss_fn, optimizer,
                    steps=steps, max_seconds=max_seconds, warmup=warmup, schedule=schedule,
                    eval_fn=eval_fn, eval_every=eval_every, autocast_dtype=autocast_dtype,
                    progress=progress, desc=desc)
    history.skipped = skipped
    history.averaged = None  # (valid BLEU of the last weights, of the average, kept "average"?)
    if average_last > 1 and len(snapshots) > 1:
        last = {k: v.detach().clone() for k, v in model.state_dict().items()}
        model.load_state_dict(average_states(snapshots))
        model.eval()
        with torch.no_grad():
            averaged = eval_fn.__wrapped__(model)
        keep = averaged >= history.evals[-1][2]  # the average is kept only if valid BLEU agrees
        if not keep:
            model.load_state_dict(last)
        history.averaged = (history.evals[-1][2], averaged, keep)
    model.eval()
    return translator, history


# ---------------------------------------------------------------- the shipped checkpoint

FULL = dict(  # the recipe of data/checkpoints/en-es: one run from scratch, chosen on valid +
    # long_valid among nine from-scratch runs of about the one-thread budget's cost (data/README.md)
    vocab_size=7000, d_model=256, n_heads=4, d_ff=1024, n_layers=3, dropout=0.0, max_len=256,
    norm_first=True, lr=2e-3, warmup=1000, schedule="linear", batch_size=128,
    label_smoothing=0.1, weight_decay=0.0, steps=6000, eval_every=500,
    eval_sentences=(200, 100), average_last=4, repeat=((9, 3), (13, 8), (19, 16)),
    concatenated=25_000, seed=2,
)
TRAIN_SPLITS = ("train", "extra", "long_train")  # every training pair of every length


def oversample_long(pairs: Sequence[tuple[str, str]], repeat=FULL["repeat"]) -> list:
    """Each (en, es) pair as many times as its English length asks: ``repeat`` is a sequence of
    (words, times) with words rising, and a pair of at least ``words`` English words (the last
    such entry) appears ``times`` times; shorter pairs appear once. Order is kept (copies of a
    pair sit side by side; training shuffles)."""
    from .metrics import word_count

    pairs = _check_text_pairs(pairs)
    repeat = tuple(repeat)
    for n, item in enumerate(repeat):
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise ValueError(f"repeat[{n}] must be a (words, times) pair; got {item!r}")
        validate.positive_int(item[0], f"repeat[{n}] words")
        validate.positive_int(item[1], f"repeat[{n}] times")
    if any(a[0] >= b[0] for a, b in zip(repeat, repeat[1:])):
        raise ValueError(f"repeat's word counts must rise; got {[w for w, _ in repeat]}")
    out = []
    for pair in pairs:
        words, times = word_count(pair[0]), 1
        for at_least, k in repeat:
            if words >= at_least:
                times = k
        out += [pair] * times
    return out


def concatenate_pairs(pairs: Sequence[tuple[str, str]], n: int, seed: int = 0,
                      parts: int = 2) -> list[tuple[str, str]]:
    """``n`` made-up longer pairs, each ``parts`` distinct pairs of ``pairs`` drawn at random and
    joined with a space on both sides: ("I'm cold.", "Tengo frío.") + ("Close the door.",
    "Cierra la puerta.") -> ("I'm cold. Close the door.", "Tengo frío. Cierra la puerta.").
    Every sentence of a made-up pair is a real translation, so the model sees long targets whose
    every word is right. Deterministic for a seed; n = 0 gives []."""
    pairs = _check_text_pairs(pairs)
    validate.integer(n, "n", minimum=0)
    validate.integer(parts, "parts", minimum=2)
    validate.integer(seed, "seed")
    if n and len(pairs) < parts:
        raise ValueError(f"cannot join {parts} distinct pairs out of {len(pairs)}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        picked = [pairs[i] for i in rng.sample(range(len(pairs)), parts)]
        out.append((" ".join(p[0] for p in picked), " ".join(p[1] for p in picked)))
    return out


SCORED_SPLITS = ("valid", "long_valid", "test", "holdout", "long_test")


def _history_log(history: History) -> dict:
    return {"steps": history.steps, "seconds": round(history.seconds, 1),
            "tokens": history.tokens, "tokens_per_second": round(history.tokens_per_second, 1),
            "valid_bleu": [(s, round(t, 1), round(b, 2)) for s, t, b in history.evals],
            "loss_every_100": [round(x, 4) for x in history.losses[::100]],
            "averaged": getattr(history, "averaged", None)}


def validation_pairs(short: int, long: int) -> list[tuple[str, str]]:
    """The pairs of the first ``short`` English sentences of valid and the first ``long`` of
    long_valid: what training scores itself on (greedy BLEU) to pick the averaged weights."""
    from .data import load_translation_pairs

    validate.integer(short, "short", minimum=0)
    validate.integer(long, "long", minimum=0)
    out = []
    for split, n in (("valid", short), ("long_valid", long)):
        pairs = load_translation_pairs(split)
        keep = set(references_by_source(pairs)[0][:n])
        out += [p for p in pairs if p[0] in keep]
    return out


def training_mix(pairs: Sequence[tuple[str, str]], recipe: dict = FULL) -> list:
    """What the shipped recipe trains on: ``pairs`` with the longer ones repeated
    (:func:`oversample_long` with ``recipe["repeat"]``), then ``recipe["concatenated"]`` made-up
    two-sentence pairs (:func:`concatenate_pairs`, seeded with ``recipe["seed"]``)."""
    missing = [k for k in ("repeat", "concatenated", "seed")
               if not isinstance(recipe, dict) or k not in recipe]
    if missing:
        raise ValueError(f"recipe must be a dict like FULL with 'repeat', 'concatenated' and "
                         f"'seed'; it lacks {missing}")
    return (oversample_long(pairs, recipe["repeat"])
            + concatenate_pairs(pairs, recipe["concatenated"], seed=recipe["seed"]))


def train_full(out=None, steps: int | None = None, threads: int | None = None,
               device: str | None = "cpu", progress: bool = True) -> dict:
    """Reproduce the shipped checkpoint from scratch, in float32 (bf16 autocast is 1.6x faster
    on CPUs with AVX-512 BF16, but 20x slower where it is emulated, as on AVX2-only CPUs):

    1. BPE on every training pair (TRAIN_SPLITS: train, extra, long_train);
    2. the FULL recipe on :func:`training_mix` of those pairs: ``FULL["steps"]`` steps, peak
       learning rate after a linear warmup, then a straight line down to zero; the last
       snapshots averaged if that scores better on the validation sentences; each step the
       fused one of :func:`train_translator` (the same mathematics, to rounding, in less time);
    3. greedy and beam-4 BLEU on SCORED_SPLITS, with the float16 weights that ship.

    Writes the checkpoint into ``out`` (default: data/checkpoints/en-es) and returns its log.
    steps: override FULL["steps"] (for a quick trial; the decay then ends there); device: "cpu"
    (default) or "cuda"."""
    from .data import load_translation_pairs

    r = dict(FULL)
    if steps is not None:
        r["steps"] = validate.positive_int(steps, "steps")
        r["warmup"] = min(r["warmup"], r["steps"] // 2)  # a quick trial still decays
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    device = pick_device(device)
    out = Path(out) if out is not None else data_dir() / CHECKPOINT
    t0 = time.perf_counter()
    pairs = [p for split in TRAIN_SPLITS for p in load_translation_pairs(split)]
    mix = training_mix(pairs, r)
    valid = validation_pairs(*r["eval_sentences"])  # what training scores itself on
    tokenizer = BPETokenizer.train([t for p in pairs for t in p], r["vocab_size"])
    config = TransformerConfig(vocab_size=tokenizer.vocab_size, d_model=r["d_model"],
                               n_heads=r["n_heads"], d_ff=r["d_ff"], n_layers=r["n_layers"],
                               dropout=r["dropout"], max_len=r["max_len"], norm_first=r["norm_first"],
                               pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id,
                               eos_id=tokenizer.eos_id)
    translator, history = train_translator(
        config, tokenizer, mix, valid_pairs=valid, steps=r["steps"], lr=r["lr"],
        warmup=r["warmup"], schedule=r["schedule"], batch_size=r["batch_size"],
        label_smoothing=r["label_smoothing"], weight_decay=r["weight_decay"],
        autocast_dtype=None, eval_every=r["eval_every"], eval_sentences=len(valid),
        average_last=r["average_last"], seed=r["seed"], device=device, progress=progress,
        desc="full translator", fused=True)
    translator.model.cpu()
    log = {"recipe": r, "command": REPRODUCE, "train_splits": list(TRAIN_SPLITS),
           "source_pairs": len(pairs), "train_pairs": len(mix), "skipped_pairs": history.skipped,
           "torch": torch.__version__, "device": str(device), "threads": torch.get_num_threads(),
           "precision": "float32", "fused_step": True, "history": _history_log(history),
           "parameters": sum(p.numel() for p in translator.model.parameters()),
           "train_seconds": round(time.perf_counter() - t0, 1)}
    translator.save(out, log)  # score the fp16 weights that ship, reloaded
    translator = Translator.load(out, sha256=None)
    t1, scores = time.perf_counter(), {}
    for split in SCORED_SPLITS:
        split_pairs = load_translation_pairs(split)
        for beam in (1, 4):
            scores[f"{split}_beam{beam}"] = round(translator.bleu(split_pairs, beam_size=beam)[0].score, 2)
            print(f"{split} beam {beam}: BLEU {scores[f'{split}_beam{beam}']}", flush=True)
    log.update(bleu=scores, scoring_seconds=round(time.perf_counter() - t1, 1),
               total_seconds=round(time.perf_counter() - t0, 1))
    translator.save(out, log)
    return log


def _main(argv) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minformer.train_translator",
        description="Train the English→Spanish translator that ships in data/checkpoints/en-es.")
    parser.add_argument("--full", action="store_true", help="the shipped recipe (required)")
    parser.add_argument("--out", type=Path, help="output folder (default: data/checkpoints/en-es)")
    parser.add_argument("--steps", type=int, help=f"optimizer steps (default {FULL['steps']})")
    parser.add_argument("--threads", type=int, help="CPU threads for torch")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                        help="where to train (default cpu; cuda when asked and present)")
    args = parser.parse_args(argv)
    if not args.full:
        parser.error("only the full recipe is available: add --full")
    try:
        log = train_full(args.out, args.steps, args.threads, args.device)
    except ValueError as err:
        parser.error(str(err))
    print(json.dumps(log["bleu"], indent=1))
    print(f"done in {log['total_seconds'] / 60:.1f} min")
    return 0


def main(argv=None) -> int:
    """The command line; a closed or full standard output, or Ctrl-C, ends it with one line
    (:func:`minformer.utils.run_command`)."""
    from .utils import run_command

    return run_command(_main, "python -m minformer.train_translator", argv)


if __name__ == "__main__":
    sys.exit(main())
