"""Turning a trained model's logits into text, one token at a time.

- :func:`sample_next` — choose the next token from (batch, vocab) logits: greedily (argmax),
  or by sampling at a temperature, optionally among the top-k tokens only.
- :func:`generate` — autoregressive generation with a decoder-only language model: append the
  chosen token and run the model again, ``max_new_tokens`` times.

For encoder-decoders (translation, chapter 13), through ``source_mask``/``encode``/``decode``:

- :func:`greedy_search` — batched, the most likely token at each step, until ``<eos>``.
- :func:`beam_search` — batched, the k best prefixes per sentence, ranked with GNMT's
  :func:`gnmt_length_penalty`.
- :func:`sequence_scores` — the score beam search ranks by, for any given outputs.
- :func:`loop_tokens` — the tokens that would make an output loop; both searches' ``no_loops``
  forbids them (off by default; ``minformer-translate`` and the page turn it on).

All three searches use a model's KV cache when it has one (``model.supports_cache``, as
:class:`~minformer.transformer.Transformer` and :class:`~minformer.transformer.DecoderOnly`):
each step then feeds only the newest token and reuses the keys and values of the earlier ones
(chapter 14). ``use_cache=False`` re-reads the whole prefix at every step, the reference path;
the two give the same tokens (the logits agree to rounding). Models without a cache
(:class:`~minformer.rnn.Seq2SeqGRU`) always take the reference path.
"""

import math
import numbers

import torch

from . import validate
from .utils import evaluating


def sample_next(logits, temperature: float = 1.0, top_k: int | None = None,
                greedy: bool = False, generator: torch.Generator | None = None):
    """logits (batch, vocab) → next ids (batch,).

    greedy: argmax. Otherwise sample from softmax(logits / temperature), restricted to the
    ``top_k`` highest logits when given: temperature → 0 approaches greedy, temperature = 1 is the
    model's own distribution, larger flattens it. A temperature so small that logits /
    temperature overflows gives its limit, a uniform choice among each row's largest logits
    (greedy when there is one). A row with no token to choose (a NaN, or -inf everywhere; when
    sampling, also a +inf) is a ValueError naming the row.
    """
    if logits.ndim != 2:
        raise ValueError(f"logits must be (batch, vocab); got shape {tuple(logits.shape)}")
    _check_logits(logits, greedy)
    if greedy:
        return logits.argmax(dim=-1)  # (batch,)
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a number; got {temperature!r}")
    if not 0 < temperature < float("inf"):
        raise ValueError(f"temperature must be > 0 and finite (use greedy=True for argmax); got "
                         f"{temperature}")
    scaled = logits.float() / temperature  # (batch, vocab)
    if bool((torch.isinf(scaled) & torch.isfinite(logits)).any()):  # overflowed: the limit
        top = logits.float().max(dim=-1, keepdim=True).values  # (batch, 1)
        scaled = (logits.float() - top) / temperature  # 0 at the largest, -inf or < 0 elsewhere
    logits = scaled
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be a positive int; got {top_k!r}")
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]  # (batch, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = logits.softmax(dim=-1)  # (batch, vocab)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]  # (batch,)


def _check_logits(logits, greedy: bool) -> None:
    """No token can be chosen from a row holding NaN or one that is -inf everywhere; sampling
    also needs no +inf (softmax of it is NaN). ValueError naming the rows."""
    def rows(bad):
        i = bad.nonzero()[:, 0].tolist()
        return f"row{'s' if len(i) > 1 else ''} {', '.join(map(str, i[:5]))}{', …' if len(i) > 5 else ''}"

    nan = logits.isnan().any(dim=-1)  # (batch,)
    if bool(nan.any()):
        raise ValueError(f"logits hold NaN ({rows(nan)} of {tuple(logits.shape)}): there is no token "
                         f"to choose; the model's output is broken (a NaN weight or input, or an "
                         f"overflow)")
    masked = (logits == float("-inf")).all(dim=-1)
    if bool(masked.any()):
        raise ValueError(f"logits are -inf for every token in {rows(masked)} of "
                         f"{tuple(logits.shape)}: every token is masked out, there is none to choose")
    if not greedy:
        pos_inf = (logits == float("inf")).any(dim=-1)
        if bool(pos_inf.any()):
            raise ValueError(f"logits hold +inf ({rows(pos_inf)} of {tuple(logits.shape)}): "
                             f"sampling needs finite logits (greedy=True takes the argmax)")


