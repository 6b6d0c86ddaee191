"""The Transformer block: LayerNorm, the position-wise feed-forward network, and the encoder and
decoder layers built from attention, residual connections and normalization.

Each layer has two forms behind one switch, ``norm_first``:

- post-norm (the original paper, PyTorch's default): x = Norm(x + Sublayer(x))
- pre-norm (GPT-2 and most modern models):           x = x + Sublayer(Norm(x))

Parameter names mirror PyTorch's ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer``
(``self_attn``, ``norm1``, ``linear1`` …) except that the feed-forward layers live in a
:class:`FeedForward` called ``ffn`` and the decoder's cross-attention is called ``cross_attn``
(PyTorch: ``multihead_attn``). :func:`copy_weights_from_torch` / :func:`copy_weights_to_torch`
translate those two names, so the layers and stacks here can be checked against PyTorch's.

Masks are bool, True = may attend (see :mod:`minformer.masks`).

Every layer and stack also takes ``n_kv_heads`` (grouped-query attention: that many key/value
heads, None for one per query head) and ``rope`` (rotary positions in self-attention; a
decoder's cross-attention never rotates: its queries and keys come from different sequences).
See :class:`~minformer.multihead.MultiHeadAttention`.
"""

import re

import torch
import torch.nn.functional as F
from torch import nn

from . import validate
from .multihead import AttentionCache, MultiHeadAttention
from .validate import number, positive_int

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class LayerNorm(nn.Module):
    """LayerNorm(x) = γ ⊙ (x - μ) / √(σ² + ε) + β, with μ and σ² the mean and (biased)
    variance of each token's d features.

    x: (..., d). Returns (..., d). Parameters ``weight`` = γ (d,) and ``bias`` = β (d,), named
    as in ``nn.LayerNorm``.
    """

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        positive_int(d, "d")
        number(eps, "eps", low=0.0, low_open=True)
        self.d, self.eps = d, eps
        self.weight = nn.Parameter(torch.ones(d))  # γ
        self.bias = nn.Parameter(torch.zeros(d))  # β

    def forward(self, x):
        validate.tensor(x, "x", floating=True)
        if x.dtype not in (self.weight.dtype, torch.bfloat16, torch.float16):
            validate.same_dtype(x=x, weight=self.weight)  # half inputs mix (autocast does)
        if x.ndim == 0 or x.shape[-1] != self.d:
            raise ValueError(f"LayerNorm({self.d}) got input of shape {tuple(x.shape)}; "
                             f"the last axis must have size {self.d}")
        return F.layer_norm(x, (self.d,), self.weight, self.bias, self.eps)  # (..., d)

    def reference(self, x):
        """The formula written out, step by step (chapter 7). ``forward`` computes the same
        numbers in PyTorch's fused kernel, which is several times faster with its backward
        pass; tests/test_blocks.py checks that the two agree."""
        mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
        var = x.var(dim=-1, unbiased=False, keepdim=True)  # (..., 1)
        return self.weight * (x - mu) / torch.sqrt(var + self.eps) + self.bias  # (..., d)


def _activation(activation):
    if callable(activation):
        return activation
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)} or a callable; "
                         f"got {activation!r}")
    return _ACTIVATIONS[activation]


