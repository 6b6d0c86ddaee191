"""The command-line translator (python -m minformer.translate), against a tiny untrained
checkpoint: what it prints is gibberish, but one line per sentence, and every kind of bad input
gives one clear line on stderr and a non-zero exit, never a traceback."""

import hashlib
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from minformer import translate
from minformer.tokenizer import BPETokenizer
from minformer.transformer import Transformer, TransformerConfig
from minformer.translator import FILES, CheckpointError, Translator

REPO = Path(__file__).resolve().parents[1]

MAX_SOURCE = 24
# the command's search settings besides the beam: the length floor, the loop guard, clauses
PRODUCT = dict(min_length_ratio=translate.MIN_LENGTH_RATIO,
               min_length_slack=translate.MIN_LENGTH_SLACK, no_loops=translate.NO_LOOPS,
               split_clauses=translate.SPLIT_CLAUSES)


def _write_checkpoint(folder):
    text = ["Where is the train station?", "¿Dónde está la estación de tren?", "I am hungry.",
            "Tengo hambre."] * 3
    tok = BPETokenizer.train(text, 300)
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32, n_layers=1,
                               max_len=32, pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
    return Translator(Transformer(config).eval(), tok, max_source_tokens=MAX_SOURCE).save(folder, {"tiny": True})


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ckpt") / "en-es"
    _write_checkpoint(folder)
    return folder


@pytest.fixture
def data_folder(tmp_path):
    """A data folder as MINFORMER_DATA sees it: checkpoints/en-es listed in manifest.json."""
    sums = _write_checkpoint(tmp_path / "checkpoints" / "en-es")
    files = {f"checkpoints/en-es/{name}": {"sha256": sums[name],
                                           "bytes": (tmp_path / "checkpoints" / "en-es" / name).stat().st_size,
                                           "source": "tests"} for name in FILES}
    (tmp_path / "manifest.json").write_text(json.dumps({"files": files}), encoding="utf-8")
    return tmp_path


def _run(*args, stdin="", env=None):
    full_env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "code"), **(env or {}))
    return subprocess.run([sys.executable, "-m", "minformer.translate", *map(str, args)], input=stdin.encode(),
                          capture_output=True, env=full_env, timeout=120)


def _one_error_line(proc):
    err = proc.stderr.decode()
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minformer-translate: error: "), err
    return lines[0]


# ---------------------------------------------------------------- what it prints


def test_one_line_per_argument_and_first_output_is_quick(checkpoint):
    start = time.perf_counter()
    proc = _run("--checkpoint", checkpoint, "--beam", 2, "Where is the train station?", "I am hungry.")
    seconds = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stderr == b""
    assert len(proc.stdout.decode().split("\n")) == 3  # two lines, each ending with "\n"
    assert seconds < 30  # interpreter + torch import + load + decode; ~2 s on a quiet 2-core CPU


def test_stdin_lines_in_order_and_same_as_the_translator(checkpoint):
    sentences = ["I am hungry.", "Where is the train station?", "I am here."]
    proc = _run("--checkpoint", checkpoint, "--beam", 1, stdin="\n".join(sentences) + "\n")
    assert proc.returncode == 0, proc.stderr.decode()
    expected = Translator.load(checkpoint).translate(sentences, beam_size=1, **PRODUCT)
    assert proc.stdout.decode().split("\n")[:-1] == [" ".join(s.split()) for s in expected]


def test_main_in_process(checkpoint, capsys):
    assert translate.main(["--checkpoint", str(checkpoint), "--beam", "3", "--length-penalty", "0",
                           "I am hungry."]) == 0
    out = capsys.readouterr()
    assert out.out.count("\n") == 1 and out.err == ""


def test_translate_lines_chunks_and_counts(checkpoint):
    translator = Translator.load(checkpoint)
    out = io.StringIO()
    sentences = [f"I am {n}." for n in range(5)]
    assert translate.translate_lines(translator, sentences, beam=1, out=out, chunk=2) == (5, [])
    expected = translator.translate(sentences, **PRODUCT)
    assert out.getvalue().split("\n")[:-1] == [" ".join(s.split()) for s in expected]


