"""Checkers for chapter 11 (word2vec): skip-gram pairs, the negative-sampling loss, and
analogies by vector offsets.

- ``skipgram_pairs(tokens, window)``: every (center, context) pair of words with
  1 ≤ |offset| ≤ window, inside the sentence, one pair per occurrence.
- ``negative_sampling_loss(v_c, u_o, u_neg)``: the batch mean of
  −log σ(u_oᵀ v_c) − Σ_k log σ(−u_kᵀ v_c).
- ``analogy(E, words, a, b, c)``: the word whose vector has the highest cosine with
  b̂ − â + ĉ (rows normalized), a, b and c excluded.
"""

from collections import Counter

import numpy as np
import torch
import torch.nn.functional as F

from ._core import call, checker, expect_gradients, fail, random_name

# ---------------------------------------------------------------------------- skip-gram pairs


def skipgram_pairs_reference(tokens, window, *, lo=1, hi=None, sides=(-1, 1), wrap=False):
    """(center, context) pairs with lo ≤ |offset| ≤ hi (hi = window); the keyword arguments
    build the typical wrong variants the checker names."""
    hi = window if hi is None else hi
    n, pairs = len(tokens), []
    for i in range(n):
        for d in range(lo, hi + 1):
            for s in sides:
                j = i + s * d if d else i
                if d == 0 and s != sides[0]:
                    continue  # offset 0 once
                if 0 <= j < n:
                    pairs.append((tokens[i], tokens[j]))
                elif wrap and -n <= j < 0:
                    pairs.append((tokens[i], tokens[j]))  # Python's negative index
    return pairs


def _pair_cases(rng, seed):
    vocab = ["the", "a", "cat", "dog", "saw"]
    words = [str(w) for w in rng.choice(vocab, size=int(rng.integers(9, 21)))]
    window = int(rng.integers(1, 5))
    return [
        ("'the quick brown fox jumps', window=1", ["the", "quick", "brown", "fox", "jumps"], 1),
        ("7 distinct words, window=2", ["a", "b", "c", "d", "e", "f", "g"], 2),
        ("10 distinct words, window=4", [f"w{i}" for i in range(10)], 4),
        ("3 words, window=5 (wider than the sentence)", ["x", "y", "z"], 5),
        ("a single word (no pairs)", ["alone"], 2),
        ("repeated words 'the cat saw the dog saw the cat', window=2",
         ["the", "cat", "saw", "the", "dog", "saw", "the", "cat"], 2),
        ("a word next to itself: 'no no no way', window=2", ["no", "no", "no", "way"], 2),
        ("12 distinct words, window=9 (beyond 8)", [f"v{i}" for i in range(12)], 9),
        (random_name(seed, f"{' '.join(words)!r}, window={window}"), words, window),
    ]


def _as_pairs(out, case):
    if out is None:
        fail("skipgram_pairs returned None: did you forget the `return` statement?")
    if isinstance(out, (str, dict)) or not hasattr(out, "__iter__"):
        fail(f"on {case}: skipgram_pairs returned a {type(out).__name__}; return a list of "
             "(center, context) tuples")
    pairs = []
    for p in out:
        if isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(w, str) for w in p):
            pairs.append(tuple(p))
        else:
            fail(f"on {case}: {p!r} is not a (center, context) pair of words; return tuples "
                 "of two strings such as ('fox', 'brown')")
    return pairs


