"""minformer.metrics: BLEU equal to sacrebleu's (tokenizer, test split, edge cases), bootstrap
intervals and paired bootstrap, and clear errors for bad input."""

import random

import pytest
import sacrebleu
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from minformer.data import load_translation_pairs
from minformer.metrics import (
    bleu_from_stats,
    bootstrap_interval,
    corpus_bleu,
    corpus_stats,
    ngrams,
    paired_bootstrap,
    sentence_bleu,
    tokenize_13a,
)

TOL = 0.01  # BLEU points


def corrupt(sentence: str, rng: random.Random, p: float = 0.25, vocab=("el", "de", "que", "casa")) -> str:
    """Drop, swap or replace about a fraction p of the words: a deterministic "system output"."""
    words = sentence.split()
    out = []
    for w in words:
        u = rng.random()
        if u < p / 3:
            continue  # drop
        if u < 2 * p / 3:
            out.append(rng.choice(vocab))  # replace
        else:
            out.append(w)
    for i in range(len(out) - 1):
        if rng.random() < p / 3:
            out[i], out[i + 1] = out[i + 1], out[i]  # swap neighbours
    return " ".join(out)


@pytest.fixture(scope="module")
def test_split():
    pairs = load_translation_pairs("test")
    refs = [es for _, es in pairs]
    rng = random.Random(13)
    return [corrupt(r, rng) for r in refs], refs


def sacre(hyps, refs_per_hyp):
    """sacrebleu on our layout: references[i] (str or list) → reference streams padded with None."""
    groups = [[r] if isinstance(r, str) else list(r) for r in refs_per_hyp]
    k = max(len(g) for g in groups)
    streams = [[g[j] if j < len(g) else None for g in groups] for j in range(k)]
    return sacrebleu.corpus_bleu(hyps, streams)


