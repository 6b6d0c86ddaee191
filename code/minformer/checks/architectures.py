"""Checker for chapter 12 (the three architectures): BERT's masking rule."""

import torch

from ._core import call, checker, fail

IGNORE = -100


def _batch(rng, batch, t, vocab, n_special):
    """Ids ≥ n_special, BOS (id 1) first, right-padded with PAD (id 0) to random lengths."""
    x = torch.from_numpy(rng.integers(n_special, vocab, size=(batch, t))).long()
    x[:, 0] = 1
    lengths = rng.integers(max(2, t // 2), t + 1, size=batch)
    for b, n in enumerate(lengths):
        x[b, n:] = 0
    return x


def _run(fn, tokens, mask_id, vocab, special, seed, where):
    g = torch.Generator().manual_seed(seed)

    def with_generator(tokens):  # the generator's state may change; the tokens may not
        return fn(tokens, mask_id, vocab, special, g)

    with_generator.__name__ = getattr(fn, "__name__", "your function")
    out = call(with_generator, tokens, what=with_generator.__name__, where=where)
    if not (isinstance(out, tuple) and len(out) == 2):
        fail(f"on {where}: return a pair (inputs, targets); got {type(out).__name__}")
    inputs, targets = out
    for name, x in (("inputs", inputs), ("targets", targets)):
        if not isinstance(x, torch.Tensor):
            fail(f"on {where}: {name} must be a torch tensor; got {type(x).__name__}")
        if tuple(x.shape) != tuple(tokens.shape):
            fail(f"on {where}: {name} has shape {tuple(x.shape)}; expected {tuple(tokens.shape)}"
                 " (batch, t), the shape of tokens")
        if x.dtype != torch.long:
            fail(f"on {where}: {name} has dtype {x.dtype}; token ids are torch.long")
    return inputs, targets


@checker("BERT masking")
def check_mask_tokens(fn, rng, seed):
    """``fn(tokens, mask_id, vocab_size, special_ids, generator) -> (inputs, targets)``:
    pick each non-special token with probability 0.15; of the picked, 80% → mask_id, 10% → a
    random non-special id, 10% unchanged; targets = the original token where picked, -100
    elsewhere; use ``generator`` for every random draw."""
    cases = 0
    specials = (0, 1, 2, 3)  # pad, bos, eos, mask
    mask_id = 3
    for batch, t, vocab, label in ((300, 400, 60, "a (300, 400) batch, vocabulary 60"),
                                   (int(rng.integers(150, 250)), int(rng.integers(300, 500)),
                                    int(rng.integers(20, 200)), None)):
        where = label or f"a random (batch, t) batch (seed {seed})"
        tokens = _batch(rng, batch, t, vocab, len(specials))
        inputs, targets = _run(fn, tokens, mask_id, vocab, specials, seed, where)
        is_special = torch.isin(tokens, torch.tensor(specials))
        picked = targets != IGNORE
        if picked.all():
            fail(f"on {where}: every position has a target; only the picked ~15% are predicted, "
                 f"the others get target {IGNORE} (ignored by the loss)")
        if (picked & is_special).any():
            kind = "padding tokens" if (picked & (tokens == 0)).any() else "special tokens (BOS)"
            fail(f"on {where}: {kind} were picked for prediction; only real tokens may be "
                 "picked (leave out every id in special_ids)")
        wrong_target = picked & (targets != tokens)
        if wrong_target.any():
            i = tuple(int(v) for v in wrong_target.nonzero()[0])
            got, want = int(targets[i]), int(tokens[i])
            hint = (" — the target must be the *original* token, not the corrupted input"
                    if got == int(inputs[i]) else "")
            fail(f"on {where}: target at {i} is {got}, the original token there is {want}{hint}")
        unpicked_changed = ~picked & (inputs != tokens)
        if unpicked_changed.any():
            i = tuple(int(v) for v in unpicked_changed.nonzero()[0])
            fail(f"on {where}: input at {i} changed ({int(tokens[i])} → {int(inputs[i])}) but "
                 "has no target; a token that is masked or replaced must also get its target "
                 "(the 10% left unchanged too)")
        n = int(picked.sum())
        masked = int((inputs[picked] == mask_id).sum()) / n
        kept = int((inputs[picked] == tokens[picked]).sum()) / n
        replaced = inputs[picked & (inputs != mask_id) & (inputs != tokens)]
        if masked > 0.95:
            fail(f"on {where}: {masked:.0%} of the picked tokens became the mask; BERT masks "
                 "80%, replaces 10% by a random token and leaves 10% unchanged")
        if kept < 0.05:
            fail(f"on {where}: only {kept:.1%} of the picked tokens were left unchanged; about "
                 "10% should keep their own id (still with a target)")
        n_real = int((~is_special).sum())
        share = int(picked.sum()) / n_real
        if abs(share - 0.15) > 0.015:
            fail(f"on {where}: {share:.1%} of the real tokens were picked; expected about 15% "
                 "(p = 0.15 for each real token, not of all positions)")
        if abs(masked - 0.8) > 0.03:
            fail(f"on {where}: {masked:.1%} of the picked tokens became the mask; expected about "
                 "80% of the picked (not 80% of all tokens)")
        if abs(kept - 0.1) > 0.03:
            fail(f"on {where}: {kept:.1%} of the picked tokens were left unchanged; expected "
                 "about 10% (plus the rare random draw of the same id)")
        if len(replaced) == 0:
            fail(f"on {where}: no picked token was replaced by a random token; about 10% should")
        if torch.isin(replaced, torch.tensor(specials)).any():
            fail(f"on {where}: a random replacement was a special token (pad, bos, eos or "
                 "mask); draw replacements from the non-special ids only")
        if int(replaced.min()) < 0 or int(replaced.max()) >= vocab:
            fail(f"on {where}: a random replacement lies outside the vocabulary 0..{vocab - 1}")
        if len(torch.unique(replaced)) < min(10, vocab - len(specials)) // 2:
            fail(f"on {where}: the random replacements use only "
                 f"{len(torch.unique(replaced))} distinct ids; draw them uniformly over the "
                 "non-special vocabulary")
        again = _run(fn, tokens, mask_id, vocab, specials, seed, where)
        if not (torch.equal(again[0], inputs) and torch.equal(again[1], targets)):
            fail(f"on {where}: two calls with generators seeded alike gave different results; "
                 "draw every random number from the `generator` argument "
                 "(torch.rand(..., generator=generator))")
        cases += 1
    return cases


__all__ = ["check_mask_tokens"]
