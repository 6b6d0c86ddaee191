"""word2vec: skip-gram and CBOW with negative sampling (Mikolov et al. 2013).

Every word w has two vectors: an *input* vector v_w (a row of the embedding matrix E, the one we
keep) and an *output* vector u_w. Skip-gram predicts each context word o from the center word c;
CBOW predicts the center word from the mean h of its context words' input vectors. Instead of a
softmax over the whole vocabulary, negative sampling asks a logistic classifier to tell the true
pair from k "noise" words n_1 … n_k drawn from P_n(w) ∝ count(w)^0.75:

    L = −log σ(u_oᵀ v_c) − Σ_{i=1..k} log σ(−u_{n_i}ᵀ v_c)

Frequent words ("the", "of") are randomly dropped before windows are built (subsampling): a word
of relative frequency f is kept with probability min(1, √(t/f)).

Rows are words: E has shape (vocab, dim). Pair generation is vectorized with NumPy; training
runs on large batches of pairs.
"""

import math
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from tqdm import tqdm

from . import validate
from .data import cpu_name, read_shipped, record_shipped, retrain_command


# ------------------------------------------------------------------------------------ vocabulary
class Vocab:
    """Words sorted by decreasing count (ties alphabetically); id = rank.

    itos: list of words; counts: int64 array (vocab,) of corpus counts; stoi: word → id.
    """

    def __init__(self, itos: Sequence[str], counts, min_count: int = 1):
        itos = validate.str_list(itos, "itos")
        validate.positive_int(min_count, "min_count")
        counts = _counts_array(counts, "iu", "integers").astype(np.int64)
        if (counts < 0).any():
            bad = int(np.flatnonzero(counts < 0)[0])
            raise ValueError(f"counts must be ≥ 0 (how often each word occurs); got "
                             f"counts[{bad}] = {counts[bad]} for {itos[bad] if bad < len(itos) else '?'!r}")
        if len(itos) != len(counts):
            raise ValueError(f"itos has {len(itos)} words but counts has {len(counts)} entries")
        self.itos = list(itos)
        self.counts = counts
        self.min_count = min_count
        self.stoi = {w: i for i, w in enumerate(self.itos)}
        if len(self.stoi) != len(self.itos):
            raise ValueError("itos contains duplicate words")

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, word) -> bool:
        return word in self.stoi

    def __repr__(self) -> str:
        return f"Vocab({len(self)} words, {int(self.counts.sum()):,} tokens, min_count={self.min_count})"

    def index(self, word: str) -> int:
        """The id of ``word``; ValueError naming the word if it is not in the vocabulary."""
        if not isinstance(word, str):
            raise TypeError(f"word must be a str; got {type(word).__name__}")
        try:
            return self.stoi[word]
        except KeyError:
            raise ValueError(
                f"{word!r} is not in the vocabulary ({len(self)} words seen at least "
                f"min_count={self.min_count} times)"
            ) from None

    def encode(self, tokens: Sequence[str], unknown="raise") -> np.ndarray:
        """Ids of ``tokens`` (a list of words, not one string), int64.

        unknown: what a word outside the vocabulary becomes. ``"raise"`` (default): ValueError
        naming it. ``"drop"``: it is left out (the result is shorter). An int, e.g. -1: that
        id, to filter later (``ids >= 0``) — never use such ids to index an embedding, where
        -1 is the last row.
        """
        tokens = validate.str_list(tokens, "tokens")
        get = self.stoi.get
        ids = np.fromiter((get(w, -1) for w in tokens), dtype=np.int64, count=len(tokens))
        if isinstance(unknown, str) and unknown in ("raise", "drop"):
            missing = ids < 0
            if unknown == "drop":
                return ids[~missing]
            if missing.any():
                words = [tokens[i] for i in np.flatnonzero(missing)[:5]]
                raise ValueError(
                    f"{int(missing.sum())} of {len(tokens)} words are not in the vocabulary, "
                    f"e.g. {words}; pass unknown='drop' to leave them out, or unknown=-1 to "
                    "mark them")
            return ids
        marker = validate.integer(unknown, "unknown (an id, or 'raise' or 'drop')")
        ids[ids < 0] = marker
        return ids


