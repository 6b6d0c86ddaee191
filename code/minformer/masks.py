"""Attention masks: which keys each query may look at.

**The one convention used everywhere in minformer: a mask is a bool tensor and True = may attend.**
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


def _check_length(t, name: str = "t") -> int:
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise ValueError(f"{name} must be a positive int (a sequence length); got {t!r}")
    return t


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
    if tokens is not None:
        if pad_id is None:
            raise ValueError("padding_mask(tokens=...) needs pad_id, the id of the padding token")
        tokens = torch.as_tensor(tokens)
        if tokens.ndim != 2 or tokens.shape[1] == 0:
            raise ValueError(
                f"tokens must be (batch, t) with t ≥ 1; got shape {tuple(tokens.shape)}"
            )
        keep = tokens != pad_id  # (batch, t)
    else:
        lengths = torch.as_tensor(lengths)
        if lengths.ndim != 1 or lengths.dtype.is_floating_point or lengths.dtype == torch.bool:
            raise ValueError(
                f"lengths must be a 1-d integer tensor (batch,); got {lengths.dtype} of shape "
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
    return keep[:, None, :]  # (batch, 1, t): same for every query


def to_torch_mask(mask: torch.Tensor) -> torch.Tensor:
    """Our mask (True = may attend) as ``nn.MultiheadAttention``'s bool ``attn_mask`` or
    ``key_padding_mask`` (True = may NOT attend): the logical not. The same function converts back.

    For ``key_padding_mask`` pass a (batch, t_k) mask, e.g. ``padding_mask(...)[:, 0, 0, :]``.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise ValueError(
            f"to_torch_mask expects a bool tensor; got {getattr(mask, 'dtype', type(mask))}"
        )
    return ~mask


def to_additive_mask(mask: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    """Our bool mask as a float mask added to the scores: 0 where allowed, -inf where masked.

    Beware: a row that is fully masked becomes all -inf and softmax turns it into NaN.
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise ValueError(
            f"to_additive_mask expects a bool tensor; got {getattr(mask, 'dtype', type(mask))}"
        )
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(~mask, float("-inf"))
