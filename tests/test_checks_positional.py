"""check_sinusoidal accepts correct encodings (NumPy or torch, float32 or float64) and rejects
the typical mistakes with a message that names them."""

import numpy as np
import pytest
import torch
from helpers import rejects as reject_with

from minformer.checks import check_sinusoidal
from minformer.positional import sinusoidal_encoding


def rejects(fn, *fragments):
    reject_with(check_sinusoidal, fn, *fragments)


def encoding(n, d, base=10000.0, exponent=lambda i, j, d: 2 * i / d, first=0, divide=True,
             even=np.sin, odd=np.cos):
    """A NumPy encoding written independently of the package, with knobs for each mistake."""
    pe = np.zeros((n, d))
    for pos in range(n):
        for j in range(d):
            i = j // 2
            scale = base ** exponent(i, j, d)
            angle = (pos + first) / scale if divide else (pos + first) * scale
            pe[pos, j] = even(angle) if j % 2 == 0 else odd(angle)
    return pe


def test_accepts_correct_answers(capsys):
    check_sinusoidal(encoding)
    check_sinusoidal(sinusoidal_encoding)  # torch, float32
    check_sinusoidal(lambda n, d: sinusoidal_encoding(n, d, dtype=torch.float64).tolist())
    assert capsys.readouterr().out.count("✓ sinusoidal encoding: 8 cases passed") == 3


def test_rejects_sin_cos_swapped():
    rejects(lambda n, d: encoding(n, d, even=np.cos, odd=np.sin), "sin and cos are swapped",
            "PE(pos, 2i) is the sine")


def test_rejects_exponent_without_the_2():
    rejects(lambda n, d: encoding(n, d, exponent=lambda i, j, d: i / d), "exponent is i/d",
            "2i/d")


def test_rejects_column_index_in_exponent():
    rejects(lambda n, d: encoding(n, d, exponent=lambda i, j, d: j / d), "column index j",
            "(2i+1)/d", "share one frequency")
    rejects(lambda n, d: encoding(n, d, exponent=lambda i, j, d: 2 * j / d), "column index j",
            "j // 2")


def test_rejects_transposed_output():
    rejects(lambda n, d: encoding(n, d).T, "expected shape (10, 8)", "transposed")


@pytest.mark.parametrize("base", [1000.0, 2 * np.pi * 1000, 1e5, 500.0])
def test_rejects_other_bases_and_names_them(base):
    rejects(lambda n, d: encoding(n, d, base=base), f"you used base {base:.6g}", "base 10000")


def test_base_100_is_the_exponent_i_over_d_mistake():
    # 100^(2i/d) = 10000^(i/d): the same numbers, so the message names both causes
    rejects(lambda n, d: encoding(n, d, base=100.0), "exponent is i/d", "not 100")


def test_rejects_blocked_layout():
    def blocked(n, d):
        pe = encoding(n, d)
        return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)  # all sines, then all cosines
    rejects(blocked, "all the sines first", "interleaves")
    rejects(lambda n, d: blocked(n, d)[:, list(range(d // 2, d)) + list(range(d // 2))],
            "all the cosines first")


def test_rejects_positions_from_one_and_multiplying():
    rejects(lambda n, d: encoding(n, d, first=1), "position 0", "start at position 1")
    rejects(lambda n, d: encoding(n, d, divide=False), "you multiplied", "divide")


def test_rejects_raw_angles_and_half_width():
    def angles(n, d):
        pos = np.arange(n)[:, None]
        return pos / 10000 ** (2 * (np.arange(d) // 2) / d)
    rejects(angles, "lie in [-1, 1]", "sin and cos")
    rejects(lambda n, d: encoding(n, d)[:, 0::2], "one column per pair", "d = 8")


def test_rejects_stub_none_and_crash():
    rejects(lambda n, d: None, "returned None")
    rejects(lambda n, d: np.zeros((n, d))[:, d], "raised IndexError")


def test_rejects_small_error_with_location():
    def off(n, d):
        pe = encoding(n, d)
        pe[3, 5] *= 0.99  # cos(0.03) ≈ 1 becomes 0.99
        return pe
    rejects(off, "wrong at index (3, 5)")
