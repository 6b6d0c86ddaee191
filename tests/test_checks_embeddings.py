"""The chapter 11 checkers accept correct answers and name typical mistakes."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import rejects

from minformer.checks import (
    check_analogy,
    check_negative_sampling_loss,
    check_skipgram_pairs,
)
from minformer.checks.embeddings import _analogy_cases, _analogy_slips, analogy_reference
from minformer.word2vec import Vocab
from minformer.word2vec import analogy as package_analogy
from minformer.word2vec import negative_sampling_loss as package_loss
from minformer.word2vec import skipgram_pairs as package_pairs

# -- check_skipgram_pairs ------------------------------------------------------------------

def make_pairs(lo=1, hi_extra=0, sides=(-1, 1), bounds=True, dedupe=False):
    """Skip-gram pairs written the way a reader would, with one knob per mistake."""
    def fn(tokens, window):
        pairs = []
        for i, center in enumerate(tokens):
            for d in range(lo, window + 1 + hi_extra):
                for s in sides if d else (1,):
                    j = i + s * d
                    if bounds and not 0 <= j < len(tokens):
                        continue
                    if not bounds and j >= len(tokens):
                        continue  # the reader only guarded the right end
                    pairs.append((center, tokens[j]))
        return sorted(set(pairs)) if dedupe else pairs
    return fn


def test_pairs_accepts_correct(capsys):
    check_skipgram_pairs(make_pairs())
    assert "✓ skipgram_pairs: 9 cases passed" in capsys.readouterr().out


def test_pairs_accepts_the_package_and_any_order():
    def via_package(tokens, window):
        ids = np.arange(len(tokens))
        c, o = package_pairs(ids, window)
        return [(tokens[i], tokens[j]) for i, j in zip(c, o)]
    check_skipgram_pairs(via_package)
    check_skipgram_pairs(lambda t, w: list(reversed(make_pairs()(t, w))))
    check_skipgram_pairs(lambda t, w: [list(p) for p in make_pairs()(t, w)])


def test_pairs_rejects_centre_as_its_own_context():
    rejects(check_skipgram_pairs, make_pairs(lo=0), "offset 0", "not its own context")


def test_pairs_rejects_window_off_by_one_short():
    def short(tokens, window):  # range(1, window)
        return [(tokens[i], tokens[i + s * d]) for i in range(len(tokens))
                for d in range(1, window) for s in (-1, 1) if 0 <= i + s * d < len(tokens)]
    rejects(check_skipgram_pairs, short, "exactly 1 word apart are missing",
            "range(1, window + 1)")


def test_pairs_rejects_window_off_by_one_long():
    rejects(check_skipgram_pairs, make_pairs(hi_extra=1), "outside the window",
            "off-by-one")


def test_pairs_rejects_one_side_only():
    rejects(check_skipgram_pairs, make_pairs(sides=(1,)), "before the centre are missing")
    rejects(check_skipgram_pairs, make_pairs(sides=(-1,)), "after the centre are missing")


def test_pairs_rejects_wrap_around():
    rejects(check_skipgram_pairs, make_pairs(bounds=False), "wrap around")


def test_pairs_rejects_deduplication():
    rejects(check_skipgram_pairs, make_pairs(dedupe=True), "one pair per occurrence")


def test_pairs_rejects_bad_outputs():
    rejects(check_skipgram_pairs, lambda t, w: None, "forget the `return`")
    rejects(check_skipgram_pairs, lambda t, w: {}, "return a list of (center, context)")
    rejects(check_skipgram_pairs, lambda t, w: [(0, 1)], "not a (center, context) pair")

    def crash(t, w):
        return [(t[i], t[i + 1]) for i in range(len(t))]
    rejects(check_skipgram_pairs, crash, "raised IndexError")

    def mutates(t, w):
        pairs = make_pairs()(t, w)
        t.clear()
        return pairs
    rejects(check_skipgram_pairs, mutates, "changed its input `t` in place")


# -- check_negative_sampling_loss ----------------------------------------------------------

def make_loss(neg_sign=-1.0, pos_sign=1.0, k_reduce="sum", b_reduce="mean", flip=1.0,
              use_neg=True, naive=False):
    def fn(v_c, u_o, u_neg):
        pos = (u_o * v_c).sum(-1)                      # (batch,)
        neg = torch.einsum("bkd,bd->bk", u_neg, v_c)   # (batch, k)
        logsig = (lambda x: torch.log(torch.sigmoid(x))) if naive else F.logsigmoid
        n = logsig(neg_sign * neg)
        n = n.sum(-1) if k_reduce == "sum" else n.mean(-1)
        per = -logsig(pos_sign * pos) - (n if use_neg else 0)
        return flip * (per.mean() if b_reduce == "mean" else per.sum())
    return fn


def test_loss_accepts_correct(capsys):
    check_negative_sampling_loss(make_loss())
    check_negative_sampling_loss(package_loss)
    assert "✓ negative_sampling_loss: 9 cases passed" in capsys.readouterr().out


def test_loss_rejects_sign_error_in_the_noise_term():
    rejects(check_negative_sampling_loss, make_loss(neg_sign=1.0),
            "noise term has the wrong sign", "σ(−u_kᵀ v_c)")


def test_loss_rejects_other_sign_errors():
    rejects(check_negative_sampling_loss, make_loss(flip=-1.0), "log-likelihood")
    rejects(check_negative_sampling_loss, make_loss(pos_sign=-1.0), "true word's term")
    rejects(check_negative_sampling_loss, make_loss(pos_sign=-1.0, neg_sign=1.0),
            "both signs")


def test_loss_rejects_wrong_reductions():
    rejects(check_negative_sampling_loss, make_loss(k_reduce="mean"), "averaged over the k")
    rejects(check_negative_sampling_loss, make_loss(b_reduce="sum"), "summed over the batch")
    rejects(check_negative_sampling_loss, make_loss(use_neg=False), "noise words are missing")

    def per_example(v_c, u_o, u_neg):
        return -F.logsigmoid((u_o * v_c).sum(-1)) - F.logsigmoid(
            -torch.einsum("bkd,bd->bk", u_neg, v_c)).sum(-1)
    rejects(check_negative_sampling_loss, per_example, "one loss per example", ".mean()")


def test_loss_rejects_softmax_cross_entropy():
    def sampled_softmax(v_c, u_o, u_neg):
        scores = torch.cat([(u_o * v_c).sum(-1, keepdim=True),
                            torch.einsum("bkd,bd->bk", u_neg, v_c)], 1)
        return F.cross_entropy(scores, torch.zeros(len(v_c), dtype=torch.long))
    rejects(check_negative_sampling_loss, sampled_softmax, "softmax cross-entropy")


def test_loss_rejects_underflow():
    rejects(check_negative_sampling_loss, make_loss(naive=True), "large scores",
            "F.logsigmoid")


def test_loss_rejects_non_tensors_and_detached():
    rejects(check_negative_sampling_loss, lambda *a: make_loss()(*a).item(), "returned a float")
    rejects(check_negative_sampling_loss, lambda *a: make_loss()(*a).detach(), "autograd")
    rejects(check_negative_sampling_loss, lambda *a: None, "forget the `return`")



# -- check_analogy -------------------------------------------------------------------------

SEEDS = range(20)  # a wrong answer must be rejected on each of these, not on a lucky one


def make_analogy(exclude="abc", cosine=True, direction=1.0, normalize_offset=True,
                 fill=-float("inf"), dim=-1):
    """3CosAdd written the way a reader would, with one knob per mistake: exclude names the
    query words excluded ("" none, "ab" a and b only), fill their score."""
    def fn(E, words, a, b, c):
        rows = {"a": words.index(a), "b": words.index(b), "c": words.index(c)}
        ia, ib, ic = rows["a"], rows["b"], rows["c"]
        En = F.normalize(E, dim=dim)
        V = En if normalize_offset else E
        target = direction * (V[ib] - V[ia]) + V[ic]
        scores = (En if cosine else E) @ target
        if exclude:
            scores[[rows[r] for r in exclude]] = fill
        return words[int(scores.argmax())]
    return fn


def numpy_loop(E, words, a, b, c):
    """NumPy, float64, a normalized target, and a loop that skips the query words by name."""
    X = E.numpy().astype(np.float64)
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    row = {w: i for i, w in enumerate(words)}
    t = X[row[b]] - X[row[a]] + X[row[c]]
    t = t / np.linalg.norm(t)
    best, best_score = None, -np.inf
    for w, x in zip(words, X):
        if w not in (a, b, c) and float(x @ t) > best_score:
            best, best_score = w, float(x @ t)
    return best


def sum_of_cosines(E, words, a, b, c):
    """cos(d, b) − cos(d, a) + cos(d, c), which is the same score, masked and topk'd."""
    def cos(w):
        return F.cosine_similarity(E, E[words.index(w)].unsqueeze(0), dim=-1)
    scores = cos(b) - cos(a) + cos(c)
    scores = scores.masked_fill(torch.tensor([w in (a, b, c) for w in words]), float("-inf"))
    return words[scores.topk(1).indices.item()]


