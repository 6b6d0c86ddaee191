"""Checkers for chapter 14 (efficient attention): one block update of online softmax, and one
attention step of a decoder with a KV cache."""

import math

import torch

from ..attention import online_softmax_update, scaled_dot_product_attention
from ..masks import causal_mask
from ._core import CheckFailed, call, checker, fail, random_name


def _state(lead, t_q, d_v, g, empty=False):
    """(m, ell, acc) after some keys were seen (or none: -inf, 0, 0), float64."""
    if empty:
        return (torch.full((*lead, t_q, 1), -math.inf, dtype=torch.float64),
                torch.zeros(*lead, t_q, 1, dtype=torch.float64),
                torch.zeros(*lead, t_q, d_v, dtype=torch.float64))
    m = torch.randn(*lead, t_q, 1, generator=g, dtype=torch.float64)
    ell = 1.0 + 3.0 * torch.rand(*lead, t_q, 1, generator=g, dtype=torch.float64)
    acc = torch.randn(*lead, t_q, d_v, generator=g, dtype=torch.float64)
    return m, ell, acc


def _block(lead, t_q, b, d_v, g, scale=1.0, shift=0.0):
    S = shift + scale * torch.randn(*lead, t_q, b, generator=g, dtype=torch.float64)
    V = torch.randn(*lead, b, d_v, generator=g, dtype=torch.float64)
    return S, V


def _cases(rng, seed):
    g = torch.Generator().manual_seed(14)
    cases = []
    S, V = _block((), 3, 4, 2, g)
    cases.append(("the first block (nothing seen yet: m = -inf, ℓ = 0, acc = 0), t_q=3, b=4",
                  (*_state((), 3, 2, g, empty=True), S, V)))
    S, V = _block((), 3, 5, 2, g, shift=4.0)
    cases.append(("a block whose scores exceed the running max (m must move up)",
                  (*_state((), 3, 2, g), S, V)))
    S, V = _block((), 4, 3, 3, g, shift=-5.0)
    cases.append(("a block whose scores are all below the running max (m stays)",
                  (*_state((), 4, 3, g), S, V)))
    m, ell, acc = _state((), 2, 2, g)
    S, V = _block((), 2, 4, 2, g, scale=30.0, shift=900.0)
    cases.append(("scores near 1000 far above the running maximum (near 0): exp(1000) and "
                  "exp(S - m) overflow, so subtract the new maximum m' first",
                  (m, ell, acc, S, V)))
    S = torch.full((3, 4), -math.inf, dtype=torch.float64)
    cases.append(("a fully masked block (every score -inf) after some keys: nothing changes",
                  (*_state((), 3, 2, g), S, _block((), 3, 4, 2, g)[1])))
    cases.append(("a fully masked first block: still nothing seen, and no NaN",
                  (*_state((), 3, 2, g, empty=True), S.clone(), _block((), 3, 4, 2, g)[1])))
    S, V = _block((), 4, 6, 2, g)
    S[:, ::2] = -math.inf
    S[1] = -math.inf  # query 1 sees nothing in this block
    cases.append(("a partly masked block (some scores -inf, one query sees none)",
                  (*_state((), 4, 2, g), S, V)))
    S, V = _block((2, 3), 5, 4, 3, g)
    cases.append(("a batch of 2 sequences x 3 heads: S (2, 3, 5, 4), V_block (2, 3, 4, 3)",
                  (*_state((2, 3), 5, 3, g), S, V)))
    S, V = _block((), 3, 1, 2, g, shift=1.0)
    cases.append(("a block of one key (b = 1)", (*_state((), 3, 2, g), S, V)))
    S, V = _block((), 3, 4, 2, g)
    S[1] = -math.inf
    cases.append(("a first block where query 1 sees no key and queries 0 and 2 see some",
                  (*_state((), 3, 2, g, empty=True), S, V)))
    m, ell, acc = _state((), 4, 2, g)
    m[2:], ell[2:], acc[2:] = -math.inf, 0.0, 0.0  # queries 2 and 3 have seen nothing yet
    S, V = _block((), 4, 5, 2, g)
    S[1], S[2] = -math.inf, -math.inf
    cases.append(("a later block, four queries: 0 has seen keys and sees more, 1 has seen keys "
                  "and sees none here, 2 has seen none and sees none here, 3 has seen none "
                  "and sees its first here", (m, ell, acc, S, V)))
    m, ell, acc = _state((), 3, 2, g)
    S, V = _block((), 3, 6, 2, g, scale=3.0, shift=800.0)
    cases.append(("scores near 800 (exp(800) overflows even in float64)",
                  (m + 795.0, ell, acc, S, V)))
    m, ell, acc = _state((), 3, 2, g)
    S, V = _block((), 3, 6, 2, g, scale=1e-4, shift=1e4)
    cases.append(("float64 scores near 10^4 that differ by about 10^-4 (float32 cannot hold "
                  "those differences: its spacing at 10^4 is about 10^-3)",
                  (1e4 + 1e-4 * m, ell, acc, S, V)))
    S, V = _block((), 3, 4, 2, g)
    cases.append(("float32 inputs (the result keeps their dtype)",
                  tuple(x.float() for x in (*_state((), 3, 2, g), S, V))))
    rg = torch.Generator().manual_seed(seed)
    t_q, b, d_v = int(rng.integers(1, 7)), int(rng.integers(1, 9)), int(rng.integers(1, 5))
    S, V = _block((), t_q, b, d_v, rg, scale=float(rng.uniform(0.5, 20.0)))
    cases.append((random_name(seed, f"t_q={t_q}, b={b}, d_v={d_v}"),
                  (*_state((), t_q, d_v, rg), S, V)))
    return cases


