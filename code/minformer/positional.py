"""Positional encodings: attention is permutation-equivariant, so order must be put into the
tokens themselves, by adding a vector that depends on the position.

- :func:`sinusoidal_encoding` — the fixed sines and cosines of "Attention Is All You Need".
- :class:`SinusoidalPositions` — the same as a module that adds them to (batch, t, d_model) inputs.
- :class:`LearnedPositions` — one trained vector per position, up to ``max_len``.
- :func:`rotary` — rotary positions (RoPE): queries and keys rotated by their position, so that
  their dot product depends only on the offset between them (chapter 14).
"""

import torch
from torch import nn

from . import validate


def _positive_int(v, name: str) -> int:
    return validate.positive_int(v, name)


def sinusoidal_encoding(n: int, d: int, base: float = 10000.0, dtype=torch.float32,
                        device=None) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / base^(2i/d)),  PE(pos, 2i+1) = cos(pos / base^(2i/d)).

    Even columns hold sines and odd columns cosines, pairs sharing a frequency that falls from 1
    (i = 0) to about 1/base. For odd d the last column is the sine of pair i = (d - 1)/2, whose
    cosine does not fit. Returns (n, d): row pos encodes position pos = 0 … n-1.
    """
    _positive_int(n, "n")
    _positive_int(d, "d")
    validate.number(base, "base", low=1.0, low_open=True)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch dtype (sines and cosines are not "
                        f"integers); got {dtype!r}")
    pos = torch.arange(n, dtype=torch.float64, device=device)[:, None]  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64, device=device)  # (ceil(d/2),): 2i
    angles = pos / base ** (two_i / d)  # (n, ceil(d/2)): pos / base^(2i/d)
    pe = torch.empty(n, d, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(angles)  # columns 2i
    pe[:, 1::2] = torch.cos(angles[:, : d // 2])  # columns 2i+1 (one fewer when d is odd)
    return pe.to(dtype)


def _check_input(x, max_len: int, d_model: int, start: int = 0):
    validate.tensor(x, "x")
    if x.ndim < 2 or x.shape[-1] != d_model:
        raise ValueError(f"expected (batch, t, d_model={d_model}) or (t, d_model); got shape "
                         f"{tuple(getattr(x, 'shape', ()))}")
    start = validate.integer(start, "start", minimum=0)
    t = x.shape[-2]
    if start + t > max_len:
        where = f"length t={t}" if start == 0 else f"positions {start} … {start + t - 1}"
        raise ValueError(f"sequence of {where} is longer than max_len={max_len}: there are "
                         f"no position vectors past {max_len - 1}")
    return t


class SinusoidalPositions(nn.Module):
    """x + PE[:t], with PE = sinusoidal_encoding(max_len, d_model) kept as a (non-trained) buffer.

    x: (..., t, d_model) with t ≤ max_len. Returns the same shape, in x's dtype if floating,
    else in float32 (integer or bool inputs are upcast: the encoding is not an integer).
    ``start``: the position of x's first token (a KV cache feeds only the new tokens, which sit
    at positions start … start + t - 1); start + t ≤ max_len.
    """

    def __init__(self, max_len: int, d_model: int, base: float = 10000.0):
        super().__init__()
        self.max_len = _positive_int(max_len, "max_len")
        self.d_model = _positive_int(d_model, "d_model")
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base), persistent=False)

    def forward(self, x, start: int = 0):
        t = _check_input(x, self.max_len, self.d_model, start)
        if not x.is_floating_point():
            x = x.to(torch.get_default_dtype())  # integers would truncate PE to 0 and ±1
        return x + self.pe[start:start + t].to(x.dtype)  # (..., t, d_model)


class LearnedPositions(nn.Module):
    """x + P[:t], with P a trained (max_len, d_model) matrix: one vector per position.

    Initialized N(0, 0.02²) as in GPT-2. x: (..., t, d_model) with t ≤ max_len; longer
    sequences raise ValueError (there is nothing learned for those positions). ``start``: the
    position of x's first token, as for :class:`SinusoidalPositions`.
    """

    def __init__(self, max_len: int, d_model: int):
        super().__init__()
        self.max_len = _positive_int(max_len, "max_len")
        self.d_model = _positive_int(d_model, "d_model")
        self.weight = nn.Parameter(torch.empty(max_len, d_model))  # P: row pos is position pos
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x, start: int = 0):
        t = _check_input(x, self.max_len, self.d_model, start)
        if not x.is_floating_point():
            x = x.to(self.weight.dtype)
        validate.same_dtype(x=x, weight=self.weight)
        return x + self.weight[start:start + t]  # (..., t, d_model)


def rotary(X, start: int = 0, base: float = 10000.0):
    """Rotary position embedding (RoPE, Su et al., 2021), applied to queries or keys.

    Each pair of features (x_2i, x_2i+1) of the token at position p is rotated by the angle
    p·θ_i, θ_i = base^(-2i/d) (the sinusoids' frequencies, chapter 8):

        (x_2i, x_2i+1) → (x_2i cos pθ_i - x_2i+1 sin pθ_i,  x_2i sin pθ_i + x_2i+1 cos pθ_i)

    Rotations keep lengths, and R(mθ)ᵀ R(nθ) = R((n - m)θ), so rotary(q at m) · rotary(k at n)
    depends on q, k and the offset m - n only. Unlike added positions, nothing is added to the
    values. X: (..., t, d) floating, d even; the tokens sit at positions start … start + t - 1
    (start > 0 for new tokens after a KV cache's). Returns the same shape and dtype.
    """
    validate.tensor(X, "X", floating=True)
    if X.ndim < 2 or X.shape[-1] % 2:
        raise ValueError(f"X must be (..., t, d) with d even (features are rotated in pairs); "
                         f"got shape {tuple(X.shape)}")
    start = validate.integer(start, "start", minimum=0)
    validate.number(base, "base", low=1.0, low_open=True)
    t, d = X.shape[-2], X.shape[-1]
    pos = torch.arange(start, start + t, dtype=torch.float64, device=X.device)  # (t,)
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64, device=X.device) / d)
    angles = pos[:, None] * theta  # (t, d/2): p·θ_i
    cos, sin = angles.cos().to(X.dtype), angles.sin().to(X.dtype)
    x_even, x_odd = X[..., 0::2], X[..., 1::2]  # (..., t, d/2) each
    rotated = (x_even * cos - x_odd * sin, x_even * sin + x_odd * cos)
    return torch.stack(rotated, dim=-1).flatten(-2)  # (..., t, d), pairs interleaved again
