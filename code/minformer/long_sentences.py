"""The shipped translator on long sentences: a joined validation set, chrF, scores by length.

- :func:`joined_pairs` builds the long validation set: consecutive declarative sentences of
  ``long_valid`` joined into one sentence of 25-45 English words by a comma and a conjunction or
  a semicolon, their references joined the same way. Deterministic, built from the shipped data
  (nothing stored but the results).
- :func:`corpus_chrf` — chrF (Popović 2015) as sacrebleu computes it with its defaults
  (character n-grams up to 6, β = 2, spaces removed, the best reference of each sentence).
- :func:`scores_by_length` — BLEU, chrF and the cut-short rate in length buckets up to 45 words.

``python -m minformer.long_sentences`` measures the shipped translator with and without the
product's search settings and writes ``data/checkpoints/long-sentences/results.json``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import cache

from .metrics import bleu_by_length, corpus_bleu, cut_short_rate, word_count

BUCKETS_45 = ((1, 8), (9, 12), (13, 18), (19, 24), (25, 34), (35, 45))
JOINED_WORDS = (25, 45)  # the joined sentences' English words, inclusive
# (English, Spanish) ways to join two sentences into one, used in turn
JOINERS = ((", and ", ", y "), ("; ", "; "), (", but ", ", pero "))
FOLDER = "checkpoints/long-sentences"
REPRODUCE = "python -m minformer.long_sentences"


# ----------------------------------------------------------------------------- chrF

def _char_ngrams(text: str, order: int) -> list[Counter]:
    line = "".join(text.split())
    return [Counter(line[i:i + n] for i in range(len(line) - n + 1)) for n in range(1, order + 1)]


def _chrf_from_stats(stats: Sequence[int], order: int = 6, beta: float = 2.0) -> float:
    factor = beta ** 2
    avg_prec = avg_rec = 0.0
    effective = 0
    for i in range(order):
        n_hyp, n_ref, n_match = stats[3 * i: 3 * i + 3]
        if n_hyp > 0 and n_ref > 0:
            avg_prec += n_match / n_hyp
            avg_rec += n_match / n_ref
            effective += 1
    if effective == 0:
        return 0.0
    avg_prec /= effective
    avg_rec /= effective
    if avg_prec + avg_rec == 0:
        return 0.0
    return 100 * (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec)


def _segment_stats(hypothesis: str, references: Sequence[str], order: int = 6) -> list[int]:
    hyp = _char_ngrams(hypothesis, order)
    best, best_f = None, -1.0
    for ref in references:
        stats = []
        for h, r in zip(hyp, _char_ngrams(ref, order)):
            match = sum(min(c, r[g]) for g, c in h.items() if g in r)
            stats += [sum(h.values()) if r else 0, sum(r.values()), match]
        f = _chrf_from_stats(stats, order)
        if f > best_f:
            best, best_f = stats, f
    return best


def corpus_chrf(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus chrF (0-100) of ``hypotheses`` against ``references`` (a list of references per
    hypothesis), as ``sacrebleu.corpus_chrf`` with its defaults gives it (tests compare)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference lists")
    total = [0] * 18
    for h, refs in zip(hypotheses, references):
        refs = [refs] if isinstance(refs, str) else list(refs)
        if not refs:
            raise ValueError("every hypothesis needs at least one reference")
        total = [a + b for a, b in zip(total, _segment_stats(h, refs))]
    return _chrf_from_stats(total)


# ----------------------------------------------------------------------------- the joined set

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


@cache
def _lower_words(side: int) -> frozenset[str]:
    """Words of the ``train`` split's English (side 0) or Spanish (side 1) that are written
    without a capital more often than with one when they are not first in their sentence. A
    joined sentence lowers the first letter of a sentence it continues only when its first word
    is one of them: names (Tom, Boston, César) and I keep their capital."""
    from .data import load_translation_pairs

    upper, lower = Counter(), Counter()
    for pair in load_translation_pairs("train"):
        words = _WORD.findall(pair[side])
        for w in words[1:]:
            (upper if w[0].isupper() else lower)[w.casefold()] += 1
    return frozenset(w for w, n in lower.items() if n > upper[w])


def lower_first(text: str, side: int) -> str:
    """``text`` with the first letter of its first word made lower case when that word is
    written so inside a sentence (:func:`_lower_words`): how a sentence continues after a comma
    or a semicolon."""
    m = _WORD.search(text)
    if m is None or m.group().casefold() not in _lower_words(side) or not m.group()[0].isupper():
        return text
    return text[:m.start()] + text[m.start()].lower() + text[m.start() + 1:]


def _declarative(en: str, refs: Sequence[str]) -> bool:
    """A plain statement: the English and every reference are one sentence that ends with one
    full stop, and none holds a quotation mark, a question, an exclamation or a semicolon
    (which would not join into one sentence)."""
    from .sentences import split_sentences

    texts = [en, *refs]
    return all(t.endswith(".") and not t.endswith("..") and not re.search(r"[\"“”?!¿¡;]", t)
               and len(split_sentences(t)) == 1 for t in texts)


def join_sentences(parts: Sequence[str], side: int, joiners=None) -> str:
    """Sentences joined into one: each but the last loses its full stop, the next starts with a
    lower-case letter (names kept), and they are joined by ``JOINERS`` in turn (the English
    ones for side 0, the Spanish ones for side 1). Spanish *y* before a word that starts with
    the sound *i* (i-, hi- but not hie-) is *e*, as Spanish writes it."""
    joiners = JOINERS if joiners is None else joiners
    out = parts[0]
    for i, nxt in enumerate(parts[1:]):
        glue = joiners[i % len(joiners)][side]
        nxt = lower_first(nxt, side)
        if side == 1 and glue == ", y " and re.match(r"(?i)(i|hi(?!e))", nxt):
            glue = ", e "
        out = out[:-1] + glue + nxt
    return out


def joined_pairs(split: str = "long_valid", words=JOINED_WORDS) -> tuple[list[str], list[list[str]]]:
    """The long validation set: (sources, references). The declarative sentences of ``split``
    (one per English sentence, in the split's order) are taken in turn and joined, two or more
    consecutive ones, until the English has at least ``words[0]`` words; a group that passes
    ``words[1]`` is dropped and the next group starts with the sentence after it. Each joined
    sentence's references are every way of joining the references of its parts (at most 8 are
    kept, in order). Deterministic: the same list every time."""
    from itertools import product

    from .data import load_translation_pairs
    from .translator import references_by_source

    sources, references = references_by_source(load_translation_pairs(split))
    items = [(s, r) for s, r in zip(sources, references) if _declarative(s, r)]
    out_src, out_refs = [], []
    group: list[tuple[str, list[str]]] = []
    for item in items:
        group.append(item)
        text = join_sentences([s for s, _ in group], 0)
        n = word_count(text)  # the joined sentence's words, the conjunctions too
        if n < words[0]:
            continue
        if n <= words[1] and len(group) >= 2:
            out_src.append(text)
            refs = [join_sentences(list(combo), 1) for combo in product(*(r for _, r in group))]
            out_refs.append(refs[:8])
        group = []
    return out_src, out_refs


# ----------------------------------------------------------------------------- scores

def scores_by_length(sources, hypotheses, references, buckets=BUCKETS_45) -> list[dict]:
    """One row per bucket of English words: its label, sentences, BLEU, chrF and the share of
    outputs cut short (:func:`minformer.metrics.is_cut_short`)."""
    rows = []
    for row in bleu_by_length(sources, hypotheses, references, buckets):
        lo, hi = row.bucket
        idx = [i for i, s in enumerate(sources) if lo <= word_count(s) <= (hi or 10 ** 9)]
        rows.append({"words": row.label, "sentences": row.sentences,
                     "bleu": round(row.bleu.score, 2),
                     "chrf": round(corpus_chrf([hypotheses[i] for i in idx],
                                               [references[i] for i in idx]), 2),
                     "cut_short": round(row.cut_short, 4)})
    return rows


def summary(hypotheses, references) -> dict:
    return {"sentences": len(hypotheses), "bleu": round(corpus_bleu(hypotheses, references).score, 2),
            "chrf": round(corpus_chrf(hypotheses, references), 2),
            "cut_short": round(cut_short_rate(hypotheses, references), 4)}


# ----------------------------------------------------------------------------- clause by clause

# A safe split point: a comma before a conjunction that starts a clause, or a semicolon. The
# conjunction stays with the clause it starts; the comma or semicolon is dropped and put back.
SPLIT_POINT = re.compile(r"(,|;) (?=(?:and|but|so|or|yet|because|while|although|though|whereas) )"
                         r"|(;) (?=[a-zA-Z])")
MIN_CLAUSE_WORDS = 4  # a piece shorter than this is not a clause (a list: red, green, and blue)


def split_clauses(sentence: str, min_words: int = MIN_CLAUSE_WORDS) -> list[tuple[str, str, bool]]:
    """The clauses of a sentence that ends with a full stop (or a letter or digit: no stop), at
    :data:`SPLIT_POINT` (one piece, ``[(sentence, "", False)]``, when there is none, or the
    sentence ends otherwise: a question, an exclamation, an ellipsis). Each
    piece is ``(text to translate, the mark before it, capitalized)``: the text as a sentence of
    its own (a full stop at its end, a capital at its start), the "," or ";" that joined it to
    the piece before ("" for the first), and whether its first letter was made a capital. A
    split point is kept only when both pieces it makes have at least ``min_words`` words."""
    text = " ".join(sentence.split())
    if not (text.endswith(".") and not text.endswith("..")) and not re.search(r"[A-Za-z0-9]$", text):
        return [(text, "", False)]
    cuts = []  # (start of the mark, end of the mark + space, mark)
    for m in SPLIT_POINT.finditer(text):
        mark = m.group(1) or m.group(2)
        cuts.append((m.start(), m.end(), mark))
    kept, start = [], 0
    for i, (a, b, mark) in enumerate(cuts):
        end = cuts[i + 1][0] if i + 1 < len(cuts) else len(text)
        if word_count(text[start:a]) >= min_words and word_count(text[b:end]) >= min_words:
            kept.append((a, b, mark))
            start = b
        # else: the piece before grows to the next kept point
    if not kept:
        return [(text, "", False)]
    # the last kept cut may leave a short tail when later cuts were skipped: recheck it
    while kept and word_count(text[kept[-1][1]:]) < min_words:
        kept.pop()
    if not kept:
        return [(text, "", False)]
    pieces, start, before = [], 0, ""
    for a, b, mark in kept + [(len(text), len(text), "")]:
        piece = text[start:a].strip()
        if a < len(text) and not piece.endswith("."):  # the last keeps the sentence's end
            piece += "."
        capital = piece[0].islower()
        if capital:
            piece = piece[0].upper() + piece[1:]
        pieces.append((piece, before, capital))
        start, before = b, mark
    return pieces


def _lower_first_letter(text: str) -> str:
    """The first letter after any opening ¿ ¡ « " made lower case."""
    m = re.match(r"[¿¡«\"“'(]*", text)
    i = m.end()
    return text[:i] + text[i:i + 1].lower() + text[i + 1:] if i < len(text) else text


