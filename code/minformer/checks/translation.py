"""Checker for chapter 13 (training a translator): BLEU's clipped n-gram precision.

``fn(hypothesis, references, n) -> (matches, total)``: an n-gram is a tuple of n consecutive
tokens, compared token by token (no joined strings, no substrings, no lowercasing); each
n-gram of the hypothesis counts at most as often as it occurs in the single reference that has
it most often. The fixed cases each separate one typical mistake, and the random cases plant
the same traps (tokens that are substrings of others, tokens whose concatenations collide,
tokens holding a space, a hyphen or an underscore, case variants, repeated words, several
references, hypotheses shorter than n), so that a wrong answer fails on any seed. The tokens
are shown as Python lists in the messages: a token may hold a space.
"""

import itertools
from collections import Counter

import numpy as np

from ._core import call, checker, fail


def _grams(words, n):
    """The n-grams of ``words`` as tuples, in order."""
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def _clipped(hyp, refs, n, key=tuple, combine="max"):
    """Clipped matches with n-grams identified by ``key`` and the per-n-gram clip taken as
    the ``combine`` of the references' counts: the right answer for the defaults."""
    counts = Counter(key(g) for g in _grams(hyp, n))
    clip = None
    for ref in refs:
        ref_counts = Counter(key(g) for g in _grams(ref, n))
        if clip is None:
            clip = ref_counts
        elif combine == "max":
            clip = clip | ref_counts
        elif combine == "sum":
            clip = clip + ref_counts
        else:  # "min"
            clip = clip & ref_counts
    clip = clip or Counter()
    return sum(min(c, clip[k]) for k, c in counts.items())


def _reference(hyp, refs, n):
    """(clipped matches, total) of the n-grams of hyp against refs."""
    return _clipped(hyp, refs, n), max(len(hyp) - n + 1, 0)


# ---------------------------------------------------------------------------- known mistakes

def _joined(sep):
    return lambda g: sep.join(g)


def _substring_count(hyp, refs, n, sep):
    texts = [sep.join(r) for r in refs]
    return sum(min(c, max(t.count(sep.join(g)) for t in texts))
               for g, c in Counter(_grams(hyp, n)).items())


def _substring_in(hyp, refs, n, sep, pad=""):
    texts = [f"{pad}{sep.join(r)}{pad}" for r in refs]
    return sum(any(f"{pad}{sep.join(g)}{pad}" in t for t in texts) for g in _grams(hyp, n))


def _padded_count(hyp, refs, n):
    texts = [f" {' '.join(r)} " for r in refs]
    return sum(min(c, max(t.count(f" {' '.join(g)} ") for t in texts))
               for g, c in Counter(_grams(hyp, n)).items())


def _collision(hyp, refs, n, sep):
    """An n-gram of the hypothesis and a different one of a reference with the same
    ``sep.join``, for the message."""
    for g in _grams(hyp, n):
        for ref in refs:
            for h in _grams(ref, n):
                if g != h and sep.join(g) == sep.join(h):
                    return g, h
    return None


def _substring_example(hyp, refs, n):
    """An n-gram of the hypothesis found inside a reference's text but not among its
    n-grams, for the message."""
    for g in _grams(hyp, n):
        for ref in refs:
            if g not in _grams(ref, n):
                for sep in (" ", ""):
                    if sep.join(g) in sep.join(ref):
                        return g, ref
    return None


def _joined_message(sep, hyp, refs, n):
    pair = _collision(hyp, refs, n, sep)
    example = (f": here {pair[0]!r} and {pair[1]!r} both become {sep.join(pair[0])!r}"
               if pair else "")
    if sep == " ":
        return ("you compared n-grams as space-joined strings, but a token may itself contain "
                "a space (a tokenizer can keep 'New York' as one token), so ('New York', 'city') "
                f"and ('New', 'York city') look the same{example}. Tokens are compared whole, as "
                "tuples: key each n-gram by tuple(words[i:i + n]), not by a joined string")
    return (f"you keyed n-grams by the joined string {sep!r}.join(gram), so different token "
            f"sequences collide{example}. Tokens are compared whole, as tuples: key each n-gram "
            "by tuple(words[i:i + n]), not by a joined string")


def _substring_message(hyp, refs, n):
    ex = _substring_example(hyp, refs, n)
    example = (f": here {ex[0]!r} is found inside the text of {ex[1]!r}, which does not "
               "contain that n-gram" if ex else "")
    return ("you matched n-grams as substrings of the reference text ('he' is inside 'the', "
            f"'at' inside 'cat'){example}. An n-gram matches only a whole n-gram of the "
            "reference, token by token: count the reference's n-grams as tuples and look the "
            "hypothesis's n-grams up among them")


