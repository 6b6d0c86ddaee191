"""Checker for chapter 12 (the three architectures): BERT's masking rule.

The rule is random, so no single output is right or wrong. The checker runs the reader's
function on large batches and tests what must hold for *any* correct implementation, however
it orders its random draws:

- exact properties: shapes and dtypes; special ids never picked, wherever they sit and whatever
  their values (BERT's are 0 and 100-103, not the lowest ids); targets the original token where
  picked and -100 elsewhere; inputs changed only where picked; replacements never special and
  inside the vocabulary;
- proportions, within five standard errors: 15% of the real tokens picked; of those 80% masked,
  10% replaced, 10% (plus the replacements that drew their own id) unchanged;
- independence, by the dispersion of counts: the picks per row, and per position across rows,
  spread as independent draws per token do (a fixed count per row is too even; one draw per row
  or per position is far too uneven), and so do the fates of the picked;
- uniformity: every non-special id, the top one included, is drawn as a replacement about as
  often as the others, whatever the batch's own token frequencies (which are Zipf-like here),
  and ids that never occur in the batch too (one case's words are only the lower ids); with two
  non-special ids, half the random replacements draw the token's own id and leave it unchanged
  (an answer that draws again to avoid it changes the unchanged share from 15% to 10%);
- the caller's generator: equal seeds give equal maskings whatever the global random state,
  different seeds or successive calls give different ones.
"""

import random

import numpy as np
import torch

from ._core import call, checker, fail

IGNORE = -100