def _diagnose_pairs(got, tokens, window, case):
    expected = Counter(skipgram_pairs_reference(tokens, window))
    by_value = Counter(p for p in skipgram_pairs_reference(tokens, window) if p[0] != p[1])
    if by_value != expected and Counter(got) == by_value:
        pair = next(p for p in expected if p[0] == p[1])
        fail(f"on {case}: the pair {pair!r} is missing: you skipped context words equal to the "
             "centre word; skip the centre's own position (offset 0), not its value — a "
             "repeated word nearby is a real context")
    distinct = len(set(tokens)) == len(tokens)
    if distinct:
        pos = {w: i for i, w in enumerate(tokens)}
        offsets = [pos[o] - pos[c] for c, o in got if c in pos and o in pos]
        if 0 in offsets:
            fail(f"on {case}: a word is paired with itself at offset 0 (e.g. "
                 f"{(tokens[0], tokens[0])!r}): the centre word is not its own context; skip "
                 "offset 0")
        if Counter(got) == Counter(skipgram_pairs_reference(tokens, window, wrap=True)):
            fail(f"on {case}: some pairs wrap around the sentence: tokens[i - d] with i - d < 0 "
                 "is a word from the other end in Python; skip neighbours outside the sentence")
        far = [(c, o) for c, o in got if c in pos and o in pos and abs(pos[o] - pos[c]) > window]
        if far:
            c, o = far[0]
            hint = (" — an off-by-one: the window is 1 ≤ |offset| ≤ window"
                    if abs(pos[o] - pos[c]) == window + 1 else "")
            fail(f"on {case}: the pair {(c, o)!r} is {abs(pos[o] - pos[c])} words apart, "
                 f"outside the window of {window}{hint}")
        missing = expected - Counter(got)
        if missing:
            gaps = {pos[o] - pos[c] for c, o in missing}
            if all(g < 0 for g in gaps):
                fail(f"on {case}: the context words before the centre are missing (e.g. "
                     f"{next(iter(missing))!r}); the window looks both ways")
            if all(g > 0 for g in gaps):
                fail(f"on {case}: the context words after the centre are missing (e.g. "
                     f"{next(iter(missing))!r}); the window looks both ways")
            if all(abs(g) == window for g in gaps):
                fail(f"on {case}: the pairs exactly {window} word{'s' * (window > 1)} apart "
                     f"are missing (e.g. {next(iter(missing))!r}): an off-by-one — the offsets "
                     "run from 1 to window inclusive, range(1, window + 1)")
    got_c = Counter(got)
    if set(got_c) == set(expected) and got_c != expected:
        pair = next(p for p in expected if got_c[p] != expected[p])
        fail(f"on {case}: the pair {pair!r} occurs {expected[pair]} times but you returned it "
             f"{got_c[pair]} time{'s' * (got_c[pair] != 1)}: keep one pair per occurrence (no set(), no duplicates) — "
             "frequent pairs must weigh more in training")
    extra, missing = got_c - expected, expected - got_c
    if missing:
        fail(f"on {case}: the pair {next(iter(missing))!r} is missing ({len(missing)} missing "
             "in all)")
    fail(f"on {case}: the pair {next(iter(extra))!r} should not be there (the centre comes "
         "first, then a word at most window positions away)")


@checker("skipgram_pairs")
def check_skipgram_pairs(fn, *, rng, seed) -> int:
    """Check ``fn(tokens, window)``: the list of (center, context) pairs of skip-gram with a
    fixed window — every word paired with each word at most ``window`` positions before or
    after it, within the sentence, one pair per occurrence (order does not matter)."""
    cases = _pair_cases(rng, seed)
    for case, tokens, window in cases:
        out = call(fn, list(tokens), window, what="skipgram_pairs", where=case)
        got = _as_pairs(out, case)
        if Counter(got) != Counter(skipgram_pairs_reference(tokens, window)):
            _diagnose_pairs(got, tokens, window, case)
    return len(cases)


# ---------------------------------------------------------------------------- the loss


def negative_sampling_loss_reference(v_c, u_o, u_neg, *, neg_sign=-1.0, pos_sign=1.0,
                                     reduce_k="sum", reduce_batch="mean", flip=1.0,
                                     use_neg=True):
    """mean_batch[−log σ(u_oᵀ v_c) − Σ_k log σ(−u_kᵀ v_c)]; the keyword arguments build the
    typical wrong variants."""
    pos = (u_o * v_c).sum(-1)  # (batch,)
    neg = (u_neg * v_c.unsqueeze(1)).sum(-1)  # (batch, k)
    terms = F.logsigmoid(neg_sign * neg)  # (batch, k)
    neg_term = terms.sum(-1) if reduce_k == "sum" else terms.mean(-1)
    per = -F.logsigmoid(pos_sign * pos) - (neg_term if use_neg else 0.0)  # (batch,)
    out = per.mean() if reduce_batch == "mean" else per.sum()
    return flip * out