def _flatten(tokens):
    """A flat token list and a segment id per token: a list of str is one segment, a list of
    lists of str one segment per inner list (windows never cross segments)."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(
            f"tokens must be a list of words or a list of sentences (lists of words), "
            f"got {type(tokens).__name__}"
        )
    if len(tokens) == 0:
        raise ValueError("tokens is empty")
    if isinstance(tokens[0], str):
        return list(tokens), None
    if all(isinstance(s, Sequence) and not isinstance(s, str) for s in tokens):
        flat = [w for s in tokens for w in s]
        lengths = np.fromiter((len(s) for s in tokens), dtype=np.int64, count=len(tokens))
        return flat, np.repeat(np.arange(len(tokens)), lengths)
    raise TypeError("tokens mixes words and sentences: give a list of str or a list of lists")


def build_vocab(tokens, min_count: int = 5, max_size: int | None = None) -> Vocab:
    """Count the words of ``tokens`` (a list of str, or a list of sentences) and keep those seen
    at least ``min_count`` times, the ``max_size`` most frequent if given."""
    validate.positive_int(min_count, "min_count")
    if max_size is not None:
        validate.positive_int(max_size, "max_size")
    flat, _ = _flatten(tokens)
    counts = Counter(flat)
    kept = sorted((w for w, c in counts.items() if c >= min_count), key=lambda w: (-counts[w], w))
    if max_size is not None:
        kept = kept[:max_size]
    if not kept:
        raise ValueError(
            f"no word occurs min_count={min_count} times ({len(flat)} tokens, "
            f"{len(counts)} distinct); lower min_count"
        )
    return Vocab(kept, [counts[w] for w in kept], min_count=min_count)


def noise_distribution(counts, power: float = 0.75) -> torch.Tensor:
    """P_n(w) = count(w)^power / Σ_w' count(w')^power. counts: (vocab,). Returns float64 (vocab,)."""
    validate.number(power, "power")
    counts = np.asarray(counts)
    if counts.dtype.kind not in "iuf":
        raise TypeError(f"counts must be numbers; got dtype {counts.dtype}")
    counts = torch.as_tensor(counts, dtype=torch.float64)
    if counts.ndim != 1 or counts.numel() == 0 or (counts < 0).any() or counts.sum() == 0:
        raise ValueError(f"counts must be a non-empty 1-D array of counts ≥ 0, got {counts.shape}")
    p = counts**power
    return p / p.sum()


def unigram_table(probs, size: int = 10_000_000) -> torch.Tensor:
    """word2vec's trick for drawing noise words fast: a table in which word w fills about
    size·P_n(w) slots (at least one), so a uniformly random slot is a draw from P_n.

    probs: (vocab,) noise distribution: finite, ≥ 0, not all 0. Returns int32 (≈ size,) of
    word ids.
    """
    validate.positive_int(size, "size")
    probs = torch.as_tensor(probs, dtype=torch.float64)
    if probs.ndim != 1 or size < len(probs):
        raise ValueError(f"need 1-D probs and size ≥ vocab; got {tuple(probs.shape)}, size={size}")
    _check_distribution(probs, "probs")
    slots = torch.round(probs * size).long().clamp(min=1)  # (vocab,)
    return torch.repeat_interleave(torch.arange(len(probs), dtype=torch.int32), slots)


def _counts_array(counts, kinds: str, what: str) -> np.ndarray:
    """``counts`` as a 1-D NumPy array (vocab,) whose dtype kind is one of ``kinds`` ("iu":
    integers, "iuf": numbers); TypeError or ValueError naming what is wrong."""
    counts = np.asarray(counts)
    if counts.dtype.kind not in kinds:
        raise TypeError(f"counts must be {what}; got dtype {counts.dtype}")
    if counts.ndim != 1:
        raise ValueError(f"counts must be 1-D (vocab,); got shape {counts.shape}")
    return counts


def _check_distribution(p: torch.Tensor, name: str) -> None:
    """``p`` (n,) holds finite numbers ≥ 0, not all 0; ValueError naming the first bad entry."""
    bad = ~torch.isfinite(p) | (p < 0)
    if bad.any():
        i = int(bad.nonzero()[0])
        raise ValueError(f"{name} must be finite and ≥ 0; got {name}[{i}] = {float(p[i])}")
    if p.numel() == 0 or float(p.sum()) == 0:
        raise ValueError(f"{name} must have at least one entry > 0; got {p.numel()} entries, "
                         f"all 0")


def sample_noise(table: torch.Tensor, shape, generator=None) -> torch.Tensor:
    """Noise word ids of ``shape`` (e.g. (batch, k)) drawn from a :func:`unigram_table`; int64."""
    slots = torch.randint(0, len(table), shape, generator=generator)
    return table[slots].long()


def keep_probabilities(counts, t: float = 1e-4) -> np.ndarray:
    """Subsampling: a word of relative frequency f = count / total is kept with probability
    min(1, √(t / f)) (Mikolov et al. 2013, eq. 5). counts: (vocab,). Returns float64 (vocab,)."""
    validate.number(t, "subsampling threshold t", low=0.0, low_open=True)
    counts = _counts_array(counts, "iuf", "numbers").astype(np.float64)
    _check_distribution(torch.from_numpy(counts), "counts")  # a total of 0 would give NaN
    f = counts / counts.sum()
    return np.minimum(1.0, np.sqrt(t / np.maximum(f, 1e-300)))


def subsample(ids: np.ndarray, keep_prob: np.ndarray, rng: np.random.Generator, segments=None):
    """Drop each token with probability 1 − keep_prob[id]. ids: (n,) ints in [0, vocab);
    keep_prob: (vocab,) probabilities (:func:`keep_probabilities`); segments: (n,) or None.
    Returns kept ids (and their segments if given)."""
    checked = _int_ids(ids)  # (the ids are returned as given: same dtype)
    keep_prob = validate.array(keep_prob, "keep_prob", ndim=1)
    if checked.size and not (0 <= checked.min() and checked.max() < len(keep_prob)):
        bad = checked[(checked < 0) | (checked >= len(keep_prob))][0]
        raise ValueError(f"ids must lie in [0, {len(keep_prob)}) (one keep probability each); "
                         f"got {bad}")
    if segments is not None and len(segments) != len(ids):
        raise ValueError(f"segments has {len(segments)} entries for {len(ids)} ids")
    keep = rng.random(len(ids)) < keep_prob[ids]
    return (ids[keep], segments[keep]) if segments is not None else (ids[keep], None)


# ------------------------------------------------------------------------------------ windows
def _int_ids(ids) -> np.ndarray:
    """ids as a 1-D int64 array; floats, bools and strings are refused."""
    if isinstance(ids, torch.Tensor):
        ids = ids.detach().cpu().numpy()
    ids = np.asarray(ids)
    if ids.dtype.kind not in "iu" and not (ids.size == 0 and ids.dtype.kind == "f"):
        raise TypeError(f"ids must be integer word ids; got dtype {ids.dtype}")
    if ids.ndim != 1:
        raise ValueError(f"ids must be 1-D (n,), got shape {ids.shape}")
    return ids.astype(np.int64)


def _window_radius(n: int, window: int, dynamic: bool, rng):
    """Per-center window radius b_i: window, or uniform in 1..window when dynamic (which weights
    near words more, as word2vec does)."""
    validate.positive_int(window, "window")
    if not dynamic:
        return None
    if rng is None:
        raise ValueError("dynamic windows need an rng (np.random.Generator)")
    return rng.integers(1, window + 1, size=n)


def skipgram_pairs(ids, window: int, segments=None, dynamic: bool = False, rng=None):
    """All (center, context) pairs with 1 ≤ |offset| ≤ window, inside one segment.

    ids: (n,) int. Pairs are grouped by offset (−window, …, −1, 1, …, window) and, within an
    offset, ordered by center position. With dynamic=True, center i only keeps offsets
    |o| ≤ b_i, b_i drawn uniformly from 1..window.
    Returns centers (n_pairs,) and contexts (n_pairs,), int64.
    """
    ids = _int_ids(ids)
    n = len(ids)
    radius = _window_radius(n, window, dynamic, rng)
    centers, contexts = [], []
    for o in [*range(-window, 0), *range(1, window + 1)]:
        if abs(o) >= n:
            continue
        c = np.arange(max(0, -o), min(n, n - o))  # centers whose neighbour i+o exists
        keep = np.ones(len(c), dtype=bool)
        if segments is not None:
            keep &= segments[c] == segments[c + o]
        if radius is not None:
            keep &= radius[c] >= abs(o)
        c = c[keep]
        centers.append(ids[c])
        contexts.append(ids[c + o])
    if not centers:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(centers), np.concatenate(contexts)


def cbow_examples(ids, window: int, pad_id: int, segments=None, dynamic: bool = False, rng=None):
    """CBOW examples: for every center, the ids of its context words.

    ids: (n,) int. Returns contexts (m, 2·window), with pad_id where a neighbour is missing
    (sequence edge, other segment, outside a dynamic window), columns in offset order
    −window … −1, 1 … window; and centers (m,). Centers with no context at all are dropped.
    """
    ids = _int_ids(ids)
    n = len(ids)
    radius = _window_radius(n, window, dynamic, rng)
    offsets = np.array([*range(-window, 0), *range(1, window + 1)])  # (2w,)
    pos = np.arange(n)[:, None] + offsets[None, :]  # (n, 2w) neighbour positions
    valid = (pos >= 0) & (pos < n)  # (n, 2w)
    pos = np.clip(pos, 0, max(n - 1, 0))
    if segments is not None:
        valid &= segments[pos] == segments[:, None]
    if radius is not None:
        valid &= np.abs(offsets)[None, :] <= radius[:, None]
    contexts = np.where(valid, ids[pos], pad_id)  # (n, 2w)
    has = valid.any(axis=1)
    return contexts[has], ids[has]


# ------------------------------------------------------------------------------------ models
def negative_sampling_loss(v, u_pos, u_neg):
    """L = −log σ(u_oᵀ v) − Σ_i log σ(−u_{n_i}ᵀ v), averaged over the batch.

    v: (batch, dim) input vectors (skip-gram: the center word; CBOW: the context mean)
    u_pos: (batch, dim) output vectors of the true words; u_neg: (batch, k, dim) of the noise words.
    Returns a scalar.
    """
    for name, x in (("v", v), ("u_pos", u_pos), ("u_neg", u_neg)):
        validate.tensor(x, name, floating=True)
    validate.same_dtype(v=v, u_pos=u_pos, u_neg=u_neg)
    if v.ndim != 2 or u_pos.shape != v.shape or u_neg.ndim != 3 or u_neg.shape[0] != v.shape[0]:
        raise ValueError(
            f"expected v (batch, dim), u_pos (batch, dim), u_neg (batch, k, dim); got "
            f"v {tuple(v.shape)}, u_pos {tuple(u_pos.shape)}, u_neg {tuple(u_neg.shape)}"
        )
    if u_neg.shape[2] != v.shape[1]:
        raise ValueError(f"u_neg dim {u_neg.shape[2]} differs from v dim {v.shape[1]}")
    _nonempty_batch(v.shape[0])
    U = torch.cat([u_pos.unsqueeze(1), u_neg], dim=1)  # (batch, 1+k, dim): true word first
    return _ns_loss(v, U)


def _nonempty_batch(batch: int) -> None:
    if batch == 0:
        raise ValueError("empty batch (batch = 0): the mean loss over no examples is undefined")


def _check_word_ids(n_words: int, **ids) -> None:
    """Each named tensor holds integer word ids in [0, n_words); the error names it."""
    for name, x in ids.items():
        validate.tensor(x, name)
        if x.is_floating_point() or x.dtype == torch.bool or x.is_complex():
            raise TypeError(f"{name} must hold integer word ids; got dtype {x.dtype}")
        if x.numel():
            lo, hi = torch.aminmax(x)
            if lo < 0 or hi >= n_words:
                bad = int(lo) if lo < 0 else int(hi)
                raise ValueError(f"{name} holds id {bad}, outside the {n_words} words' ids "
                                 f"[0, {n_words})")


def _ns_loss(v, U):
    """The loss from v (batch, dim) and U (batch, 1+k, dim) whose row 0 is the true word's u."""
    scores = (U * v.unsqueeze(1)).sum(dim=-1)  # (batch, 1+k): uᵀv (elementwise: faster than bmm)
    sign = torch.ones(scores.shape[1], dtype=scores.dtype, device=scores.device)
    sign[1:] = -1  # σ(+s) for the true word, σ(−s) for the noise words
    return -F.logsigmoid(scores * sign).sum(dim=-1).mean()


