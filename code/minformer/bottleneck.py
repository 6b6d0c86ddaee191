"""Chapter 9's bottleneck experiment: the GRU encoder-decoder with and without attention, trained
500 steps on English-Spanish pairs of at most six words, and compared by source length.

The chapter builds the data and the training loop in its own cells and trains the first steps of
seed 0 of both models live. The whole runs, seed 0 for the chapter's comparison, samples and
alignment and seed 1 for the spread over seeds, are trained by ``python -m minformer.bottleneck``
(:func:`train_runs`) and shipped in ``data/checkpoints/bottleneck`` (float16 weights and every
step's loss, checked against ``data/manifest.json``): what the chapter reads off them is the same
on every machine. The chapter checks that this module's loop is its own, step for step, and that
its live steps follow the shipped history.

- :func:`short_pairs`, :func:`build_vocab`, :func:`encode_pairs` the word-level data;
- :func:`train_translator` one model's training (seeded; the batches depend on the seed only);
- :func:`load_run` a shipped run: the model and its losses.
"""

from __future__ import annotations

import json
import time
from collections import Counter
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
from .rnn import Seq2SeqGRU, sequence_loss
from .utils import data_dir, pick_device, seed_everything

FOLDER = "checkpoints/bottleneck"  # under data/
REPRODUCE = "python -m minformer.bottleneck"
MAX_WORDS = 6
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]  # ids 0, 1, 2, 3
PAD, BOS, EOS, UNK = range(4)
STEPS, BATCH, LR = 500, 64, 3e-3
MODEL = dict(d_emb=64, d_hidden=128)
# The control: no attention, and a wider GRU state that gives it as many parameters as the
# attention model has (1,364,726 against 1,359,494 on the chapter's vocabularies).
WIDE = dict(d_emb=64, d_hidden=152)
WIDE_RUN = "wide-no-attention-seed0"
SEEDS = (0, 1)  # the shipped seeds (the chapter trains seed 0's first steps itself)


def short_pairs(split: str) -> list[tuple[list[str], list[str]]]:
    """The pairs of ``split`` with 1 to :data:`MAX_WORDS` words on each side, as word lists."""
    from .data import load_translation_pairs, text_to_words

    out = []
    for en, es in load_translation_pairs(split):
        src, tgt = text_to_words(en), text_to_words(es)
        if 1 <= len(src) <= MAX_WORDS and 1 <= len(tgt) <= MAX_WORDS:
            out.append((src, tgt))
    return out


def _word_lists(sentences, name: str) -> list[list[str]]:
    """``sentences`` as a non-empty list of word lists; a str (one sentence, or a list of
    unsplit sentences) is refused, since iterating it gives characters."""
    if isinstance(sentences, (str, bytes)):
        raise TypeError(f"{name} must be a list of sentences, each a list of words; got one "
                        f"{type(sentences).__name__} {sentences!r:.40}: split it into words")
    try:
        sentences = list(sentences)
    except TypeError:
        raise TypeError(f"{name} must be a list of sentences, each a list of words; got "
                        f"{type(sentences).__name__}") from None
    if not sentences:
        raise ValueError(f"{name} is empty: no words to build a vocabulary from")
    return [validate.str_list(s, f"{name}[{i}]") for i, s in enumerate(sentences)]


def build_vocab(sentences, min_count: int = 3) -> tuple[dict[str, int], list[str]]:
    """The specials, then every word seen at least ``min_count`` times, sorted: (stoi, itos).
    ``sentences`` is a list of word lists (:func:`short_pairs`' sides); a word spelled like a
    special ("<pad>") keeps the special's id."""
    sentences = _word_lists(sentences, "sentences")
    min_count = validate.positive_int(min_count, "min_count")
    c = Counter(w for s in sentences for w in s if w not in SPECIALS)
    itos = SPECIALS + sorted(w for w, n in c.items() if n >= min_count)
    return {w: i for i, w in enumerate(itos)}, itos


