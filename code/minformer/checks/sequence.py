"""Checkers for chapter 9: an add-k bigram model's perplexity, and backpropagation through time
in a tanh RNN."""

import math
from collections import Counter

import numpy as np
import torch

from ._core import (
    CheckFailed,
    call,
    checker,
    expect_array,
    expect_close,
    expect_finite,
    expect_shape,
    fail,
    matches,
    random_name,
    to_numpy,
)


# ---------------------------------------------------------------------------- bigram perplexity
def bigram_perplexity_reference(train, test, k, *, log_base=math.e, exp_base=math.e,
                                n_terms="bigrams", vocab_from="train", denom="c(v)+kV",
                                reverse=False):
    """The add-k bigram perplexity, exp(-(1/(n-1)) Σ ln P(w_i | w_{i-1})), with
    P(w | v) = (c(v, w) + k) / (c(v) + k V), V = number of distinct train words and
    c(v) = Σ_w c(v, w). The keyword arguments build the typical wrong variants the checker names.
    Returns math.inf when a test bigram gets probability 0 (k = 0)."""
    pairs = Counter(zip(train, train[1:]))
    context = Counter(train[:-1])  # c(v) = Σ_w c(v, w): v counted as the left word of a pair
    unigram = Counter(train)
    V = {"train": len(set(train)), "test": len(set(test)),
         "both": len(set(train) | set(test)), "tokens": len(train)}[vocab_from]
    total = 0.0
    bigrams = list(zip(test, test[1:]))
    if n_terms == "distinct":  # each distinct test bigram once
        bigrams = list(dict.fromkeys(bigrams))
    for v, w in bigrams:
        if reverse:  # divided by the count of the next word w instead of the context v
            num, c = pairs[(v, w)] + k, unigram[w]
        else:
            num, c = pairs[(v, w)] + k, context[v]
        den = {"c(v)+kV": c + k * V, "c(v)": c, "c(v)+k": c + k}[denom]
        if num == 0 or den == 0:
            return math.inf
        total += -math.log(num / den, log_base)
    n = {"bigrams": len(test) - 1, "words": len(test), "distinct": len(bigrams)}[n_terms]
    return exp_base ** (total / n)


def _bigram_cases(rand, seed):
    """(name, train, test, k). Every train text ends with a word that never starts a test
    bigram, so c(v) computed as Σ_w c(v, w) or as the unigram count of v gives the same value."""
    rng = np.random.default_rng(9)
    words = ["the", "cat", "dog", "sat", "ran", "on", "a", "mat"]
    random_train = [str(w) for w in rng.choice(words, size=60)] + ["end"]
    random_test = [str(w) for w in rng.choice(words[:6], size=12)]
    text = "the cat sat on the mat the dog sat on the cat the end".split()
    return [
        ("a tiny text, k = 1", text, "the cat sat on the mat".split(), 1.0),
        ("a test bigram never seen in train, k = 0.5", text,
         "the mat sat on the dog".split(), 0.5),
        ("a small k = 0.01 and an unseen bigram", text, "sat on the dog the cat".split(),
         0.01),
        ("two test words only (one bigram), k = 1", text, ["on", "the"], 1.0),
        ("60 random words over 8 types, k = 0.1 (test uses 6 of them)", random_train,
         random_test, 0.1),
        ("a test word never seen in train ('zebra'), repeated words, k = 0.5", text,
         "the zebra the zebra sat on the".split(), 0.5),
        (random_name(seed, "random words, random k"),
         [str(w) for w in rand.choice(words, size=int(rand.integers(30, 90)))] + ["end"],
         [str(w) for w in rand.choice(words[:7], size=int(rand.integers(9, 20)))],
         float(rand.choice([0.05, 0.3, 1.0, 2.0]))),
    ]


