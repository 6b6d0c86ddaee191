"""Chapter 13's race: the Transformer against the GRU with attention, at equal compute.

The chapter trains a few hundred steps live, enough to watch BLEU rise, then loads the whole runs
of the same recipe from ``data/checkpoints/race`` (two seeds of each model), so that everything
after them (decoding, BLEU, loops, lengths) runs on fixed weights and gives the same outputs on
every machine. ``python -m minformer.race`` (:func:`train_race`) retrains and rewrites them.

- :data:`RECIPES` the two models and their training settings (the chapter's own);
- :func:`chapter_tokenizer` the chapter's BPE (8,000 tokens on the ``train`` pairs);
- :func:`step_seconds` / :func:`step_time_ratio` the seconds a training step of each model costs,
  measured on the same batches in alternation, and their ratio (GRU / Transformer);
- :func:`equal_compute_steps` the GRU's steps for the Transformer's: the same seconds of compute
  on the machine that measured the ratio, whatever that machine's speed;
- :func:`load_race_run` one shipped run (weights checked against ``data/manifest.json``) as a
  :class:`~minformer.translator.Translator` and its :class:`~minformer.train.History`.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

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
from .rnn import Seq2SeqGRU
from .tokenizer import BPETokenizer
from .train import History, train
from .train_translator import (
    _check_text_pairs,
    bucketed_batches,
    encode_pairs,
    train_translator,
    translation_loss,
)
from .transformer import Transformer, TransformerConfig
from .translator import Translator
from .utils import data_dir, pick_device, seed_everything

RACE = "checkpoints/race"  # under data/
REPRODUCE = "python -m minformer.race"
VOCAB = 8000
TRANSFORMER_STEPS = 1400
SEEDS = (0, 1)
SHARED = dict(batch_size=128, label_smoothing=0.1, eval_every=200, eval_sentences=300)
# the chapter's lesson on the learning rate: the Transformer's first 100 steps, seed 0, at a
# peak of 1e-3 instead of 3e-3 (its history only: the chapter compares the losses)
SLOW_LR = dict(steps=100, lr=1e-3, seed=0)
SLOW_RUN = "transformer-slow-lr"
RECIPES = {
    "transformer": dict(d_model=128, n_heads=4, d_ff=512, n_layers=2, dropout=0.1, max_len=128,
                        lr=3e-3, warmup=400),
    "gru": dict(d_emb=128, d_hidden=256, dropout=0.1, lr=1e-2, warmup=100),
}


def _check_tokenizer(tokenizer) -> None:
    if not isinstance(tokenizer, BPETokenizer):
        raise TypeError(f"tokenizer must be a BPETokenizer (chapter_tokenizer's or "
                        f"load_race_tokenizer's); got {type(tokenizer).__name__}")


def chapter_tokenizer(train_pairs: Sequence[tuple[str, str]]) -> BPETokenizer:
    """The chapter's shared BPE: 8,000 tokens learned on both sides of ``train_pairs``."""
    train_pairs = _check_text_pairs(train_pairs, "train_pairs")
    if not train_pairs:
        raise ValueError("train_pairs is empty: no text to learn the BPE merges from")
    return BPETokenizer.train([s for pair in train_pairs for s in pair], VOCAB)


def transformer_config(tokenizer: BPETokenizer) -> TransformerConfig:
    """The race's Transformer (:data:`RECIPES` ``["transformer"]``) for ``tokenizer``."""
    _check_tokenizer(tokenizer)
    r = RECIPES["transformer"]
    return TransformerConfig(
        vocab_size=tokenizer.vocab_size, d_model=r["d_model"], n_heads=r["n_heads"],
        d_ff=r["d_ff"], n_layers=r["n_layers"], dropout=r["dropout"], max_len=r["max_len"],
        pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id, eos_id=tokenizer.eos_id)


def build_model(name: str, tokenizer: BPETokenizer):
    """A fresh model of :data:`RECIPES` ``[name]`` ("transformer" or "gru") for ``tokenizer``."""
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}; got {name!r}")
    _check_tokenizer(tokenizer)
    if name == "transformer":
        return Transformer(transformer_config(tokenizer))
    r = RECIPES[name]
    return Seq2SeqGRU(tokenizer.vocab_size, tokenizer.vocab_size, d_emb=r["d_emb"],
                      d_hidden=r["d_hidden"], dropout=r["dropout"], pad_id=tokenizer.pad_id)


