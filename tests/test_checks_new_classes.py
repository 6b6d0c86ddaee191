"""Plausible wrong answers of the kinds the first checkers let through, one table for all
checkers: stability cases too gentle (row maxima thousands apart), sizes too small or regular
(lengths past 8, a size-1 batch or k), repeated tokens, zeros and ties, arguments that disagree
with the object, wrong types or dtypes, and hard-coded sizes. Each must be rejected with the
message that names its mistake. (Answers that change their inputs, fake differentiability and
hard-coded outputs: tests/test_checks_framework.py.)"""

import math
from collections import Counter
from itertools import pairwise

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import rejects

from minformer import checks
from minformer.attention import scaled_dot_product_attention, softmax
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
from minformer.positional import sinusoidal_encoding


def global_max_softmax(z, axis=-1):
    """Shifted by the max of the whole array, not of each row."""
    with np.errstate(all="ignore"):
        e = np.exp(z - np.max(z))
        return e / e.sum(axis=axis, keepdims=True)


def mean_shift_softmax(z):
    with np.errstate(all="ignore"):
        e = np.exp(z - z.mean(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def torch_global_max_softmax(S):
    e = torch.exp(S - S.max())
    return e / e.sum(-1, keepdim=True)


def scaled(Q, K, V):
    return scaled_dot_product_attention(Q, K, V)


def nw_by(denominator):
    def wrong(q, k, v, h):
        return softmax(-(q[:, None] - k[None, :]) ** 2 / denominator(h), axis=-1) @ v
    return wrong


def masked_by_zero_scores(Q, K, V, mask):
    S = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]) * mask  # masked scores become 0 ...
    S = S.masked_fill(S == 0, float("-inf"))  # ... and every 0 is taken for masked
    return torch.nan_to_num(torch.softmax(S, -1)) @ V


_BUFFER = torch.ones(8, 8, dtype=torch.bool).tril()  # "long enough for the examples"


def buffered_causal(t):
    return _BUFFER[:t, :t]


def bigram_with_dict(train, test, k):
    pairs, ctx = dict(Counter(zip(train, train[1:]))), dict(Counter(train[:-1]))
    V = len(set(train))
    logs = [math.log((pairs.get((v, w), 0) + k) / (ctx[v] + k * V)) for v, w in
            zip(test, test[1:])]
    return math.exp(-sum(logs) / len(logs))


def bigram_v_tokens(train, test, k):
    return bigram_perplexity_reference(train, test, k, vocab_from="tokens")


def bigram_distinct(train, test, k):
    return bigram_perplexity_reference(train, test, k, n_terms="distinct")


def bptt(H, W_h, g_T, rows=None):
    G = [g_T]
    stop = 0 if rows is None else rows
    for t in range(H.shape[0] - 1, stop, -1):
        G.append((G[-1] * (1 - H[t] ** 2)) @ W_h)
    return torch.stack(G[::-1])


def count_distinct_per_word(word_freq):
    counts = Counter()
    for w, f in word_freq.items():
        for pair in set(pairwise(w)):
            counts[pair] += f
    return counts


def apply_by_joined_rank(symbols, merges):
    rank = {}
    for r, (a, b) in enumerate(merges):
        rank.setdefault(a + b, r)
    symbols = list(symbols)
    while len(symbols) > 1:
        i = min(range(len(symbols) - 1),
                key=lambda i: (rank.get(symbols[i] + symbols[i + 1], len(merges)), i))
        if symbols[i] + symbols[i + 1] not in rank:
            break
        symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols


def apply_one_pass(symbols, merges):
    """Each merge once over the word, but a merge's own output is never merged again."""
    out = list(symbols)
    for a, b in merges:
        out = _reference_apply(out, [(a, b)]) if len(out) < 10 else out
    return out


def skip_centre_by_value(tokens, window):
    return [(c, o) for c, o in skipgram_pairs_reference(tokens, window) if c != o]


def capped_window(tokens, window):
    return skipgram_pairs_reference(tokens, min(window, 8))


def ns_bare_squeeze(v, u_o, u_neg):
    s_neg = (u_neg @ v.unsqueeze(-1)).squeeze()
    return (-F.logsigmoid((u_o * v).sum(-1)) - F.logsigmoid(-s_neg).sum(-1)).mean()


def analogy_keep_c(E, words, a, b, c):
    En = F.normalize(E, dim=-1)
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    scores = En @ (En[ib] - En[ia] + En[ic])
    scores[[ia, ib]] = -torch.inf
    return words[int(scores.argmax())]


_WORDS = ["man", "woman", "king", "queen", "prince", "the"]


def analogy_fixed_vocab(E, words, a, b, c):
    """Looks the words up in a list of its own instead of the one given."""
    if len(words) != len(_WORDS):
        words = (_WORDS * 3)[:len(words)]
    return analogy_reference(E, words, a, b, c) if a in words and b in words and c in words \
        else words[0]


def mha_two_heads(X_q, X_kv, W_Q, W_K, W_V, W_O, h, mask=None):
    return _reference(X_q, X_kv, W_Q, W_K, W_V, W_O, 2, mask)