class FeedForward(nn.Module):
    """FFN(x) = act(x W₁ + b₁) W₂ + b₂, applied to every position separately.

    W₁ (d_model, d_ff), b₁ (d_ff,), W₂ (d_ff, d_model), b₂ (d_model,): the biases are vectors,
    broadcast over positions. x: (..., t, d_model). Returns (..., t, d_model).
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation="relu"):
        super().__init__()
        positive_int(d_model, "d_model")
        positive_int(d_ff, "d_ff")  # d_ff = 0 would make FFN(x) = b₂, a constant
        number(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        self.linear1 = nn.Linear(d_model, d_ff)
        self.activation = _activation(activation)
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        validate.tensor(x, "x", floating=True)
        if x.ndim == 0 or x.shape[-1] != self.linear1.in_features:
            raise ValueError(f"FeedForward(d_model={self.linear1.in_features}) got x of shape "
                             f"{tuple(x.shape)}; the last axis must have size "
                             f"{self.linear1.in_features}")
        h = self.activation(self.linear1(x))  # (..., t, d_ff)
        return self.linear2(self.dropout(h))  # (..., t, d_model)


class LayerCache:
    """The KV cache of one layer: its self-attention's keys and values of every token so far
    and, in a decoder layer, its cross-attention's keys and values of the encoder memory,
    computed once (:class:`~minformer.multihead.AttentionCache`)."""

    def __init__(self, cross: bool = True):
        self.self_attn = AttentionCache()
        self.cross_attn = AttentionCache(static=True) if cross else None

    def reorder(self, index):
        """Keep batch rows ``index`` (batch',) in that order (beam search)."""
        for cache in (self.self_attn, self.cross_attn):
            if cache is not None:
                cache.reorder(index)

    @property
    def nbytes(self) -> int:
        """Bytes of the keys and values held (self-attention and cross-attention)."""
        return sum(c.nbytes for c in (self.self_attn, self.cross_attn) if c is not None)


class EncoderLayer(nn.Module):
    """Self-attention then feed-forward, each wrapped in a residual connection and LayerNorm.

    forward(x (batch, t, d_model), mask bool broadcastable to (batch, heads, t, t)) → (batch, t,
    d_model). The usual encoder mask is ``padding_mask(...)`` of shape (batch, 1, 1, t).
    With a :class:`LayerCache` (causal stacks: DecoderOnly), x holds only the new tokens and the
    mask is (…, t_new, cache length + t_new).
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False, activation="relu", eps: float = 1e-5, *,
                 n_kv_heads: int | None = None, rope: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, n_kv_heads=n_kv_heads,
                                            rope=rope)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1, self.norm2 = LayerNorm(d_model, eps), LayerNorm(d_model, eps)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def _sa(self, x, mask, cache=None):
        kv = None if cache is None else cache.self_attn
        return self.dropout1(self.self_attn(x, mask=mask, cache=kv))  # (batch, t, d_model)

    def _ff(self, x):
        return self.dropout2(self.ffn(x))  # (batch, t, d_model)

    def forward(self, x, mask=None, cache: LayerCache | None = None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask, cache)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, mask, cache))
        return self.norm2(x + self._ff(x))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the encoder's output, feed-forward; each wrapped
    in a residual connection and LayerNorm.

    forward(x (batch, t, d_model), memory (batch, s, d_model), mask, memory_mask):
    ``mask`` (self-attention) broadcastable to (batch, heads, t, t), usually
    ``causal_mask(t) & padding_mask(target lengths)``; ``memory_mask`` (cross-attention)
    broadcastable to (batch, heads, t, s), usually ``padding_mask(source lengths)``.
    In cross-attention the queries come from the decoder (x) and the keys and values from the
    encoder (memory). Returns (batch, t, d_model), and the cross-attention weights
    (batch, heads, t, s) if need_weights.
    With a :class:`LayerCache`, x holds only the new tokens, ``mask`` is (…, t_new, cache
    length + t_new), and the memory's keys and values are projected on the first call only.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.1,
                 norm_first: bool = False, activation="relu", eps: float = 1e-5, *,
                 n_kv_heads: int | None = None, rope: bool = False):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout, n_kv_heads=n_kv_heads,
                                            rope=rope)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout, n_kv_heads=n_kv_heads)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1, self.norm2, self.norm3 = (LayerNorm(d_model, eps) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout) for _ in range(3))

    def _sa(self, x, mask, cache=None):
        kv = None if cache is None else cache.self_attn
        return self.dropout1(self.self_attn(x, mask=mask, cache=kv))  # (batch, t, d_model)

    def _ca(self, x, memory, memory_mask, need_weights, cache=None):
        kv = None if cache is None else cache.cross_attn
        if need_weights:
            y, A = self.cross_attn(x, memory, mask=memory_mask, need_weights=True, cache=kv)
            return self.dropout2(y), A  # (batch, t, d_model), (batch, heads, t, s)
        return self.dropout2(self.cross_attn(x, memory, mask=memory_mask, cache=kv)), None

    def _ff(self, x):
        return self.dropout3(self.ffn(x))  # (batch, t, d_model)

    def forward(self, x, memory, mask=None, memory_mask=None, need_weights: bool = False,
                cache: LayerCache | None = None):
        if cache is not None and cache.cross_attn is None:
            raise ValueError("a decoder layer needs a LayerCache(cross=True)")
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask, cache)
            y, A = self._ca(self.norm2(x), memory, memory_mask, need_weights, cache)
            x = x + y
            x = x + self._ff(self.norm3(x))
        else:
            x = self.norm1(x + self._sa(x, mask, cache))
            y, A = self._ca(x, memory, memory_mask, need_weights, cache)
            x = self.norm2(x + y)
            x = self.norm3(x + self._ff(x))
        return (x, A) if need_weights else x


def _stack(layer_cls, n_layers, d_model, n_heads, d_ff, dropout, norm_first, activation,
           final_norm, eps, n_kv_heads, rope):
    """The n_layers copies of ``layer_cls`` and the optional final LayerNorm (None if off;
    default: only for pre-norm) shared by :class:`Encoder` and :class:`Decoder`."""
    positive_int(n_layers, "n_layers")
    layers = nn.ModuleList(
        layer_cls(d_model, n_heads, d_ff, dropout, norm_first, activation, eps,
                  n_kv_heads=n_kv_heads, rope=rope)
        for _ in range(n_layers)
    )
    final_norm = norm_first if final_norm is None else final_norm
    return layers, (LayerNorm(d_model, eps) if final_norm else None)


def _layer_caches(cache, n_layers: int):
    """[None] * n_layers without a cache; else the cache's list of n_layers LayerCaches."""
    if cache is None:
        return [None] * n_layers
    caches = list(cache)
    if len(caches) != n_layers or not all(isinstance(c, LayerCache) for c in caches):
        raise ValueError(f"cache must hold one LayerCache per layer ({n_layers})")
    return caches


class Encoder(nn.Module):
    """N encoder layers, then a final LayerNorm ``norm`` if ``final_norm`` (default: only for
    pre-norm, whose last layer's output is otherwise never normalized).

    forward(x (batch, t, d_model), mask) → (batch, t, d_model). Keys as in
    ``nn.TransformerEncoder``: ``layers.0.…``, ``norm.…``.
    """

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 dropout: float = 0.1, norm_first: bool = False, activation="relu",
                 final_norm: bool | None = None, eps: float = 1e-5, *,
                 n_kv_heads: int | None = None, rope: bool = False):
        super().__init__()
        self.layers, self.norm = _stack(EncoderLayer, n_layers, d_model, n_heads, d_ff, dropout,
                                        norm_first, activation, final_norm, eps, n_kv_heads,
                                        rope)

    def forward(self, x, mask=None, cache=None):
        """cache: None, or one :class:`LayerCache` per layer (incremental causal decoding)."""
        caches = _layer_caches(cache, len(self.layers))
        for layer, c in zip(self.layers, caches):
            x = layer(x, mask, c)
        return x if self.norm is None else self.norm(x)