_CLIP = "clip each n-gram's count at the most times it occurs in one reference"
_SEPARATORS = ("", " ", "-", "_")  # the random cases hold tokens that make each of them collide


def _matches_mistakes(hyp, refs, n):
    """[(matches a known mistake returns, the same count without its string slip, a short name,
    what to say)]. A string slip (joined keys, substrings) counts only where it changes the
    count: an answer that also forgets to clip is named for that where the strings agree."""
    union = set()
    for ref in refs:
        union |= set(_grams(ref, n))
    grams = _grams(hyp, n)
    right = _clipped(hyp, refs, n)
    unclipped = sum(g in union for g in grams)
    mistakes = [
        (_clipped([w.lower() for w in hyp], [[w.lower() for w in r] for r in refs], n), right,
         "lowercasing the tokens",
         "you lowercased the tokens, but 'The' and 'the' are different tokens: BLEU compares "
         "tokens exactly as given (sacrebleu is case-sensitive by default), so leave the case "
         "alone"),
    ]
    for sep in _SEPARATORS:
        mistakes.append((_clipped(hyp, refs, n, key=_joined(sep)), right,
                         f"keying n-grams by {sep!r}.join(gram)",
                         lambda sep=sep: _joined_message(sep, hyp, refs, n)))
    space = lambda: _joined_message(" ", hyp, refs, n)  # noqa: E731
    substring = lambda: _substring_message(hyp, refs, n)  # noqa: E731
    mistakes += [
        (_padded_count(hyp, refs, n), right, "keying n-grams by ' '.join(gram)", space),
        (_substring_in(hyp, refs, n, " ", pad=" "), unclipped,
         "keying n-grams by ' '.join(gram)", lambda: f"{space()}; also {_CLIP}"),
    ]
    for sep in (" ", ""):
        mistakes += [(_substring_count(hyp, refs, n, sep), right,
                      "matching substrings of the references' text", substring),
                     (_substring_in(hyp, refs, n, sep), unclipped,
                      "matching substrings of the references' text",
                      lambda: f"{substring()}; also {_CLIP}")]
    mistakes += [
        (unclipped, right, "not clipping",
         f"you counted every occurrence of an n-gram that appears in a reference; {_CLIP}"),
        (_clipped(hyp, refs, n, combine="sum"), right, "clipping at the sum over references",
         "you clipped each n-gram at its count summed over all the references (Counter +); "
         "clip it at the most times it occurs in any single reference: the max over the "
         "references (Counter |)"),
        (_clipped(hyp, [[w for r in refs for w in r]], n), right,
         "joining the references into one",
         "you joined the references into one long sentence; clip each n-gram at the most times "
         "it occurs in any single reference (the max over the references, Counter |), and no "
         "n-gram runs across two references"),
        (len(set(grams) & union), right, "counting each distinct n-gram once",
         "you counted each distinct n-gram once (a set); a repeated n-gram earns as many "
         "matches as the best reference has of it: clip its count, min(count in the "
         "hypothesis, max count in one reference)"),
        (_clipped(hyp, refs, n, combine="min"), right, "clipping at the minimum over references",
         "you took each n-gram's smallest count over the references (Counter &), so an n-gram "
         "missing from one reference never matches; take the largest (Counter |): an n-gram "
         "counts as often as the single reference that has it most often"),
        (max(_clipped(hyp, [r], n) for r in refs), right,
         "keeping the best reference for the whole sentence",
         "you kept the one reference with the most matches for the whole sentence; the clip "
         "is per n-gram: each n-gram's count is clipped at its maximum over the references, "
         "which may come from different references for different n-grams"),
        (_clipped(hyp, refs[:1], n), right, "using only the first reference",
         "you used only the first reference; every reference counts: clip each n-gram at the "
         "most times it occurs in any one of them"),
    ]
    return mistakes


def _diagnose_matches(got, want, hyp, refs, n):
    """What to say after 'matches is got, expected want': the mistake whose count the answer
    equals, when exactly one does; the candidates, when several do."""
    found = {}
    for value, base, name, message in _matches_mistakes(hyp, refs, n):
        if got == value != want and value != base:
            found.setdefault(name, message)
    if len(found) == 1:
        message = next(iter(found.values()))
        return f" — {message() if callable(message) else message}"
    if found:
        return (" — several slips give this count here: " + "; ".join(found) + ". Compare "
                "tokens whole, as tuples, and clip each n-gram's count at the most times it "
                "occurs in any single reference")
    return ""


