"""A trained English→Spanish translator, from sentence pairs to a checkpoint (chapter 13).

The pieces, in the order the chapter uses them:

- :func:`references_by_source` groups pairs by English sentence: one source, all its Spanish
  translations as references (BLEU takes them all).
- :func:`encode_pairs` turns (en, es) pairs into id lists with one shared BPE tokenizer:
  source ``en <eos>``, target ``<bos> es <eos>``.
- :func:`bucketed_batches` cuts the examples into batches of similar length, so little of each
  batch is padding; :func:`padding_fraction` measures how little.
- :func:`translation_loss` is the training loss (label-smoothed cross-entropy on real target
  tokens), in the ``(model, batch) -> (loss, tokens)`` form :func:`minformer.train.train` takes.
- :class:`Translator` holds a model and its tokenizer: ``translate`` sentences (greedy or beam),
  ``save`` and ``load`` a checkpoint (weights stored in fp16, loaded with
  ``torch.load(weights_only=True)``).
- :func:`train_translator` is the whole recipe; ``python -m minformer.translator train --full``
  reproduces the checkpoint shipped in ``data/checkpoints/en-es``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from . import validate
from .decode import beam_search, greedy_search
from .metrics import corpus_bleu
from .tokenizer import BPETokenizer, pad_sequences
from .train import History, sequence_loss, train
from .transformer import Transformer, TransformerConfig
from .utils import data_dir, pick_device, seed_everything

CHECKPOINT = "checkpoints/en-es"  # inside the data folder
FILES = ("model.pt", "config.json", "tokenizer.json", "train_log.json")


class CheckpointError(ValueError):
    """A checkpoint folder is missing a file, or a file differs from its recorded sha256."""


# ---------------------------------------------------------------- data


def references_by_source(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[list[str]]]:
    """Group (en, es) pairs by English sentence, in order of first appearance.

    Returns ``(sources, references)``: each English sentence once, and the list of all its
    Spanish translations (several when Tatoeba has several)."""
    refs: dict[str, list[str]] = {}
    for n, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) >= 2):
            raise ValueError(f"pairs[{n}] must be an (en, es) pair; got {pair!r}")
        refs.setdefault(pair[0], []).append(pair[1])
    return list(refs), list(refs.values())


def encode_pairs(tokenizer: BPETokenizer, pairs: Sequence[tuple[str, str]]) -> list[tuple[list, list]]:
    """(en, es) pairs → (source ids, target ids): source ``en <eos>``, target ``<bos> es <eos>``."""
    if isinstance(pairs, (str, bytes)):
        raise TypeError("pairs must be a list of (en, es) pairs, not a string")
    out = []
    for n, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) >= 2):
            raise ValueError(f"pairs[{n}] must be an (en, es) pair; got {pair!r}")
        out.append((tokenizer.encode(pair[0], add_eos=True),
                    tokenizer.encode(pair[1], add_bos=True, add_eos=True)))
    return out


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
    if len(examples) == 0:
        raise ValueError("examples is empty: nothing to batch")
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
    """Share of all positions (sources and targets) in ``batches`` that are padding."""
    pad = total = 0
    for src, tgt in batches:
        for x in (src, tgt):
            pad += int((x == pad_id).sum())
            total += x.numel()
    return pad / total


def translation_loss(label_smoothing: float = 0.1, pad_id: int = 0):
    """The training loss as ``(model, (src, tgt)) -> (loss, target tokens)``: teacher forcing
    with ``tgt[:, :-1]`` in and ``tgt[:, 1:]`` as the labels, label-smoothed cross-entropy over
    the real (non-pad) target tokens."""
    validate.number(label_smoothing, "label_smoothing", low=0.0, high=1.0, high_open=True)

    def loss_fn(model, batch):
        device = next(model.parameters()).device
        src, tgt = (x.to(device) for x in batch)
        src_mask = model.source_mask(src)  # through encode/decode: the GRU of chapter 9 works too
        logits = model.decode(tgt[:, :-1], model.encode(src, src_mask), src_mask)  # (batch, t-1, V)
        labels = tgt[:, 1:]  # (batch, t - 1): the next token at every position
        loss = sequence_loss(logits, labels, pad_id=pad_id, label_smoothing=label_smoothing)
        return loss, int((labels != pad_id).sum())

    return loss_fn


# ---------------------------------------------------------------- the translator


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class Translator:
    """A seq2seq model and its tokenizer: sentences in, sentences out.

    model: anything with the encode/decode interface of :class:`minformer.transformer.Transformer`
    (``Seq2SeqGRU`` too); tokenizer: the shared BPE tokenizer its ids come from.
    max_source_tokens: longest source (in tokens, <eos> included) it accepts.
    """

    def __init__(self, model, tokenizer: BPETokenizer, max_source_tokens: int = 128):
        if not isinstance(tokenizer, BPETokenizer):
            raise TypeError(f"tokenizer must be a BPETokenizer; got {type(tokenizer).__name__}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_source_tokens = validate.positive_int(max_source_tokens, "max_source_tokens")

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def encode_sources(self, sentences: Sequence[str]) -> list[list[int]]:
        """Source ids (``en <eos>``) of each sentence; an empty or over-long sentence is an error
        that names it."""
        sentences = validate.str_list(sentences, "sentences", what="sentences")
        ids = []
        for n, s in enumerate(sentences):
            if not s.strip():
                raise ValueError(f"sentence {n + 1} is empty: nothing to translate")
            x = self.tokenizer.encode(s, add_eos=True)
            if len(x) > self.max_source_tokens:
                raise ValueError(
                    f"sentence {n + 1} is too long: {len(x)} tokens, and this model takes at most "
                    f"{self.max_source_tokens} (about {self.max_source_tokens // 2} words); split it"
                )
            ids.append(x)
        return ids

    def search(self, src: torch.Tensor, beam_size: int = 1, length_penalty: float = 0.6,
               max_new_tokens: int | None = None) -> torch.Tensor:
        """Output ids (batch, t_out) for source ids ``src`` (batch, s), right-padded, on the
        model's device: greedy when ``beam_size`` is 1, else beam search with the GNMT length
        penalty α = ``length_penalty``. At most ``max_new_tokens`` tokens (default 2 · s + 10),
        and never more than the model's positions hold."""
        validate.positive_int(beam_size, "beam_size")
        tok = self.tokenizer
        limit = max_new_tokens or 2 * src.shape[1] + 10
        if hasattr(self.model, "config"):  # the output positions end at max_len - 1
            limit = min(limit, self.model.config.max_len - 1)
        if beam_size == 1:
            return greedy_search(self.model, src, limit, tok.bos_id, tok.eos_id, tok.pad_id)
        return beam_search(self.model, src, beam_size, limit, tok.bos_id, tok.eos_id,
                           length_penalty=length_penalty, pad_id=tok.pad_id)

    def translate(self, sentences: Sequence[str], beam_size: int = 1, length_penalty: float = 0.6,
                  batch_size: int = 100, max_new_tokens: int | None = None) -> list[str]:
        """Translate each sentence with :meth:`search` (greedy when ``beam_size`` is 1, else beam
        search). Sentences are decoded ``batch_size`` at a time, sorted by length so a batch
        holds little padding; the answers come back in input order.
        max_new_tokens: most output tokens (default: 2 × the longest source + 10)."""
        validate.positive_int(beam_size, "beam_size")
        validate.positive_int(batch_size, "batch_size")
        ids = self.encode_sources(sentences)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list[str] = [""] * len(ids)
        for start in range(0, len(order), batch_size):
            rows = order[start: start + batch_size]
            src = self.tokenizer.pad([ids[i] for i in rows])[0].to(self.device)  # (batch, s)
            ys = self.search(src, beam_size, length_penalty, max_new_tokens)  # (batch, t_out)
            for i, row in zip(rows, ys.tolist()):
                out[i] = self.detokenize(row)
        return out

    def detokenize(self, ids: Sequence[int]) -> str:
        """Ids up to the first <eos> (or pad), decoded to text."""
        tok = self.tokenizer
        cut = [t for t in _until(ids, {tok.eos_id, tok.pad_id})]
        return tok.decode(cut, skip_special=True).strip()

    def bleu(self, pairs: Sequence[tuple[str, str]], beam_size: int = 1, **kwargs):
        """Corpus BLEU on ``pairs``, each English sentence translated once and scored against all
        its references. Returns (BLEUScore, sources, hypotheses, references)."""
        sources, references = references_by_source(pairs)
        hypotheses = self.translate(sources, beam_size=beam_size, **kwargs)
        return corpus_bleu(hypotheses, references), sources, hypotheses, references

    # ------------------------------------------------------------ saving
    def save(self, folder, log: dict | None = None, dtype: torch.dtype = torch.float16) -> dict:
        """Write model.pt (the state dict, floats stored as ``dtype``), config.json,
        tokenizer.json and train_log.json into ``folder``; returns {file: sha256}."""
        if not isinstance(self.model, Transformer):
            raise TypeError("only a minformer Transformer can be saved as a translator checkpoint")
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        state, done = {}, {}  # tied weights (one embedding for source, target and output) share
        for k, v in self.model.state_dict().items():  # storage: convert once, so saved once
            key = (v.untyped_storage().data_ptr(), v.storage_offset(), tuple(v.shape))
            if key not in done:
                done[key] = (v.to(dtype) if v.is_floating_point() else v).cpu().clone()
            state[k] = done[key]
        torch.save(state, folder / "model.pt")
        config = dict(vars(self.model.config), max_source_tokens=self.max_source_tokens)
        (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        self.tokenizer.save(folder / "tokenizer.json")
        (folder / "train_log.json").write_text(json.dumps(log or {}, indent=1) + "\n",
                                               encoding="utf-8")
        return {name: _sha256(folder / name) for name in FILES}

    @classmethod
    def load(cls, folder=None, device=None, sha256: dict | None = None) -> Translator:
        """Load a checkpoint written by :meth:`save`, on CPU whatever device saved it (or on
        ``device``), in fp32 and eval mode.

        folder=None: the shipped one, ``data/checkpoints/en-es``, whose files are checked against
        ``data/manifest.json``; ``sha256`` ({file: digest}) checks another folder the same way.
        A missing file, or one whose sha256 differs, raises :class:`CheckpointError`.
        """
        if folder is None:
            folder = data_dir() / CHECKPOINT
            if sha256 is None:
                from .data import load_manifest

                files = load_manifest()["files"]
                sha256 = {n: files[f"{CHECKPOINT}/{n}"]["sha256"] for n in FILES
                          if f"{CHECKPOINT}/{n}" in files}
                if len(sha256) != len(FILES):
                    raise CheckpointError(f"data/manifest.json lists no checkpoint {CHECKPOINT}: "
                                          f"train one with `python -m minformer.translator train --full`")
        folder = Path(folder)
        for name in FILES:
            path = folder / name
            if not path.is_file():
                raise CheckpointError(
                    f"the translator checkpoint is missing {path}. Restore data/{CHECKPOINT} from "
                    f"the repository, or rebuild it with `python -m minformer.translator train --full`"
                )
            if sha256 is not None and _sha256(path) != sha256.get(name):
                raise CheckpointError(
                    f"{path} differs from the checkpoint that was shipped (sha256 "
                    f"{_sha256(path)[:12]}…, expected {str(sha256.get(name))[:12]}…): it was altered "
                    f"or damaged. Restore it with `git checkout -- {path}`"
                )
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        max_source_tokens = config.pop("max_source_tokens", 128)
        model = Transformer(TransformerConfig(**config))
        state = torch.load(folder / "model.pt", map_location="cpu", weights_only=True)
        model.load_state_dict({k: v.float() if v.is_floating_point() else v for k, v in state.items()})
        model.eval()
        if device is not None:
            model.to(device)
        return cls(model, BPETokenizer.load(folder / "tokenizer.json"), max_source_tokens)


def _until(ids, stop):
    for t in ids:
        if t in stop:
            return
        yield t


# ---------------------------------------------------------------- the recipe


def average_states(states: Sequence[dict]) -> dict:
    """Element-wise mean of state dicts with the same keys (checkpoint averaging)."""
    if not states:
        raise ValueError("average_states needs at least one state dict")
    return {k: (sum(s[k].float() for s in states) / len(states)).to(states[0][k].dtype)
            if states[0][k].is_floating_point() else states[0][k] for k in states[0]}


def train_translator(config, tokenizer: BPETokenizer, train_pairs, *,
                     valid_pairs=None, steps: int | None = None, max_seconds: float | None = None,
                     lr: float = 3e-3, warmup: int = 400, batch_size: int = 128,
                     label_smoothing: float = 0.1, weight_decay: float = 0.0,
                     autocast_dtype: torch.dtype | None = None, eval_every: int = 0,
                     eval_sentences: int = 500, average_last: int = 0, seed: int = 0,
                     device=None, progress: bool = True, desc: str = "translator"):
    """Train a translator; returns (Translator, History).

    config: a :class:`TransformerConfig` (a new :class:`Transformer` is built after seeding), or a
    model with the encode/decode interface (e.g. chapter 9's ``Seq2SeqGRU``), trained as it is.

    Adam(W) at peak ``lr`` with linear warmup over ``warmup`` steps then inverse-square-root decay,
    gradient clipping at 1, label smoothing, batches re-bucketed every epoch. With valid_pairs and
    eval_every, the greedy BLEU of the first ``eval_sentences`` English sentences of valid_pairs is
    recorded in history.evals (its time not counted as training time). average_last = k > 1:
    the returned weights are the mean of the last k evaluated snapshots (checkpoint averaging).
    """
    seed_everything(seed)
    device = pick_device(device) if device is None or isinstance(device, str) else device
    if isinstance(config, TransformerConfig):
        model = Transformer(config).to(device)
        max_source = config.max_len
    elif isinstance(config, torch.nn.Module):
        model, max_source = config.to(device), 1024
    else:
        raise TypeError(f"config must be a TransformerConfig or a model; got {type(config).__name__}")
    examples = encode_pairs(tokenizer, train_pairs)
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
    optimizer = opt_cls(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9, **extra)
    history = train(model, data, translation_loss(label_smoothing, tokenizer.pad_id), optimizer,
                    steps=steps, max_seconds=max_seconds, warmup=warmup, eval_fn=eval_fn,
                    eval_every=eval_every, autocast_dtype=autocast_dtype, progress=progress,
                    desc=desc)
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

FULL = dict(  # the recipe of data/checkpoints/en-es
    vocab_size=7000, d_model=256, n_heads=4, d_ff=1024, n_layers=3, dropout=0.1, max_len=128,
    norm_first=True, lr=2e-3, warmup=1000, batch_size=128, label_smoothing=0.1,
    weight_decay=0.0, minutes=80.0, eval_every=500, eval_sentences=200, average_last=4, seed=0,
)


def _history_log(history: History) -> dict:
    return {"steps": history.steps, "seconds": round(history.seconds, 1),
            "tokens": history.tokens, "tokens_per_second": round(history.tokens_per_second, 1),
            "valid_bleu": [(s, round(t, 1), round(b, 2)) for s, t, b in history.evals],
            "loss_every_100": [round(x, 4) for x in history.losses[::100]],
            "averaged": getattr(history, "averaged", None)}


def train_full(out=None, minutes: float | None = None, threads: int | None = None,
               progress: bool = True) -> dict:
    """Reproduce the shipped checkpoint: BPE on train + extra, the FULL recipe, bf16 autocast on
    CPU, then greedy and beam-4 BLEU on valid, test and holdout. Writes the checkpoint into
    ``out`` (default: data/checkpoints/en-es) and returns its log."""
    from .data import load_translation_pairs

    r = dict(FULL)
    if minutes is not None:
        r["minutes"] = minutes
    if threads is not None:
        torch.set_num_threads(threads)
    out = Path(out) if out is not None else data_dir() / CHECKPOINT
    t0 = time.perf_counter()
    pairs = load_translation_pairs("train") + load_translation_pairs("extra")
    valid = load_translation_pairs("valid")
    tokenizer = BPETokenizer.train([t for p in pairs for t in p], r["vocab_size"])
    config = TransformerConfig(vocab_size=tokenizer.vocab_size, d_model=r["d_model"],
                               n_heads=r["n_heads"], d_ff=r["d_ff"], n_layers=r["n_layers"],
                               dropout=r["dropout"], max_len=r["max_len"], norm_first=r["norm_first"],
                               pad_id=tokenizer.pad_id, bos_id=tokenizer.bos_id,
                               eos_id=tokenizer.eos_id)
    autocast = torch.bfloat16 if torch.device(pick_device()).type == "cpu" else None
    translator, history = train_translator(
        config, tokenizer, pairs, valid_pairs=valid, max_seconds=60 * r["minutes"], lr=r["lr"],
        warmup=r["warmup"], batch_size=r["batch_size"], label_smoothing=r["label_smoothing"],
        weight_decay=r["weight_decay"], autocast_dtype=autocast, eval_every=r["eval_every"],
        eval_sentences=r["eval_sentences"],
        average_last=r["average_last"], seed=r["seed"], progress=progress, desc="full translator")
    translator.model.cpu()
    log = {"recipe": r, "train_pairs": len(pairs), "torch": torch.__version__,
           "threads": torch.get_num_threads(), "autocast": str(autocast),
           "parameters": sum(p.numel() for p in translator.model.parameters()),
           "history": _history_log(history)}
    translator.save(out, log)  # score the fp16 weights that ship, reloaded
    translator = Translator.load(out, sha256=None)
    scores = {}
    for split in ("valid", "test", "holdout"):
        split_pairs = load_translation_pairs(split)
        for beam in (1, 4):
            scores[f"{split}_beam{beam}"] = round(translator.bleu(split_pairs, beam_size=beam)[0].score, 2)
            print(f"{split} beam {beam}: BLEU {scores[f'{split}_beam{beam}']}", flush=True)
    log["bleu"] = scores
    log["total_seconds"] = round(time.perf_counter() - t0, 1)
    translator.save(out, log)
    return log


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minformer.translator",
        description="Train the English→Spanish translator that ships in data/checkpoints/en-es.")
    parser.add_argument("command", choices=["train"])
    parser.add_argument("--full", action="store_true", help="the shipped recipe (required)")
    parser.add_argument("--out", type=Path, help="output folder (default: data/checkpoints/en-es)")
    parser.add_argument("--minutes", type=float, help=f"training time (default {FULL['minutes']})")
    parser.add_argument("--threads", type=int, help="CPU threads for torch")
    args = parser.parse_args(argv)
    if not args.full:
        parser.error("only the full recipe is available: add --full")
    log = train_full(args.out, args.minutes, args.threads)
    print(json.dumps(log["bleu"], indent=1))
    print(f"done in {log['total_seconds'] / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
