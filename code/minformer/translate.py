"""Translate English to Spanish from the command line with the book's shipped translator.

::

    python -m minformer.translate "Where is the train station?"
    python -m minformer.translate "I am hungry." "It is raining."   # one line each
    python -m minformer.translate < sentences.txt                  # one line per input line
    minformer-translate --beam 1 "Good morning."                   # the installed console script

Each input sentence gives exactly one output line, in input order. The default checkpoint is the
one shipped in ``data/checkpoints/en-es``, checked against ``data/manifest.json`` before it is used;
``--checkpoint DIR`` loads another folder written by :meth:`minformer.translator.Translator.save`,
checked against the folder's own SHA256SUMS: a folder without one is refused unless
``--trust-unverified`` is given. A line that cannot be translated (too long, or one the search
refuses) gives a blank output line and one line starting with ``error:`` on stderr that names it;
the other lines are translated, and the exit status is 1. Input or a checkpoint that stops the
whole run (no input, a missing or altered checkpoint, a device that is not there, a standard
output that is closed or full) prints one ``error:`` line and exits with status 1; a wrong
option exits with status 2, as argparse does.
"""

from __future__ import annotations

import argparse
import pickle
import re
import sys
from pathlib import Path

EXIT_ERROR = 1  # bad input or checkpoint
EXIT_USAGE = 2  # wrong options (argparse's own code)
CHUNK = 16  # sentences translated (and printed) at a time: the first line appears early

PROG = "minformer-translate"
# The length floor of the shipped translator's command line and page: no <eos> before
# ⌊ρ · s⌋ - b output tokens, s the source's tokens (<eos> included). Chosen on valid + long_valid
# (beam 4, α 0.6) among nine pairs (ρ from 0.85 to 1.1, b from 0 to 6): ρ = 1, b = 3 scored BLEU
# 43.8 against 43.5 without a floor, and cut short 5.2%, 2.0%, 2.0% and 3.3% of the outputs at
# ≤ 8, 9-12, 13-18 and 19+ words against 5.8%, 8.0%, 16.7% and 53.3%. A floor with no slack
# (ρ = 0.85, b = 0) cut as few short but padded short sentences ("¿Quieres ser mi amigo??").
# Chapter 13 measures it on test and long_test.
MIN_LENGTH_RATIO = 1.0
MIN_LENGTH_SLACK = 3
# The loop guard (minformer.decode.loop_tokens: no token may complete three back-to-back copies
# of an n-gram, and a row that has begun to repeat may end before the floor) and clause by clause
# translation at safe split points (minformer.long_sentences.split_clauses), both measured by
# python -m minformer.long_sentences (data/checkpoints/long-sentences/results.json): on the joined
# validation sentences of 25-45 words, beam 4 with the floor, BLEU 22.7 → 37.6 and 20 of 109
# outputs looping → none; valid and long_valid within 0.3 BLEU.
NO_LOOPS = True
SPLIT_CLAUSES = True


class InputError(ValueError):
    """A sentence the translator cannot take (empty, too long), or unreadable input."""


