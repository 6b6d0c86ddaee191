"""Checkers for chapter 10: counting adjacent pairs for BPE training, and encoding a word by
replaying learned merges.

Symbols are strings (``"p"``, ``" pe"``, ``"ck"``); a word is a tuple or list of symbols; a merge
is a pair of symbols ``(a, b)`` that becomes the symbol ``a + b``.
"""

from collections import Counter
from itertools import pairwise

import numpy as np

from ..tokenizer import BPETokenizer, pretokenize
from ._core import call, checker, fail, random_name

# A small self-contained corpus for the "real merges" cases (ASCII, so characters = bytes).
_CORPUS = [
    "Peter Piper picked a peck of pickled peppers.",
    "A peck of pickled peppers Peter Piper picked.",
    "She sells sea shells by the sea shore; the shells she sells are sea shells.",
    "How much wood would a woodchuck chuck if a woodchuck could chuck wood?",
    "The lower the newest, the lowest the widest; newer and wider, lower and lowest.",
] * 3


def _show(x) -> str:
    return repr(x) if len(repr(x)) <= 120 else repr(x)[:117] + "..."


def _reference_counts(word_freq) -> Counter:
    counts = Counter()
    for word, f in word_freq.items():
        for pair in pairwise(word):
            counts[pair] += f
    return counts


def _as_counts(out, case: str) -> Counter:
    """The reader's answer as a Counter of pairs with non-zero counts, or a message."""
    if out is None:
        fail("count_pairs returned None: did you forget the `return` statement?")
    if not isinstance(out, dict):
        fail(f"on {case}: count_pairs returned a {type(out).__name__}; return a dict or "
             "Counter mapping each pair (a, b) to its count")
    for key, value in out.items():
        if isinstance(key, str):
            fail(f"on {case}: the key {key!r} is a string; key each count by the pair of "
                 "symbols as a tuple, e.g. ('p', 'e') — joined strings are ambiguous "
                 "('a' + 'bc' == 'ab' + 'c')")
        if not (isinstance(key, tuple) and len(key) == 2):
            fail(f"on {case}: the key {key!r} is not a pair (a, b) of adjacent symbols")
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            fail(f"on {case}: the count of {key!r} is {value!r}; counts are integers")
    return Counter({k: int(v) for k, v in out.items() if v != 0})


def _count_cases(rng, seed):
    peter = Counter(pretokenize(" ".join(_CORPUS[:2])))
    random_words = {}
    for _ in range(int(rng.integers(3, 8))):
        word = tuple(str(c) for c in rng.choice(list("abc"), size=int(rng.integers(1, 12))))
        random_words[word] = int(rng.integers(1, 20))
    return [
        ("the words low ×5, lower ×2, newest ×6, widest ×3",
         {tuple("low"): 5, tuple("lower"): 2, tuple("newest"): 6, tuple("widest"): 3}),
        ("one word 'aaa' seen once", {("a", "a", "a"): 1}),
        ("'banana' ×2 and 'ban' ×1", {tuple("banana"): 2, tuple("ban"): 1}),
        ("symbols that are already merged: (' pe', 'ck') ×3, (' p', 'i', 'ck', 'ed') ×2",
         {(" pe", "ck"): 3, (" p", "i", "ck", "ed"): 2}),
        ("one-symbol words only (no pairs at all)", {("a",): 4, ("ab",): 2}),
        ("an empty table", {}),
        ("the chunks of two Peter Piper sentences",
         {tuple(c): f for c, f in sorted(peter.items())}),
        ("'mississippi' ×3 (11 symbols) and 'miss' ×2",
         {tuple("mississippi"): 3, tuple("miss"): 2}),
        ("repeated pairs: 'abababab' ×2, 'aaaa' ×3, 'ba' ×1",
         {tuple("abababab"): 2, tuple("aaaa"): 3, tuple("ba"): 1}),
        ("a word seen 0 times ('xy' ×0) next to 'xyx' ×2", {("x", "y"): 0, tuple("xyx"): 2}),
        ("symbols whose concatenations collide: ('ab', 'c') ×1 and ('a', 'bc') ×4",
         {("ab", "c"): 1, ("a", "bc"): 4}),
        (random_name(seed, f"{len(random_words)} random words over 'abc'"), random_words),
    ]


@checker("count_pairs")
def check_count_pairs(fn, *, rng, seed) -> int:
    """Check ``fn(word_freq)``: ``word_freq`` maps each word (a tuple of symbols) to how often it
    occurs; the answer maps each pair ``(a, b)`` of adjacent symbols *inside* a word to the
    number of times it occurs in the corpus, i.e. summed over words and weighted by frequency."""
    cases = _count_cases(rng, seed)
    for case, word_freq in cases:
        out = call(fn, dict(word_freq), what="count_pairs", where=case)
        got = _as_counts(out, case)
        expected = _reference_counts(word_freq)
        if got == expected:
            continue
        _diagnose_counts(got, expected, word_freq, case)
    return len(cases)


