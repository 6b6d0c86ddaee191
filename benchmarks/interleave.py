"""The timing loop every benchmark here shares: the things compared run in interleaved
repetitions (A B, B A, A B, ...), so a burst of load from another program falls on both.

Every benchmark takes ``--device`` (``cpu`` by default, ``cuda`` when asked and present).
A GPU runs its kernels asynchronously, so a clock read on the host must first wait for them:
:func:`synchronize` does that, and :func:`timed` and the benchmarks' own step timers call it."""

import time
from collections.abc import Callable

import torch

from minformer.utils import pick_device

DEVICES = ("cpu", "cuda")


def device_from(name: str | None) -> torch.device:
    """The device a benchmark runs on: ``cpu`` (also for None) or ``cuda``; a clear error when
    it is not one of those or not present here."""
    name = "cpu" if name is None else name
    if name not in DEVICES:
        raise ValueError(f"benchmarks run on one of {DEVICES}; got device {name!r}")
    return pick_device(name)  # ValueError when CUDA is asked for and absent


def synchronize(device: torch.device | None) -> None:
    """Wait for the kernels queued on ``device`` (a no-op on the CPU, which runs them inline,
    and for None)."""
    if device is not None and device.type == "cuda":
        torch.cuda.synchronize(device)


def interleaved(runs: dict[str, Callable[[], object]], reps: int) -> dict[str, list]:
    """Call every function of ``runs`` ``reps`` times, alternating which goes first in each
    repetition; returns {name: [what each call returned, ...]}."""
    results = {name: [] for name in runs}
    names = list(runs)
    for r in range(reps):
        for name in names if r % 2 == 0 else names[::-1]:
            results[name].append(runs[name]())
    return results


def timed(fn: Callable[[], object],
          device: torch.device | None = None) -> Callable[[], tuple[float, object]]:
    """``fn`` wrapped to return (seconds it took, its result); on a GPU the clock waits for the
    queued kernels before it starts and before it stops."""
    def run():
        synchronize(device)
        start = time.perf_counter()
        out = fn()
        synchronize(device)
        return time.perf_counter() - start, out
    return run
