"""Scoring translations: corpus BLEU written out step by step, and bootstrap resampling (chapter 13).

BLEU (Papineni et al., 2002) compares a system's translations (*hypotheses*) with human ones
(*references*) by counting shared n-grams, n = 1..4, over the whole corpus:

    p_n  = Σ_sentences Σ_g min(count_hyp(g), max_r count_ref_r(g))  /  Σ_sentences #n-grams of hyp
           (clipped, or "modified", precision: a hypothesis gets credit for an n-gram at most as
           often as some reference contains it, so repeating "the the the" earns nothing extra)
    BP   = 1 if c > r else exp(1 - r / c)
           (brevity penalty: c = total hypothesis length, r = the sum over sentences of the length
           of the reference closest in length to the hypothesis; precision alone would reward
           saying little)
    BLEU = 100 · BP · exp(¼ Σ_n log p_n)     (geometric mean of the four precisions)

The numbers agree with ``sacrebleu.corpus_bleu`` with its defaults: the same ``13a`` tokenizer
(:func:`tokenize_13a`), mixed case, and its "exp" smoothing, which replaces a precision whose
matches are 0 by 1 / (2^k · total) for the k-th such order, so one missing 4-gram does not send the
whole score to 0. Sacrebleu is used only by the tests, never at run time.

Bootstrap resampling (Koehn, 2004) asks how much the score depends on *which* test sentences
were drawn: :func:`bootstrap_interval` gives a confidence interval, :func:`paired_bootstrap`
how often system A beats system B on the same resampled sentences.
"""

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import validate

MAX_ORDER = 4  # n-grams of 1 to 4 words

# ----------------------------------------------------------------------------- tokenization

# The four rules of mteval-v13a.pl's "language-dependent part" (as in sacrebleu):
_13A_RULES = [
    # 1. every ASCII symbol except ' - . , becomes a token of its own:
    #    ! " # $ % & ( ) * + / : ; < = > ? @ [ \ ] ^ _ ` { | } ~
    (re.compile(r"""([!"#$%&()*+/:;<=>?@\[\\\]^_`{|}~])"""), r" \1 "),
    # 2. a period or comma not preceded by a digit is split off  ("end." → "end .", but "3.5" stays)
    (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),
    # 3. a period or comma not followed by a digit is split off  ("5, " → "5 , ")
    (re.compile(r"([.,])([^0-9])"), r" \1 \2"),
    # 4. a dash preceded by a digit is split off  ("1990-2000" → "1990 - 2000")
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tokenize_13a(line: str) -> list[str]:
    """Split a sentence into BLEU's words exactly as sacrebleu's default ``13a`` tokenizer does.

    Language-independent part: drop trailing whitespace and ``<skipped>``, join words hyphenated
    across a line break ("-\\n"), turn other newlines into spaces, and undo the HTML escapes
    ``&quot; &amp; &lt; &gt;``. Then the four :data:`_13A_RULES` above put spaces around
    punctuation, and the line is split on whitespace. Apostrophes, hyphens inside words and
    non-ASCII marks such as ¿ ¡ « » stay attached: "¿Dónde está?" → ["¿Dónde", "está", "?"].
    Case is kept.
    """
    if not isinstance(line, str):
        raise TypeError(f"line must be a str (one sentence); got {type(line).__name__} "
                        f"{_preview(line)}")
    line = line.rstrip()
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for escaped, char in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
            line = line.replace(escaped, char)
    line = f" {line} "
    for pattern, replacement in _13A_RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def ngrams(words: Sequence[str], n: int) -> Counter:
    """How often each n-gram (a tuple of n consecutive words) occurs in ``words``; n ≥ 1."""
    validate.positive_int(n, "n")  # n = 0 would count len(words) + 1 empty n-grams
    if isinstance(words, (str, bytes)):
        raise TypeError(f"words must be a list of words, not a str (its n-grams would be of "
                        f"characters): split it first, tokenize_13a({_preview(words)})")
    return Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))


# ----------------------------------------------------------------------------- input checks

