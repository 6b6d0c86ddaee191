"""Translate English to Spanish from the command line with the book's shipped translator.

::

    python -m minformer.translate "Where is the train station?"
    python -m minformer.translate "I am hungry." "It is raining."   # one line each
    python -m minformer.translate < sentences.txt                  # one line per input line
    minformer-translate --beam 1 "Good morning."                   # the installed console script

Each input sentence gives exactly one output line, in input order. The default checkpoint is the
one shipped in ``data/checkpoints/en-es``, checked against ``data/manifest.json`` before it is used;
``--checkpoint DIR`` loads another folder written by :meth:`minformer.translator.Translator.save`
(unchecked). Bad input (an empty or over-long sentence, a missing or altered checkpoint, a device
that is not there) prints one line starting with ``error:`` on stderr and exits with status 1;
a wrong option exits with status 2, as argparse does.
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import sys
from pathlib import Path

EXIT_ERROR = 1  # bad input or checkpoint
EXIT_USAGE = 2  # wrong options (argparse's own code)
CHUNK = 16  # sentences translated (and printed) at a time: the first line appears early

PROG = "minformer-translate"


class InputError(ValueError):
    """A sentence the translator cannot take (empty, too long), or unreadable input."""


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1; got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number ≥ 1; got {value}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number ≥ 0; got {text!r}") from None
    if not value >= 0 or value == float("inf"):  # also rejects NaN
        raise argparse.ArgumentTypeError(f"expected a finite number ≥ 0; got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line's options (``minformer-translate --help`` prints them)."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Translate English sentences to Spanish with the book's trained Transformer "
                    "(chapter 13). One output line per input sentence.",
        epilog="With no SENTENCE, lines are read from standard input, one sentence per line. "
               "Put -- before a sentence that starts with a dash.",
    )
    parser.add_argument("sentences", nargs="*", metavar="SENTENCE", help="English sentences to translate")
    parser.add_argument("--beam", type=_positive_int, default=4, metavar="N",
                        help="beam size; 1 is greedy search (default: 4)")
    parser.add_argument("--length-penalty", type=_non_negative_float, default=0.6, metavar="ALPHA",
                        help="beam search's length penalty α; 0 turns it off (default: 0.6)")
    parser.add_argument("--checkpoint", type=Path, metavar="DIR",
                        help="a checkpoint folder written by Translator.save (default: the shipped "
                             "data/checkpoints/en-es, checked against data/manifest.json)")
    parser.add_argument("--device", choices=["cpu", "cuda", "mps"],
                        help="where to run the model (default: the CPU)")
    return parser


def read_sentences(args_sentences: list[str], stdin=None) -> tuple[list[str], str]:
    """The sentences to translate and how to name one in a message ("sentence" or "line").

    From the command-line arguments when there are any, else from ``stdin`` (a binary or text
    stream, default ``sys.stdin``), one sentence per line. An empty sentence raises
    :class:`InputError` naming it; so does input that is not UTF-8 text.
    """
    if args_sentences:
        sentences, unit = list(args_sentences), "sentence"
    else:
        stdin = sys.stdin if stdin is None else stdin
        raw = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read()
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8-sig")
            except UnicodeDecodeError as e:
                raise InputError(f"the input is not UTF-8 text (byte {raw[e.start]:#04x} at offset "
                                 f"{e.start})") from None
        sentences, unit = raw.splitlines(), "line"
        if not sentences:
            raise InputError("the input is empty: nothing to translate")
    for n, s in enumerate(sentences, 1):
        if not s.strip():
            raise InputError(f"{unit} {n} is empty: nothing to translate")
    return sentences, unit


def load_translator(checkpoint: Path | None, device: str | None):
    """The Translator of ``checkpoint`` (None: the shipped one, checked against the manifest) on
    ``device``. Every way loading can fail comes out as :class:`CheckpointError` or ValueError
    with a one-line message."""
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
        return Translator.load(checkpoint, device=dev)
    except CheckpointError:
        raise
    except (OSError, ValueError, TypeError, KeyError, RuntimeError, EOFError, pickle.UnpicklingError) as e:
        # an unchecked folder may hold anything: a damaged model.pt, a config of another model
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CheckpointError(f"could not load the checkpoint in {checkpoint}: {first}") from None


def _rename(message: str, unit: str) -> str:
    """Translator messages say "sentence N"; lines read from stdin are "line N"."""
    return re.sub(r"^sentence (\d+)", rf"{unit} \1", message) if unit != "sentence" else message


def translate_lines(translator, sentences: list[str], unit: str = "sentence", beam: int = 4,
                    length_penalty: float = 0.6, out=None, chunk: int = CHUNK) -> int:
    """Check every sentence, then translate them ``chunk`` at a time, writing one line per
    sentence to ``out`` (default ``sys.stdout``) and flushing after each chunk. Returns the
    number of lines written. An over-long sentence raises :class:`InputError` before any
    output."""
    out = sys.stdout if out is None else out
    try:
        translator.encode_sources(sentences)
    except ValueError as e:
        raise InputError(_rename(str(e), unit)) from None
    written = 0
    for start in range(0, len(sentences), chunk):
        batch = sentences[start: start + chunk]
        for line in translator.translate(batch, beam_size=beam, length_penalty=length_penalty):
            out.write(" ".join(line.split()) + "\n")  # one line per sentence, whatever it holds
            written += 1
        out.flush()
    return written


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0, 1 for bad input, 2 for bad options)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.sentences and sys.stdin.isatty():
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: give sentences as arguments, or pipe lines into standard input",
              file=sys.stderr)
        return EXIT_USAGE
    from .translator import CheckpointError

    try:
        sentences, unit = read_sentences(args.sentences)
        translator = load_translator(args.checkpoint, args.device)
        translate_lines(translator, sentences, unit, args.beam, args.length_penalty)
    except (InputError, CheckpointError, ValueError) as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `... | head -1`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