def _vocab_size(model, decoder_only: bool = False) -> int | None:
    """The size of the vocabulary a model's outputs range over, when it says: its config's
    (``tgt_vocab`` of an encoder-decoder, ``vocab_size``), or a ``tgt_vocab`` attribute
    (:class:`~minformer.rnn.Seq2SeqGRU`). None when unknown: the searches then read it from the
    logits' last axis."""
    config = getattr(model, "config", None)
    for owner, name in ((config, "vocab_size" if decoder_only else "tgt_vocab"), (config, "vocab_size"),
                        (model, "tgt_vocab")):
        v = getattr(owner, name, None) if owner is not None else None
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def _check_in_vocab(vocab: int | None, **ids) -> None:
    """Each named token id must be below ``vocab`` (None: not known yet, nothing to check)."""
    if vocab is None:
        return
    for name, tok in ids.items():
        if tok is not None and tok >= vocab:
            raise ValueError(f"{name}={tok} is not in the model's vocabulary of {vocab} tokens "
                             f"(ids 0..{vocab - 1})")


def _check_output_ids(ids, vocab: int | None) -> None:
    """Every id of the outputs ``ids`` must lie in 0..vocab-1 (vocab None: only ≥ 0)."""
    bad = (ids < 0) if vocab is None else (ids < 0) | (ids >= vocab)
    if bool(bad.any()):
        where = tuple(bad.nonzero()[0].tolist())
        span = "≥ 0" if vocab is None else f"in the model's vocabulary 0..{vocab - 1}"
        raise ValueError(f"ids must hold token ids {span}; got {int(ids[where])} at {where}")


def _cached(model, use_cache: bool) -> bool:
    """Whether a search may use the model's KV cache."""
    if not isinstance(use_cache, bool):
        raise TypeError(f"use_cache must be True or False; got {use_cache!r}")
    return use_cache and bool(getattr(model, "supports_cache", False))


@torch.no_grad()
def generate(model, ids, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, greedy: bool = False, eos_id: int | None = None,
             generator: torch.Generator | None = None, use_cache: bool = True):
    """Extend ``ids`` (batch, t) by up to ``max_new_tokens`` tokens from a decoder-only model
    (``model(ids)`` → (batch, t, vocab) logits), keeping only the last position's logits.
    With the model's KV cache (default, when it has one: ``model(new_ids, cache=...)``) the
    prompt is read once and each step feeds only the newest token; ``use_cache=False`` runs the
    model on the whole prefix at every step. The prefix is cut to the model's ``config.max_len``
    most recent tokens when it grows longer (positions then shift at every step, so from there on
    each step re-reads the cut prefix, cache or not). Stops early when every sequence has
    produced ``eos_id``. ``max_new_tokens`` is an int ≥ 1; ``eos_id`` must lie in the vocabulary.
    Returns (batch, t + new).
    """
    if hasattr(model, "encode") and hasattr(model, "decode"):
        raise TypeError(f"generate extends a prefix with a decoder-only model; "
                        f"{type(model).__name__} is an encoder-decoder: translate with "
                        f"greedy_search or beam_search (src, then the target from <bos>)")
    validate.positive_int(max_new_tokens, "max_new_tokens")
    if eos_id is not None:
        validate.integer(eos_id, "eos_id", minimum=0)
        _check_in_vocab(_vocab_size(model, decoder_only=True), eos_id=eos_id)
    cache = model.new_cache() if _cached(model, use_cache) else None
    max_len = getattr(getattr(model, "config", None), "max_len", None)
    done = torch.zeros(ids.shape[0], dtype=torch.bool, device=ids.device)
    with evaluating(model):
        for _ in range(max_new_tokens):
            fits = max_len is None or ids.shape[1] <= max_len
            if cache is not None and fits:  # feed only what the cache has not seen
                logits = model(ids[:, cache.length:], cache=cache)[:, -1]  # (batch, vocab)
            else:
                context = ids if max_len is None else ids[:, -max_len:]  # (batch, ≤ max_len)
                logits = model(context)[:, -1]  # (batch, vocab): the prediction for the next token
            _check_in_vocab(logits.shape[-1], eos_id=eos_id)
            nxt = sample_next(logits, temperature, top_k, greedy, generator)  # (batch,)
            if eos_id is not None:
                nxt = nxt.masked_fill(done, eos_id)
                done |= nxt == eos_id
            ids = torch.cat([ids, nxt[:, None]], dim=1)  # (batch, t + 1)
            if eos_id is not None and done.all():
                break
    return ids


