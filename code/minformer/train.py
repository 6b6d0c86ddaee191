"""One plain training loop for every model from chapter 12 on, and what it needs.

- :func:`sequence_loss` — cross-entropy over real (non-padding) target tokens, optionally
  label-smoothed.
- :func:`smoothed_cross_entropy` — the same loss for rows already stripped of padding, with
  its gradient (softmax minus the smoothed target) written by hand: one pass fewer over the
  (tokens × vocabulary) logits than PyTorch's, which the shipped translator's recipe uses.
- :func:`warmup_inverse_sqrt` — the learning-rate multiplier of "Attention Is All You Need":
  linear warmup, then decay as 1/√step.
- :func:`warmup_linear_decay` — linear warmup, then a straight line down to zero at the last
  step: for a run whose length is fixed in advance (the shipped translator's recipe).
- :func:`train` — a function, not a framework: draws batches, computes the loss you give it,
  steps the optimizer under the schedule, clips gradients, shows tqdm progress, calls an
  evaluation callback, stops after ``steps`` or ``max_seconds``, and returns a
  :class:`History` of what happened.
"""

import itertools
import math
import time
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from tqdm import tqdm

from . import validate
from .utils import evaluating
from .validate import integer, number, positive_int


def sequence_loss(logits, tgt_out, pad_id: int = 0, label_smoothing: float = 0.0):
    """Mean cross-entropy over the real target tokens (positions where tgt_out != pad_id).

    logits: (batch, t, vocab)   tgt_out: (batch, t) ids. Returns a scalar.
    With label smoothing ε the target distribution puts 1 - ε on the right token and spreads ε
    uniformly over the whole vocabulary (PyTorch's convention). A batch whose targets are all
    padding has no token to average over: ValueError (the mean would be NaN).
    """
    validate.tensor(logits, "logits", floating=True)
    validate.tensor(tgt_out, "tgt_out")
    if tgt_out.is_floating_point() or tgt_out.dtype == torch.bool:
        raise TypeError(f"tgt_out must hold integer token ids; got dtype {tgt_out.dtype}")
    pad_id = integer(pad_id, "pad_id")
    if logits.ndim != 3 or tuple(logits.shape[:2]) != tuple(tgt_out.shape):
        raise ValueError(
            f"logits (batch, t_tgt, vocab) and tgt_out (batch, t_tgt) disagree: "
            f"logits {tuple(logits.shape)}, tgt_out {tuple(tgt_out.shape)}"
        )
    number(label_smoothing, "label_smoothing", low=0.0, high=1.0, high_open=True)
    real = tgt_out != pad_id
    if not bool(real.any()):
        raise ValueError(f"every target token is padding (pad_id={pad_id}, tgt_out "
                         f"{tuple(tgt_out.shape)}): no token to average the loss over")
    outside = real & ((tgt_out < 0) | (tgt_out >= logits.shape[-1]))
    if bool(outside.any()):
        raise ValueError(f"tgt_out holds ids outside the vocabulary 0..{logits.shape[-1] - 1} of "
                         f"logits {tuple(logits.shape)} (pad_id={pad_id} aside): "
                         f"{sorted(set(tgt_out[outside].tolist()))[:5]}")
    return F.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(),  # (batch·t, vocab)
        tgt_out.reshape(-1),  # (batch·t,)
        ignore_index=pad_id,
        label_smoothing=label_smoothing,
    )


def _shifted(logits, labels, eps: float):
    """``(z, logsumexp(z), per-row loss)`` with z = logits - max(logits) per row, which changes
    neither the loss ((1 - ε) + ε = 1) nor the softmax, for logits whose sum overflows float32
    (or whose log-sum-exp rounds away the softmax). Only taken when the plain formula is not
    finite, so ordinary logits keep their numbers bit for bit. Non-finite logits: ValueError."""
    z = logits - logits.max(dim=-1, keepdim=True).values  # (n, vocab), every entry ≤ 0
    lse = torch.logsumexp(z, dim=-1)  # (n,)
    rows = lse - (1 - eps) * z.gather(1, labels[:, None]).squeeze(1) - eps * z.mean(dim=-1)
    if not bool(torch.isfinite(rows).all()):
        raise ValueError("logits hold NaN or inf: the loss is undefined")
    return z, lse, rows


