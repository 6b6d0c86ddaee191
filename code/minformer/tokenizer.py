"""Byte-pair encoding (BPE), trained from scratch on raw text.

The idea (Sennrich et al., 2016; byte-level as in GPT-2, Radford et al., 2019):

1. **Base alphabet = the 256 byte values.** Text is UTF-8 encoded, so *every* string is a
   sequence of known symbols: there are no out-of-vocabulary characters, and
   ``decode(encode(s)) == s`` for any string ``s`` (emoji, accents, scripts never seen in
   training, runs of spaces, newlines). The ``<unk>`` id is reserved but never produced.
2. **Pre-tokenization.** A regular expression cuts text into chunks: words with their leading
   space (``" picked"``), runs of digits, runs of punctuation, runs of whitespace
   (:data:`PATTERN`, GPT-2's pattern written for Python's ``re``). Merges never cross a chunk
   boundary, so a token never glues a word to the punctuation after it.
3. **Training.** Count every adjacent pair of symbols inside the chunks, weighted by how often
   each chunk occurs; replace the most frequent pair everywhere by a new symbol; repeat until the
   vocabulary has ``vocab_size`` entries (or no pair occurs ``min_frequency`` times).
4. **Encoding** applies the learned merges to each chunk in the order they were learned.

Token ids::

    0 .. k-1            the k special tokens, in the order given (default <pad>, <bos>, <eos>, <unk>)
    k .. k+255          the bytes 0x00 .. 0xFF
    k+256 ..            one id per merge, in the order learned

Token strings (``id_to_token``, ``merges``, ``tokenize``) are readable: a token's bytes decoded
as UTF-8, with a byte that is not part of a whole character shown as ``<0xC3>``. (GPT-2 and the
``tokenizers`` library instead map every byte to a printable stand-in, so a space shows as
``Ġ``.) A pre-tokenized chunk never mixes punctuation, digits and letters, so a learned token's
text can never read like ``<0xC3>`` and the strings are unambiguous.

Special tokens
    ``encode(text)`` treats ``"<eos>"`` inside ``text`` as plain text (five bytes: ``<``, ``eos``,
    ``>``) by default, so text from a user can never forge a control token and the round trip
    still holds. Pass ``allowed_special=True`` (all of them) or a set of strings to map those
    occurrences to their single id; they are cut out before pre-tokenization, so they are never
    split nor merged with their neighbours. Training cuts special-token strings out of the
    training texts and learns no merge from them.

Training speed
    Chunks are counted once (a word-frequency table). Each merge only revisits the chunks that
    contain the merged pair (an index pair → chunks) and updates the pair counts by difference;
    the most frequent pair comes from a heap with lazy deletion (stale entries are skipped when
    popped). Ties between equally frequent pairs go to the smaller pair of ids ``(left, right)``,
    so byte-level ties go to the smaller byte values and the result is deterministic and does
    not depend on the order of the training texts.

Differences from ``tokenizers`` (HuggingFace) ByteLevel BPE, measured in tests/test_tokenizer.py
    - Pre-tokenization: the same GPT-2 pattern, but written with ``re`` classes (``[^\\W\\d_]`` for
      letters, ``\\d`` for digits) rather than Unicode properties ``\\p{L}``, ``\\p{N}``: a few rare
      characters (superscript digits, Roman numerals) fall in other classes. ``tokenizers``
      also runs its regex over the printable byte stand-ins; for ordinary text the chunks agree.
    - Ties: ``tokenizers`` also breaks ties by the smaller pair of ids, but its ids follow the
      alphabetical order of the printable stand-ins (space = ``Ġ`` = U+0120 sorts after letters),
      so equally frequent pairs can be merged in a different order.
    - ``min_frequency``: ``tokenizers`` defaults to 0 (it merges pairs seen once); ours defaults
      to 2 and stops early when no pair repeats.
    Measured on the en–es translation corpus: the same tokens per held-out sentence (7.311 at an
    8,000-token vocabulary), and at 1,000 tokens the very same vocabulary learned in a different
    order (tests/test_tokenizer.py, benchmarks/bpe.py).

Wrong types (a str where a list of texts is expected, bytes to ``encode``) raise TypeError;
wrong values (a vocabulary too small, unknown ids, a lone surrogate) raise ValueError.
"""

