"""The checker framework: small assertions whose messages teach.

Every helper raises :class:`CheckFailed` (an ``AssertionError``) with a one-line message, and
:func:`passed` prints the success line. Topic modules build their checkers from these and wrap
each public checker in :func:`checker`, which

- runs some cases drawn at random from a fresh seed on every call (a hard-coded answer cannot
  pass), names that seed when such a case fails and how to re-run exactly that check;
- turns an unfilled stub (``raise NotImplementedError``) into one friendly line, not an error,
  so that "Run all" reaches the end of a chapter;
- prints the success line, whose text never depends on the seed (notebooks store it).

:func:`call` runs the reader's function and fails if it changed any of its inputs in place.
"""

import copy
import functools
import inspect
import linecache
import os
import secrets
import sysconfig

import numpy as np
import torch


class CheckFailed(AssertionError):
    """A reader's answer is wrong; the message says what and where to look."""


class NotWritten(Exception):  # noqa: N818 (a signal, not an error)
    """The reader's function is still the stub: it raised NotImplementedError."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def fail(message: str):
    raise CheckFailed(message)


def passed(name: str, n_cases: int) -> None:
    """Print the one-line success message: ``✓ name: N cases passed``."""
    print(f"✓ {name}: {n_cases} cases passed")


def not_written(name: str) -> None:
    """Print the line an unfilled stub gets instead of an error."""
    print(f"… not written yet: fill in {name} above, then run this cell again")


def fn_name(fn) -> str:
    name = getattr(fn, "__name__", None)
    return "your function" if not name or name == "<lambda>" else name


_last_call = {"label": ""}  # the case the reader's function last ran on (see checker)


def random_name(seed: int, what: str) -> str:
    """The name of a case drawn at random; the seed in it lets the reader reproduce it."""
    return f"a random case (seed {seed}): {what}"


def checker(title: str):
    """Wrap ``check(*fns, rng, seed) -> n_cases`` into the public checker
    ``check_x(*fns, seed=None)``: a fresh seed per call, the stub line, the success line."""

    def wrap(check):
        @functools.wraps(check)
        def public(*fns, seed: int | None = None):
            if seed is None:
                seed = secrets.randbelow(2**31)
            _last_call["label"] = ""
            try:
                n = check(*fns, rng=np.random.default_rng(seed), seed=seed)
            except NotWritten as e:
                not_written(e.name)
                return None
            except NotImplementedError as e:  # raised outside call(): name the first function
                if not raised_by_a_stub(e, fns):
                    raise  # a library's or the reader's own NotImplementedError: not a stub
                not_written(stub_name(e, fns[0]) if fns else "the function")
                return None
            except CheckFailed as e:
                message = str(e)
                tag = f"(seed {seed})"
                if tag in message or tag in _last_call["label"]:
                    if tag not in message:
                        message = f"on {_last_call['label']}: {message}"
                    names = ", ".join(fn_name(f) for f in fns)
                    message += (f" [to re-run this very case: {public.__name__}({names}, "
                                f"seed={seed})]")
                    raise CheckFailed(message) from None
                raise
            passed(title, n)
            return None

        # help(check_x) shows the reader's call: the functions, then seed=None
        params = [p for p in inspect.signature(check).parameters.values()
                  if p.name not in ("rng", "seed")]
        seed_param = inspect.Parameter("seed", inspect.Parameter.KEYWORD_ONLY, default=None)
        public.__signature__ = inspect.Signature([*params, seed_param], return_annotation=None)
        return public

    return wrap


# ---------------------------------------------------------------------------- inputs unchanged
def snapshot(x):
    """A deep copy of an argument, to compare with it after the reader's function ran."""
    if isinstance(x, torch.nn.Module):
        return {k: v.detach().clone() for k, v in x.state_dict().items()}
    if isinstance(x, torch.Tensor):
        return x.detach().clone()
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, (list, tuple)):
        return type(x)(snapshot(v) for v in x) if isinstance(x, list) else tuple(
            snapshot(v) for v in x)
    if isinstance(x, dict):
        return {k: snapshot(v) for k, v in x.items()}
    try:
        return copy.deepcopy(x)
    except Exception:  # noqa: BLE001 (an object we cannot copy: not compared)
        return x


