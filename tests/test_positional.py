"""Positional encodings: the sinusoidal formula (checked by an independent loop), its
relative-offset property, and the learned and sinusoidal position modules."""

import math

import pytest
import torch

from minformer.positional import LearnedPositions, SinusoidalPositions, sinusoidal_encoding


def formula(n, d, base=10000.0):
    """PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(pos / base^(2i/d)), by loops."""
    pe = [[0.0] * d for _ in range(n)]
    for pos in range(n):
        for col in range(d):
            i = col // 2
            angle = pos / base ** (2 * i / d)
            pe[pos][col] = math.sin(angle) if col % 2 == 0 else math.cos(angle)
    return torch.tensor(pe, dtype=torch.float64)


@pytest.mark.parametrize("n, d", [(1, 2), (10, 8), (50, 64), (7, 5), (3, 1)])
def test_sinusoidal_matches_formula(n, d):
    pe = sinusoidal_encoding(n, d, dtype=torch.float64)
    assert pe.shape == (n, d)
    torch.testing.assert_close(pe, formula(n, d), atol=1e-12, rtol=0)


def test_sinusoidal_first_row_and_columns():
    pe = sinusoidal_encoding(20, 6)
    assert pe.dtype == torch.float32
    torch.testing.assert_close(pe[0], torch.tensor([0.0, 1, 0, 1, 0, 1]))  # sin 0, cos 0, …
    torch.testing.assert_close(pe[:, 0], torch.sin(torch.arange(20.0)))  # frequency 1
    assert pe.abs().max() <= 1.0
    torch.testing.assert_close(sinusoidal_encoding(4, 4, base=100.0, dtype=torch.float64),
                               formula(4, 4, base=100.0))


def test_relative_offset_is_a_rotation_independent_of_position():
    d, k = 16, 3
    pe = sinusoidal_encoding(40, d, dtype=torch.float64)
    for i in range(d // 2):
        w = 1 / 10000 ** (2 * i / d)
        R = torch.tensor([[math.cos(k * w), math.sin(k * w)],
                          [-math.sin(k * w), math.cos(k * w)]], dtype=torch.float64)
        pair = pe[:, 2 * i: 2 * i + 2]  # (n, 2): (sin, cos) of pos·w
        torch.testing.assert_close(pair[k:], pair[:-k] @ R.T)  # PE(pos + k) = R_k PE(pos)


def test_distinct_positions_get_distinct_codes():
    pe = sinusoidal_encoding(200, 32)
    dist = torch.cdist(pe, pe) + torch.eye(200) * 1e3
    assert dist.min() > 0.1


@pytest.mark.parametrize("n, d", [(0, 4), (4, 0), (3, -1)])
def test_sinusoidal_rejects_bad_sizes(n, d):
    with pytest.raises(ValueError, match="positive int"):
        sinusoidal_encoding(n, d)


@pytest.mark.parametrize("n, d", [(2.0, 4), (2.5, 4), (True, 4), (4, "8")])
def test_sinusoidal_rejects_sizes_that_are_not_ints(n, d):
    with pytest.raises(TypeError, match="must be an int; got"):
        sinusoidal_encoding(n, d)


def test_learned_positions_adds_one_vector_per_position():
    torch.manual_seed(0)
    lp = LearnedPositions(10, 4)
    assert lp.weight.shape == (10, 4) and 0.005 < lp.weight.std() < 0.05
    x = torch.randn(2, 6, 4)
    torch.testing.assert_close(lp(x), x + lp.weight[:6])
    torch.testing.assert_close(lp(x[0]), x[0] + lp.weight[:6])  # unbatched
    lp(x).sum().backward()
    assert (lp.weight.grad[:6] == 2).all() and (lp.weight.grad[6:] == 0).all()


def test_learned_positions_too_long():
    lp = LearnedPositions(8, 4)
    with pytest.raises(ValueError, match=r"t=9 .*max_len=8"):
        lp(torch.zeros(1, 9, 4))
    with pytest.raises(ValueError, match=r"d_model=4.*\(1, 3, 5\)"):
        lp(torch.zeros(1, 3, 5))
    with pytest.raises(ValueError, match="max_len"):
        LearnedPositions(0, 4)


def test_sinusoidal_positions_module():
    sp = SinusoidalPositions(16, 6)
    assert list(sp.parameters()) == [] and "pe" not in sp.state_dict()  # fixed, not saved
    x = torch.randn(3, 5, 6)
    torch.testing.assert_close(sp(x), x + sinusoidal_encoding(5, 6))
    with pytest.raises(ValueError, match=r"t=17 .*max_len=16"):
        sp(torch.zeros(17, 6))