def _non_overlapping_counts(word_freq) -> Counter:
    """Wrong: each pair counted like str.count, so 'aaa' holds ('a', 'a') only once."""
    counts = Counter()
    for w, f in word_freq.items():
        for pair in set(pairwise(w)):
            i, n = 0, 0
            while i + 1 < len(w):
                if (w[i], w[i + 1]) == pair:
                    n, i = n + 1, i + 2
                else:
                    i += 1
            counts[pair] += n * f
    return counts


def _diagnose_counts(got, expected, word_freq, case):
    joined = Counter()
    for (a, b), f in expected.items():
        joined[a + b] += f
    if any(got[p] == joined[p[0] + p[1]] != expected[p] for p in expected):
        fail(f"on {case}: pairs whose symbols join to the same string were counted together "
             "('ab' + 'c' and 'a' + 'bc' are both 'abc'): key the counts by the pair (a, b) as "
             "a tuple, never by a + b")
    if got == _reference_counts({w: 1 for w in word_freq}):
        fail(f"on {case}: each word counted once; weight every pair by its word's frequency "
             "(a word seen 5 times contributes its pairs 5 times)")
    extra = sorted(set(got) - set(expected))
    ends, starts = {w[-1] for w in word_freq if w}, {w[0] for w in word_freq if w}
    spanning = [p for p in extra if p[0] in ends and p[1] in starts]
    if spanning:
        fail(f"on {case}: you counted the pair {spanning[0]!r}, which spans two words (the end "
             "of one word and the start of the next); count pairs inside each word only")
    if got == _non_overlapping_counts(word_freq):
        fail(f"on {case}: count every adjacent position, overlaps included: 'aaa' holds the "
             "pair ('a', 'a') twice (positions 0-1 and 1-2); the merge step, not the count, "
             "takes them left to right")
    dedup = Counter()
    for w, f in word_freq.items():
        for pair in set(pairwise(w)):
            dedup[pair] += f
    if dedup != expected and got == +dedup:
        fail(f"on {case}: you counted each distinct pair once per word; count every position: "
             "'abab' holds ('a', 'b') twice, and each occurrence counts")
    if got == _reference_counts({w[:-1]: f for w, f in word_freq.items()}):
        fail(f"on {case}: the last pair of each word is missing: a word of n symbols has n - 1 "
             "adjacent pairs, (w[i], w[i+1]) for i in range(n - 1)")
    missing = sorted(set(expected) - set(got))
    if missing:
        fail(f"on {case}: the pair {missing[0]!r} is missing (expected count "
             f"{expected[missing[0]]})")
    if extra:
        fail(f"on {case}: the pair {extra[0]!r} does not occur inside any word, but you counted "
             f"it {got[extra[0]]} times")
    pair = min(p for p in expected if got[p] != expected[p])
    fail(f"on {case}: the pair {pair!r} should have count {expected[pair]}, got {got[pair]}")


# ---------------------------------------------------------------------------- apply_merges

def _reference_apply(symbols, merges):
    """Replay ``merges`` in order; each replaces its pair left to right, without overlaps."""
    symbols = list(symbols)
    for a, b in merges:
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


def _merge_cases(rng, seed):
    tok = BPETokenizer.train(_CORPUS, 4 + 256 + 60)
    merges = tok.merges
    words = [" pickled", " peppers", "Peter", " woodchuck", " shells", " lowest", " newer",
             " widest", " peck", " unpicked", " sea", " chuckle"]
    cases = [
        ("'aaa' with the merge ('a', 'a')", list("aaa"), [("a", "a")]),
        ("'aaaa' with the merge ('a', 'a')", list("aaaa"), [("a", "a")]),
        ("'aaaa' with the merges ('a', 'a'), ('aa', 'aa')", list("aaaa"),
         [("a", "a"), ("aa", "aa")]),
        ("'abc' with the merges ('b', 'c') then ('a', 'b')", list("abc"),
         [("b", "c"), ("a", "b")]),
        ("'abab' with the merge ('a', 'b')", list("abab"), [("a", "b")]),
        ("'low' with the merges ('l', 'o'), ('lo', 'w'), ('o', 'w')", list("low"),
         [("l", "o"), ("lo", "w"), ("o", "w")]),
        ("'x' with no merges", ["x"], []),
        ("an empty word", [], [("a", "b")]),
        ("['xy', 'z'] with the one merge ('x', 'yz'): it must not apply", ["xy", "z"],
         [("x", "yz")]),
        ("['a', 'bc', 'ab', 'c'] with the merges ('ab', 'c'), ('a', 'bc')",
         ["a", "bc", "ab", "c"], [("ab", "c"), ("a", "bc")]),
        ("'aaaaaaaaaaa' (11 a's) with ('a', 'a'), ('aa', 'a'), ('aa', 'aa')", list("a" * 11),
         [("a", "a"), ("aa", "a"), ("aa", "aa")]),
    ]
    # random merges as BPE learns them: each joins two symbols that exist already into a new
    # one (made by no other merge), so replaying them in order or by rank gives the same
    symbols, order = ["a", "b"], []
    n_merges = int(rng.integers(3, 9))
    for _ in range(200):
        if len(order) == n_merges:
            break
        pair = (str(rng.choice(symbols)), str(rng.choice(symbols)))
        if pair[0] + pair[1] not in symbols:
            order.append(pair)
            symbols.append(pair[0] + pair[1])
    word = [str(c) for c in rng.choice(list("ab"), size=int(rng.integers(9, 25)))]
    cases.append((random_name(seed, f"the word {''.join(word)!r} with {len(order)} merges "
                              f"{order}"), word, order))
    for w in words:
        expected = tok.tokenize(w)
        assert expected == _reference_apply(list(w), merges)  # the package agrees
        cases.append((f"{w!r} with 60 merges learned from tongue twisters", list(w), merges))
    return cases