# ----------------------------------------------------------------------------- encoder-decoders
#
# Translation (chapter 13) decodes with an encoder-decoder instead: the source is read once,
#
#     src_mask = model.source_mask(src)          padding of the source
#     memory   = model.encode(src, src_mask)     whatever the decoder needs to see of the source
#     logits   = model.decode(prefix, memory, src_mask)     (batch, t, vocab) for a target prefix
#
# and the target grows one token at a time from <bos>. Only these three methods are used, so
# the same searches serve minformer.transformer.Transformer and minformer.rnn.Seq2SeqGRU.
# Outputs follow one convention: ids (batch, t_out) without <bos>, each row ending at its first
# <eos>, padded with pad_id after it; t_out ≤ max_len (a row that never emits <eos> stops there).


# The searches divide float32 log-probabilities by lp(|y|): lp may grow to e^44 (half of
# float32's exponent range, ≈ 1.8e19), so that the scores log P / lp stay ordinary float32
# numbers, never inf, NaN or a denormal that has lost its digits. At GNMT's α = 0.6-1 lp stays
# below 200 even at 1000 tokens; the limit refuses only α that would swamp every score.
_MAX_LOG_PENALTY = math.log(torch.finfo(torch.float32).max) / 2


def _lp(length, alpha: float):
    """((5 + length) / 6)^α, unchecked: for α already validated against the longest output."""
    return ((5.0 + length) / 6.0) ** alpha


def _alpha(alpha, name: str) -> float:
    """A length-penalty exponent: a finite number ≥ 0."""
    alpha = validate.number(alpha, name, low=0.0)
    if math.isinf(alpha):
        raise ValueError(f"{name} must be finite; got {alpha}")
    return alpha


def _check_penalty_range(alpha: float, longest: int, name: str) -> None:
    """ValueError if lp(longest) = ((5 + longest) / 6)^α would pass e^_MAX_LOG_PENALTY: α is
    then too large for outputs that long (lp grows with the length, so longest decides)."""
    per_alpha = math.log(5 + longest) - math.log(6)  # log lp / α; 0 at length 1
    if alpha * per_alpha > _MAX_LOG_PENALTY:
        raise ValueError(
            f"{name}={alpha:g} is too large for outputs of up to {longest} tokens: the length "
            f"penalty ((5 + {longest}) / 6)^{alpha:g} = e^{alpha * per_alpha:.4g} would swamp the "
            f"float32 scores log P / lp (its limit is e^{_MAX_LOG_PENALTY:.1f}); use {name} ≤ "
            f"{_MAX_LOG_PENALTY / per_alpha:.3g} (GNMT uses 0.6-1)")