class _Word2Vec(nn.Module):
    """Input vectors v_w (in_embed, the embedding matrix E) and output vectors u_w (out_embed)."""

    def __init__(
        self,
        vocab_size: int,
        dim: int,
        sparse: bool = False,
        n_extra: int = 0,
        seed: int | None = None,
    ):
        super().__init__()
        validate.positive_int(vocab_size, "vocab_size")
        validate.positive_int(dim, "dim")
        if seed is not None:
            validate.integer(seed, "seed")
        self.vocab_size, self.dim = vocab_size, dim
        pad = vocab_size if n_extra else None
        self.in_embed = nn.Embedding(vocab_size + n_extra, dim, padding_idx=pad, sparse=sparse)
        self.out_embed = nn.Embedding(vocab_size, dim, sparse=sparse)
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        with torch.no_grad():  # word2vec's init: small random inputs, zero outputs
            self.in_embed.weight.uniform_(-0.5 / dim, 0.5 / dim, generator=g)
            if pad is not None:
                self.in_embed.weight[pad] = 0
            self.out_embed.weight.zero_()

    def vectors(self, which: str = "input") -> torch.Tensor:
        """The learned word vectors (vocab, dim): "input" (E, the usual choice), "output", or
        their sum "both"."""
        v_in = self.in_embed.weight[: self.vocab_size].detach()
        if which == "input":
            return v_in
        if which == "output":
            return self.out_embed.weight.detach()
        if which == "both":
            return v_in + self.out_embed.weight.detach()
        raise ValueError(f"which must be 'input', 'output' or 'both', got {which!r}")


