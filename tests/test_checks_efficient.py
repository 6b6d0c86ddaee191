"""check_online_softmax_update (chapter 14) accepts the block update and names the usual slips:
no rescaling of ℓ or acc, no maximum subtracted, NaN for a query that has seen nothing yet, acc
normalized too early, a wrong maximum, state not carried between calls."""

import math

import pytest
import torch
from helpers import rejects

from minformer.attention import online_softmax_update
from minformer.checks import CheckFailed, check_online_softmax_update


def test_accepts_the_update(capsys):
    for seed in (0, 1, 2):
        check_online_softmax_update(online_softmax_update, seed=seed)
    assert capsys.readouterr().out.count("✓ online softmax update: 16 cases passed") == 3


def test_a_stub_is_reported_not_raised(capsys):
    def stub(m, ell, acc, S, V_block):
        raise NotImplementedError

    check_online_softmax_update(stub)
    assert "not written yet: fill in stub" in capsys.readouterr().out


def test_rejects_an_update_that_does_not_rescale_the_old_sums():
    def no_rescale(m, ell, acc, S, V_block):
        m_new = torch.maximum(m, S.amax(-1, keepdim=True))
        shift = m_new.masked_fill(m_new == -math.inf, 0.0)
        P = torch.exp(S - shift)
        return m_new, ell + P.sum(-1, keepdim=True), acc + P @ V_block

    rejects(check_online_softmax_update, no_rescale, "rescale it by exp(m - m')")


def test_rejects_an_update_that_rescales_ell_but_not_acc():
    def half(m, ell, acc, S, V_block):
        m_new, ell_new, _ = online_softmax_update(m, ell, acc, S, V_block)
        P = torch.exp(S - m_new.masked_fill(m_new == -math.inf, 0.0))
        return m_new, ell_new, acc + P @ V_block

    rejects(check_online_softmax_update, half, "rescale the old acc")


def test_rejects_nan_for_a_query_that_has_seen_nothing():
    def naive_shift(m, ell, acc, S, V_block):
        m_new = torch.maximum(m, S.amax(-1, keepdim=True))
        P, alpha = torch.exp(S - m_new), torch.exp(m - m_new)
        return m_new, alpha * ell + P.sum(-1, keepdim=True), alpha * acc + P @ V_block

    rejects(check_online_softmax_update, naive_shift, "NaN", "shift by 0 there")


def test_rejects_exp_of_raw_scores():
    def raw(m, ell, acc, S, V_block):
        P = torch.exp(S)
        return (torch.maximum(m, S.amax(-1, keepdim=True)), ell + P.sum(-1, keepdim=True),
                acc + P @ V_block)

    rejects(check_online_softmax_update, raw, "first block")


def test_rejects_a_normalized_acc_and_a_wrong_maximum():
    def normalized(m, ell, acc, S, V_block):
        m_new, ell_new, acc_new = online_softmax_update(m, ell, acc, S, V_block)
        return m_new, ell_new, acc_new / ell_new.clamp_min(1e-300)

    def block_max_only(m, ell, acc, S, V_block):
        _, ell_new, acc_new = online_softmax_update(m, ell, acc, S, V_block)
        return S.amax(-1, keepdim=True), ell_new, acc_new

    rejects(check_online_softmax_update, normalized, "already divided by ℓ")
    rejects(check_online_softmax_update, block_max_only, "the new m is wrong")


def test_rejects_a_squeezed_state_and_a_wrong_return():
    def squeezed(m, ell, acc, S, V_block):
        m_new, ell_new, acc_new = online_softmax_update(m, ell, acc, S, V_block)
        return m_new[..., 0], ell_new[..., 0], acc_new

    rejects(check_online_softmax_update, squeezed, "keepdim=True")
    rejects(check_online_softmax_update, lambda m, ell, acc, S, V: acc, "return the three")


# -- correct answers written differently, and the classes of mistake the issue lists --------
def with_nan_to_num(m, ell, acc, S, V_block):
    """Correct: the naive shift, then NaN (from -inf - -inf) turned into 0."""
    m_new = torch.maximum(m, S.amax(-1, keepdim=True))
    alpha = torch.nan_to_num(torch.exp(m - m_new), nan=0.0)
    P = torch.nan_to_num(torch.exp(S - m_new), nan=0.0)
    return m_new, alpha * ell + P.sum(-1, keepdim=True), alpha * acc + P @ V_block


def with_where(m, ell, acc, S, V_block):
    """Correct: masked entries zeroed with torch.where, the shift taken finite."""
    m_new = torch.maximum(m, S.amax(-1, keepdim=True))
    safe = torch.where(torch.isfinite(m_new), m_new, torch.zeros_like(m_new))
    alpha = torch.where(torch.isfinite(m), torch.exp(m - safe), torch.zeros_like(m))
    P = torch.where(torch.isfinite(S), torch.exp(S - safe), torch.zeros_like(S))
    return m_new, alpha * ell + P.sum(-1, keepdim=True), alpha * acc + P @ V_block


def test_accepts_correct_answers_written_differently(capsys):
    for fn in (with_nan_to_num, with_where):
        for seed in range(30):
            check_online_softmax_update(fn, seed=seed)
    assert capsys.readouterr().out.count("✓ online softmax update: 16 cases passed") == 60


def first_block_special_cased(m, ell, acc, S, V_block):
    """Wrong: handles 'nothing seen yet' for the whole tensor at once, so a row that has seen
    nothing beside rows that have gets NaN."""
    if torch.isinf(m).all():
        shift = S.amax(-1, keepdim=True).clamp_min(-1e30)
        P = torch.exp(S - shift)
        return S.amax(-1, keepdim=True), P.sum(-1, keepdim=True), P @ V_block
    m_new = torch.maximum(m, S.amax(-1, keepdim=True))
    P, alpha = torch.exp(S - m_new), torch.exp(m - m_new)
    return m_new, alpha * ell + P.sum(-1, keepdim=True), alpha * acc + P @ V_block


def through_float32(m, ell, acc, S, V_block):
    """Wrong: computes in float32, returns float64."""
    out = online_softmax_update(*(x.float() for x in (m, ell, acc, S, V_block)))
    return tuple(x.to(S.dtype) for x in out)


def returns_float32(m, ell, acc, S, V_block):
    return tuple(x.float() for x in online_softmax_update(m, ell, acc, S, V_block))


def returns_float64(m, ell, acc, S, V_block):
    return tuple(x.double() for x in online_softmax_update(m, ell, acc, S, V_block))


def clamped_scores(m, ell, acc, S, V_block):
    """Wrong: replaces -inf by a large negative number, so a query that sees no key anywhere
    gets a finite maximum and weights on masked keys."""
    return online_softmax_update(m, ell, acc, S.clamp_min(-1e9), V_block)


def test_rejects_each_class_of_mistake_on_every_seed():
    for fn, fragment in ((first_block_special_cased, "NaN"),
                         (through_float32, "float32's precision"),
                         (returns_float32, "has dtype torch.float32, but the inputs are "
                                           "torch.float64"),
                         (returns_float64, "has dtype torch.float64, but the inputs are "
                                           "torch.float32"),
                         (clamped_scores, "wrong")):
        for seed in range(5):
            with pytest.raises(CheckFailed) as err:
                check_online_softmax_update(fn, seed=seed)
            assert fragment in str(err.value), (fn.__name__, str(err.value))