def sinusoidal_d8(n, d):
    """The frequencies of d = 8, whatever d is."""
    pos = np.arange(n)[:, None]
    i = np.arange(d) // 2
    angles = pos / 10000 ** (2 * i / 8)
    return np.where(np.arange(d) % 2 == 0, np.sin(angles), np.cos(angles))


def sinusoidal_buffer(n, d):
    return sinusoidal_encoding(256, 64, dtype=torch.float64)[:n, :d]


# (checker, wrong answer(s), fragments the message must contain)
WRONG = {
    "softmax": [
        ((global_max_softmax,), ("row maxima differ by", "each row's own max")),
        ((mean_shift_softmax,), ("subtract the row max",)),
        ((lambda z: softmax(z).squeeze(),), ("expected shape", ".squeeze()")),
        ((lambda z: softmax(z).astype(np.float32),), ("dtype float32",)),
    ],
    "attention": [
        ((lambda X: global_max_softmax(X @ X.T) @ X,), ("each row's own max",)),
        ((lambda X: softmax(X @ X.T / math.sqrt(X.shape[1])) @ X,), ("no scaling yet",)),
        ((lambda X: (softmax(X @ X.T) @ X).astype(np.float32),), ("dtype float32",)),
    ],
    "nadaraya_watson": [
        ((nw_by(lambda h: (2 * h) ** 2),), ("(2h)² = 4h²", "2 * h**2")),
        ((nw_by(lambda h: 2 * h),), ("bandwidth enters squared",)),
        ((lambda q, k, v, h: _nadaraya_watson(q, k, v, h).astype(np.float32),),
         ("dtype float32",)),
        ((lambda q, k, v, h: global_max_softmax(-(q[:, None] - k) ** 2 / (2 * h**2)) @ v,),
         ("underflowed",)),
    ],
    "qkv": [
        ((lambda *a: (_qkv_attention(*a)[0], _qkv_attention(*a)[1].T),),
         ("A transposed", "row i of A")),
        ((lambda *a: (_qkv_attention(*a)[0].squeeze(), _qkv_attention(*a)[1]),),
         ("expected shape", ".squeeze()")),
        ((lambda *a: tuple(x.astype(np.float32) for x in _qkv_attention(*a)),),
         ("dtype float32",)),
        ((lambda X, W_Q, W_K, W_V: (lambda A: (A @ X @ W_V, A))(
            global_max_softmax((X @ W_Q) @ (X @ W_K).T)),), ("overflow exp",)),
    ],
    "scaled": [
        ((lambda Q, K, V: torch_global_max_softmax(
            Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])) @ V,),
         ("subtract each row's max",)),
        ((lambda Q, K, V: scaled(Q, K, V).squeeze(),), ("expected shape", ".squeeze()")),
        ((lambda Q, K, V: scaled(Q, K, V).float(),), ("dtype torch.float32",)),
    ],
    "causal": [
        ((buffered_causal,), ("expected shape (13, 13)",)),
        ((lambda t: torch.ones(t, t).tril(t // 10).bool(),),
         ("for t=13, mask[0, 1] should be False",)),
        ((lambda t: np.tri(t),), ("dtype float64", "bool")),
    ],
    "masked": [
        ((masked_by_zero_scores,), ("scores equal to 0", "masked_fill(~mask")),
        ((lambda Q, K, V, m: torch.softmax((Q @ K.mT / math.sqrt(Q.shape[-1])).masked_fill(
            ~m, -1e4), -1) @ V * m.any(-1, keepdim=True),),
         ("finite score -10000", "down to -40000", "-inf")),
        ((lambda Q, K, V, m: scaled_dot_product_attention(Q, K, V, m).squeeze(),),
         ("expected shape", ".squeeze()")),
        ((lambda Q, K, V, m: scaled_dot_product_attention(Q, K, V, m).float(),),
         ("dtype torch.float32",)),
        ((lambda Q, K, V, m: scaled_dot_product_attention(
            Q, K, V, buffered_causal(Q.shape[-2]) if Q.shape[-2] > 8 else m),),
         ("raised ValueError", "the future-token test")),
    ],
    "split_heads": [
        ((lambda X, h: _split(X, h).squeeze(), _merge), ("expected shape", ".squeeze()")),
        ((lambda X, h: _split(X, 2), _merge), ("expected shape (2, 4, 5, 2)",)),
        ((_split, lambda H: _merge(H).double()), ("merge_heads returned dtype torch.float64",)),
    ],
    "mha": [
        ((mha_two_heads,), ("you split into 2 heads", "h = 4")),
        ((lambda *a: _reference(*a[:7], a[7] if len(a) > 7 else None).squeeze(),),
         ("expected shape", ".squeeze()")),
        ((lambda *a: _reference(*a[:7], a[7] if len(a) > 7 else None).double(),),
         ("dtype torch.float64",)),
    ],
    "layer_norm": [
        ((lambda x, g, b, eps: _ln(x, g, b, 1e-5),), ("you used ε = 1e-05", "use the argument eps")),
        ((lambda x, g, b, eps: _ln(x, g, b, eps).squeeze(),), ("expected shape", ".squeeze()")),
        ((lambda x, g, b, eps: _ln(x, g, b, eps).double(),), ("dtype torch.float64",)),
    ],
    "encoder_layer": [
        ((lambda x, layer, norm_first: _placed(x, layer, layer.norm_first),),
         ("layer.norm_first", "the argument norm_first decides")),
        ((lambda x, layer, norm_first: layer(x),), ("the argument norm_first decides",)),
        ((lambda x, layer, nf: _placed(x, layer, nf).squeeze(),), ("expected shape", ".squeeze()")),
    ],
    "sinusoidal": [
        ((sinusoidal_d8,), ("n=50, d=64", "exponent is 2i/8", "use the d that is passed in")),
        ((sinusoidal_buffer,), ("n=10, d=8", "exponent is 2i/64")),
        ((lambda n, d: sinusoidal_encoding(n, d + 1, dtype=torch.float64)[:, :d],),
         ("exponent is 2i/9, not 2i/d = 2i/8",)),
    ],
    "bigram": [
        ((bigram_with_dict,), ("raised KeyError", "Counter")),
        ((bigram_v_tokens,), ("distinct words in train", "len(set(train))")),
        ((bigram_distinct,), ("each distinct test bigram once",)),
    ],
    "bptt": [
        ((lambda H, W, g: bptt(H, W, g).squeeze(),), ("expected shape", ".squeeze()")),
        ((lambda H, W, g: bptt(H, W, g).float(),), ("dtype torch.float32",)),
        ((lambda H, W, g: bptt(H, W, g, rows=1),), ("expected shape (6, 4)",
                                                    "one row ∂ℓ/∂h_t per step")),
    ],
    "count_pairs": [
        ((count_distinct_per_word,), ("count every adjacent position",)),
        ((lambda wf: {p: float(c) for p, c in _reference_counts(wf).items()},),
         ("counts are integers",)),
        ((lambda wf: _reference_counts({w: f for w, f in wf.items() if len(w) < 9}),),
         ("mississippi",)),
    ],
    "apply_merges": [
        ((apply_by_joined_rank,), ("not by a + b",)),
        ((apply_one_pass,), ("11 a's",)),
        ((lambda s, m: _reference_apply(s, m[:8]),), ("with 60 merges",)),
    ],
    "skipgram": [
        ((skip_centre_by_value,), ("skip the centre's own position", "not its value")),
        ((capped_window,), ("window=9", "9 words apart are missing")),
        ((lambda t, w: sorted(set(skipgram_pairs_reference(t, w))),), ("no set()",)),
    ],
    "ns_loss": [
        ((ns_bare_squeeze,), ("k = 1", ".squeeze(-1)")),
        ((lambda v, u, n: negative_sampling_loss_reference(v, u, n).float(),),
         ("dtype torch.float32",)),
        ((lambda v, u, n: negative_sampling_loss_reference(v.detach(), u, n),),
         ("gradient", "v_c")),
    ],
    "analogy": [
        ((analogy_keep_c,), ("one of the query words",)),
        ((analogy_fixed_vocab,), ("is not one of the words",)),
        ((lambda E, words, a, b, c: analogy_reference(E, words, a, b, c, score="dot"),),
         ("DOT PRODUCT",)),
    ],
}

CHECKERS = {
    "softmax": checks.check_softmax, "attention": checks.check_attention,
    "nadaraya_watson": checks.check_nadaraya_watson, "qkv": checks.check_qkv_attention,
    "scaled": checks.check_scaled_attention, "causal": checks.check_causal_mask,
    "masked": checks.check_masked_attention, "split_heads": checks.check_split_heads,
    "mha": checks.check_multi_head_attention, "layer_norm": checks.check_layer_norm,
    "encoder_layer": checks.check_encoder_layer, "sinusoidal": checks.check_sinusoidal,
    "bigram": checks.check_bigram_perplexity, "bptt": checks.check_bptt,
    "count_pairs": checks.check_count_pairs, "apply_merges": checks.check_apply_merges,
    "skipgram": checks.check_skipgram_pairs, "ns_loss": checks.check_negative_sampling_loss,
    "analogy": checks.check_analogy,
}

CASES = [(name, i, fns, fragments) for name, rows in WRONG.items()
         for i, (fns, fragments) in enumerate(rows)]


def test_every_checker_has_at_least_three_new_wrong_answers():
    assert set(WRONG) == set(CHECKERS)
    assert all(len(rows) >= 3 for rows in WRONG.values())


@pytest.mark.parametrize(("name", "i", "fns", "fragments"), CASES,
                         ids=[f"{name}-{i}" for name, i, _, _ in CASES])
def test_wrong_answer_is_rejected_with_its_message(name, i, fns, fragments):
    check = CHECKERS[name]
    for seed in (0, 1, 2):  # rejected whatever the random cases are
        with pytest.raises(checks.CheckFailed) as err:
            check(*fns, seed=seed)
        for fragment in fragments:
            assert fragment in str(err.value), str(err.value)


def test_rejects_helper_still_works_with_seeds():
    rejects(checks.check_softmax, global_max_softmax, "each row's own max")