class SkipGram(_Word2Vec):
    """Skip-gram: predict a context word o from the center word c, score u_oᵀ v_c."""

    def __init__(self, vocab_size: int, dim: int, sparse: bool = False, seed: int | None = None):
        super().__init__(vocab_size, dim, sparse=sparse, seed=seed)

    def forward(self, centers, contexts, negatives):
        """centers: (batch,) ids; contexts: (batch,) ids; negatives: (batch, k) ids, integers in
        [0, vocab_size), batch ≥ 1. Returns the mean negative-sampling loss (scalar)."""
        _check_word_ids(self.vocab_size, centers=centers, contexts=contexts, negatives=negatives)
        if (
            centers.ndim != 1
            or contexts.shape != centers.shape
            or negatives.ndim != 2
            or negatives.shape[0] != centers.shape[0]
        ):
            raise ValueError(
                f"expected centers (batch,), contexts (batch,), negatives (batch, k); got "
                f"{tuple(centers.shape)}, {tuple(contexts.shape)}, {tuple(negatives.shape)}"
            )
        _nonempty_batch(centers.shape[0])
        v = self.in_embed(centers)  # (batch, dim): v_c
        U = self.out_embed(
            torch.cat([contexts.unsqueeze(1), negatives], dim=1)
        )  # (batch, 1+k, dim)
        return _ns_loss(v, U)


class CBOW(_Word2Vec):
    """CBOW: predict the center word from h = mean of its context words' input vectors.

    Context slots holding ``pad_id`` (= vocab_size, an extra all-zero row of in_embed that never
    learns) are left out of the mean.
    """

    def __init__(self, vocab_size: int, dim: int, sparse: bool = False, seed: int | None = None):
        super().__init__(vocab_size, dim, sparse=sparse, n_extra=1, seed=seed)
        self.pad_id = vocab_size

    def forward(self, contexts, centers, negatives):
        """contexts: (batch, 2·window) ids or pad_id; centers: (batch,); negatives: (batch, k);
        integer ids, batch ≥ 1. Returns the mean negative-sampling loss (scalar)."""
        _check_word_ids(self.vocab_size + 1, contexts=contexts)  # pad_id = vocab_size
        _check_word_ids(self.vocab_size, centers=centers, negatives=negatives)
        if (
            contexts.ndim != 2
            or centers.shape != contexts.shape[:1]
            or negatives.ndim != 2
            or negatives.shape[0] != contexts.shape[0]
        ):
            raise ValueError(
                f"expected contexts (batch, 2·window), centers (batch,), negatives (batch, k); "
                f"got {tuple(contexts.shape)}, {tuple(centers.shape)}, {tuple(negatives.shape)}"
            )
        _nonempty_batch(contexts.shape[0])
        real = (contexts != self.pad_id).unsqueeze(-1)  # (batch, 2w, 1)
        summed = self.in_embed(contexts).sum(dim=1)  # (batch, dim); pad rows are 0
        h = summed / real.sum(dim=1).clamp(min=1)  # (batch, dim): mean over real context words
        U = self.out_embed(torch.cat([centers.unsqueeze(1), negatives], dim=1))  # (batch, 1+k, dim)
        return _ns_loss(h, U)


# ------------------------------------------------------------------------------------ training
class Word2VecResult(NamedTuple):
    """What :func:`train_word2vec` returns: ``model, vocab, losses = result`` also works."""

    model: _Word2Vec
    vocab: Vocab
    losses: list  # mean loss of every batch, in training order

    def vector(self, word: str) -> torch.Tensor:
        """v_word, (dim,)."""
        return self.model.vectors()[self.vocab.index(word)]

    def similarity(self, w1: str, w2: str) -> float:
        """cos(v_w1, v_w2)."""
        return float(cosine_similarity(self.vector(w1), self.vector(w2)))

    def most_similar(self, word, k: int = 10, restrict: int | None = None):
        """The k words whose vectors have the highest cosine with ``word``'s (itself excluded),
        among the ``restrict`` most frequent words if given."""
        return most_similar(self.model.vectors(), self.vocab, word, k, restrict)

    def analogy(self, a: str, b: str, c: str, k: int = 5, restrict: int | None = None):
        """a : b :: c : ? — the k best answers (a, b, c excluded)."""
        return analogy(self.model.vectors(), self.vocab, a, b, c, k, restrict)


OPTIMIZERS = ("adam", "sparse_adam", "sgd")


def _optimizer(name: str, model: nn.Module, lr: float):
    if name == "adam":  # dense Adam, fused kernel: the fastest to converge per second (measured)
        return torch.optim.Adam(model.parameters(), lr=lr, fused=True)
    if name == "sparse_adam":  # "lazy" Adam: only rows seen in the batch are updated
        return torch.optim.SparseAdam(list(model.parameters()), lr=lr)
    if name == "sgd":  # word2vec's own optimizer, on sparse gradients
        return torch.optim.SGD(model.parameters(), lr=lr)
    raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {name!r}")


def _default_lr(optimizer: str, batch_size: int) -> float:
    # SGD: word2vec's 0.025 per example; our loss is a batch mean, so scale by the batch size
    return {"adam": 1e-2, "sparse_adam": 3e-3, "sgd": 0.025 * batch_size}[optimizer]


