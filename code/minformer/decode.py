"""Turning a trained model's logits into text, one token at a time.

- :func:`sample_next` — choose the next token from (batch, vocab) logits: greedily (argmax),
  or by sampling at a temperature, optionally among the top-k tokens only.
- :func:`generate` — autoregressive generation with a decoder-only language model: append the
  chosen token and run the model again, ``max_new_tokens`` times.
"""

import torch


def sample_next(logits, temperature: float = 1.0, top_k: int | None = None,
                greedy: bool = False, generator: torch.Generator | None = None):
    """logits (batch, vocab) → next ids (batch,).

    greedy: argmax. Otherwise sample from softmax(logits / temperature), restricted to the
    ``top_k`` highest logits when given: temperature → 0 approaches greedy, temperature = 1 is the
    model's own distribution, larger flattens it.
    """
    if logits.ndim != 2:
        raise ValueError(f"logits must be (batch, vocab); got shape {tuple(logits.shape)}")
    if greedy:
        return logits.argmax(dim=-1)  # (batch,)
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0 (use greedy=True for argmax); got {temperature}")
    logits = logits.float() / temperature  # (batch, vocab)
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive int; got {top_k!r}")
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]  # (batch, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(dim=-1)  # (batch, vocab)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]  # (batch,)


@torch.no_grad()
def generate(model, ids, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, greedy: bool = False, eos_id: int | None = None,
             generator: torch.Generator | None = None):
    """Extend ``ids`` (batch, t) by up to ``max_new_tokens`` tokens from a decoder-only model
    (``model(ids)`` → (batch, t, vocab) logits). Each step runs the model on the whole prefix
    (chapter 14 caches the keys and values instead) and keeps only the last position's logits.
    The prefix is cut to the model's ``config.max_len`` most recent tokens when it grows longer.
    Stops early when every sequence has produced ``eos_id``. Returns (batch, t + new).
    """
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be an int ≥ 0; got {max_new_tokens!r}")
    was_training = model.training
    model.eval()
    max_len = getattr(getattr(model, "config", None), "max_len", None)
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    for _ in range(max_new_tokens):
        context = ids if max_len is None else ids[:, -max_len:]  # (batch, ≤ max_len)
        logits = model(context)[:, -1]  # (batch, vocab): the prediction for the next token
        nxt = sample_next(logits, temperature, top_k, greedy, generator)  # (batch,)
        if eos_id is not None:
            nxt = nxt.masked_fill(done, eos_id)
            done |= nxt == eos_id
        ids = torch.cat([ids, nxt[:, None]], dim=1)  # (batch, t + 1)
        if eos_id is not None and done.all():
            break
    model.train(was_training)
    return ids