class _SmoothedCrossEntropy(torch.autograd.Function):
    """Mean label-smoothed cross-entropy of rows of logits; see :func:`smoothed_cross_entropy`."""

    @staticmethod
    def forward(ctx, logits, labels, eps: float):
        lse = torch.logsumexp(logits, dim=-1)  # (n,): log Σ_v exp z_v
        picked = logits.gather(1, labels[:, None]).squeeze(1)  # (n,): z_y
        rows = lse - (1 - eps) * picked - eps * logits.mean(dim=-1)  # (n,)
        if not bool(torch.isfinite(rows).all()):  # the mean overflowed (logits near 3e38):
            logits, lse, rows = _shifted(logits, labels, eps)  # the same loss, from z - max z
        ctx.save_for_backward(logits, lse, labels)
        ctx.eps = eps
        return rows.mean()

    @staticmethod
    def backward(ctx, grad):
        logits, lse, labels = ctx.saved_tensors
        n, vocab = logits.shape
        g = torch.exp(logits - lse[:, None])  # (n, vocab): the softmax, in one new buffer
        g.sub_(ctx.eps / vocab)  # minus the smoothed target: ε/V everywhere ...
        g.scatter_add_(1, labels[:, None], g.new_full((n, 1), -(1 - ctx.eps)))  # ... + 1-ε at y
        return g.mul_(grad / n), None, None


def smoothed_cross_entropy(logits, labels, label_smoothing: float = 0.0):
    """Mean label-smoothed cross-entropy of ``logits`` (n, vocab) against ``labels`` (n,), every
    row a real token: ``F.cross_entropy(logits, labels, label_smoothing=ε)`` to rounding.

    Per row, with z the logits and y the label, the loss is
    logsumexp(z) - (1 - ε)·z_y - ε·mean(z), and its gradient is softmax(z) - q with q the
    smoothed target (1 - ε + ε/V at y, ε/V elsewhere). PyTorch's version stores the
    log-probabilities and differentiates through them; this one keeps only the logits and
    builds the gradient in one (n, vocab) buffer, which makes a training step of the shipped
    translator a few percent faster on a CPU (data/README.md). Computed in float32 at least."""
    logits = validate.tensor(logits, "logits", ndim=2, floating=True)
    labels = validate.tensor(labels, "labels", ndim=1)
    if labels.shape[0] != logits.shape[0]:
        raise ValueError(f"logits (n, vocab) and labels (n,) disagree: logits "
                         f"{tuple(logits.shape)}, labels {tuple(labels.shape)}")
    if labels.dtype != torch.long:
        raise TypeError(f"labels must be int64 token ids; got {labels.dtype}")
    if logits.shape[0] == 0:
        raise ValueError("no rows to score: logits is (0, vocab)")
    if labels.min() < 0 or labels.max() >= logits.shape[1]:  # (n ≥ 1 rows here)
        raise ValueError(f"labels must lie in [0, {logits.shape[1]}) (the vocabulary of logits "
                         f"{tuple(logits.shape)}); got {int(labels.min())}..{int(labels.max())}")
    number(label_smoothing, "label_smoothing", low=0.0, high=1.0, high_open=True)
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    return _SmoothedCrossEntropy.apply(logits, labels, float(label_smoothing))


def warmup_inverse_sqrt(step: int, warmup: int) -> float:
    """Learning-rate multiplier at optimizer step ``step`` (0-based): rises linearly to 1 over
    ``warmup`` steps, then falls as √(warmup / step). The peak learning rate is the optimizer's.

    (The paper's lr = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) is this multiplier times
    a peak of d_model^-0.5 · warmup^-0.5.) warmup = 0: constant 1.
    """
    integer(step, "step", minimum=0)
    integer(warmup, "warmup", minimum=0)
    n = step + 1
    if warmup == 0:
        return 1.0
    return min(n / warmup, math.sqrt(warmup / n))


