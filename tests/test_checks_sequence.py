"""The chapter 9 checkers accept correct answers and name typical mistakes."""

import math
from collections import Counter

import numpy as np
import torch
from helpers import rejects

from minformer.checks import check_bigram_perplexity, check_bptt
from minformer.checks.sequence import bigram_perplexity_reference

# -- check_bigram_perplexity ---------------------------------------------------------------

def make_bigram(k_used=None, log=math.log, exp=math.exp, n_terms=None, denom="kV",
                vocab="train", pairs_of=lambda w: zip(w, w[1:]), ctx="pairs", div_by_next=False):
    """A bigram perplexity written the way a reader would, with one knob per mistake."""
    def fn(train, test, k):
        k = k if k_used is None else k_used
        pairs = Counter(pairs_of(train))
        context = Counter(train[:-1]) if ctx == "pairs" else Counter(train)
        V = len(set(train)) if vocab == "train" else len(set(test))
        total = 0.0
        for v, w in zip(test, test[1:]):
            c = Counter(train)[w] if div_by_next else context[v]
            den = {"kV": c + k * V, "none": c, "k": c + k}[denom]
            total -= log((pairs[(v, w)] + k) / den)
        n = len(test) - 1 if n_terms is None else n_terms(test)
        return exp(total / n)
    return fn


def test_bigram_accepts_correct(capsys):
    check_bigram_perplexity(make_bigram())
    check_bigram_perplexity(bigram_perplexity_reference)
    # c(v) as the plain unigram count is equally right on the checker's cases
    check_bigram_perplexity(make_bigram(ctx="unigram"))
    assert "✓ bigram perplexity: 7 cases passed" in capsys.readouterr().out


def test_bigram_accepts_base_2_done_consistently():
    check_bigram_perplexity(make_bigram(log=math.log2, exp=lambda x: 2.0 ** x))


def test_bigram_accepts_numpy_and_torch_scalars():
    good = make_bigram()
    check_bigram_perplexity(lambda tr, te, k: np.float64(good(tr, te, k)))
    check_bigram_perplexity(lambda tr, te, k: torch.tensor(good(tr, te, k)))


def test_bigram_rejects_missing_smoothing():
    def no_smoothing(train, test, k):
        with np.errstate(divide="ignore"):
            return make_bigram(k_used=0.0, log=lambda p: float(np.log(p)))(train, test, k)
    rejects(check_bigram_perplexity, no_smoothing, "k is not used", "Add k")


def test_bigram_rejects_infinite_perplexity():
    def inf_on_unseen(train, test, k):
        good = make_bigram()(train, test, k)
        return math.inf if any(p not in set(zip(train, train[1:]))
                               for p in zip(test, test[1:])) else good
    rejects(check_bigram_perplexity, inf_on_unseen, "probability 0", "Add k")


def test_bigram_rejects_crash_on_log_zero():
    rejects(check_bigram_perplexity, lambda tr, te, k: math.log(0.0), "raised ValueError",
            "add k")


def test_bigram_rejects_mixed_log_bases():
    rejects(check_bigram_perplexity, make_bigram(exp=lambda x: 2.0 ** x), "log bases are mixed")
    rejects(check_bigram_perplexity, make_bigram(log=math.log2), "log bases are mixed")


def test_bigram_rejects_cross_entropy_and_inverse():
    good = make_bigram()
    rejects(check_bigram_perplexity, lambda tr, te, k: math.log(good(tr, te, k)),
            "cross-entropy")
    rejects(check_bigram_perplexity, lambda tr, te, k: 1 / good(tr, te, k), "inverse")


def test_bigram_rejects_off_by_one_average():
    rejects(check_bigram_perplexity, make_bigram(n_terms=len), "n - 1")


def test_bigram_rejects_unnormalized_denominators():
    rejects(check_bigram_perplexity, make_bigram(denom="none"), "not normalized", "k·V")
    rejects(check_bigram_perplexity, make_bigram(denom="k"), "adds k once")


def test_bigram_rejects_vocabulary_from_test():
    rejects(check_bigram_perplexity, make_bigram(vocab="test"), "distinct words in the training")


def test_bigram_rejects_reversed_condition():
    rejects(check_bigram_perplexity, make_bigram(div_by_next=True), "previous word given the next")


def test_bigram_rejects_wrong_pair_counting():
    # off by one in counting: pairs two apart instead of adjacent
    rejects(check_bigram_perplexity, make_bigram(pairs_of=lambda w: zip(w, w[2:])),
            "adjacent pairs")


def test_bigram_rejects_non_number_and_stub():
    rejects(check_bigram_perplexity, lambda tr, te, k: [1.0, 2.0], "return one number")
    rejects(check_bigram_perplexity, lambda tr, te, k: None, "return one number")



# -- check_bptt ----------------------------------------------------------------------------

def make_bptt(deriv=lambda H, t: 1 - H[t] ** 2, W=lambda W_h: W_h, flip=False, skip=False):
    def fn(H, W_h, g_T):
        T = H.shape[0]
        G = torch.zeros_like(H)
        G[-1] = g_T
        for t in range(T - 1, 0, -1):
            G[t - 1] = (G[t] * deriv(H, t)) @ W(W_h) + (G[t] if skip else 0)
        return G.flip(0) if flip else G
    return fn


def test_bptt_accepts_correct(capsys):
    check_bptt(make_bptt())
    assert "✓ backpropagation through time: 7 cases passed" in capsys.readouterr().out


def test_bptt_accepts_numpy():
    def numpy_version(H, W_h, g_T):
        H, W_h = H.numpy(), W_h.numpy()
        G = [g_T.numpy()]
        for t in range(len(H) - 1, 0, -1):
            G.append((G[-1] * (1 - H[t] ** 2)) @ W_h)
        return np.stack(G[::-1])
    check_bptt(numpy_version)


def test_bptt_rejects_missing_tanh_derivative():
    rejects(check_bptt, make_bptt(deriv=lambda H, t: 1.0), "tanh derivative is missing")


def test_bptt_rejects_transposed_weights():
    rejects(check_bptt, make_bptt(W=lambda W_h: W_h.T), "transposed")


def test_bptt_rejects_off_by_one_derivative():
    rejects(check_bptt, make_bptt(deriv=lambda H, t: 1 - H[t - 1] ** 2), "off by one")


def test_bptt_rejects_tanh_applied_twice():
    rejects(check_bptt, make_bptt(deriv=lambda H, t: 1 - torch.tanh(H[t]) ** 2),
            "already the tanh's output")


def test_bptt_rejects_reversed_rows_and_identity_path():
    rejects(check_bptt, make_bptt(flip=True), "reverse order")
    rejects(check_bptt, make_bptt(skip=True), "no identity path")


def test_bptt_rejects_wrong_shape():
    rejects(check_bptt, lambda H, W_h, g_T: make_bptt()(H, W_h, g_T).T, "expected shape")
    rejects(check_bptt, lambda H, W_h, g_T: make_bptt()(H, W_h, g_T)[:-1], "expected shape")


def test_bptt_rejects_a_wrong_last_row():
    def scaled_last(H, W_h, g_T):
        G = make_bptt()(H, W_h, g_T)
        G[-1] = 2 * G[-1]
        return G
    rejects(check_bptt, scaled_last, "last row must be g_T")


def test_bptt_rejects_other_errors_with_location():
    def off(H, W_h, g_T):
        G = make_bptt()(H, W_h, g_T)
        G[:-1] = 1.01 * G[:-1]
        return G
    rejects(check_bptt, off, "∂ℓ/∂h_t is wrong at index")
