"""What every checker does, whatever its topic: an unfilled stub gets one friendly line (no
error), a correct answer passes on every seed with the same success line, an answer that changes
its inputs in place is rejected, and an answer hard-coded from one call fails on the next,
naming the seed that reproduces it."""

from itertools import pairwise

import numpy as np
import pytest
import torch
from helpers import recorded, rejects

from minformer import checks
from minformer.attention import (
    dot_product_attention,
    online_softmax_update,
    scaled_dot_product_attention,
    softmax,
)
from minformer.checks.blocks import _ln, _placed
from minformer.checks.embeddings import (
    analogy_reference,
    negative_sampling_loss_reference,
    skipgram_pairs_reference,
)
from minformer.checks.lookup import _nadaraya_watson
from minformer.checks.multihead import _merge, _reference, _split
from minformer.checks.qkv import _qkv_attention
from minformer.checks.sequence import bigram_perplexity_reference
from minformer.checks.tokenization import _reference_apply, _reference_counts
from minformer.masks import causal_mask
from minformer.positional import sinusoidal_encoding


def cached_step(q, k_new, v_new, K_cache, V_cache):
    K, V = torch.cat([K_cache, k_new], dim=-2), torch.cat([V_cache, v_new], dim=-2)
    return scaled_dot_product_attention(q, K, V), K, V


def beam_step(scores, logprobs, k):
    V = logprobs.shape[-1]
    new_scores, flat = (scores[:, None] + logprobs).reshape(-1).topk(k)
    return flat // V, flat % V, new_scores


def bptt(H, W_h, g_T):
    G = [g_T]
    for t in range(H.shape[0] - 1, 0, -1):
        G.append((G[-1] * (1 - H[t] ** 2)) @ W_h)
    return torch.stack(G[::-1])


def apply_by_rank(symbols, merges):
    rank = {}
    for r, pair in enumerate(merges):
        rank.setdefault(tuple(pair), r)
    symbols = list(symbols)
    while len(symbols) > 1:
        best = min(pairwise(symbols), key=lambda p: rank.get(p, len(merges)))
        if best not in rank:
            break
        symbols = _reference_apply(symbols, [best])
    return symbols


def mha(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask=None):
    return _reference(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask)


# checker name → (checker, correct answers (one per function the checker takes), title)
SOLUTIONS = {
    "softmax": (checks.check_softmax, (lambda z: softmax(z),), "softmax"),
    "attention": (checks.check_attention, (dot_product_attention,), "dot-product attention"),
    "nadaraya_watson": (checks.check_nadaraya_watson, (_nadaraya_watson,),
                        "Nadaraya–Watson regression"),
    "qkv": (checks.check_qkv_attention, (_qkv_attention,), "QKV attention"),
    "scaled": (checks.check_scaled_attention,
               (lambda Q, K, V: scaled_dot_product_attention(Q, K, V),),
               "scaled dot-product attention"),
    "causal": (checks.check_causal_mask, (causal_mask,), "causal mask"),
    "masked": (checks.check_masked_attention, (scaled_dot_product_attention,),
               "masked attention"),
    "split_heads": (checks.check_split_heads, (_split, _merge), "split and merge heads"),
    "mha": (checks.check_multi_head_attention, (mha,), "multi-head attention"),
    "layer_norm": (checks.check_layer_norm, (_ln,), "layer norm"),
    "encoder_layer": (checks.check_encoder_layer, (_placed,), "encoder layer"),
    "sinusoidal": (checks.check_sinusoidal,
                   (lambda n, d: sinusoidal_encoding(n, d, dtype=torch.float64),),
                   "sinusoidal encoding"),
    "bigram": (checks.check_bigram_perplexity, (bigram_perplexity_reference,),
               "bigram perplexity"),
    "bptt": (checks.check_bptt, (bptt,), "backpropagation through time"),
    "count_pairs": (checks.check_count_pairs, (_reference_counts,), "count_pairs"),
    "apply_merges": (checks.check_apply_merges, (apply_by_rank,), "apply_merges"),
    "skipgram": (checks.check_skipgram_pairs, (skipgram_pairs_reference,), "skipgram_pairs"),
    "ns_loss": (checks.check_negative_sampling_loss, (negative_sampling_loss_reference,),
                "negative_sampling_loss"),
    "analogy": (checks.check_analogy, (analogy_reference,), "analogy"),
    "online_softmax": (checks.check_online_softmax_update, (online_softmax_update,),
                       "online softmax update"),
    "cached_step": (checks.check_cached_attention_step, (cached_step,),
                    "attention step with a KV cache"),
    "beam_step": (checks.check_beam_step, (beam_step,), "one step of beam search"),
}
NAMES = sorted(SOLUTIONS)


