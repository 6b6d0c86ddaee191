"""Checker for chapter 13 (training a translator): one step of beam search.

``fn(scores, logprobs, k) -> (beam, token, new_scores)`` for one sentence: ``scores`` (k,) is
log P of each prefix in the beam (``-inf`` marks an empty slot, as at the first step, where
only one prefix exists), ``logprobs`` (k, V) is log P(next token | prefix) for each prefix.
Every prefix is extended by every token, and the k best of the k·V candidates survive, best
first: ``beam`` (k,) is the prefix each survivor extends, ``token`` (k,) the token it adds and
``new_scores`` (k,) its log-probability, ``scores[beam] + logprobs[beam, token]``.

The fixed cases each separate one typical mistake (k greedy searches side by side, ranking by
the new token alone, the flat index split with the wrong size or the wrong way round, the k
worst instead of the k best, the prefix's score left out of the new scores, probabilities
instead of log-probabilities, survivors out of order), the random cases have no ties, and a
chain of three steps on a toy model with k = V² must find the most probable three-token output.
"""

import itertools

import torch

from ._core import call, checker, fail, random_name


def _reference(scores, logprobs, k):
    """The right answer: the k best of the k·V candidates, best first."""
    V = logprobs.shape[-1]
    cand = (scores[:, None] + logprobs).reshape(-1)  # (k·V,) log P of every extended prefix
    new_scores, flat = cand.topk(k)  # sorted, best first
    return flat // V, flat % V, new_scores


def _log_softmax_rows(g, k, V, spread=3.0):
    return (spread * torch.randn(k, V, generator=g, dtype=torch.float64)).log_softmax(-1)