def test_the_minimum_length_is_an_option(checkpoint):
    """--min-length-ratio reaches the search: 0 gives the plain search's output."""
    sentence = "I am hungry."
    translator = Translator.load(checkpoint)
    for ratio, slack in (("0", "0"), ("1.2", "0"), ("1.5", "2")):
        proc = _run("--checkpoint", checkpoint, "--beam", 1, "--min-length-ratio", ratio,
                    "--min-length-slack", slack, sentence)
        assert proc.returncode == 0, proc.stderr.decode()
        expected = translator.translate([sentence], beam_size=1, min_length_ratio=float(ratio),
                                        min_length_slack=int(slack), no_loops=True,
                                        split_clauses=True)[0]
        assert proc.stdout.decode() == " ".join(expected.split()) + "\n"


def test_read_lines():
    assert translate.read_lines(["a", "b"]) == (["a", "b"], "sentence")
    assert translate.read_lines(["two\nlines"]) == (["two lines"], "sentence")
    assert translate.read_lines([], io.BytesIO("\ufeffI am.\r\nYou are.\n".encode())) == (
        ["I am.", "You are."], "line")
    assert translate.read_lines([], io.StringIO("one\n")) == (["one"], "line")
    # blank lines are kept (each gives a blank output line); a final newline adds none
    assert translate.read_lines([], io.BytesIO(b"one\n  \nthree\n\n")) == (
        ["one", "  ", "three", ""], "line")
    # only "\n" ends a line: \v, \f, \x1c, U+0085, U+2028 and U+2029 do not
    odd = "a\x0bb\x0cc\x1cd\u0085e\u2028f\u2029g\nnext\n"
    assert translate.read_lines([], io.BytesIO(odd.encode()))[0] == [odd.split("\n")[0], "next"]
    with pytest.raises(translate.InputError, match="input is empty"):
        translate.read_lines([], io.BytesIO(b""))
    with pytest.raises(translate.InputError, match="not UTF-8 text .byte 0xff at offset 3"):
        translate.read_lines([], io.BytesIO(b"abc\xff\n"))


