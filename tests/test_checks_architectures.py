"""check_mask_tokens (chapter 12) accepts BERT's rule, written in several correct ways, and
names the usual slips: each class of mistake below must be rejected on every seed tried."""

import numpy as np
import pytest
import torch
from helpers import rejects

from minformer.checks import check_mask_tokens
from minformer.objectives import mask_tokens


def solution(tokens, mask_id, vocab_size, special_ids, generator):
    return mask_tokens(tokens, mask_id, vocab_size, special_ids=special_ids, generator=generator)


def by_rejection(tokens, mask_id, vocab_size, special_ids, generator):
    """Correct, other draws: Bernoulli picks, a fate from randint(10), replacements drawn
    over the whole vocabulary and redrawn while special."""
    special = torch.tensor(sorted(set(special_ids) | {mask_id}))
    real = ~torch.isin(tokens, special)
    picked = real & torch.bernoulli(torch.full(tokens.shape, 0.15), generator=generator).bool()
    fate = torch.randint(10, tokens.shape, generator=generator)  # 0-7 mask, 8 random, 9 keep
    inputs = tokens.clone()
    inputs[picked & (fate < 8)] = mask_id
    where = picked & (fate == 8)
    draws = torch.randint(vocab_size, (int(where.sum()),), generator=generator)
    while torch.isin(draws, special).any():
        bad = torch.isin(draws, special)
        draws[bad] = torch.randint(vocab_size, (int(bad.sum()),), generator=generator)
    inputs[where] = draws
    targets = torch.where(picked, tokens, torch.full_like(tokens, -100))
    return inputs, targets


def loop_per_token(tokens, mask_id, vocab_size, special_ids, generator):
    """Correct, token by token, as a first attempt is often written (only picked ones draw
    their fate)."""
    special = set(special_ids) | {mask_id}
    allowed = [i for i in range(vocab_size) if i not in special]
    inputs, targets = tokens.clone(), torch.full_like(tokens, -100)
    u = torch.rand(tokens.shape, generator=generator)
    for b, t in (u < 0.15).nonzero().tolist():
        token = int(tokens[b, t])
        if token in special:
            continue
        targets[b, t] = token
        r = float(torch.rand(1, generator=generator))
        if r < 0.8:
            inputs[b, t] = mask_id
        elif r < 0.9:
            inputs[b, t] = allowed[int(torch.randint(len(allowed), (1,), generator=generator))]
    return inputs, targets


@pytest.mark.parametrize("fn", [solution, by_rejection])
def test_accepts_correct_answers_written_differently(fn, capsys):
    for seed in range(12):
        check_mask_tokens(fn, seed=seed)
    assert capsys.readouterr().out.count("✓ BERT masking: 4 cases passed") == 12


def test_accepts_a_token_by_token_loop(capsys):
    check_mask_tokens(loop_per_token, seed=0)
    assert "✓ BERT masking: 4 cases passed" in capsys.readouterr().out


def test_leaves_the_global_random_states_as_they_were():
    torch.manual_seed(5)
    np.random.seed(5)
    check_mask_tokens(solution, seed=3)
    after = torch.rand(3), np.random.rand(3)
    torch.manual_seed(5)
    np.random.seed(5)
    assert torch.equal(after[0], torch.rand(3)) and np.array_equal(after[1], np.random.rand(3))


def test_a_stub_is_reported_not_raised(capsys):
    def stub(tokens, mask_id, vocab_size, special_ids, generator):
        raise NotImplementedError("your code here")

    check_mask_tokens(stub)
    assert "not written yet: fill in stub" in capsys.readouterr().out


def test_rejects_a_no_op_answer_without_dividing_by_zero():
    def nothing_picked(tokens, mask_id, vocab_size, special_ids, generator):
        return tokens.clone(), torch.full_like(tokens, -100)

    rejects(check_mask_tokens, nothing_picked, "no position was picked (every target is -100)")


def test_rejects_masking_every_picked_token():
    def all_masked(tokens, mask_id, vocab_size, special_ids, generator):
        picked = ~torch.isin(tokens, torch.tensor(special_ids))
        picked &= torch.rand(tokens.shape, generator=generator) < 0.15
        inputs = tokens.masked_fill(picked, mask_id)
        return inputs, torch.where(picked, tokens, torch.full_like(tokens, -100))

    rejects(check_mask_tokens, all_masked, "100% of the picked tokens became the mask",
            "leaves 10% unchanged")


