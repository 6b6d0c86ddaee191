"""Small helpers every chapter uses: seeds, the device, a timer, peak memory, where the data
lives, and :func:`evaluating` (run a model in eval mode, then give it back its mode); and
:func:`run_command`, which every ``python -m minformer.<command>`` runs its main through."""

import contextlib
import errno
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

from .validate import integer

DATA_ENV_VAR = "MINFORMER_DATA"


def seed_everything(seed: int = 0) -> None:
    """Seed Python's, NumPy's and PyTorch's (CPU and CUDA) random generators with ``seed``, an
    int in 0..2**64 - 1 (PyTorch's range; a NumPy integer is taken as the int it holds)."""
    seed = integer(seed, "seed", minimum=0)
    if seed >= 2**64:
        raise ValueError(f"seed must be an int in 0..2**64 - 1 (PyTorch's range); got {seed}")
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device


def pick_device(prefer: str | None = None) -> torch.device:
    """The fastest device here: CUDA, then Apple's MPS, then the CPU.

    ``prefer`` ("cpu", "cuda", "mps") forces one; asking for one that is absent is an error.
    """
    available = {
        "cuda": torch.cuda.is_available(),
        "mps": getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available(),
        "cpu": True,
    }
    if prefer is not None:
        if prefer not in available:
            raise ValueError(f"unknown device {prefer!r}; choose one of {sorted(available)}")
        if not available[prefer]:
            raise ValueError(f"device {prefer!r} is not available on this machine")
        return torch.device(prefer)
    for name in ("cuda", "mps", "cpu"):
        if available[name]:
            return torch.device(name)


class Timer:
    """Wall-clock timer: ``with Timer() as t: ...`` then ``t.seconds``.

    ``t.seconds`` reads the running time inside the block and the final time after it.
    """

    def __init__(self):
        self.start = None
        self.end = None

    def __enter__(self):
        self.start = time.perf_counter()
        self.end = None
        return self

    def __exit__(self, *exc):
        self.end = time.perf_counter()
        return False

    @property
    def seconds(self) -> float:
        if self.start is None:
            raise RuntimeError("Timer was never started: use it as `with Timer() as t:`")
        return (self.end if self.end is not None else time.perf_counter()) - self.start

    def __repr__(self):
        return f"Timer({self.seconds:.3f} s)" if self.start is not None else "Timer(not started)"


@contextlib.contextmanager
def evaluating(model: torch.nn.Module, no_grad: bool = True):
    """``with evaluating(model): ...`` runs the block with ``model`` in eval mode (dropout off)
    and, by default, under ``torch.no_grad()``; on leaving, even through an exception, every
    submodule gets back the training flag it had before (so a submodule that was kept in eval
    mode inside a training model stays so). ``no_grad=False``: eval mode only, for a block that
    needs gradients (e.g. saliency on a model without dropout); it leaves the grad mode as it
    finds it. Yields the model. Nests.
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    if not isinstance(no_grad, bool):
        raise TypeError(f"no_grad must be True or False; got {no_grad!r}")
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    try:
        with torch.no_grad() if no_grad else contextlib.nullcontext():
            yield model
    finally:
        model.train(modes[0][1])  # through train(), in case a model overrides it
        for m, training in modes:  # then any submodule whose flag differed from the model's
            m.training = training


@contextlib.contextmanager
def _quiet_stderr():
    """Send file descriptor 2 to /dev/null for the block (C++ log lines bypass sys.stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_memory(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` and measure the most CPU memory that PyTorch's tensors held at
    once during the call, above what they held when it started.

    Every allocation and release by PyTorch's CPU allocator is recorded by its profiler
    (``profile_memory=True``); the peak is the largest running sum of those, in call order. It
    counts tensor storage only (not Python objects or the allocator's caches) and the same way
    on every machine, unlike the process's resident size. Returns (fn's result, peak bytes).
    """
    from torch.profiler import ProfilerActivity, profile

    if not callable(fn):
        raise TypeError(f"fn must be callable; got {type(fn).__name__}")
    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with _quiet_stderr():  # the profiler logs its start and stop on the C-level stderr
        prof.__enter__()
    try:
        result = fn(*args, **kwargs)
    finally:
        with _quiet_stderr():
            prof.__exit__(None, None, None)
    cpu = torch.autograd.DeviceType.CPU
    events = [e for e in prof.profiler.kineto_results.events()
              if e.name() == "[memory]" and e.device_type() == cpu]  # + alloc, - free
    held = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        held += e.nbytes()
        peak = max(peak, held)
    return result, peak


def data_dir() -> Path:
    """The book's ``data/`` folder.

    Looked for, in order: the folder named by the environment variable ``MINFORMER_DATA``; the
    ``data/`` folder of the repository this package was installed from (``code/minformer`` →
    ``data``). A folder that is not there raises ``FileNotFoundError`` saying where we looked.
    """
    override = os.environ.get(DATA_ENV_VAR)
    if override:
        path = Path(override).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(
                f"{DATA_ENV_VAR}={override!r} is not a folder. Point it at the book's data/ "
                f"folder, or unset it to use the data/ folder of the repository."
            )
        return path.resolve()
    repo_data = Path(__file__).resolve().parents[2] / "data"
    if repo_data.is_dir():
        return repo_data
    raise FileNotFoundError(
        f"could not find the book's data folder: looked at {repo_data} (the repository's data/, "
        f"next to code/). Install minformer from a clone of the book's repository "
        f"(`pip install -e .` in the clone), or set {DATA_ENV_VAR} to the folder holding the data."
    )


# ---------------------------------------------------------------- command lines


class OutputError(OSError):
    """Standard output cannot be written: closed (``>&-``), full (``/dev/full``), a lost disk."""


class _GuardedOutput:
    """``stream`` whose write and flush raise :class:`OutputError` for an OSError, so that a
    failure to write the output is told apart from one to read a file. A closed pipe stays a
    BrokenPipeError (the reader left: not an error)."""

    def __init__(self, stream):
        self._stream = stream

    def _call(self, method, *args):
        try:
            return getattr(self._stream, method)(*args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as e:  # ValueError: "I/O operation on closed file"
            raise OutputError(getattr(e, "errno", None) or errno.EIO,
                              getattr(e, "strerror", None) or str(e)) from None

    def write(self, text):
        return self._call("write", text)

    def flush(self):
        return self._call("flush")

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _silence(stream) -> None:
    """Point ``stream``'s file descriptor at /dev/null, so that the interpreter's last flush of
    what is left in its buffer succeeds quietly instead of printing a second error."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (AttributeError, OSError, ValueError):  # no real stdout (a test's capture)
        pass


def run_command(main, prog: str, argv=None) -> int:
    """``main(argv)``'s exit status, where what can go wrong with the terminal ends the command
    with one line on stderr, never a traceback: a closed standard output (``>&-``, checked
    before anything runs) or one that cannot be written (``/dev/full``: status 1, the message
    names the reason); a reader that left (``| head -1``: status 0, as for ``cat``); Ctrl-C
    (status 130)."""
    if sys.stdout is None:
        print(f"{prog}: error: standard output is closed: send it to a file or /dev/null "
              f"instead of closing it", file=sys.stderr)
        return 1
    stdout = sys.stdout
    sys.stdout = _GuardedOutput(stdout)
    try:
        status = main(argv)
        sys.stdout.flush()
        return status
    except OutputError as e:
        _silence(stdout)
        print(f"{prog}: error: cannot write to standard output: {e.strerror}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        _silence(stdout)
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout
