"""Long sentences (issue 45): the joined validation set, chrF, clause by clause translation, the
loop guard on hard inputs with the shipped translator, and the shipped measurements
(``python -m minformer.long_sentences``, data/checkpoints/long-sentences/results.json)."""

import functools

import pytest
import sacrebleu

from minformer.data import load_translation_pairs
from minformer.long_sentences import (
    BUCKETS_45,
    JOINED_WORDS,
    SETTINGS,
    adversarial_inputs,
    corpus_chrf,
    is_loop,
    join_clauses,
    join_sentences,
    joined_pairs,
    read_results,
    split_clauses,
)
from minformer.metrics import word_count
from minformer.sentences import split_sentences
from minformer.translate import MIN_LENGTH_RATIO, MIN_LENGTH_SLACK, NO_LOOPS, SPLIT_CLAUSES
from minformer.translator import Translator, references_by_source


@functools.cache
def joined():
    return joined_pairs()


def test_chrf_is_sacrebleus():
    sources, refs = references_by_source(load_translation_pairs("valid"))
    hyps = [r[0][: len(r[0]) * (i % 4 + 1) // 4] + (" de la" if i % 3 else "") for i, r in
            enumerate(refs[:200])]
    refs = refs[:200]
    streams = [[r[min(k, len(r) - 1)] for r in refs] for k in range(max(map(len, refs)))]
    assert corpus_chrf(hyps, refs) == pytest.approx(sacrebleu.corpus_chrf(hyps, streams).score,
                                                    abs=1e-9)
    assert corpus_chrf(["abc"], [["xyz"]]) == 0.0
    with pytest.raises(ValueError, match="2 hypotheses but 1 reference"):
        corpus_chrf(["a", "b"], [["a"]])


def test_the_joined_set_is_one_sentence_each_of_25_to_45_words_and_deterministic():
    sources, refs = joined()
    assert len(sources) == 102 and (sources, refs) == joined_pairs()
    lo, hi = JOINED_WORDS
    assert all(lo <= word_count(s) <= hi for s in sources)
    assert all(len(split_sentences(s)) == 1 for s in sources)  # the command will not split it
    assert all(1 <= len(r) <= 8 and all(len(split_sentences(x)) == 1 for x in r) for r in refs)
    assert sources[1] == ("A kiss without a mustache is like a bowl of soup with no salt, and a "
                          "rat is a small animal with long, pointed teeth and a long tail.")
    assert refs[1] == ["Un beso sin bigote es como una sopa sin sal, y una rata es un animalito "
                       "de dientes largos y puntiagudos, y que tiene cola larga."]


def test_joining_keeps_names_and_writes_e_before_i():
    assert join_sentences(["I left.", "Tom stayed.", "It rained."], 0) == \
        "I left, and Tom stayed; it rained."
    assert join_sentences(["Yo me fui.", "Hizo frío."], 1) == "Yo me fui, e hizo frío."
    assert join_sentences(["Yo me fui.", "Hielo."], 1) == "Yo me fui, y hielo."


@pytest.mark.parametrize("sentence, pieces", [
    ("I was very tired that night, and my brother went out to buy some bread.",
     [("I was very tired that night.", "", False), ("And my brother went out to buy some bread.",
                                                    ",", True)]),
    ("The weather was bad all day; we stayed at home and read books.",
     [("The weather was bad all day.", "", False), ("We stayed at home and read books.", ";",
                                                    True)]),
    ("i was very tired that night, but i could not sleep at all",
     [("I was very tired that night.", "", True), ("But i could not sleep at all", ",", True)]),
    ("I like red, green, and blue.", [("I like red, green, and blue.", "", False)]),  # a list
    ("He is tall, and so am I.", [("He is tall, and so am I.", "", False)]),  # too short
    ("Were you tired last night, or did you go out with your friends?",  # a question
     [("Were you tired last night, or did you go out with your friends?", "", False)]),
])
def test_split_clauses_cuts_only_at_safe_points(sentence, pieces):
    assert split_clauses(sentence) == pieces
    assert join_clauses(pieces, [p[0] for p in pieces]) == sentence


def test_join_clauses_puts_the_marks_back_and_lowers_the_capital_it_added():
    pieces = split_clauses("He came home late, and we ate dinner; then everyone went to bed.")
    assert [p[1:] for p in pieces] == [("", False), (",", True), (";", True)]
    assert join_clauses(pieces, ["Llegó tarde a casa.", "Y cenamos.", "¿Luego todos se fueron?"]) \
        == "Llegó tarde a casa, y cenamos; ¿luego todos se fueron?"


@pytest.fixture(scope="module")
def translator():
    return Translator.load()


def product(**kw):
    return dict(beam_size=4, min_length_ratio=MIN_LENGTH_RATIO, min_length_slack=MIN_LENGTH_SLACK,
                batch_size=1, **kw)


def test_no_hard_input_loops_with_the_commands_settings(translator):
    """The longest validation sentences, joined ones, one word repeated, lists: with the floor
    alone some loop (results.json counts them); with the guard and clauses, none does."""
    hard = adversarial_inputs()
    ids = translator.encode_sources(hard)
    assert (NO_LOOPS, SPLIT_CLAUSES) == (True, True)
    guarded = translator.output_ids(ids, **product(no_loops=True, split_clauses=True))
    assert not [s for s, y in zip(hard, guarded) if is_loop(y)]
    assert translator.translate(hard[2:4], **product(no_loops=True, split_clauses=True)) == \
        [translator.detokenize(y) for y in guarded[2:4]]


def test_a_split_sentence_is_its_clauses_translated_alone(translator):
    sentence = joined()[0][1]
    pieces = split_clauses(sentence)
    assert len(pieces) == 2
    alone = translator.translate([p[0] for p in pieces], **product(no_loops=True))
    whole = translator.translate([sentence], **product(no_loops=True, split_clauses=True))[0]
    assert whole == join_clauses(pieces, alone)
    assert translator.translate([sentence], beam_size=4) == \
        translator.translate([sentence], beam_size=4, split_clauses=False)  # off by default


def test_the_shipped_measurements():
    """results.json, written by python -m minformer.long_sentences: no output of the command's
    settings loops on any set or hard input; the clauses raise the joined sentences' BLEU; the
    buckets cover 1-45 words."""
    results = read_results()
    before, after = (results["settings"][name] for name in SETTINGS)
    assert results["joined"]["sentences"] == len(joined()[0])
    assert [row["words"] for row in after["by_length"]] == ["≤ 8", "9–12", "13–18", "19–24",
                                                           "25–34", "35–45"]
    assert len(BUCKETS_45) == 6
    assert all(row["looping"] == 0 for row in after["sets"].values())
    assert after["hard_inputs"]["looping"] == 0 < before["hard_inputs"]["looping"]
    assert before["sets"]["joined"]["looping"] > 0
    assert after["sets"]["joined"]["bleu"] > before["sets"]["joined"]["bleu"] + 10
