"""nbval re-runs the chapters and compares their stored outputs, which `make execute` made under
the Makefile's pinned numeric environment: refuse to compare under any other setting than that
pin or one of the second environments of `make test-alt`."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from numerics import ALTERNATIVES, mismatches  # noqa: E402


def pytest_configure(config):
    if getattr(config.option, "nbval", False) or getattr(config.option, "nbval_lax", False):
        wrong = mismatches(os.environ)
        if wrong and all(mismatches(os.environ, alt) for alt in ALTERNATIVES):
            pytest.exit("the stored outputs were made under the Makefile's pinned numeric "
                        "environment, but here " + ", ".join(wrong)
                        + ". Run `make test`, or prefix the command with the Makefile's NUMERICS.",
                        returncode=4)