def _loss_cases(rng, seed):
    g = torch.Generator().manual_seed(11)

    def rand(*shape, scale=1.0, dtype=torch.float32, g=g):
        return scale * torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)

    rg = torch.Generator().manual_seed(seed)
    B, k, dim = int(rng.integers(1, 9)), int(rng.integers(1, 12)), int(rng.integers(2, 16))
    big_v = torch.tensor([[4.0, -3.0, 5.0], [-6.0, 2.0, 1.0]])
    return [
        ("one example, dim 3, k=1", torch.tensor([[0.5, -1.0, 2.0]]),
         torch.tensor([[1.0, 0.5, 0.2]]), torch.tensor([[[0.3, -0.4, 1.0]]])),
        ("batch 4, dim 5, k=3", rand(4, 5), rand(4, 5), rand(4, 3, 5)),
        ("batch 6, dim 8, k=5 (float64)", rand(6, 8, dtype=torch.float64),
         rand(6, 8, dtype=torch.float64), rand(6, 5, 8, dtype=torch.float64)),
        ("all vectors zero (the loss is (1 + k)·ln 2)", torch.zeros(3, 4), torch.zeros(3, 4),
         torch.zeros(3, 2, 4)),
        ("large scores (|uᵀv| up to 200, float32)", big_v, -4.0 * big_v,
         torch.stack([3.0 * big_v, -2.0 * big_v], dim=1)),
        ("batch 1, dim 4, k=6", rand(1, 4), rand(1, 4), rand(1, 6, 4)),
        ("batch 5, dim 3, k=1", rand(5, 3), rand(5, 3), rand(5, 1, 3)),
        ("batch 7, dim 9, k=9 (float64), with scores in the thousands",
         rand(7, 9, scale=20.0, dtype=torch.float64), rand(7, 9, scale=20.0, dtype=torch.float64),
         rand(7, 9, 9, scale=20.0, dtype=torch.float64)),
        (random_name(seed, f"batch {B}, dim {dim}, k={k}"), rand(B, dim, g=rg),
         rand(B, dim, g=rg), rand(B, k, dim, scale=2.0, g=rg)),
    ]


def _loss_variants(v, u_o, u_neg):
    ref = negative_sampling_loss_reference
    k = u_neg.shape[1]
    sampled_softmax = F.cross_entropy(
        torch.cat([(u_o * v).sum(-1, keepdim=True), (u_neg * v.unsqueeze(1)).sum(-1)], 1),
        torch.zeros(len(v), dtype=torch.long))
    s_neg = (u_neg @ v.unsqueeze(-1)).squeeze()  # the bare squeeze drops k = 1 (or batch = 1)
    s_pos = (u_o * v).sum(-1)
    squeezed = (-F.logsigmoid(s_pos) - F.logsigmoid(-s_neg).sum(-1)).mean()
    return [
        (squeezed,
         ("a bare .squeeze() also dropped an axis of size 1 (k = 1 or batch = 1), so the sum "
          "over the noise words ran over the wrong axis: squeeze only the last axis, "
          ".squeeze(-1)")),
        (ref(v, u_o, u_neg, neg_sign=1.0),
         ("the noise term has the wrong sign: a noise word should get a LOW score, so its term "
         "is log σ(−u_kᵀ v_c), with a minus inside the sigmoid")),
        (ref(v, u_o, u_neg, flip=-1.0),
         ("you returned the log-likelihood (a negative number, to maximize); the loss to "
         "minimize is its negative")),
        (ref(v, u_o, u_neg, pos_sign=-1.0),
         "the true word's term has the wrong sign: it is log σ(+u_oᵀ v_c)"),
        (ref(v, u_o, u_neg, pos_sign=-1.0, neg_sign=1.0),
         ("both signs inside the sigmoids are flipped: σ(u_oᵀ v_c) for the true word and "
         "σ(−u_kᵀ v_c) for the noise words")),
        (ref(v, u_o, u_neg, reduce_k="mean"),
         f"you averaged over the k = {k} noise words; the loss sums their terms"),
        (ref(v, u_o, u_neg, reduce_batch="sum"),
         ("you summed over the batch; return the mean over the batch (one number per batch "
         "that does not grow with its size)")),
        (ref(v, u_o, u_neg, use_neg=False),
         "the noise words are missing: add −Σ_k log σ(−u_kᵀ v_c)"),
        (sampled_softmax,
         ("this is a softmax cross-entropy over the 1 + k candidates; negative sampling gives "
         "each score its own sigmoid: −log σ(u_oᵀ v_c) − Σ_k log σ(−u_kᵀ v_c)")),
    ]


