"""What a user types after `make` (URL=, NB=, JOBS=, DEVICE=, DTYPE=, ALT=) is data, never a command:
each injection below would run `touch` if make expanded it or a shell read it as code. The
Makefile runs in a temporary copy of the repository's top level, with a stand-in interpreter
that records the arguments and environment it was given (and, for `set-repository`, runs
minformer.publish on a throw-away book), so nothing here touches the repository."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# What make receives (the shell's quoting already undone): make's own $(shell ...), a shell
# command substitution written for make ($$), backticks, a break-out of double quotes, a ';'.
INJECTIONS = [
    "$(shell touch pwned)",
    "https://github.com/a/b$(shell touch pwned)",
    "$$(touch pwned)",
    "`touch pwned`",
    '"; touch pwned; echo "',
    "https://github.com/a/b\"; touch pwned; echo \"",
    "x; touch pwned",
    "$(touch pwned)",
]

STAND_IN = """#!{python}
import json, os, sys
record = {{"argv": sys.argv[1:], "env": {{k: v for k, v in os.environ.items()
                                        if k.startswith("ARG_") or k in {names!r}}}}}
with open({log!r}, "a") as log:
    log.write(json.dumps(record) + "\\n")
if sys.argv[1:3] == ["-m", "minformer.publish"]:
    sys.path.insert(0, {code!r})
    from minformer.publish import main
    sys.exit(main(sys.argv[3:] + ["--root", {book!r}]))