def train_word2vec(
    tokens,
    model: str = "skipgram",
    dim: int = 100,
    window: int = 5,
    negatives: int = 5,
    epochs: int = 1,
    batch_size: int = 4096,
    lr: float | None = None,
    min_count: int = 5,
    subsample_t: float | None = 1e-4,
    dynamic_window: bool = True,
    optimizer: str = "adam",
    seed: int = 0,
    progress: bool = True,
    vocab: Vocab | None = None,
    max_steps: int | None = None,
) -> Word2VecResult:
    """Train skip-gram or CBOW with negative sampling on ``tokens``.

    tokens: a list of words, or a list of sentences (lists of words; windows stay inside one).
    model: "skipgram" (one example per (center, context) pair) or "cbow" (one per center word).
    window: the largest |offset| of a context word; with dynamic_window each center draws its own
    radius in 1..window. negatives: k noise words per example, drawn from count^0.75.
    subsample_t: the subsampling threshold t (None keeps every token). Subsampling, windows,
    shuffling and noise are redrawn every epoch from ``seed``.
    optimizer: "adam" (default), "sparse_adam" or "sgd"; lr defaults to 1e-2, 3e-3 and
    0.025·batch_size; it decays linearly to 0 over training, as in word2vec.
    vocab: reuse a vocabulary (min_count is then ignored).
    max_steps: stop after this many batches, with the learning rate still scheduled over all
    ``epochs``: the first ``max_steps`` batches of the whole run, exactly (None: the whole run).
    Returns Word2VecResult(model, vocab, losses) with helpers most_similar and analogy.
    """
    if model not in ("skipgram", "cbow"):
        raise ValueError(f"model must be 'skipgram' or 'cbow', got {model!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    for name, value in (
        ("dim", dim),
        ("window", window),
        ("negatives", negatives),
        ("epochs", epochs),
        ("batch_size", batch_size),
    ):
        validate.positive_int(value, name)
    validate.integer(seed, "seed")
    if max_steps is not None:
        validate.positive_int(max_steps, "max_steps")
    if lr is not None:
        validate.number(lr, "lr", low=0.0, low_open=True)
    if subsample_t is not None:
        validate.number(subsample_t, "subsample_t", low=0.0, low_open=True)
    flat, segments = _flatten(tokens)
    vocab = vocab if vocab is not None else build_vocab(flat, min_count=min_count)
    ids = vocab.encode(flat, unknown=-1)  # (n,), -1 = rare word
    known = ids >= 0
    ids = ids[known]  # rare words are removed before windows are built, as in word2vec
    segments = segments[known] if segments is not None else None
    if len(ids) < 2:
        raise ValueError(f"only {len(ids)} tokens are in the vocabulary; need at least 2")

    rng = np.random.default_rng(seed)
    g = torch.Generator().manual_seed(seed)
    Model = SkipGram if model == "skipgram" else CBOW
    net = Model(len(vocab), dim, sparse=optimizer != "adam", seed=seed)
    lr = _default_lr(optimizer, batch_size) if lr is None else lr
    opt = _optimizer(optimizer, net, lr)
    table = unigram_table(noise_distribution(vocab.counts))  # draws from count^0.75
    keep_prob = keep_probabilities(vocab.counts, subsample_t) if subsample_t else None

    def examples():
        """One epoch's shuffled examples: X (n,) centers or (n, 2·window) contexts, y (n,)."""
        e_ids, e_seg = ids, segments
        if keep_prob is not None:
            e_ids, e_seg = subsample(ids, keep_prob, rng, segments)
        if model == "skipgram":
            X, y = skipgram_pairs(e_ids, window, e_seg, dynamic_window, rng)
        else:
            X, y = cbow_examples(e_ids, window, len(vocab), e_seg, dynamic_window, rng)
        if len(y) == 0:
            raise ValueError(f"no training examples: {len(e_ids)} tokens left after subsampling")
        perm = torch.randperm(len(y), generator=g)
        return torch.from_numpy(X)[perm], torch.from_numpy(y)[perm]

    X, y = examples()
    # later epochs have a few more or fewer examples: the schedule uses the first epoch's count
    total_steps = max(1, math.ceil(len(y) / batch_size) * epochs)
    losses = []
    stop = total_steps if max_steps is None else min(max_steps, total_steps)
    bar = tqdm(total=stop, desc=f"{model} d={dim}", disable=not progress, mininterval=0.5)
    for epoch in range(epochs):
        if max_steps is not None and len(losses) >= max_steps:
            break
        if epoch > 0:
            X, y = examples()
        for start in range(0, len(y), batch_size):
            if max_steps is not None and len(losses) >= max_steps:
                break
            for group in opt.param_groups:  # linear decay to 0, as in word2vec
                group["lr"] = lr * max(1.0 - len(losses) / total_steps, 1e-4)
            xb, yb = X[start : start + batch_size], y[start : start + batch_size]
            neg = sample_noise(table, (len(yb), negatives), g)  # (batch, k) noise ids ~ P_n
            loss = net(xb, yb, neg)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
            bar.update(1)
            if len(losses) % 50 == 0:
                bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    bar.close()
    return Word2VecResult(net, vocab, losses)


# ------------------------------------------------------------------------------------ queries
def cosine_similarity(A, B) -> torch.Tensor:
    """cos(a, b) = aᵀb / (‖a‖ ‖b‖) between every row of A and every row of B.

    A: (dim,) or (n, dim); B: (dim,) or (m, dim). Returns a scalar, (m,), (n,) or (n, m).
    A zero vector has cosine 0 with everything.
    """
    A, B = torch.as_tensor(A), torch.as_tensor(B)
    for name, x in (("A", A), ("B", B)):
        if not (x.is_floating_point() or x.dtype in (torch.int32, torch.int64)):
            raise TypeError(f"{name} must hold numbers; got dtype {x.dtype}")
    if A.ndim not in (1, 2) or B.ndim not in (1, 2) or A.shape[-1] != B.shape[-1]:
        raise ValueError(
            f"A and B must be (dim,) or (n, dim) with the same dim; got {tuple(A.shape)}, "
            f"{tuple(B.shape)}"
        )
    dtype = torch.float64 if torch.float64 in (A.dtype, B.dtype) else torch.float32
    An = F.normalize(A.to(dtype), dim=-1)
    Bn = F.normalize(B.to(dtype), dim=-1)
    return An @ Bn.T if Bn.ndim == 2 else An @ Bn