def _check_corpus(hypotheses, references) -> list[list[str]]:
    """Validate the inputs; return the references as one list of strings per hypothesis."""
    for name, value in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise TypeError(f"{name} must be a list of strings (one per sentence); got "
                            f"{type(value).__name__} {_preview(value)}")
    if len(hypotheses) != len(references):
        hint = ""
        if references and all(not isinstance(r, str) and len(r) == len(hypotheses) for r in references):
            hint = (" (these look like sacrebleu's reference streams, [[ref of every sentence], ...]: "
                    "here references[i] is the reference, or list of references, of hypotheses[i]: "
                    "pass list(zip(*streams)))")
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references: "
                         f"each hypothesis needs its reference(s){hint}")
    if len(hypotheses) == 0:
        raise ValueError("the corpus is empty: BLEU needs at least one hypothesis")
    for i, hyp in enumerate(hypotheses):
        if not isinstance(hyp, str):
            raise TypeError(f"hypotheses[{i}] must be a str; got {type(hyp).__name__} {_preview(hyp)}")
    refs = []
    for i, ref in enumerate(references):
        group = [ref] if isinstance(ref, str) else ref
        if not isinstance(group, Sequence) or len(group) == 0:
            raise (ValueError if isinstance(group, Sequence) else TypeError)(
                f"references[{i}] must be a str or a non-empty list of str; got {_preview(ref)}")
        for r in group:
            if not isinstance(r, str):
                raise TypeError(f"references[{i}] holds a {type(r).__name__} ({_preview(r)}); "
                                f"references must be strings")
        refs.append(list(group))
    return refs