def assert_same(hyps, refs, smooth="exp"):
    ours = corpus_bleu(hyps, refs, smooth=smooth)
    theirs = sacre(hyps, refs) if smooth == "exp" else sacrebleu.corpus_bleu(hyps, [refs], smooth_method="none")
    assert abs(ours.score - theirs.score) < TOL, (ours, theirs)
    assert ours.precisions == pytest.approx(theirs.precisions, abs=TOL)
    assert ours.bp == pytest.approx(theirs.bp, abs=1e-9)
    assert (ours.hyp_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    assert list(ours.matches) == list(theirs.counts) and list(ours.totals) == list(theirs.totals)
    return ours


# ----------------------------------------------------------------------------- tokenizer

def test_tokenizer_equals_sacrebleus_13a_on_the_test_split_and_random_strings(test_split):
    tok = Tokenizer13a()
    hyps, refs = test_split
    pairs = load_translation_pairs("test")
    for s in refs + hyps + [en for en, _ in pairs]:
        assert tokenize_13a(s) == tok(s.rstrip()).split(), s
    rng = random.Random(0)
    alphabet = [chr(i) for i in range(32, 127)] + list("\n\t¿¡áñ«»—…0123456789") + [
        "&quot;", "&amp;", "&lt;", "&gt;", "<skipped>", "-\n", "  "]
    for _ in range(5000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert tokenize_13a(s) == tok(s.rstrip()).split(), repr(s)


def test_tokenizer_examples():
    assert tokenize_13a("¿Dónde está la estación?") == ["¿Dónde", "está", "la", "estación", "?"]
    assert tokenize_13a("It's 3.5 km, not 1990-2000.") == ["It's", "3.5", "km", ",", "not", "1990", "-",
                                                           "2000", "."]
    assert tokenize_13a("Tom &amp; Mary") == ["Tom", "&", "Mary"]


# ----------------------------------------------------------------------------- agreement with sacrebleu

def test_equals_sacrebleu_on_the_corrupted_test_split(test_split):
    hyps, refs = test_split
    score = assert_same(hyps, refs)
    assert 20 < score.score < 80, score  # far from both ends: every part of the formula matters
    assert score.bp < 1.0  # dropped words made the corpus shorter


def test_identical_corpus_scores_100_and_disjoint_corpus_0(test_split):
    _, refs = test_split
    assert corpus_bleu(refs[:50], refs[:50]).score == pytest.approx(100.0)
    assert assert_same(["xyzzy"] * 50, refs[:50]).score == 0.0


@pytest.mark.parametrize("case", ["all-empty", "some-empty", "shorter", "longer", "single", "single-short",
                                  "no-4gram", "no-3-or-4gram", "empty-reference"])
def test_equals_sacrebleu_on_edge_cases(case, test_split):
    hyps, refs = test_split
    refs = refs[:40]
    hyps = hyps[:40]
    if case == "all-empty":
        hyps = [""] * len(refs)
    elif case == "some-empty":
        hyps = ["" if i % 3 == 0 else h for i, h in enumerate(hyps)]
    elif case == "shorter":  # every hypothesis a prefix of its reference: precision 100, BP < 1
        hyps = [" ".join(r.split()[: max(1, len(r.split()) // 2)]) for r in refs]
    elif case == "longer":  # extra words: no brevity penalty
        hyps = [r + " y nada más" for r in refs]
    elif case == "single":
        hyps, refs = ["El gato negro está durmiendo en la silla ."], ["El gato negro duerme en la silla ."]
    elif case == "single-short":  # 3 tokens: no 4-gram at all, so BLEU is 0 (not effective order)
        hyps, refs = ["Hola , Tom"], ["Hola , Tom ."]
    elif case == "no-4gram":  # matches up to 3-grams only: exp smoothing of p_4
        hyps, refs = ["a b c x a b c y"], ["a b c z a b c w"]
    elif case == "no-3-or-4gram":
        hyps, refs = ["a b x c d y e f"], ["a b z c d w e f"]
    elif case == "empty-reference":
        refs = ["" if i % 4 == 0 else r for i, r in enumerate(refs)]
    ours = assert_same(hyps, refs)
    if case in ("all-empty", "single-short"):
        assert ours.score == 0.0
    if case == "shorter":
        assert ours.precisions[0] == 100.0 and ours.bp < 1.0
    if case == "no-4gram":
        assert ours.matches[3] == 0 and ours.score > 0


def test_equals_sacrebleu_without_smoothing():
    assert assert_same(["a b c x a b c y"], ["a b c z a b c w"], smooth="none").score == 0.0
    assert assert_same(["the cat sat on the mat"], ["the cat sat on a mat"], smooth="none").score > 0


def test_several_references_per_sentence(test_split):
    hyps, refs = test_split
    rng = random.Random(5)
    # two or three references per sentence (a varying number), the true one among them
    multi = [[corrupt(r, rng, 0.5), r] + ([corrupt(r, rng, 0.5)] if i % 2 else []) for i, r in enumerate(refs[:300])]
    single = assert_same(hyps[:300], refs[:300])
    several = assert_same(hyps[:300], multi)
    assert several.score >= single.score  # more references can only add matches
    # clipping takes the most any ONE reference has: "the the" against ["the cat", "the dog"] matches once
    assert corpus_bleu(["the the"], [["the cat", "the dog"]]).matches[0] == 1


def test_sacrebleu_streams_transposed_give_the_same_score(test_split):
    hyps, refs = test_split
    streams = [refs[:100], [corrupt(r, random.Random(i), 0.5) for i, r in enumerate(refs[:100])]]
    assert corpus_bleu(hyps[:100], list(zip(*streams))).score == pytest.approx(
        sacrebleu.corpus_bleu(hyps[:100], streams).score, abs=TOL)


def test_clipping_stops_repeated_words_from_scoring():
    s = corpus_bleu(["the the the the the the the"], ["the cat is on the mat"])
    assert s.matches[0] == 2 and s.totals[0] == 7  # Papineni et al.'s example: p_1 = 2/7


def test_sentence_bleu_is_a_corpus_of_one():
    assert sentence_bleu("el gato duerme en la silla", "el gato duerme en una silla").score == pytest.approx(
        corpus_bleu(["el gato duerme en la silla"], ["el gato duerme en una silla"]).score)


def test_corpus_bleu_is_not_the_mean_of_sentence_bleus(test_split):
    hyps, refs = test_split
    mean = sum(sentence_bleu(h, r).score for h, r in zip(hyps[:200], refs[:200])) / 200
    assert abs(mean - corpus_bleu(hyps[:200], refs[:200]).score) > 1.0


# ----------------------------------------------------------------------------- bootstrap

def test_bootstrap_interval_contains_the_score_and_narrows_with_more_sentences(test_split):
    hyps, refs = test_split
    widths = []
    for size in (100, 1600):
        low, high = bootstrap_interval(hyps[:size], refs[:size], n=200, seed=1)
        score = corpus_bleu(hyps[:size], refs[:size]).score
        assert low < score < high
        widths.append(high - low)
    assert widths[1] < widths[0] / 2  # about 1/√16 = 1/4 of the width
    assert bootstrap_interval(hyps[:100], refs[:100], n=200, seed=1) == bootstrap_interval(
        hyps[:100], refs[:100], n=200, seed=1)  # seeded: reproducible


def test_paired_bootstrap_prefers_the_clearly_better_system(test_split):
    _, refs = test_split
    refs = refs[:300]
    rng = random.Random(2)
    good = [corrupt(r, rng, 0.15) for r in refs]
    bad = [corrupt(r, rng, 0.45) for r in refs]
    result = paired_bootstrap(good, bad, refs, n=200, seed=0)
    assert result.bleu_a > result.bleu_b
    assert result.wins == 1.0 and result.p_value == 0.0
    flipped = paired_bootstrap(bad, good, refs, n=200, seed=0)
    assert flipped.wins == 0.0 and flipped.p_value == 1.0
    same = paired_bootstrap(good, good, refs, n=50, seed=0)
    assert same.wins == 0.0  # a tie is not a win


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("hyps, refs, error, match", [
    (["a"], ["a", "b"], ValueError, "1 hypotheses but 2 references"),
    (["a", "b"], [["a", "b"]], ValueError, r"look like sacrebleu's reference streams.*list\(zip\(\*streams\)\)"),
    ([], [], ValueError, "corpus is empty"),
    ("a b c", ["a b c"], TypeError, "hypotheses must be a list of strings"),
    (["a"], "a", TypeError, "references must be a list of strings"),
    ([3], ["a"], TypeError, r"hypotheses\[0\] must be a str; got int 3"),
    (["a", None], ["a", "b"], TypeError, r"hypotheses\[1\] must be a str; got NoneType"),
    (["a"], [["a", 7]], TypeError, r"references\[0\] holds a int \(7\)"),
    (["a"], [[]], ValueError, r"references\[0\] must be a str or a non-empty list"),
    (["a"], [None], TypeError, r"references\[0\] must be a str or a non-empty list"),
])
def test_bad_input_is_refused_with_a_message_naming_it(hyps, refs, error, match):
    with pytest.raises(error, match=match):
        corpus_bleu(hyps, refs)


def test_bad_bootstrap_arguments():
    with pytest.raises(ValueError, match="smooth must be 'exp' or 'none'; got 'add-k'"):
        corpus_bleu(["a"], ["a"], smooth="add-k")
    with pytest.raises(ValueError, match=r"n \(the number of resamples\) must be a positive int; got 0"):
        bootstrap_interval(["a"], ["a"], n=0)
    with pytest.raises(TypeError, match=r"n \(the number of resamples\) must be an int; got 100.0"):
        bootstrap_interval(["a"], ["a"], n=100.0)
    with pytest.raises(ValueError, match=r"confidence must lie in \(0, 1\); got 95"):
        bootstrap_interval(["a"], ["a"], confidence=95)
    with pytest.raises(ValueError, match="system A has 2 hypotheses but system B has 1"):
        paired_bootstrap(["a", "b"], ["a"], ["a", "b"])
    with pytest.raises(TypeError, match="not a single str"):
        paired_bootstrap("a", ["a"], ["a"])


# ----------------------------------------------------------------------------- impossible statistics

GOOD = [5, 5, 5, 4, 3, 2, 5, 4, 3, 2]  # c, r, matches_1..4, totals_1..4: "a b c d e" against itself


@pytest.mark.parametrize("change, error, match", [
    ({2: 9}, ValueError, r"matches_1 \(stats\[2\]\) = 9 > totals_1 \(stats\[6\]\) = 5"),
    ({5: 3}, ValueError, r"matches_4 \(stats\[5\]\) = 3 > totals_4 \(stats\[9\]\) = 2"),
    ({6: 6}, ValueError, r"totals_1 \(stats\[6\]\) = 6 but c \(stats\[0\]\) = 5"),
    ({8: 5, 4: 3}, ValueError, r"totals_3 \(stats\[8\]\) = 5 > totals_2 \(stats\[7\]\) = 4"),
    ({0: -1}, ValueError, r"stats\[0\] \(c\) must be an int ≥ 0; got -1"),
    ({3: -2}, ValueError, r"stats\[3\] \(matches_2\) must be an int ≥ 0; got -2"),
    ({1: 4.5}, TypeError, r"stats\[1\] \(r\) must be an int; got 4\.5"),
])
def test_impossible_statistics_are_refused_naming_the_entry(change, error, match):
    stats = list(GOOD)
    for i, v in change.items():
        stats[i] = v
    with pytest.raises(error, match=match):
        bleu_from_stats(stats)


def test_statistics_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match=r"stats must hold 10 numbers .*got 9"):
        bleu_from_stats(GOOD[:-1])
    with pytest.raises(TypeError, match="stats must be a sequence of 10 ints"):
        bleu_from_stats(5)


def test_real_statistics_are_accepted(test_split):
    """Every corpus's summed statistics, and every single sentence's, pass the checks."""
    assert bleu_from_stats(GOOD).score == pytest.approx(100.0)
    hyps, refs = test_split
    hyps, refs = hyps[:300] + ["", "a"], refs[:300] + ["x y", "a b c d e f"]  # with empty, short
    stats = corpus_stats(hyps, refs)
    for row in stats:
        bleu_from_stats(row)
    assert bleu_from_stats(stats.sum(axis=0)).score == pytest.approx(corpus_bleu(hyps, refs).score)
    assert corpus_bleu(hyps, refs).score > 10


@pytest.mark.parametrize("n, error, match", [
    (0, ValueError, "n must be a positive int; got 0"),
    (-1, ValueError, "n must be a positive int; got -1"),
    (1.0, TypeError, r"n must be an int; got 1\.0"),
])
def test_ngrams_needs_a_positive_int(n, error, match):
    with pytest.raises(error, match=match):
        ngrams(["a", "b"], n)
    assert ngrams(["a", "b", "a", "b"], 2) == {("a", "b"): 2, ("b", "a"): 1}
