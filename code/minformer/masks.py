"""Attention masks: which keys each query may look at.

**The one convention used everywhere in minformer: a mask is a bool tensor and True = may attend.**

Shapes that cannot be misread are the only ones attention accepts (see
:func:`minformer.attention.check_mask`): ``(t_q, t_k)``, shared by every sequence and head; or
the scores' own rank with each axis equal or 1 — ``(batch | 1, heads | 1, t_q | 1, t_k)`` for
multi-head scores, ``(batch | 1, t_q | 1, t_k)`` for single-head ones. A ``(batch, t_k)`` mask
(PyTorch's key-padding shape) is refused, since a 2-axis mask means ``(t_q, t_k)``; so is a
``(batch, 1, t_k)`` mask against multi-head scores, which would line up with ``(heads, t_q,
t_k)``. In self-attention, a mask that leaves a real query with no key at all draws a warning
once per session (the usual sign of a flipped convention) unless ``allow_empty_rows=True``.
Entry ``mask[..., i, j]`` says whether query i may take information from key j. A mask needs only
to *broadcast* to the attention scores' shape ``(batch, heads, t_q, t_k)`` (or ``(..., t_q, t_k)``
for single-head attention), so a causal mask is ``(t, t)`` and a padding mask has size-1 axes
where it does not vary.

Masks combine with logical and: a key is allowed only if every mask allows it::

    mask = causal_mask(t) & padding_mask(lengths, t)  # (t, t) & (batch, 1, 1, t) → (batch, 1, t, t)

(``|`` would allow a key if *any* mask allows it, which is rarely what you want.)

PyTorch uses other conventions, so translate at the border (:func:`to_torch_mask`):

- ``F.scaled_dot_product_attention(attn_mask=...)``: bool, True = may attend (same as ours).
- ``nn.MultiheadAttention`` / ``nn.Transformer*``: bool ``attn_mask`` and ``key_padding_mask``
  use **True = may NOT attend** (masked out), the opposite of ours; ``key_padding_mask`` is
  ``(batch, t_k)`` with True at padding. A float mask is *added* to the scores (0 or -inf).
"""

import torch

from . import validate


def _check_length(t, name: str = "t") -> int:
    return validate.positive_int(t, name)


def causal_mask(t: int, device=None) -> torch.Tensor:
    """Query i may attend to keys j ≤ i (itself and the past, never the future).

    Returns bool (t, t), lower-triangular: mask[i, j] = j ≤ i.
    """
    _check_length(t)
    return torch.ones(t, t, dtype=torch.bool, device=device).tril()  # (t, t)


def sliding_window_mask(t: int, window: int, causal: bool = True, device=None) -> torch.Tensor:
    """Local attention: query i sees only keys within ``window`` positions of itself.

    causal=True: keys i - window + 1 … i (the last ``window`` tokens, itself included).
    causal=False: keys i - window … i + window (``window`` on each side).
    Returns bool (t, t).
    """
    _check_length(t)
    _check_length(window, "window")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False; got {causal!r}")
    i = torch.arange(t, device=device)[:, None]  # (t, 1): query positions
    j = torch.arange(t, device=device)[None, :]  # (1, t): key positions
    if causal:
        return (j <= i) & (j > i - window)  # (t, t)
    return (j - i).abs() <= window  # (t, t)


def padding_mask(lengths=None, t: int | None = None, *, tokens=None, pad_id: int | None = None,
                 head_axis: bool = True) -> torch.Tensor:
    """Key mask hiding padding: key j of sequence b is allowed iff it is a real token.

    Give either ``lengths`` (batch,) — the number of real tokens of each sequence, padding at the
    end — with ``t`` the padded length (default: max(lengths)); or ``tokens`` (batch, t) with
    ``pad_id``, padding wherever tokens == pad_id.
    Returns bool (batch, 1, 1, t): broadcasts to multi-head scores (batch, heads, t_q, t_k).
    head_axis=False returns (batch, 1, t) for single-head scores (batch, t_q, t_k); a
    (batch, 1, 1, t) mask would wrongly broadcast those to (batch, batch, t_q, t_k).
    """
    if (lengths is None) == (tokens is None):
        raise ValueError("padding_mask needs exactly one of lengths=(batch,) or tokens=(batch, t)")
    if not isinstance(head_axis, bool):
        raise TypeError(f"head_axis must be True or False; got {head_axis!r}")
    if tokens is not None:
        if pad_id is None:
            raise ValueError("padding_mask(tokens=...) needs pad_id, the id of the padding token")
        validate.integer(pad_id, "pad_id")
        tokens = torch.as_tensor(tokens)
        if tokens.is_floating_point() or tokens.dtype == torch.bool:
            raise TypeError(f"tokens must be integer ids; got dtype {tokens.dtype}")
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise ValueError(
                f"tokens must be (batch, t) with t ≥ 1; got shape {tuple(tokens.shape)}"
            )
        keep = tokens != pad_id  # (batch, t)
    else:
        lengths = torch.as_tensor(lengths)
        if lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
            raise TypeError(
                f"lengths must be a 1-d integer tensor (batch,); got {lengths.dtype} of shape "
                f"{tuple(lengths.shape)}"
            )
        if lengths.ndim != 1 or lengths.numel() == 0:
            raise ValueError(
                f"lengths must be a 1-d integer tensor (batch,) with batch ≥ 1; got shape "
                f"{tuple(lengths.shape)}"
            )
        t = int(lengths.max()) if t is None else t
        _check_length(t)
        if (lengths < 0).any() or (lengths > t).any():
            raise ValueError(f"lengths must lie in 0..t={t}; got {lengths.tolist()}")
        positions = torch.arange(t, device=lengths.device)  # (t,)
        keep = positions[None, :] < lengths[:, None]  # (batch, t)
    if head_axis:
        return keep[:, None, None, :]  # (batch, 1, 1, t): same for every head and query
    # (batch, 1, t): for single-head scores (batch, t_q, t_k), or to combine with a (t, t)
    # mask; multi-head attention refuses it (it would line up with (heads, t_q, t_k))
    return keep[:, None, :]


def to_torch_mask(mask: torch.Tensor) -> torch.Tensor:
    """Our mask (True = may attend) as ``nn.MultiheadAttention``'s bool ``attn_mask`` or
    ``key_padding_mask`` (True = may NOT attend): the logical not. The same function converts back.

    For ``key_padding_mask`` pass a (batch, t_k) mask, e.g. ``padding_mask(...)[:, 0, 0, :]``.
    """
    validate.bool_tensor(mask, "mask")
    return ~mask


def to_additive_mask(mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Our bool mask as a float mask added to the scores: 0 where allowed, -inf where masked.

    dtype: a floating-point dtype (an additive mask holds -inf; torch.bool is refused).
    Beware: a row that is fully masked becomes all -inf and softmax turns it into NaN.
    """
    validate.bool_tensor(mask, "mask")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"to_additive_mask needs a floating-point dtype (it holds 0 and -inf); "
                        f"got {dtype!r} — for a bool mask use the mask itself")
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(~mask, float("-inf"))