def gnmt_length_penalty(length, alpha: float):
    """GNMT's length penalty lp(|y|) = ((5 + |y|) / 6)^α (Wu et al., 2016).

    A hypothesis is ranked by log P(y | x) / lp(|y|). Log-probabilities only fall as tokens are
    added, so the raw sum favours short outputs; α = 0 keeps the raw sum, α ≈ 0.6-1 evens it out.
    ``length`` is a number ≥ 0 or a tensor of them; |y| counts the generated tokens, <eos>
    included. α must be finite and ≥ 0; a penalty that overflows (α = 10⁶ at length 10) is a
    ValueError, not inf.
    """
    alpha = _alpha(alpha, "alpha")
    if isinstance(length, torch.Tensor):
        if length.dtype == torch.bool or length.is_complex():
            raise TypeError(f"length must hold numbers of tokens; got dtype {length.dtype}")
        bad = ~(length >= 0)  # NaN too
        if bool(bad.any()):
            raise ValueError(f"length must be ≥ 0 (a number of tokens); got {length[bad].flatten()[0].item()} "
                             f"in the tensor of shape {tuple(length.shape)}")
        lp = _lp(length, alpha)
        finite = bool(torch.isfinite(lp).all())
        longest = length.max().item() if length.numel() else 0
    else:
        longest = length = validate.number(length, "length", low=0.0)
        try:
            lp = _lp(length, alpha)
            finite = math.isfinite(lp)
        except OverflowError:
            finite = False
    if not finite:
        raise ValueError(f"the length penalty ((5 + {longest:g}) / 6)^{alpha:g} overflows: alpha={alpha:g} "
                         f"is too large for length {longest:g} (GNMT uses 0.6-1)")
    return lp


def _check_search_args(model, src, max_len, bos_id, eos_id, pad_id, alpha=0.0,
                       eos_optional: bool = False):
    """TypeError for a wrong type, ValueError for a wrong value (:mod:`minformer.validate`).
    Token ids must lie in the model's vocabulary when it says how large it is (else the first
    step's logits tell: :func:`_check_in_vocab`). Returns pad_id (the model's by default)."""
    for name in ("source_mask", "encode", "decode"):
        if not callable(getattr(model, name, None)):
            raise TypeError(f"model must have source_mask, encode and decode methods (an encoder-decoder "
                            f"such as Transformer or Seq2SeqGRU); {type(model).__name__} has no {name}")
    _src_ids(src, "src")
    validate.positive_int(max_len, "max_len")
    limit = getattr(getattr(model, "config", None), "max_len", None)
    if limit is not None and max_len > limit:
        raise ValueError(f"max_len={max_len} is longer than the model's positions cover "
                         f"(config.max_len={limit})")
    if pad_id is None:
        pad_id = getattr(getattr(model, "config", None), "pad_id", getattr(model, "pad_id", None))
        if pad_id is None:
            raise ValueError(f"{type(model).__name__} names no pad_id: pass pad_id=")
    for name, tok in (("bos_id", bos_id), ("eos_id", eos_id), ("pad_id", pad_id)):
        if not (name == "eos_id" and tok is None and eos_optional):
            validate.integer(tok, name, minimum=0)
    _check_in_vocab(_vocab_size(model), bos_id=bos_id, eos_id=eos_id, pad_id=pad_id)
    _check_penalty_range(_alpha(alpha, "length_penalty"), max_len, "length_penalty")
    return int(pad_id)


def _check_bool(value, name: str) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False; got {value!r}")


def _src_ids(x, name):
    validate.tensor(x, name, ndim=2)
    if x.is_floating_point() or x.is_complex() or x.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids; got dtype {x.dtype}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(x.shape)}")


def _min_lengths(src, pad_id: int, ratio, slack) -> torch.Tensor | None:
    """(batch,) the fewest tokens each output must have before it may end: ⌊ratio · s⌋ - slack
    (at least 0) for a source of s real tokens (<eos> included); None when ratio is 0."""
    ratio = validate.number(ratio, "min_length_ratio", low=0.0, high=4.0)
    slack = validate.integer(slack, "min_length_slack", minimum=0)
    if ratio == 0:
        return None
    lengths = (src != pad_id).sum(dim=1).tolist()  # in Python floats, as the JavaScript engine
    return torch.tensor([max(0, math.floor(ratio * s) - slack) for s in lengths], device=src.device)


