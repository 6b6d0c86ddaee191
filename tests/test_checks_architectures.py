"""check_mask_tokens (chapter 12) accepts BERT's rule and names the usual slips."""

import torch
from helpers import rejects

from minformer.checks import check_mask_tokens
from minformer.objectives import mask_tokens


def solution(tokens, mask_id, vocab_size, special_ids, generator):
    return mask_tokens(tokens, mask_id, vocab_size, special_ids=special_ids, generator=generator)


def test_accepts_the_rule_on_fixed_and_random_cases(capsys):
    for seed in (0, 1, 2):
        check_mask_tokens(solution, seed=seed)
    assert capsys.readouterr().out.count("✓ BERT masking: 2 cases passed") == 3


def test_a_stub_is_reported_not_raised(capsys):
    def stub(tokens, mask_id, vocab_size, special_ids, generator):
        raise NotImplementedError("your code here")

    check_mask_tokens(stub)
    assert "not written yet: fill in stub" in capsys.readouterr().out


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

    rejects(check_mask_tokens, pads_too, "padding tokens were picked")
    rejects(check_mask_tokens, special_random, "a random replacement was a special token")


def test_rejects_wrong_rates():
    def of_all_positions(tokens, mask_id, vocab_size, special_ids, generator):
        return mask_tokens(tokens, mask_id, vocab_size, special_ids=special_ids, p=0.11,
                           generator=generator)

    rejects(check_mask_tokens, of_all_positions, "of the real tokens were picked",
            "expected about 15%")


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