def step_seconds(tokenizer: BPETokenizer, train_pairs, steps: int = 8, rounds: int = 3,
                 seed: int = 0, device=None) -> dict[str, list[float]]:
    """Seconds per training step of each model, {name: [one value per round]}.

    Each round trains a fresh Transformer, then a fresh GRU, for ``steps`` steps on the same
    first batches (the recipe's, bucketed with ``seed``), with the recipe's loss and Adam; the
    models alternate, so a machine that slows down slows both. The first step of each round
    (allocations, first-call costs) is not counted."""
    steps = validate.integer(steps, "steps", minimum=2)
    rounds = validate.integer(rounds, "rounds", minimum=1)
    device = pick_device(device) if device is None or isinstance(device, str) else device
    examples = encode_pairs(tokenizer, train_pairs)
    batches = bucketed_batches(examples, SHARED["batch_size"], tokenizer.pad_id, seed=seed)[:steps]
    if len(batches) < steps:
        raise ValueError(f"{len(train_pairs)} pairs make only {len(batches)} batches of "
                         f"{SHARED['batch_size']}; step_seconds needs steps={steps}")
    loss_fn = translation_loss(SHARED["label_smoothing"], tokenizer.pad_id)
    out: dict[str, list[float]] = {name: [] for name in RECIPES}
    for _ in range(rounds):
        for name in RECIPES:
            seed_everything(seed)
            model = build_model(name, tokenizer).to(device)
            opt = torch.optim.Adam(model.parameters(), lr=RECIPES[name]["lr"], betas=(0.9, 0.98),
                                   eps=1e-9)
            train(model, batches[:1], loss_fn, opt, steps=1, progress=False)  # not counted
            history = train(model, batches[1:], loss_fn, opt, steps=steps - 1, progress=False)
            out[name].append(history.seconds / (steps - 1))
    return out


def step_time_ratio(seconds: dict[str, list[float]]) -> float:
    """A GRU step's cost in Transformer steps: median GRU seconds / median Transformer seconds."""
    if not isinstance(seconds, dict) or any(
            not isinstance(seconds.get(k), (list, tuple)) or not seconds[k]
            for k in ("gru", "transformer")):
        raise ValueError("seconds must be step_seconds' dict: {'gru': [...], 'transformer': "
                         f"[...]}}, each a non-empty list of seconds; got {seconds!r}"[:200])
    for k in ("gru", "transformer"):
        for s in seconds[k]:
            validate.number(s, f"seconds[{k!r}] entries", low=0.0, low_open=True)
            if s == float("inf"):
                raise ValueError(f"seconds[{k!r}] holds inf: a step time must be finite")
    return statistics.median(seconds["gru"]) / statistics.median(seconds["transformer"])


def equal_compute_steps(transformer_steps: int, ratio: float) -> int:
    """The GRU's steps in the time of ``transformer_steps`` Transformer steps, for a GRU step
    that costs ``ratio`` Transformer steps."""
    transformer_steps = validate.positive_int(transformer_steps, "transformer_steps")
    ratio = validate.number(ratio, "ratio", low=0.0, high=float("inf"), low_open=True, high_open=True)
    return max(1, round(transformer_steps / ratio))


# ------------------------------------------------------------------------- the shipped runs

def _history_dict(history: History) -> dict:
    return {"losses": [round(x, 5) for x in history.losses],
            "evals": [[s, round(t, 1), round(b, 2)] for s, t, b in history.evals],
            "seconds": round(history.seconds, 1), "tokens": history.tokens}


def run_name(name: str, seed: int) -> str:
    """The folder of one run under data/checkpoints/race, e.g. "transformer-seed0"."""
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}; got {name!r}")
    return f"{name}-seed{validate.integer(seed, 'seed', minimum=0)}"


