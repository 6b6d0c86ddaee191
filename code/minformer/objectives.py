"""What each architecture is trained to predict (chapter 12), as (inputs, targets) pairs.

- :func:`shift_for_next_token` — decoder-only language modelling: the input is the sequence
  without its last token, the target the sequence without its first, so position i is asked
  for token i + 1 having seen tokens 0..i.
- :func:`mask_tokens` — encoder-only masked-token prediction (BERT): pick ~15% of the real
  tokens; of those, 80% become ``[MASK]``, 10% a random token and 10% stay as they are; the
  targets are the original tokens at the picked positions and ``ignore_index`` elsewhere.

Targets use ``ignore_index`` (default -100, PyTorch's cross-entropy default) wherever nothing is
to be predicted, so ``F.cross_entropy(logits.flatten(0, 1), targets.flatten())`` scores only
the predictions that count.
"""

import numbers

import torch

from .validate import integer, number, positive_int, tensor

IGNORE = -100


def _ids(tokens, name="tokens"):
    tensor(tokens, name)
    if tokens.ndim != 2:
        raise ValueError(f"{name} must be a (batch, t) tensor of ids; got shape "
                         f"{tuple(tokens.shape)}")
    if tokens.dtype.is_floating_point or tokens.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer ids; got dtype {tokens.dtype}")


def shift_for_next_token(tokens, pad_id: int | None = None, ignore_index: int = IGNORE):
    """tokens (batch, t) → inputs (batch, t-1) = tokens[:, :-1], targets (batch, t-1) =
    tokens[:, 1:], with targets that are padding replaced by ``ignore_index`` (if pad_id given).
    """
    _ids(tokens)
    if tokens.shape[1] < 2:
        raise ValueError(f"need at least 2 tokens per sequence to predict a next one; got shape "
                         f"{tuple(tokens.shape)}")
    inputs, targets = tokens[:, :-1], tokens[:, 1:].clone()  # (batch, t-1) each
    if pad_id is not None:
        targets[targets == pad_id] = ignore_index
    return inputs, targets


def mask_tokens(tokens, mask_id: int, vocab_size: int, *, special_ids=(), p: float = 0.15,
                generator: torch.Generator | None = None, ignore_index: int = IGNORE):
    """BERT's masking rule. tokens (batch, t) → (inputs, targets), both (batch, t).

    Each real token (not in ``special_ids``: padding, BOS, ...) is picked with probability p.
    A picked token becomes ``mask_id`` with probability 0.8, a uniformly random non-special id
    with probability 0.1, and stays unchanged with probability 0.1; its target is the original
    token. Every other position has target ``ignore_index``. ``tokens`` is not modified.
    """
    _ids(tokens)
    number(p, "p", low=0.0, high=1.0, low_open=True, high_open=True)
    positive_int(vocab_size, "vocab_size")
    integer(mask_id, "mask_id")
    try:
        special_ids = list(special_ids)
    except TypeError:
        raise TypeError(f"special_ids must be a list of ints; got {special_ids!r}") from None
    if isinstance(special_ids, (str, bytes)) or any(
            isinstance(i, bool) or not isinstance(i, numbers.Integral) for i in special_ids):
        raise TypeError(f"special_ids must be ints (padding, BOS, ...); got {special_ids!r}")
    special = torch.tensor(sorted(set(special_ids) | {mask_id}), dtype=tokens.dtype)
    if not 0 <= mask_id < vocab_size:
        raise ValueError(f"mask_id={mask_id} is not an id of the vocabulary 0..{vocab_size - 1}")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size):
        raise ValueError(f"tokens holds ids outside the vocabulary 0..{vocab_size - 1}: min "
                         f"{int(tokens.min())}, max {int(tokens.max())}")
    if int(((special >= 0) & (special < vocab_size)).sum()) >= vocab_size:  # special: distinct
        raise ValueError(f"every id of the vocabulary 0..{vocab_size - 1} is special (mask_id "
                         f"and special_ids): no id is left to draw a random replacement from")
    real = ~torch.isin(tokens, special)  # (batch, t): may be picked
    u = torch.rand(tokens.shape, generator=generator)  # one draw picks …
    picked = real & (u < p)  # (batch, t)
    v = torch.rand(tokens.shape, generator=generator)  # … another decides what happens
    to_mask = picked & (v < 0.8)
    to_random = picked & (v >= 0.8) & (v < 0.9)
    # random replacements drawn among the non-special ids
    allowed = torch.ones(vocab_size, dtype=torch.bool)
    allowed[special[special < vocab_size]] = False
    choices = allowed.nonzero()[:, 0]  # (n_allowed,)
    r = choices[torch.randint(len(choices), tokens.shape, generator=generator)]
    inputs = tokens.clone()
    inputs[to_mask] = mask_id
    inputs[to_random] = r[to_random].to(tokens.dtype)
    targets = torch.full_like(tokens, ignore_index)
    targets[picked] = tokens[picked]
    return inputs, targets