def via_package(E, words, a, b, c):
    vocab = Vocab(words, np.arange(len(words), 0, -1))
    return package_analogy(E, vocab, a, b, c, k=1)[0][0]


CORRECT = {"torch": make_analogy(), "numpy loop": numpy_loop, "sum of cosines": sum_of_cosines,
           "unnormalized offset, cosine scores": make_analogy(normalize_offset=False),
           "the package": via_package}


def test_analogy_accepts_correct(capsys):
    check_analogy(make_analogy())
    assert "✓ analogy: 12 cases passed" in capsys.readouterr().out


@pytest.mark.parametrize("name", CORRECT)
def test_analogy_accepts_different_correct_answers_on_every_seed(name, capsys):
    for seed in range(50):
        check_analogy(CORRECT[name], seed=seed)
    assert set(capsys.readouterr().out.splitlines()) == {"✓ analogy: 12 cases passed"}


def test_analogy_agrees_with_the_package():
    for _, E, words, a, b, c in _analogy_cases(np.random.default_rng(0), 0):
        vocab = Vocab(words, np.arange(len(words), 0, -1))
        assert package_analogy(E, vocab, a, b, c, k=1)[0][0] == analogy_reference(
            E, words, a, b, c)


def cosmul(E, words, a, b, c):
    """Levy & Goldberg's 3CosMul, with cosines shifted to [0, 1] and ε = 1e-3."""
    En = F.normalize(E, dim=-1)
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    def shifted(i):
        return (En @ En[i] + 1) / 2
    scores = shifted(ib) * shifted(ic) / (shifted(ia) + 1e-3)
    scores[[ia, ib, ic]] = -float("inf")
    return words[int(scores.argmax())]


