"""Input checks shared by every public function of the package, so that bad input fails at the
door with a message that names the argument, its shape, dtype or value, and never as a traceback
from inside PyTorch or NumPy.

One exception policy everywhere:

- ``TypeError`` when an argument has the wrong *type*: a float or a bool where an int is
  expected, a NumPy array where the API takes a tensor, a string where it takes a list of words,
  a float mask where it takes a bool one, two tensors of different dtypes;
- ``ValueError`` when the type is right but the *value* or *shape* is not: a length of 0, a
  negative count, a (batch, t) mask where (t_q, t_k) is expected.
"""

import numbers

import numpy as np
import torch


def _show(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _type(v) -> str:
    if isinstance(v, (torch.Tensor, np.ndarray)):
        return f"{type(v).__name__} of dtype {v.dtype}"
    return type(v).__name__


def integer(v, name: str, minimum: int | None = None) -> int:
    """``v`` as an int: Python or NumPy integers, never a float (2.5 or 2.0), a bool or a str."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an int; got {_show(v)} ({_type(v)})")
    v = int(v)
    if minimum is not None and v < minimum:
        what = "a positive int" if minimum == 1 else f"an int ≥ {minimum}"
        raise ValueError(f"{name} must be {what}; got {v}")
    return v


def positive_int(v, name: str) -> int:
    """An int ≥ 1 (a length, a size, a count)."""
    return integer(v, name, minimum=1)


def number(v, name: str, *, low: float | None = None, high: float | None = None,
           low_open: bool = False, high_open: bool = False) -> float:
    """A real number (int or float, not bool) in the given range."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a number; got {_show(v)} ({_type(v)})")
    v = float(v)
    if v != v:
        raise ValueError(f"{name} must be a number, got NaN")
    too_low = low is not None and (v <= low if low_open else v < low)
    too_high = high is not None and (v >= high if high_open else v > high)
    if too_low or too_high:
        lo = "" if low is None else f"{'(' if low_open else '['}{low:g}"
        hi = "" if high is None else f"{high:g}{')' if high_open else ']'}"
        where = f"in {lo or '(-inf'}, {hi or 'inf)'}"
        raise ValueError(f"{name} must lie {where}; got {v:g}")
    return v


def _check_ndim(x, name: str, ndim) -> None:
    """``x.ndim`` must be ``ndim`` (an int) or one of ``ndim`` (a sequence); None: any."""
    if ndim is None:
        return
    allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if x.ndim not in allowed:
        ranks = " or ".join(str(r) for r in allowed)
        raise ValueError(f"{name} must have {ranks} axes; got shape {tuple(x.shape)}")


def tensor(x, name: str, *, ndim=None, floating: bool = False) -> torch.Tensor:
    """``x`` must be a torch tensor (not an array or a list), of one of the ranks ``ndim``."""
    if not isinstance(x, torch.Tensor):
        hint = " (convert with torch.from_numpy or torch.as_tensor)" if isinstance(
            x, (np.ndarray, list, tuple)) else ""
        raise TypeError(f"{name} must be a torch tensor; got {_type(x)}{hint}")
    if floating and not (x.is_floating_point() or x.is_complex()):
        raise TypeError(f"{name} must be a floating-point tensor; got dtype {x.dtype} "
                        f"(convert with .float())")
    _check_ndim(x, name, ndim)
    return x


def same_dtype(**tensors) -> None:
    """All the named tensors share one dtype; the error names each one's."""
    dtypes = {name: t.dtype for name, t in tensors.items()}
    if len(set(dtypes.values())) > 1:
        listed = ", ".join(f"{n} {d}" for n, d in dtypes.items())
        raise TypeError(f"dtypes must match: {listed} (convert with .to(dtype))")


def same_device(**tensors) -> None:
    devices = {name: t.device for name, t in tensors.items()}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{n} on {d}" for n, d in devices.items())
        raise ValueError(f"tensors must be on one device: {listed}")


def bool_tensor(x, name: str) -> torch.Tensor:
    """A torch.bool tensor (a mask, True = may attend)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.bool tensor (True = may attend); got "
                        f"{_type(x)}")
    if x.dtype != torch.bool:
        extra = ""
        if x.is_floating_point():
            extra = ("; an additive float mask (0 / -inf) is a different convention: convert it "
                     "with `mask == 0`")
        raise TypeError(f"{name} must be bool (True = may attend); got dtype {x.dtype} with "
                        f"shape {tuple(x.shape)}{extra}")
    return x


def row_index(x, name: str = "index") -> torch.Tensor:
    """A (batch,) tensor of row numbers (a cache's reorder in beam search)."""
    if not isinstance(x, torch.Tensor) or x.ndim != 1 or x.is_floating_point():
        raise TypeError(f"{name} must be a (batch,) tensor of row numbers")
    return x


def array(x, name: str, *, ndim=None) -> np.ndarray:
    """``x`` must be a NumPy array (or a tensor, converted); ``ndim`` as for :func:`tensor`."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a NumPy array; got {_type(x)}")
    _check_ndim(x, name, ndim)
    return x


def str_list(x, name: str, what: str = "words") -> list:
    """A list (or tuple) of str; a bare str is refused, since iterating it gives characters."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a list of {what}, not a single {type(x).__name__} "
                        f"(which would be read character by character): wrap it, [{_show(x)}], "
                        "or split it, .split()")
    try:
        items = list(x)
    except TypeError:
        raise TypeError(f"{name} must be a list of {what}; got {_type(x)}") from None
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{i}] must be a str; got {_show(item)} ({_type(item)})")
    return items
