"""check_clipped_precision (chapter 13) accepts BLEU's clipped counts written in any correct
way, and rejects each typical slip with the message that names it, whatever the seed."""

import functools
from collections import Counter, defaultdict

import numpy as np
import pytest
from helpers import recorded, rejects

from minformer.checks import CheckFailed, check_clipped_precision
from minformer.checks.translation import FIXED, _random_cases, _reference
from minformer.metrics import ngrams, sentence_stats, tokenize_13a

SEEDS = range(20)  # a wrong answer must be rejected on each of these, not on a lucky one

# -- correct answers, written in different ways ------------------------------------------------


def solution(hypothesis, references, n):
    most = Counter()
    for ref in references:
        most |= ngrams(ref, n)
    counts = ngrams(hypothesis, n)
    return sum(min(c, most[g]) for g, c in counts.items()), max(len(hypothesis) - n + 1, 0)


def dict_loop(hypothesis, references, n):
    """Plain dicts and loops: for each n-gram, its count in each reference, the best kept."""
    counts = {}
    for i in range(len(hypothesis) - n + 1):
        g = tuple(hypothesis[i:i + n])
        counts[g] = counts.get(g, 0) + 1
    matches = 0
    for g, c in counts.items():
        best = 0
        for ref in references:
            k = sum(1 for j in range(len(ref) - n + 1) if tuple(ref[j:j + n]) == g)
            best = max(best, k)
        matches += min(c, best)
    return matches, max(0, len(hypothesis) - n + 1)


def list_count(hypothesis, references, n):
    """Lists of tuples and list.count."""
    grams = [tuple(hypothesis[i:i + n]) for i in range(len(hypothesis) - n + 1)]
    ref_grams = [[tuple(r[i:i + n]) for i in range(len(r) - n + 1)] for r in references]
    matches = sum(min(grams.count(g), max(rg.count(g) for rg in ref_grams)) for g in set(grams))
    return matches, len(grams)


def consume(hypothesis, references, n):
    """Walk the hypothesis and use up each n-gram's allowance (its max over references)."""
    allowance = defaultdict(int)
    for ref in references:
        for g, c in Counter(zip(*(ref[k:] for k in range(n)))).items():
            allowance[g] = max(allowance[g], c)
    grams = list(zip(*(hypothesis[k:] for k in range(n))))
    matches = 0
    for g in grams:
        if allowance[g] > 0:
            allowance[g] -= 1
            matches += 1
    return matches, len(grams)


def test_accepts_clipped_counts(capsys):
    for seed in (0, 1, 2):
        check_clipped_precision(solution, seed=seed)
    assert capsys.readouterr().out.count("✓ clipped n-gram precision: 57 cases passed") == 3


@pytest.mark.parametrize(("correct", "seeds"), [(solution, 50), (dict_loop, 50), (list_count, 20),
                                               (consume, 20)], ids=lambda f: getattr(f, "__name__", ""))
def test_different_correct_answers_pass_on_every_seed(correct, seeds, capsys):
    for seed in range(seeds):
        check_clipped_precision(correct, seed=seed)
    assert set(capsys.readouterr().out.splitlines()) == {
        "✓ clipped n-gram precision: 57 cases passed"}


def test_the_package_agrees_where_its_tokenizer_keeps_the_tokens():
    """metrics.sentence_stats (13a tokens, n = 1..4) gives the checker's counts on the fixed cases
    whose tokens 13a would not split."""
    compared = 0
    for hyp, refs, n, _ in FIXED:
        if all(tokenize_13a(" ".join(w)) == w for w in (hyp, *refs)):
            stats = sentence_stats(" ".join(hyp), [" ".join(r) for r in refs])
            assert (stats[1 + n], stats[5 + n]) == _reference(hyp, refs, n)
            compared += 1
    assert compared >= 10


def test_a_stub_is_reported_not_raised(capsys):
    def stub(hypothesis, references, n):
        raise NotImplementedError

    check_clipped_precision(stub)
    assert "not written yet: fill in stub" in capsys.readouterr().out


