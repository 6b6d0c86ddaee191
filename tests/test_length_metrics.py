"""Scoring by sentence length: word counts, buckets, the cut-short rate and BLEU per bucket."""

import pytest

from minformer.metrics import (
    CUT_SHORT,
    LENGTH_BUCKETS,
    LengthRow,
    bleu_by_length,
    bucket_label,
    corpus_bleu,
    cut_short_rate,
    is_cut_short,
    length_bucket,
    word_count,
)


def test_word_count_splits_on_any_whitespace():
    assert word_count("I am  here.\tNow") == 4
    assert word_count("") == 0


def test_bucket_labels():
    assert [bucket_label(b) for b in LENGTH_BUCKETS] == ["≤ 8", "9–12", "13–18", "19+"]


@pytest.mark.parametrize("n, bucket", [(1, (1, 8)), (8, (1, 8)), (9, (9, 12)), (12, (9, 12)),
                                       (13, (13, 18)), (18, (13, 18)), (19, (19, None)),
                                       (70, (19, None)), (0, None)])
def test_length_bucket_edges(n, bucket):
    assert length_bucket(n) == bucket


def test_cut_short_uses_the_shortest_reference():
    refs = ["uno dos tres cuatro cinco six siete ocho nueve diez", "uno dos tres cuatro"]
    # 2 words < 0.7 * 4 = 2.8: cut short against the shortest reference
    assert is_cut_short("uno dos", refs)
    # 3 words >= 2.8: the short reference excuses it, although the long one would not
    assert not is_cut_short("uno dos tres", refs)
    assert is_cut_short("uno dos tres", refs[0])


def test_cut_short_boundary_is_strict():
    ref = "a b c d e f g h i j"  # 10 words: 7 words is exactly 70%, not under it
    assert not is_cut_short("a b c d e f g", ref)
    assert is_cut_short("a b c d e f", ref)


def test_cut_short_rate_counts_the_share():
    hyps = ["a", "a b c", "a b c d", ""]
    refs = ["a b c d", "a b c d", ["a b c d", "x"], "a"]
    # a: 1 < 2.8 yes; a b c: no; a b c d vs shortest "x" (1 word): no; "" vs "a": 0 < 0.7 yes
    assert cut_short_rate(hyps, refs) == pytest.approx(2 / 4)


def test_bleu_by_length_splits_by_source_words():
    sources = ["one two", "w " * 10, "w " * 14, "w " * 25, "w " * 11]
    hyps = ["el gato negro duerme", "a b", "x y z w v u t", "p q r s", "a b c d e f g"]
    refs = ["el gato negro duerme", "a b c d e f g", "x y z w v u t", "p q r s", "a b c d e f g"]
    rows = bleu_by_length(sources, hyps, refs)
    assert [r.label for r in rows] == ["≤ 8", "9–12", "13–18", "19+"]
    assert [r.sentences for r in rows] == [1, 2, 1, 1]
    nine = rows[1]
    assert isinstance(nine, LengthRow)
    assert nine.bleu.score == pytest.approx(corpus_bleu([hyps[1], hyps[4]], [refs[1], refs[4]]).score)
    assert nine.cut_short == pytest.approx(0.5)  # "a b" is cut short, the other is whole
    assert rows[0].cut_short == 0.0 and rows[0].bleu.score == pytest.approx(100.0)
    assert nine.ratio == pytest.approx(9 / 14)


def test_bleu_by_length_leaves_out_empty_buckets():
    rows = bleu_by_length(["a b c"], ["x"], ["x"])
    assert [r.label for r in rows] == ["≤ 8"]


@pytest.mark.parametrize("call, match", [
    (lambda: bleu_by_length(["a"], ["x", "y"], ["x", "y"]), "one sentence per hypothesis"),
    (lambda: bleu_by_length("a", ["x"], ["x"]), "one sentence per hypothesis"),
    (lambda: bleu_by_length(["a"], ["x"], ["x"], buckets=[(5, 3)]), "empty"),
    (lambda: bleu_by_length(["a"], ["x"], ["x"], buckets=[(1, 9), (9, 12)]), "overlap"),
    (lambda: bleu_by_length(["a"], ["x"], ["x"], buckets=[]), "empty"),
    (lambda: is_cut_short("a", "b", ratio=0.0), "ratio"),
    (lambda: is_cut_short("a", "b", ratio=1.5), "ratio"),
    (lambda: length_bucket(-1), "n_words"),
    (lambda: length_bucket(2.0), "n_words"),
    (lambda: cut_short_rate([], []), "empty"),
])
def test_bad_input_is_named(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_word_count_refuses_a_list():
    with pytest.raises(TypeError, match="text must be a str"):
        word_count(["a", "b"])


def test_default_threshold_is_seventy_percent():
    assert CUT_SHORT == 0.7
