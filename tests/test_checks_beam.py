"""check_beam_step (chapter 13) accepts one step of beam search written in any correct way, and
rejects each typical slip with the message that names it, whatever the seed."""

import pytest
import torch
from helpers import recorded, rejects

from minformer.checks import CheckFailed, check_beam_step

SEEDS = range(12)  # a wrong answer must be rejected on each of these, not on a lucky one


# -- correct answers, written in different ways ------------------------------------------------
def solution(scores, logprobs, k):
    V = logprobs.shape[-1]
    new_scores, flat = (scores[:, None] + logprobs).reshape(-1).topk(k)
    return flat // V, flat % V, new_scores


def per_row_then_merge(scores, logprobs, k):
    """Each prefix's k best tokens first, then the k best of those k·k: the same survivors."""
    top, tok = (scores[:, None] + logprobs).topk(min(k, logprobs.shape[-1]), dim=-1)
    best, flat = top.reshape(-1).topk(k)
    beam = flat // top.shape[-1]
    return beam, tok.reshape(-1)[flat], best


def python_lists(scores, logprobs, k):
    cands = [(s + lp, b, t) for b, (s, row) in enumerate(zip(scores.tolist(), logprobs.tolist()))
             for t, lp in enumerate(row)]
    cands.sort(key=lambda c: -c[0])
    best = cands[:k]
    return ([b for _, b, _ in best], [t for _, _, t in best], [s for s, _, _ in best])


@pytest.mark.parametrize("fn", [solution, per_row_then_merge, python_lists])
def test_correct_answers_pass(fn, capsys):
    for seed in SEEDS:
        check_beam_step(fn, seed=seed)
    assert "✓ one step of beam search" in capsys.readouterr().out


# -- wrong answers -----------------------------------------------------------------------------
def greedy_each(scores, logprobs, k):
    best, tok = logprobs.max(-1)
    return torch.arange(k), tok, scores + best


def token_alone(scores, logprobs, k):
    V = logprobs.shape[-1]
    new, flat = logprobs.reshape(-1).topk(k)
    return flat // V, flat % V, scores[flat // V] + new


def swapped(scores, logprobs, k):
    V = logprobs.shape[-1]
    new, flat = (scores[:, None] + logprobs).reshape(-1).topk(k)
    return flat % V, flat // V, new


def by_k(scores, logprobs, k):
    new, flat = (scores[:, None] + logprobs).reshape(-1).topk(k)
    return flat // k, flat % k, new


def smallest(scores, logprobs, k):
    V = logprobs.shape[-1]
    cand = (scores[:, None] + logprobs).reshape(-1)
    new, flat = cand.nan_to_num(neginf=1e9).topk(k, largest=False)
    return flat // V, flat % V, cand[flat]


def token_score_only(scores, logprobs, k):
    beam, tok, _ = solution(scores, logprobs, k)
    return beam, tok, logprobs[beam, tok]


def probabilities(scores, logprobs, k):
    beam, tok, new = solution(scores, logprobs, k)
    return beam, tok, new.exp()


def renormalized(scores, logprobs, k):
    V = logprobs.shape[-1]
    cand = (scores[:, None] + logprobs).reshape(-1).log_softmax(-1)
    new, flat = cand.topk(k)
    return flat // V, flat % V, new


def unsorted(scores, logprobs, k):
    beam, tok, new = solution(scores, logprobs, k)
    order = torch.argsort(beam * logprobs.shape[-1] + tok)
    return beam[order], tok[order], new[order]


def minus_inf_as_zero(scores, logprobs, k):
    return solution(scores.nan_to_num(neginf=0.0), logprobs, k)


def true_division(scores, logprobs, k):
    V = logprobs.shape[-1]
    new, flat = (scores[:, None] + logprobs).reshape(-1).topk(k)
    return flat / V, flat % V, new


def no_return(scores, logprobs, k):
    solution(scores, logprobs, k)


def in_place(scores, logprobs, k):
    logprobs += scores[:, None]
    V = logprobs.shape[-1]
    new, flat = logprobs.reshape(-1).topk(k)
    return flat // V, flat % V, new


WRONG = [
    (greedy_each, "own best token"),
    (token_alone, "new token's log-probability alone"),
    (swapped, "the wrong way round"),
    (by_k, "by k"),
    (smallest, "k smallest"),
    (token_score_only, "only the new token's log P"),
    (probabilities, "probabilities"),
    (renormalized, "renormalized"),
    (unsorted, "wrong order"),
    (minus_inf_as_zero, "-inf"),
    (true_division, "floats"),
    (no_return, "return three tensors"),
    (in_place, "in place"),
]


@pytest.mark.parametrize("fn, fragment", WRONG, ids=[f.__name__ for f, _ in WRONG])
def test_each_mistake_is_rejected_on_every_seed_with_its_message(fn, fragment):
    rejects(check_beam_step, fn, fragment, seeds=SEEDS)


def test_a_recorded_answer_fails_on_another_seed():
    record, replay = recorded(solution)
    check_beam_step(record, seed=1)
    with pytest.raises(CheckFailed):
        check_beam_step(replay, seed=2)


def forgets_scores_in_a_chain():
    """Right on each single case, but in the chain it ranks by the last step alone."""
    calls = {"n": 0}

    def step(scores, logprobs, k):
        calls["n"] += 1
        if calls["n"] <= 7:  # the seven single cases come first
            return solution(scores, logprobs, k)
        return solution(torch.where(scores.isinf(), scores, 0.0), logprobs, k)

    return step


def test_a_step_that_drops_the_scores_in_the_chain_fails_on_every_seed():
    for seed in SEEDS:
        with pytest.raises(CheckFailed, match="most probable output"):
            check_beam_step(forgets_scores_in_a_chain(), seed=seed)


def test_the_toy_model_is_one_where_greedy_search_fails():
    from minformer.checks.beam import _best_output, _toy_model

    for seed in SEEDS:
        table = _toy_model(seed)
        greedy = [int(table[0].argmax())]
        for _ in range(2):
            greedy.append(int(table[greedy[-1]].argmax()))
        assert greedy != _best_output(table)


def test_the_stub_prints_not_written(capsys):
    def stub(scores, logprobs, k):
        raise NotImplementedError("your code here")

    check_beam_step(stub, seed=0)
    assert "not written yet" in capsys.readouterr().out