def _bigram_wrong_variants(train, test, k):
    """(value, message) for typical mistakes, checked in this order."""
    ref = bigram_perplexity_reference
    variants = [
        (ref(train, test, 0.0),
         "k is not used: these are the unsmoothed counts. Add k to every count c(v, w) and "
         "k·V to the denominator"),
        (math.log(ref(train, test, k)),
         "you returned the cross-entropy (the mean of -ln P); perplexity is its exponential, "
         "exp(mean -ln P)"),
        (1.0 / ref(train, test, k),
         "you returned the geometric mean of the probabilities; perplexity is its inverse"),
        (ref(train, test, k, exp_base=2.0),
         "log bases are mixed: you averaged natural logs (ln) but raised 2 to the result; use "
         "exp(mean -ln P), or 2 ** (mean -log2 P)"),
        (ref(train, test, k, log_base=2.0),
         "log bases are mixed: you averaged log2 but took exp of the result; use "
         "exp(mean -ln P), or 2 ** (mean -log2 P)"),
        (ref(train, test, k, n_terms="words"),
         f"you averaged over the {len(test)} test words; a test text of n words has n - 1 = "
         f"{len(test) - 1} bigrams, and the average runs over those"),
        (ref(train, test, k, denom="c(v)"),
         "the probabilities are not normalized: the denominator must be c(v) + k·V, since "
         "adding k to each of the V counts c(v, w) adds k·V to their sum"),
        (ref(train, test, k, denom="c(v)+k"),
         "the denominator adds k once; adding k to each of the V counts c(v, w) adds k·V to "
         "their sum: use c(v) + k·V"),
        (ref(train, test, k, vocab_from="test"),
         "V must be the number of distinct words in the training text (the vocabulary the "
         "model spreads probability over), not in the test text"),
        (ref(train, test, k, vocab_from="tokens"),
         f"V must be the number of distinct words in train, len(set(train)) = "
         f"{len(set(train))}, not the number of tokens len(train) = {len(train)}"),
        (ref(train, test, k, n_terms="distinct"),
         "you counted each distinct test bigram once; the perplexity averages over every "
         "bigram occurrence of the test text, repeats included"),
        (ref(train, test, k, reverse=True),
         "you divided c(v, w) by the count of the next word w, as if computing the previous "
         "word given the next: divide by c(v), the count of the previous word v as a context"),
    ]
    return variants


@checker("bigram perplexity")
def check_bigram_perplexity(fn, *, rng, seed) -> int:
    """Check ``fn(train, test, k)``: the perplexity of an add-k bigram model trained on the list
    of words ``train``, on the list of words ``test``."""
    cases = _bigram_cases(rng, seed)
    for name, train, test, k in cases:
        try:
            got = call(fn, list(train), list(test), k, what="your bigram_perplexity", where=name)
        except CheckFailed as e:
            if " raised KeyError" in str(e):
                fail(f"{e} — a word or pair never seen in train has count 0: count with a "
                     "Counter (or dict.get(key, 0)), which answers 0 for a missing key")
            if " raised ValueError" in str(e) or " raised ZeroDivisionError" in str(e):
                fail(f"{e} — probably log(0) or a division by zero: a test bigram never seen "
                     "in train gets probability 0 unless you add k to every count c(v, w) and "
                     "k·V to the denominator")
            raise
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, np.ndarray) and got.size == 1:
            got = got.item()
        if not isinstance(got, (int, float, np.floating, np.integer)) or isinstance(got, bool):
            fail(f"on {name}: your bigram_perplexity returned {type(got).__name__}; return one "
                 "number (a float)")
        got = float(got)
        expected = bigram_perplexity_reference(train, test, k)
        if not math.isfinite(got):
            fail(f"on {name}: the perplexity is {got}: a test bigram never seen in train got "
                 "probability 0 (log 0 = -inf). Add k to every count c(v, w) and k·V to the "
                 "denominator")
        if math.isclose(got, expected, rel_tol=1e-6):
            continue
        for value, message in _bigram_wrong_variants(train, test, k):
            if math.isfinite(value) and math.isclose(got, value, rel_tol=1e-6):
                fail(f"on {name}: {message}")
        fail(f"on {name}: perplexity {got:.6g}, expected {expected:.6g}. Check the counts: "
             "c(v, w) counts adjacent pairs (train[i], train[i+1]) and c(v) = Σ_w c(v, w)")
    return len(cases)


# ---------------------------------------------------------------------------- BPTT
def _rnn_states(T, d_h, d_in, seed, scale):
    """A tanh RNN h_t = tanh(W_h h_{t-1} + W_x x_t + b) run with autograd.

    Returns H (T, d_h) detached, W_h (d_h, d_h), g_T (d_h,) = ∂ℓ/∂h_T and the true gradients
    G (T, d_h), row t = ∂ℓ/∂h_t, for ℓ = u · h_T.
    """
    g = torch.Generator().manual_seed(seed)
    W_h = scale * torch.randn(d_h, d_h, generator=g, dtype=torch.float64) / math.sqrt(d_h)
    W_x = torch.randn(d_h, d_in, generator=g, dtype=torch.float64) / math.sqrt(d_in)
    b = 0.1 * torch.randn(d_h, generator=g, dtype=torch.float64)
    X = torch.randn(T, d_in, generator=g, dtype=torch.float64)  # (T, d_in), rows are steps
    u = torch.randn(d_h, generator=g, dtype=torch.float64)
    h = (0.5 * torch.randn(d_h, generator=g, dtype=torch.float64)).requires_grad_()  # h_0
    states = []
    for t in range(T):
        h = torch.tanh(W_h @ h + W_x @ X[t] + b)
        h.retain_grad()
        states.append(h)
    (u @ states[-1]).backward()
    H = torch.stack([s.detach() for s in states])  # (T, d_h)
    G = torch.stack([s.grad for s in states])  # (T, d_h)
    return H, W_h, u.clone(), G