def _close(x, w):
    """Equal within the rounding of the inputs' dtype: float64 is held to 1e-9, relative."""
    if w.dtype == torch.float64:
        return torch.allclose(x.double(), w, rtol=1e-9, atol=1e-12)
    return torch.allclose(x.double(), w.double(), rtol=1e-5, atol=1e-6)


def _diagnose(args, got, want, where):
    m, ell, acc, S, V = args
    names = ("m", "ℓ (ell)", "acc")
    for name, x, w in zip(names, got, want):
        if x.shape != w.shape:
            fail(f"on {where}: {name} has shape {tuple(x.shape)}, expected {tuple(w.shape)} "
                 "(keep the axis of size 1 of m and ℓ: amax/sum with keepdim=True)")
    if any(bool(x.isnan().any()) for x in got):
        if not (bool(torch.isinf(m).any()) or bool(torch.isinf(S).any())):
            fail(f"on {where}: the result has NaN, from finite inputs: an exp overflowed to inf "
                 "(then inf · 0 or inf - inf is NaN); take exp of the scores minus the new "
                 "maximum m', never of the raw scores nor of the scores minus the old maximum m "
                 "(a block may score far above it)")
        fail(f"on {where}: the result has NaN. exp(-inf - (-inf)) is NaN: while a query has "
             "seen only masked keys its maximum is -inf; shift by 0 there instead of by -inf")
    if S.dtype == torch.float64 and all(
            _close(x, w) or torch.allclose(x.double(), w.double(), rtol=1e-5, atol=1e-6)
            for x, w in zip(got, online_softmax_update(*(a.float() for a in args)))):
        fail(f"on {where}: the result has float32's precision, not float64's: somewhere the "
             "computation went through float32 (a .float(), or a tensor made without "
             "dtype=); compute in the inputs' dtype")
    if not _close(got[0], want[0]):
        fail(f"on {where}: the new m is wrong; it is the larger of the old m and the largest "
             "score of the block, per query: torch.maximum(m, S.amax(-1, keepdim=True))")
    if any(bool(torch.isinf(x).any()) for x in got[1:]):
        fail(f"on {where}: ℓ or acc overflowed to inf: take exp of the scores minus the new "
             "maximum m', never of the raw scores nor of the scores minus the old maximum m "
             "(a block may score far above it)")
    m_new = want[0]
    shift = m_new.masked_fill(m_new == -math.inf, 0.0)
    P = torch.exp(S - shift)
    if not _close(got[1], want[1]):
        if _close(got[1], ell + P.sum(-1, keepdim=True)):
            fail(f"on {where}: ℓ is the old ℓ plus the block's sum; the old ℓ was summed "
                 "relative to the old maximum m, so rescale it by exp(m - m') first")
        fail(f"on {where}: ℓ is wrong: ℓ' = exp(m - m') ℓ + Σ_j exp(S_j - m')")
    if not _close(got[2], want[2]):
        if _close(got[2], acc + P @ V):
            fail(f"on {where}: acc is the old acc plus the block's part; rescale the old acc "
                 "by exp(m - m') as you did ℓ")
        if _close(got[2], want[2] / want[1].clamp_min(1e-300)):
            fail(f"on {where}: acc is already divided by ℓ; keep acc unnormalized "
                 "(Σ exp(s_j - m) v_j): the division by ℓ happens once, after the last block")
        fail(f"on {where}: acc is wrong: acc' = exp(m - m') acc + exp(S - m') V_block")