"""


@pytest.fixture
def copy(tmp_path):
    """A copy of the Makefile and its inputs, a stand-in .venv and a throw-away book."""
    if shutil.which("make") is None:
        pytest.skip("needs make")
    top = tmp_path / "repo"
    top.mkdir()
    for name in ("Makefile", "requirements.txt", "pyproject.toml"):
        shutil.copy(REPO / name, top / name)
    book = tmp_path / "book"
    book.mkdir()
    (book / "_config.yml").write_text("repository:\n  url: https://github.com/old/book\n")
    (book / "README.md").write_text("See https://github.com/old/book.\n")
    log = tmp_path / "calls.jsonl"
    bin_ = top / ".venv" / "bin"
    bin_.mkdir(parents=True)
    script = STAND_IN.format(python=sys.executable, log=str(log), code=str(REPO / "code"),
                             book=str(book),
                             names=("URL", "NB", "JOBS", "DEVICE", "DTYPE", "READER_PYTHON", "TORCH", "ALT",
                                    "ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA"))
    for name in ("python", "jupytext", "jupyter", "jupyter-book"):
        (bin_ / name).write_text(script)
        (bin_ / name).chmod(0o755)
    (top / ".venv" / ".installed").touch()  # newer than requirements.txt: nothing to install
    return top, book, log


def make(top, *args, env=None):
    return subprocess.run(["make", "--no-print-directory", "-C", str(top), *args],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def nothing_ran(tmp_path):
    touched = sorted(str(p) for p in tmp_path.rglob("pwned"))
    assert touched == [], f"an injection ran: {touched}"


@pytest.mark.parametrize("url", INJECTIONS)
def test_set_repository_hands_the_url_over_as_text(copy, tmp_path, url):
    top, book, log = copy
    run = make(top, "set-repository", f"URL={url}")
    nothing_ran(tmp_path)
    assert run.returncode != 0
    assert "not a GitHub repository address" in run.stderr, run.stderr
    (call,) = calls(log)
    assert call["env"]["ARG_URL"] == url  # the text typed, unexpanded
    assert "URL" not in call["env"]  # make did not export (and so expand) the variable
    assert (book / "_config.yml").read_text().endswith("github.com/old/book\n")


@pytest.mark.parametrize("url", INJECTIONS[:4])
def test_set_repository_from_the_environment_is_text_too(copy, tmp_path, url):
    top, _, log = copy
    run = make(top, "set-repository", env={"URL": url})
    nothing_ran(tmp_path)
    assert run.returncode != 0 and calls(log)[0]["env"]["ARG_URL"] == url


def test_set_repository_still_moves_the_book(copy):
    top, book, _ = copy
    run = make(top, "set-repository", "URL=https://github.com/someone/else")
    assert run.returncode == 0, run.stderr
    assert "url: https://github.com/someone/else" in (book / "_config.yml").read_text()
    assert "github.com/someone/else." in (book / "README.md").read_text()


def test_set_repository_without_a_url_prints_the_usage(copy):
    top, _, log = copy
    run = make(top, "set-repository")
    assert run.returncode != 0 and "usage: make set-repository URL=" in run.stdout
    assert calls(log) == []


@pytest.mark.parametrize(("target", "variable", "flag"), [
    ("test", "JOBS", "-n"),
    ("bench", "DEVICE", "--device"),
    ("export-translator", "DTYPE", "--dtype"),
])
@pytest.mark.parametrize("value", INJECTIONS[::2])
def test_the_other_variables_reach_their_command_as_one_argument(copy, tmp_path, target,
                                                                  variable, flag, value):
    top, _, log = copy
    make(top, target, f"{variable}={value}")
    nothing_ran(tmp_path)
    argv = calls(log)[0]["argv"]
    assert argv[argv.index(flag) + 1] == value


@pytest.mark.parametrize("value", INJECTIONS)
def test_notebook_lists_are_words_not_commands(copy, tmp_path, value):
    top, _, _ = copy
    run = make(top, "sync", f"NB={value}")
    nothing_ran(tmp_path)
    assert run.returncode != 0 and "no twin" in run.stdout


def test_the_defaults_still_apply(copy):
    top, _, log = copy
    for target in ("test", "bench", "export-translator"):
        assert make(top, target).returncode == 0
    argvs = [c["argv"] for c in calls(log)]
    assert argvs[0][argvs[0].index("-n") + 1] == "2"
    assert argvs[1][argvs[1].index("--device") + 1] == "cpu"
    assert argvs[2][argvs[2].index("--dtype") + 1] == "float16"


@pytest.mark.parametrize("value", INJECTIONS)
def test_the_readers_run_gets_its_variables_as_text(copy, tmp_path, value):
    """make test-reader hands READER_PYTHON, TORCH, JOBS and NB to .ci/reader (a stand-in here)
    as ARG_* text; .ci/reader itself refuses a TORCH or JOBS that is not a number."""
    top, _, log = copy
    reader = top / ".ci" / "reader"
    reader.parent.mkdir()
    shutil.copy(top / ".venv" / "bin" / "python", reader)
    make(top, "test-reader", f"READER_PYTHON={value}", f"TORCH={value}", f"JOBS={value}", f"NB={value}")
    nothing_ran(tmp_path)
    (call,) = calls(log)
    assert [call["env"][f"ARG_{name}"] for name in ("READER_PYTHON", "TORCH", "JOBS", "NB")] == [value] * 4
    assert not {"READER_PYTHON", "TORCH"} & set(call["env"])


def test_the_readers_run_refuses_a_torch_that_is_not_a_version(tmp_path):
    for name, value in (("ARG_TORCH", "2.5; touch pwned"), ("ARG_JOBS", "$(touch pwned)")):
        run = subprocess.run([str(REPO / ".ci" / "reader")], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, name: value, "ARG_READER_PYTHON": sys.executable}, timeout=60)
        nothing_ran(tmp_path)
        assert run.returncode == 2 and "must be" in run.stderr, run.stderr


# make test-alt ALT=portable|avx512: the second numeric environment asked for, or refused
ENVIRONMENTS = {"portable": ("default", "SSE4_2", "SSE41"), "avx512": ("avx512", "AVX512", "AVX512_CORE")}


@pytest.mark.parametrize(("alt", "cpu_has_avx512", "chosen"), [
    (None, True, "avx512"), (None, False, "portable"),
    ("portable", True, "portable"), ("portable", False, "portable"), ("avx512", True, "avx512"),
])
def test_test_alt_runs_the_environment_asked_for(copy, alt, cpu_has_avx512, chosen):
    top, _, log = copy
    args = ["test-alt", f"HAS_AVX512={'yes' if cpu_has_avx512 else ''}"]
    run = make(top, *args, *([f"ALT={alt}"] if alt else []))
    assert run.returncode == 0, run.stderr
    assert f"second numeric environment ({chosen}): " in run.stdout
    # the chapters with their prose solutions inserted are written, then run by nbval
    write, call = calls(log)
    assert write["argv"] == ["tests/solutions_edition.py", "_build/solutions"]
    env = call["env"]
    assert (env["ATEN_CPU_CAPABILITY"], env["MKL_CBWR"], env["ONEDNN_MAX_CPU_ISA"]) == ENVIRONMENTS[chosen]
    assert call["argv"][:4] == ["-m", "pytest", "-n", "2"] and {"--nbval", "_build/solutions"} <= set(call["argv"])


@pytest.mark.parametrize(("alt", "message"), [
    ("avx512", "ALT=avx512 needs a CPU with AVX-512"),
    ("pinned", "ALT must be portable or avx512, not 'pinned'"),
    ("", "ALT must be portable or avx512, not ''"),
    *((value, f"ALT must be portable or avx512, not '{value}'") for value in INJECTIONS),
])
def test_test_alt_refuses_what_it_cannot_run(copy, tmp_path, alt, message):
    top, _, log = copy
    run = make(top, "test-alt", "HAS_AVX512=", f"ALT={alt}")
    nothing_ran(tmp_path)
    assert run.returncode != 0 and message in run.stderr, (run.stdout, run.stderr)
    assert calls(log) == []