def _total_hint(got, hyp, refs, n):
    """What to say after 'total is got[1], expected ...', from the whole answer got."""
    L, grams = len(hyp), _grams(hyp, n)
    short = [[tuple(w[i:i + n]) for i in range(len(w) - n)] for w in (hyp, *refs)]
    clip = Counter()
    for ref in short[1:]:
        clip |= Counter(ref)
    off_by_one = (sum(min(c, clip[g]) for g, c in Counter(short[0]).items()), len(short[0]))
    if got[1] == L - n + 1 < 0:
        return f" (L - n + 1 = {L - n + 1} is negative here: clamp it at 0)"
    if got == off_by_one or got[1] == len(short[0]) != len(set(grams)):
        return (" — an off-by-one: the last n-gram is missing; the n-grams start at i in "
                "range(len(words) - n + 1)")
    if got[1] == len(set(grams)) != len(grams):
        return " — you counted distinct n-grams; count every n-gram, repeated ones included"
    if got[1] == L != len(grams):
        return " — that is the number of words, not of n-grams"
    return ""


# ---------------------------------------------------------------------------- the cases

FIXED = [  # (hypothesis, references, n, what the case is about). Each case after the first
    # separates one or two typical mistakes from all the others, and comes before any case
    # where that mistake gives the same count as another one, so that the first case a wrong
    # answer fails names its mistake (tests/test_checks_translation.py checks each one).
    ("the cat is on the mat".split(), ["the cat sat on the mat".split()], 1, "one reference"),
    ("he sat at home".split(), ["the cat sat at home".split()], 1,
     "words inside other words ('he' in 'the', 'at' in 'cat')"),
    ("he sat on it".split(), ["the cat sat on it".split()], 2,
     "bigrams inside other text ('he sat' in 'the cat sat')"),
    ("The cat saw The dog".split(), ["the cat saw the dog".split()], 1,
     "case matters ('The' is not 'the')"),
    (["ab", "c", "he", "sat", "at", "home"], [["a", "bc", "the", "sat", "cat", "home"]], 2,
     "tokens whose concatenations collide ('ab' + 'c' and 'a' + 'bc')"),
    (["New York", "is", "he", "at"], [["New", "York", "is", "the", "cat"]], 1,
     "a token that contains a space ('New York' as one token)"),
    (["New York", "city", "he", "sat", "at", "home"],
     [["New", "York city", "the", "sat", "cat", "home"]], 2,
     "tokens that contain a space ('New York' + 'city' and 'New' + 'York city')"),
    (["e-mail", "box", "he", "sat", "at", "home"],
     [["e", "mail-box", "the", "sat", "cat", "home"]], 2, "tokens with hyphens"),
    (["snake_case", "x", "he", "sat", "at", "home"],
     [["snake", "case_x", "the", "sat", "cat", "home"]], 2, "tokens with underscores"),
    ("x y z".split(), ["x y".split(), "z".split()], 2,
     "two references (no n-gram runs across them)"),
    ("a b c d".split(), ["a b".split(), "a c d".split()], 1,
     "each word's best reference differs"),
    ("a b a b a b".split(), ["b a".split(), "b a b".split()], 2,
     "repeated word pairs, two references"),
    ("the the the the the the the".split(), ["the cat is on the mat".split(),
                                             "there is a cat on the mat".split()], 1,
     "a repeated word (Papineni et al.'s example)"),
    ("the cat is on the mat".split(), ["the cat sat on the mat".split()], 2, "bigrams"),
    ("a b a b a b".split(), ["a b c".split(), "a b a b".split()], 2,
     "a bigram clipped by its count in the best reference"),
    ("el gato".split(), ["el gato negro".split()], 4, "a hypothesis shorter than n"),
    ([], ["el gato".split()], 1, "an empty hypothesis"),
]

