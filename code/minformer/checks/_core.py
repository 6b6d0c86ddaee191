"""The checker framework: small assertions whose messages teach.

Every helper raises :class:`CheckFailed` (an ``AssertionError``) with a one-line message, and
:func:`passed` prints the success line. Topic modules build their checkers from these.
"""

import numpy as np
import torch


class CheckFailed(AssertionError):
    """A reader's answer is wrong; the message says what and where to look."""


def fail(message: str):
    raise CheckFailed(message)


def passed(name: str, n_cases: int) -> None:
    """Print the one-line success message: ``✓ name: N cases passed``."""
    print(f"✓ {name}: {n_cases} cases passed")


def to_numpy(x, what: str = "your function") -> np.ndarray:
    """The reader's output as a float64 NumPy array (accepts tensors, arrays, lists)."""
    if x is None:
        fail(f"{what} returned None: did you forget the `return` statement?")
    if isinstance(x, tuple):
        fail(f"{what} returned a tuple of {len(x)} items; return a single array")
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        fail(f"{what} returned {type(x).__name__}, which is not an array of numbers ({e})")


def call(fn, *args, what: str = "your function"):
    """Call the reader's function; turn its exceptions into a message naming the inputs."""
    try:
        return fn(*args)
    except NotImplementedError:
        fail(f"{what} raises NotImplementedError: replace the stub's `raise` with your code")
    except Exception as e:  # the reader's bug: say which input triggered it
        shapes = ", ".join(str(tuple(np.shape(a))) for a in args)
        fail(f"{what} raised {type(e).__name__} on inputs of shape {shapes}: {e}")


def expect_shape(got: np.ndarray, expected: tuple, labels: str = "", hint: str = "") -> None:
    """Fail with both shapes (and their meaning, e.g. ``(t_q, d_v)``) unless they match."""
    if tuple(got.shape) != tuple(expected):
        meaning = f" {labels}" if labels else ""
        extra = ""
        if hint:
            extra = f" — {hint}"
        elif got.ndim == 2 and tuple(got.shape[::-1]) == tuple(expected):
            extra = " — is the output transposed?"
        fail(f"expected shape {tuple(expected)}{meaning}, got {tuple(got.shape)}{extra}")


def expect_finite(got: np.ndarray, hint: str) -> None:
    """Fail if any entry is NaN or infinite; ``hint`` says the likely cause."""
    bad = ~np.isfinite(got)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        fail(f"the output has NaN or inf (first at index {where}): {hint}")


def expect_close(got: np.ndarray, expected: np.ndarray, what: str, atol: float = 1e-6,
                 rtol: float = 1e-5) -> None:
    """Fail naming the first entry that differs, with both values."""
    if not np.allclose(got, expected, atol=atol, rtol=rtol):
        diff = np.abs(got - expected) - (atol + rtol * np.abs(expected))
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(diff), got.shape))
        fail(f"{what} is wrong at index {idx}: got {got[idx]:.6g}, expected {expected[idx]:.6g}")


def matches(got: np.ndarray, candidate: np.ndarray) -> bool:
    """Does the reader's output equal a known wrong answer? (used to diagnose mistakes)"""
    return got.shape == candidate.shape and np.allclose(got, candidate, atol=1e-6, rtol=1e-5)