def encode_pairs(pairs, src_stoi: dict, tgt_stoi: dict):
    """Source (P, MAX_WORDS), decoder input and target (P, MAX_WORDS + 1), padded on the right.
    ``pairs``: (source words, target words) pairs, each side a list of 1 to :data:`MAX_WORDS`
    words; ``src_stoi`` and ``tgt_stoi``: :func:`build_vocab`'s first values. No pairs give
    empty (0, ...) tensors."""
    if isinstance(pairs, (str, bytes)) or (
            isinstance(pairs, tuple) and len(pairs) == 2 and isinstance(pairs[0], list)
            and all(isinstance(w, str) for w in pairs[0])):
        raise TypeError("pairs must be a list of (source words, target words) pairs; got one "
                        "pair or a str: wrap a single pair in a list, [(src, tgt)]")
    pairs = list(pairs)
    for name, stoi in (("src_stoi", src_stoi), ("tgt_stoi", tgt_stoi)):
        if not isinstance(stoi, dict):
            raise TypeError(f"{name} must be a dict word -> id (build_vocab's first value); got "
                            f"{type(stoi).__name__}")
    for i, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"pairs[{i}] must be a (source words, target words) pair; got "
                             f"{pair!r:.60}")
        for side, words in zip(("source", "target"), pair):
            validate.str_list(words, f"pairs[{i}]'s {side}")
    P = len(pairs)
    src = torch.full((P, MAX_WORDS), PAD)
    tgt_in = torch.full((P, MAX_WORDS + 1), PAD)
    tgt_out = torch.full((P, MAX_WORDS + 1), PAD)
    for i, (s, t) in enumerate(pairs):
        if not 1 <= len(s) <= MAX_WORDS or not 1 <= len(t) <= MAX_WORDS:
            raise ValueError(f"pair {i} has {len(s)} and {len(t)} words; each side must have 1 "
                             f"to {MAX_WORDS}")
        s_ids = [src_stoi.get(w, UNK) for w in s]
        t_ids = [tgt_stoi.get(w, UNK) for w in t]
        src[i, :len(s_ids)] = torch.tensor(s_ids)
        tgt_in[i, :len(t_ids) + 1] = torch.tensor([BOS] + t_ids)
        tgt_out[i, :len(t_ids) + 1] = torch.tensor(t_ids + [EOS])
    return src, tgt_in, tgt_out


def trim(src, tgt_in, tgt_out):
    """Drop the padding columns that no row of the batch uses. src (B, s), tgt_in and tgt_out
    (B, t): :func:`encode_pairs`' tensors, or rows of them (B ≥ 1)."""
    for name, x in (("src", src), ("tgt_in", tgt_in), ("tgt_out", tgt_out)):
        validate.tensor(x, name, ndim=2)
        if x.is_floating_point():
            raise TypeError(f"{name} must hold integer token ids; got dtype {x.dtype}")
    if not len(src) == len(tgt_in) == len(tgt_out) >= 1 or tgt_in.shape != tgt_out.shape:
        raise ValueError(f"trim takes one batch of B ≥ 1 rows: src (B, s), tgt_in and tgt_out "
                         f"(B, t); got {tuple(src.shape)}, {tuple(tgt_in.shape)}, "
                         f"{tuple(tgt_out.shape)}")
    s, t = int((src != PAD).sum(1).max()), int((tgt_out != PAD).sum(1).max())
    if s == 0 or t == 0:
        raise ValueError(f"every {'source' if s == 0 else 'target'} token of the batch is "
                         f"padding (id {PAD}): no row to train on")
    return src[:, :s], tgt_in[:, :t], tgt_out[:, :t]


def build_model(attention: bool, n_src: int, n_tgt: int, seed: int, device="cpu",
                sizes: dict | None = None) -> Seq2SeqGRU:
    """The chapter's model (``sizes``: :data:`MODEL` unless given), its weights drawn after
    ``seed_everything(seed)``."""
    if not isinstance(attention, bool):
        raise TypeError(f"attention must be True or False; got {attention!r}")
    seed_everything(seed)
    device = pick_device(device) if isinstance(device, str) else device
    return Seq2SeqGRU(n_src, n_tgt, attention=attention, pad_id=PAD,
                      **(MODEL if sizes is None else sizes)).to(device)