def _main(checkpoint, args, stdin, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
    code = translate.main(["--checkpoint", str(checkpoint), "--beam", "1", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("stdin", ["I am.\x0bYou are.\nI am here.\n", "I am.\u2028You are.\nI am.\n",
                                   "I am.\x0cHi\u0085there\nI am.\n"])
def test_odd_line_breaks_keep_one_output_line_per_input_line(checkpoint, stdin, monkeypatch, capsys):
    code, out, err = _main(checkpoint, [], stdin, monkeypatch, capsys)
    assert code == 0, err
    assert out.count("\n") == 2


def test_blank_lines_give_blank_lines_and_a_note(checkpoint, monkeypatch, capsys):
    code, out, err = _main(checkpoint, [], "I am hungry.\n\n  \nI am here.\n\n", monkeypatch, capsys)
    assert code == 0, err
    lines = out.split("\n")[:-1]
    first, second = Translator.load(checkpoint).translate(["I am hungry.", "I am here."],
                                                          **PRODUCT)
    assert lines == [" ".join(first.split()), "", "", " ".join(second.split()), ""]
    notes = err.strip().splitlines()
    assert notes == [f"minformer-translate: note: line {n} is blank; its output line is blank too"
                     for n in (2, 3, 5)]
    code, out, err = _main(checkpoint, ["Hi.", "   "], "", monkeypatch, capsys)
    assert code == 0 and out.split("\n")[1] == "" and "sentence 2 is blank" in err


def test_a_line_of_several_sentences_is_split_and_joined(checkpoint, monkeypatch, capsys):
    translator = Translator.load(checkpoint)
    one, two = translator.translate(["I am hungry.", "Where is the train station?"], **PRODUCT)
    code, out, err = _main(checkpoint, [], "I am hungry. Where is the train station?\n", monkeypatch, capsys)
    assert code == 0, err
    assert out == " ".join(f"{one} {two}".split()) + "\n"
    code, out, _ = _main(checkpoint, ["--no-split"], "I am hungry. Where is the train station?\n",
                         monkeypatch, capsys)
    whole, = translator.translate(["I am hungry. Where is the train station?"], **PRODUCT)
    assert out == " ".join(whole.split()) + "\n"


def test_a_line_that_is_not_english_is_translated_with_a_warning(checkpoint, monkeypatch, capsys):
    code, out, err = _main(checkpoint, [], "Hola, ¿cómo estás?\nI am hungry.\n", monkeypatch, capsys)
    assert code == 0 and out.count("\n") == 2
    assert err.startswith("minformer-translate: warning: line 1 does not look like English")
    assert "line 2" not in err


@pytest.mark.parametrize("line, reason", [("\x00\x00\x00", "holds control characters such as U+0000"),
                                          ("?! ... ;;", "has no words, only punctuation")])
def test_nul_bytes_and_punctuation_get_the_warning(checkpoint, line, reason, monkeypatch, capsys):
    code, out, err = _main(checkpoint, [], f"{line}\nI am hungry.\n", monkeypatch, capsys)
    assert code == 0 and out.count("\n") == 2
    assert err.startswith(f"minformer-translate: warning: line 1 does not look like English (it {reason}")
    assert "line 2" not in err


def test_a_closed_standard_input_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", None)
    assert translate.main([]) == 2
    err = capsys.readouterr().err
    assert "error: standard input is closed" in err and "Traceback" not in err
    with pytest.raises(translate.InputError, match="standard input is closed"):
        translate.read_lines([], None)


def test_a_closed_standard_input_in_a_subprocess(checkpoint):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "code"))
    proc = subprocess.run(f"{sys.executable} -m minformer.translate --checkpoint {checkpoint} <&-",
                          shell=True, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 2 and b"standard input is closed" in proc.stderr
    assert b"Traceback" not in proc.stderr


def test_load_translator(checkpoint, tmp_path):
    assert isinstance(translate.load_translator(checkpoint, "cpu"), Translator)
    with pytest.raises(CheckpointError, match="does not exist"):
        translate.load_translator(tmp_path / "nope", None)


def test_parser_defaults():
    args = translate.build_parser().parse_args(["hi"])
    assert (args.beam, args.length_penalty, args.checkpoint, args.device) == (4, 0.6, None, None)
    assert (args.min_length_ratio, args.min_length_slack) == (1.0, 3)
    assert (translate.MIN_LENGTH_RATIO, translate.MIN_LENGTH_SLACK) == (1.0, 3)
    assert (args.no_guard, args.whole) == (False, False)  # the guard and clauses are on
    assert (translate.NO_LOOPS, translate.SPLIT_CLAUSES) == (True, True)


def test_console_script_is_declared():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'minformer-translate = "minformer.translate:main"' in text


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("args, stdin, message", [
    (["--beam", 1], "", "the input is empty"),
    (["--device", "cuda", "Hi."], "", "cuda.* not available"),
])
def test_bad_input_one_line_and_exit_1(checkpoint, args, stdin, message, monkeypatch, capsys):
    if "cuda" in args and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    # in process (an uncaught exception would fail the test); subprocesses are checked below
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
    assert translate.main(["--checkpoint", str(checkpoint), *map(str, args)]) == 1
    out = capsys.readouterr()
    assert out.out == ""  # nothing printed before the error: every sentence is checked first
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minformer-translate: error: "), out.err
    assert re.search(message, lines[0]), out.err


@pytest.mark.parametrize("args, stdin, message, blank", [
    (["--beam", 1], "Hi. Word " + "word " * 40 + "\n", "a sentence of line 1 is too long", 0),
    (["--beam", 1, "word " * 40], "", f"sentence 1 is too long: .* at most {MAX_SOURCE}", 0),
    (["--beam", 1, "Hi.", "word " * 40, "I am."], "", "sentence 2 is too long", 1),
    (["--beam", 1], "Hi.\n" + "word " * 40 + "\nI am.\n", "line 2 is too long", 1),
])
def test_a_line_that_cannot_be_translated_gives_a_blank_line_and_the_run_goes_on(
        checkpoint, args, stdin, message, blank, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
    assert translate.main(["--checkpoint", str(checkpoint), *map(str, args)]) == 1
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minformer-translate: error: "), out.err
    assert re.search(message, lines[0]), out.err
    inputs = args[2:] or stdin.split("\n")[:-1]
    outputs = out.out.split("\n")[:-1]
    good = [line for k, line in enumerate(inputs) if k != blank]
    expected = Translator.load(checkpoint).translate(good, **PRODUCT) if good else []
    expected.insert(blank, "")
    assert outputs == [" ".join(e.split()) for e in expected]


def test_a_search_that_refuses_one_line_loses_no_other_line(checkpoint, monkeypatch, capsys):
    """A length penalty of 25 overflows for a 31-token output only: the long 17th line (in the
    second chunk) fails alone, every other line is translated as it would be on its own."""
    short = [f"I am {n}." for n in range(20)]
    long = "Where is the train station? I am hungry."  # 17 tokens: up to 31 out
    lines = short[:16] + [long] + short[16:]
    stdin = "".join(f"{line}\n" for line in lines)
    code, out, err = _main(checkpoint, ["--no-split", "--beam", "2", "--length-penalty", "25"],
                           stdin, monkeypatch, capsys)
    assert code == 1
    assert err.strip().splitlines() == [err.strip()]
    assert re.search(r"^minformer-translate: error: line 17 could not be translated: "
                     r"length_penalty=25 is too large", err)
    outputs = out.split("\n")[:-1]
    translator = Translator.load(checkpoint)
    expected = translator.translate(short, beam_size=2, length_penalty=25, **PRODUCT)
    assert outputs == [" ".join(e.split()) for e in expected[:16]] + [""] + [
        " ".join(e.split()) for e in expected[16:]]


def test_bad_input_in_a_subprocess(checkpoint):
    proc = _run("--checkpoint", checkpoint, stdin="Hi.\n" + "word " * 40 + "\n")
    assert proc.returncode == 1 and proc.stdout.decode().split("\n")[1:] == ["", ""]
    assert "line 2 is too long" in _one_error_line(proc)


def _shell(command, checkpoint):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "code"))
    return subprocess.run(f"{sys.executable} -m minformer.translate --checkpoint {checkpoint} "
                          f"--beam 1 {command}", shell=True, input=b"I am.\n" * 40,
                          capture_output=True, env=env, timeout=120)


def test_a_closed_standard_output_is_one_line(checkpoint):
    proc = _shell(">&-", checkpoint)
    assert proc.returncode == 1
    assert "standard output is closed" in _one_error_line(proc)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_standard_output_is_one_line(checkpoint):
    proc = _shell("> /dev/full", checkpoint)
    assert proc.returncode == 1
    assert "cannot write to standard output: No space left on device" in _one_error_line(proc)


def test_a_folder_without_checksums_needs_trust_unverified(checkpoint, tmp_path):
    folder = tmp_path / "unverified"
    folder.mkdir()
    for name in FILES:
        (folder / name).write_bytes((checkpoint / name).read_bytes())
    proc = _run("--checkpoint", folder, "--beam", 1, "I am hungry.")
    assert proc.returncode == 1 and "has no SHA256SUMS file" in _one_error_line(proc)
    assert "--trust-unverified" in proc.stderr.decode()
    proc = _run("--checkpoint", folder, "--trust-unverified", "--beam", 1, "I am hungry.")
    assert proc.returncode == 0 and proc.stdout.count(b"\n") == 1, proc.stderr.decode()
    assert "--trust-unverified" in translate.build_parser().format_help()


def test_bad_options_exit_2(checkpoint, capsys):
    for args in (["--beam", "0", "Hi."], ["--beam", "two", "Hi."], ["--length-penalty", "-1", "Hi."],
                 ["--length-penalty", "nan", "Hi."], ["--device", "tpu", "Hi."],
                 ["--min-length-ratio", "-0.5", "Hi."], ["--min-length-ratio", "5", "Hi."],
                 ["--min-length-ratio", "x", "Hi."], ["--min-length-slack", "-1", "Hi."],
                 ["--min-length-slack", "2.5", "Hi."]):
        with pytest.raises(SystemExit) as exit_info:
            translate.main(["--checkpoint", str(checkpoint), *args])
        assert exit_info.value.code == 2
        assert "minformer-translate: error: argument" in capsys.readouterr().err


def test_no_sentences_from_a_terminal_is_a_usage_error(monkeypatch, capsys):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())
    assert translate.main([]) == 2
    assert "give sentences as arguments, or pipe lines" in capsys.readouterr().err