def _nearest(E, vocab: Vocab, query, k: int, exclude: set[int], restrict: int | None):
    """Top-k rows of E by cosine with query, skipping ids in exclude and ids ≥ restrict."""
    validate.positive_int(k, "k")
    if restrict is not None:
        validate.positive_int(restrict, "restrict")
    validate.tensor(E, "E")
    if E.ndim != 2 or E.shape[0] != len(vocab):
        raise ValueError(f"E must be (vocab={len(vocab)}, dim), got {tuple(E.shape)}")
    n = len(vocab) if restrict is None else min(int(restrict), len(vocab))
    if n < 1:
        raise ValueError(f"restrict must be ≥ 1, got {restrict}")
    sims = cosine_similarity(E[:n], query)  # (n,): ids are ranks, so these are the n most frequent
    drop = [i for i in exclude if i < n]
    sims[drop] = float("-inf")
    k = min(k, n - len(drop))
    if k < 1:
        return []
    top = torch.topk(sims, k)  # sorted, highest first
    return [(vocab.itos[i], float(s)) for s, i in zip(top.values, top.indices.tolist())]


def most_similar(E, vocab: Vocab, word, k: int = 10, restrict: int | None = None):
    """The k words nearest to ``word`` by cosine, highest first, ``word`` itself excluded.

    E: (vocab, dim) word vectors; word: a str, or a vector (dim,) (then nothing is excluded).
    restrict: only answer with the ``restrict`` most frequent words (rare words have noisy vectors).
    Returns [(word, cosine), …].
    """
    if isinstance(word, str):
        i = vocab.index(word)
    elif not isinstance(word, (torch.Tensor, np.ndarray)):
        raise TypeError(f"word must be a str or a vector (dim,); got {type(word).__name__}")
    if isinstance(word, str):
        return _nearest(E, vocab, E[i], k, {i}, restrict)
    return _nearest(E, vocab, torch.as_tensor(word), k, set(), restrict)


def analogy(E, vocab: Vocab, a: str, b: str, c: str, k: int = 5, restrict: int | None = None):
    """a : b :: c : ? by vector offsets (3CosAdd): the words nearest to v̂_b − v̂_a + v̂_c, where
    v̂ = v / ‖v‖, excluding a, b and c ("man : king :: woman : ?" → queen, ideally).
    E: (vocab, dim). Returns [(word, cosine), …], highest first."""
    for name, w in (("a", a), ("b", b), ("c", c)):
        if not isinstance(w, str):
            raise TypeError(f"{name} must be a word (str); got {type(w).__name__}")
    validate.tensor(E, "E")
    ia, ib, ic = vocab.index(a), vocab.index(b), vocab.index(c)
    En = F.normalize(E.float(), dim=-1)  # (vocab, dim) unit rows
    target = En[ib] - En[ia] + En[ic]  # (dim,): e.g. king − man + woman
    return _nearest(E, vocab, target, k, {ia, ib, ic}, restrict)


# ------------------------------------------------------------------------ the shipped runs
# Chapter 11 trains the first batches of each run live, then loads these runs, trained by
# `python -m minformer.word2vec` (train_chapter_runs) on the same paragraphs with the same
# settings, from data/checkpoints/word2vec, so that everything it measures on the vectors gives
# the same outputs on every machine.
FOLDER = "checkpoints/word2vec"  # under data/
REPRODUCE = "python -m minformer.word2vec"
CHAPTER_RUNS = {
    "skipgram": dict(model="skipgram", dim=100, window=5, negatives=5, epochs=2,
                     batch_size=4096, min_count=5, subsample_t=1e-4, seed=0),
    "cbow": dict(model="cbow", dim=100, window=5, negatives=5, epochs=4, batch_size=4096,
                 min_count=5, subsample_t=1e-4, lr=2e-2, seed=0),
}


def chapter_paragraphs() -> list[list[str]]:
    """WikiText-2's training text as chapter 11 reads it: one word list per non-empty line."""
    from .data import load_wikitext, text_to_words

    paragraphs = [text_to_words(line) for line in load_wikitext("train").split("\n")]
    return [p for p in paragraphs if p]


class InputVectors(nn.Module):
    """A shipped run's input vectors v_w, (vocab, dim), behind the ``vectors()`` of a trained
    model (only ``which="input"``: the output vectors are not shipped)."""

    def __init__(self, vectors: torch.Tensor):
        super().__init__()
        self.register_buffer("v", vectors)

    def vectors(self, which: str = "input") -> torch.Tensor:
        if which != "input":
            raise ValueError(f"the shipped runs keep only the input vectors; got which={which!r}")
        return self.v


