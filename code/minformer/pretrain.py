"""Chapter 12's two pretraining runs on WikiText-2: the masked-token encoder and the next-token
decoder, each 900 steps of the chapter's recipe.

The chapter builds the recipe in its own cells and trains each model for its first
:data:`LIVE_STEPS` steps, enough to watch the validation loss fall; then it loads the whole runs
from ``data/checkpoints/wikitext`` (float32 weights and every step's loss, checked against
``data/manifest.json``), so that what follows (accuracies, perplexity, samples, fine-tuning)
runs on fixed weights and gives the same outputs on every machine. The live steps are checked
against the shipped history. ``python -m minformer.pretrain`` (:func:`train_pretrained`)
retrains and rewrites them.

- :func:`word_stream` chapter 9's WikiText-2 words (rare ones replaced by ``<unk>``);
- :func:`chapter_tokenizer` / :func:`encode_stream` the chapter's 4,000-token BPE and its ids;
- :func:`random_windows` / :func:`windows_of` random training windows, consecutive validation ones;
- :func:`build_run` one run's model, data, loss, optimizer and validation, as the chapter sets
  them up; :func:`train_pretrained` trains both and writes them;
- :func:`load_pretrained` one shipped run: the model and its :class:`~minformer.train.History`.
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

from . import validate
from .data import (
    cpu_name,
    load_weights,
    read_shipped,
    read_shipped_json,
    read_shipped_state,
    record_shipped,
    retrain_command,
    shipped_where,
)
from .objectives import IGNORE, mask_tokens, shift_for_next_token
from .tokenizer import BPETokenizer
from .train import History, sequence_loss, train
from .transformer import DecoderOnly, EncoderOnly, TransformerConfig
from .utils import data_dir, pick_device, seed_everything

FOLDER = "checkpoints/wikitext"  # under data/
REPRODUCE = "python -m minformer.pretrain"
V = 4000
SPECIALS = ("<pad>", "<bos>", "<eos>", "<unk>", "<mask>")
PAD, BOS, EOS, UNK, MASK = range(5)
T, BATCH = 64, 32  # tokens per window, windows per batch
STEPS = 900  # each shipped run
LIVE_STEPS = 150  # what the chapter trains itself before loading the rest
CONFIG = dict(vocab_size=V, d_model=64, n_heads=4, d_ff=256, n_layers=2, max_len=T + 1,
              norm_first=True, dropout=0.0)
# seed: the model's initial weights (seed_everything before it is built); windows: the
# generator of the training windows; masking: the generator of the MLM's masks
RECIPES = {
    "mlm": dict(seed=0, windows=1, masking=1, lr=6e-3, weight_decay=0.01, warmup=50,
                eval_every=50),
    "lm": dict(seed=0, windows=2, lr=6e-3, weight_decay=0.01, warmup=50, eval_every=50),
}
DESC = {"mlm": "encoder-only (MLM)", "lm": "decoder-only (LM)"}


def word_stream(split: str, known: set | None = None) -> tuple[list[str], set]:
    """WikiText-2's ``split`` as chapter 9 reads it: lower-cased words, punctuation dropped, and
    words outside ``known`` replaced by ``<unk>``. ``known`` None: the words seen at least 3
    times in this split (pass the train split's set for the others). Returns (words, known)."""
    from .data import load_wikitext, text_to_words

    if known is not None and (isinstance(known, (str, bytes)) or not hasattr(known, "__contains__")):
        raise TypeError(f"known must be a set of words (word_stream's second value); got "
                        f"{type(known).__name__}" + (" (a str would test substrings)"
                                                     if isinstance(known, str) else ""))
    words = text_to_words(load_wikitext(split))
    if known is None:
        counts = collections.Counter(words)
        known = {w for w, c in counts.items() if c >= 3}
    return [w if w in known else "<unk>" for w in words], known


def chapter_tokenizer(train_words: Sequence[str]) -> BPETokenizer:
    """The chapter's BPE: :data:`V` tokens with the five :data:`SPECIALS`, learned on the
    training words in chunks of 50."""
    if isinstance(train_words, (str, bytes)) or not hasattr(train_words, "__getitem__"):
        validate.str_list(train_words, "train_words")  # raises, naming what it got
    if not train_words:
        raise ValueError("train_words is empty: no text to learn the BPE merges from")
    try:
        chunks = [" ".join(train_words[i:i + 50]) for i in range(0, len(train_words), 50)]
    except TypeError:  # a word that is no str: say which
        validate.str_list(train_words, "train_words")
        raise
    return BPETokenizer.train(chunks, vocab_size=V, special_tokens=list(SPECIALS))


def encode_stream(tok: BPETokenizer, words: Sequence[str]) -> torch.Tensor:
    """The words, joined by spaces, as one stream of token ids: (n_tokens,)."""
    if not isinstance(tok, BPETokenizer):
        raise TypeError(f"tok must be a BPETokenizer (chapter_tokenizer's); got "
                        f"{type(tok).__name__}")
    if isinstance(words, (str, bytes)):
        raise TypeError("words must be a list of words, not a single str (word_stream's first "
                        "value)")
    try:
        text = " ".join(words)
    except TypeError:  # not a list of str: say what it is
        validate.str_list(words, "words")
        raise
    return torch.tensor(tok.encode(text, allowed_special={"<unk>"}),
                        dtype=torch.long)  # (n_tokens,), empty for no words


def random_windows(ids: torch.Tensor, n: int, length: int,
                   generator: torch.Generator) -> torch.Tensor:
    """``n`` windows of ``length`` consecutive ids at random offsets: (n, length). ids: (n_ids,)
    with n_ids > length ≥ 1, n ≥ 1 (as :func:`minformer.variants.random_windows`)."""
    validate.tensor(ids, "ids")
    validate.positive_int(n, "n")
    validate.positive_int(length, "length")
    if ids.dim() != 1 or len(ids) <= length:
        raise ValueError(f"ids must be a 1-D stream longer than length={length}; got shape "
                         f"{tuple(ids.shape)}")
    if ids.is_floating_point():
        raise TypeError(f"ids must be integer token ids; got dtype {ids.dtype}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (torch.Generator().manual_seed(s)); "
                        f"got {type(generator).__name__}")
    starts = torch.randint(0, len(ids) - length, (n,), generator=generator)
    return torch.stack([ids[s:s + length] for s in starts.tolist()])


def windows_of(ids: torch.Tensor, length: int) -> torch.Tensor:
    """The stream cut into consecutive windows: (len(ids) // length, length)."""
    validate.tensor(ids, "ids")
    validate.positive_int(length, "length")
    if ids.dim() != 1 or len(ids) < length:
        raise ValueError(f"ids must be a 1-D stream of at least length={length} ids; got shape "
                         f"{tuple(ids.shape)}")
    if ids.is_floating_point():
        raise TypeError(f"ids must be integer token ids; got dtype {ids.dtype}")
    n = len(ids) // length
    return ids[:n * length].view(n, length)  # (n, length)


def window_batches(ids: torch.Tensor, length: int, seed: int, device) -> Iterator[torch.Tensor]:
    """Endless batches of :data:`BATCH` random windows: (BATCH, length) each."""
    g = torch.Generator().manual_seed(validate.integer(seed, "seed"))
    while True:
        yield random_windows(ids, BATCH, length, g).to(device)


def build_run(name: str, train_ids: torch.Tensor, valid_ids: torch.Tensor, device="cpu"):
    """Run ``name`` ("mlm" or "lm") set up as chapter 12 sets it up: seeds, then the model;
    returns (model, batches, loss_fn, optimizer, eval_fn) for :func:`minformer.train.train`.

    mlm: an :class:`EncoderOnly` trained to recover the picked tokens (BERT's 80/10/10 rule,
    :func:`mask_tokens`), scored with the tied embedding; validated on 400 windows of ``valid_ids``
    masked once (seed 7), at the positions shown as ``<mask>``.
    lm: a :class:`DecoderOnly` trained on the next token at every position; validated on 256
    windows spread evenly over ``valid_ids``."""
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}; got {name!r}")
    recipe = RECIPES[name]
    device = pick_device(device) if isinstance(device, str) else device
    seed_everything(recipe["seed"])
    if name == "mlm":
        model = EncoderOnly(TransformerConfig(**CONFIG)).to(device)
        mask_rng = torch.Generator().manual_seed(recipe["masking"])

        def loss_fn(model, window):
            inputs, targets = mask_tokens(window.cpu(), MASK, V, special_ids=range(5),
                                          generator=mask_rng)
            inputs, targets = inputs.to(device), targets.to(device)
            picked = targets != IGNORE
            h = model.hidden(inputs)[picked]  # (n_picked, d_model)
            return F.cross_entropy(h @ model.embed.weight.T, targets[picked]), int(picked.sum())

        valid_in, valid_targets = mask_tokens(windows_of(valid_ids, T)[:400], MASK, V,
                                              special_ids=range(5),
                                              generator=torch.Generator().manual_seed(7))
        shown = (valid_in == MASK).to(device)  # (400, T)
        valid_in = valid_in.to(device)
        answers = valid_targets.to(device)[shown]

        def eval_fn(model):
            h = model.hidden(valid_in)[shown]  # (n_masked, d_model)
            return F.cross_entropy(h @ model.embed.weight.T, answers).item()

        length = T
    else:
        model = DecoderOnly(TransformerConfig(**CONFIG)).to(device)

        def loss_fn(model, window):
            inputs, targets = shift_for_next_token(window)  # (B, T) each
            return sequence_loss(model(inputs), targets, pad_id=IGNORE), targets.numel()

        lm_valid = windows_of(valid_ids, T + 1)  # 256 of them, spread evenly:
        lm_valid = lm_valid[::max(1, len(lm_valid) // 256)][:256].to(device)  # (256, T+1)

        def eval_fn(model):
            losses = [sequence_loss(model(inputs), targets, pad_id=IGNORE)
                      for inputs, targets in map(shift_for_next_token, lm_valid.split(64))]
            return torch.stack(losses).mean().item()  # equal-sized batches

        length = T + 1
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe["lr"],
                                  weight_decay=recipe["weight_decay"])
    batches = window_batches(train_ids, length, recipe["windows"], device)
    return model, batches, loss_fn, optimizer, eval_fn


def train_run(name: str, train_ids: torch.Tensor, valid_ids: torch.Tensor, steps: int = STEPS,
              device="cpu", progress: bool = True):
    """Train run ``name`` for ``steps`` steps of the chapter's recipe: (model, History)."""
    model, batches, loss_fn, optimizer, eval_fn = build_run(name, train_ids, valid_ids, device)
    history = train(model, batches, loss_fn, optimizer, steps=steps,
                    warmup=RECIPES[name]["warmup"], eval_fn=eval_fn,
                    eval_every=RECIPES[name]["eval_every"], progress=progress, desc=DESC[name])
    return model, history


# ------------------------------------------------------------------------- the shipped runs

def train_pretrained(out=None, steps: int = STEPS, threads: int | None = 1, device="cpu",
                     progress: bool = True) -> dict:
    """Retrain both runs into ``out`` (default data/checkpoints/wikitext): tokenizer.json,
    ``<name>.pt`` (float32 state dict) and ``<name>-history.json`` (every step's loss and
    learning rate, the validation loss every 50 steps) per run, and runs.json (recipe, steps,
    machine). Returns runs.json's contents."""
    validate.positive_int(steps, "steps")
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    device = pick_device(device)
    out = Path(out) if out is not None else data_dir() / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    train_words, known = word_stream("train")
    valid_words, _ = word_stream("valid", known)
    tok = chapter_tokenizer(train_words)
    tok.save(out / "tokenizer.json")
    train_ids, valid_ids = encode_stream(tok, train_words), encode_stream(tok, valid_words)
    for name in RECIPES:
        model, history = train_run(name, train_ids, valid_ids, steps, device, progress)
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        torch.save(state, out / f"{name}.pt")
        (out / f"{name}-history.json").write_text(
            json.dumps(history.to_dict()) + "\n", encoding="utf-8")
        print(f"{name}: {history.steps} steps in {history.seconds:.0f} s, validation loss "
              f"{history.evals[0][2]:.3f} -> {history.evals[-1][2]:.3f}", flush=True)
    log = {"command": REPRODUCE, "steps": steps, "config": CONFIG, "recipes": RECIPES,
           "batch": BATCH, "window": T, "torch": torch.__version__, "device": str(device),
           "threads": torch.get_num_threads(), "machine": cpu_name()}
    (out / "runs.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return log


def _bytes(relative: str, folder=None) -> bytes:
    """A file of the shipped runs, checked against data/manifest.json; or, with ``folder`` (runs
    that :func:`train_pretrained` wrote elsewhere, listed in no manifest), that folder's file."""
    return read_shipped(FOLDER, relative, folder, "train_pretrained")


def load_pretrained_tokenizer(folder=None) -> BPETokenizer:
    """The runs' tokenizer (the chapter's BPE), checked against data/manifest.json."""
    return BPETokenizer.from_json(_bytes("tokenizer.json", folder),
                                  Path(folder or data_dir() / FOLDER) / "tokenizer.json")


def load_pretrained(name: str, tokenizer: BPETokenizer | None = None, device=None,
                    folder=None) -> tuple[torch.nn.Module, History]:
    """Shipped run ``name`` ("mlm" or "lm"): its model, in eval mode on ``device``, and its
    :class:`History`, both checked against data/manifest.json (or read from ``folder``).
    ``tokenizer``, if given, must be the one the run was trained with (tokenizer.json beside
    it): a ValueError says so otherwise."""
    if name not in RECIPES:
        raise ValueError(f"name must be one of {sorted(RECIPES)}; got {name!r}")
    if tokenizer is not None:
        if not isinstance(tokenizer, BPETokenizer):
            raise TypeError(f"tokenizer must be a BPETokenizer (load_pretrained_tokenizer's); "
                            f"got {type(tokenizer).__name__}")
        own = load_pretrained_tokenizer(folder)
        if tokenizer.merges != own.merges:
            raise ValueError(f"tokenizer is not the one the {name} run was trained with "
                             "(tokenizer.json beside it): train it with chapter_tokenizer("
                             "word_stream('train')[0])")
    state = read_shipped_state(FOLDER, f"{name}.pt", folder, "train_pretrained")
    model = (EncoderOnly if name == "mlm" else DecoderOnly)(TransformerConfig(**CONFIG))
    load_weights(model, state, shipped_where(FOLDER, f"{name}.pt", folder))
    device = pick_device(device) if device is None or isinstance(device, str) else device
    model.to(device).eval()
    history = History.from_dict(read_shipped_json(FOLDER, f"{name}-history.json", folder,
                                                  "train_pretrained"))
    return model, history


def record_in_manifest(folder=None) -> list[str]:
    """List every file of ``folder`` (default data/checkpoints/wikitext) in data/manifest.json
    and data/SHA256SUMS with its sha256, size and command; returns the names recorded."""
    return record_shipped(FOLDER, REPRODUCE, folder)


def main(argv=None) -> int:
    """``python -m minformer.pretrain [--out DIR] [--steps N] [--threads N] [--device D]``:
    retrain chapter 12's two runs (:func:`minformer.data.retrain_command`)."""
    def options(parser):
        parser.add_argument("--steps", type=int, default=STEPS)
        parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")

    def train(args):
        t0 = time.perf_counter()
        train_pretrained(args.out, args.steps, args.threads, args.device)
        return f"done in {(time.perf_counter() - t0) / 60:.1f} min"

    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Retrain chapter 12's two pretraining runs (the masked-token encoder and the next-token "
        "decoder, 900 steps each) into data/checkpoints/wikitext. About 3 minutes on one thread.",
        train, options)


if __name__ == "__main__":
    raise SystemExit(main())