def _preview(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ----------------------------------------------------------------------------- BLEU

@dataclass(frozen=True)
class BLEUScore:
    """Corpus BLEU and everything it is made of.

    score       BLEU, 0-100
    precisions  p_1..p_4 in percent (after smoothing, as sacrebleu reports them)
    matches     clipped n-gram matches per order;  totals: hypothesis n-grams per order
    bp          brevity penalty, 0-1
    hyp_len     c, total words of the hypotheses;  ref_len: r, total words of the closest references
    """

    score: float
    precisions: tuple[float, ...]
    bp: float
    hyp_len: int
    ref_len: int
    matches: tuple[int, ...]
    totals: tuple[int, ...]

    @property
    def ratio(self) -> float:
        """c / r: below 1 the hypotheses are too short and the brevity penalty applies."""
        return self.hyp_len / self.ref_len if self.ref_len else 0.0

    def __str__(self):
        prec = "/".join(f"{p:.1f}" for p in self.precisions)
        return (f"BLEU = {self.score:.2f} {prec} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
                f"hyp_len = {self.hyp_len} ref_len = {self.ref_len})")


def closest_ref_length(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length nearest the hypothesis length; on a tie, the shorter one."""
    validate.integer(hyp_len, "hyp_len", minimum=0)
    ref_lens = list(ref_lens)
    if not ref_lens:
        raise ValueError("ref_lens is empty: a hypothesis needs at least one reference")
    for i, r in enumerate(ref_lens):
        validate.integer(r, f"ref_lens[{i}]", minimum=0)
    return min(ref_lens, key=lambda r: (abs(r - hyp_len), r))


def sentence_stats(hypothesis: str, references: Sequence[str]) -> list[int]:
    """BLEU's sufficient statistics of one sentence: [c, r, matches_1..4, totals_1..4].

    A corpus's statistics are the sums of its sentences' statistics, which is what makes
    corpus BLEU (and resampling sentences) cheap. ``references`` may be one str (one reference),
    as for :func:`sentence_bleu`.
    """
    if not isinstance(hypothesis, str):
        raise TypeError(f"hypothesis must be a str; got {type(hypothesis).__name__} "
                        f"{_preview(hypothesis)}")
    if isinstance(references, str):
        references = [references]
    refs = [tokenize_13a(r) for r in references]
    if not refs:
        raise ValueError("references is empty: a hypothesis needs at least one reference")
    hyp = tokenize_13a(hypothesis)
    matches, totals = [], []
    for n in range(1, MAX_ORDER + 1):
        hyp_counts = ngrams(hyp, n)
        max_ref_counts = Counter()  # for each n-gram, the most any one reference has of it
        for ref in refs:
            max_ref_counts |= ngrams(ref, n)  # | keeps the larger count
        matches.append(sum(min(count, max_ref_counts[g]) for g, count in hyp_counts.items()))
        totals.append(max(len(hyp) - n + 1, 0))
    return [len(hyp), closest_ref_length(len(hyp), [len(r) for r in refs]), *matches, *totals]


def bleu_from_stats(stats: Sequence[int], smooth: str = "exp") -> BLEUScore:
    """BLEU from summed statistics [c, r, matches_1..4, totals_1..4] (see :func:`sentence_stats`).

    smooth: "exp" (sacrebleu's default: the k-th order with 0 matches gets precision
    1 / (2^k · total)) or "none" (any order with 0 matches makes BLEU 0).
    Statistics no corpus can give (a negative count, matches_n > totals_n, totals_1 ≠ c, totals
    growing with n, matches of order n + 1 when there are none of order n, not 10 of them) are
    a ValueError naming the entry, not a score.
    """
    if smooth not in ("exp", "none"):
        raise ValueError(f"smooth must be 'exp' or 'none'; got {smooth!r}")
    # Summed over sentences of c_i words, totals_n = Σ max(c_i - n + 1, 0): so totals_1 = c,
    # totals_n never grows with n, and matches_n ≤ totals_n.
    names = ("c", "r", *(f"matches_{n}" for n in range(1, MAX_ORDER + 1)),
             *(f"totals_{n}" for n in range(1, MAX_ORDER + 1)))
    if isinstance(stats, (str, bytes)) or not hasattr(stats, "__len__"):
        raise TypeError(f"stats must be a sequence of {len(names)} ints [c, r, matches_1..4, "
                        f"totals_1..4]; got {_preview(stats)}")
    if len(stats) != len(names):
        raise ValueError(f"stats must hold {len(names)} numbers [c, r, matches_1..4, totals_1..4]; "
                         f"got {len(stats)}: {_preview(list(stats))}")
    values = [validate.integer(v, f"stats[{i}] ({name})", minimum=0)
              for i, (name, v) in enumerate(zip(names, stats))]
    c, r = values[0], values[1]
    matches, totals = tuple(values[2:2 + MAX_ORDER]), tuple(values[2 + MAX_ORDER:])

    def m_at(n):  # "matches_2 (stats[3])"
        return f"matches_{n + 1} (stats[{2 + n}])"

    def t_at(n):
        return f"totals_{n + 1} (stats[{2 + MAX_ORDER + n}])"

    if totals[0] != c:
        raise ValueError(f"impossible BLEU statistics: {t_at(0)} = {totals[0]} but c (stats[0]) = "
                         f"{c}: hypotheses of c words hold exactly c unigrams")
    for n in range(MAX_ORDER):
        if n and totals[n] > totals[n - 1]:
            raise ValueError(f"impossible BLEU statistics: {t_at(n)} = {totals[n]} > {t_at(n - 1)} "
                             f"= {totals[n - 1]}: longer n-grams are never more numerous")
        if matches[n] > totals[n]:
            raise ValueError(f"impossible BLEU statistics: {m_at(n)} = {matches[n]} > {t_at(n)} = "
                             f"{totals[n]}: more n-grams matched than the hypotheses hold")
        if n and matches[n] and not matches[n - 1]:
            raise ValueError(f"impossible BLEU statistics: {m_at(n)} = {matches[n]} but "
                             f"{m_at(n - 1)} = 0: a matched n-gram contains matched shorter ones")
    bp = 1.0 if c > r else (math.exp(1 - r / c) if c > 0 else 0.0)
    precisions = [0.0] * MAX_ORDER
    if not any(matches):  # nothing in common at all: BLEU is 0
        return BLEUScore(0.0, tuple(precisions), bp, c, r, matches, totals)
    halvings = 1
    for n in range(MAX_ORDER):
        if totals[n] == 0:  # hypotheses too short to have any n-gram of this order: p_n stays 0
            break
        if matches[n] > 0:
            precisions[n] = 100.0 * matches[n] / totals[n]
        elif smooth == "exp":
            halvings *= 2
            precisions[n] = 100.0 / (halvings * totals[n])
    if min(precisions) == 0.0:  # log 0: the geometric mean is 0
        return BLEUScore(0.0, tuple(precisions), bp, c, r, matches, totals)
    log_mean = sum(math.log(p) for p in precisions) / MAX_ORDER  # log of the geometric mean (in %)
    return BLEUScore(bp * math.exp(log_mean), tuple(precisions), bp, c, r, matches, totals)


def corpus_stats(hypotheses: Sequence[str], references: Sequence) -> np.ndarray:
    """Per-sentence statistics, (sentences, 2 + 2·4) ints; see :func:`sentence_stats`."""
    refs = _check_corpus(hypotheses, references)
    return np.array([sentence_stats(h, r) for h, r in zip(hypotheses, refs)], dtype=np.int64)


def corpus_bleu(hypotheses: Sequence[str], references: Sequence, smooth: str = "exp") -> BLEUScore:
    """Corpus BLEU of detokenized ``hypotheses`` against ``references``.

    references[i] belongs to hypotheses[i]: one string, or a list of strings when a sentence has
    several references (their number may vary from sentence to sentence). This is the transpose
    of sacrebleu's layout, which takes reference *streams*: ``[[ref_1 of every sentence], ...]``.
    Statistics are summed over the corpus before dividing: corpus BLEU is not the mean of
    sentence BLEUs.
    """
    return bleu_from_stats(corpus_stats(hypotheses, references).sum(axis=0), smooth)


def sentence_bleu(hypothesis: str, references, smooth: str = "exp") -> BLEUScore:
    """BLEU of one sentence (a corpus of one). Noisy: most short sentences have no 4-gram match."""
    return corpus_bleu([hypothesis], [references], smooth)


# ----------------------------------------------------------------------------- bootstrap

class Interval(NamedTuple):
    """A confidence interval for BLEU: ``low, high = bootstrap_interval(...)``."""

    low: float
    high: float


def _resamples(n_sentences: int, n: int, seed):
    """n draws of n_sentences sentence indices, with replacement (one generator, seeded)."""
    validate.positive_int(n, "n (the number of resamples)")  # checked now, not at the first draw
    if seed is not None:
        validate.integer(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, n_sentences, size=n_sentences) for _ in range(n))


def bootstrap_interval(hypotheses: Sequence[str], references: Sequence, n: int = 1000, seed=0,
                       confidence: float = 0.95) -> Interval:
    """Percentile bootstrap interval for corpus BLEU (Koehn, 2004).

    Draw the test set again n times (as many sentences, with replacement), score each draw, and
    keep the middle ``confidence`` of the scores: for 95%, the 2.5th and 97.5th percentiles. The
    interval narrows roughly as 1/√sentences.
    """
    validate.number(confidence, "confidence", low=0.0, high=1.0, low_open=True, high_open=True)
    stats = corpus_stats(hypotheses, references)
    scores = [bleu_from_stats(stats[idx].sum(axis=0)).score for idx in _resamples(len(stats), n, seed)]
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(scores, [tail, 100 - tail])
    return Interval(float(low), float(high))


@dataclass(frozen=True)
class PairedBootstrap:
    """Paired bootstrap of system A against B on the same sentences.

    bleu_a, bleu_b  corpus BLEU of each on the whole test set
    wins            fraction of resampled test sets on which A scored higher than B
    p_value         1 - wins: how often A failed to beat B. Below 0.05, "A is better than B"
                    holds with 95% confidence in Koehn's sense.
    """

    bleu_a: float
    bleu_b: float
    wins: float
    n: int

    @property
    def p_value(self) -> float:
        return 1.0 - self.wins


def paired_bootstrap(hypotheses_a: Sequence[str], hypotheses_b: Sequence[str], references: Sequence,
                     n: int = 1000, seed=0) -> PairedBootstrap:
    """How often system A beats system B when the test set is drawn again (Koehn, 2004).

    Each resample picks the same sentences for both systems (the comparison is paired), so the
    difference between the systems, not the difficulty of the draw, decides the winner.
    """
    if isinstance(hypotheses_a, str) or isinstance(hypotheses_b, str):
        raise TypeError("hypotheses_a and hypotheses_b must be lists of strings, not a single str")
    if len(hypotheses_a) != len(hypotheses_b):
        raise ValueError(f"system A has {len(hypotheses_a)} hypotheses but system B has "
                         f"{len(hypotheses_b)}: both must translate the same sentences")
    stats_a = corpus_stats(hypotheses_a, references)
    stats_b = corpus_stats(hypotheses_b, references)
    wins = sum(bleu_from_stats(stats_a[idx].sum(axis=0)).score > bleu_from_stats(stats_b[idx].sum(axis=0)).score
               for idx in _resamples(len(stats_a), n, seed))
    return PairedBootstrap(bleu_from_stats(stats_a.sum(axis=0)).score, bleu_from_stats(stats_b.sum(axis=0)).score,
                           wins / n, n)


# ----------------------------------------------------------------------------- by length

LENGTH_BUCKETS = ((1, 8), (9, 12), (13, 18), (19, None))  # source words, inclusive; None: no top
CUT_SHORT = 0.7  # an output under 70% of its shortest reference's words was cut short


def word_count(text: str) -> int:
    """Whitespace-separated words of ``text``: how the book measures a sentence's length."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__} {_preview(text)}")
    return len(text.split())


def bucket_label(bucket: tuple[int, int | None]) -> str:
    """(9, 12) -> "9–12", (19, None) -> "19+", (1, 8) -> "≤ 8". The ends are ints ≥ 1, the high
    one (or None) not below the low one."""
    if isinstance(bucket, (str, bytes)) or not hasattr(bucket, "__len__") or len(bucket) != 2:
        raise TypeError(f"bucket must be a (low, high) pair, high None for no end; got "
                        f"{_preview(bucket)}")
    lo, hi = bucket
    validate.positive_int(lo, "bucket's low end")
    if hi is not None and validate.positive_int(hi, "bucket's high end") < lo:
        raise ValueError(f"bucket {(lo, hi)} is empty: its high end is below its low end")
    if hi is None:
        return f"{lo}+"
    return f"≤ {hi}" if lo <= 1 else f"{lo}–{hi}"


def _check_buckets(buckets) -> tuple:
    buckets = tuple(tuple(b) for b in buckets)
    for i, (lo, hi) in enumerate(buckets):
        validate.positive_int(lo, f"buckets[{i}] low end")
        if hi is not None and validate.positive_int(hi, f"buckets[{i}] high end") < lo:
            raise ValueError(f"buckets[{i}] = {(lo, hi)} is empty: its high end is below its low end")
        if i and (buckets[i - 1][1] is None or buckets[i - 1][1] >= lo):
            raise ValueError(f"buckets must be in increasing order without overlap; got "
                             f"{buckets[i - 1]} then {(lo, hi)}")
    if not buckets:
        raise ValueError("buckets is empty")
    return buckets


def length_bucket(n_words: int, buckets=LENGTH_BUCKETS) -> tuple[int, int | None] | None:
    """The bucket (lo, hi) that holds a sentence of ``n_words`` words, or None if none does."""
    validate.integer(n_words, "n_words", minimum=0)
    for lo, hi in _check_buckets(buckets):
        if n_words >= lo and (hi is None or n_words <= hi):
            return (lo, hi)
    return None


def is_cut_short(hypothesis: str, references, ratio: float = CUT_SHORT) -> bool:
    """True when ``hypothesis`` has fewer than ``ratio`` × the words of the *shortest* reference:
    so short that no reference excuses it, the mark of a translation that stopped early."""
    validate.number(ratio, "ratio", low=0.0, high=1.0, low_open=True)
    refs = _check_corpus([hypothesis], [references])[0]
    return word_count(hypothesis) < ratio * min(word_count(r) for r in refs)


def cut_short_rate(hypotheses: Sequence[str], references: Sequence, ratio: float = CUT_SHORT) -> float:
    """The share of ``hypotheses`` that :func:`is_cut_short` (0-1)."""
    refs = _check_corpus(hypotheses, references)
    return sum(is_cut_short(h, r, ratio) for h, r in zip(hypotheses, refs)) / len(hypotheses)


@dataclass(frozen=True)
class LengthRow:
    """One row of :func:`bleu_by_length`: a bucket of source lengths and how its outputs score.

    bucket: (lo, hi) source words; label: "9–12"; sentences: how many; bleu: corpus BLEU of the
    bucket; cut_short: share of outputs cut short (0-1); ratio: output words / words of the
    closest references (BLEU's c / r)."""

    bucket: tuple
    label: str
    sentences: int
    bleu: BLEUScore
    cut_short: float

    @property
    def ratio(self) -> float:
        return self.bleu.ratio


def bleu_by_length(sources: Sequence[str], hypotheses: Sequence[str], references: Sequence,
                   buckets=LENGTH_BUCKETS, ratio: float = CUT_SHORT) -> list[LengthRow]:
    """Corpus BLEU and cut-short rate of each bucket of source lengths (words of ``sources[i]``,
    the sentence that was translated into ``hypotheses[i]``). Buckets with no sentence are left
    out; sentences in no bucket are ignored."""
    refs = _check_corpus(hypotheses, references)
    if isinstance(sources, str) or len(sources) != len(hypotheses):
        raise ValueError(f"sources must be a list with one sentence per hypothesis; got "
                         f"{_preview(sources)} for {len(hypotheses)} hypotheses")
    buckets = _check_buckets(buckets)
    rows = []
    for bucket in buckets:
        idx = [i for i, s in enumerate(sources) if length_bucket(word_count(s), (bucket,))]
        if idx:
            hyps, group = [hypotheses[i] for i in idx], [refs[i] for i in idx]
            rows.append(LengthRow(bucket, bucket_label(bucket), len(idx), corpus_bleu(hyps, group),
                                  cut_short_rate(hyps, group, ratio)))
    return rows