# -- wrong answers: one per typical mistake ----------------------------------------------------


def grams(words, n):
    return [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]


def total(hypothesis, n):
    return max(len(hypothesis) - n + 1, 0)


def keyed_by(sep):
    """n-grams keyed by sep.join(gram) instead of the tuple."""
    def joined(hypothesis, references, n):
        def counts(words):
            return Counter(sep.join(words[i:i + n]) for i in range(len(words) - n + 1))
        most = Counter()
        for ref in references:
            most |= counts(ref)
        return (sum(min(c, most[k]) for k, c in counts(hypothesis).items()),
                total(hypothesis, n))
    return joined


def substring_in(hypothesis, references, n):
    """' '.join(gram) in ' '.join(ref): substrings, and no clipping."""
    texts = [" ".join(r) for r in references]
    gs = grams(hypothesis, n)
    return sum(any(" ".join(g) in t for t in texts) for g in gs), len(gs)


def substring_count(hypothesis, references, n):
    """' '.join(ref).count(' '.join(gram)): clipped, but by substring counts."""
    texts = [" ".join(r) for r in references]
    return (sum(min(c, max(t.count(" ".join(g)) for t in texts))
                for g, c in Counter(grams(hypothesis, n)).items()), total(hypothesis, n))


def padded_count(hypothesis, references, n):
    """Spaces around both sides: whole words, unless a token holds a space."""
    texts = [f" {' '.join(r)} " for r in references]
    return (sum(min(c, max(t.count(f" {' '.join(g)} ") for t in texts))
                for g, c in Counter(grams(hypothesis, n)).items()), total(hypothesis, n))


def lowercased(hypothesis, references, n):
    return solution([w.lower() for w in hypothesis],
                    [[w.lower() for w in r] for r in references], n)


def unclipped(hypothesis, references, n):
    ref_grams = set().union(*(ngrams(r, n) for r in references))
    gs = grams(hypothesis, n)
    return sum(g in ref_grams for g in gs), len(gs)


def summed(hypothesis, references, n):
    most = Counter()
    for ref in references:
        most += ngrams(ref, n)
    counts = ngrams(hypothesis, n)
    return sum(min(c, most[g]) for g, c in counts.items()), total(hypothesis, n)


def concatenated(hypothesis, references, n):
    return solution(hypothesis, [[w for r in references for w in r]], n)


def distinct_once(hypothesis, references, n):
    ref_grams = set().union(*(ngrams(r, n) for r in references))
    return len(set(grams(hypothesis, n)) & ref_grams), total(hypothesis, n)


def intersected(hypothesis, references, n):
    most = ngrams(references[0], n)
    for ref in references[1:]:
        most &= ngrams(ref, n)
    counts = ngrams(hypothesis, n)
    return sum(min(c, most[g]) for g, c in counts.items()), total(hypothesis, n)


def best_reference(hypothesis, references, n):
    return max(solution(hypothesis, [r], n)[0] for r in references), total(hypothesis, n)


def first_reference(hypothesis, references, n):
    return solution(hypothesis, references[:1], n)


def negative_total(hypothesis, references, n):
    return solution(hypothesis, references, n)[0], len(hypothesis) - n + 1


def distinct_total(hypothesis, references, n):
    return solution(hypothesis, references, n)[0], len(set(grams(hypothesis, n)))


def off_by_one(hypothesis, references, n):
    def counts(words):
        return Counter(tuple(words[i:i + n]) for i in range(len(words) - n))
    most = Counter()
    for ref in references:
        most |= counts(ref)
    mine = counts(hypothesis)
    return sum(min(c, most[g]) for g, c in mine.items()), sum(mine.values())


