"""The numeric environment: one definition (the Makefile's NUMERICS), used by every target that
stores or compares outputs, and actually in force when set."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from numerics import ALTERNATIVES, MAKEFILE, mismatches, pinned_numerics


def test_the_pin_names_capability_code_paths_and_threads():
    pinned = pinned_numerics()
    assert pinned["ATEN_CPU_CAPABILITY"] == "avx2"  # exists on every x86-64 machine with AVX2
    assert pinned["MKL_CBWR"] == "AVX2"
    assert pinned["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert pinned["OMP_NUM_THREADS"] == pinned["MKL_NUM_THREADS"] == "1"


def _recipe(target):
    text = MAKEFILE.read_text()
    match = re.search(rf"^{target}:.*\n((?:\t.*\n|.*\\\n)+)", text, re.M)
    assert match, f"the Makefile has no {target} target"
    return match.group(1)


def test_execute_and_test_run_under_the_same_pin():
    """Outputs are stored by `make execute` and compared by `make test`: both go through $(PINNED)."""
    assert "PINNED   := env $(NUMERICS)" in MAKEFILE.read_text()
    assert re.search(r"\$\(PINNED\) \$\(BIN\)/jupyter nbconvert --to notebook --execute", _recipe("execute"))
    assert re.search(r"\$\(PINNED\) \$\(BIN\)/python -m pytest .*\$\(NBVAL\)", _recipe("test"))
    ci = (MAKEFILE.parent / ".ci" / "run").read_text()
    assert "make test" in ci and "make execute" not in ci


def test_the_pin_takes_effect_in_a_fresh_interpreter():
    env = {**os.environ, **pinned_numerics()}
    code = ("import torch; print(torch.backends.cpu.get_cpu_capability(), "
            "torch.get_num_threads())")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["AVX2", "1"], f"under the pin torch reports {out}"


def test_mismatches_names_what_differs():
    pinned = pinned_numerics()
    assert mismatches(pinned) == []
    wrong = {**pinned, "OMP_NUM_THREADS": "2"}
    del wrong["MKL_CBWR"]
    lines = mismatches(wrong)
    assert "OMP_NUM_THREADS=2 (pinned: 1)" in lines and "MKL_CBWR=(unset) (pinned: AVX2)" in lines


def test_the_second_environment_changes_every_kernel_family():
    """`make test-alt ALT=...` checks the chapters against the same stored outputs in a second
    environment: the portable paths (any x86-64 CPU; .ci/run runs them on every machine) or the
    AVX-512 ones (.ci/run runs them too where the CPU has AVX-512). Either way PyTorch's own
    kernels, MKL's and oneDNN's code paths all differ from the pin, and the threads do not."""
    pinned = pinned_numerics()
    for name in ALTERNATIVES:
        alt = pinned_numerics(name)
        assert set(alt) == set(pinned), name
        for family in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA"):
            assert alt[family] != pinned[family], (name, family)
        assert alt["OMP_NUM_THREADS"] == alt["MKL_NUM_THREADS"] == "1"
    recipe = _recipe("test-alt")
    assert 'portable) numerics="$(NUMERICS_ALT_PORTABLE)"' in recipe
    assert 'numerics="$(NUMERICS_ALT_AVX512)"' in recipe
    # the chapters, with their prose solutions inserted where a reader runs them
    assert "tests/solutions_edition.py _build/solutions" in recipe
    assert re.search(r"env \$\$numerics \$\(BIN\)/python -m pytest .*\$\(NBVAL\)", recipe)
    assert "_build/solutions --durations" in recipe
    ci = (MAKEFILE.parent / ".ci" / "run").read_text()
    portable = ci.index("make test-alt ALT=portable")
    assert ci.index("make test\n") < portable
    # the portable pass is unconditional; the AVX-512 one follows where the CPU has it
    assert not re.search(r"^\s*if .*\n.*make test-alt ALT=portable", ci, re.M)
    assert re.search(r"^if grep -qw avx512f /proc/cpuinfo; then\n.*make test-alt ALT=avx512", ci, re.M)


def _capability(env_name):
    env = {**os.environ, **pinned_numerics(env_name)}
    code = "import torch; print(torch.backends.cpu.get_cpu_capability(), torch.get_num_threads())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.split()


def test_the_second_environments_take_effect():
    # torch 2.5 names the unvectorized kernels "NO AVX"; 2.13 and 2.15 name them "DEFAULT"
    assert _capability("NUMERICS_ALT_PORTABLE") in (["DEFAULT", "1"], ["NO", "AVX", "1"])
    has_avx512 = "avx512f" in Path("/proc/cpuinfo").read_text().split()
    if has_avx512:
        assert _capability("NUMERICS_ALT_AVX512") == ["AVX512", "1"]


def _environment(name, extra=()):
    """os.environ without any numeric setting, then ``name``'s (None: the pin with MKL_CBWR
    changed, a third setting) and ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k not in pinned_numerics() and k != "MINFORMER_READER_RUN"}
    env.update(extra)
    env.update(pinned_numerics(name) if name else {**pinned_numerics(), "MKL_CBWR": "COMPATIBLE"})
    return env


def test_nbval_refuses_a_third_environment():
    """chapters/conftest.py compares stored outputs only under the pin or a NUMERICS_ALT_*: two
    real nbval runs (the pin collects, a third setting stops with status 4) show the hook is
    wired in; the hook itself decides every case below."""
    repo = MAKEFILE.parent
    for name, expect in (("NUMERICS", 0), (None, 4)):
        got = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval", "--nbval-current-env",
                              "--collect-only", "-p", "no:cacheprovider",
                              "chapters/01_dot_product_attention.ipynb"],
                             cwd=repo, env=_environment(name), capture_output=True, text=True)
        assert got.returncode == expect, (name, got.stdout[-500:], got.stderr[-500:])


def test_the_chapters_hook_accepts_the_pin_the_alternatives_and_the_readers_run(monkeypatch):
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location("chapters_conftest",
                                                  MAKEFILE.parent / "chapters" / "conftest.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    config = SimpleNamespace(option=SimpleNamespace(nbval=True, nbval_lax=False))
    reader = {"MINFORMER_READER_RUN": "1"}
    # the third setting is refused unless it is the reader's run (make test-reader), which
    # leaves the numeric environment unpinned on purpose
    for name, extra, refused in (("NUMERICS", {}, False), *((alt, {}, False) for alt in ALTERNATIVES),
                                 (None, {}, True), (None, reader, False)):
        monkeypatch.setattr(os, "environ", _environment(name, extra))
        if refused:
            with pytest.raises(pytest.exit.Exception, match="MKL_CBWR=COMPATIBLE"):
                hook.pytest_configure(config)
        else:
            hook.pytest_configure(config)
    monkeypatch.setattr(os, "environ", _environment(None))
    hook.pytest_configure(SimpleNamespace(option=SimpleNamespace(nbval=False, nbval_lax=False)))
