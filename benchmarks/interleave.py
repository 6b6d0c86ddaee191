"""The timing loop every benchmark here shares: the things compared run in interleaved
repetitions (A B, B A, A B, ...), so a burst of load from another program falls on both."""

import time
from collections.abc import Callable


def interleaved(runs: dict[str, Callable[[], object]], reps: int) -> dict[str, list]:
    """Call every function of ``runs`` ``reps`` times, alternating which goes first in each
    repetition; returns {name: [what each call returned, ...]}."""
    results = {name: [] for name in runs}
    names = list(runs)
    for r in range(reps):
        for name in names if r % 2 == 0 else names[::-1]:
            results[name].append(runs[name]())
    return results


def timed(fn: Callable[[], object]) -> Callable[[], tuple[float, object]]:
    """``fn`` wrapped to return (seconds it took, its result)."""
    def run():
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    return run