@checker("negative_sampling_loss")
def check_negative_sampling_loss(fn, *, rng, seed) -> int:
    """Check ``fn(v_c, u_o, u_neg)`` with v_c (batch, dim), u_o (batch, dim) and u_neg
    (batch, k, dim): a scalar tensor, the batch mean of −log σ(u_oᵀ v_c) − Σ_k log σ(−u_kᵀ v_c),
    finite for large scores and differentiable."""
    cases = _loss_cases(rng, seed)
    for case, v, u_o, u_neg in cases:
        v_in, u_o_in, u_neg_in = (t.clone().requires_grad_() for t in (v, u_o, u_neg))
        out = call(fn, v_in, u_o_in, u_neg_in, what="negative_sampling_loss", where=case)
        if out is None:
            fail("negative_sampling_loss returned None: did you forget the `return` statement?")
        if not isinstance(out, torch.Tensor):
            fail(f"on {case}: negative_sampling_loss returned a {type(out).__name__}; return a "
                 "torch tensor (no .item(), no NumPy) so that autograd can train with it")
        if out.numel() != 1:
            hint = (" — one loss per example: average over the batch with .mean()"
                    if out.shape == v.shape[:1] else "")
            fail(f"on {case}: expected a scalar loss, got shape {tuple(out.shape)}{hint}")
        if not out.requires_grad:
            fail(f"on {case}: the loss does not depend on the inputs through autograd (did you "
                 "detach, or go through NumPy?); training needs its gradient")
        if out.dtype != v.dtype:
            fail(f"on {case}: the loss has dtype {out.dtype}, but the inputs are {v.dtype}: "
                 "keep the inputs' dtype")
        got = out.detach().double().reshape(())
        expected = negative_sampling_loss_reference(v.double(), u_o.double(), u_neg.double())
        if not torch.isfinite(got):
            fail(f"on {case}: the loss is {got.item()}: log(sigmoid(x)) underflows to log(0) "
                 "for very negative x; use F.logsigmoid(x), which is exact there")
        if torch.isclose(got, expected, rtol=1e-4, atol=1e-5):
            ref = negative_sampling_loss_reference(v_in, u_o_in, u_neg_in)
            expect_gradients(out.reshape(()), ref, [v_in, u_o_in, u_neg_in],
                             ("v_c", "u_o", "u_neg"), case)
            continue
        for value, message in _loss_variants(v.double(), u_o.double(), u_neg.double()):
            if torch.isclose(got, value.double(), rtol=1e-4, atol=1e-5):
                fail(f"on {case}: {message}")
        fail(f"on {case}: loss {got.item():.6g}, expected {expected.item():.6g}. The loss is "
             "mean over the batch of −log σ(u_oᵀ v_c) − Σ_k log σ(−u_kᵀ v_c)")
    return len(cases)


# ---------------------------------------------------------------------------- analogies


def analogy_scores(E, words, a, b, c, *, score="cosine", direction=1.0, dim=-1):
    """The score of every row for a : b :: c : ?, float64. score="cosine" (3CosAdd): unit rows
    (normalized along ``dim``; dim=0 is the slip of normalizing columns), scores
    Ê·(b̂ − â + ĉ), the cosine with the target up to its length; "dot": raw E for the offset
    and the scores; "3cosmul" (Levy & Goldberg, 2014): cos'(d, b)·cos'(d, c) / (cos'(d, a) + ε)
    with cos' = (cos + 1) / 2 and ε = 1e-3. direction=-1 reverses the offset (â − b̂ + ĉ)."""
    E = torch.as_tensor(E).detach().to(torch.float64)
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    if score == "dot":
        target = direction * (E[ib] - E[ia]) + E[ic]  # (dim,)
        return E @ target  # (vocab,)
    if score == "3cosmul":
        En = F.normalize(E, dim=-1)
        cos = (En @ En[[ia, ib, ic]].T + 1) / 2  # (vocab, 3), shifted to [0, 1]
        return cos[:, 1] * cos[:, 2] / (cos[:, 0] + 1e-3)
    En = F.normalize(E, dim=dim)  # (vocab, dim) unit rows
    target = direction * (En[ib] - En[ia]) + En[ic]
    return En @ target  # (vocab,): cosines up to the target's length