def test_rejects_targets_everywhere_and_corrupted_targets():
    def everywhere(tokens, *args):
        return solution(tokens, *args)[0], tokens.clone()

    def corrupted(tokens, *args):
        inputs, targets = solution(tokens, *args)
        return inputs, torch.where(targets != -100, inputs, targets)

    rejects(check_mask_tokens, everywhere, "every position has a target")
    rejects(check_mask_tokens, corrupted, "the target must be the *original* token")


def test_rejects_unchanged_tokens_without_target():
    def forgot_kept(tokens, *args):
        inputs, targets = solution(tokens, *args)
        return inputs, targets.masked_fill(inputs == tokens, -100)

    rejects(check_mask_tokens, forgot_kept, "only 0.0% of the picked tokens were left unchanged")


def test_rejects_picking_padding_and_special_replacements():
    def pads_too(tokens, mask_id, vocab_size, special_ids, generator):
        return mask_tokens(tokens, mask_id, vocab_size, special_ids=(mask_id,),
                           generator=generator)

    def special_random(tokens, mask_id, vocab_size, special_ids, generator):
        inputs, targets = solution(tokens, mask_id, vocab_size, special_ids, generator)
        swapped = (targets != -100) & (inputs != mask_id) & (inputs != tokens)
        return inputs.masked_fill(swapped, 0), targets

    rejects(check_mask_tokens, pads_too, "were picked for prediction", "leave out every id")
    rejects(check_mask_tokens, special_random, "random replacements drew the special ids [0]")


def test_rejects_wrong_rates():
    def of_all_positions(tokens, mask_id, vocab_size, special_ids, generator):
        return mask_tokens(tokens, mask_id, vocab_size, special_ids=special_ids, p=0.11,
                           generator=generator)

    rejects(check_mask_tokens, of_all_positions, "of the real tokens were picked",
            "expected about 15.0%")


def test_rejects_global_randomness_mutation_and_wrong_types():
    def global_rng(tokens, mask_id, vocab_size, special_ids, generator):
        return mask_tokens(tokens, mask_id, vocab_size, special_ids=special_ids)

    def in_place(tokens, *args):
        inputs, targets = solution(tokens, *args)
        tokens.copy_(inputs)
        return inputs, targets

    def floats(tokens, *args):
        inputs, targets = solution(tokens, *args)
        return inputs.float(), targets

    def one_output(tokens, *args):
        return solution(tokens, *args)[0]

    rejects(check_mask_tokens, global_rng, "draw every random number from the `generator`")
    rejects(check_mask_tokens, in_place, "changed its input `tokens` in place")
    rejects(check_mask_tokens, floats, "inputs has dtype torch.float32")
    rejects(check_mask_tokens, one_output, "return a pair (inputs, targets)")


