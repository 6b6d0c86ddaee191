"""Multi-head attention: h scaled dot-product attentions side by side, each on its own learned
projections of size d_head = d_model / h, concatenated and mixed by an output projection.

Two versions compute the same function:

- :class:`MultiHeadAttentionLoop` — the teaching version: a list of heads, each with its own
  W_Q, W_K, W_V, run one after the other in a Python loop and concatenated.
- :class:`MultiHeadAttention` — the fused version used everywhere else: all heads' projections in
  one matrix, heads split by a reshape, one batched attention call.

Parameters follow ``nn.MultiheadAttention`` exactly (``in_proj_weight`` (3·d_model, d_model),
``in_proj_bias``, ``out_proj``), so ``ours.load_state_dict(theirs.state_dict())`` copies weights
from PyTorch's module and ``theirs.load_state_dict(ours.state_dict())`` copies them back.
PyTorch stores a linear map as y = x Wᵀ + b, so in the book's notation (Q = X W_Q, W_Q of shape
(d_model, d_model)) W_Q = in_proj_weight[:d_model].T, W_K = in_proj_weight[d_model:2·d_model].T,
W_V = in_proj_weight[2·d_model:].T; head i uses columns i·d_head … (i+1)·d_head - 1 of each.

Two options of the fused module are the changes of recent models (chapter 14):

- ``n_kv_heads`` = g < h: grouped-query attention. Only g key and value heads are projected,
  each shared by h/g query heads (query head i uses key/value head i // (h/g)), so the KV cache
  holds g heads instead of h. ``in_proj_weight`` is then ((h + 2g)·d_head, d_model): rows
  [0:d_model) are W_Q, the next g·d_head rows W_K, the last g·d_head rows W_V. g = h (the
  default) is multi-head attention with exactly the parameters above.
- ``rope=True``: rotary positions (:func:`minformer.positional.rotary`). Each head's queries and
  keys are rotated by their positions before the dot product, so the scores depend on the
  offset between query and key; with a KV cache the new tokens sit at positions cache length …,
  and the cached keys were rotated once, at their own positions.

Masks are bool, True = may attend (see :mod:`minformer.masks`), broadcastable to
(batch, heads, t_q, t_k). Padding goes in the same ``mask`` (``padding_mask(...)``,
(batch, 1, 1, t_k)), combined with a causal mask by ``&``. There is no separate
``key_padding_mask`` argument: PyTorch's has the opposite convention (True = padding) and
mixing the two is a classic bug.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import validate
from .attention import (
    _all_finite,
    _masked_softmax,
    _mix,
    as_float32_if_half,
    check_mask,
    float32_products,
    scaled_dot_product_attention,
    warn_empty_rows,
)
from .positional import rotary


def _check_heads(d_model: int, n_heads: int) -> int:
    validate.positive_int(d_model, "d_model")
    validate.positive_int(n_heads, "n_heads")
    if d_model % n_heads != 0:
        raise ValueError(
            f"d_model={d_model} is not divisible by n_heads={n_heads}: each head gets "
            f"d_head = d_model / n_heads features, which must be a whole number"
        )
    return d_model // n_heads


def check_kv_heads(n_heads: int, n_kv_heads: int | None) -> int:
    """The number g of key/value heads: n_heads when None, else an int ≥ 1 dividing n_heads
    (each key/value head serves n_heads / g query heads). ValueError naming both otherwise."""
    if n_kv_heads is None:
        return n_heads
    validate.integer(n_kv_heads, "n_kv_heads")
    if n_kv_heads < 1 or n_heads % n_kv_heads:
        raise ValueError(
            f"n_kv_heads={n_kv_heads} must be a positive divisor of n_heads={n_heads}: each "
            f"key/value head is shared by n_heads / n_kv_heads query heads"
        )
    return n_kv_heads


def check_rope(rope, d_model: int, n_heads: int) -> bool:
    """rope must be True or False; True needs an even d_head = d_model / n_heads (features are
    rotated in pairs). ValueError naming the sizes otherwise."""
    if not isinstance(rope, bool):
        raise TypeError(f"rope must be True or False; got {rope!r}")
    if rope and (d_model // n_heads) % 2:
        raise ValueError(f"rotary positions rotate features in pairs, so d_head = d_model / "
                         f"n_heads = {d_model} / {n_heads} = {d_model // n_heads} must be even")
    return rope


def repeat_kv(X, n_heads: int):
    """Key or value heads (batch, g, t, d_head) → (batch, n_heads, t, d_head): head j repeated
    n_heads / g times in a row, so that query head i meets key/value head i // (n_heads / g).
    n_heads must be a multiple of g (ValueError naming both otherwise)."""
    validate.tensor(X, "X", ndim=4)
    n_heads = validate.positive_int(n_heads, "n_heads")
    g = X.shape[1]
    if g == 0 or n_heads % g:
        raise ValueError(f"n_heads={n_heads} must be a multiple of X's {g} key/value heads "
                         f"(X {tuple(X.shape)} is (batch, g, t, d_head))")
    return X.repeat_interleave(n_heads // X.shape[1], dim=1)  # (batch, n_heads, t, d_head)


def _check_inputs(x_q, x_kv, d_model: int, weight=None):
    """Inputs are (batch, t, d_model), or (t, d_model) for one unbatched sequence, of the
    weights' dtype."""
    for name, x in (("x_q", x_q), ("x_kv", x_kv)):
        validate.tensor(x, name, floating=True)
        if x.ndim not in (2, 3) or x.shape[-1] != d_model:
            raise ValueError(
                f"{name} must be (batch, t, d_model={d_model}) or (t, d_model); "
                f"got shape {tuple(x.shape)}"
            )
        if x.shape[-2] == 0:
            raise ValueError(f"empty sequence: {name} has shape {tuple(x.shape)} (t = 0)")
    if x_q.ndim != x_kv.ndim or (x_q.ndim == 3 and x_q.shape[0] != x_kv.shape[0]):
        raise ValueError(
            f"x_q and x_kv must have the same batch size: x_q {tuple(x_q.shape)}, "
            f"x_kv {tuple(x_kv.shape)}"
        )
    if weight is not None:
        validate.same_dtype(x_q=x_q, x_kv=x_kv, weights=weight)


