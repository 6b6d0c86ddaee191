"""nbval re-runs the chapters and compares their stored outputs, which `make execute` made under
the Makefile's pinned numeric environment: refuse to compare under any other setting than that
pin or one of the second environments of `make test-alt`.

The one exception is the reader's run (`make test-reader`, .ci/reader), which sets
MINFORMER_READER_RUN=1: it runs the chapters on a reader's stack with the numeric environment
deliberately left unpinned, where the exact outputs must still match character for character and
the run-dependent ones (tagged nbval-ignore-output) are checked by the chapters' own assertions."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from numerics import ALTERNATIVES, mismatches  # noqa: E402

READER_RUN = "MINFORMER_READER_RUN"


def pytest_configure(config):
    if getattr(config.option, "nbval", False) or getattr(config.option, "nbval_lax", False):
        if os.environ.get(READER_RUN) == "1":
            return
        wrong = mismatches(os.environ)
        if wrong and all(mismatches(os.environ, alt) for alt in ALTERNATIVES):
            pytest.exit("the stored outputs were made under the Makefile's pinned numeric "
                        "environment, but here " + ", ".join(wrong)
                        + ". Run `make test`, or prefix the command with the Makefile's NUMERICS "
                        f"(the reader's run, `make test-reader`, sets {READER_RUN}=1 instead).",
                        returncode=4)


def pytest_report_header(config):
    if os.environ.get(READER_RUN) == "1" and getattr(config.option, "nbval", False):
        return (f"{READER_RUN}=1: the reader's run, numeric environment unpinned; exact outputs "
                "compared, nbval-ignore-output cells checked by the chapters' assertions")