def train_race(out=None, seeds: Sequence[int] = SEEDS, threads: int | None = 1, device="cpu",
               progress: bool = True, ratio: float | None = None) -> dict:
    """Retrain the shipped runs into ``out`` (default data/checkpoints/race): the chapter's
    tokenizer; the step-time ratio measured on this machine (:func:`step_seconds`, 5 rounds of
    8 steps); then for each seed the Transformer for :data:`TRANSFORMER_STEPS` steps and the GRU
    for :func:`equal_compute_steps` of them, each evaluated on 300 validation sentences every 200
    steps. Writes tokenizer.json, race.json (the ratio, steps, machine) and per run model.pt
    (float16 state dict) and history.json. Returns race.json's contents."""
    from .data import load_translation_pairs

    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    device = pick_device(device)
    out = Path(out) if out is not None else data_dir() / RACE
    out.mkdir(parents=True, exist_ok=True)
    train_pairs = load_translation_pairs("train")
    valid_pairs = load_translation_pairs("valid")
    tok = chapter_tokenizer(train_pairs)
    tok.save(out / "tokenizer.json")
    seconds = {}
    if ratio is None:
        seconds = step_seconds(tok, train_pairs, steps=8, rounds=5, device=device)
        ratio = step_time_ratio(seconds)
    ratio = round(validate.number(ratio, "ratio", low=0.0, high=float("inf"), low_open=True,
                                  high_open=True), 4)
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    steps = {"transformer": TRANSFORMER_STEPS, "gru": equal_compute_steps(TRANSFORMER_STEPS, ratio)}
    for seed in seeds:
        for name, recipe in RECIPES.items():
            if name == "transformer":  # a config: train_translator seeds, then builds it,
                model = transformer_config(tok)  # exactly as chapter 13 does live
            else:  # the GRU built after seeding, as chapter 9 builds it
                seed_everything(seed)
                model = build_model(name, tok)
            translator, history = train_translator(
                model, tok, train_pairs,
                valid_pairs=valid_pairs, steps=steps[name],
                lr=recipe["lr"], warmup=recipe["warmup"], batch_size=SHARED["batch_size"],
                label_smoothing=SHARED["label_smoothing"], eval_every=SHARED["eval_every"],
                eval_sentences=SHARED["eval_sentences"], seed=seed, device=device,
                progress=progress, desc=run_name(name, seed))
            folder = out / run_name(name, seed)
            folder.mkdir(exist_ok=True)
            torch.save(half_state(translator.model.state_dict()), folder / "model.pt")
            (folder / "history.json").write_text(json.dumps(_history_dict(history)) + "\n",
                                                 encoding="utf-8")
            print(f"{run_name(name, seed)}: {history.steps} steps in {history.seconds:.0f} s, "
                  f"valid BLEU {[round(b, 1) for _, _, b in history.evals]}", flush=True)
    train_slow_lr(out, device=device, progress=progress, tokenizer=tok, train_pairs=train_pairs)
    old = out / "race.json"
    if old.is_file():  # seeds that another process trained into out with the same ratio
        before = json.loads(old.read_text(encoding="utf-8"))
        if before.get("ratio") == ratio:
            seconds = seconds or before.get("step_seconds", {})
            seeds = sorted(set(seeds) | set(before.get("seeds", [])))
    log = {"command": REPRODUCE, "ratio": ratio,
           "step_seconds": {k: [round(s, 4) for s in v] for k, v in seconds.items()},
           "steps": steps, "seeds": list(seeds), "recipes": RECIPES, "shared": SHARED,
           "torch": torch.__version__, "device": str(device), "threads": torch.get_num_threads(),
           "machine": cpu_name()}
    old.write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return log


def train_slow_lr(out=None, device="cpu", progress: bool = True, tokenizer=None,
                  train_pairs=None) -> History:
    """The Transformer's first :data:`SLOW_LR` steps at the lower peak learning rate, as chapter 13
    trains its live run otherwise (same seed, batches, warmup): writes only
    ``<out>/transformer-slow-lr/history.json`` and returns the history."""
    from .data import load_translation_pairs

    out = Path(out) if out is not None else data_dir() / RACE
    train_pairs = train_pairs if train_pairs is not None else load_translation_pairs("train")
    tok = tokenizer if tokenizer is not None else chapter_tokenizer(train_pairs)
    recipe = RECIPES["transformer"]
    _, history = train_translator(
        transformer_config(tok), tok, train_pairs, steps=SLOW_LR["steps"], lr=SLOW_LR["lr"],
        warmup=recipe["warmup"], batch_size=SHARED["batch_size"],
        label_smoothing=SHARED["label_smoothing"], seed=SLOW_LR["seed"],
        device=pick_device(device) if isinstance(device, str) else device, progress=progress,
        desc=SLOW_RUN)
    folder = out / SLOW_RUN
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "history.json").write_text(json.dumps(_history_dict(history)) + "\n",
                                         encoding="utf-8")
    print(f"{SLOW_RUN}: {history.steps} steps in {history.seconds:.0f} s", flush=True)
    return history


