"""Shared test helpers (importable: pytest puts tests/ on sys.path)."""

import pytest

from minformer.checks import CheckFailed


def rejects(checker, fn, *fragments):
    """``checker(fn)`` must fail with CheckFailed, its message containing every fragment."""
    with pytest.raises(CheckFailed) as err:
        checker(fn)
    for fragment in fragments:
        assert fragment in str(err.value), str(err.value)