def train_chapter_runs(out=None, threads: int | None = 1, progress: bool = True) -> dict:
    """Retrain chapter 11's two runs into ``out`` (default data/checkpoints/word2vec): per run
    ``<name>.pt`` (the input vectors, float16, (vocab, dim)) and ``<name>-history.json`` (every
    batch's loss, the seconds), and runs.json (settings, vocabulary size, machine)."""
    import json
    import time
    from pathlib import Path

    from .utils import data_dir

    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    out = Path(out) if out is not None else data_dir() / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    paragraphs = chapter_paragraphs()
    sizes = {}
    for name, settings in CHAPTER_RUNS.items():
        start = time.perf_counter()
        run = train_word2vec(paragraphs, progress=progress, **settings)
        seconds = time.perf_counter() - start
        torch.save({"vectors": run.model.vectors().half().clone()}, out / f"{name}.pt")
        (out / f"{name}-history.json").write_text(
            json.dumps({"losses": run.losses, "seconds": seconds}) + "\n", encoding="utf-8")
        sizes[name] = [len(run.vocab), _vocab_sha256(run.vocab)]
        print(f"{name}: {len(run.losses)} batches in {seconds:.0f} s", flush=True)
    log = {"command": REPRODUCE, "runs": CHAPTER_RUNS, "vocab": sizes,
           "torch": torch.__version__, "threads": torch.get_num_threads(),
           "machine": cpu_name()}
    (out / "runs.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return log


def _vocab_sha256(vocab: Vocab) -> str:
    import hashlib

    return hashlib.sha256("\n".join(vocab.itos).encode("utf-8")).hexdigest()


def _shipped_bytes(relative: str, folder=None) -> bytes:
    return read_shipped(FOLDER, relative, folder, "train_chapter_runs")


def load_chapter_run(name: str, vocab: Vocab, folder=None) -> Word2VecResult:
    """Shipped run ``name`` ("skipgram" or "cbow"), checked against data/manifest.json (or read
    from ``folder``): a :class:`Word2VecResult` whose model holds the input vectors in float32
    and whose losses are every batch's. ``vocab`` must be the one the run was trained with
    (``build_vocab(chapter_paragraphs(), min_count=5)``): a ValueError says so otherwise."""
    import io
    import json

    if name not in CHAPTER_RUNS:
        raise ValueError(f"name must be one of {sorted(CHAPTER_RUNS)}; got {name!r}")
    if not isinstance(vocab, Vocab):
        raise TypeError(f"vocab must be a Vocab; got {type(vocab).__name__}")
    size, digest = json.loads(_shipped_bytes("runs.json", folder))["vocab"][name]
    if (len(vocab), _vocab_sha256(vocab)) != (size, digest):
        raise ValueError(f"vocab ({len(vocab):,} words) is not the one the shipped {name} run "
                         f"was trained with ({size:,} words): build it with "
                         f"build_vocab(chapter_paragraphs(), min_count=5)")
    vectors = torch.load(io.BytesIO(_shipped_bytes(f"{name}.pt", folder)),
                         weights_only=True)["vectors"].float()  # (vocab, dim)
    if vectors.ndim != 2 or vectors.shape[0] != len(vocab):
        raise ValueError(f"{name}.pt holds vectors of shape {tuple(vectors.shape)}, not one row "
                         f"for each of the vocabulary's {len(vocab):,} words: the file does not "
                         f"belong to this run (python -m minformer.word2vec writes it)")
    history = json.loads(_shipped_bytes(f"{name}-history.json", folder))
    return Word2VecResult(InputVectors(vectors), vocab, list(history["losses"]))


def record_in_manifest(folder=None) -> list[str]:
    """List every file of ``folder`` (default data/checkpoints/word2vec) in data/manifest.json
    and data/SHA256SUMS with its sha256, size and command; returns the names recorded."""
    return record_shipped(FOLDER, REPRODUCE, folder)


# ------------------------------------------------------------------------ the other seeds
# The chapter shows one run of each model (seed 0). `python -m minformer.word2vec --seeds 1 2 3`
# trains both again from other seeds, with the same settings, and ships only what the chapter
# prints of them (no vectors): data/checkpoints/word2vec-seeds/results.json.
SEEDS_FOLDER = "checkpoints/word2vec-seeds"  # under data/
OTHER_SEEDS = (1, 2, 3)
PROBE_WORDS = ("king", "france", "film", "war", "river", "money", "bank")  # neighbours: 6 each
NEIGHBOURS, RESTRICT = 6, 10_000  # among the 10,000 most frequent words
BANK_WORDS = ("river", "shore", "money", "loan", "financial")  # cos(bank, w)
EXAMPLE_ANALOGIES = (("man", "king", "woman"), ("paris", "france", "rome"),
                     ("france", "french", "japan"), ("album", "albums", "song"))  # 5 answers each
ANALOGY_RELATIONS = {  # the chapter's test set: every two pairs of a kind make one analogy
    "capital : country": [("paris", "france"), ("london", "england"), ("rome", "italy"),
                          ("berlin", "germany"), ("madrid", "spain"), ("budapest", "hungary")],
    "country : nationality": [("france", "french"), ("germany", "german"), ("italy", "italian"),
                              ("spain", "spanish"), ("japan", "japanese")],
    "male : female": [("man", "woman"), ("king", "queen"), ("father", "mother"),
                      ("son", "daughter"), ("brother", "sister")],
    "singular : plural": [("game", "games"), ("album", "albums"), ("song", "songs"),
                          ("city", "cities"), ("ship", "ships")],
    "present : past": [("play", "played"), ("write", "wrote"), ("go", "went"), ("take", "took"),
                       ("give", "gave")],
    "adjective : comparative": [("large", "larger"), ("small", "smaller"), ("high", "higher"),
                                ("long", "longer"), ("great", "greater")],
}


def seeds_command(seeds: Sequence[int] = OTHER_SEEDS) -> str:
    """The command line that writes the other seeds' results."""
    return f"{REPRODUCE} --seeds {' '.join(str(s) for s in seeds)}"


def analogy_questions(relations: dict, vocab: Vocab) -> list[tuple[str, str, str, str, str]]:
    """(relation, a, b, c, d) for every two pairs (a, b), (c, d) of a relation, in order, whose
    four words are all in ``vocab`` (the others are left out)."""
    from itertools import combinations

    return [(relation, a, b, c, d) for relation, pairs in relations.items()
            for (a, b), (c, d) in combinations(pairs, 2)
            if all(w in vocab for w in (a, b, c, d))]


def analogy_scores(run: Word2VecResult, relations: dict | None = None) -> dict:
    """{relation: [questions, hits@1, hits@5]}: how often ``d`` is the best answer to
    ``a : b :: c : ?`` (3CosAdd, a, b and c excluded), and how often among the best five."""
    relations = ANALOGY_RELATIONS if relations is None else relations
    table = {relation: [0, 0, 0] for relation in relations}
    for relation, a, b, c, d in analogy_questions(relations, run.vocab):
        answers = [w for w, _ in run.analogy(a, b, c, k=5)]
        row = table[relation]
        row[0] += 1
        row[1] += answers[0] == d
        row[2] += d in answers
    return table


def run_summary(run: Word2VecResult) -> dict:
    """What chapter 11 prints of a run: the neighbours of PROBE_WORDS (NEIGHBOURS each, among the
    RESTRICT most frequent words), cos(bank, w) for BANK_WORDS (4 decimals), the best five answers
    to EXAMPLE_ANALOGIES, the analogy scores (:func:`analogy_scores`) and the mean loss of the
    last 50 batches."""
    return {
        "neighbours": {w: [x for x, _ in run.most_similar(w, k=NEIGHBOURS, restrict=RESTRICT)]
                       for w in PROBE_WORDS},
        "bank": {w: round(run.similarity("bank", w), 4) for w in BANK_WORDS},
        "examples": {f"{a} : {b} :: {c}": [x for x, _ in run.analogy(a, b, c, k=5)]
                     for a, b, c in EXAMPLE_ANALOGIES},
        "analogies": analogy_scores(run),
        "last_loss": round(float(np.mean(run.losses[-50:])), 4),
    }


def train_seed_runs(seeds: Sequence[int] = OTHER_SEEDS, out=None, threads: int | None = 1,
                    progress: bool = True) -> str:
    """Train chapter 11's two runs (CHAPTER_RUNS) again from each of ``seeds`` and write
    ``out``/results.json (default data/checkpoints/word2vec-seeds): per seed and model, its
    :func:`run_summary`, measured on the input vectors rounded to float16 as the shipped runs
    are; with the probe words, the analogy test set, the settings, torch's version, the threads,
    the machine and the seconds. Prints a line per run; returns the total time."""
    import json
    import time
    from pathlib import Path

    from .utils import data_dir

    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, Sequence) or not seeds:
        raise ValueError(f"seeds must be a non-empty list of ints; got {seeds!r}")
    seeds = [validate.integer(s, "seed", minimum=0) for s in seeds]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must differ from each other; got {seeds}")
    if threads is not None:
        torch.set_num_threads(validate.positive_int(threads, "threads"))
    out = Path(out) if out is not None else data_dir() / SEEDS_FOLDER
    paragraphs = chapter_paragraphs()
    results, seconds = {}, {}
    start, cpu = time.perf_counter(), time.process_time()
    for seed in seeds:
        results[str(seed)] = {}
        for name, settings in CHAPTER_RUNS.items():
            began = time.perf_counter()
            run = train_word2vec(paragraphs, progress=progress, **{**settings, "seed": seed})
            seconds[f"{name}-seed{seed}"] = round(time.perf_counter() - began, 1)
            shipped_like = Word2VecResult(InputVectors(run.model.vectors().half().float()),
                                          run.vocab, run.losses)
            summary = results[str(seed)][name] = run_summary(shipped_like)
            hits = np.sum(list(summary["analogies"].values()), axis=0)
            print(f"{name} seed {seed}: analogies @1 {hits[1]}, @5 {hits[2]} of {hits[0]} "
                  f"({seconds[f'{name}-seed{seed}']:.0f} s)", flush=True)
    log = {"command": seeds_command(seeds), "seeds": seeds,
           "runs": {name: {k: v for k, v in s.items() if k != "seed"}
                    for name, s in CHAPTER_RUNS.items()},
           "probe_words": list(PROBE_WORDS), "neighbours": NEIGHBOURS, "restrict": RESTRICT,
           "bank_words": list(BANK_WORDS),
           "relations": {r: [list(p) for p in pairs] for r, pairs in ANALOGY_RELATIONS.items()},
           "results": results, "seconds": seconds, "torch": torch.__version__,
           "threads": torch.get_num_threads(), "machine": cpu_name()}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return (f"total {time.perf_counter() - start:.0f} s of wall clock, "
            f"{time.process_time() - cpu:.0f} s of CPU, {torch.get_num_threads()} thread(s)")