def load_slow_lr_history(folder=None) -> History:
    """The shipped history of :func:`train_slow_lr` (checked against data/manifest.json)."""
    return History.from_dict(read_shipped_json(RACE, f"{SLOW_RUN}/history.json", folder,
                                               "train_slow_lr"))


def _race_bytes(relative: str, folder=None) -> bytes:
    """A file of the shipped runs, checked against data/manifest.json; or, with ``folder`` (runs
    that :func:`train_race` wrote elsewhere, listed in no manifest), that folder's file as it is."""
    return read_shipped(RACE, relative, folder, "train_race")


def load_race_log(folder=None) -> dict:
    """race.json of the shipped runs (or of ``folder``): the ratio, each model's steps, the
    machine that measured them."""
    return read_shipped_json(RACE, "race.json", folder, "train_race")


def load_race_tokenizer(folder=None) -> BPETokenizer:
    """The runs' tokenizer (the chapter's BPE), checked against data/manifest.json."""
    return BPETokenizer.from_json(_race_bytes("tokenizer.json", folder),
                                  Path(folder or data_dir() / RACE) / "tokenizer.json")


def load_race_run(name: str, seed: int, tokenizer: BPETokenizer | None = None, device=None,
                  folder=None) -> tuple[Translator, History]:
    """One run: ``name`` "transformer" or "gru", ``seed`` one of race.json's seeds, from the
    shipped runs (weights and history checked against data/manifest.json) or from ``folder``.
    Weights are float16 on disk, float32 here; the model is in eval mode on ``device``.
    ``tokenizer`` (default: the runs' own) must be the one they were trained with: a ValueError
    says so otherwise."""
    run = run_name(name, seed)
    if tokenizer is not None:
        _check_tokenizer(tokenizer)
    if folder is None:  # the shipped runs: race.json lists their seeds
        seeds = load_race_log().get("seeds")
        if isinstance(seeds, list) and seed not in seeds:
            raise ValueError(f"seed {seed} is not shipped; the shipped seeds are {seeds}")
    own = load_race_tokenizer(folder)
    if tokenizer is None:
        tokenizer = own
    elif tokenizer.merges != own.merges:
        raise ValueError(f"tokenizer is not the one {run} was trained with (tokenizer.json "
                         f"beside it): train it with chapter_tokenizer(train pairs)")
    state = read_shipped_state(RACE, f"{run}/model.pt", folder, "train_race")
    model = build_model(name, tokenizer)
    load_weights(model, float_state(state), shipped_where(RACE, f"{run}/model.pt", folder))
    device = pick_device(device) if device is None or isinstance(device, str) else device
    model.to(device).eval()
    max_source = model.config.max_len if isinstance(model, Transformer) else 1024
    history = History.from_dict(json.loads(_race_bytes(f"{run}/history.json", folder)))
    return Translator(model, tokenizer, max_source_tokens=max_source), history


def record_in_manifest(folder=None) -> list[str]:
    """List every file of ``folder`` (default data/checkpoints/race) in data/manifest.json and
    data/SHA256SUMS with its sha256, size and command (as data/build.py lists checkpoints);
    returns the names recorded."""
    return record_shipped(RACE, REPRODUCE, folder)


def main(argv=None) -> int:
    """``python -m minformer.race [--out DIR] [--seeds S ...] [--threads N] [--device D] [--ratio
    R] [--slow-lr-only]``: retrain chapter 13's race (:func:`minformer.data.retrain_command`)."""
    def options(parser):
        parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
        parser.add_argument("--ratio", type=float, help="the step-time ratio to use instead of "
                                                        "measuring it (GRU / Transformer)")
        parser.add_argument("--slow-lr-only", action="store_true", help="retrain only the 100 "
                            "steps at the lower learning rate (half a minute)")

    def train(args):
        if args.slow_lr_only:
            torch.set_num_threads(validate.positive_int(args.threads, "threads"))
            train_slow_lr(args.out, args.device)
            return None
        t0 = time.perf_counter()
        log = train_race(args.out, args.seeds, args.threads, args.device, ratio=args.ratio)
        return (f"ratio {log['ratio']}, steps {log['steps']}; done in "
                f"{(time.perf_counter() - t0) / 60:.1f} min")

    return retrain_command(
        argv, RACE, REPRODUCE,
        "Retrain chapter 13's race (the Transformer and the GRU, two seeds each, at equal "
        "compute) into data/checkpoints/race. About 30 minutes on one thread.", train, options,
        seeds=SEEDS)


if __name__ == "__main__":
    sys.exit(main())