def test_every_public_checker_is_covered():
    # check_mask_tokens (chapter 12) and check_clipped_precision (chapter 13) have the same tests
    # in tests/test_checks_architectures.py and tests/test_checks_translation.py
    public = {n for n in checks.__all__ if n.startswith("check_")} - {"check_mask_tokens",
                                                                     "check_clipped_precision"}
    assert public == {SOLUTIONS[k][0].__name__ for k in SOLUTIONS}


@pytest.mark.parametrize("name", NAMES)
def test_stub_gets_one_friendly_line_and_no_error(name, capsys):
    check, answers, _ = SOLUTIONS[name]

    def my_function(*args):
        raise NotImplementedError("your code here")

    fns = (my_function, *answers[1:])
    assert check(*fns) is None  # no exception: "Run all" goes on
    out = capsys.readouterr().out
    assert out == "… not written yet: fill in my_function above, then run this cell again\n"


def test_stub_names_the_function_that_is_not_written(capsys):
    def my_merge_heads(H):
        raise NotImplementedError

    checks.check_split_heads(_split, my_merge_heads)
    assert "fill in my_merge_heads above" in capsys.readouterr().out


def test_a_library_not_implemented_error_is_a_failure_not_a_stub(capsys):
    """A NotImplementedError raised by a library the reader's function calls (here a PyTorch
    operation, and a function of another module) is the reader's error to see, not the line
    of an unfilled stub."""
    def calls_a_library(X, n_heads):
        return torch.nn.Module()(X)  # Module.forward: NotImplementedError inside torch

    with pytest.raises(checks.CheckFailed, match="raised NotImplementedError"):
        checks.check_split_heads(calls_a_library, _merge)
    assert "not written" not in capsys.readouterr().out


def test_a_stub_helper_of_the_reader_is_still_a_stub(capsys):
    def helper(H):
        raise NotImplementedError("your code here")  # as the book's stubs raise

    def my_split_heads(H, n_heads):
        return helper(H)

    checks.check_split_heads(my_split_heads, _merge)
    assert "not written yet: fill in helper above" in capsys.readouterr().out


@pytest.mark.parametrize("message", ["", "odd d_model not supported"])
def test_the_readers_own_not_implemented_error_is_a_failure_not_a_stub(message, capsys):
    """Only the stub's NotImplementedError reads "not written yet": one the reader raises in a
    helper of theirs (bare or not), or with a message of their own, is their error to see."""
    def helper(H):
        if message:
            raise NotImplementedError(message)
        raise NotImplementedError

    def my_split_heads(H, n_heads):
        return helper(H)

    def my_merge_heads(H):
        raise NotImplementedError(message or "unsupported")

    for fns in ((my_split_heads, _merge), (_split, my_merge_heads)):
        with pytest.raises(checks.CheckFailed, match="raised NotImplementedError"):
            checks.check_split_heads(*fns)
    assert "not written" not in capsys.readouterr().out