def _forbid_early_eos(logits, min_len, t: int, eos_id, exempt=None) -> torch.Tensor:
    """logits (rows, vocab) with <eos> at -inf in the rows whose output, t tokens so far, is
    still shorter than its min_len (rows,), except the rows ``exempt`` (bool (rows,) or None)."""
    if min_len is None or eos_id is None:
        return logits
    early = t < min_len
    if exempt is not None:
        early = early & ~exempt
    if bool(early.any()):
        logits = logits.clone()
        logits[early, eos_id] = float("-inf")
    return logits


LOOP_COPIES = 3  # the guard forbids the token that would complete this many copies in a row


def loop_tokens(ids, copies: int = LOOP_COPIES) -> list[int]:
    """The tokens that, appended to ``ids`` (a list of token ids), would end it with ``copies``
    back-to-back copies of one n-gram, for any n ≥ 1 (a loop: *itoitoito*, *a la a la a la*).
    Token v does so for unit length n when the last copies·n - 1 tokens of ``ids`` repeat with
    period n, and v is the token n places back. Sorted, each once; empty when nothing loops.
    ``ids`` may be a list of ints or a 1-D integer tensor; ``copies`` an int ≥ 2."""
    if isinstance(copies, bool) or not isinstance(copies, numbers.Integral) or copies < 2:
        raise ValueError(f"copies must be an int >= 2 (copies in a row that make a loop); "
                         f"got {copies!r}")
    if isinstance(ids, torch.Tensor):
        if ids.ndim != 1 or ids.is_floating_point() or ids.is_complex():
            raise ValueError(f"ids must be a 1-D integer tensor or a list of ints; got a "
                             f"{ids.dtype} tensor of shape {tuple(ids.shape)}")
        ids = ids.tolist()
    elif isinstance(ids, (str, bytes)) or not isinstance(ids, (list, tuple)):
        raise TypeError(f"ids must be a list of token ids; got {type(ids).__name__}")
    elif not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in ids):
        bad = next(v for v in ids if not isinstance(v, numbers.Integral) or isinstance(v, bool))
        raise TypeError(f"ids must hold ints (token ids); got {bad!r}")
    ids = [int(v) for v in ids]
    m, found = len(ids), set()
    for n in range(1, (m + 1) // copies + 1):  # copies · n - 1 tokens must be there
        if ids[m + 1 - copies * n: m - n] == ids[m + 1 - (copies - 1) * n: m]:
            found.add(ids[m - n])
    return sorted(found)


def _guard_loops(logits, ys, live, min_len):
    """The loop guard: logits (rows, vocab) with every token of :func:`loop_tokens` at -inf in
    the rows ``live`` (a list of bools) of the prefixes ys (rows, 1 + t), <bos> first. A row
    whose output has begun to repeat (a token is forbidden) may also end before the length
    floor ``min_len`` (rows,) or None: it is returned among the rows exempt from the floor, for
    :func:`_forbid_early_eos`. Returns (logits, exempt rows as bools (rows,), or None)."""
    banned = [(r, v) for r, out in enumerate(ys[:, 1:].tolist()) if live[r]
              for v in loop_tokens(out)]
    if not banned:
        return logits, None
    logits = logits.clone()
    r_idx = torch.tensor([r for r, _ in banned], device=logits.device)
    v_idx = torch.tensor([v for _, v in banned], device=logits.device)
    logits[r_idx, v_idx] = float("-inf")
    if min_len is None:
        return logits, None
    exempt = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
    exempt[r_idx] = True
    return logits, exempt


def _next_logits(model, ys, memory, src_mask, cache):
    """(batch, vocab) logits for the token after the prefixes ys (batch, t): from the whole
    prefix, or with a cache from its last token alone."""
    if cache is None:
        return model.decode(ys, memory, src_mask)[:, -1]
    return model.decode(ys[:, -1:], memory, src_mask, cache=cache)[:, -1]


@torch.no_grad()
def greedy_search(model, src, max_len: int, bos_id: int, eos_id: int | None,
                  pad_id: int | None = None, use_cache: bool = True, min_length_ratio: float = 0.0,
                  min_length_slack: int = 0, no_loops: bool = False):
    """Batched greedy decoding: at every step each sentence takes its most likely next token.

    src: (batch, s) source ids, right-padded with the model's pad id. A sentence that has emitted
    ``eos_id`` is finished: it receives only ``pad_id`` after it, and the search stops when every
    sentence is finished or after ``max_len`` tokens (eos_id=None: no sentence finishes early,
    every row gets exactly ``max_len`` tokens, as timing runs want). pad_id defaults to the model's
    (``config.pad_id`` or ``pad_id``). Runs in eval mode and restores the model's mode.
    use_cache: feed only the newest token at each step through the model's KV cache, when it has
    one (the same tokens; ``False``: re-read the whole prefix). min_length_ratio = ρ ∈ [0, 4] and
    min_length_slack = b ≥ 0: a sentence may not end (emit <eos>) before it has ⌊ρ · s⌋ - b
    tokens, s the real tokens of its source (ρ = 0: no minimum). no_loops: the loop guard, off by
    default (the shipped command and page turn it on): no sentence may take a token of
    :func:`loop_tokens` (three back-to-back copies of an n-gram), and one whose output has begun
    to repeat may end before the floor. Returns ids (batch, t_out) without <bos>.
    """
    pad_id = _check_search_args(model, src, max_len, bos_id, eos_id, pad_id, eos_optional=True)
    min_len = _min_lengths(src, pad_id, min_length_ratio, min_length_slack)  # (batch,) or None
    _check_bool(no_loops, "no_loops")
    cache = model.new_cache() if _cached(model, use_cache) else None
    with evaluating(model):
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long, device=src.device)  # (batch, 1)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for t in range(max_len):
            logits = _next_logits(model, ys, memory, src_mask, cache)  # (batch, vocab)
            _check_in_vocab(logits.shape[-1], bos_id=bos_id, eos_id=eos_id, pad_id=pad_id)
            exempt = None
            if no_loops:
                logits, exempt = _guard_loops(logits, ys, (~done).tolist(), min_len)
            logits = _forbid_early_eos(logits, min_len, t, eos_id, exempt)
            nxt = logits.argmax(dim=-1).masked_fill(done, pad_id)  # finished rows only pad
            ys = torch.cat([ys, nxt[:, None]], dim=1)  # (batch, t + 1)
            if eos_id is not None:
                done |= nxt == eos_id
                if bool(done.all()):
                    break
    return ys[:, 1:]


