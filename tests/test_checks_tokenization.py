"""check_count_pairs and check_apply_merges accept correct answers and reject the typical BPE
mistakes (frequencies ignored, pairs across words, overlaps, merge order) with a message that
names them."""

from collections import Counter
from itertools import pairwise

from helpers import rejects

from minformer.checks import check_apply_merges, check_count_pairs

# -- check_count_pairs -----------------------------------------------------------------------

def count_pairs(word_freq):
    counts = Counter()
    for word, f in word_freq.items():
        for i in range(len(word) - 1):
            counts[word[i], word[i + 1]] += f
    return counts


def test_count_pairs_accepts_correct(capsys):
    check_count_pairs(count_pairs)
    check_count_pairs(lambda wf: dict(count_pairs(wf)))  # a plain dict is fine
    check_count_pairs(  # so are explicit zero counts
        lambda wf: {("never", "seen"): 0, **count_pairs(wf)})
    assert capsys.readouterr().out.count("✓ count_pairs: 12 cases passed") == 3


def test_count_pairs_rejects_ignoring_frequencies():
    def once(word_freq):
        return Counter(p for w in word_freq for p in pairwise(w))
    rejects(check_count_pairs, once, "each word counted once", "frequency")


def test_count_pairs_rejects_pairs_across_words():
    def across(word_freq):
        counts = Counter()
        flat = [s for w, f in word_freq.items() for _ in range(f) for s in w]
        counts.update(pairwise(flat))
        return counts
    rejects(check_count_pairs, across, "spans two words", "inside each word")


def test_count_pairs_rejects_non_overlapping_counting():
    def str_count(word_freq):
        counts = Counter()
        for w, f in word_freq.items():
            text = "\x00".join(w)
            for a, b in set(pairwise(w)):
                counts[a, b] += text.count(a + "\x00" + b) * f  # non-overlapping, like str.count
        return counts
    rejects(check_count_pairs, str_count, "overlaps included", "'aaa'")


def test_count_pairs_rejects_missing_last_pair():
    def short(word_freq):
        counts = Counter()
        for w, f in word_freq.items():
            for i in range(len(w) - 2):
                counts[w[i], w[i + 1]] += f
        return counts
    rejects(check_count_pairs, short, "last pair of each word is missing")


def test_count_pairs_rejects_string_keys_and_bad_returns():
    rejects(check_count_pairs,
            lambda wf: Counter({a + b: c for (a, b), c in count_pairs(wf).items()}),
            "is a string", "tuple")
    rejects(check_count_pairs, lambda wf: None, "returned None")
    rejects(check_count_pairs, lambda wf: list(count_pairs(wf).items()), "returned a list")
    rejects(check_count_pairs,
            lambda wf: {k: v / 1 for k, v in count_pairs(wf).items()}, "integers")



def test_count_pairs_rejects_mutating_the_table_and_names_a_wrong_count():
    def pops(word_freq):
        out = count_pairs(word_freq)
        word_freq.clear()
        return out
    rejects(check_count_pairs, pops, "changed its input `word_freq` in place")

    def off_by_one(word_freq):
        out = count_pairs(word_freq)
        if ("l", "o") in out:
            out["l", "o"] += 1
        return out
    rejects(check_count_pairs, off_by_one, "('l', 'o') should have count 7, got 8")


# -- check_apply_merges ----------------------------------------------------------------------

def merge(symbols, pair, new):
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def apply_in_order(symbols, merges):
    for a, b in merges:
        symbols = merge(symbols, (a, b), a + b)
    return symbols


def apply_by_rank(symbols, merges):
    """The package's way: repeatedly merge the adjacent pair learned earliest."""
    rank = {pair: r for r, pair in reversed(list(enumerate(merges)))}
    while len(symbols) > 1:
        best = min(pairwise(symbols), key=lambda p: rank.get(p, float("inf")))
        if best not in rank:
            break
        symbols = merge(symbols, best, best[0] + best[1])
    return symbols


def test_apply_merges_accepts_correct(capsys):
    check_apply_merges(apply_in_order)
    check_apply_merges(apply_by_rank)
    check_apply_merges(lambda s, m: tuple(apply_in_order(s, m)))  # any sequence
    assert capsys.readouterr().out.count("✓ apply_merges: 24 cases passed") == 3


def test_apply_merges_rejects_overlapping_merges():
    def overlapping(symbols, merges):
        for a, b in merges:
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and symbols[i] == a and symbols[i + 1] == b:
                    out.append(a + b)  # "aaa" → ["aa", "aa"]: the middle a used twice
                elif not (i > 0 and symbols[i - 1] == a and symbols[i] == b):
                    out.append(symbols[i])
                i += 1
            symbols = out
        return symbols
    rejects(check_apply_merges, overlapping, "'aaa'", "spell 'aaaa'", "one merge only")


def test_apply_merges_rejects_right_to_left():
    def right_to_left(symbols, merges):
        for a, b in merges:
            out, i = [], len(symbols) - 1
            while i >= 0:
                if i > 0 and symbols[i - 1] == a and symbols[i] == b:
                    out.append(a + b)
                    i -= 2
                else:
                    out.append(symbols[i])
                    i -= 1
            symbols = out[::-1]
        return symbols
    rejects(check_apply_merges, right_to_left, "left to right", "['aa', 'a']")


def test_apply_merges_rejects_wrong_order():
    rejects(check_apply_merges, lambda s, m: apply_in_order(s, m[::-1]),
            "order they were learned")

    def first_pair_found(symbols, merges):
        known = set(merges)
        changed = True
        while changed:
            changed = False
            for i in range(len(symbols) - 1):
                if (symbols[i], symbols[i + 1]) in known:
                    symbols = symbols[:i] + [symbols[i] + symbols[i + 1]] + symbols[i + 2:]
                    changed = True
                    break
        return symbols
    rejects(check_apply_merges, first_pair_found, "order they were learned", "'abc'")


def test_apply_merges_rejects_first_occurrence_only():
    def first_only(symbols, merges):
        for a, b in merges:
            for i in range(len(symbols) - 1):
                if symbols[i] == a and symbols[i + 1] == b:
                    symbols = symbols[:i] + [a + b] + symbols[i + 2:]
                    break
        return symbols
    rejects(check_apply_merges, first_only, "every occurrence", "'aaaa'")


def test_apply_merges_rejects_bad_returns():
    rejects(check_apply_merges, lambda s, m: "".join(apply_in_order(s, m)), "returned the string")
    rejects(check_apply_merges, lambda s, m: None, "returned None")
    rejects(check_apply_merges, lambda s, m: s, "expected ['aa', 'a'], got ['a', 'a', 'a']")