def join_clauses(pieces: Sequence[tuple[str, str, bool]], translations: Sequence[str]) -> str:
    """The translations of :func:`split_clauses`' pieces joined back into one sentence: each but
    the last loses a final full stop, the next follows its mark ("," or ";") and a space, with
    its first letter lower case again where the English piece's was."""
    out = ""
    for (_, mark, capital), text in zip(pieces, translations):
        text = " ".join(text.split())
        if capital:
            text = _lower_first_letter(text)
        if out:
            out = (out[:-1] if out.endswith(".") and not out.endswith("..") else out) + mark + " " + text
        else:
            out = text
    return out


# ----------------------------------------------------------------------------- hard inputs

REPEATED = ("the " * 12).strip() + ".", "very " * 10 + "good.", "Tom " * 20 + "went home.", "no " * 30
LISTS = ("apples, oranges, bananas, pears, grapes, cherries, plums, peaches, and lemons.",
         "one, two, three, four, five, six, seven, eight, nine, ten, eleven, twelve.",
         "I bought bread, milk, eggs, cheese, butter, rice, beans, coffee, tea, and sugar.",
         "Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday, Monday, Tuesday.")


def adversarial_inputs(n_longest: int = 2, n_joined: int = 3) -> list[str]:
    """The inputs the loop tests run: the ``n_longest`` longest English sentences of
    ``long_valid``, the first ``n_joined`` sentences of :func:`joined_pairs` (three ways of
    joining), three made of two or three short ``valid`` sentences joined by commas and
    conjunctions, one word repeated (:data:`REPEATED`) and lists (:data:`LISTS`)."""
    from .data import load_translation_pairs
    from .translator import references_by_source

    longest = sorted(references_by_source(load_translation_pairs("long_valid"))[0],
                     key=lambda s: (-word_count(s), s))[:n_longest]
    short = [s for s, r in zip(*references_by_source(load_translation_pairs("valid")))
             if _declarative(s, r) and word_count(s) >= 5][:7]
    made = [join_sentences(short[0:2], 0), join_sentences(short[2:5], 0),
            join_sentences(short[5:7], 0, ((" because ", ""),))]
    return longest + joined_pairs()[0][:n_joined] + made + list(REPEATED) + list(LISTS)