def train_translator(attention: bool, seed: int, train_data: Sequence[torch.Tensor], n_src: int,
                     n_tgt: int, steps: int = STEPS, device="cpu", sizes: dict | None = None):
    """Train one model as the chapter does: Adam at :data:`LR`, batches of :data:`BATCH` pairs
    drawn by a generator seeded with ``seed`` (the same for both models), gradients clipped to
    norm 1. Returns (model, the loss of every step)."""
    validate.positive_int(steps, "steps")
    if not (isinstance(train_data, (tuple, list)) and len(train_data) == 3):
        size = f" of length {len(train_data)}" if isinstance(train_data, (tuple, list)) else ""
        raise TypeError("train_data must be encode_pairs' three tensors (src, tgt_in, tgt_out); "
                        f"got {type(train_data).__name__}{size}")
    for name, x in zip(("src", "tgt_in", "tgt_out"), train_data):
        validate.tensor(x, f"train_data's {name}", ndim=2)
    if not len(train_data[0]) == len(train_data[1]) == len(train_data[2]) >= 1:
        raise ValueError(f"train_data must hold the same number ≥ 1 of pairs in each tensor; got "
                         f"shapes {[tuple(x.shape) for x in train_data]}")
    model = build_model(attention, n_src, n_tgt, seed, device, sizes)
    device = next(model.parameters()).device
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    batches = torch.Generator().manual_seed(seed)  # same batches for both
    losses = []
    for _ in range(steps):
        idx = torch.randint(len(train_data[0]), (BATCH,), generator=batches)
        src, tgt_in, tgt_out = (x.to(device) for x in trim(*(x[idx] for x in train_data)))
        loss = sequence_loss(model(src, None, tgt_in), tgt_out, pad_id=PAD)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    return model, losses


def chapter_data():
    """The chapter's training data and vocabulary sizes: (train_data, n_src, n_tgt)."""
    train_pairs = short_pairs("train")
    src_stoi, _ = build_vocab([s for s, _ in train_pairs])
    tgt_stoi, _ = build_vocab([t for _, t in train_pairs])
    return encode_pairs(train_pairs, src_stoi, tgt_stoi), len(src_stoi), len(tgt_stoi)


def run_name(attention: bool, seed: int) -> str:
    """The folder of one run, e.g. "attention-seed1" or "no-attention-seed1"."""
    if not isinstance(attention, bool):
        raise TypeError(f"attention must be True or False; got {attention!r}")
    return f"{'' if attention else 'no-'}attention-seed{validate.integer(seed, 'seed', minimum=0)}"