def load_seed_results(folder=None) -> dict:
    """The other seeds' results (results.json of data/checkpoints/word2vec-seeds, checked against
    data/manifest.json, or read from ``folder``), as :func:`train_seed_runs` wrote them:
    ``log["results"][seed][model]`` is a :func:`run_summary`, seeds as strings."""
    import json

    return json.loads(read_shipped(SEEDS_FOLDER, "results.json", folder, "train_seed_runs"))


def main(argv=None) -> int:
    """``python -m minformer.word2vec [--out DIR] [--threads N] [--seeds S ...]``: retrain chapter
    11's runs, or with ``--seeds`` train the other seeds' runs and write their results
    (:func:`minformer.data.retrain_command`)."""

    def options(parser):
        parser.add_argument(
            "--seeds", type=int, nargs="+",
            help="instead of the chapter's runs, train both models from these seeds (the "
                 "chapter's: 1 2 3) with the same settings and write only their results, to "
                 f"data/{SEEDS_FOLDER}/results.json by default (about 2 minutes per seed on one thread)")

    def train(args):
        if args.seeds is None:
            train_chapter_runs(args.out, args.threads)
            return None
        done = train_seed_runs(args.seeds, args.out, args.threads)
        if args.out is None:
            record_shipped(SEEDS_FOLDER, seeds_command(args.seeds))
        return done

    return retrain_command(
        argv, FOLDER, REPRODUCE,
        "Retrain chapter 11's skip-gram and CBOW runs into data/checkpoints/word2vec (about 2 "
        "minutes on one thread), or with --seeds the runs from other seeds.", train, options)


if __name__ == "__main__":
    raise SystemExit(main())