# ----------------------------------------------------------------------------- the command

# the search settings compared: today's (the command's and page's until issue 45) and the new
SETTINGS = {
    "floor": dict(no_loops=False, split_clauses=False),
    "floor + guard + clauses": dict(no_loops=True, split_clauses=True),
}


def is_loop(ids: Sequence[int], copies: int = 3) -> bool:
    """Whether token ids hold ``copies`` back-to-back copies of one n-gram, any n ≥ 1: what the
    loop guard forbids (:func:`minformer.decode.loop_tokens`)."""
    from .decode import loop_tokens

    ids = list(ids)
    return any(ids[i] in loop_tokens(ids[:i], copies) for i in range(len(ids)))


def measure(translator=None, beam: int = 4, sets=("valid", "long_valid", "joined", "test",
                                                   "long_test")) -> dict:
    """Every number of results.json: for each setting of :data:`SETTINGS`, beam ``beam`` with the
    command's length floor, each set's BLEU, chrF, cut-short rate and looping outputs, and the
    scores by length (:data:`BUCKETS_45`) on valid + long_valid + the joined sentences."""
    import platform
    import time

    import torch

    from .data import cpu_name, load_translation_pairs
    from .translate import MIN_LENGTH_RATIO, MIN_LENGTH_SLACK
    from .translator import Translator, references_by_source

    translator = Translator.load() if translator is None else translator
    data = {name: joined_pairs() if name == "joined" else
            references_by_source(load_translation_pairs(name)) for name in sets}
    hard = adversarial_inputs()
    out = {"command": REPRODUCE, "beam": beam, "length_penalty": 0.6,
           "min_length_ratio": MIN_LENGTH_RATIO, "min_length_slack": MIN_LENGTH_SLACK,
           "loop": "3 back-to-back copies of one n-gram of tokens, any n (is_loop)",
           "joined": {"words": list(JOINED_WORDS), "sentences": len(data.get("joined", [[]])[0]),
                      "built_by": "minformer.long_sentences.joined_pairs()"},
           "buckets": [list(b) for b in BUCKETS_45], "settings": {}}
    for label, options in SETTINGS.items():
        kw = dict(beam_size=beam, min_length_ratio=MIN_LENGTH_RATIO,
                  min_length_slack=MIN_LENGTH_SLACK, **options)
        result, pooled = {"sets": {}}, ([], [], [])
        for name, (sources, references) in data.items():
            start = time.process_time()
            ids = translator.encode_sources(sources)
            outputs = translator.output_ids(ids, **kw)
            hyps = [translator.detokenize(y) for y in outputs]
            row = summary(hyps, references)
            row["looping"] = sum(is_loop(y) for y in outputs)
            row["cpu_seconds"] = round(time.process_time() - start, 1)
            result["sets"][name] = row
            if name in ("valid", "long_valid", "joined"):
                for part, items in zip(pooled, (sources, hyps, references)):
                    part += items
            print(f"{label:>24} {name:>10}: {row}", flush=True)
        result["by_length"] = scores_by_length(*pooled) if pooled[0] else []
        outputs = translator.output_ids(translator.encode_sources(hard), batch_size=1, **kw)
        result["hard_inputs"] = {"inputs": len(hard), "looping": sum(map(is_loop, outputs)),
                                 "examples": {s: translator.detokenize(y)
                                              for s, y in list(zip(hard, outputs))[:8]}}
        out["settings"][label] = result
    out["machine"] = {"cpu": cpu_name(), "torch": torch.__version__,
                      "python": platform.python_version(), "threads": torch.get_num_threads()}
    return out


def main(argv=None) -> int:
    """``python -m minformer.long_sentences [--out DIR]``: :func:`measure` the shipped translator,
    write results.json into DIR (default data/checkpoints/long-sentences, then recorded in the
    manifest with :func:`minformer.data.record_shipped`). About 7 minutes on one CPU thread."""
    import argparse
    import json
    from pathlib import Path

    import torch

    from .data import record_shipped
    from .utils import data_dir

    parser = argparse.ArgumentParser(prog=REPRODUCE, description=main.__doc__)
    parser.add_argument("--out", type=Path, help=f"output folder (default: data/{FOLDER})")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch (default 1)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    folder = args.out if args.out is not None else data_dir() / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    results = measure()
    (folder / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n",
                                         encoding="utf-8")
    if args.out is None:
        record_shipped(FOLDER, REPRODUCE)
    print(f"done: {folder / 'results.json'}")
    return 0


def read_results() -> dict:
    """The shipped results.json, checked against the manifest."""
    from .data import read_shipped_json

    return read_shipped_json(FOLDER, "results.json", retrain=REPRODUCE)


if __name__ == "__main__":
    raise SystemExit(main())