def analogy_reference(E, words, a, b, c, *, exclude=True, score="cosine", direction=1.0,
                      dim=-1, fill=-torch.inf):
    """The best d for a : b :: c : d by 3CosAdd: the word whose row of E has the highest cosine
    with b̂ − â + ĉ (unit rows), a, b and c excluded. The keyword arguments build the typical
    wrong variants: exclude=False (none excluded) or a string of the roles excluded ("ab": a
    and b only), score="dot" (raw E for the offset and the scores), score="3cosmul",
    direction=-1 (â − b̂ + ĉ), dim=0 (columns normalized), fill=0 (the query words' scores set
    to 0 instead of −inf)."""
    scores = analogy_scores(E, words, a, b, c, score=score, direction=direction, dim=dim)
    roles = {"a": words.index(a), "b": words.index(b), "c": words.index(c)}
    excluded = "abc" if exclude is True else "" if exclude is False else exclude
    if excluded:
        scores[[roles[r] for r in excluded]] = fill
    return words[int(torch.argmax(scores))]


def _first_rows_slip(E, words, a, b, c):
    """(The answer when rows 0, 1 and 2 are excluded instead of a, b and c, what to say)."""
    scores = analogy_scores(E, words, a, b, c)
    scores[:3] = -torch.inf
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    return (words[int(torch.argmax(scores))],
            f"you excluded rows 0, 1 and 2, the first three rows, but a, b and c are rows {ia}, "
            f"{ib} and {ic} here: exclude the rows of the query words, words.index(a), "
            "words.index(b) and words.index(c)")


def _analogy_slips(E, words, a, b, c):
    """[(the answer of a typical slip, what to say)], in the order they are named. Each one
    changes the answer in some fixed case (tests/test_checks_embeddings.py verifies this)."""
    scores = analogy_scores(E, words, a, b, c)
    top = [int(i) for i in torch.argsort(scores, descending=True, stable=True)]
    folded = {w.lower() for w in (a, b, c)}
    no_variant = scores.clone()
    no_variant[[i for i, w in enumerate(words) if w.lower() in folded]] = -torch.inf
    return [
        (analogy_reference(E, words, a, b, c, score="3cosmul"),
         "that is the 3CosMul answer (Levy & Goldberg's multiplicative objective, "
         "cos'(d, b)·cos'(d, c) / (cos'(d, a) + ε)); this exercise asks for 3CosAdd: the "
         "highest cosine with b̂ − â + ĉ"),
        (analogy_reference(E, words, a, b, c, score="dot"),
         "that is the word with the largest DOT PRODUCT; use the cosine (normalize the rows of E "
         "first), or long vectors of frequent words win every query"),
        (analogy_reference(E, words, a, b, c, direction=-1.0),
         "the offset points the wrong way; for a : b :: c : ?, the target is b − a + c "
         "(king − man + woman)"),
        (analogy_reference(E, words, a, b, c, dim=0),
         "you normalized the columns of E (dim=0); normalize each word's vector, the rows: "
         "F.normalize(E, dim=-1) or E / E.norm(dim=-1, keepdim=True)"),
        (words[int(torch.argmax(no_variant))],
         "you also excluded words that differ from a query word only in case ('IT' is not "
         "'it'): compare the words exactly, or better, exclude the three rows words.index(a), "
         "words.index(b) and words.index(c)"),
        _first_rows_slip(E, words, a, b, c),
        (words[top[3]],
         "you skipped the three best-scoring words, but a, b and c are not always the three "
         "best: exclude the query words themselves (their rows, by words.index), then take the "
         "best of the rest"),
    ]


def _query_word_message(E, words, a, b, c, out):
    """What to say when the answer is one of a, b and c."""
    role = {a: "a", b: "b", c: "c"}[out]
    first_rows, first_rows_message = _first_rows_slip(E, words, a, b, c)
    if out == first_rows != analogy_reference(E, words, a, b, c):
        return f"you answered {out!r}, one of the query words ({role}): {first_rows_message}"
    message = (f"you answered {out!r}, one of the query words ({role}): exclude all three of "
               "a, b and c from the candidates, not only some of them (the target "
               "b̂ − â + ĉ usually lands next to b or c, and next to a when b and c are close "
               "to it)")
    scores = analogy_scores(E, words, a, b, c)
    others = torch.ones(len(words), dtype=torch.bool)
    others[[words.index(w) for w in (a, b, c)]] = False
    if bool((scores[others] < 0).all()):
        message += ("; give them a score of -inf (float('-inf')): 0 is not low enough here, "
                    "where every other word scores below 0")
    return message


