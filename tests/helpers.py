"""Shared test helpers (importable: pytest puts tests/ on sys.path)."""

import pytest

from minformer.checks import CheckFailed


def rejects(checker, fn, *fragments, seeds=(None,)):
    """``checker(fn)`` must fail with CheckFailed, its message containing every fragment; with
    ``seeds``, on each of those seeds (a wrong answer must not escape on a lucky one)."""
    for seed in seeds:
        with pytest.raises(CheckFailed) as err:
            checker(fn, seed=seed)
        for fragment in fragments:
            assert fragment in str(err.value), (seed, str(err.value))


def recorded(fn):
    """Record fn's outputs on one call of a checker; replay them, in order, on the next (a
    hard-coded answer)."""
    outputs = []

    def record(*args):
        outputs.append(fn(*args))
        return outputs[-1]

    def replay(*args):
        return outputs.pop(0) if outputs else fn(*args)

    return record, replay