def _whole_number(minimum: int):
    """An argparse type: a whole number ≥ minimum, or an error saying so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number ≥ {minimum}; got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number ≥ {minimum}; got {value}")
        return value

    return parse


_positive_int, _non_negative_int = _whole_number(1), _whole_number(0)


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number ≥ 0; got {text!r}") from None
    if not value >= 0 or value == float("inf"):  # also rejects NaN
        raise argparse.ArgumentTypeError(f"expected a finite number ≥ 0; got {text!r}")
    return value


def _min_length_ratio(text: str) -> float:
    value = _non_negative_float(text)
    if value > 4:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 4]; got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line's options (``minformer-translate --help`` prints them)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Translate English sentences to Spanish with the book's trained Transformer "
                    "(chapter 13). One output line per input line, always.",
        epilog="With no SENTENCE, lines are read from standard input (split on newlines only). "
               "A line may hold several sentences: each is translated and the translations are "
               "joined. A blank line gives a blank line (and a note on stderr); a line that "
               "does not look like English is translated with a warning on stderr. Put -- "
               "before a sentence that starts with a dash.",
    )
    parser.add_argument("sentences", nargs="*", metavar="SENTENCE", help="English sentences to translate")
    parser.add_argument("--beam", type=_positive_int, default=4, metavar="N",
                        help="beam size; 1 is greedy search (default: 4)")
    parser.add_argument("--length-penalty", type=_non_negative_float, default=0.6, metavar="ALPHA",
                        help="beam search's length penalty α; 0 turns it off (default: 0.6)")
    parser.add_argument("--min-length-ratio", type=_min_length_ratio, default=MIN_LENGTH_RATIO,
                        metavar="RHO",
                        help="a length floor, so a long sentence is not cut short: no translation "
                             "ends before RHO × (source tokens) - SLACK tokens; 0 turns it off "
                             f"(default: {MIN_LENGTH_RATIO}, chosen on the validation sentences)")
    parser.add_argument("--min-length-slack", type=_non_negative_int, default=MIN_LENGTH_SLACK,
                        metavar="SLACK",
                        help=f"the floor's slack in tokens (default: {MIN_LENGTH_SLACK})")
    parser.add_argument("--no-guard", action="store_true",
                        help="turn the loop guard off: by default no translation may repeat a "
                             "group of tokens three times in a row")
    parser.add_argument("--whole", action="store_true",
                        help="translate each sentence whole (by default a long sentence is "
                             "translated clause by clause at its safe split points: a comma "
                             "before and, but, so, ...; a semicolon)")
    parser.add_argument("--checkpoint", type=Path, metavar="DIR",
                        help="a checkpoint folder written by Translator.save (default: the shipped "
                             "data/checkpoints/en-es, checked against data/manifest.json); it "
                             "is checked against its own SHA256SUMS file, and refused without one")
    parser.add_argument("--trust-unverified", action="store_true",
                        help="load a --checkpoint folder that has no SHA256SUMS file: nothing "
                             "then shows that its weights and config are the ones saved")
    parser.add_argument("--device", choices=["cpu", "cuda", "mps"],
                        help="where to run the model (default: the CPU)")
    parser.add_argument("--no-split", action="store_true",
                        help="translate each line as one sentence (default: a line of several "
                             "sentences is split after . ! ? and each is translated)")
    return parser


def read_lines(args_sentences: list[str], stdin=None) -> tuple[list[str], str]:
    """The lines to translate and how to name one in a message ("sentence" or "line").

    From the command-line arguments when there are any (each argument is one line; a line break
    inside one counts as a space), else from ``stdin`` (a binary or text stream, default
    ``sys.stdin``), split on ``"\n"`` only (:func:`minformer.sentences.split_lines`). Blank
    lines are kept: each gives a blank output line. Input that is not UTF-8 text, or holds no
    line at all, raises :class:`InputError`.
    """
    from .sentences import split_lines

    if args_sentences:
        return [" ".join(a.split()) for a in args_sentences], "sentence"
    stdin = sys.stdin if stdin is None else stdin
    if stdin is None:
        raise InputError("standard input is closed: nothing to translate")
    try:
        raw = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read()
    except OSError as e:  # a folder given as stdin (< dir), a lost terminal
        raise InputError(f"cannot read standard input: {e.strerror or e}") from None
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise InputError(f"the input is not UTF-8 text (byte {raw[e.start]:#04x} at offset "
                             f"{e.start})") from None
    lines = split_lines(raw)
    if not lines:
        raise InputError("the input is empty: nothing to translate")
    return lines, "line"


def load_translator(checkpoint: Path | None, device: str | None,
                    trust_unverified: bool = False):
    """The Translator of ``checkpoint`` (None: the shipped one, checked against the manifest) on
    ``device``; a folder without SHA256SUMS only with ``trust_unverified``. Every way loading can
    fail comes out as :class:`CheckpointError` or ValueError with a one-line message."""
    from .translator import CheckpointError, Translator
    from .utils import pick_device

    dev = pick_device(device) if device is not None else None  # ValueError: not available
    if checkpoint is None:
        try:
            return Translator.load(device=dev)
        except FileNotFoundError as e:  # no data folder, or no manifest
            raise CheckpointError(str(e)) from None
    if not checkpoint.exists():
        raise CheckpointError(f"checkpoint folder {checkpoint} does not exist")
    if not checkpoint.is_dir():
        raise CheckpointError(f"--checkpoint {checkpoint} is a file; give the folder that holds "
                              f"model.pt, config.json, tokenizer.json and train_log.json")
    try:
        return Translator.load(checkpoint, device=dev, trust_unverified=trust_unverified)
    except CheckpointError:
        raise
    except (OSError, ValueError, TypeError, KeyError, RuntimeError, EOFError, pickle.UnpicklingError) as e:
        # an unchecked folder may hold anything: a damaged model.pt, a config of another model
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"could not load the checkpoint in {checkpoint}: {first}") from None


def plan_lines(lines: list[str], unit: str = "sentence", split: bool = True,
               err=None) -> list[list[str]]:
    """The sentences of each line: split by :func:`minformer.sentences.split_sentences` (or the
    whole line when ``split`` is False), an empty list for a blank line. Writes to ``err``
    (default ``sys.stderr``) a note for each blank line and a warning for each line that does
    not look like English."""
    from .sentences import not_english_reason, split_sentences

    err = sys.stderr if err is None else err
    plan = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            print(f"{PROG}: note: {unit} {n} is blank; its output line is blank too", file=err)
            plan.append([])
            continue
        try:
            reason = not_english_reason(line)
        except (OSError, ValueError):  # no English word list (a data folder without train.tsv)
            reason = None
        if reason:
            print(f"{PROG}: warning: {unit} {n} does not look like English ({reason}); its "
                  f"translation is likely to be nonsense", file=err)
        plan.append(split_sentences(line) if split else [" ".join(line.split())])
    return plan


def _encode(translator, sentences: list[str], unit: str, n: int) -> list[list[int]]:
    """The source ids of line ``n``'s sentences; InputError naming the line if one is refused."""
    ids = []
    for sentence in sentences:
        try:
            ids += translator.encode_sources([sentence])
        except ValueError as e:
            what = "a sentence of " if len(sentences) > 1 else ""
            message = re.sub(r"^sentence 1 is ", "", str(e))
            raise InputError(f"{what}{unit} {n + 1} is {message}") from None
    return ids


