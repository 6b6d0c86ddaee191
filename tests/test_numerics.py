"""The numeric environment: one definition (the Makefile's NUMERICS), used by every target that
stores or compares outputs, and actually in force when set."""

import os
import re
import subprocess
import sys

from numerics import MAKEFILE, mismatches, pinned_numerics


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