@checker("apply_merges")
def check_apply_merges(fn, *, rng, seed) -> int:
    """Check ``fn(symbols, merges)``: the word ``symbols`` (a list of symbols, e.g. its
    characters) after applying the learned ``merges`` (pairs of symbols, in the order they were
    learned), exactly as BPE encodes it: merges in training order, each pair replaced left to
    right without overlaps. Returns a list of symbols."""
    cases = _merge_cases(rng, seed)
    for case, symbols, merges in cases:
        out = call(fn, list(symbols), [tuple(m) for m in merges], what="apply_merges",
                   where=case)
        if out is None:
            fail("apply_merges returned None: did you forget the `return` statement?")
        if isinstance(out, str):
            fail(f"on {case}: apply_merges returned the string {out!r}; return the list of "
                 "symbols (tokens), e.g. ['aa', 'a']")
        try:
            got = list(out)
        except TypeError:
            fail(f"on {case}: apply_merges returned a {type(out).__name__}; return a list of "
                 "symbols")
        expected = _reference_apply(symbols, merges)
        if got == expected:
            continue
        _diagnose_merges(got, expected, symbols, merges, case)
    return len(cases)


def _diagnose_merges(got, expected, symbols, merges, case):
    where = f"on {case}: expected {_show(expected)}, got {_show(got)}"
    if not all(isinstance(s, str) for s in got):
        fail(f"{where} — every symbol must be a string")
    if "".join(got) != "".join(symbols):
        fail(f"{where}: your symbols spell {''.join(got)!r} but the word is "
             f"{''.join(symbols)!r} — after merging positions i and i+1, continue at i+2: a "
             "symbol can take part in one merge only")
    if got == _reference_apply(symbols, merges[::-1]) or got == _any_order(symbols, merges):
        fail(f"{where} — apply the merges in the order they were learned (the first merge "
             "everywhere, then the second, ...), not whichever pair comes first in the word")
    if got == _right_to_left(symbols, merges):
        fail(f"{where} — take the pairs left to right: in 'aaa' the merge ('a', 'a') joins "
             "positions 0 and 1 and leaves the last 'a' alone")
    if got == _by_joined_string(symbols, merges):
        fail(f"{where} — a pair is a merge only if its two symbols match exactly: ('xy', 'z') "
             "is not the merge ('x', 'yz') although both join to 'xyz'; key the ranks by the "
             "pair (a, b), not by a + b")
    if got == _first_only(symbols, merges):
        fail(f"{where} — each merge replaces every occurrence of its pair in the word, not "
             "just the first")
    fail(where)


def _any_order(symbols, merges):
    """Wrong: scan left to right, merging any adjacent pair that is some merge, until none."""
    known = {tuple(m) for m in merges}
    symbols = list(symbols)
    changed = True
    while changed:
        changed = False
        for i in range(len(symbols) - 1):
            if (symbols[i], symbols[i + 1]) in known:
                symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
                changed = True
                break
    return symbols


def _by_joined_string(symbols, merges):
    """Wrong: ranks keyed by the joined string a + b, so ('xy', 'z') counts as ('x', 'yz')."""
    rank = {}
    for r, (a, b) in enumerate(merges):
        rank.setdefault(a + b, r)
    symbols = list(symbols)
    while len(symbols) > 1:
        pairs = list(pairwise(symbols))
        best = min(range(len(pairs)), key=lambda i: (rank.get(pairs[i][0] + pairs[i][1],
                                                               len(merges)), i))
        a, b = pairs[best]
        if a + b not in rank:
            break
        out, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and symbols[i] + symbols[i + 1] == a + b and (
                    symbols[i], symbols[i + 1]) == (a, b):
                out.append(a + b)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


def _right_to_left(symbols, merges):
    rev = [s[::-1] for s in symbols[::-1]]
    out = _reference_apply(rev, [(b[::-1], a[::-1]) for a, b in merges])
    return [s[::-1] for s in out[::-1]]


def _first_only(symbols, merges):
    symbols = list(symbols)
    for a, b in merges:
        for i in range(len(symbols) - 1):
            if symbols[i] == a and symbols[i + 1] == b:
                symbols[i:i + 2] = [a + b]
                break
    return symbols