def warmup_linear_decay(step: int, warmup: int, steps: int) -> float:
    """Learning-rate multiplier at optimizer step ``step`` (0-based) of a ``steps``-step run:
    rises linearly to 1 over ``warmup`` steps, then falls linearly, reaching 1 / (steps - warmup)
    at the last step and 0 after it. Unlike 1/√step it spends the whole budget: the last steps
    take small, averaging-like updates. warmup = 0: no warmup. Needs 0 ≤ warmup < steps and
    step ≥ 0 (a negative step would give a multiplier above 1, or below 0).
    """
    integer(step, "step", minimum=0)
    integer(warmup, "warmup", minimum=0)
    positive_int(steps, "steps")
    if warmup >= steps:
        raise ValueError(f"warmup={warmup} must be smaller than steps={steps} to leave room "
                         f"for the decay")
    up = min(1.0, (step + 1) / warmup) if warmup else 1.0
    return min(up, max(0.0, (steps - step) / (steps - warmup)))


SCHEDULES = ("inverse_sqrt", "linear")


@dataclass
class History:
    """What :func:`train` did: per step the loss and learning rate; the evaluations
    ``(step, training seconds so far, value)``; the training time ``seconds`` (evaluations not
    included: they take ``eval_seconds``); and the tokens counted (if the loss function
    returned them)."""

    losses: list = field(default_factory=list)
    lrs: list = field(default_factory=list)
    evals: list = field(default_factory=list)
    seconds: float = 0.0
    eval_seconds: float = 0.0
    tokens: int = 0

    @property
    def steps(self) -> int:
        return len(self.losses)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else float("nan")

    def smoothed(self, window: int = 50) -> list:
        """The loss averaged over the last ``window`` steps at each step (for plots)."""
        positive_int(window, "window")
        out, total = [], 0.0
        for i, x in enumerate(self.losses):
            total += x
            if i >= window:
                total -= self.losses[i - window]
            out.append(total / min(i + 1, window))
        return out

    def to_dict(self) -> dict:
        """Every field, as JSON can hold it (evaluations as lists)."""
        return {"losses": self.losses, "lrs": self.lrs, "evals": [list(e) for e in self.evals],
                "seconds": self.seconds, "eval_seconds": self.eval_seconds, "tokens": self.tokens}

    @classmethod
    def from_dict(cls, d: dict) -> "History":
        """A History from :meth:`to_dict`'s dict, or from a shipped history that left out the
        learning rates and evaluation time (chapter 13's race); evaluations become tuples."""
        if not isinstance(d, dict):
            raise TypeError(f"a History's dict must be a dict (History.to_dict()); got "
                            f"{type(d).__name__}")
        missing = [k for k in ("losses", "evals", "seconds", "tokens") if k not in d]
        if missing:
            raise ValueError(f"a History's dict needs 'losses', 'evals', 'seconds' and 'tokens' "
                             f"(History.to_dict()); this one lacks {', '.join(missing)}")
        return cls(losses=list(d["losses"]), lrs=list(d.get("lrs", [])),
                   evals=[tuple(e) for e in d["evals"]], seconds=d["seconds"],
                   eval_seconds=d.get("eval_seconds", 0.0), tokens=d["tokens"])


def _batches(data):
    """An endless stream of batches: re-iterates ``data`` (or calls it, if it is a function
    that returns a fresh iterable each epoch) whenever it runs out."""
    for epoch in itertools.count():
        iterable = data(epoch) if callable(data) else data
        empty = True
        for batch in iterable:
            empty = False
            yield batch
        if empty:
            raise ValueError("the training data yielded no batch")