@torch.no_grad()
def beam_search(model, src, beam_size: int, max_len: int, bos_id: int, eos_id: int,
                length_penalty: float = 0.0, pad_id: int | None = None, return_scores: bool = False,
                use_cache: bool = True, min_length_ratio: float = 0.0, min_length_slack: int = 0,
                no_loops: bool = False):
    """Batched beam search: keep the ``beam_size`` best prefixes of every sentence at each step.

    Score of an output y: log P(y | x) / lp(|y|), with lp = :func:`gnmt_length_penalty` at
    α = ``length_penalty`` (0: the plain log-probability). At each step every prefix in the beam
    is extended by every vocabulary token and each sentence keeps its k best candidates. A prefix
    that has emitted <eos> is finished: it stays in the beam with its score fixed (extended by
    pad at log-probability 0) and competes with the live ones, and the best finished output of
    each sentence is also kept aside, so a finished output that later drops out of the beam is
    not lost. A sentence is done when no live prefix can still beat its best finished output: a
    live prefix's log P only falls, so its score can at most reach log P / lp(max_len). The
    search stops when every sentence is done, or after ``max_len`` tokens (then an unfinished
    prefix may be the answer). beam_size = 1 is greedy search.

    Beam search is better than greedy on most sentences but not on all: the prefix greedy would
    take can fall out of the beam. All beams of all sentences run as one batch of batch·k rows:
    the source is repeated k times and encoded once. With the model's KV cache (``use_cache``,
    default) each step feeds only the newest token, and the cache's rows are re-ordered with the
    beams (``cache.reorder``); without it each step re-reads the whole prefix. Returns ids
    (batch, t_out) without <bos>, as :func:`greedy_search`; with return_scores=True also their
    scores (batch,), as :func:`sequence_scores` computes them.

    ``length_penalty`` must be finite, ≥ 0 and small enough that lp(max_len) stays below e^44,
    so that no score overflows or loses its digits: α ≤ 48.4 at max_len = 10, ≤ 11.8 at 256 (GNMT
    uses 0.6-1). bos_id, eos_id and pad_id must lie in the model's vocabulary.
    min_length_ratio = ρ ∈ [0, 4], min_length_slack = b ≥ 0: no prefix of a sentence may end (emit
    <eos>) before it has ⌊ρ · s⌋ - b tokens, s the real tokens of its source (ρ = 0: no minimum).
    no_loops: the loop guard, as in :func:`greedy_search`, on every live prefix.
    """
    pad_id = _check_search_args(model, src, max_len, bos_id, eos_id, pad_id, length_penalty)
    validate.positive_int(beam_size, "beam_size")
    min_len = _min_lengths(src, pad_id, min_length_ratio, min_length_slack)  # (B,) or None
    _check_bool(no_loops, "no_loops")
    cache = model.new_cache() if _cached(model, use_cache) else None
    alpha = float(length_penalty)
    B, k, dev = src.shape[0], beam_size, src.device
    first_row = torch.arange(B, device=dev) * k  # sentence b's beams are rows b·k … b·k + k - 1
    with evaluating(model):
        src_k = src.repeat_interleave(k, dim=0)  # (B·k, s)
        src_mask = model.source_mask(src_k)
        memory = model.encode(src_k, src_mask)
        ys = torch.full((B * k, 1), bos_id, dtype=torch.long, device=dev)  # (B·k, 1) the prefixes
        logp = torch.zeros(B, k, device=dev)  # log P of each beam's prefix
        logp[:, 1:] = float("-inf")  # at the start the k beams are the same: keep one alive
        finished = torch.zeros(B, k, dtype=torch.bool, device=dev)
        length = torch.zeros(B, k, dtype=torch.long, device=dev)  # |y|, <eos> included
        best = torch.full((B,), float("-inf"), device=dev)  # best finished score of each sentence
        best_ids = torch.full((B, max_len), pad_id, dtype=torch.long, device=dev)
        best_len = torch.zeros(B, dtype=torch.long, device=dev)
        min_len_k = None if min_len is None else min_len.repeat_interleave(k)  # (B·k,)
        for t in range(max_len):
            logits = _next_logits(model, ys, memory, src_mask, cache).float()  # (B·k, V)
            V = logits.shape[-1]
            _check_in_vocab(V, bos_id=bos_id, eos_id=eos_id, pad_id=pad_id)
            exempt = None
            if no_loops:
                logits, exempt = _guard_loops(logits, ys, (~finished).view(-1).tolist(),
                                              min_len_k)
            logits = _forbid_early_eos(logits, min_len_k, t, eos_id, exempt)
            step = logits.log_softmax(dim=-1).view(B, k, V)  # log P(next token | prefix)
            # a finished beam has one continuation, pad, at log-probability 0: its score stays
            stay = torch.full((V,), float("-inf"), device=dev)
            stay[pad_id] = 0.0
            step = torch.where(finished[..., None], stay, step)
            cand = logp[..., None] + step  # (B, k, V): log P of every extended prefix
            cand_len = length + (~finished).long()  # (B, k)
            ranked = cand / _lp(cand_len, alpha)[..., None]  # (B, k, V)
            top = ranked.view(B, k * V).topk(k, dim=-1).indices  # (B, k) of the k·V candidates
            beam, tok = top // V, top % V  # the beam each survivor extends, and by which token
            logp = cand.view(B, k * V).gather(1, top)
            length = cand_len.gather(1, beam)
            finished = finished.gather(1, beam) | (tok == eos_id)
            rows = (beam + first_row[:, None]).view(-1)  # (B·k,) the prefix each row extends
            ys = torch.cat([ys[rows], tok.view(-1, 1)], dim=1)
            if cache is not None:
                cache.reorder(rows)
            # keep aside each sentence's best finished output
            score = logp / _lp(length, alpha)  # (B, k)
            top_done, which = score.masked_fill(~finished, float("-inf")).max(dim=1)  # (B,)
            better = top_done > best
            best = torch.where(better, top_done, best)
            best_len = torch.where(better, length.gather(1, which[:, None])[:, 0], best_len)
            best_ids[better, :ys.shape[1] - 1] = ys[which + first_row][better, 1:]
            # done: no live prefix can reach the best finished score, even at length max_len
            reachable = logp.masked_fill(finished, float("-inf")).max(dim=1).values
            if bool((best >= reachable / _lp(max_len, alpha)).all()):
                break
    # a sentence with no finished output (it reached max_len) takes its best live prefix
    score = logp / _lp(length, alpha)
    top_live, which = score.masked_fill(finished, float("-inf")).max(dim=1)  # (B,)
    live = top_live > best
    best = torch.where(live, top_live, best)
    best_len = torch.where(live, length.gather(1, which[:, None])[:, 0], best_len)
    best_ids[live, :ys.shape[1] - 1] = ys[which + first_row][live, 1:]
    ids = best_ids[:, :int(best_len.max())]  # (B, t_out)
    return (ids, best) if return_scores else ids


