"""Checkers for chapter 8: the sinusoidal positional encoding.

PE(pos, 2i) = sin(pos / 10000^(2i/d)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d)), rows = positions.
"""

import math

import numpy as np
import torch

from ..positional import sinusoidal_encoding
from ._core import (
    call,
    checker,
    expect_close,
    expect_finite,
    expect_shape,
    fail,
    random_name,
    to_numpy,
)

# float32 answers are welcome: sin of an angle near 50 carries an error of a few 1e-6
_ATOL = 1e-4


def _close(got: np.ndarray, candidate: np.ndarray) -> bool:
    return got.shape == candidate.shape and np.allclose(got, candidate, atol=_ATOL, rtol=0)


def _variant(n, d, base=10000.0, exponent="2i/d", even="sin", layout="interleaved", first=0,
             divide=True, d_used=None) -> np.ndarray:
    """The encoding with one thing changed, to recognise a typical mistake. Shape (n, d)."""
    pos = np.arange(first, first + n, dtype=np.float64)[:, None]  # (n, 1)
    col = np.arange(d)  # (d,) column index j
    i = col // 2 if layout == "interleaved" else col % (d // 2)  # (d,) pair index of each column
    if d_used is not None:  # the exponent 2i/d with another d
        d = d_used
    power = {"2i/d": 2 * i / d, "i/d": i / d, "j/d": col / d, "2j/d": 2 * col / d}[exponent]
    scale = base ** power  # (d,)
    angles = pos / scale if divide else pos * scale  # (n, d)
    sine_cols = (col % 2 == 0) if layout == "interleaved" else (col < d // 2)  # (d,) bool
    if even == "cos":
        sine_cols = ~sine_cols
    return np.where(sine_cols, np.sin(angles), np.cos(angles))  # (n, d)


_MISTAKES = [
    ({"even": "cos"},
     ("sin and cos are swapped: PE(pos, 2i) is the sine (even columns 0, 2, 4, …) and "
      "PE(pos, 2i+1) the cosine (odd columns)")),
    ({"layout": "blocked"},
     ("you put all the sines first and then all the cosines; the encoding interleaves them: "
      "the sine of pair i in column 2i, its cosine in column 2i+1")),
    ({"layout": "blocked", "even": "cos"},
     ("you put all the cosines first and then all the sines; the encoding interleaves them: "
      "the sine of pair i in column 2i, its cosine in column 2i+1")),
    ({"exponent": "i/d"},
     ("the exponent is i/d; it must be 2i/d (i is the pair index, 2i the even column of the "
      "pair), so that the frequencies fall all the way from 1 to about 1/10000 (the same "
      "numbers as base 100 with exponent 2i/d: if you wrote 2i/d, the base must be 10000, "
      "not 100)")),
    ({"exponent": "j/d"},
     ("you used the column index j in the exponent (j/d), so the cosine column 2i+1 gets "
      "exponent (2i+1)/d; both columns of a pair share one frequency: use the pair index, "
      "exponent 2i/d with i = j // 2")),
    ({"exponent": "2j/d"},
     ("you used the column index j as the pair index (exponent 2j/d); the pair index of "
      "column j is i = j // 2, and the exponent is 2i/d")),
    ({"divide": False},
     ("you multiplied pos by 10000^(2i/d); divide: the angle is pos / 10000^(2i/d), so "
      "higher pairs turn more slowly")),
    ({"first": 1},
     ("the first row must be position 0, PE(0) = (0, 1, 0, 1, …); your rows start at "
      "position 1")),
]


def _estimated_base(got: np.ndarray, d: int):
    """The base implied by pair i = 1 at position 1 (its sine and cosine), or None."""
    if got.shape[0] < 2 or d < 4:
        return None
    omega = math.atan2(got[1, 2], got[1, 3])  # angle of pair 1 at pos 1 = base^(-2/d)
    if not 0 < omega < 1:
        return None
    return omega ** (-d / 2)


def _cases(rng, seed):
    # n ≠ d everywhere, so a transposed answer shows in its shape; small cases last (a single
    # position or pair cannot tell several mistakes apart)
    n, d = int(rng.integers(9, 80)), 2 * int(rng.integers(2, 40))
    n = n + 1 if n == d else n
    return [(10, 8, ""), (50, 64, ""), (200, 32, ""), (13, 10, ""), (9, 4, ""),
            (n, d, f" ({random_name(seed, f'n={n}, d={d}')})"), (3, 6, ""), (1, 2, "")]


def _wrong_frequency(got, n, d):
    """Name the first pair whose frequency is wrong (read from position 1), or None."""
    if n < 2 or d < 4:
        return None
    for i in range(d // 2):
        omega = math.atan2(got[1, 2 * i], got[1, 2 * i + 1])  # the angle of pair i at pos 1
        want = 10000.0 ** (-2 * i / d)
        if not math.isclose(omega, want, rel_tol=1e-3, abs_tol=1e-6):
            return (f"pair i = {i} (columns {2 * i} and {2 * i + 1}) turns by {omega:.6g} "
                    f"radians per position, but its frequency is 1 / 10000^(2i/d) = "
                    f"10000^(-{2 * i}/{d}) = {want:.6g}: check the exponent 2i/d for this pair")
    return None


@checker("sinusoidal encoding")
def check_sinusoidal(fn, *, rng, seed) -> int:
    """Check ``fn(n, d)`` → the (n, d) sinusoidal encoding (rows = positions 0 … n-1, d even)."""
    cases = _cases(rng, seed)
    for n, d, seeded in cases:
        what = f"your encoding for n={n}, d={d}{seeded}"
        got = to_numpy(call(fn, n, d, what=what), what=what)
        if got.shape == (n, d // 2) and d > 2:
            fail(f"{what} has shape {got.shape}: one column per pair; the encoding has d = {d} "
                 "columns, the sine and the cosine of each pair")
        hint = ("rows are positions and columns are features: is the output transposed?"
                if got.shape == (d, n) else "")
        expect_shape(got, (n, d), labels="(n, d): one row per position", hint=hint)
        expect_finite(got, "the angles pos / 10000^(2i/d) are finite: check the exponent")
        expected = sinusoidal_encoding(n, d, dtype=torch.float64).numpy()
        if _close(got, expected):
            continue
        if np.abs(got).max() > 1 + _ATOL:
            fail(f"{what} has entries up to {np.abs(got).max():.4g}, but sines and cosines lie "
                 "in [-1, 1]: did you apply sin and cos to the angles?")
        for change, message in _MISTAKES:
            if _close(got, _variant(n, d, **change)):
                fail(f"{what}: {message}")
        base = _estimated_base(got, d)
        if base is not None and base > 1 and abs(base - 10000) > 1:
            d_used = round(d * math.log(10000) / math.log(base))  # 10000^(2i/d') = base^(2i/d)
            if d_used != d and d_used > 0 and _close(got, _variant(n, d, d_used=d_used)):
                fail(f"{what}: the exponent is 2i/{d_used}, not 2i/d = 2i/{d}: use the d that "
                     "is passed in, not a fixed size")
        if (base is not None and 10 < base < 1e6 and abs(base - 10000) > 1
                and _close(got, _variant(n, d, base=base))):
            fail(f"{what}: you used base {base:.6g}; the encoding divides by 10000^(2i/d), "
                 "base 10000")
        if _close(got[:1], expected[:1]):  # position 0 right: the angles at pos 1 tell more
            message = _wrong_frequency(got, n, d)
            if message:
                fail(f"{what}: {message}")
        expect_close(got, expected, f"{what}: the encoding", atol=_ATOL, rtol=0)
    return len(cases)