def _batch(rng, batch, t, vocab, pad, bos, eos, inner=(), share=1.0, exclude=()):
    """(batch, t) ids: ``bos`` first, Zipf-distributed non-special ids, ``eos`` last, then
    ``pad``; ``inner`` special ids (an [UNK], a middle [SEP]) sprinkled among the words. With
    ``share`` < 1 the words are only the lowest ``share`` of the non-special ids (the others, the
    top one included, never occur in the batch; ``exclude``: other special ids, such as the
    mask, that must not occur either)."""
    special = {pad, bos, eos, *inner, *exclude}
    allowed = np.array([i for i in range(vocab) if i not in special])
    allowed = allowed[:max(1, int(len(allowed) * share))]
    weights = 1.0 / np.arange(1, len(allowed) + 1)  # Zipf: a few ids are frequent
    order = rng.permutation(len(allowed))  # which id is frequent differs from case to case
    x = rng.choice(allowed[order], size=(batch, t), p=weights / weights.sum())
    for s in inner:
        x[rng.random((batch, t)) < 0.01] = s
    lengths = rng.integers(max(3, t // 2), t + 1, size=batch)
    for b, n in enumerate(lengths):
        x[b, 0], x[b, n - 1] = bos, eos
        x[b, n:] = pad
    return torch.from_numpy(x).long()


def _cases(rng, seed):
    """(where, tokens, mask_id, vocab_size, special_ids)."""
    cases = []
    tokens = _batch(rng, 400, 512, 110, pad=0, bos=101, eos=102, inner=(100,))
    cases.append(("BERT's special ids (pad 0, [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103: "
                  "not the lowest ids), a (400, 512) batch, vocabulary 110",
                  tokens, 103, 110, (0, 100, 101, 102, 103)))
    tokens = _batch(rng, 400, 512, 60, pad=0, bos=1, eos=2, share=0.55, exclude=(3,))
    cases.append(("special ids 0-3 (pad, bos, eos, mask), vocabulary 60, a (400, 512) batch "
                  "whose words are only ids 4-33: the ids 34-59 never occur in it, yet may "
                  "replace", tokens, 3, 60, (0, 1, 2, 3)))
    tokens = _batch(rng, 300, 300, 6, pad=0, bos=1, eos=2)
    cases.append(("a vocabulary of 6 with specials 0-3: two ids (4, 5) may replace, so half "
                  "the random replacements draw the token's own id",
                  tokens, 3, 6, (0, 1, 2, 3)))
    vocab = int(rng.integers(30, 90))
    special = sorted(int(i) for i in rng.choice(vocab, size=int(rng.integers(4, 7)),
                                                replace=False))
    pad, bos, eos, mask_id, *inner = (int(i) for i in rng.permutation(special))
    tokens = _batch(rng, int(rng.integers(300, 400)), int(rng.integers(400, 520)), vocab,
                    pad=pad, bos=bos, eos=eos, inner=tuple(inner))
    cases.append((f"a random case (seed {seed}): vocabulary {vocab}, special ids {special}, "
                  f"mask {mask_id}, a {tuple(tokens.shape)} batch",
                  tokens, mask_id, vocab, tuple(special)))
    return cases


def _run(fn, tokens, mask_id, vocab, special, seed, where, scramble=0):
    """The reader's (inputs, targets) with a generator seeded ``seed`` (shapes and dtypes
    checked). The global random states (torch, numpy, random) are set to values that depend on
    ``scramble`` during the call, so that a masking drawn from them differs between calls with
    equal seeds; they are restored afterwards (the notebook's own state is left as it was)."""
    saved = torch.get_rng_state(), np.random.get_state(), random.getstate()
    torch.manual_seed(1_000_003 * scramble + 17)
    np.random.seed(1_000_033 * scramble + 19)
    random.seed(1_000_037 * scramble + 23)
    try:
        g = torch.Generator().manual_seed(seed)
        return _run_with(fn, tokens, mask_id, vocab, special, g, where)
    finally:
        torch.set_rng_state(saved[0])
        np.random.set_state(saved[1])
        random.setstate(saved[2])


def _run_with(fn, tokens, mask_id, vocab, special, g, where):
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


def _exact(where, tokens, inputs, targets, mask_id, vocab, special):
    """The properties every masking must have, whatever its random draws."""
    specials = torch.tensor(sorted(set(special) | {mask_id}))
    is_special = torch.isin(tokens, specials)
    picked = targets != IGNORE
    if picked.all():
        fail(f"on {where}: every position has a target; only the picked ~15% are predicted, "
             f"the others get target {IGNORE} (ignored by the loss)")
    if not picked.any():
        fail(f"on {where}: no position was picked (every target is {IGNORE}); pick each real "
             f"token with probability 0.15 and give it its original id as the target")
    if (picked & is_special).any():
        ids = sorted({int(i) for i in tokens[picked & is_special].unique()})
        kind = ("padding tokens (id 0)" if ids == [0] else f"tokens with special ids {ids}")
        hint = ""
        if min(ids) >= len(special):
            hint = (f" — the special ids here are {tuple(special)}, not 0..{len(special) - 1}: "
                    "test membership (torch.isin(tokens, special_ids)), not a threshold")
        fail(f"on {where}: {kind} were picked for prediction; only real tokens may be picked "
             f"(leave out every id in special_ids){hint}")
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
    new = inputs[picked & (inputs != mask_id) & (inputs != tokens)]
    if len(new) and (int(new.min()) < 0 or int(new.max()) >= vocab):
        fail(f"on {where}: a random replacement ({int(new.min())}..{int(new.max())}) lies "
             f"outside the vocabulary 0..{vocab - 1}")
    if torch.isin(new, specials).any():
        ids = sorted({int(i) for i in new[torch.isin(new, specials)].unique()})
        fail(f"on {where}: random replacements drew the special ids {ids} (special ids here: "
             f"{tuple(special)}); draw replacements from the non-special ids only")
    return picked, is_special


def _near(share, expected, n, what, where, hint):
    """``share`` of ``n`` draws within five standard errors (or 0.01) of ``expected``."""
    tolerance = max(0.01, 5 * (expected * (1 - expected) / max(n, 1)) ** 0.5)
    if abs(share - expected) > tolerance:
        fail(f"on {where}: {share:.1%} of {what}; expected about {expected:.1%}{hint}")


def _proportions(where, tokens, inputs, picked, is_special, mask_id, n_allowed):
    n = int(picked.sum())
    masked = int((inputs[picked] == mask_id).sum()) / n
    kept = int((inputs[picked] == tokens[picked]).sum()) / n
    if masked > 0.95:
        fail(f"on {where}: {masked:.0%} of the picked tokens became the mask; BERT masks "
             "80%, replaces 10% by a random token and leaves 10% unchanged")
    if kept < 0.05:
        fail(f"on {where}: only {kept:.1%} of the picked tokens were left unchanged; about "
             "10% should keep their own id (still with a target)")
    n_real = int((~is_special).sum())
    _near(n / n_real, 0.15, n_real, "the real tokens were picked", where,
          " (p = 0.15 for each real token, not of all positions)")
    _near(masked, 0.8, n, "the picked tokens became the mask", where,
          " of the picked (not 80% of all tokens)")
    _near(kept, 0.1 + 0.1 / n_allowed, n, "the picked tokens were left unchanged", where,
          f": 10%, plus the random replacements that drew the token's own id (1 in "
          f"{n_allowed} here: the draw is uniform over every non-special id, the token's own "
          "included, so do not draw again when it comes up)")
    if n_allowed > 1 and not (picked & (inputs != mask_id) & (inputs != tokens)).any():
        fail(f"on {where}: no picked token was replaced by a random token; about 10% should")


def _dispersion(counts, trials):
    """Counts of successes in independent draws (one per token) spread binomially: the index
    Σ (x - n p)² / (n p (1 - p)) / units is about 1 (± 0.16 at 100 units). Far below, the
    counts are too even (a fixed number per unit); far above, too uneven (one draw shared by a
    whole unit). None when there are too few units of ≥ 20 draws to judge."""
    keep = trials >= 20
    x, n = counts[keep].double(), trials[keep].double()
    if len(n) < 100:
        return None
    p = float(x.sum() / n.sum())
    if not 0 < p < 1:
        return None
    return float(((x - n * p) ** 2 / (n * p * (1 - p))).mean())


def _independence(where, inputs, picked, is_special, mask_id):
    real = ~is_special
    masked = picked & (inputs == mask_id)
    for what, counts, trials, fix in (
            ("the picks", picked, real, "pick each real token on its own draw with probability "
             "0.15: torch.rand(tokens.shape, generator=generator) < 0.15"),
            ("the masked among the picked", masked, picked, "decide each picked token's fate "
             "(mask, random, keep) on its own draw")):
        index = {unit: _dispersion(counts.sum(dim), trials.sum(dim))
                 for dim, unit in ((1, "row"), (0, "position"))}
        for unit, other in (("row", "batch"), ("position", "rows")):
            if index[unit] is not None and index[unit] > 2.5:
                fail(f"on {where}: {what} per {unit} vary far more than independent draws allow "
                     f"(dispersion {index[unit]:.1f}, expected about 1): {fix}, of shape "
                     f"(batch, t), not one draw per {unit} shared across the {other}")
        for unit in ("row", "position"):
            if index[unit] is not None and index[unit] < 0.3:
                fail(f"on {where}: {what} per {unit} are far more even than independent draws "
                     f"give (dispersion {index[unit]:.2f}, expected about 1): {fix}, not a "
                     f"fixed number per {unit}")


def _uniform(where, tokens, inputs, picked, mask_id, allowed, vocab):
    """Replacements drawn uniformly over the allowed ids. A draw equal to the original token
    looks unchanged, so id k is seen replacing with weight (picked tokens other than k)."""
    new_at = picked & (inputs != mask_id) & (inputs != tokens)
    observed = torch.bincount(inputs[new_at], minlength=vocab)[allowed].double()
    freq = torch.bincount(tokens[picked], minlength=vocab)[allowed].double()  # picked per id
    weight = picked.sum() - freq
    expected = observed.sum() * weight / weight.sum()
    chi2 = float(((observed - expected) ** 2 / expected.clamp_min(1e-9)).sum())
    df = len(allowed) - 1
    not_uniform = chi2 > df + 10 * (2 * df) ** 0.5 + 20
    if not_uniform and float(torch.corrcoef(torch.stack([observed, freq]))[0, 1]) > 0.8:
        fail(f"on {where}: the random replacements follow the batch's own token frequencies "
             f"(chi-square {chi2:.0f} on {df} degrees of freedom against a uniform draw): draw "
             "ids uniformly from the non-special vocabulary, not tokens from the batch")
    never = (observed == 0) & (expected >= 20)
    if never.any():
        ids = [int(i) for i in allowed[never]]
        top = (f" — the top id {vocab - 1} is never drawn: torch.randint(low, high) excludes "
               "high, so draw up to vocab_size" if vocab - 1 in ids else "")
        shown = ids[:8] + (["..."] if len(ids) > 8 else [])
        absent = not torch.isin(allowed[never], tokens).any()
        if absent and len(ids) > 1:  # not just the top one: the ids the batch lacks
            top = (" — none of them occurs in the batch: draw from the whole vocabulary "
                   "(0..vocab_size - 1, specials left out), not from the ids the batch holds")
        fail(f"on {where}: the non-special ids {shown} were never drawn as replacements, "
             f"though a uniform draw would give each about {float(expected[never].mean()):.0f}"
             f" times{top}; draw uniformly from every non-special id")
    if not_uniform:
        fail(f"on {where}: the random replacements are not uniform over the non-special ids "
             f"(chi-square {chi2:.0f} on {df} degrees of freedom, expected about {df})")


def _generator(fn, where, tokens, mask_id, vocab, special, seed, first):
    again = _run(fn, tokens, mask_id, vocab, special, seed, where, scramble=1)
    if not (torch.equal(again[0], first[0]) and torch.equal(again[1], first[1])):
        fail(f"on {where}: two calls with generators seeded alike gave different maskings; "
             "draw every random number from the `generator` argument "
             "(torch.rand(..., generator=generator)), never from torch's global generator, "
             "numpy or random")
    other = _run(fn, tokens, mask_id, vocab, special, seed + 1, where, scramble=2)
    if torch.equal(other[1], first[1]):
        fail(f"on {where}: generators seeded {seed} and {seed + 1} gave the same masking; "
             "use the generator you are given as it is: do not seed it again, and do not make "
             "a generator of your own")
    g = torch.Generator().manual_seed(seed)
    one = _run_with(fn, tokens, mask_id, vocab, special, g, where)
    two = _run_with(fn, tokens, mask_id, vocab, special, g, where)
    if torch.equal(one[1], two[1]):
        fail(f"on {where}: two calls in a row with the same generator gave the same masking; "
             "each call must draw new numbers from the generator's current state (do not "
             "reseed it, for example with generator.manual_seed(generator.initial_seed()))")


@checker("BERT masking")
def check_mask_tokens(fn, rng, seed):
    """``fn(tokens, mask_id, vocab_size, special_ids, generator) -> (inputs, targets)``:
    pick each non-special token with probability 0.15; of the picked, 80% → mask_id, 10% → a
    random non-special id, 10% unchanged; targets = the original token where picked, -100
    elsewhere; use ``generator`` for every random draw."""
    cases = _cases(rng, seed)
    for where, tokens, mask_id, vocab, special in cases:
        inputs, targets = _run(fn, tokens, mask_id, vocab, special, seed, where)
        picked, is_special = _exact(where, tokens, inputs, targets, mask_id, vocab, special)
        allowed = torch.tensor([i for i in range(vocab) if i not in set(special) | {mask_id}])
        _independence(where, inputs, picked, is_special, mask_id)  # before the proportions:
        _proportions(where, tokens, inputs, picked, is_special, mask_id, len(allowed))  # noisy

        if len(allowed) > 1:
            _uniform(where, tokens, inputs, picked, mask_id, allowed, vocab)
        _generator(fn, where, tokens, mask_id, vocab, special, seed, (inputs, targets))
    return len(cases)


__all__ = ["check_mask_tokens"]