@torch.no_grad()
def sequence_scores(model, src, ids, bos_id: int, eos_id: int, length_penalty: float = 0.0):
    """The score beam search ranks by, for given outputs: log P(y | x) / lp(|y|).

    ids: (batch, t) outputs in the searches' convention (no <bos>; tokens after the first <eos>
    are ignored). |y| counts the tokens up to and including the first <eos> (all of them when
    there is none). Teacher forcing computes every token's probability in one decoder pass.
    Returns (batch,) float scores.
    """
    _src_ids(src, "src")
    _src_ids(ids, "ids")
    if ids.shape[0] != src.shape[0]:
        raise ValueError(f"ids must be (batch, t) outputs for the {tuple(src.shape)} source; "
                         f"got shape {tuple(ids.shape)}")
    for name, tok in (("bos_id", bos_id), ("eos_id", eos_id)):
        validate.integer(tok, name, minimum=0)
    vocab = _vocab_size(model)
    _check_in_vocab(vocab, bos_id=bos_id, eos_id=eos_id)
    _check_output_ids(ids, vocab)
    length_penalty = _alpha(length_penalty, "length_penalty")
    _check_penalty_range(length_penalty, ids.shape[1], "length_penalty")
    with evaluating(model):
        src_mask = model.source_mask(src)
        memory = model.encode(src, src_mask)
        prefix = torch.cat([torch.full_like(ids[:, :1], bos_id), ids[:, :-1]], dim=1)  # (batch, t)
        logp = model.decode(prefix, memory, src_mask).float().log_softmax(dim=-1)  # (batch, t, V)
        _check_in_vocab(logp.shape[-1], bos_id=bos_id, eos_id=eos_id)
        _check_output_ids(ids, logp.shape[-1])
        token_logp = logp.gather(2, ids[..., None])[..., 0]  # (batch, t)
    is_eos = (ids == eos_id).long()
    keep = (is_eos.cumsum(dim=1) - is_eos) == 0  # up to and including the first <eos>
    total = torch.where(keep, token_logp, 0.0).sum(dim=1)  # (batch,) log P(y | x)
    return total / _lp(keep.sum(dim=1), length_penalty)

