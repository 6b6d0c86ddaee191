"""A trained English→Spanish translator: a model and its tokenizer, sentences in, sentences out.

- :func:`references_by_source` groups pairs by English sentence: one source, all its Spanish
  translations as references (BLEU takes them all).
- :class:`Translator` holds a model and its tokenizer: ``translate`` sentences (greedy or beam),
  ``save`` and ``load`` a checkpoint (weights stored in fp16, loaded with
  ``torch.load(weights_only=True)`` and checked file by file).

The recipe that trains one is :mod:`minformer.train_translator`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import torch

from . import validate
from .decode import beam_search, greedy_search
from .metrics import corpus_bleu
from .tokenizer import BPETokenizer
from .transformer import Transformer, TransformerConfig
from .utils import data_dir

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
        if max_new_tokens is not None:
            validate.positive_int(max_new_tokens, "max_new_tokens")
        tok = self.tokenizer
        limit = max_new_tokens if max_new_tokens is not None else 2 * src.shape[1] + 10
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
        return self.translate_ids(self.encode_sources(sentences), beam_size, length_penalty,
                                  batch_size, max_new_tokens)

    def translate_ids(self, ids: Sequence[Sequence[int]], beam_size: int = 1,
                      length_penalty: float = 0.6, batch_size: int = 100,
                      max_new_tokens: int | None = None) -> list[str]:
        """:meth:`translate` for sources already encoded by :meth:`encode_sources` (so a caller
        that checked them tokenizes each sentence once)."""
        validate.positive_int(beam_size, "beam_size")
        validate.positive_int(batch_size, "batch_size")
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
                                          f"train one with `python -m minformer.train_translator --full`")
        folder = Path(folder)
        for name in FILES:
            path = folder / name
            if not path.is_file():
                raise CheckpointError(
                    f"the translator checkpoint is missing {path}. Restore data/{CHECKPOINT} from "
                    f"the repository, or rebuild it with `python -m minformer.train_translator --full`"
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