@checker("online softmax update")
def check_online_softmax_update(fn, rng, seed):
    """``fn(m, ell, acc, S, V_block) -> (m, ell, acc)``: fold one block of scores S
    (..., t_q, b) and values V_block (..., b, d_v) into the running maximum m (..., t_q, 1),
    sum ℓ (..., t_q, 1) and unnormalized output acc (..., t_q, d_v). Then a whole chain of
    blocks must give softmax(scores) V."""
    cases = _cases(rng, seed)
    for where, args in cases:
        out = call(fn, *(a.clone() for a in args), what=getattr(fn, "__name__", "your function"),
                   where=where)
        if not (isinstance(out, (tuple, list)) and len(out) == 3):
            fail(f"on {where}: return the three new statistics (m, ell, acc); got "
                 f"{type(out).__name__}")
        if not all(isinstance(x, torch.Tensor) for x in out):
            fail(f"on {where}: m, ell and acc must be torch tensors")
        dtype = args[3].dtype
        for name, x in zip(("m", "ℓ (ell)", "acc"), out):
            if x.dtype != dtype:
                fail(f"on {where}: {name} has dtype {x.dtype}, but the inputs are {dtype}: keep "
                     "the inputs' dtype (no .float() or .double(), and no new tensor made "
                     "without dtype=)")
        want = online_softmax_update(*args)
        got = tuple(out)
        ok = all(x.shape == w.shape and _close(x, w) for x, w in zip(got, want))
        if not ok:
            _diagnose(args, got, want, where)
    # a chain of blocks, state passed from one call to the next, gives softmax(scores) V
    g = torch.Generator().manual_seed(seed)
    scores = 8.0 * torch.randn(4, 11, generator=g, dtype=torch.float64)
    values = torch.randn(11, 3, generator=g, dtype=torch.float64)
    m, ell, acc = _state((), 4, 3, g, empty=True)
    for j0, j1 in ((0, 4), (4, 5), (5, 11)):
        m, ell, acc = (x.double() for x in fn(m, ell, acc, scores[:, j0:j1], values[j0:j1]))
    if not torch.allclose(acc / ell, scores.softmax(-1) @ values):
        fail("folding the blocks (0-3, 4, 5-10) of an (4, 11) score matrix one after the "
             "other does not give softmax(scores) V: each call must return the state the next "
             "call starts from")
    return len(cases) + 1


# --------------------------------------------------------------------- one step with a KV cache
def _cached_reference(q, k_new, v_new, K_cache, V_cache):
    K = torch.cat([K_cache, k_new], dim=-2)  # (..., t + 1, d_k)
    V = torch.cat([V_cache, v_new], dim=-2)  # (..., t + 1, d_v)
    return scaled_dot_product_attention(q, K, V), K, V


def _cached_cases(rng, seed):
    g = torch.Generator().manual_seed(140)

    def case(lead, t, d_k, d_v, gen, scale=1.0):
        return (scale * torch.randn(*lead, 1, d_k, generator=gen),
                torch.randn(*lead, 1, d_k, generator=gen),
                torch.randn(*lead, 1, d_v, generator=gen),
                torch.randn(*lead, t, d_k, generator=gen),
                torch.randn(*lead, t, d_v, generator=gen))

    cases = [("the first step: an empty cache, K_cache (2, 3, 0, 4)", case((2, 3), 0, 4, 4, g)),
             ("a cache of 5 tokens, batch 2 x 3 heads, d_k = 4, d_v = 6", case((2, 3), 5, 4, 6, g)),
             ("a cache of 1 token, no batch axes, d_k = 8", case((), 1, 8, 8, g)),
             ("sharp scores (q scaled by 20): the new key must be among the keys attended",
              case((1, 2), 6, 4, 4, g, scale=20.0))]
    rg = torch.Generator().manual_seed(seed)
    t, d_k, d_v = int(rng.integers(0, 12)), int(rng.integers(1, 9)), int(rng.integers(1, 9))
    cases.append((random_name(seed, f"a cache of {t} tokens, (2, 2) heads, d_k = {d_k}, "
                                    f"d_v = {d_v}"), case((2, 2), t, d_k, d_v, rg)))
    return cases