def train_runs(out=None, seeds: Sequence[int] = SEEDS, threads: int | None = 1,
               steps: int = STEPS) -> dict:
    """Retrain the shipped runs into ``out`` (default data/checkpoints/bottleneck): per seed and
    model, ``<run>/model.pt`` (float16 state dict) and ``<run>/history.json`` (every step's
    loss); runs.json (recipe, vocabulary sizes, machine). Returns runs.json's contents."""
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    out = Path(out) if out is not None else data_dir() / FOLDER
    train_data, n_src, n_tgt = chapter_data()
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    for seed in seeds:
        for attention in (False, True):
            start = time.perf_counter()
            model, losses = train_translator(attention, seed, train_data, n_src, n_tgt, steps)
            seconds = time.perf_counter() - start
            folder = out / run_name(attention, seed)
            folder.mkdir(parents=True, exist_ok=True)
            torch.save(half_state(model.state_dict()), folder / "model.pt")
            (folder / "history.json").write_text(
                json.dumps({"losses": losses, "seconds": seconds}) + "\n", encoding="utf-8")
            print(f"{run_name(attention, seed)}: {steps} steps in {seconds:.0f} s", flush=True)
    log = {"command": REPRODUCE, "seeds": seeds, "steps": steps, "batch": BATCH, "lr": LR,
           "model": MODEL, "n_src": n_src, "n_tgt": n_tgt, "torch": torch.__version__,
           "threads": torch.get_num_threads(), "machine": cpu_name()}
    (out / "runs.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return log


def train_wide(out=None, threads: int | None = 1, steps: int = STEPS) -> dict:
    """Train the control into ``out`` (default data/checkpoints/bottleneck): seed 0's recipe
    without attention at the sizes :data:`WIDE`, written to ``<WIDE_RUN>/model.pt`` (float16)
    and ``<WIDE_RUN>/history.json`` (every step's loss, the seconds, the sizes)."""
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    out = Path(out) if out is not None else data_dir() / FOLDER
    train_data, n_src, n_tgt = chapter_data()
    start = time.perf_counter()
    model, losses = train_translator(False, 0, train_data, n_src, n_tgt, steps, sizes=WIDE)
    seconds = time.perf_counter() - start
    folder = out / WIDE_RUN
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(half_state(model.state_dict()), folder / "model.pt")
    log = {"losses": losses, "seconds": seconds, "model": WIDE}
    (folder / "history.json").write_text(json.dumps(log) + "\n", encoding="utf-8")
    print(f"{WIDE_RUN}: {steps} steps in {seconds:.0f} s", flush=True)
    return log


def load_wide(n_src: int, n_tgt: int, device=None, folder=None) -> tuple[Seq2SeqGRU, list[float]]:
    """The shipped control (:func:`train_wide`), as :func:`load_run` loads the others."""
    log = read_shipped_json(FOLDER, "runs.json", folder, "train_runs")
    if (n_src, n_tgt) != (log["n_src"], log["n_tgt"]):
        raise ValueError(f"the shipped runs have vocabularies of {log['n_src']:,} and "
                         f"{log['n_tgt']:,} words; got n_src={n_src!r}, n_tgt={n_tgt!r}")
    state = read_shipped_state(FOLDER, f"{WIDE_RUN}/model.pt", folder, "train_wide")
    model = Seq2SeqGRU(n_src, n_tgt, attention=False, pad_id=PAD, **WIDE)
    load_weights(model, float_state(state), shipped_where(FOLDER, f"{WIDE_RUN}/model.pt", folder))
    device = pick_device(device) if device is None or isinstance(device, str) else device
    model.to(device).eval()
    history = read_shipped_json(FOLDER, f"{WIDE_RUN}/history.json", folder, "train_wide")
    return model, history["losses"]


def _bytes(relative: str, folder=None) -> bytes:
    return read_shipped(FOLDER, relative, folder, "train_runs")


def load_run(attention: bool, seed: int, n_src: int, n_tgt: int, device=None,
             folder=None) -> tuple[Seq2SeqGRU, list[float]]:
    """A shipped run (checked against data/manifest.json, or read from ``folder``): the model in
    float32, in eval mode on ``device``, and the loss of every step. ``n_src`` and ``n_tgt``
    must be the run's vocabulary sizes: a ValueError says so otherwise."""
    run = run_name(attention, seed)
    log = read_shipped_json(FOLDER, "runs.json", folder, "train_runs")
    if (n_src, n_tgt) != (log["n_src"], log["n_tgt"]):
        raise ValueError(f"the shipped runs have vocabularies of {log['n_src']:,} and "
                         f"{log['n_tgt']:,} words; got n_src={n_src!r}, n_tgt={n_tgt!r}")
    if seed not in log["seeds"]:
        raise ValueError(f"seed {seed} is not shipped; the shipped seeds are {log['seeds']}")
    state = read_shipped_state(FOLDER, f"{run}/model.pt", folder, "train_runs")
    model = Seq2SeqGRU(n_src, n_tgt, attention=attention, pad_id=PAD, **MODEL)
    load_weights(model, float_state(state), shipped_where(FOLDER, f"{run}/model.pt", folder))
    device = pick_device(device) if device is None or isinstance(device, str) else device
    model.to(device).eval()
    return model, read_shipped_json(FOLDER, f"{run}/history.json", folder, "train_runs")["losses"]


def record_in_manifest(folder=None) -> list[str]:
    """List every file of ``folder`` (default data/checkpoints/bottleneck) in data/manifest.json
    and data/SHA256SUMS with its sha256, size and command; returns the names recorded."""
    return record_shipped(FOLDER, REPRODUCE, folder)


def main(argv=None) -> int:
    """``python -m minformer.bottleneck [--out DIR] [--seeds S ...] [--threads N]``: retrain
    chapter 9's shipped encoder-decoders (:func:`minformer.data.retrain_command`)."""
    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Retrain chapter 9's shipped encoder-decoders (with and without attention, seeds 0 and 1, "
        "and the wider model without attention, seed 0) into data/checkpoints/bottleneck. About "
        "seven minutes on one thread.",
        lambda args: (train_runs(args.out, args.seeds, args.threads),
                      train_wide(args.out, args.threads))[0], seeds=SEEDS)


if __name__ == "__main__":
    raise SystemExit(main())