def first_three_rows(E, words, a, b, c):
    En = F.normalize(E, dim=-1)
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    scores = En @ (En[ib] - En[ia] + En[ic])
    scores[:3] = -float("inf")  # as if a, b and c were always rows 0, 1 and 2
    return words[int(scores.argmax())]


def fourth_best(E, words, a, b, c):
    En = F.normalize(E, dim=-1)
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    scores = En @ (En[ib] - En[ia] + En[ic])
    return words[int(scores.topk(4).indices[3])]  # as if a, b and c were always the top 3


def case_insensitive(E, words, a, b, c):
    En = F.normalize(E, dim=-1)
    ia, ib, ic = (words.index(w) for w in (a, b, c))
    scores = En @ (En[ib] - En[ia] + En[ic])
    query = {a.lower(), b.lower(), c.lower()}
    for i, w in enumerate(words):
        if w.lower() in query:
            scores[i] = -float("inf")
    return words[int(scores.argmax())]


ALL_THREE = ["one of the query words", "exclude all three of a, b and c"]
WRONG_ANALOGIES = {  # name: (wrong answer, fragments its message must contain)
    "exclude none": (make_analogy(exclude=""), ALL_THREE),
    "exclude only c": (make_analogy(exclude="c"), ALL_THREE),
    "exclude only b and c": (make_analogy(exclude="bc"), ALL_THREE),
    "exclude only a and b": (make_analogy(exclude="ab"), ALL_THREE),
    "exclude only a and c": (make_analogy(exclude="ac"), ALL_THREE),
    "excluded with a score of 0": (make_analogy(fill=0.0), [*ALL_THREE, "-inf",
                                                             "0 is not low enough"]),
    "dot product": (make_analogy(cosine=False, normalize_offset=False), ["DOT PRODUCT",
                                                                         "cosine"]),
    "reversed offset": (make_analogy(direction=-1.0), ["wrong way", "b − a + c"]),
    "columns normalized": (make_analogy(dim=0), ["normalized the columns", "dim=-1"]),
    "3CosMul": (cosmul, ["3CosMul", "asks for 3CosAdd"]),
    "the first three rows excluded": (first_three_rows, ["first three rows",
                                                         "words.index(a)"]),
    "the three best skipped": (fourth_best, ["skipped the three best-scoring words"]),
    "case-insensitive exclusion": (case_insensitive, ["differ from a query word only in case"]),
}


@pytest.mark.parametrize("name", WRONG_ANALOGIES)
def test_analogy_rejects_each_mistake_with_its_message_on_every_seed(name):
    wrong, fragments = WRONG_ANALOGIES[name]
    rejects(check_analogy, wrong, *fragments, seeds=SEEDS)


def test_each_typical_mistake_changes_the_answer_in_some_fixed_case():
    """The fixed cases are built for the mistakes: each slip the checker names gives another
    answer than 3CosAdd in at least one of them, each partial exclusion answers a query word in
    at least one, and the accepted unnormalized offset agrees with 3CosAdd in all of them."""
    cases = _analogy_cases(np.random.default_rng(0), 0)[:-2]  # the last two are random
    slips = [_analogy_slips(E, words, a, b, c) for _, E, words, a, b, c in cases]
    for k in range(len(slips[0])):
        assert any(s[k][0] != analogy_reference(E, w, a, b, c)
                   for s, (_, E, w, a, b, c) in zip(slips, cases)), slips[0][k][1]
    for exclude in ("", "a", "b", "c", "ab", "ac", "bc"):
        assert any(analogy_reference(E, w, a, b, c, exclude=exclude or False) in (a, b, c)
                   for _, E, w, a, b, c in cases), exclude
    assert any(analogy_reference(E, w, a, b, c, fill=0.0) in (a, b, c)
               for _, E, w, a, b, c in cases)
    for _, E, w, a, b, c in cases:
        assert make_analogy(normalize_offset=False)(E, w, a, b, c) == analogy_reference(
            E, w, a, b, c)


def test_analogy_rejects_bad_outputs():
    rejects(check_analogy, lambda E, w, a, b, c: 3, "returned the index 3")
    rejects(check_analogy, lambda E, w, a, b, c: [w[3]], "returned a list")
    rejects(check_analogy, lambda E, w, a, b, c: "unicorn", "not one of the words")

    def in_place(E, w, a, b, c):
        E /= E.norm(dim=-1, keepdim=True)
        return make_analogy()(E, w, a, b, c)
    rejects(check_analogy, in_place, "in place")