def _cases(seed):
    g = torch.Generator().manual_seed(130)
    lp = _log_softmax_rows
    first = lp(g, 1, 6).expand(3, 6).clone()  # the first step: three copies of one prefix
    one_rich = torch.tensor([-0.2, -6.0, -7.0], dtype=torch.float64)  # one prefix far ahead
    close = torch.tensor([-1.0, -1.3, -1.1, -2.0], dtype=torch.float64)
    cases = [
        ("the first step: one prefix (scores [0, -inf, -inf]), k = 3, V = 6",
         torch.tensor([0.0, float("-inf"), float("-inf")], dtype=torch.float64), first, 3),
        ("one prefix far ahead of the others: all three survivors may extend it, k = 3, V = 5",
         one_rich, lp(g, 3, 5, spread=1.0), 3),
        ("four close prefixes, k = 4, V = 7", close, lp(g, 4, 7), 4),
        ("k = 2, V = 9 (V is not k)", torch.tensor([-0.5, -0.9], dtype=torch.float64),
         lp(g, 2, 9), 2),
        ("k = 5, V = 3 (more beams than tokens)",
         -torch.rand(5, generator=g, dtype=torch.float64) * 3, lp(g, 5, 3), 5),
        ("k = 1: greedy search", torch.tensor([-2.0], dtype=torch.float64), lp(g, 1, 8), 1),
    ]
    rg = torch.Generator().manual_seed(seed)
    k, V = 2 + seed % 4, 3 + (seed // 4) % 9
    cases.append((random_name(seed, f"k = {k}, V = {V}"),
                  -3 * torch.rand(k, generator=rg, dtype=torch.float64), lp(rg, k, V), k))
    return cases


# ---------------------------------------------------------------------------- known mistakes
def _mistakes(scores, logprobs, k):
    """[(beam, token, new_scores) a known mistake returns, what to say)]."""
    V = logprobs.shape[-1]
    cand = (scores[:, None] + logprobs).reshape(-1)  # (k·V,)
    right = _reference(scores, logprobs, k)
    out = []
    best_tok = logprobs.argmax(-1)  # (k,) each prefix's own best token
    greedy = (torch.arange(k), best_tok, scores + logprobs.max(-1).values)
    order = greedy[2].argsort(descending=True)
    out.append((tuple(x[order] for x in greedy),
                "you extended each prefix by its own best token (k greedy searches side by "
                "side); the k survivors are the best of all k·V candidates together, and "
                "several may extend the same prefix"))
    out.append((greedy, "you extended each prefix by its own best token (k greedy searches "
                "side by side); the k survivors are the best of all k·V candidates together, "
                "and several may extend the same prefix"))
    alone, flat = logprobs.reshape(-1).topk(k)
    out.append(((flat // V, flat % V, alone),
                "you ranked the candidates by the new token's log-probability alone; a "
                "candidate's score is its prefix's log P plus the new token's: "
                "scores[:, None] + logprobs"))
    out.append(((flat // V, flat % V, scores[flat // V] + alone),
                "you ranked the candidates by the new token's log-probability alone; a "
                "candidate's score is its prefix's log P plus the new token's: "
                "scores[:, None] + logprobs"))
    top, flat = cand.topk(k)
    for beam, token, what in (
            (flat % V, flat // V, "the wrong way round: beam = flat % V and token = flat // V"),
            (flat // k, flat % k, "by k: flat // k and flat % k"),
            (flat % k, flat // k, "by k, the wrong way round")):
        out.append(((beam, token, top),
                    f"you split the flat index {what}; the candidates were flattened from a "
                    "(k, V) table, row by row, so beam = flat // V and token = flat % V"))
    worst, flat = cand.masked_fill(torch.isinf(cand), float("inf")).topk(k, largest=False)
    out.append(((flat // V, flat % V, worst),
                "you kept the k smallest scores; log-probabilities are ≤ 0, and the best "
                "candidates have the largest (closest to 0): topk(k) takes the largest"))
    out.append(((right[0], right[1], logprobs[right[0], right[1]]),
                "the survivors are right, but new_scores holds only the new token's log P; add "
                "the prefix's: scores[beam] + logprobs[beam, token]"))
    out.append(((right[0], right[1], right[2].exp()),
                "the survivors are right, but new_scores are probabilities; keep "
                "log-probabilities (beam search adds them, step after step)"))
    out.append(((right[0], right[1], cand.log_softmax(-1)[right[0] * V + right[1]]),
                "the survivors are right, but you renormalized the candidates (a softmax over "
                "all k·V of them); new_scores are the prefixes' log P: scores[beam] + "
                "logprobs[beam, token], with no renormalization"))
    return out


def _same(got, want):
    return all(g.shape == w.shape and torch.allclose(g.double(), w.double(), atol=1e-9)
               for g, w in zip(got, want))


def _diagnose(got, want, scores, logprobs, k, where):
    for wrong, message in _mistakes(scores, logprobs, k):
        if _same(got, wrong):
            fail(f"on {where}: {message}")
    beam, token, new_scores = got
    rows = set(zip(want[0].tolist(), want[1].tolist()))
    if set(zip(beam.tolist(), token.tolist())) == rows and not torch.allclose(
            new_scores.sort(descending=True).values, want[2]):
        fail(f"on {where}: the right survivors, but new_scores {new_scores.tolist()} should be "
             f"{want[2].tolist()}: each is the prefix's log P plus the new token's, "
             "scores[beam] + logprobs[beam, token]")
    if set(zip(beam.tolist(), token.tolist())) == rows:
        fail(f"on {where}: the right k survivors, in the wrong order; return them best first "
             f"(new_scores descending), as topk does: got new_scores {new_scores.tolist()}")
    if len(set(zip(beam.tolist(), token.tolist()))) < k:
        fail(f"on {where}: a (beam, token) pair appears twice among the survivors; each "
             "candidate may survive once. At the first step the slots with score -inf must "
             "stay -inf (never replace -inf by 0), so that only one prefix's extensions can win")
    fail(f"on {where}: got beam {beam.tolist()}, token {token.tolist()}, new_scores "
         f"{[round(x, 4) for x in new_scores.tolist()]}; expected beam {want[0].tolist()}, "
         f"token {want[1].tolist()}, new_scores {[round(x, 4) for x in want[2].tolist()]}: "
         "add scores[:, None] to logprobs, flatten the (k, V) table, take topk(k), and split "
         "the flat index into beam = flat // V and token = flat % V")


def _as_tensors(out, k, where):
    if not (isinstance(out, (tuple, list)) and len(out) == 3):
        fail(f"on {where}: return three tensors (beam, token, new_scores); got "
             f"{type(out).__name__}")
    beam, token, new_scores = (torch.as_tensor(x) for x in out)
    for name, x in (("beam", beam), ("token", token), ("new_scores", new_scores)):
        if tuple(x.shape) != (k,):
            fail(f"on {where}: {name} has shape {tuple(x.shape)}; expected ({k},): one entry "
                 "per survivor")
    for name, x in (("beam", beam), ("token", token)):
        if x.is_floating_point():
            fail(f"on {where}: {name} holds floats ({x.dtype}); indices are integers: use "
                 "// (floor division), not /")
    return beam.long(), token.long(), new_scores.double()


def _output_scores(table) -> dict:
    """log P of every three-token output of the toy model after token 0, by brute force."""
    V = table.shape[0]
    return {y: float(sum(table[a, b] for a, b in zip((0,) + y[:-1], y)))
            for y in itertools.product(range(V), repeat=3)}


def _best_output(table):
    """The most probable three-token output of the toy model, by brute force, after token 0."""
    scores = _output_scores(table)
    return list(max(scores, key=scores.get))


def _toy_model(seed):
    """A toy 'model': log P(next | last token) from a fixed (V, V) table, V = 4, drawn so that
    greedy search misses the best output and so does ranking by the last step alone, and the
    best output is unique. (Ties are not rare: 0 3 0 and 3 0 0 after token 0 take the same three
    steps, 0→0, 0→3 and 3→0, in another order, so their log P is the same sum.)"""
    g = torch.Generator().manual_seed(seed)
    while True:
        table = _log_softmax_rows(g, 4, 4, spread=2.0)  # (V, V): row = last token
        scores = _output_scores(table)
        ranked = sorted(scores, key=scores.get, reverse=True)
        best, greedy = list(ranked[0]), [int(table[0].argmax())]
        for _ in range(2):
            greedy.append(int(table[greedy[-1]].argmax()))
        top_pair = divmod(int(table.argmax()), 4)  # the likeliest single step anywhere
        margin = scores[ranked[0]] - scores[ranked[1]]
        if greedy != best and top_pair != (best[1], best[2]) and margin > 1e-6:
            return table


@checker("one step of beam search")
def check_beam_step(fn, rng, seed):
    """``fn(scores, logprobs, k) -> (beam, token, new_scores)``: scores (k,) log P of each
    prefix (-inf: an empty slot), logprobs (k, V) log P of each next token; returns the k best
    of the k·V extended prefixes, best first: the prefix each extends, the token it adds, and
    its log P. Then three steps with k = V² on a toy model must find the best three-token output."""
    cases = _cases(seed)
    what = getattr(fn, "__name__", "your function")
    for where, scores, logprobs, k in cases:
        out = call(fn, scores.clone(), logprobs.clone(), k, what=what, where=where)
        got = _as_tensors(out, k, where)
        want = _reference(scores, logprobs, k)
        if not _same(got, want):
            _diagnose(got, want, scores, logprobs, k, where)
    # three steps with k = V² = 16 keep every prefix of two tokens: the search is exact
    table, V = _toy_model(seed), 4
    k = V * V
    scores = torch.full((k,), float("-inf"), dtype=torch.float64)
    scores[0] = 0.0
    last = torch.zeros(k, dtype=torch.long)  # every prefix starts after token 0
    paths = [[] for _ in range(k)]
    where = f"a chain of three steps, k = {k}, on a toy model with V = {V}"
    for _ in range(3):
        out = call(fn, scores, table[last], k, what=what, where=where)
        beam, token, scores = _as_tensors(out, k, where)
        paths = [paths[b] + [t] for b, t in zip(beam.tolist(), token.tolist())]
        last = token
    exact = _best_output(table)
    if paths[0] != exact:
        fail(f"three steps in a row with k = {k} on a toy model with V = {V} keep every "
             f"prefix, so the best survivor must be the most probable output {exact}; "
             f"got {paths[0]}: return the survivors best first, with their new scores, and "
             "feed those scores to the next step")
    return len(cases) + 1
