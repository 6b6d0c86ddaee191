"""A trained English→Spanish translator: a model and its tokenizer, sentences in, sentences out.

- :func:`references_by_source` groups pairs by English sentence: one source, all its Spanish
  translations as references (BLEU takes them all).
- :class:`Translator` holds a model and its tokenizer: ``translate`` sentences (greedy or beam),
  ``save`` and ``load`` a checkpoint (weights stored in fp16, loaded with
  ``torch.load(weights_only=True)`` and checked file by file).

The recipe that trains one is :mod:`minformer.train_translator`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import torch

from . import validate
from .data import float_state
from .decode import _alpha, beam_search, greedy_search
from .metrics import corpus_bleu
from .tokenizer import BPETokenizer
from .transformer import Transformer, TransformerConfig
from .utils import data_dir

CHECKPOINT = "checkpoints/en-es"  # inside the data folder
FILES = ("model.pt", "config.json", "tokenizer.json", "train_log.json")
SUMS = "SHA256SUMS"  # the folder's own checksums of FILES, written by save, checked by load
REPRODUCE = "python -m minformer.train_translator --full"


class CheckpointError(ValueError):
    """A checkpoint folder is missing a file, or a file differs from its recorded sha256."""


# ---------------------------------------------------------------- data


def references_by_source(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[list[str]]]:
    """Group (en, es) pairs by English sentence, in order of first appearance.

    Returns ``(sources, references)``: each English sentence once, and the list of all its
    Spanish translations (several when Tatoeba has several)."""
    if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
        raise TypeError(f"pairs must be a list of (en, es) pairs; got {type(pairs).__name__}")
    refs: dict[str, list[str]] = {}
    for n, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) >= 2):
            raise ValueError(f"pairs[{n}] must be an (en, es) pair; got {pair!r}")
        if not (isinstance(pair[0], str) and isinstance(pair[1], str)):
            raise TypeError(f"pairs[{n}] must hold two sentences (str); got {pair[:2]!r}")
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
        if not (isinstance(model, torch.nn.Module) and hasattr(model, "encode")
                and hasattr(model, "decode")):
            raise TypeError(f"model must be a torch module with encode and decode (a minformer "
                            f"Transformer or Seq2SeqGRU); got {type(model).__name__}")
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
               max_new_tokens: int | None = None, min_length_ratio: float = 0.0,
               min_length_slack: int = 0, no_loops: bool = False) -> torch.Tensor:
        """Output ids (batch, t_out) for source ids ``src`` (batch, s), right-padded, on the
        model's device: greedy when ``beam_size`` is 1, else beam search with the GNMT length
        penalty α = ``length_penalty``. At most ``max_new_tokens`` tokens (default 2 · s + 10),
        and never more than the model's positions hold. min_length_ratio = ρ, min_length_slack =
        b: no output may end before ⌊ρ · s⌋ - b tokens, s its source's tokens (ρ = 0, the
        default: no minimum; the shipped translator's command and page use
        :data:`minformer.translate.MIN_LENGTH_RATIO` and ``MIN_LENGTH_SLACK``)."""
        validate.positive_int(beam_size, "beam_size")
        _alpha(length_penalty, "length_penalty")
        if not isinstance(src, torch.Tensor) or src.ndim != 2:
            shape = tuple(src.shape) if isinstance(src, torch.Tensor) else type(src).__name__
            raise ValueError(f"src must be a (batch, s) tensor of source ids; got {shape} "
                             "(one sentence: src[None])")
        if max_new_tokens is not None:
            validate.positive_int(max_new_tokens, "max_new_tokens")
        tok = self.tokenizer
        limit = max_new_tokens if max_new_tokens is not None else 2 * src.shape[1] + 10
        if hasattr(self.model, "config"):  # the output positions end at max_len - 1
            limit = min(limit, self.model.config.max_len - 1)
        if beam_size == 1:
            return greedy_search(self.model, src, limit, tok.bos_id, tok.eos_id, tok.pad_id,
                                 min_length_ratio=min_length_ratio,
                                 min_length_slack=min_length_slack, no_loops=no_loops)
        return beam_search(self.model, src, beam_size, limit, tok.bos_id, tok.eos_id,
                           length_penalty=length_penalty, pad_id=tok.pad_id,
                           min_length_ratio=min_length_ratio, min_length_slack=min_length_slack,
                           no_loops=no_loops)

    def translate(self, sentences: Sequence[str], beam_size: int = 1, length_penalty: float = 0.6,
                  batch_size: int = 100, max_new_tokens: int | None = None,
                  min_length_ratio: float = 0.0, min_length_slack: int = 0,
                  no_loops: bool = False, split_clauses: bool = False) -> list[str]:
        """Translate each sentence with :meth:`search` (greedy when ``beam_size`` is 1, else beam
        search). Sentences are decoded ``batch_size`` at a time, sorted by length so a batch
        holds little padding; the answers come back in input order.
        max_new_tokens: most output tokens (default: 2 × the longest source + 10);
        min_length_ratio, min_length_slack: the length floor ⌊ρ · s⌋ - b (see :meth:`search`);
        no_loops: the loop guard (:func:`minformer.decode.loop_tokens`); split_clauses: translate
        a sentence clause by clause at its safe split points
        (:func:`minformer.long_sentences.split_clauses`). The last two are off by default; the
        shipped command and page turn them on."""
        validate.positive_int(beam_size, "beam_size")
        validate.positive_int(batch_size, "batch_size")
        return self.translate_ids(self.encode_sources(sentences), beam_size, length_penalty,
                                  batch_size, max_new_tokens, min_length_ratio, min_length_slack,
                                  no_loops, split_clauses)

    def translate_ids(self, ids: Sequence[Sequence[int]], beam_size: int = 1,
                      length_penalty: float = 0.6, batch_size: int = 100,
                      max_new_tokens: int | None = None,
                      min_length_ratio: float = 0.0, min_length_slack: int = 0,
                      no_loops: bool = False, split_clauses: bool = False) -> list[str]:
        """:meth:`translate` for sources already encoded by :meth:`encode_sources` (so a caller
        that checked them tokenizes each sentence once)."""
        outputs = self.output_ids(ids, beam_size, length_penalty, batch_size, max_new_tokens,
                                  min_length_ratio, min_length_slack, no_loops, split_clauses)
        return [self.detokenize(row) for row in outputs]

    def output_ids(self, ids: Sequence[Sequence[int]], beam_size: int = 1,
                   length_penalty: float = 0.6, batch_size: int = 100,
                   max_new_tokens: int | None = None, min_length_ratio: float = 0.0,
                   min_length_slack: int = 0, no_loops: bool = False,
                   split_clauses: bool = False) -> list[list[int]]:
        """The output ids of each source of ``ids`` (as :meth:`translate_ids` translates them), up
        to and with the first <eos> when there is one: what the page's engine returns as
        ``output.ids``. A sentence translated clause by clause (``split_clauses``, when
        :func:`~minformer.long_sentences.split_clauses` finds a split point) gives the ids of its
        joined translation, encoded, then <eos>."""
        validate.positive_int(beam_size, "beam_size")
        validate.positive_int(batch_size, "batch_size")
        if not isinstance(split_clauses, bool):
            raise TypeError(f"split_clauses must be True or False; got {split_clauses!r}")
        options = (beam_size, length_penalty, batch_size, max_new_tokens, min_length_ratio,
                   min_length_slack, no_loops)
        if not split_clauses:
            return self._search_ids(ids, *options)
        from .long_sentences import join_clauses
        from .long_sentences import split_clauses as clauses

        tok = self.tokenizer
        plans = [clauses(tok.decode(list(x)[:-1] if list(x)[-1:] == [tok.eos_id] else list(x),
                                    skip_special=True)) for x in ids]
        pieces = [tok.encode(text, add_eos=True) for plan in plans if len(plan) > 1
                  for text, _, _ in plan]
        whole = [i for i, plan in enumerate(plans) if len(plan) == 1]
        found = self._search_ids([ids[i] for i in whole] + pieces, *options)
        out: list[list[int]] = [[] for _ in ids]
        for i, row in zip(whole, found):
            out[i] = row
        at = len(whole)
        for i, plan in enumerate(plans):
            if len(plan) > 1:
                texts = [self.detokenize(row) for row in found[at: at + len(plan)]]
                at += len(plan)
                out[i] = tok.encode(join_clauses(plan, texts)) + [tok.eos_id]
        return out

    def _search_ids(self, ids, beam_size, length_penalty, batch_size, max_new_tokens,
                    min_length_ratio, min_length_slack, no_loops) -> list[list[int]]:
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: list[list[int]] = [[] for _ in ids]
        tok = self.tokenizer
        for start in range(0, len(order), batch_size):
            rows = order[start: start + batch_size]
            src = self.tokenizer.pad([ids[i] for i in rows])[0].to(self.device)  # (batch, s)
            ys = self.search(src, beam_size, length_penalty, max_new_tokens,
                             min_length_ratio, min_length_slack, no_loops)  # (batch, t_out)
            for i, row in zip(rows, ys.tolist()):
                out[i] = output_ids(row, tok.eos_id, tok.pad_id)
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
        tokenizer.json, train_log.json and SHA256SUMS (the folder's own checksums, which
        :meth:`load` checks) into ``folder``; returns {file: sha256} of the first four.

        Everything is written into a temporary folder beside ``folder`` and renamed into place
        at the end, so an error never leaves a half-written checkpoint (an old one there is
        replaced only once the new one is complete). An existing ``folder`` must be a folder
        holding only a checkpoint's files: a file, or a folder with anything else in it, is
        refused, since the whole folder is replaced."""
        if not isinstance(self.model, Transformer):
            raise TypeError("only a minformer Transformer can be saved as a translator checkpoint")
        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"folder {str(folder)!r} is a file, not a folder: a checkpoint is a "
                             "folder of files")
        if folder.is_dir():  # replace an old checkpoint, never a folder holding anything else
            others = sorted(p.name for p in folder.iterdir() if p.name not in (*FILES, SUMS))
            if others:
                raise ValueError(
                    f"folder {str(folder)!r} holds files that are not a checkpoint's "
                    f"({', '.join(others[:5])}{', ...' if len(others) > 5 else ''}): save "
                    "replaces the whole folder, so give it an empty or new one")
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.tmp-", dir=folder.parent))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it 0700; a checkpoint is an ordinary folder
        try:
            self._write(tmp, log, dtype)
            sums = {name: _sha256(tmp / name) for name in FILES}
            (tmp / SUMS).write_text("".join(f"{h}  {n}\n" for n, h in sums.items()), encoding="utf-8")
            old = None
            if folder.exists():
                old = folder.parent / f"{tmp.name}-old"
                folder.rename(old)
            tmp.rename(folder)
            if old is not None:
                shutil.rmtree(old)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return sums

    def _write(self, folder: Path, log: dict | None, dtype: torch.dtype) -> None:
        state, done = {}, {}  # tied weights (one embedding for source, target and output) share
        for k, v in self.model.state_dict().items():  # storage: convert once, so saved once
            key = (v.untyped_storage().data_ptr(), v.storage_offset(), tuple(v.shape))
            if key not in done:
                done[key] = (v.to(dtype) if v.is_floating_point() else v).cpu().clone()
            state[k] = done[key]
        torch.save(state, folder / "model.pt")
        config = {k: v for k, v in vars(self.model.config).items()  # options added later are
                  if k not in _ADDED_LATER or v != _ADDED_LATER[k]}  # written only when set
        config["max_source_tokens"] = self.max_source_tokens
        (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
        self.tokenizer.save(folder / "tokenizer.json")
        (folder / "train_log.json").write_text(json.dumps(log or {}, indent=1) + "\n",
                                               encoding="utf-8")

    @classmethod
    def load(cls, folder=None, device=None, sha256: dict | None = None,
             trust_unverified: bool = False) -> Translator:
        """Load a checkpoint written by :meth:`save`, on CPU whatever device saved it (or on
        ``device``), in fp32 and eval mode.

        folder=None: the shipped one, ``data/checkpoints/en-es``, whose files are checked against
        ``data/manifest.json``; ``sha256`` ({file: digest}) checks another folder the same way.
        Any folder is also checked against its own SHA256SUMS, which must list every file, and
        its contents against each other.

        A folder with neither ``sha256`` nor a SHA256SUMS file is refused: a flipped weight or an
        edited config.json (``n_heads``, ``activation``) loads as a plausible model that
        translates worse, and nothing else would tell. ``trust_unverified=True`` (the command
        line's ``--trust-unverified``) loads it anyway. SHA256SUMS catches damage and edits made
        without it, not a deliberate edit that also rewrites it: only ``sha256`` from elsewhere
        (the manifest) does. :class:`CheckpointError`, naming the file and the mismatch, for: a
        missing file; a sha256 that differs; a config.json with an unknown or missing key, a
        value of the wrong type or one TransformerConfig refuses; weights that are not finite,
        are missing, unexpected, or of another shape than the config gives; a tokenizer whose
        vocabulary or special ids differ from the config's.
        """
        if not isinstance(trust_unverified, bool):
            raise TypeError(f"trust_unverified must be True or False; got {trust_unverified!r}")
        if folder is None:
            folder = data_dir() / CHECKPOINT
            if sha256 is None:
                from .data import load_manifest

                files = load_manifest()["files"]
                sha256 = {n: files[f"{CHECKPOINT}/{n}"]["sha256"] for n in FILES
                          if f"{CHECKPOINT}/{n}" in files}
                if len(sha256) != len(FILES):
                    raise CheckpointError(f"data/manifest.json lists no checkpoint {CHECKPOINT}: "
                                          f"train one with `{REPRODUCE}`")
        folder = Path(folder)
        for name in FILES:
            path = folder / name
            if not path.is_file():
                raise CheckpointError(
                    f"the translator checkpoint is missing {path}. Restore data/{CHECKPOINT} from "
                    f"the repository, or rebuild it with `{REPRODUCE}`"
                )
            if sha256 is not None and _sha256(path) != sha256.get(name):
                raise CheckpointError(
                    f"{path} differs from the checkpoint that was shipped (sha256 "
                    f"{_sha256(path)[:12]}…, expected {str(sha256.get(name))[:12]}…): it was altered "
                    f"or damaged. Restore it with `git checkout -- {path}`"
                )
        _check_own_sums(folder, required=sha256 is None and not trust_unverified)
        config, max_source_tokens = _read_config(folder / "config.json")
        model = Transformer(config)
        model.load_state_dict(_read_state(folder / "model.pt", model))
        model.eval()
        tokenizer = _read_tokenizer(folder / "tokenizer.json", config)
        if device is not None:
            model.to(device)
        return cls(model, tokenizer, max_source_tokens)


# ---------------------------------------------------------------- checkpoint checks


def _check_own_sums(folder: Path, required: bool = True) -> None:
    """Check the files against the folder's own SHA256SUMS, which must list each of FILES once.
    A folder without one is refused when ``required``, else let through unchecked."""
    path = folder / SUMS
    if not path.is_file():
        if required:
            raise CheckpointError(
                f"{folder} has no {SUMS} file, so nothing shows that its files are the ones that "
                f"were saved (an edited weight or config.json loads as a plausible model). Save "
                f"it again with Translator.save, or, if you trust it, load it with "
                f"trust_unverified=True (the command line's --trust-unverified)")
        return
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise CheckpointError(f"{path} is not UTF-8 text") from None
    listed = []
    for number, line in enumerate(lines, 1):
        digest, _, name = line.partition("  ")
        if not re.fullmatch(r"[0-9a-f]{64}", digest) or name not in FILES or name in listed:
            raise CheckpointError(f"{path} line {number} is not '<sha256>  <one of "
                                  f"{', '.join(FILES)}>', each once: {line[:80]!r}")
        listed.append(name)
    unlisted = [name for name in FILES if name not in listed]
    if unlisted:
        raise CheckpointError(f"{path} does not list {', '.join(unlisted)}: every file of the "
                              f"checkpoint must have its checksum")
    for line in lines:
        digest, _, name = line.partition("  ")
        found = _sha256(folder / name)
        if found != digest:
            raise CheckpointError(f"{folder / name} disagrees with the folder's own checksum file "
                                  f"{path}: sha256 {found[:12]}…, listed {digest[:12]}…. The file "
                                  f"was edited or damaged after the checkpoint was saved")


def _annotation(t) -> str:
    """int -> "int", int | None -> "int | None" (whether or not annotations are strings)."""
    return t if isinstance(t, str) else str(t).replace("NoneType", "None") if "|" in str(t) else t.__name__


_CONFIG_TYPES = {f.name: _annotation(f.type) for f in dataclasses.fields(TransformerConfig)}
# TransformerConfig fields added after checkpoints were first shipped, with their defaults: a
# config.json without one means the default (so older checkpoints load unchanged), and save
# writes one only when it differs from the default (so their config.json stays byte-identical).
_ADDED_LATER = {"n_kv_heads": None}


def _type_ok(value, annotation: str) -> bool:
    kinds = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
             "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
             "bool": lambda v: isinstance(v, bool), "str": lambda v: isinstance(v, str),
             "None": lambda v: v is None}
    return any(kinds[part.strip()](value) for part in str(annotation).split("|"))