class Decoder(nn.Module):
    """N decoder layers, then a final LayerNorm ``norm`` if ``final_norm`` (default: pre-norm).

    forward(x (batch, t, d_model), memory (batch, s, d_model), mask, memory_mask) → (batch, t,
    d_model), and with need_weights also the list of each layer's cross-attention weights
    (batch, heads, t, s).
    """

    def __init__(self, n_layers: int, d_model: int, n_heads: int, d_ff: int,
                 dropout: float = 0.1, norm_first: bool = False, activation="relu",
                 final_norm: bool | None = None, eps: float = 1e-5, *,
                 n_kv_heads: int | None = None, rope: bool = False):
        super().__init__()
        self.layers, self.norm = _stack(DecoderLayer, n_layers, d_model, n_heads, d_ff, dropout,
                                        norm_first, activation, final_norm, eps, n_kv_heads,
                                        rope)

    def forward(self, x, memory, mask=None, memory_mask=None, need_weights: bool = False,
                cache=None):
        """cache: None, or one :class:`LayerCache` per layer (incremental decoding)."""
        weights = []
        caches = _layer_caches(cache, len(self.layers))
        for layer, c in zip(self.layers, caches):
            if need_weights:
                x, A = layer(x, memory, mask, memory_mask, need_weights=True, cache=c)
                weights.append(A)
            else:
                x = layer(x, memory, mask, memory_mask, cache=c)
        x = x if self.norm is None else self.norm(x)
        return (x, weights) if need_weights else x


