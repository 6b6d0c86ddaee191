"""check_online_softmax_update (chapter 14) accepts the block update and names the usual slips:
no rescaling of ℓ or acc, no maximum subtracted, NaN for a query that has seen nothing yet, acc
normalized too early, a wrong maximum, state not carried between calls."""

import math

import torch
import torch.nn.functional as F
from helpers import rejects

from minformer.attention import online_softmax_update
from minformer.checks import check_online_softmax_update


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


def test_rejects_exp_relative_to_the_old_maximum():
    """exp(S - m) with the old m, rescaled afterwards: right in exact arithmetic, but a block
    that scores far above the running maximum overflows (inf · 0 = NaN)."""
    def old_max(m, ell, acc, S, V_block):
        m_new = torch.maximum(m, S.amax(-1, keepdim=True))
        base = torch.where(m == -math.inf, m_new, m)
        base = base.masked_fill(base == -math.inf, 0.0)
        P = torch.exp(S - base)  # overflows when S is far above the old m
        shift = m_new.masked_fill(m_new == -math.inf, 0.0)
        scale, alpha = torch.exp(base - shift), torch.exp(m - shift)
        return (m_new, alpha * ell + P.sum(-1, keepdim=True) * scale,
                alpha * acc + (P @ V_block) * scale)

    rejects(check_online_softmax_update, old_max, "far above the running maximum",
            "nor of the scores minus the old maximum m", seeds=range(4))


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
        rejects(check_online_softmax_update, fn, fragment, seeds=range(5))


# -- check_cached_attention_step -------------------------------------------------------------
from minformer.attention import scaled_dot_product_attention  # noqa: E402
from minformer.checks import check_cached_attention_step  # noqa: E402


def cached_step(q, k_new, v_new, K_cache, V_cache):
    K = torch.cat([K_cache, k_new], dim=-2)
    V = torch.cat([V_cache, v_new], dim=-2)
    return scaled_dot_product_attention(q, K, V), K, V


def cached_step_with_sdpa(q, k_new, v_new, K_cache, V_cache):
    """Correct, written with PyTorch's fused attention."""
    K, V = torch.cat((K_cache, k_new), -2), torch.cat((V_cache, v_new), -2)
    return F.scaled_dot_product_attention(q, K, V), K, V


def test_cached_step_accepts_correct_answers(capsys):
    for fn in (cached_step, cached_step_with_sdpa):
        for seed in range(10):
            check_cached_attention_step(fn, seed=seed)
    assert capsys.readouterr().out.count(
        "✓ attention step with a KV cache: 6 cases passed") == 20


def test_cached_step_rejects_the_usual_slips():
    def cache_only(q, k_new, v_new, K_cache, V_cache):
        y = (scaled_dot_product_attention(q, K_cache, V_cache) if K_cache.shape[-2]
             else v_new)
        return y, torch.cat([K_cache, k_new], -2), torch.cat([V_cache, v_new], -2)

    def wrong_axis(q, k_new, v_new, K_cache, V_cache):
        return (cached_step(q, k_new, v_new, K_cache, V_cache)[0],
                torch.cat([K_cache, k_new], -1), torch.cat([V_cache, v_new], -1))

    def prepended(q, k_new, v_new, K_cache, V_cache):
        y = cached_step(q, k_new, v_new, K_cache, V_cache)[0]
        return y, torch.cat([k_new, K_cache], -2), torch.cat([v_new, V_cache], -2)

    def unscaled(q, k_new, v_new, K_cache, V_cache):
        K, V = torch.cat([K_cache, k_new], -2), torch.cat([V_cache, v_new], -2)
        return torch.softmax(q @ K.mT, -1) @ V, K, V

    def old_cache(q, k_new, v_new, K_cache, V_cache):
        return cached_step(q, k_new, v_new, K_cache, V_cache)[0], K_cache, V_cache

    def in_place(q, k_new, v_new, K_cache, V_cache):
        K_cache.mul_(1.0)
        V_cache.add_(0.0)
        q.mul_(2.0)
        return cached_step(q, k_new, v_new, K_cache, V_cache)

    rejects(check_cached_attention_step, cache_only, "attends to the cached keys only")
    rejects(check_cached_attention_step, wrong_axis, "the time axis: torch.cat([K_cache, k_new], dim=-2)")
    rejects(check_cached_attention_step, prepended, "the new key comes first")
    rejects(check_cached_attention_step, unscaled, "divide the scores by √d_k")
    rejects(check_cached_attention_step, old_cache, "expected (2, 3, 1, 4)")
    rejects(check_cached_attention_step, in_place, "changed its input")