def _cached_diagnose(args, got, want, where):
    q, k_new, v_new, K_cache, V_cache = args
    y, K, V = got
    if tuple(K.shape) != tuple(want[1].shape) or tuple(V.shape) != tuple(want[2].shape):
        fail(f"on {where}: the new cache has shapes K {tuple(K.shape)}, V {tuple(V.shape)}; "
             f"expected {tuple(want[1].shape)} and {tuple(want[2].shape)}: append the new key "
             "and value along the time axis, dim=-2 (torch.cat([K_cache, k_new], dim=-2))")
    if not (torch.allclose(K, want[1]) and torch.allclose(V, want[2])):
        if K_cache.shape[-2] and torch.allclose(K[..., 0:1, :], k_new):
            fail(f"on {where}: the new key comes first in the returned cache; append it after "
                 "the cached ones, so that position t holds token t")
        fail(f"on {where}: the returned cache is not [K_cache; k_new] and [V_cache; v_new]")
    if tuple(y.shape) != tuple(want[0].shape):
        fail(f"on {where}: y has shape {tuple(y.shape)}; expected {tuple(want[0].shape)} "
             "(..., 1, d_v): one output for the one new query")
    if K_cache.shape[-2] and torch.allclose(
            y, scaled_dot_product_attention(q, K_cache, V_cache), atol=1e-5):
        fail(f"on {where}: y attends to the cached keys only; append the new key and value "
             "first, then attend: the newest token sees itself too")
    unscaled = torch.softmax(q @ want[1].transpose(-2, -1), dim=-1) @ want[2]
    if torch.allclose(y, unscaled, atol=1e-5):
        fail(f"on {where}: y is right except for the scale: divide the scores by √d_k")
    if torch.allclose(y, want[2][..., -1:, :], atol=1e-5):
        fail(f"on {where}: y is just the new value; it must average all t + 1 values with the "
             "softmax weights of the new query against all t + 1 keys")
    fail(f"on {where}: y is wrong: softmax(q Kᵀ / √d_k) V over the t + 1 keys and values "
         "(the cached ones and the new one); no mask is needed, since the newest token may see "
         "every earlier one")


@checker("attention step with a KV cache")
def check_cached_attention_step(fn, rng, seed):
    """``fn(q, k_new, v_new, K_cache, V_cache) -> (y, K, V)``: q, k_new (..., 1, d_k) and v_new
    (..., 1, d_v) of the newest token, K_cache (..., t, d_k) and V_cache (..., t, d_v) of the t
    tokens before; returns the newest token's attention output y (..., 1, d_v) over all t + 1
    tokens and the grown cache K (..., t + 1, d_k), V (..., t + 1, d_v). Then a loop of steps
    must give causal self-attention."""
    cases = _cached_cases(rng, seed)
    for where, args in cases:
        try:
            out = call(fn, *args, what=getattr(fn, "__name__", "your function"), where=where)
        except CheckFailed as e:
            if "Sizes of tensors must match" in str(e):  # torch.cat along the wrong axis
                fail(f"{e} — the cache grows along the time axis: torch.cat([K_cache, k_new], "
                     "dim=-2)")
            raise
        if not (isinstance(out, (tuple, list)) and len(out) == 3):
            fail(f"on {where}: return three tensors (y, K, V): the output and the grown cache; "
                 f"got {type(out).__name__}")
        if not all(isinstance(x, torch.Tensor) for x in out):
            fail(f"on {where}: y, K and V must be torch tensors")
        want = _cached_reference(*args)
        if not all(x.shape == w.shape and torch.allclose(x, w, atol=1e-5)
                   for x, w in zip(out, want)):
            _cached_diagnose(args, tuple(out), want, where)
    # a loop of steps, each passing its cache to the next, is causal self-attention
    g = torch.Generator().manual_seed(seed)
    Q, K, V = (torch.randn(2, 3, 9, 4, generator=g) for _ in range(3))
    K_cache, V_cache = K[..., :0, :], V[..., :0, :]
    ys = []
    for i in range(9):
        y, K_cache, V_cache = fn(Q[..., i:i + 1, :], K[..., i:i + 1, :], V[..., i:i + 1, :],
                                 K_cache, V_cache)
        ys.append(y)
    causal = scaled_dot_product_attention(Q, K, V, causal_mask(9))  # (2, 3, 9, 4)
    if not torch.allclose(torch.cat(ys, dim=-2), causal, atol=1e-5):
        fail("nine steps in a row, each given the cache the one before returned, do not give "
             "causal self-attention over the nine tokens: return the grown cache, and use it")
    return len(cases) + 1