def same(a, b) -> bool:
    """Is ``a`` (the argument now) identical to ``b`` (its snapshot)? NaN equals NaN."""
    if isinstance(a, torch.nn.Module):
        a = {k: v.detach() for k, v in a.state_dict().items()}
    if isinstance(a, torch.Tensor):
        return (isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
                and bool(torch.equal(a.detach().nan_to_num(0.5), b.nan_to_num(0.5)))
                and bool(torch.equal(a.detach().isnan(), b.isnan())))
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
                and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")))
    if isinstance(a, (list, tuple)):
        return (type(a) is type(b) and len(a) == len(b)
                and all(same(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict):
        return (isinstance(b, dict) and a.keys() == b.keys()
                and all(same(a[k], b[k]) for k in a))
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return True


def _arg_names(fn, n: int) -> list[str]:
    try:
        names = [p.name for p in inspect.signature(fn).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return [f"`{names[i]}`" if i < len(names) else f"argument {i + 1}" for i in range(n)]


def call(fn, *args, what: str = "your function", where: str = ""):
    """Call the reader's function on ``args``; turn its exceptions into a message naming the
    inputs, and fail if it changed any argument in place."""
    _last_call["label"] = where or what
    before = [snapshot(a) for a in args]
    try:
        out = fn(*args)
    except NotImplementedError as e:
        if raised_by_a_stub(e, [fn]):
            raise NotWritten(stub_name(e, fn)) from None
        _raised(e, fn, args, what, where)
    except CheckFailed:
        raise
    except Exception as e:  # the reader's bug: say which input triggered it
        _raised(e, fn, args, what, where)
    for name, a, b in zip(_arg_names(fn, len(args)), args, before):
        if not same(a, b):
            on = f"on {where}: " if where else ""
            fail(f"{on}{what} changed its input {name} in place (e.g. with -=, /=, x[...] = "
                 "or a method ending in _ such as .sub_()); leave the caller's data as it "
                 "was: work on a copy or build a new array")
    return out


def _raised(e: Exception, fn, args, what: str, where: str):
    """Fail with the reader's exception and the inputs that triggered it."""
    names = _arg_names(fn, len(args))
    shapes = ", ".join(f"{n.strip('`')} {_describe(a)}" for n, a in zip(names, args))
    on = f"on {where}: " if where else ""
    fail(f"{on}{what} raised {type(e).__name__} for {shapes}: {e}")


_LIBRARY_ROOTS = tuple(
    os.path.realpath(p) + os.sep for p in {
        sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
        sysconfig.get_paths()["stdlib"], os.path.dirname(os.path.dirname(__file__))})


STUB_MESSAGE = "your code here"  # what the book's stubs raise: NotImplementedError("your code here")


def _codes(fns) -> set:
    """The code objects of the reader's functions ``fns``: a function's own, a class's (or an
    instance's class's) methods'."""
    codes = set()
    for fn in fns:
        target = fn if isinstance(fn, type) or inspect.isroutine(fn) else type(fn)
        members = vars(target).values() if isinstance(target, type) else [target]
        for member in members:
            member = getattr(member, "__func__", member)
            code = getattr(member, "__code__", None)
            if code is not None:
                codes.add(code)
    return codes


def _innermost(err: BaseException):
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def raised_by_a_stub(err: NotImplementedError, fns=None) -> bool:
    """Did an unfilled stub raise ``err``? The book's stubs ``raise NotImplementedError("your
    code here")``; a bare ``raise NotImplementedError`` counts too, but only in one of the
    reader's checked functions ``fns`` itself (any function when ``fns`` is None). A
    NotImplementedError with a message of the reader's own, or a bare one from a helper of
    theirs, is their error to see, and so is one from a library the function called
    (PyTorch's "not implemented for this dtype", the package's own): the innermost frame must be
    outside the installed libraries and the package, and its line must be the ``raise`` itself
    (a NotImplementedError from compiled code surfaces on the line that called it)."""
    tb = _innermost(err)
    if tb is None:
        return True
    code = tb.tb_frame.f_code
    path = os.path.realpath(code.co_filename)
    if path.startswith(_LIBRARY_ROOTS):
        return False
    line = linecache.getline(code.co_filename, tb.tb_lineno, tb.tb_frame.f_globals).strip()
    if line and not line.startswith("raise") and "NotImplementedError" not in line:
        return False
    if err.args == (STUB_MESSAGE,):
        return True
    return not err.args and (fns is None or code in _codes(fns))


def stub_name(err: NotImplementedError, fn) -> str:
    """The function to fill in: the one whose ``raise`` the stub is (a helper stub of the
    reader's, called by ``fn``), else ``fn``'s name."""
    tb = _innermost(err)
    name = tb.tb_frame.f_code.co_name if tb is not None else ""
    if name.isidentifier() and tb.tb_frame.f_code not in _codes([fn]) and name != "forward":
        return name
    return fn_name(fn)


def _describe(a) -> str:
    if isinstance(a, (torch.Tensor, np.ndarray)):
        return f"{tuple(a.shape)}"
    if isinstance(a, (list, tuple, dict)):
        return f"{type(a).__name__} of {len(a)}"
    if isinstance(a, torch.nn.Module):
        return type(a).__name__
    return repr(a)


# ---------------------------------------------------------------------------- outputs
def to_numpy(x, what: str = "your function") -> np.ndarray:
    """The reader's output as a float64 NumPy array (accepts tensors, arrays, lists)."""
    if x is None:
        fail(f"{what} returned None: did you forget the `return` statement?")
    if isinstance(x, tuple):
        fail(f"{what} returned a tuple of {len(x)} items; return a single array")
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().double().numpy()
    try:
        return np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as e:
        fail(f"{what} returned {type(x).__name__}, which is not an array of numbers ({e})")


def expect_array(out, what: str, dtype=np.float64, where: str = "") -> None:
    """The exercise gives NumPy arrays of ``dtype``: the answer must be an array (a tensor is
    accepted) of that same precision."""
    on = f"on {where}: " if where else ""
    if out is None:
        fail(f"{what} returned None: did you forget the `return` statement?")
    if isinstance(out, (list, tuple)):
        fail(f"{on}{what} returned a {type(out).__name__}; return a NumPy array")
    got = out.dtype if isinstance(out, (np.ndarray, torch.Tensor)) else None
    want = torch.float64 if isinstance(out, torch.Tensor) else np.dtype(dtype)
    if got is not None and got != want:
        fail(f"{on}{what} returned dtype {got}, but the inputs are {np.dtype(dtype)}: keep the "
             "inputs' precision (no conversion to float32 or to integers)")


def expect_tensor(out, what: str, dtype: torch.dtype, where: str = "") -> None:
    """The exercise asks for a PyTorch tensor of ``dtype`` (the inputs' dtype)."""
    on = f"on {where}: " if where else ""
    if out is None:
        fail(f"{what} returned None: did you forget the `return` statement?")
    if isinstance(out, np.ndarray):
        fail(f"{on}{what} returned a NumPy array; this exercise works in PyTorch: return a "
             "torch tensor (stay with torch operations, no .numpy())")
    if isinstance(out, (tuple, list)):
        fail(f"{on}{what} returned a {type(out).__name__} of {len(out)} items; return a "
             "single tensor")
    if not isinstance(out, torch.Tensor):
        fail(f"{on}{what} returned a {type(out).__name__}; return a torch tensor")
    if out.dtype != dtype:
        fail(f"{on}{what} returned dtype {out.dtype}, but the inputs are {dtype}: keep the "
             "inputs' dtype (no .float() or .double() in between)")


def expect_shape(got: np.ndarray, expected: tuple, labels: str = "", hint: str = "") -> None:
    """Fail with both shapes (and their meaning, e.g. ``(t_q, d_v)``) unless they match."""
    if tuple(got.shape) != tuple(expected):
        meaning = f" {labels}" if labels else ""
        extra = ""
        if 1 in expected and tuple(got.shape) == tuple(s for s in expected if s != 1):
            extra = (" — the axes of size 1 went missing (a bare .squeeze() removes every "
                     "size-1 axis, the batch's too: name the axis, e.g. .squeeze(-1))")
        elif hint:
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
        diff = np.where(np.isnan(diff), np.inf, diff)
        idx = tuple(int(i) for i in np.unravel_index(np.argmax(diff), got.shape))
        fail(f"{what} is wrong at index {idx}: got {got[idx]:.6g}, expected {expected[idx]:.6g}")


def matches(got: np.ndarray, candidate: np.ndarray) -> bool:
    """Does the reader's output equal a known wrong answer? (used to diagnose mistakes)"""
    return got.shape == candidate.shape and np.allclose(got, candidate, atol=1e-6, rtol=1e-5)


def expect_gradients(out: torch.Tensor, ref: torch.Tensor, inputs, names, where: str,
                     rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Backpropagate the same random upstream gradient through the reader's ``out`` and the
    reference ``ref`` (both functions of ``inputs``, leaf tensors), and compare the gradients."""
    if not out.requires_grad:
        fail(f"on {where}: the result does not depend on the inputs through autograd (did you "
             "detach, call .item(), or go through NumPy?); training needs its gradient")
    g = torch.Generator().manual_seed(0)
    up = torch.randn(out.shape, generator=g, dtype=torch.float64)
    try:
        got = torch.autograd.grad(out, inputs, grad_outputs=up.to(out.dtype), allow_unused=True)
    except RuntimeError as e:
        fail(f"on {where}: backpropagating through your result failed ({e}); did you modify a "
             "tensor in place that autograd needs?")
    want = torch.autograd.grad(ref, inputs, grad_outputs=up.to(ref.dtype), allow_unused=True)
    for name, a, b in zip(names, got, want):
        if a is None and b is not None:
            fail(f"on {where}: the result does not depend on {name} through autograd; its "
                 "gradient would be missing in training (no .detach(), .item() or NumPy)")
        if b is None or a is None:
            continue
        if not torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol):
            i = int((a.double() - b.double()).abs().argmax())
            fail(f"on {where}: the gradient with respect to {name} is wrong (flat index {i}: "
                 f"{a.flatten()[i].item():.6g}, expected {b.flatten()[i].item():.6g}); the "
                 "values are right but something is detached or not differentiable")
