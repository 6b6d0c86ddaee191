"""Checker for chapter 13 (training a translator): BLEU's clipped n-gram precision."""

from collections import Counter

from ._core import call, checker, fail


def _reference(hyp, refs, n):
    """(clipped matches, total) of the n-grams of hyp against refs."""
    counts = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
    most = Counter()
    for ref in refs:
        most |= Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))
    return sum(min(c, most[g]) for g, c in counts.items()), max(len(hyp) - n + 1, 0)


FIXED = [  # (hypothesis, references, n, what the case is about)
    ("the cat is on the mat".split(), ["the cat sat on the mat".split()], 1, "one reference"),
    ("the the the the the the the".split(), ["the cat is on the mat".split(),
                                             "there is a cat on the mat".split()], 1,
     "a repeated word (Papineni et al.'s example)"),
    ("the cat is on the mat".split(), ["the cat sat on the mat".split()], 2, "bigrams"),
    ("a b a b a b".split(), ["a b c".split(), "a b a b".split()], 2,
     "a bigram clipped by its count in the best reference"),
    ("el gato".split(), ["el gato negro".split()], 4, "a hypothesis shorter than n"),
    ([], ["el gato".split()], 1, "an empty hypothesis"),
]


def _case(rng):
    words = list("abcdefg")
    hyp = [str(w) for w in rng.choice(words, size=int(rng.integers(0, 12)))]
    refs = [[str(w) for w in rng.choice(words, size=int(rng.integers(1, 12)))]
            for _ in range(int(rng.integers(1, 4)))]
    return hyp, refs, int(rng.integers(1, 5))


@checker("clipped n-gram precision")
def check_clipped_precision(fn, rng, seed):
    """``fn(hypothesis, references, n) -> (matches, total)``: hypothesis a list of words,
    references a list of word lists; matches counts each n-gram of the hypothesis at most as
    often as it occurs in any single reference; total is the number of n-grams in the
    hypothesis."""
    cases = [(h, r, n, what) for h, r, n, what in FIXED]
    cases += [(*_case(rng), f"a random case (seed {seed})") for _ in range(30)]
    for hyp, refs, n, what in cases:
        where = f"{what}: hypothesis {' '.join(hyp)!r}, references {[' '.join(r) for r in refs]}, n={n}"
        out = call(fn, hyp, refs, n, what=getattr(fn, "__name__", "your function"), where=where)
        if not (isinstance(out, tuple) and len(out) == 2):
            fail(f"on {where}: return a pair (matches, total); got {out!r}")
        want = _reference(hyp, refs, n)
        got = tuple(int(v) for v in out)
        if got == want:
            continue
        if got[1] != want[1]:
            fail(f"on {where}: total is {got[1]}, expected {want[1]}: a sentence of L words has "
                 f"max(L - n + 1, 0) n-grams")
        unclipped = sum(c for g, c in Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1)).items()
                        if any(g == tuple(r[i:i + n]) for r in refs for i in range(len(r) - n + 1)))
        hint = ""
        if got[0] == unclipped and unclipped != want[0]:
            hint = (" — you counted every occurrence of an n-gram that appears in a reference; "
                    "clip each n-gram's count at the most times it occurs in one reference")
        fail(f"on {where}: matches is {got[0]}, expected {want[0]}{hint}")
    return len(cases)