def _bptt_cases(rng, seed):
    T, d_h = int(rng.integers(9, 16)), int(rng.integers(1, 7))
    return [
        ("T=6 steps, d_h=4", *_rnn_states(6, 4, 3, seed=1, scale=1.2)),
        ("T=1 step (the gradient is g_T itself)", *_rnn_states(1, 3, 2, seed=2, scale=1.0)),
        ("T=10 steps, d_h=5, a large W_h (saturated tanh)", *_rnn_states(10, 5, 3, seed=3,
                                                                        scale=3.0)),
        ("T=4 steps, d_h=2", *_rnn_states(4, 2, 2, seed=4, scale=0.9)),
        ("T=11 steps, d_h=1 (one hidden unit)", *_rnn_states(11, 1, 2, seed=5, scale=1.1)),
        ("T=9 steps, d_h=7", *_rnn_states(9, 7, 4, seed=6, scale=1.0)),
        (random_name(seed, f"T={T} steps, d_h={d_h}"), *_rnn_states(T, d_h, 3, seed=seed,
                                                                     scale=1.3)),
    ]


def _bptt_variants(H, W_h, g_T):
    """Typical wrong answers: (G, message)."""
    H, W_h, g_T = H.numpy(), W_h.numpy(), g_T.numpy()
    T = len(H)

    def run(step):
        G = np.zeros_like(H)
        G[-1] = g_T
        for t in range(T - 1, 0, -1):
            G[t - 1] = step(G[t], t)
        return G

    return [
        (run(lambda d, t: d @ W_h),
         "the tanh derivative is missing: multiply δ_t elementwise by (1 - h_t²) before "
         "applying W_h"),
        (run(lambda d, t: (d * (1 - H[t] ** 2)) @ W_h.T),
         "W_h is transposed: h_t depends on h_{t-1} through W_h h_{t-1}, so the gradient flows "
         "back through W_hᵀ — with rows as vectors, δ_{t-1} = (δ_t ⊙ (1 - h_t²)) @ W_h"),
        (run(lambda d, t: (d * (1 - H[t - 1] ** 2)) @ W_h),
         "off by one: the tanh derivative belongs to step t, (1 - h_t²), not (1 - h_{t-1}²)"),
        (run(lambda d, t: (d * (1 - np.tanh(H[t]) ** 2)) @ W_h),
         "h_t is already the tanh's output, so its derivative is 1 - h_t², not "
         "1 - tanh(h_t)²"),
        (run(lambda d, t: (d * (1 - H[t] ** 2)) @ W_h)[::-1],
         "the rows are in reverse order: row t must hold ∂ℓ/∂h_t, with the last row equal to "
         "g_T"),
        (run(lambda d, t: (d * (1 - H[t] ** 2)) @ W_h + d),
         "you added δ_t to δ_{t-1}: a tanh RNN has no identity path from h_{t-1} to h_t "
         "(that is what a GRU's gate adds)"),
    ]


@checker("backpropagation through time")
def check_bptt(fn, *, rng, seed) -> int:
    """Check ``fn(H, W_h, g_T)`` → G (T, d_h), row t = ∂ℓ/∂h_t, for a tanh RNN
    h_t = tanh(W_h h_{t-1} + W_x x_t + b) whose states are the rows of H and whose loss ℓ
    depends on h_T only, with gradient g_T = ∂ℓ/∂h_T."""
    cases = _bptt_cases(rng, seed)
    for name, H, W_h, g_T, G in cases:
        out = call(fn, H.clone(), W_h.clone(), g_T.clone(), what="your bptt", where=name)
        got = to_numpy(out, what="your bptt")
        T, d_h = H.shape
        expect_shape(got, (T, d_h), labels="(T, d_h): one gradient row per step",
                     hint="return one row ∂ℓ/∂h_t per step t, stacked like H")
        expect_array(out, "your bptt", where=name)  # NumPy or torch, float64 like the inputs
        expect_finite(got, f"on {name}: check for a division or an overflow")
        expected = G.numpy()
        if matches(got, expected):
            continue
        for candidate, message in _bptt_variants(H, W_h, g_T):
            if matches(got, candidate):
                fail(f"on {name}: {message}")
        if not np.allclose(got[-1], g_T.numpy()):
            fail(f"on {name}: the last row must be g_T = ∂ℓ/∂h_T itself (the loss depends on "
                 "h_T directly)")
        expect_close(got, expected, f"on {name}, ∂ℓ/∂h_t")
    return len(cases)