TUPLES = "compared whole, as tuples"
TOTAL = "max(L - n + 1, 0)"
WRONG = {  # name: (wrong answer, fragments its message must contain)
    "concatenated keys": (keyed_by(""), ["joined string ''.join(gram)", "('ab', 'c')", TUPLES]),
    "hyphen-joined keys": (keyed_by("-"), ["'-'.join(gram)", "'e-mail-box'", TUPLES]),
    "underscore-joined keys": (keyed_by("_"), ["'_'.join(gram)", TUPLES]),
    "space-joined keys": (keyed_by(" "), ["itself contain a space", "'New York'", TUPLES]),
    "padded substrings": (padded_count, ["itself contain a space", TUPLES]),
    "substring in": (substring_in, ["substrings of the reference text", "'he' is inside 'the'"]),
    "substring count": (substring_count, ["substrings of the reference text", "('he',)"]),
    "lowercased": (lowercased, ["'The' and 'the' are different tokens", "case-sensitive"]),
    "unclipped": (unclipped, ["repeated word", "clip each n-gram's count"]),
    "clipped by the sum": (summed, ["summed over all the references", "Counter |"]),
    "references concatenated": (concatenated, ["joined the references into one",
                                               "no n-gram runs across"]),
    "set union, each n-gram once": (distinct_once, ["each distinct n-gram once"]),
    "clipped by the minimum": (intersected, ["smallest count over the references", "Counter &"]),
    "best reference overall": (best_reference, ["one reference with the most matches",
                                                "per n-gram"]),
    "first reference only": (first_reference, ["only the first reference"]),
    "negative total": (negative_total, ["shorter than n", TOTAL, "clamp it at 0"]),
    "distinct total": (distinct_total, [TOTAL, "counted distinct n-grams"]),
    "off-by-one range": (off_by_one, ["an off-by-one", "range(len(words) - n + 1)"]),
}


@pytest.mark.parametrize("name", WRONG)
def test_each_mistake_is_rejected_with_its_message_on_every_seed(name):
    wrong, fragments = WRONG[name]
    rejects(check_clipped_precision, wrong, *fragments, seeds=SEEDS)


@functools.cache
def random_cases(seed):
    return list(_random_cases(np.random.default_rng(seed), seed))


@pytest.mark.parametrize("name", WRONG)
def test_the_random_cases_alone_reject_each_mistake(name):
    """Without the fixed cases, the random cases (with their planted traps) still catch every
    mistake on every seed: a hard-coded pass of the fixed cases is not enough."""
    wrong, _ = WRONG[name]
    for seed in SEEDS:
        cases = random_cases(seed)
        assert any(wrong(list(h), [list(r) for r in refs], n) != _reference(h, refs, n)
                   for h, refs, n, _ in cases), seed


def test_several_slips_giving_the_same_count_are_all_named():
    """Where two mistakes give the reader's count, the message names both rather than guess."""
    def sum_or_concat(hypothesis, references, n):  # equal for unigrams: ambiguous there
        return summed(hypothesis, references, n) if n == 1 else solution(hypothesis,
                                                                           references, n)
    with pytest.raises(CheckFailed) as err:
        check_clipped_precision(sum_or_concat, seed=0)
    message = str(err.value)
    assert "several slips" in message and "sum over references" in message
    assert "joining the references into one" in message


def test_rejects_bad_outputs_and_changed_inputs():
    rejects(check_clipped_precision, lambda h, r, n: None, "return a pair (matches, total)")
    rejects(check_clipped_precision, lambda h, r, n: list(solution(h, r, n)), "return a pair")
    rejects(check_clipped_precision, lambda h, r, n: ("a", "b"), "pair of integers")

    def mutates(hypothesis, references, n):
        out = solution(hypothesis, references, n)
        references.clear()
        return out
    rejects(check_clipped_precision, mutates, "changed its input `references` in place")


def test_a_hard_coded_answer_fails_on_the_random_cases_and_names_the_seed():
    record, replay = recorded(solution)
    check_clipped_precision(record, seed=1)
    with pytest.raises(CheckFailed) as err:
        check_clipped_precision(replay, seed=2)
    assert "seed 2" in str(err.value) and "check_clipped_precision(replay, seed=2)" in str(
        err.value)