class MultiHeadAttention(nn.Module):
    """Fused multi-head attention, batch first, weight-compatible with ``nn.MultiheadAttention``.

    Self-attention (``x_kv`` None or the same tensor as ``x_q``) makes Q, K, V with one fused
    (d_model → 3·d_model) projection. Cross-attention (queries from the decoder, keys and values
    from the encoder) uses the Q rows of the same matrix on ``x_q`` and its fused K, V rows on
    ``x_kv``.

    n_kv_heads: g key/value heads shared by groups of n_heads / g query heads (grouped-query
    attention; None: g = n_heads). rope: rotate queries and keys by their positions
    (:func:`~minformer.positional.rotary`) instead of relying on positions added to the tokens.
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True,
                 n_kv_heads: int | None = None, rope: bool = False):
        super().__init__()
        self.d_head = _check_heads(d_model, n_heads)
        self.n_kv_heads = check_kv_heads(n_heads, n_kv_heads)
        self.rope = check_rope(rope, d_model, n_heads)
        validate.number(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.d_kv = self.n_kv_heads * self.d_head  # width of K and of V: d_model when g = h
        # rows [0:d), [d:d+d_kv), [d+d_kv:d+2·d_kv) are the Q, K, V projections (PyTorch's
        # layout and names; (3·d_model, d_model) without grouping)
        self.in_proj_weight = nn.Parameter(torch.empty(d_model + 2 * self.d_kv, d_model))
        if bias:
            self.in_proj_bias = nn.Parameter(torch.empty(d_model + 2 * self.d_kv))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.reset_parameters()

    def reset_parameters(self):
        """PyTorch's initialization: Xavier-uniform in-projection, zero biases."""
        nn.init.xavier_uniform_(self.in_proj_weight)
        if self.in_proj_bias is not None:
            nn.init.zeros_(self.in_proj_bias)
            nn.init.zeros_(self.out_proj.bias)

    def _project(self, x_q, x_kv, self_attention: bool):
        """Q (batch, t_q, d_model), K and V (batch, t_k, d_kv), d_kv = n_kv_heads·d_head."""
        W, b, d, d_kv = self.in_proj_weight, self.in_proj_bias, self.d_model, self.d_kv
        if self_attention:  # one matmul for all three
            qkv = F.linear(x_q, W, b)  # (batch, t, d_model + 2·d_kv)
            return qkv.split((d, d_kv, d_kv), dim=-1)  # (batch, t, d_model), 2 × (batch, t, d_kv)
        b_q, b_kv = (None, None) if b is None else (b[:d], b[d:])
        Q = F.linear(x_q, W[:d], b_q)  # (batch, t_q, d_model)
        kv = F.linear(x_kv, W[d:], b_kv)  # (batch, t_k, 2·d_kv)
        K, V = kv.split(d_kv, dim=-1)  # 2 × (batch, t_k, d_kv)
        return Q, K, V

    def _split_heads(self, X):
        """(batch, t, heads·d_head) → (batch, heads, t, d_head): n_heads heads for Q,
        n_kv_heads for K and V."""
        B, t, width = X.shape
        heads = width // self.d_head
        return X.view(B, t, heads, self.d_head).transpose(1, 2)  # (batch, heads, t, d_head)

    def _heads(self, x_q, x_kv, self_attention: bool, start: int = 0):
        """Q (batch, n_heads, t_q, d_head), K and V (batch, n_kv_heads, t_k, d_head); with
        rope, Q and K rotated as tokens at positions start, start + 1, …"""
        Q, K, V = (self._split_heads(X) for X in self._project(x_q, x_kv, self_attention))
        if self.rope:
            Q, K = rotary(Q, start), rotary(K, start)  # same shapes, rotated per head
        return Q, K, V

    def forward(self, x_q, x_kv=None, mask=None, need_weights: bool = False,
                allow_empty_rows: bool = False, cache: "AttentionCache | None" = None):
        """x_q: (batch, t_q, d_model) queries' tokens; x_kv: (batch, t_k, d_model) keys' and
        values' tokens (default x_q: self-attention). Unbatched (t, d_model) inputs work too.
        mask: bool, True = may attend, of shape (t_q, t_k) or (batch | 1, heads | 1, t_q | 1,
        t_k) — e.g. causal_mask(t), padding_mask(lengths) or their ``&``; a (batch, t_k) or
        (batch, 1, t_k) mask is refused (it would be read along other axes).
        In self-attention, a mask that leaves a query no key warns once (usually a flipped
        convention) unless allow_empty_rows=True; such queries output zeros.
        cache: an :class:`AttentionCache` for incremental decoding (batched inputs only). In
        self-attention x_q holds only the new tokens; their keys and values are appended to the
        cache and the queries attend to all t_k = cache length + t_q of them, so the mask is
        (…, t_q, t_k). A ``static`` cache (cross-attention) projects x_kv the first time and
        reuses those keys and values afterwards.
        Returns Y (batch, t_q, d_model), and the per-head weights A (batch, heads, t_q, t_k) if
        need_weights (average over axis 1 for PyTorch's ``average_attn_weights=True``).
        """
        if cache is not None:
            return self._forward_cached(x_q, x_kv, mask, need_weights, cache)
        self_attention = x_kv is None or x_kv is x_q
        x_kv = x_q if x_kv is None else x_kv
        _check_inputs(x_q, x_kv, self.d_model, self.in_proj_weight)
        unbatched = x_q.ndim == 2
        if unbatched:
            x_q, x_kv = x_q.unsqueeze(0), x_kv.unsqueeze(0)  # (1, t, d_model)
        B, t_q, t_k = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
        if mask is not None:
            check_mask(mask, (B, self.n_heads, t_q, t_k))
            warn_empty_rows(mask, self_attention, allow_empty_rows, t_q)
        Q, K, V = self._heads(x_q, x_kv, self_attention)
        Y, A = self._attend(Q, K, V, mask, need_weights)
        if unbatched:
            Y = Y.squeeze(0)  # (t_q, d_model)
            A = A.squeeze(0) if need_weights else None  # (heads, t_q, t_k)
        return (Y, A) if need_weights else Y

    def _attend(self, Q, K, V, mask, need_weights: bool):
        """Q (batch, heads, t_q, d_head), K and V (batch, kv_heads, t_k, d_head) → the output
        projection of the heads' results, Y (batch, t_q, d_model), and A (batch, heads, t_q,
        t_k) if need_weights (else None). Query head i reads key/value head i // (heads /
        kv_heads)."""
        B, t_q = Q.shape[0], Q.shape[2]
        p = self.dropout if self.training else 0.0
        A = None
        gqa = K.shape[1] != Q.shape[1]  # grouped: SDPA repeats K and V heads itself
        options = dict(dropout_p=p, enable_gqa=True) if gqa else dict(dropout_p=p)
        # a NaN or inf in a value row the mask hides would leak through its zero weight in a
        # plain product (fused kernels included): such calls take the explicit path's _mix
        hidden_bad = mask is not None and not _all_finite(V)
        if need_weights or hidden_bad:  # the explicit path: materializes A
            if gqa:
                K, V = repeat_kv(K, self.n_heads), repeat_kv(V, self.n_heads)  # (b, h, t_k, d_head)
            dtype = Q.dtype
            with float32_products(Q):
                Q, K, V = as_float32_if_half(Q, K, V)  # float16 scores would overflow
                scores = (Q / math.sqrt(self.d_head)) @ K.transpose(-2, -1)  # (b, h, t_q, t_k)
                A = _masked_softmax(scores, mask)  # (batch, heads, t_q, t_k)
                A = F.dropout(A, p) if p > 0 else A
                Y = _mix(A, V, mask)  # A @ V: (batch, heads, t_q, d_head)
            Y, A = Y.to(dtype), A.to(dtype)  # no-ops unless float16
            A = A if need_weights else None
        elif mask is None:  # the fast path: PyTorch's fused kernel
            Y = F.scaled_dot_product_attention(Q, K, V, **options)
        else:  # same mask convention (True = may attend)
            has_key = mask.any(dim=-1, keepdim=True)  # (..., t_q, 1)
            if bool(has_key.all()):  # the usual case: every query sees some key
                Y = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, **options)
            else:  # a query with no key would give NaN on some kernels (CUDA): let it attend
                # everywhere, then zero its output
                Y = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask | ~has_key,
                                                   **options)
                Y = Y * has_key  # (batch, heads, t_q, d_head), zero rows where nothing was visible
        Y = Y.transpose(1, 2).reshape(B, t_q, self.d_model)  # (batch, t_q, heads·d_head)
        return self.out_proj(Y), A  # (batch, t_q, d_model)

    def _forward_cached(self, x_q, x_kv, mask, need_weights: bool, cache: "AttentionCache"):
        """:meth:`forward` with a cache: keys and values of earlier calls are reused."""
        if not isinstance(cache, AttentionCache):
            raise TypeError(f"cache must be an AttentionCache; got {type(cache).__name__}")
        if cache.static and x_kv is None:
            raise ValueError("a static (cross-attention) cache needs x_kv, the encoder memory")
        if cache.static and self.rope:
            raise ValueError("rotary positions are for self-attention: a static (cross-attention) "
                             "cache has no positions shared by queries and keys")
        x_kv = x_q if x_kv is None else x_kv
        _check_inputs(x_q, x_kv, self.d_model, self.in_proj_weight)
        if x_q.ndim != 3:
            raise ValueError(f"a cache needs batched (batch, t, d_model) inputs; got x_q "
                             f"{tuple(x_q.shape)}")
        W, b, d = self.in_proj_weight, self.in_proj_bias, self.d_model
        if cache.static and cache.K is not None:  # cross-attention, later steps: queries only
            Q = self._split_heads(F.linear(x_q, W[:d], None if b is None else b[:d]))
        else:  # the new tokens sit at positions cache.length, cache.length + 1, …
            Q, K_new, V_new = self._heads(x_q, x_kv, not cache.static, start=cache.length)
            cache.append(K_new, V_new)  # (batch, kv_heads, t_k, d_head) from now on
        if cache.K.shape[0] != x_q.shape[0]:
            raise ValueError(f"the cache holds {cache.K.shape[0]} sequences but x_q has "
                             f"{x_q.shape[0]}; reorder it with cache.reorder(index)")
        if mask is not None:
            check_mask(mask, (x_q.shape[0], self.n_heads, x_q.shape[1], cache.length))
        Y, A = self._attend(Q, cache.K, cache.V, mask, need_weights)
        return (Y, A) if need_weights else Y