from __future__ import annotations

import codecs
import heapq
import json
import numbers
import re
from collections import Counter
from collections.abc import Callable, Iterable
from itertools import pairwise
from pathlib import Path
from typing import NamedTuple

DEFAULT_SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")

# GPT-2's pre-tokenization pattern (contractions | letters | digits | punctuation | whitespace)
# with Python `re` classes: [^\W\d_] = letters, \d = digits, [^\s\w]|_ = punctuation.
# `\s+(?!\S)` leaves the last space of a run to the word that follows it.
PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+"""
_PAT = re.compile(PATTERN)
_FORMAT = "minformer-bpe"
_VERSION = 1
_CACHE_LIMIT = 200_000


def _hex_bytes(err: UnicodeDecodeError):
    """Codec error handler: show each byte that is not part of a whole character as <0xNN>."""
    bad = err.object[err.start : err.end]
    return "".join(f"<0x{b:02X}>" for b in bad), err.end


codecs.register_error("minformer.hex", _hex_bytes)


def readable(token: bytes) -> str:
    """A token's bytes as text: UTF-8 where it decodes, ``<0xNN>`` for a stray byte."""
    return token.decode("utf-8", errors="minformer.hex")


def pretokenize(text: str) -> list[str]:
    """Cut ``text`` into the chunks BPE works inside (:data:`PATTERN`); ``"".join`` gives it back.

    >>> pretokenize("Peter Piper's  2 pecks!")
    ['Peter', ' Piper', "'s", ' ', ' 2', ' pecks', '!']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _PAT.findall(text)


class MergeStep(NamedTuple):
    """One training step, as passed to ``train(..., callback=...)``."""

    rank: int  # 0 for the first merge learned
    pair: tuple[str, str]  # the two tokens merged (readable strings)
    token: str  # the new token (readable)
    id: int  # its id
    count: int  # how often the pair occurred in the training chunks when merged


class BPETokenizer:
    """A byte-level BPE tokenizer: ``train`` it, then ``encode``/``decode``.

    >>> tok = BPETokenizer.train(["Peter Piper picked a peck of pickled peppers"], 263)
    >>> tok.merges
    [(' ', 'p'), ('c', 'k'), ('e', 'r')]
    >>> tok.decode(tok.encode("a peck")) == "a peck"
    True

    ``BPETokenizer(merges, special_tokens)`` rebuilds a tokenizer from merges given as pairs of
    token strings, in order; ``BPETokenizer(tok.merges[:k])`` is ``tok`` after its first ``k``
    merges.
    """

    def __init__(
        self,
        merges: Iterable[tuple[str, str]] = (),
        special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS,
    ):
        self.special_tokens = _check_special_tokens(special_tokens)
        k = len(self.special_tokens)
        self._special_to_id = {s: i for i, s in enumerate(self.special_tokens)}
        self._vocab: list[bytes] = [s.encode("utf-8") for s in self.special_tokens]
        self._vocab += [bytes([b]) for b in range(256)]
        self._bytes_to_id = {bytes([b]): k + b for b in range(256)}
        self._str_to_id = {readable(bytes([b])): k + b for b in range(256)}
        self._str_to_id.update(self._special_to_id)
        self._merges: list[tuple[int, int, int]] = []  # (left id, right id, new id), in order
        for n, pair in enumerate(merges):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise ValueError(f"merge {n} must be a pair of token strings, got {pair!r}")
            ids = []
            for part in pair:
                if part not in self._str_to_id or part in self._special_to_id:
                    raise ValueError(
                        f"merge {n} {tuple(pair)!r}: {part!r} is not a token learned before it"
                    )
                ids.append(self._str_to_id[part])
            self._add_merge(ids[0], ids[1])
        self._ranks = _ranks(self._merges)
        self._cache: dict[str, list[int]] = {}
        self._special_res: dict[frozenset, re.Pattern] = {}

    # ------------------------------------------------------------------ vocabulary
    def _add_merge(self, a: int, b: int) -> int:
        """Record merge (a, b); return the id of the merged token (new, or existing if the same
        bytes were already built by another path, as ``tokenizers`` does)."""
        token = self._vocab[a] + self._vocab[b]
        new = self._bytes_to_id.get(token)
        if new is None:
            new = len(self._vocab)
            self._vocab.append(token)
            self._bytes_to_id[token] = new
            self._str_to_id.setdefault(readable(token), new)
        self._merges.append((a, b, new))
        return new

    @property
    def vocab_size(self) -> int:
        """Number of ids: special tokens + 256 bytes + merged tokens."""
        return len(self._vocab)

    def __len__(self) -> int:
        return len(self._vocab)

    def __repr__(self) -> str:
        return (
            f"BPETokenizer(vocab_size={self.vocab_size}, merges={len(self._merges)}, "
            f"special_tokens={list(self.special_tokens)})"
        )

    @property
    def pad_id(self) -> int:
        return self._special_id("<pad>")

    @property
    def bos_id(self) -> int:
        return self._special_id("<bos>")

    @property
    def eos_id(self) -> int:
        return self._special_id("<eos>")

    @property
    def unk_id(self) -> int:
        return self._special_id("<unk>")

    def _special_id(self, s: str) -> int:
        if s not in self._special_to_id:
            raise AttributeError(
                f"this tokenizer has no {s} token; its special tokens are "
                f"{list(self.special_tokens)}"
            )
        return self._special_to_id[s]

    @property
    def merges(self) -> list[tuple[str, str]]:
        """The learned merges in order, as pairs of readable token strings."""
        return [(self.id_to_token(a), self.id_to_token(b)) for a, b, _ in self._merges]

    def id_to_token(self, i: int) -> str:
        """The readable string of token ``i`` (a special token's own text for a special id)."""
        self._check_ids([i])
        if i < len(self.special_tokens):
            return self.special_tokens[i]
        return readable(self._vocab[i])

    def token_to_id(self, token: str) -> int:
        """The id of a token given by its readable string (inverse of :meth:`id_to_token`)."""
        if not isinstance(token, str):
            raise TypeError(f"token must be a str; got {type(token).__name__}")
        if token not in self._str_to_id:
            raise ValueError(f"{token!r} is not a token of this vocabulary")
        return self._str_to_id[token]

    def token_bytes(self, i: int) -> bytes:
        """The raw bytes of token ``i``."""
        self._check_ids([i])
        return self._vocab[i]

    # ------------------------------------------------------------------ training
    @classmethod
    def train(
        cls,
        texts: Iterable[str],
        vocab_size: int,
        special_tokens: Iterable[str] = DEFAULT_SPECIAL_TOKENS,
        min_frequency: int = 2,
        callback: Callable[[MergeStep], None] | None = None,
    ) -> BPETokenizer:
        """Learn merges from ``texts`` until the vocabulary has ``vocab_size`` tokens.

        texts: a list (or any iterable) of strings. vocab_size counts special tokens and the 256
        bytes, so it must be at least ``len(special_tokens) + 256``. Training stops early when no
        pair occurs ``min_frequency`` times. ``callback(step)`` is called after each merge with a
        :class:`MergeStep`. Deterministic: the same texts in any order give the same merges.
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be a list of strings, not a single string")
        specials = _check_special_tokens(special_tokens)
        smallest = len(specials) + 256
        if not isinstance(vocab_size, int) or isinstance(vocab_size, bool):
            raise TypeError(f"vocab_size must be an int, got {vocab_size!r}")
        if vocab_size < smallest:
            raise ValueError(
                f"vocab_size={vocab_size} is too small: it must be at least 256 bytes + "
                f"{len(specials)} special tokens = {smallest}"
            )
        if isinstance(min_frequency, bool) or not isinstance(min_frequency, int):
            raise TypeError(f"min_frequency must be an int, got {min_frequency!r}")
        if min_frequency < 1:
            raise ValueError(f"min_frequency must be an int >= 1, got {min_frequency!r}")

        tok = cls((), specials)
        k = len(specials)
        # 1. Word-frequency table of pre-tokenized chunks, special-token strings cut out.
        cut = _special_regex(specials)
        chunk_counts: Counter[str] = Counter()
        for n, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"texts[{n}] must be a str, got {type(text).__name__}")
            # split() returns [text, special, text, special, ...]: keep the text pieces
            for piece in cut.split(text)[::2] if specials else (text,):
                chunk_counts.update(_PAT.findall(piece))
        words = [[k + b for b in c.encode("utf-8", errors="strict")] for c in chunk_counts]
        freqs = list(chunk_counts.values())

        # 2. Pair counts, and for each pair the chunks it occurs in.
        counts: dict[tuple[int, int], int] = {}
        where: dict[tuple[int, int], set[int]] = {}
        for w, (word, f) in enumerate(zip(words, freqs)):
            for p in pairwise(word):
                counts[p] = counts.get(p, 0) + f
                where.setdefault(p, set()).add(w)
        heap = [(-c, p) for p, c in counts.items()]
        heapq.heapify(heap)

        # 3. Merge the most frequent pair until the vocabulary is full.
        while tok.vocab_size < vocab_size and heap:
            neg, pair = heapq.heappop(heap)
            if counts.get(pair, 0) != -neg:
                continue  # stale heap entry: the count changed after it was pushed
            if -neg < min_frequency:
                break
            a, b = pair
            new = tok._add_merge(a, b)
            before: dict[tuple[int, int], int] = {}  # counts of touched pairs before this merge
            for w in where.pop(pair):
                word = words[w]
                merged = _merge(word, a, b, new)
                if len(merged) == len(word):
                    continue  # stale index entry: the pair was merged away earlier
                f = freqs[w]
                for p in pairwise(word):
                    if p not in before:
                        before[p] = counts[p]
                    counts[p] -= f
                for p in pairwise(merged):
                    if p not in before:
                        before[p] = counts.get(p, 0)
                    counts[p] = counts.get(p, 0) + f
                    where.setdefault(p, set()).add(w)
                words[w] = merged
            for p, old in before.items():
                c = counts[p]
                if c <= 0:
                    del counts[p]
                    where.pop(p, None)
                elif c != old:
                    heapq.heappush(heap, (-c, p))
            if callback is not None:
                rank = len(tok._merges) - 1
                callback(
                    MergeStep(
                        rank,
                        (tok.id_to_token(a), tok.id_to_token(b)),
                        tok.id_to_token(new),
                        new,
                        -neg,
                    )
                )
        tok._ranks = _ranks(tok._merges)
        return tok

    # ------------------------------------------------------------------ encoding
    def _encode_chunk(self, chunk: str) -> list[int]:
        ids = self._cache.get(chunk)
        if ids is not None:
            return ids
        try:
            raw = chunk.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(
                f"text contains a lone surrogate {chunk[e.start]!r} (not valid Unicode); "
                "it has no UTF-8 bytes to encode"
            ) from None
        k = len(self.special_tokens)
        ids = [k + b for b in raw]
        ranks = self._ranks
        while len(ids) > 1:
            # the pair learned earliest among the adjacent pairs is merged first
            best = min(pairwise(ids), key=lambda p: ranks.get(p, (1 << 62, 0))[0])
            if best not in ranks:
                break
            ids = _merge(ids, best[0], best[1], ranks[best][1])
        if len(self._cache) >= _CACHE_LIMIT:
            self._cache.clear()
        self._cache[chunk] = ids
        return ids

    def encode(
        self,
        text: str,
        add_bos: bool = False,
        add_eos: bool = False,
        allowed_special: bool | str | Iterable[str] = False,
    ) -> list[int]:
        """Token ids of ``text`` (a str); ``decode`` gives the text back exactly.

        add_bos / add_eos: put ``bos_id`` first / ``eos_id`` last.
        allowed_special: which special-token strings in ``text`` become their single id:
        ``False`` (default: none, they are encoded as plain text), ``True`` or ``"all"`` (all),
        or a collection of special-token strings.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids = [self.bos_id] if add_bos else []
        allowed = self._allowed(allowed_special)
        pieces = self._special_re(allowed).split(text) if allowed else (text,)
        for n, piece in enumerate(pieces):
            if n % 2:  # odd pieces are the special tokens matched by the split
                ids.append(self._special_to_id[piece])
                continue
            for chunk in _PAT.findall(piece):
                ids.extend(self._encode_chunk(chunk))
        if add_eos:
            ids.append(self.eos_id)
        return ids

    def tokenize(self, text: str, allowed_special: bool | str | Iterable[str] = False) -> list[str]:
        """``text`` cut into its tokens, as readable strings (for showing a segmentation)."""
        return [self.id_to_token(i) for i in self.encode(text, allowed_special=allowed_special)]

    def encode_batch(
        self,
        texts: Iterable[str],
        add_bos: bool = False,
        add_eos: bool = False,
        allowed_special: bool | str | Iterable[str] = False,
        padded: bool = False,
    ):
        """Encode each text. ``padded=False``: a list of id lists.

        ``padded=True``: ``(ids, lengths)``, ids a LongTensor ``(batch, t_max)`` filled after each
        sequence with ``pad_id``, lengths a LongTensor ``(batch,)`` (see :meth:`pad`).
        """
        if isinstance(texts, (str, bytes)):
            raise TypeError("texts must be a list of strings, not a single string")
        seqs = [self.encode(t, add_bos, add_eos, allowed_special) for t in texts]
        return self.pad(seqs) if padded else seqs

    def pad(self, seqs: list[list[int]]):
        """Stack id lists into ``(ids, lengths)`` right-padded with this tokenizer's ``pad_id``
        (:func:`pad_sequences`). ``ids != pad_id`` is the padding mask only if no sequence
        contains ``<pad>`` itself; use ``lengths`` to be sure. Every id must be an int of this
        vocabulary, in [0, vocab_size): TypeError for a float or a bool, ValueError naming the
        sequence and position of one outside it."""
        return pad_sequences(seqs, self.pad_id, vocab_size=self.vocab_size)

    def _allowed(self, allowed_special) -> frozenset:
        if allowed_special is False or allowed_special is None:
            return frozenset()
        if allowed_special is True or allowed_special == "all":
            return frozenset(self.special_tokens)
        if isinstance(allowed_special, str):
            raise TypeError(
                f"allowed_special must be True, False, 'all' or a set of special tokens, got "
                f"{allowed_special!r} (wrap one token in a set: {{{allowed_special!r}}})"
            )
        allowed = frozenset(allowed_special)
        unknown = sorted(allowed - set(self.special_tokens))
        if unknown:
            raise ValueError(
                f"allowed_special names {unknown}, which are not special tokens of "
                f"this tokenizer: {list(self.special_tokens)}"
            )
        return allowed

    def _special_re(self, allowed: frozenset) -> re.Pattern:
        if allowed not in self._special_res:
            self._special_res[allowed] = _special_regex(tuple(allowed))
        return self._special_res[allowed]

    # ------------------------------------------------------------------ decoding
    def _check_ids(self, ids: list) -> None:
        n = len(self._vocab)
        wrong = [i for i in ids if isinstance(i, bool) or not isinstance(i, numbers.Integral)]
        if wrong:
            raise TypeError(f"token ids must be ints; got {wrong[:5]!r} "
                            f"({type(wrong[0]).__name__})")
        bad = [int(i) for i in ids if not 0 <= i < n]
        if bad:
            more = f" and {len(bad) - 10} more" if len(bad) > 10 else ""
            raise ValueError(
                f"unknown token ids {bad[:10]}{more}: ids must be ints in "
                f"[0, {n}) for this vocabulary of {n} tokens"
            )

    def decode(self, ids, skip_special: bool = False, errors: str = "replace") -> str:
        """The text of a sequence of ids (a list, or a 1-D tensor/array).

        skip_special: drop special tokens (``<pad>``, ``<bos>``, ...) instead of writing their text.
        errors: what to do with bytes that do not form whole UTF-8 characters (possible when the
        ids did not come from :meth:`encode`, e.g. a model's output): ``"replace"`` writes U+FFFD,
        ``"strict"`` raises.
        """
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        ids = list(ids)
        if ids and isinstance(ids[0], list):
            raise ValueError("decode takes one sequence of ids; use a loop for a batch")
        self._check_ids(ids)
        k = len(self.special_tokens)
        vocab = self._vocab
        if skip_special:
            data = b"".join(vocab[i] for i in ids if i >= k)
        else:
            data = b"".join(vocab[i] for i in ids)
        return data.decode("utf-8", errors=errors)

    # ------------------------------------------------------------------ saving
    def save(self, path) -> None:
        """Write the tokenizer as JSON: special tokens, merges (in order) and the vocabulary."""
        state = {
            "format": _FORMAT,
            "version": _VERSION,
            "pattern": PATTERN,
            "special_tokens": list(self.special_tokens),
            "merges": [list(m) for m in self.merges],
            "vocab": [self.id_to_token(i) for i in range(self.vocab_size)],
        }
        Path(path).write_text(json.dumps(state, ensure_ascii=False, indent=0), encoding="utf-8")

    @classmethod
    def load(cls, path) -> BPETokenizer:
        """Read a tokenizer written by :meth:`save`, checking that it is consistent."""
        if not isinstance(path, (str, Path)):
            raise TypeError(f"path must be a str or a Path; got {type(path).__name__}")
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"no tokenizer file at {path}")
        return cls.from_json(path.read_bytes(), path)

    @classmethod
    def from_json(cls, text: str | bytes, source="tokenizer") -> BPETokenizer:
        """A tokenizer from what :meth:`save` writes (JSON text or its UTF-8 bytes, read from a
        file that was checked elsewhere, say), checking that it is consistent. ``source`` names
        it in the errors."""
        try:
            state = json.loads(text.decode("utf-8") if isinstance(text, bytes) else text)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{source} is not a readable tokenizer file (truncated or not "
                             f"JSON?): {e}") from None
        if not isinstance(state, dict) or state.get("format") != _FORMAT:
            raise ValueError(f"{source} is not a minformer BPE tokenizer file")
        if state.get("version") != _VERSION or state.get("pattern") != PATTERN:
            raise ValueError(
                f"{source} was written by another version of the tokenizer "
                f"(version {state.get('version')}, pattern {state.get('pattern')!r})"
            )
        try:
            tok = cls([tuple(m) for m in state["merges"]], state["special_tokens"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{source}: a damaged tokenizer file ({type(e).__name__}: "
                             f"{e})") from None
        vocab = [tok.id_to_token(i) for i in range(tok.vocab_size)]
        if "vocab" in state and state["vocab"] != vocab:
            raise ValueError(f"{source}: the stored vocabulary does not match its merges")
        return tok


def _id_row(s, n: int, limit: int) -> list[int]:
    """Row ``n`` of a batch as a list of ints in [0, limit): a list, a tuple or a 1-D tensor or
    array of integers. A float (2.5, or 2.0), a bool or a str is a TypeError, never truncated."""
    if isinstance(s, (str, bytes)):
        raise TypeError(f"seqs[{n}] is a string; pad takes lists of ids (encode first)")
    if hasattr(s, "tolist"):  # a tensor or an array row
        s = s.tolist()
    if not isinstance(s, (list, tuple)):
        raise TypeError(f"seqs[{n}] must be a list of token ids; got {type(s).__name__}")
    for i, v in enumerate(s):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):  # (NumPy bools are not)
            raise TypeError(f"seqs[{n}][{i}] must be an int token id; got {v!r} "
                            f"({type(v).__name__})")
        if not 0 <= v < limit:
            where = f"in [0, {limit}) for this vocabulary" if limit < 2**63 else "ints ≥ 0"
            raise ValueError(f"seqs[{n}][{i}] = {int(v)} is not a token id: ids are {where}")
    return [int(v) for v in s]


def pad_sequences(seqs, pad_id: int, vocab_size: int | None = None):
    """Stack id lists into ``(ids, lengths)``: ids ``(batch, t_max)`` LongTensor, each row
    right-padded with ``pad_id``; lengths ``(batch,)`` LongTensor, the real tokens of each row.

    Each row is a list (or a 1-D tensor or array) of int ids ≥ 0, below ``vocab_size`` when it
    is given (and ``pad_id`` too): a float, a bool or an id out of range is an error naming
    its row and position, never truncated or wrapped."""
    import torch

    from .validate import integer  # imported here: the tokenizer itself does not need torch

    limit = 2**63 if vocab_size is None else integer(vocab_size, "vocab_size", minimum=1)
    pad_id = integer(pad_id, "pad_id", minimum=0)
    if pad_id >= limit:
        raise ValueError(f"pad_id={pad_id} is not a token id of a vocabulary of {limit}")
    if isinstance(seqs, (str, bytes)):
        raise TypeError("seqs must be a list of id lists, not a string (encode first)")
    seqs = list(seqs)
    if len(seqs) == 0:
        raise ValueError("cannot pad an empty batch: got 0 sequences")
    seqs = [_id_row(s, n, limit) for n, s in enumerate(seqs)]
    lengths = torch.tensor([len(s) for s in seqs], dtype=torch.long)  # (batch,)
    ids = torch.full((len(seqs), int(lengths.max())), pad_id, dtype=torch.long)
    for n, s in enumerate(seqs):
        ids[n, : len(s)] = torch.as_tensor(s, dtype=torch.long)  # (t_n,) into row n
    return ids, lengths


def _check_special_tokens(special_tokens) -> tuple[str, ...]:
    if isinstance(special_tokens, str):
        raise TypeError("special_tokens must be a list of strings, not a single string")
    specials = tuple(special_tokens)
    for s in specials:
        if not isinstance(s, str) or not s:
            raise ValueError(f"special tokens must be non-empty strings, got {s!r}")
    dup = sorted({s for s in specials if specials.count(s) > 1})
    if dup:
        raise ValueError(f"special tokens must be distinct; repeated: {dup}")
    return specials


def _special_regex(specials) -> re.Pattern:
    """A regex whose split keeps the special tokens as the odd pieces (longest first)."""
    alternatives = sorted(specials, key=lambda s: (-len(s), s))
    return re.compile("(" + "|".join(re.escape(s) for s in alternatives) + ")")


def _ranks(merges) -> dict[tuple[int, int], tuple[int, int]]:
    """pair -> (rank, merged id); a pair learned twice keeps its first (earliest) rank."""
    ranks: dict[tuple[int, int], tuple[int, int]] = {}
    for r, (a, b, new) in enumerate(merges):
        ranks.setdefault((a, b), (r, new))
    return ranks


def _merge(ids: list[int], a: int, b: int, new: int) -> list[int]:
    """Replace every non-overlapping occurrence of the pair (a, b), left to right, by ``new``."""
    out = []
    i, n = 0, len(ids)
    while i < n:
        if i + 1 < n and ids[i] == a and ids[i + 1] == b:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
