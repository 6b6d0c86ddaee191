"""check_clipped_precision (chapter 13) accepts BLEU's clipped counts and names the usual slips."""

from collections import Counter

from helpers import rejects

from minformer.checks import check_clipped_precision
from minformer.metrics import ngrams


def solution(hypothesis, references, n):
    most = Counter()
    for ref in references:
        most |= ngrams(ref, n)
    counts = ngrams(hypothesis, n)
    return sum(min(c, most[g]) for g, c in counts.items()), max(len(hypothesis) - n + 1, 0)


def test_accepts_clipped_counts(capsys):
    for seed in (0, 1, 2):
        check_clipped_precision(solution, seed=seed)
    assert capsys.readouterr().out.count("✓ clipped n-gram precision: 36 cases passed") == 3


def test_a_stub_is_reported_not_raised(capsys):
    def stub(hypothesis, references, n):
        raise NotImplementedError

    check_clipped_precision(stub)
    assert "not written yet: fill in stub" in capsys.readouterr().out


def test_rejects_unclipped_counts():
    def unclipped(hypothesis, references, n):
        ref_grams = set().union(*(ngrams(r, n) for r in references))
        grams = [tuple(hypothesis[i:i + n]) for i in range(len(hypothesis) - n + 1)]
        return sum(g in ref_grams for g in grams), len(grams)

    rejects(check_clipped_precision, unclipped, "repeated word", "clip each n-gram's count")


def test_rejects_a_wrong_total_for_short_hypotheses():
    def negative_total(hypothesis, references, n):
        return solution(hypothesis, references, n)[0], len(hypothesis) - n + 1

    rejects(check_clipped_precision, negative_total, "shorter than n", "max(L - n + 1, 0)")


def test_rejects_clipping_by_the_sum_over_references():
    def summed(hypothesis, references, n):
        total = Counter()
        for ref in references:
            total += ngrams(ref, n)
        counts = ngrams(hypothesis, n)
        return sum(min(c, total[g]) for g, c in counts.items()), max(len(hypothesis) - n + 1, 0)

    rejects(check_clipped_precision, summed, "matches is")