def _raw_offset_answer(E, words, a, b, c):
    """The answer with the offset b − a + c of the raw rows and cosine scores, which the
    checker accepts: every case is built so that it agrees with the unit-row offset."""
    E = torch.as_tensor(E).detach().to(torch.float64)
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    scores = F.normalize(E, dim=-1) @ (E[ib] - E[ia] + E[ic])
    scores[[ia, ib, ic]] = -torch.inf
    return words[int(torch.argmax(scores))]


def _random_analogy(rng, seed):
    """A random vocabulary with a planted analogy: b − a + c lands near d, but nearer still to
    c (b is close to a), so that only an answer that excludes the query words finds d."""
    n, dim = int(rng.integers(8, 16)), int(rng.integers(5, 12))
    for _ in range(100):
        E = rng.normal(size=(n, dim))
        ia, ib, ic, idd = (int(i) for i in rng.permutation(n)[:4])
        E[ib] = E[ia] + 0.3 * rng.normal(size=dim)  # b close to a: the target is near c
        E[idd] = E[ib] - E[ia] + E[ic] + 0.5 * rng.normal(size=dim)
        words = [f"w{int(i)}" for i in rng.permutation(100)[:n]]
        a, b, c = words[ia], words[ib], words[ic]
        T = torch.tensor(E, dtype=torch.float32)
        if (analogy_reference(T, words, a, b, c) == words[idd]
                and analogy_reference(T, words, a, b, c, exclude=False) in (a, b, c)
                and _raw_offset_answer(T, words, a, b, c) == words[idd]):
            break
    E = T
    return (random_name(seed, f"{a} : {b} :: {c} : ? over {n} random words"), E, words, a, b,
            c)