def test_missing_and_damaged_checkpoint_folders(checkpoint, tmp_path):
    proc = _run("--checkpoint", tmp_path / "nope", "Hi.")
    assert proc.returncode == 1 and "does not exist" in _one_error_line(proc)
    proc = _run("--checkpoint", checkpoint / "model.pt", "Hi.")
    assert proc.returncode == 1 and "is a file" in _one_error_line(proc)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    for name in FILES:
        (damaged / name).write_bytes((checkpoint / name).read_bytes())
    (damaged / "config.json").unlink()
    proc = _run("--checkpoint", damaged, "Hi.")
    assert proc.returncode == 1 and "missing" in _one_error_line(proc) and "config.json" in proc.stderr.decode()
    (damaged / "config.json").write_bytes((checkpoint / "config.json").read_bytes())
    (damaged / "model.pt").write_bytes((checkpoint / "model.pt").read_bytes()[:1000])  # truncated
    proc = _run("--checkpoint", damaged, "--trust-unverified", "Hi.")  # (it has no SHA256SUMS)
    assert proc.returncode == 1 and "model.pt cannot be read as a checkpoint" in _one_error_line(proc)


def test_shipped_checkpoint_is_checked_against_the_manifest(data_folder):
    env = {"MINFORMER_DATA": str(data_folder)}
    proc = _run("--beam", 1, "I am hungry.", env=env)
    assert proc.returncode == 0 and proc.stdout.count(b"\n") == 1, proc.stderr.decode()
    path = data_folder / "checkpoints" / "en-es" / "model.pt"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of one weight: still loads, but is not what shipped
    path.write_bytes(bytes(data))
    assert hashlib.sha256(data).hexdigest() not in (data_folder / "manifest.json").read_text()
    proc = _run("I am hungry.", env=env)
    line = _one_error_line(proc)
    assert proc.returncode == 1 and "model.pt differs from the checkpoint that was shipped" in line
    path.unlink()
    proc = _run("I am hungry.", env=env)
    assert proc.returncode == 1 and "missing" in _one_error_line(proc)


def test_no_checkpoint_in_manifest_or_no_data_folder(tmp_path):
    (tmp_path / "manifest.json").write_text('{"files": {}}', encoding="utf-8")
    proc = _run("Hi.", env={"MINFORMER_DATA": str(tmp_path)})
    assert proc.returncode == 1 and "lists no checkpoint" in _one_error_line(proc)
    proc = _run("Hi.", env={"MINFORMER_DATA": str(tmp_path / "absent")})
    assert proc.returncode == 1 and "is not a folder" in _one_error_line(proc)


def test_closed_pipe_is_not_an_error(checkpoint):
    full_env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(REPO / "code"))
    proc = subprocess.run(f"{sys.executable} -m minformer.translate --checkpoint {checkpoint} --beam 1 | head -c 1",
                          shell=True, input=b"I am.\n" * 200, capture_output=True, env=full_env, timeout=120)
    assert b"Traceback" not in proc.stderr and b"Error" not in proc.stderr, proc.stderr