# -- the classes of mistake the issue lists, each on 8 seeds -------------------------------
def variant(threshold=False, low=None, top=True, from_batch=False, whole_vocab=False,
            picks="token", fate="token", rng="generator", batch_ids=False, batch_range=False,
            not_own=False):
    """The solution with one slip. threshold: real = tokens >= len(special_ids); low: draw
    replacements from randint(low, ...) (as if the specials were the lowest ids); top=False:
    the top id is never drawn; from_batch: replacements are tokens of the batch; whole_vocab:
    replacements may be special; picks/fate: "token", "row" (one draw per row), "position"
    (one per position, shared by the rows) or "count" (exactly 15% of each row); batch_ids:
    replacements uniform over the distinct ids the batch holds; batch_range: over the
    non-special ids up to the batch's largest; not_own: drawn again until unlike the token; rng:
    "generator", "global" (torch's), "numpy", "reseeded" (generator.manual_seed(0)) or
    "own" (a new generator seeded from generator.initial_seed())."""
    def fn(tokens, mask_id, vocab_size, special_ids, generator):
        if rng == "reseeded":
            generator.manual_seed(0)
        g = {"generator": generator, "reseeded": generator, "global": None, "numpy": None,
             "own": torch.Generator().manual_seed(generator.initial_seed())}.get(rng)

        def rand(shape):
            if rng == "numpy":
                return torch.from_numpy(np.random.rand(*shape)).float()
            return torch.rand(shape, generator=g)

        special = torch.tensor(sorted(set(special_ids) | {mask_id}))
        real = tokens >= len(special_ids) if threshold else ~torch.isin(tokens, special)
        batch, t = tokens.shape
        if picks == "count":
            order = rand((batch, t)).masked_fill(~real, 2.0).argsort(1)
            n = (0.15 * real.sum(1)).round().long()
            picked = torch.zeros_like(real)
            for b in range(batch):
                picked[b, order[b, :n[b]]] = True
        else:
            shape = {"token": (batch, t), "row": (batch, 1), "position": (1, t)}[picks]
            picked = real & (rand(shape) < 0.15)
        shape = {"token": (batch, t), "row": (batch, 1), "position": (1, t)}[fate]
        action = rand(shape).expand(batch, t)
        to_mask = picked & (action < 0.8)
        to_random = picked & (action >= 0.8) & (action < 0.9)
        if from_batch:
            pool = tokens[real]
            r = pool[torch.randint(len(pool), tokens.shape, generator=g)]
        elif whole_vocab:
            r = torch.randint(vocab_size, tokens.shape, generator=g)
        elif batch_ids or batch_range:
            ids = (torch.unique(tokens[real]) if batch_ids else
                   torch.arange(int(tokens[real].max()) + 1))
            ids = ids[~torch.isin(ids, special)]
            r = ids[torch.randint(len(ids), tokens.shape, generator=g)]
        elif low is not None:
            r = torch.randint(low(special_ids), vocab_size - (0 if top else 1), tokens.shape,
                              generator=g)
        else:
            allowed = torch.ones(vocab_size, dtype=torch.bool)
            allowed[special] = False
            choices = allowed.nonzero()[:, 0]
            if not top:
                choices = choices[:-1]
            r = choices[torch.randint(len(choices), tokens.shape, generator=g)]
            while not_own and len(choices) > 1 and bool((same := r == tokens).any()):
                r[same] = choices[torch.randint(len(choices), (int(same.sum()),), generator=g)]
        inputs = tokens.clone()
        inputs[to_mask] = mask_id
        inputs[to_random] = r[to_random]
        return inputs, torch.where(picked, tokens, torch.full_like(tokens, -100))
    return fn


MISTAKES = {
    "specials by threshold": (variant(threshold=True), "not 0..4: test membership"),
    "replacements from len(special_ids) up": (variant(low=len), "drew the special ids"),
    "top id never drawn": (variant(top=False), "the top id"),
    "top id never drawn, randint": (variant(low=lambda s: 0, top=False), "drew the special ids"),
    "replacements from the batch": (variant(from_batch=True), "follow the batch"),
    "replacements may be special": (variant(whole_vocab=True), "drew the special ids"),
    "torch's global generator": (variant(rng="global"), "seeded alike gave different"),
    "numpy's global generator": (variant(rng="numpy"), "seeded alike gave different"),
    "generator reseeded": (variant(rng="reseeded"), "gave the same masking"),
    "a generator of one's own": (variant(rng="own"), "two calls in a row"),
    "a fixed count per row": (variant(picks="count"), "far more even"),
    "one pick draw per row": (variant(picks="row"), "the picks per row vary far more"),
    "one pick draw per position": (variant(picks="position"),
                                   "the picks per position vary far more"),
    "one fate per row": (variant(fate="row"), "fate (mask, random, keep) on its own draw, of "
                         "shape (batch, t), not one draw per row"),
    "one fate per position": (variant(fate="position"), "not one draw per position"),
    "replacements uniform over the batch's ids": (variant(batch_ids=True),
                                                  "none of them occurs in the batch"),
    "replacements up to the batch's largest id": (variant(batch_range=True),
                                                  "none of them occurs in the batch"),
    "replacements never the token's own id": (variant(not_own=True),
                                              "do not draw again when it comes up"),
}


@pytest.mark.parametrize("name", MISTAKES)
def test_rejects_each_class_of_mistake_on_every_seed(name):
    fn, fragment = MISTAKES[name]
    rejects(check_mask_tokens, fn, fragment, seeds=range(8))