@pytest.mark.parametrize("name", NAMES)
def test_correct_answers_pass_on_every_seed_with_the_same_line(name, capsys):
    check, answers, title = SOLUTIONS[name]
    for seed in range(12):
        check(*answers, seed=seed)
    check(*answers)  # a fresh seed
    lines = capsys.readouterr().out.splitlines()
    assert len(set(lines)) == 1 and lines[0].startswith(f"✓ {title}: "), lines


def _mutating(fn):
    """fn, but afterwards it changes the first argument that can change."""
    def wrong(*args):
        out = fn(*args)
        for a in args:
            if isinstance(a, torch.nn.Module):
                with torch.no_grad():
                    a.norm1.weight.add_(1.0)
                return out
            if isinstance(a, torch.Tensor) and a.dtype != torch.bool:
                with torch.no_grad():
                    a.mul_(2.0).add_(1.0)
                return out
            if isinstance(a, np.ndarray):
                a *= 2.0
                return out
            if isinstance(a, (list, dict)) and a:
                a.clear()
                return out
        return out
    return wrong


@pytest.mark.parametrize("name", [n for n in NAMES if n not in ("causal", "sinusoidal")])
def test_changing_an_input_in_place_is_rejected(name):
    """(The causal mask and the encoding take only ints, which cannot change.)"""
    check, answers, _ = SOLUTIONS[name]
    with pytest.raises(checks.CheckFailed, match="in place") as err:
        check(_mutating(answers[0]), *answers[1:])
    assert "changed its input" in str(err.value)


@pytest.mark.parametrize("name", NAMES)
def test_a_hard_coded_answer_fails_and_the_seed_reproduces_it(name, capsys):
    check, answers, _ = SOLUTIONS[name]
    record, replay = recorded(answers[0])
    check(record, *answers[1:], seed=1)
    with pytest.raises(checks.CheckFailed) as err:
        check(replay, *answers[1:], seed=2)
    message = str(err.value)
    if name == "ns_loss":  # the replayed loss is not a function of this call's inputs
        assert "through autograd" in message
        return
    assert "seed 2" in message and f"{check.__name__}(" in message and "seed=2)" in message


def test_random_cases_differ_between_calls_and_repeat_with_their_seed():
    seen = []
    check, answers, _ = SOLUTIONS["softmax"]

    def spy(z):
        seen.append(z.shape)
        return softmax(z)

    check(spy, seed=3)
    check(spy, seed=3)
    check(spy, seed=4)
    n = len(seen) // 3
    assert seen[:n] == seen[n:2 * n] != seen[2 * n:]


def test_a_fixed_case_failure_names_no_seed():
    rejects(checks.check_softmax, lambda z: np.exp(z), "divide by the sum")
    with pytest.raises(checks.CheckFailed) as err:
        checks.check_softmax(lambda z: np.exp(z))
    assert "seed" not in str(err.value)


def test_the_loss_gradient_is_compared_not_just_requires_grad():
    def fake(v, u_o, u_neg):  # the right value, but gradients only through a constant
        value = negative_sampling_loss_reference(v.detach(), u_o.detach(), u_neg.detach())
        return value + 0.0 * v.sum()
    rejects(checks.check_negative_sampling_loss, fake, "gradient with respect to v_c")


def test_count_pairs_accepts_numpy_integer_counts():
    checks.check_count_pairs(lambda wf: {p: np.int64(c) for p, c in _reference_counts(wf).items()})


def test_apply_merges_random_merges_agree_with_rank_order():
    """The random merges are learned-order merges: replaying them in order and by rank agree."""
    for seed in range(30):
        checks.check_apply_merges(apply_by_rank, seed=seed)


def test_success_lines_are_deterministic_text(capsys):
    for name in NAMES:
        check, answers, _ = SOLUTIONS[name]
        check(*answers)
    first = capsys.readouterr().out
    for name in NAMES:
        check, answers, _ = SOLUTIONS[name]
        check(*answers)
    assert capsys.readouterr().out == first
    assert "seed" not in first