# PyTorch's parameter names → ours (a name component at the start or after a dot).
_TORCH_TO_OURS = [(r"(^|\.)multihead_attn\.", r"\1cross_attn."),
                  (r"(^|\.)linear1\.", r"\1ffn.linear1."),
                  (r"(^|\.)linear2\.", r"\1ffn.linear2.")]
_OURS_TO_TORCH = [(r"(^|\.)cross_attn\.", r"\1multihead_attn."),
                  (r"(^|\.)ffn\.linear1\.", r"\1linear1."),
                  (r"(^|\.)ffn\.linear2\.", r"\1linear2.")]


def _rename(state: dict, rules) -> dict:
    out = {}
    for key, value in state.items():
        for pattern, repl in rules:
            key = re.sub(pattern, repl, key)
        out[key] = value
    return out


def _settings(module: nn.Module) -> list[tuple[str, object]]:
    """What, besides the weights, decides what a module computes, in module order: each layer's
    ``norm_first`` and activation, each LayerNorm's eps (ours or PyTorch's)."""
    names = {F.relu: "relu", F.gelu: "gelu"}
    out = []
    for name, m in module.named_modules():
        name = f"{name}." if name else ""
        if isinstance(m, (EncoderLayer, DecoderLayer)):
            act = m.ffn.activation
            out += [(f"{name}norm_first", m.norm_first), (f"{name}activation", names.get(act, act))]
        elif isinstance(m, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
            act = m.activation
            act = {nn.ReLU: "relu", nn.GELU: "gelu"}.get(type(act), names.get(act, act))
            out += [(f"{name}norm_first", m.norm_first), (f"{name}activation", act)]
        elif isinstance(m, (LayerNorm, nn.LayerNorm)):
            out.append((f"{name}eps", m.eps))
    return out


def _check_same_settings(ours: nn.Module, theirs: nn.Module) -> None:
    """ValueError naming the first setting that differs: copying a gelu layer's weights into a
    relu one (or post-norm into pre-norm) gives a module that computes something else."""
    for (name, a), (_, b) in zip(_settings(ours), _settings(theirs)):
        if a != b:
            raise ValueError(f"the modules differ in {name}: ours has {a!r}, PyTorch's "
                             f"{b!r}; build ours with the same setting before copying weights")


def copy_weights_from_torch(ours: nn.Module, theirs: nn.Module) -> nn.Module:
    """Load the weights of a PyTorch module (``nn.LayerNorm``, ``nn.MultiheadAttention``,
    ``nn.TransformerEncoderLayer``/``DecoderLayer``, ``nn.TransformerEncoder``/``Decoder``) into
    ours of the same sizes. Strict: a missing or unexpected weight raises, and so (ValueError)
    does a layer whose activation, ``norm_first`` or LayerNorm eps differ. Returns ``ours``."""
    _check_same_settings(ours, theirs)
    ours.load_state_dict(_rename(theirs.state_dict(), _TORCH_TO_OURS))
    return ours


def copy_weights_to_torch(ours: nn.Module, theirs: nn.Module) -> nn.Module:
    """The reverse of :func:`copy_weights_from_torch`: our weights into PyTorch's module, with
    the same checks. Returns ``theirs``."""
    _check_same_settings(ours, theirs)
    theirs.load_state_dict(_rename(ours.state_dict(), _OURS_TO_TORCH))
    return theirs