def _search_lines(translator, ids: dict[int, list], unit: str, options: dict,
                  failed: dict[int, str]) -> dict[int, str]:
    """{line: its sentences' translations joined} for the lines of ``ids`` ({line: source ids of
    its sentences}), translated together; when the search refuses the batch (a length penalty
    too large for a long sentence, say), line by line, each line it refuses going to
    ``failed``."""
    def search(lines):
        flat = [(n, x) for n in lines for x in ids[n]]
        texts = translator.translate_ids([x for _, x in flat], **options)
        joined: dict[int, list[str]] = {n: [] for n in lines}
        for (n, _), text in zip(flat, texts):
            joined[n].append(" ".join(text.split()))
        return {n: " ".join(parts) for n, parts in joined.items()}

    if len(ids) > 1:
        try:
            return search(list(ids))
        except ValueError:
            pass  # which line the search refuses: each on its own
    done = {}
    for n in ids:
        done.update(_search_one(search, n, unit, failed))
    return done


def _search_one(search, n: int, unit: str, failed: dict[int, str]) -> dict[int, str]:
    try:
        return search([n])
    except ValueError as e:
        failed[n] = f"{unit} {n + 1} could not be translated: {e}"
        return {}


def translate_lines(translator, lines: list[str], unit: str = "sentence", beam: int = 4,
                    length_penalty: float = 0.6, out=None, chunk: int = CHUNK,
                    split: bool = True, err=None, min_length_ratio: float = MIN_LENGTH_RATIO,
                    min_length_slack: int = MIN_LENGTH_SLACK, no_loops: bool = NO_LOOPS,
                    split_clauses: bool = SPLIT_CLAUSES) -> tuple[int, list[int]]:
    """Translate ``lines`` and write exactly one output line per input line to ``out`` (default
    ``sys.stdout``), ``chunk`` lines at a time, flushing after each chunk. A line of several
    sentences is translated sentence by sentence (unless ``split`` is False) and the
    translations joined by a space; a blank line gives a blank line.

    A line that cannot be translated (a sentence too long for the model, or one the search
    refuses, such as a length penalty that overflows for its length) gives a blank output line
    and, on ``err`` (default ``sys.stderr``), a line ``minformer-translate: error: line N ...``
    naming it and the reason; the lines after it are translated as usual. Every sentence is
    tokenized once, before any output. min_length_ratio, min_length_slack: the length floor
    (see :meth:`Translator.search`); no_loops, split_clauses: the loop guard and clause by clause
    translation (see :meth:`Translator.translate`).

    Returns ``(written, failed)``: the number of lines written, and the numbers (from 1) of
    those that could not be translated."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    plan = plan_lines(lines, unit, split, err)
    failed: dict[int, str] = {}
    ids = {}
    for n, sentences in enumerate(plan):
        try:
            ids[n] = _encode(translator, sentences, unit, n)
        except InputError as e:
            failed[n] = str(e)
    options = dict(beam_size=beam, length_penalty=length_penalty,
                   min_length_ratio=min_length_ratio, min_length_slack=min_length_slack,
                   no_loops=no_loops, split_clauses=split_clauses)
    written = 0
    for start in range(0, len(plan), chunk):
        rows = range(start, min(start + chunk, len(plan)))
        todo = {n: ids[n] for n in rows if n in ids and ids[n]}
        translated = _search_lines(translator, todo, unit, options, failed) if todo else {}
        for n in rows:
            if n in failed:
                print(f"{PROG}: error: {failed[n]}", file=err)
            out.write(" ".join(translated.get(n, "").split()) + "\n")  # one per line
            written += 1
        out.flush()
    return written, [n + 1 for n in sorted(failed)]


def _main(argv: list[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.sentences and sys.stdin is None:  # started with <&-
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: standard input is closed: give sentences as arguments, or pipe "
              "lines into standard input", file=sys.stderr)
        return EXIT_USAGE
    if not args.sentences and sys.stdin.isatty():
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: give sentences as arguments, or pipe lines into standard input",
              file=sys.stderr)
        return EXIT_USAGE
    from .translator import CheckpointError

    try:
        lines, unit = read_lines(args.sentences)
        translator = load_translator(args.checkpoint, args.device, args.trust_unverified)
        _, failed = translate_lines(translator, lines, unit, args.beam, args.length_penalty,
                                    split=not args.no_split,
                                    min_length_ratio=args.min_length_ratio,
                                    min_length_slack=args.min_length_slack,
                                    no_loops=not args.no_guard, split_clauses=not args.whole)
    except (InputError, CheckpointError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_ERROR if failed else 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status: 0, 1 for bad input (some line that could
    not be translated, or a run that could not start) or an output that cannot be written, 2
    for bad options. A closed or full standard output, or Ctrl-C, ends it with one line on
    stderr (:func:`minformer.utils.run_command`)."""
    from .utils import run_command

    return run_command(_main, PROG, argv)


if __name__ == "__main__":
    sys.exit(main())
