"""Text as people type it: lines split on "\\n" only, sentences split by rule, and the check that a
line looks like English."""

import pytest

from minformer.sentences import english_words, not_english_reason, split_lines, split_sentences


def test_split_lines_only_on_newline():
    text = "a\x0bb\x0cc\x1cd\x1de\x1ef\u0085g\u2028h\u2029i\r\nnext\n"
    assert split_lines(text) == ["a\x0bb\x0cc\x1cd\x1de\x1ef\u0085g\u2028h\u2029i", "next"]
    assert len(text.splitlines()) > 2  # what str.splitlines would have done


@pytest.mark.parametrize("text, lines", [("", []), ("\n", [""]), ("one", ["one"]),
                                         ("one\n\n", ["one", ""]), ("a\n \nb", ["a", " ", "b"])])
def test_split_lines_keeps_blank_lines_and_drops_only_the_final_newline(text, lines):
    assert split_lines(text) == lines


@pytest.mark.parametrize("line, sentences", [
    ("I like cats. They sleep all day.", ["I like cats.", "They sleep all day."]),
    ("Where are you? I am here! Come.", ["Where are you?", "I am here!", "Come."]),
    ("Mr. Smith and Dr. Jones met at 5 p.m. today.", ["Mr. Smith and Dr. Jones met at 5 p.m. today."]),
    ("It costs 3.5 dollars. Really?", ["It costs 3.5 dollars.", "Really?"]),
    ("J. K. Rowling wrote it. I read it.", ["J. K. Rowling wrote it.", "I read it."]),
    ('He said "Stop." Then he left.', ['He said "Stop."', "Then he left."]),
    ("Wait... what?", ["Wait... what?"]),
    ("I know. 42 is the answer.", ["I know.", "42 is the answer."]),
    ("one sentence without a stop", ["one sentence without a stop"]),
    ("  lots   of   space.  ", ["lots of space."]),
    ("   ", []),
])
def test_split_sentences(line, sentences):
    assert split_sentences(line) == sentences


def test_split_sentences_refuses_a_list():
    with pytest.raises(TypeError, match="line must be a str"):
        split_sentences(["a"])
    with pytest.raises(TypeError, match="text must be a str"):
        split_lines(b"a\n")


def test_english_words_come_from_the_training_sentences():
    words = english_words()
    assert {"the", "station", "don't", "hungry"} <= words
    assert "estación" not in words and "hola" not in words


@pytest.mark.parametrize("line", [
    "My brother, who lives in Madrid, is coming to visit us next month.",
    "Tom and Mary went to Boston.",
    "Could you tell me how to get to the nearest pharmacy?",
    "Hi.", "42", "", "   ", "(42)", "the\tcat sat\r",
])
def test_english_passes(line):
    assert not_english_reason(line) is None


@pytest.mark.parametrize("line, reason", [
    ("Hola, ¿cómo estás?", "words are not English words"),
    ("Je voudrais un café, s'il vous plaît.", "words are not English words"),
    ("Ich habe einen Hund und eine Katze.", "words are not English words"),
    ("Привет, как дела?", "mostly written in Cyrillic script"),
    ("你好，你好吗？", "mostly written in Cjk script"),
    ("\x00\x00\x00\x00", "holds control characters such as U+0000"),
    ("The cat\x1b[31m sat.", "holds control characters such as U+001B"),
    ("?!?! ... ,,,", "has no words, only punctuation or symbols"),
    ("🍕🍕🍕", "has no words"),
])
def test_not_english_is_named(line, reason):
    assert reason in not_english_reason(line)


def test_threshold_and_vocabulary_are_parameters():
    vocab = {"i", "am"}
    assert not_english_reason("I am here now", vocabulary=vocab) is None  # 2 of 4 unknown
    assert "3 of its 4 words" in not_english_reason("I is here now", vocabulary=vocab)
    assert not_english_reason("I is here now", vocabulary=vocab, max_unknown=0.8) is None
