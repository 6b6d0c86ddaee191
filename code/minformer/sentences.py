"""Text as people type it, made ready for the translator: lines, sentences, and a check that a
line looks like English (used by the command-line translator, :mod:`minformer.translate`).

- :func:`split_lines` splits text on ``"\\n"`` only. ``str.splitlines`` also splits on \\v, \\f,
  \\x1c-\\x1e, U+0085, U+2028 and U+2029, which would turn one input line into several output
  lines.
- :func:`split_sentences` splits a line into sentences by rule: after ``.``, ``!``, ``?`` or ``…``
  (with any closing quotes or brackets) followed by a space and something that can start a
  sentence (a capital letter, a digit, an opening quote or bracket, ``¿`` or ``¡``), unless
  the word before the stop is a known abbreviation (``Mr.``, ``Dr.``, ``e.g.``, ``a.m.``, ...)
  or a single capital initial (``J. K. Rowling``). Decimals (``3.5``) have no space after the
  point and are never split. The translator learned from single sentences, so a line of
  several is translated one sentence at a time.
- :func:`not_english_reason` says why a line does not look like English, or None: most of its
  letters are in another script, or most of its words are not English words the translator was
  trained on.

Standard library only (no torch): the checks run before any model is loaded.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

ABBREVIATIONS = frozenset("""mr mrs ms dr prof st jr sr vs etc no mt ave rd gen col lt sgt capt
    e.g i.e a.m p.m u.s u.k u.n a.d b.c approx dept est inc ltd co fig vol""".split())
_SPLIT = re.compile(
    r"""(?<=[.!?…])["'”’)\]]*      # a stop, then any closing quotes or brackets
        (\s+)                       # the space between two sentences
        (?=["'“‘(\[¿¡]*[A-Z0-9À-ÖØ-Þ])   # what can start the next one""", re.X)
_WORD_BEFORE = re.compile(r"(\S+)$")


def split_lines(text: str) -> list[str]:
    """Lines of ``text``, split on ``"\\n"`` only; a final ``"\\n"`` ends the last line (it
    does not add an empty one) and a ``"\\r"`` before ``"\\n"`` (Windows line ends) is dropped."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    if text == "":
        return []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _is_abbreviation(before: str) -> bool:
    word = before.rstrip(".").lstrip("\"'“‘([¿¡")
    if len(word) == 1 and word.isupper():  # an initial: J. K. Rowling
        return True
    return word.casefold() in ABBREVIATIONS


def split_sentences(line: str) -> list[str]:
    """The sentences of one line (see the module docstring for the rules), each with its own
    whitespace collapsed; a line with one sentence comes back as a list of one, a blank line as
    an empty list."""
    if not isinstance(line, str):
        raise TypeError(f"line must be a str; got {type(line).__name__}")
    sentences, start = [], 0
    for m in _SPLIT.finditer(line):
        head = line[start:m.start(1)]
        word = _WORD_BEFORE.search(head)
        if word and head.rstrip("\"'”’)]").endswith(".") and _is_abbreviation(
                word.group(1).rstrip("\"'”’)]")):
            continue
        sentences.append(head)
        start = m.end(1)
    sentences.append(line[start:])
    return [" ".join(s.split()) for s in sentences if s.strip()]


@cache
def english_words() -> frozenset[str]:
    """Lower-cased words of the English side of the ``train`` split (38,000 Tatoeba pairs):
    what "an English word the translator knows" means here."""
    from .data import load_translation_pairs

    return frozenset(w for en, _ in load_translation_pairs("train") for w in _words(en))


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)*", text.casefold())


def _script(ch: str) -> str:
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def not_english_reason(line: str, vocabulary=None, max_unknown: float = 0.5) -> str | None:
    """Why ``line`` does not look like English, or None when it does.

    - "it holds control characters such as U+0000": a character of category Cc other than a
      tab, ``\n`` or ``\r`` (NUL, escape, ...: not text a person typed);
    - "it has no words, only punctuation or symbols": no letter and no digit 0-9, yet not blank
      ("?!", "...", "🍕🍕"; a number such as "42" passes, a blank line too);
    - "it is mostly written in <SCRIPT> script": over half of its letters are not Latin;
    - "k of its n words are not English words the translator knows": over ``max_unknown`` of
      its words (at least 2 words) are not in ``vocabulary`` (default :func:`english_words`).
      Capitalized words (names: Tom, Boston) are not counted as unknown.

    ``line`` is a str; ``vocabulary`` a set (or other container) of lower-case words, not a
    str, which would test substrings; ``max_unknown`` a fraction in [0, 1].
    """
    if not isinstance(line, str):
        raise TypeError(f"line must be a str; got {type(line).__name__}")
    if vocabulary is not None and (isinstance(vocabulary, (str, bytes))
                                   or not hasattr(vocabulary, "__contains__")):
        raise TypeError(f"vocabulary must be a set of words, or None for the translator's; got "
                        f"{type(vocabulary).__name__} (a str would test substrings)")
    if isinstance(max_unknown, bool) or not isinstance(max_unknown, (int, float)):
        raise TypeError(f"max_unknown must be a number; got {max_unknown!r}")
    if not 0 <= max_unknown <= 1:  # (also refuses NaN)
        raise ValueError(f"max_unknown must be a fraction in [0, 1]; got {max_unknown}")
    controls = [ch for ch in line if unicodedata.category(ch) == "Cc" and ch not in "\t\n\r"]
    if controls:
        return f"it holds control characters such as U+{ord(controls[0]):04X}"
    letters = [ch for ch in line if ch.isalpha()]
    if not letters:
        if line.strip() and not any("0" <= ch <= "9" for ch in line):
            return "it has no words, only punctuation or symbols"
        return None
    scripts: dict[str, int] = {}
    for ch in letters:
        scripts[_script(ch)] = scripts.get(_script(ch), 0) + 1
    other = {s: k for s, k in scripts.items() if s != "LATIN"}
    if sum(other.values()) > len(letters) / 2:
        main = max(other, key=other.get).title()
        return f"it is mostly written in {main} script"
    vocabulary = english_words() if vocabulary is None else vocabulary
    raw = re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)*", line)
    if len(raw) < 2:
        return None
    unknown = sum(w.casefold() not in vocabulary and not (i and w[:1].isupper())
                  for i, w in enumerate(raw))
    if unknown > max_unknown * len(raw):
        return f"{unknown} of its {len(raw)} words are not English words the translator knows"
    return None