def _read_config(path: Path) -> tuple[TransformerConfig, int]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(raw, dict):
        raise CheckpointError(f"{path} must hold a JSON object; got {type(raw).__name__}")
    raw = {**{k: v for k, v in _ADDED_LATER.items() if k not in raw}, **raw}
    expected = set(_CONFIG_TYPES) | {"max_source_tokens"}
    unknown, missing = sorted(set(raw) - expected), sorted(expected - set(raw))
    if unknown or missing:
        raise CheckpointError(f"{path}: " + "; ".join(
            ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])
            + ([f"missing key(s) {', '.join(missing)}"] if missing else [])))
    for key, annotation in {**_CONFIG_TYPES, "max_source_tokens": "int"}.items():
        if not _type_ok(raw[key], annotation):
            raise CheckpointError(f"{path}: {key} must be {annotation}; got {raw[key]!r} "
                                  f"({type(raw[key]).__name__})")
    max_source_tokens = raw.pop("max_source_tokens")
    try:
        config = TransformerConfig(**raw)
    except (TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: {e}") from None
    if max_source_tokens < 1 or max_source_tokens > config.max_len:
        raise CheckpointError(f"{path}: max_source_tokens={max_source_tokens} must lie in 1.."
                              f"max_len={config.max_len}")
    return config, max_source_tokens


def _read_state(path: Path, model: torch.nn.Module) -> dict:
    """model.pt as a float32 state dict that fits ``model``, loaded with weights_only=True."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # a pickle with code, a damaged or truncated file, not a zip
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if "weights_only" in first or "Weights only load failed" in first:
            first = "it holds something other than tensors (refused: no pickled code is run)"
        raise CheckpointError(f"{path} cannot be read as a checkpoint: {first[:200]}") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path} must hold a state dict of tensors; got {type(state).__name__}")
    want = model.state_dict()
    unknown, missing = sorted(set(state) - set(want)), sorted(set(want) - set(state))
    if unknown or missing:
        raise CheckpointError(f"{path} does not fit config.json: " + "; ".join(
            ([f"unexpected tensor(s) {', '.join(unknown[:4])}"] if unknown else [])
            + ([f"missing tensor(s) {', '.join(missing[:4])}"] if missing else [])))
    for key, tensor in state.items():
        if tuple(tensor.shape) != tuple(want[key].shape):
            raise CheckpointError(f"{path}: tensor {key} has shape {tuple(tensor.shape)}, but "
                                  f"config.json gives {tuple(want[key].shape)}")
        if tensor.is_floating_point():
            bad = int((~torch.isfinite(tensor)).sum())
            if bad:
                raise CheckpointError(f"{path}: tensor {key} holds {bad} non-finite value(s) "
                                      f"(NaN or inf): the file is damaged")
    return float_state(state)


def _read_tokenizer(path: Path, config: TransformerConfig) -> BPETokenizer:
    try:
        tokenizer = BPETokenizer.load(path)
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise CheckpointError(f"{path} cannot be read as a tokenizer: {e}") from None
    if tokenizer.vocab_size != config.vocab_size:
        raise CheckpointError(f"{path} has {tokenizer.vocab_size:,} tokens, but config.json's "
                              f"model has vocab_size={config.vocab_size:,}: they must be the "
                              f"tokenizer and model that were trained together")
    for name in ("pad_id", "bos_id", "eos_id"):
        if getattr(tokenizer, name) != getattr(config, name):
            raise CheckpointError(f"{path}: tokenizer {name}={getattr(tokenizer, name)}, but "
                                  f"config.json has {name}={getattr(config, name)}")
    return tokenizer


def output_ids(row: Sequence[int], eos_id: int, pad_id: int) -> list[int]:
    """A searched output row's ids: up to and including its first <eos>, or up to its first
    padding (left out) when it has no <eos>."""
    cut = []
    for t in row:
        if t == pad_id:
            break
        cut.append(t)
        if t == eos_id:
            break
    return cut


def _until(ids, stop):
    for t in ids:
        if t in stop:
            return
        yield t