def train(
    model: torch.nn.Module,
    data: Iterable | Callable,
    loss_fn: Callable,
    optimizer: torch.optim.Optimizer,
    *,
    steps: int | None = None,
    max_seconds: float | None = None,
    warmup: int = 0,
    schedule: str = "inverse_sqrt",
    clip: float | None = 1.0,
    eval_fn: Callable | None = None,
    eval_every: int = 0,
    autocast_dtype: torch.dtype | None = None,
    progress: bool = True,
    desc: str = "training",
) -> History:
    """Train ``model`` until ``steps`` optimizer steps or ``max_seconds`` have passed (whichever
    comes first; at least one must be given).

    data        an iterable of batches (re-iterated as often as needed), or a function
                ``epoch -> iterable`` (to reshuffle each epoch)
    loss_fn     ``(model, batch) -> loss`` or ``-> (loss, n_tokens)``; n_tokens feeds tokens/s
    optimizer   its learning rate is the peak; the schedule multiplies it by
                :func:`warmup_inverse_sqrt` (``warmup`` = 0: constant)
    schedule    "inverse_sqrt" (the default, above) or "linear": :func:`warmup_linear_decay`
                over ``steps``, which it then needs
    clip        max global gradient norm (None: no clipping)
    eval_fn     ``model -> float``, called every ``eval_every`` steps and at the end, in eval
                mode under no_grad (then back to training mode); its time does not count
                towards ``max_seconds``
    eval_every  an int ≥ 0: evaluate every so many steps (0: only at the end)
    autocast_dtype  e.g. torch.bfloat16: run forward and loss under ``torch.autocast`` on the
                model's device (weights and optimizer stay fp32)
    """
    if steps is None and max_seconds is None:
        raise ValueError("give steps=..., max_seconds=..., or both")
    if steps is not None:
        positive_int(steps, "steps")
    if max_seconds is not None:
        number(max_seconds, "max_seconds", low=0.0, low_open=True)
    if clip is not None:
        number(clip, "clip", low=0.0, low_open=True)
    integer(warmup, "warmup", minimum=0)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}; got {schedule!r}")
    if schedule == "linear":
        if steps is None:
            raise ValueError('schedule="linear" decays to zero at the last step: give steps=...')
        warmup_linear_decay(0, warmup, steps)  # checks warmup < steps

        def factor_at(step):
            return warmup_linear_decay(step, warmup, steps)
    else:
        def factor_at(step):
            return warmup_inverse_sqrt(step, warmup)
    integer(eval_every, "eval_every", minimum=0)  # 0: only at the end
    if eval_every and eval_fn is None:
        raise ValueError("eval_every needs an eval_fn")
    device = next(model.parameters()).device
    base_lrs = [g["lr"] for g in optimizer.param_groups]
    cast = (torch.autocast(device.type, dtype=autocast_dtype) if autocast_dtype is not None
            else nullcontext())
    history = History()

    def training_seconds():
        return time.perf_counter() - start - history.eval_seconds

    def evaluate():
        t0 = time.perf_counter()
        with evaluating(model):
            value = float(eval_fn(model))
        history.evals.append((history.steps, training_seconds() - (time.perf_counter() - t0),
                              value))
        history.eval_seconds += time.perf_counter() - t0
        return value

    model.train()
    bar = tqdm(total=steps, desc=desc, disable=not progress, mininterval=1.0)
    start = time.perf_counter()
    for batch in _batches(data):
        factor = factor_at(history.steps)
        for group, lr in zip(optimizer.param_groups, base_lrs):
            group["lr"] = lr * factor
        with cast:
            out = loss_fn(model, batch)
        loss, n_tokens = out if isinstance(out, tuple) else (out, 0)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            what = (f"a tensor of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor)
                    else f"{type(loss).__name__} {loss!r}"[:80])
            raise TypeError(f"loss_fn must return the loss as a one-element tensor (or (loss, "
                            f"n_tokens)); got {what}: a float has no gradient (return the tensor, "
                            "not .item()), and a per-token loss needs .mean()")
        if not loss.requires_grad:
            raise ValueError("loss_fn returned a loss that does not depend on the model's "
                             "parameters (requires_grad is False): was it computed under "
                             "torch.no_grad() or detached?")
        if not torch.isfinite(loss):
            raise FloatingPointError(
                f"the loss became {loss.item()} at step {history.steps} (learning rate "
                f"{optimizer.param_groups[0]['lr']:g}): lower the learning rate or clip gradients")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        history.losses.append(loss.item())
        history.lrs.append(optimizer.param_groups[0]["lr"])
        history.tokens += int(n_tokens)
        bar.update(1)
        bar.set_postfix(loss=f"{history.losses[-1]:.3f}", refresh=False)
        if eval_every and history.steps % eval_every == 0:
            evaluate()
        if (steps is not None and history.steps >= steps) or (
                max_seconds is not None and training_seconds() >= max_seconds):
            break
    history.seconds = training_seconds()
    bar.close()
    for group, lr in zip(optimizer.param_groups, base_lrs):  # leave the peak lr behind
        group["lr"] = lr
    if eval_fn is not None and (not history.evals or history.evals[-1][0] != history.steps):
        evaluate()
    return history