_WORDS = ["the", "cat", "sat", "on", "mat", "a", "is", "there", "he", "at", "then", "The"]
_TRAPS = [  # (hypothesis side, reference side): different tokens a wrong comparison confuses
    (["ab", "c"], ["a", "bc"]),  # "".join collides
    (["New York", "city"], ["New", "York city"]),  # " ".join collides
    (["New York"], ["New", "York"]),  # a padded " New York " is found in the reference's text
    (["e-mail", "box"], ["e", "mail-box"]),  # "-".join collides
    (["snake_case", "x"], ["snake", "case_x"]),  # "_".join collides
    (["he"], ["the"]),  # a substring (end of a word)
    (["at"], ["cat"]),
    (["the"], ["then"]),  # a substring (start of a word)
    (["The"], ["the"]),  # case
    (["the"], ["The"]),
]
_TRAP_WEIGHT = np.array([2.0, 2.0, 1.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0])  # joined keys
# need n ≥ 2 to show: their traps are drawn twice as often


def _random_case(rng):
    """A hypothesis and 1-3 references: noisy copies of one base sentence with repeated words,
    into which 3-5 traps of different kinds are inserted at the same places (the hypothesis
    gets one side of a trap, most references the other), so that each typical mistake changes
    the counts often; one case in four has a hypothesis of at most 2 words and n of 2 to 4."""
    base = [_WORDS[i] for i in rng.integers(0, len(_WORDS) - 1, size=int(rng.integers(3, 10)))]
    u = rng.random()
    refs = [[] for _ in range(1 if u < 0.2 else 2 if u < 0.6 else 3)]
    hyp = []
    keys = rng.exponential(size=len(_TRAPS)) / _TRAP_WEIGHT  # weighted, without replacement
    kinds = np.argsort(keys)[:int(rng.integers(3, 6))]
    at = rng.integers(0, len(base) + 1, size=len(kinds))
    noise = rng.random(size=(len(base) + len(kinds), 1 + len(refs)))
    for i in range(len(base) + 1):
        for j in np.flatnonzero(at == i):
            h, r = _TRAPS[int(kinds[j])]
            if noise[len(base) + j, 0] < 0.3:
                h, r = r, h
            hyp += h
            for ref, v in zip(refs, noise[len(base) + j, 1:]):
                ref += r if v < 0.8 else h
        if i == len(base):
            break
        word = base[i]
        hyp += [word] * (int(rng.integers(2, 4)) if noise[i, 0] < 0.3 else 1)
        for ref, v in zip(refs, noise[i, 1:]):
            if v < 0.1:
                ref.append(_WORDS[int(rng.integers(len(_WORDS)))])
            elif v < 0.2:
                ref += [word, word]
            elif v >= 0.25:
                ref.append(word)  # else the reference drops it
    if rng.random() < 0.25:  # shorter than n, or nearly
        return hyp[:int(rng.integers(0, 3))], refs, int(rng.integers(2, 5))
    u = rng.random()
    return hyp, refs, 1 if u < 0.3 else 2 if u < 0.7 else 3 if u < 0.9 else 4


N_RANDOM = 40


def _random_cases(rng, seed):
    """The random cases, drawn one by one (none at all when a fixed case fails first)."""
    what = f"a random case (seed {seed})"
    for _ in range(N_RANDOM):
        yield (*_random_case(rng), what)


@checker("clipped n-gram precision")
def check_clipped_precision(fn, rng, seed):
    """``fn(hypothesis, references, n) -> (matches, total)``: hypothesis a list of tokens,
    references a list of token lists; an n-gram is a tuple of n consecutive tokens, compared
    whole (no joined strings, no substrings, case kept); matches counts each n-gram of the
    hypothesis at most as often as it occurs in any single reference; total is the number of
    n-grams in the hypothesis."""
    n_cases = 0
    for hyp, refs, n, what in itertools.chain(FIXED, _random_cases(rng, seed)):
        n_cases += 1
        where = f"{what}: hypothesis {list(hyp)}, references {[list(r) for r in refs]}, n={n}"
        out = call(fn, list(hyp), [list(r) for r in refs], n,
                   what=getattr(fn, "__name__", "your function"), where=where)
        if not (isinstance(out, tuple) and len(out) == 2):
            fail(f"on {where}: return a pair (matches, total); got {out!r}")
        want = _reference(hyp, refs, n)
        try:
            got = tuple(int(v) for v in out)
        except (TypeError, ValueError):
            fail(f"on {where}: return a pair of integers (matches, total); got {out!r}")
        if got == want:
            continue
        if got[1] != want[1]:
            fail(f"on {where}: total is {got[1]}, expected {want[1]}: a sentence of L words has "
                 f"max(L - n + 1, 0) n-grams{_total_hint(got, hyp, refs, n)}")
        fail(f"on {where}: matches is {got[0]}, expected {want[0]}"
             f"{_diagnose_matches(got[0], want[0], hyp, refs, n)}")
    return n_cases