class AttentionCache:
    """The keys and values one attention module has already computed, kept between decoding
    steps so that each step projects only its new tokens (the KV cache).

    ``K``, ``V``: (batch, kv_heads, t, d_head), None before the first call (kv_heads =
    n_kv_heads: grouped-query attention keeps fewer heads; with rotary positions the keys are
    stored rotated, at their own positions).
    static=False (self-attention): every call appends the new tokens' keys and values.
    static=True (cross-attention): the first call projects the encoder memory once; later
    calls reuse it.
    """

    def __init__(self, static: bool = False):
        self.static = bool(static)
        self.K = self.V = None

    @property
    def length(self) -> int:
        """t, the number of keys held."""
        return 0 if self.K is None else self.K.shape[-2]

    @property
    def nbytes(self) -> int:
        """Bytes held by K and V: 2 · batch · kv_heads · t · d_head · bytes per number."""
        return 0 if self.K is None else self.K.nbytes + self.V.nbytes

    def append(self, K_new, V_new):
        """K_new, V_new: (batch, kv_heads, t_new, d_head), put after the keys and values held."""
        if self.K is None or self.static:
            self.K, self.V = K_new, V_new
        else:
            self.K = torch.cat([self.K, K_new], dim=-2)  # (batch, kv_heads, t + t_new, d_head)
            self.V = torch.cat([self.V, V_new], dim=-2)

    def reorder(self, index):
        """Keep the batch rows ``index`` (batch',) in that order: beam search calls this when
        beams are re-ranked, so each row's cache follows its prefix."""
        if self.K is not None:
            self.K, self.V = self.K.index_select(0, index), self.V.index_select(0, index)