def _analogy_cases(rng, seed):
    """(name, E, words, a, b, c). Each case is built so that one typical mistake changes the
    answer (tests/test_checks_embeddings.py verifies this)."""
    words = ["man", "woman", "king", "queen", "prince", "the"]
    E1 = torch.tensor([
        [1.0, 0.1, 0.0],   # man
        [0.1, 1.0, 0.0],   # woman
        [1.0, 0.1, 0.6],   # king
        [0.1, 1.0, 0.7],   # queen
        [0.8, 0.3, 0.9],   # prince
        [0.5, 0.5, 0.1],   # the
    ])
    E2 = E1.clone()
    E2[5] = torch.tensor([6.0, 8.0, 4.0])  # a very long "the": wins any dot product
    words3 = ["large", "larger", "small", "smaller", "tiny", "big"]
    E3 = torch.tensor([
        [1.0, 0.0, 0.2, 0.0],   # large
        [1.0, 0.0, 0.35, 0.0],  # larger: close to large, so b̂ − â + ĉ ≈ ĉ
        [0.0, 1.0, 0.2, 0.0],   # small
        [0.0, 1.0, 0.6, 0.1],   # smaller
        [0.1, 1.0, 0.0, 0.3],   # tiny
        [0.9, 0.1, 0.0, 0.2],   # big
    ])
    words4 = ["paris", "france", "rome", "italy", "berlin", "germany", "europe"]
    g = torch.Generator().manual_seed(4)
    capital, country = torch.randn(8, generator=g), torch.randn(8, generator=g)
    places = torch.randn(3, 8, generator=g)  # one direction per place
    E4 = torch.stack([
        places[0] + capital, places[0] + country,
        places[1] + capital, places[1] + country,
        places[2] + capital, places[2] + country,
        0.5 * country + 0.3 * torch.randn(8, generator=g),
    ])
    greek = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    E_scales = torch.tensor([  # the first dimension spans a wider range than the others:
        [-0.2, -0.6, -0.7],    # normalizing the columns (not the rows) changes the answer
        [-0.2, -0.7, 0.1],
        [-0.7, -1.3, -0.7],
        [2.1, -0.2, 1.1],
        [-2.1, 1.1, 1.3],
    ])
    words5 = ["cat", "cats", "kitten", "kittens", "dog", "car"]
    E5 = torch.tensor([  # cats and kitten close to cat: cat, cats and kitten all score above
        [1.0, 0.0, 0.0, 0.0],    # cat              kittens, so each partial exclusion fails
        [1.0, 0.25, 0.0, 0.0],   # cats
        [1.0, 0.0, 0.2, 0.0],    # kitten
        [1.0, 0.25, 0.2, 0.5],   # kittens
        [0.3, 0.0, 0.0, 1.0],    # dog
        [0.0, 0.0, 0.0, 1.0],    # car
    ])
    E_mul = torch.tensor([  # 3CosAdd and 3CosMul disagree here
        [0.5, 1.0, -1.5, 0.7],
        [0.6, -0.2, -0.4, 0.1],
        [0.5, 1.4, -1.3, 0.4],
        [-0.1, 0.5, -1.5, -2.3],
        [-0.6, -0.2, -0.6, -0.5],
        [-0.7, -1.3, 2.2, -1.7],
    ])
    words6 = ["us", "US", "it", "IT", "we", "WE", "the"]
    E6 = torch.tensor([
        [1.0, 0.0, 0.0, 0.0],    # us
        [1.0, 0.0, 0.0, 0.8],    # US: the last axis says "in capitals"
        [0.0, 1.0, 0.0, 0.0],    # it
        [0.0, 1.0, 0.0, 0.8],    # IT
        [0.2, 0.2, 1.0, 0.0],    # we
        [0.2, 0.2, 1.0, 0.8],    # WE
        [0.4, 0.4, 0.4, 0.0],    # the
    ])
    words7 = ["up", "upper", "down", "apple", "banana", "cherry"]
    E7 = torch.tensor([  # every candidate points away from the target: all score below 0
        [1.0, 0.0, 0.0],     # up
        [1.0, 0.3, 0.0],     # upper
        [0.6, 0.0, 0.8],     # down
        [-1.0, -0.2, -0.3],  # apple
        [-0.5, -1.0, -0.2],  # banana
        [-0.3, 0.1, -1.0],   # cherry
    ])
    return [
        ("man : king :: woman : ?", E1, words, "man", "king", "woman"),
        ("cat : cats :: kitten : ? (cats and kitten are close to cat: cat itself scores high)",
         E5, words5, "cat", "cats", "kitten"),
        ("alpha : beta :: gamma : ? (a first axis of a wider range than the others)", E_scales,
         greek[:5], "alpha", "beta", "gamma"),
        ("man : king :: woman : ? with a very long vector for 'the'", E2, words, "man",
         "king", "woman"),
        ("large : larger :: small : ? (larger is close to large)", E3, words3, "large",
         "larger", "small"),
        ("paris : france :: rome : ?", E4, words4, "paris", "france", "rome"),
        ("germany : berlin :: italy : ?", E4, words4, "germany", "berlin", "italy"),
        ("alpha : beta :: gamma : ? (3CosAdd and 3CosMul disagree)", E_mul, greek, "alpha",
         "beta", "gamma"),
        ("us : US :: it : ? (words that differ only in case)", E6, words6, "us", "US", "it"),
        ("up : upper :: down : ? (no candidate scores above 0)", E7, words7, "up", "upper",
         "down"),
        _random_analogy(rng, seed),
        _random_analogy(rng, seed),
    ]


@checker("analogy")
def check_analogy(fn, *, rng, seed) -> int:
    """Check ``fn(E, words, a, b, c)``: E (vocab, dim) word vectors, ``words`` the list of the
    vocab words in row order; returns the word d (a str) for a : b :: c : d — the row with the
    highest cosine with b̂ − â + ĉ (unit rows of E), a, b and c themselves excluded."""
    cases = _analogy_cases(rng, seed)
    for case, E, words, a, b, c in cases:
        out = call(fn, E.clone(), list(words), a, b, c, what="analogy", where=case)
        if isinstance(out, (int, np.integer)) or (isinstance(out, torch.Tensor)
                                                  and out.numel() == 1):
            fail(f"on {case}: analogy returned the index {int(out)}; return the word itself, "
                 "words[index]")
        if not isinstance(out, str):
            fail(f"on {case}: analogy returned a {type(out).__name__}; return the single best "
                 "word as a str")
        expected = analogy_reference(E, words, a, b, c)
        if out == expected:
            continue
        if out in (a, b, c):
            fail(f"on {case}: {_query_word_message(E, words, a, b, c, out)}")
        if out not in words:
            fail(f"on {case}: {out!r} is not one of the words")
        for answer, message in _analogy_slips(E, words, a, b, c):
            if out == answer != expected:
                fail(f"on {case}: you answered {out!r}, expected {expected!r}: {message}")
        fail(f"on {case}: you answered {out!r}, expected {expected!r}")
    return len(cases)