class AttentionHead(nn.Module):
    """One head: its own projections W_Q, W_K, W_V (d_model → d_head), then scaled dot-product
    attention. ``W_Q.weight`` is (d_head, d_model), the transpose of the book's W_Q."""

    def __init__(self, d_model: int, d_head: int, bias: bool = True):
        super().__init__()
        self.W_Q = nn.Linear(d_model, d_head, bias=bias)
        self.W_K = nn.Linear(d_model, d_head, bias=bias)
        self.W_V = nn.Linear(d_model, d_head, bias=bias)

    def forward(self, x_q, x_kv, mask=None):
        """x_q (batch, t_q, d_model), x_kv (batch, t_k, d_model), mask (batch, t_q, t_k) or
        broadcastable. Returns Y (batch, t_q, d_head) and A (batch, t_q, t_k)."""
        Q, K, V = self.W_Q(x_q), self.W_K(x_kv), self.W_V(x_kv)  # (batch, t, d_head) each
        return scaled_dot_product_attention(Q, K, V, mask, return_weights=True,
                                            allow_empty_rows=True)  # warned by the caller


class MultiHeadAttentionLoop(nn.Module):
    """Multi-head attention written as a loop over heads (teaching version; no dropout).

    Same function and same number of parameters as :class:`MultiHeadAttention`, held as a list
    of :class:`AttentionHead` plus the output projection ``out_proj``.
    """

    def __init__(self, d_model: int, n_heads: int, bias: bool = True):
        super().__init__()
        self.d_head = _check_heads(d_model, n_heads)
        self.d_model, self.n_heads = d_model, n_heads
        self.heads = nn.ModuleList(
            AttentionHead(d_model, self.d_head, bias) for _ in range(n_heads)
        )
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x_q, x_kv=None, mask=None, need_weights: bool = False):
        """Same arguments and results as :meth:`MultiHeadAttention.forward` (batched inputs)."""
        self_attention = x_kv is None or x_kv is x_q
        x_kv = x_q if x_kv is None else x_kv
        _check_inputs(x_q, x_kv, self.d_model, self.out_proj.weight)
        if x_q.ndim != 3:
            raise ValueError(f"MultiHeadAttentionLoop takes batched (batch, t, d_model) inputs; "
                             f"got x_q {tuple(x_q.shape)}")
        B, t_q, t_k = x_q.shape[0], x_q.shape[1], x_kv.shape[1]
        if mask is not None:
            check_mask(mask, (B, self.n_heads, t_q, t_k))
            warn_empty_rows(mask, self_attention, False, t_q)
            mask = mask.expand(B, self.n_heads, t_q, t_k)  # (batch, heads, t_q, t_k), a view
        outputs, weights = [], []
        for i, head in enumerate(self.heads):
            Y_i, A_i = head(x_q, x_kv, None if mask is None else mask[:, i])  # (batch, t_q, d_head)
            outputs.append(Y_i)
            weights.append(A_i)
        Y = self.out_proj(torch.cat(outputs, dim=-1))  # (batch, t_q, heads·d_head = d_model)
        if need_weights:
            return Y, torch.stack(weights, dim=1)  # A: (batch, heads, t_q, t_k)
        return Y

    @torch.no_grad()
    def load_fused_weights(self, fused: MultiHeadAttention) -> "MultiHeadAttentionLoop":
        """Copy the weights of a fused module (or an ``nn.MultiheadAttention``) into the heads:
        head i gets rows i·d_head … (i+1)·d_head - 1 of each of the Q, K, V blocks."""
        d, dh = self.d_model, self.d_head
        n_heads = getattr(fused, "n_heads", getattr(fused, "num_heads", None))
        if tuple(fused.in_proj_weight.shape) != (3 * d, d) or n_heads != self.n_heads:
            raise ValueError(
                f"cannot copy a fused module with in_proj_weight "
                f"{tuple(fused.in_proj_weight.shape)} and {n_heads} heads into a loop module "
                f"with d_model={d}, n_heads={self.n_heads}"
            )
        W, b = fused.in_proj_weight, fused.in_proj_bias
        if (b is None) != (self.out_proj.bias is None):
            raise ValueError("cannot copy between a module with biases and one without (bias=...)")
        for i, head in enumerate(self.heads):
            for block, linear in enumerate((head.W_Q, head.W_K, head.W_V)):
                rows = slice(block * d + i * dh, block * d + (i + 1) * dh)
                linear.weight.copy_(W[rows])  # (d_head, d_model)
                if linear.bias is not None:
                    linear.bias.copy_(b[rows])  # (d_head,)
        self.out_proj.load_state_dict(fused.out_proj.state_dict())
        return self


def grouped_query_attention(Q, K, V, mask=None):
    """Grouped-query attention (Ainslie et al., 2023): h query heads share g < h key/value
    heads, so a KV cache is h/g times smaller. Query head i uses key/value head i // (h/g).

    Q: (batch, h, t_q, d_head)   K, V: (batch, g, t_k, d_head), h divisible by g. g = h is
    multi-head attention, g = 1 multi-query attention (Shazeer, 2019). mask as for
    :func:`~minformer.attention.scaled_dot_product_attention` on (batch, h, t_q, t_k) scores.
    Returns Y (batch, h, t_q, d_head), the heads before the output projection.
    """
    for name, X in (("Q", Q), ("K", K), ("V", V)):
        validate.tensor(X, name, ndim=4, floating=True)
    h, g = Q.shape[1], K.shape[1]
    if V.shape[1] != g or g == 0 or h % g:
        raise ValueError(f"K and V need the same number of heads g, dividing Q's h; got Q "
                         f"{tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}")
    K, V = K.repeat_interleave(h // g, dim=1), V.repeat_interleave(h // g, dim=1)  # (b, h, …)
    return scaled_dot_product_attention(Q, K, V, mask, allow_empty_rows=True)
