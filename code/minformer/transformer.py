"""The three ways to assemble the same blocks into a model (chapter 12):

- :class:`Transformer` — encoder-decoder ("Attention Is All You Need"): the encoder reads the
  source with bidirectional self-attention; the decoder reads the target so far with causal
  self-attention and the source through cross-attention (queries from the decoder, keys and
  values from the encoder's output).
- :class:`EncoderOnly` — one bidirectional stack (BERT): every token sees every other; trained
  to fill in masked tokens.
- :class:`DecoderOnly` — one causal stack (GPT): token i sees tokens ≤ i; trained to predict the
  next token, and generates text one token at a time.

All three are built from one frozen :class:`TransformerConfig` and the layers of
:mod:`minformer.blocks`. Token ids go in, logits come out:

    embedding (vocab, d_model) · √d_model + positions → dropout → layers → logits

With ``positions="rope"`` nothing is added to the embeddings: every self-attention rotates its
queries and keys by their positions instead (:func:`minformer.positional.rotary`). With
``n_kv_heads`` < ``n_heads`` every attention is grouped-query attention, and the KV cache holds
n_kv_heads heads per layer instead of n_heads (``cache.nbytes`` gives its size).

The output projection is *position-wise*: the same (d_model → vocab) map is applied to every
position, giving (batch, t, vocab) logits, and by default its matrix is the embedding matrix
itself (``tie_embeddings``). It is not one big layer over the flattened (t · d_model) sequence.

Masks are bool, True = may attend (:mod:`minformer.masks`); padding is found from ``pad_id``.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .blocks import Decoder, Encoder, LayerCache
from .masks import causal_mask, padding_mask
from .multihead import check_kv_heads, check_rope
from .positional import LearnedPositions, SinusoidalPositions, _check_input
from .validate import integer, number, positive_int, row_index


def _positive_int(config, name):
    positive_int(getattr(config, name), f"TransformerConfig.{name}")


@dataclass(frozen=True)
class TransformerConfig:
    """Every size and switch of a model, checked when made.

    vocab_size      source vocabulary (the only vocabulary of EncoderOnly/DecoderOnly)
    tgt_vocab_size  target vocabulary of the encoder-decoder; None: the same vocabulary as the
                    source (one shared tokenizer), and then one embedding matrix serves source
                    and target (and the output projection too, when ``tie_embeddings``)
    d_model, n_heads, d_ff     width, heads (d_model % n_heads == 0), FFN hidden size
    n_layers        layers of each stack (EncoderOnly, DecoderOnly, the encoder)
    n_decoder_layers  the encoder-decoder's decoder layers (None: n_layers)
    dropout         after embeddings, inside attention, FFN and residual branches
    max_len         longest sequence the positions cover
    norm_first      pre-norm (True) or post-norm (False, the original paper)
    final_norm      LayerNorm after the last layer (None: only for pre-norm, as in GPT-2;
                    nn.Transformer always adds one)
    positions       "sinusoidal" (fixed, added), "learned" (added) or "rope" (rotary: queries
                    and keys rotated in every self-attention, nothing added; d_head even)
    pad_id, bos_id, eos_id     special token ids
    tie_embeddings  output projection = embedding matrix (Press & Wolf, 2017)
    activation      "relu" or "gelu"
    n_kv_heads      key/value heads of every attention (grouped-query attention): a divisor
                    of n_heads, each shared by n_heads / n_kv_heads query heads; None: n_heads
                    (multi-head attention, the same parameters as before the option existed)
    """

    vocab_size: int
    tgt_vocab_size: int | None = None
    d_model: int = 128
    n_heads: int = 4
    d_ff: int = 512
    n_layers: int = 2
    n_decoder_layers: int | None = None
    dropout: float = 0.1
    max_len: int = 256
    norm_first: bool = False
    final_norm: bool | None = None
    positions: str = "sinusoidal"
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    tie_embeddings: bool = True
    activation: str = "relu"
    n_kv_heads: int | None = None

    def __post_init__(self):
        for name in ("vocab_size", "d_model", "n_heads", "d_ff", "n_layers", "max_len"):
            _positive_int(self, name)
        for name in ("tgt_vocab_size", "n_decoder_layers"):
            if getattr(self, name) is not None:
                _positive_int(self, name)
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}: "
                             f"each head gets d_model / n_heads features")
        number(self.dropout, "TransformerConfig.dropout", low=0.0, high=1.0, high_open=True)
        check_kv_heads(self.n_heads, self.n_kv_heads)
        if self.positions not in ("sinusoidal", "learned", "rope"):
            raise ValueError(f"positions must be 'sinusoidal', 'learned' or 'rope'; got "
                             f"{self.positions!r}")
        check_rope(self.positions == "rope", self.d_model, self.n_heads)
        if self.activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu'; got {self.activation!r}")
        for name in ("norm_first", "tie_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False; got {getattr(self, name)!r}")
        if self.final_norm is not None and not isinstance(self.final_norm, bool):
            raise TypeError(f"final_norm must be True, False or None; got {self.final_norm!r}")
        ids = {"pad_id": self.pad_id, "bos_id": self.bos_id, "eos_id": self.eos_id}
        smallest = min(self.vocab_size, self.tgt_vocab or self.vocab_size)
        for name, v in ids.items():
            if not 0 <= integer(v, f"TransformerConfig.{name}") < smallest:
                raise ValueError(f"{name}={v!r} must be an id in the vocabulary "
                                 f"(0 ≤ id < {smallest})")
        if len(set(ids.values())) < 3:
            raise ValueError(f"pad_id, bos_id and eos_id must differ; got {ids}")

    @property
    def tgt_vocab(self) -> int:
        """The target vocabulary size (the source's when shared)."""
        return self.tgt_vocab_size or self.vocab_size

    @property
    def decoder_layers(self) -> int:
        return self.n_decoder_layers or self.n_layers

    @property
    def attention_options(self) -> dict:
        """The attention options every layer gets: n_kv_heads and rope."""
        return dict(n_kv_heads=self.n_kv_heads, rope=self.positions == "rope")


class TokenEmbedding(nn.Module):
    """ids (batch, t) → E[ids] · √d_model + positions, then dropout: (batch, t, d_model).

    E is initialized N(0, 1/d_model), so E[ids] · √d_model has unit-variance features, the
    scale of the sinusoidal positions it is added to, and the tied logits h · Eᵀ start small.
    With ``positions="rope"`` nothing is added (``self.positions`` is None): the attention
    layers rotate queries and keys instead.
    """

    def __init__(self, vocab: int, config: TransformerConfig, positions: nn.Module | None = None):
        super().__init__()
        self.vocab, self.scale = vocab, math.sqrt(config.d_model)
        self.max_len, self.d_model = config.max_len, config.d_model
        self.weight = nn.Parameter(torch.randn(vocab, config.d_model) / self.scale)  # E
        if positions is None and config.positions != "rope":
            cls = SinusoidalPositions if config.positions == "sinusoidal" else LearnedPositions
            positions = cls(config.max_len, config.d_model)
        self.positions = positions
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, ids, start: int = 0):
        """ids (batch, t) at positions start … start + t - 1 (start > 0: new tokens after a
        KV cache's)."""
        x = F.embedding(ids, self.weight) * self.scale  # (batch, t, d_model)
        if self.positions is None:  # rotary: positions enter in attention; same length check
            _check_input(x, self.max_len, self.d_model, start)
        else:
            x = self.positions(x) if start == 0 else self.positions(x, start)
        return self.dropout(x)  # (batch, t, d_model)


def _check_ids(ids, vocab: int, name: str, max_len: int):
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a (batch, t) torch tensor of token ids; got "
                        f"{type(ids).__name__}")
    if ids.ndim != 2:
        raise ValueError(f"{name} must be a (batch, t) tensor of token ids; got shape "
                         f"{tuple(ids.shape)}")
    if ids.dtype.is_floating_point or ids.dtype == torch.bool or ids.is_complex():
        raise TypeError(f"{name} must hold integer token ids; got dtype {ids.dtype}")
    if ids.shape[1] == 0:
        raise ValueError(f"{name} is empty: shape {tuple(ids.shape)}")
    if ids.shape[1] > max_len:
        raise ValueError(f"{name} has t={ids.shape[1]} tokens, more than max_len={max_len}")
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise ValueError(f"{name} holds ids outside the vocabulary 0..{vocab - 1}: "
                         f"min {int(ids.min())}, max {int(ids.max())}")


def _check_source_mask(src_mask, src, pad_id: int) -> None:
    """A source mask given by the caller keeps the package's convention, True = may attend. A
    mask that, in some row, lets a query see a padding key while hiding a real token is read the
    other way (``~model.source_mask(src)``, PyTorch's key_padding_mask): ValueError. A custom
    mask that hides real tokens but no padding, or one over a batch without padding, cannot be
    told from an intended one and passes."""
    if not isinstance(src_mask, torch.Tensor) or src_mask.dtype != torch.bool:
        return  # the attention layers name a mask of the wrong type
    pad = (src == pad_id)[:, None, None, :]  # (batch, 1, 1, s)
    if src_mask.shape[-1] != pad.shape[-1] or not bool(pad.any()):
        return
    try:
        sees_pad = (src_mask & pad).any(dim=-1)  # (batch, …, t_q): a padding key allowed
        hides_real = (~src_mask & ~pad).any(dim=-1)  # … and a real key hidden
    except RuntimeError:  # shapes that do not broadcast: the attention layers name them
        return
    if bool((sees_pad & hides_real).any()):
        raise ValueError("src_mask lets queries attend to padding while hiding real tokens: it "
                         "is in the opposite convention (True = padding, as PyTorch's "
                         "key_padding_mask). minformer's masks are True = may attend: pass "
                         "model.source_mask(src), or ~your_mask")


class KVCache:
    """The KV cache of a whole model for incremental decoding: one
    :class:`~minformer.blocks.LayerCache` per decoder layer (``layers``), and ``keep`` (batch,
    t) bool, True at the real (non-padding) tokens fed so far, so that later queries never
    attend to a padding key. Make one with ``model.new_cache()``; pass it to every step.

    ``length`` is the number of tokens fed so far: the next tokens sit at positions length,
    length + 1, …. ``reorder(index)`` keeps batch rows ``index`` in that order (beam search).
    """

    def __init__(self, n_layers: int, cross: bool):
        positive_int(n_layers, "n_layers")
        self.layers = [LayerCache(cross) for _ in range(n_layers)]
        self.keep = None  # (batch, t) bool

    def __iter__(self):
        return iter(self.layers)

    def __len__(self):
        return len(self.layers)

    @property
    def nbytes(self) -> int:
        """Bytes of every key and value held, all layers: 2 · n_layers · batch · n_kv_heads ·
        length · d_head · bytes per number for a decoder-only model (plus the cross-attention's
        over the source in an encoder-decoder)."""
        return sum(layer.nbytes for layer in self.layers)

    @property
    def length(self) -> int:
        return 0 if self.keep is None else self.keep.shape[1]

    def reorder(self, index):
        """index: (batch',) long, the rows to keep, in order."""
        row_index(index)
        for layer in self.layers:
            layer.reorder(index)
        if self.keep is not None:
            self.keep = self.keep.index_select(0, index)

    def step_mask(self, ids, pad_id: int):
        """Record the new tokens ``ids`` (batch, t_new) and return the self-attention mask of
        their queries over every key so far: (batch, 1, t_new, length) bool, causal (query i,
        at position length - t_new + i, sees keys ≤ its own position) and never a padding key;
        None when that allows everything (one new token, no padding), the fast path."""
        if self.keep is not None and self.keep.shape[0] != ids.shape[0]:
            raise ValueError(f"the cache holds {self.keep.shape[0]} sequences but the new "
                             f"tokens have {ids.shape[0]}; reorder it with cache.reorder(index)")
        start, t_new = self.length, ids.shape[1]
        new_keep = ids != pad_id  # (batch, t_new)
        self.keep = new_keep if self.keep is None else torch.cat([self.keep, new_keep], dim=1)
        if t_new == 1 and bool(self.keep.all()):
            return None
        causal = torch.ones(t_new, start + t_new, dtype=torch.bool, device=ids.device)
        causal = causal.tril(diagonal=start)  # (t_new, length): key j ≤ start + i
        return causal[None, None] & self.keep[:, None, None, :]  # (batch, 1, t_new, length)


def _check_cache(cache, model):
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a KVCache (model.new_cache()); got "
                        f"{type(cache).__name__}")
    if len(cache) != model.n_cached_layers:
        raise ValueError(f"cache has {len(cache)} layers; this model has "
                         f"{model.n_cached_layers} (make it with model.new_cache())")


def _check_config(config, model: str):
    if not isinstance(config, TransformerConfig):
        raise TypeError(f"{model} needs a TransformerConfig; got {type(config).__name__}")


def _project(h, embedding: TokenEmbedding, out: nn.Linear | None):
    """Position-wise output projection: (batch, t, d_model) → (batch, t, vocab)."""
    if out is None:  # tied: logits = h Eᵀ
        return F.linear(h, embedding.weight)  # (batch, t, vocab)
    return out(h)  # (batch, t, vocab)


class Transformer(nn.Module):
    """Encoder-decoder Transformer.

    encode(src (batch, s), src_mask=None) → memory (batch, s, d_model)
    decode(tgt (batch, t), memory, src_mask=None, need_weights=False, cache=None) → logits
        (batch, t, vocab) (and the list of each decoder layer's cross-attention weights
        (batch, heads, t, s)); with ``cache=model.new_cache()`` tgt holds only the new tokens
        (see :meth:`decode`); with ``project=False`` the vectors (batch, t, d_model) before
        the output projection, which ``project(h)`` applies
    forward(src, tgt) = decode(tgt, encode(src)): teacher forcing, all positions in parallel.

    In encode and forward src_mask defaults to :meth:`source_mask` (padding from ``pad_id``),
    shape (batch, 1, 1, s). decode cannot make it, since the memory does not say which source
    positions were padding: there the default None hides no memory position, right only for a
    source without padding, so a padded batch passes ``model.source_mask(src)`` (as forward
    and :mod:`minformer.decode` do). The decoder's self-attention mask is causal & target
    padding, (batch, 1, t, t).
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        _check_config(config, "Transformer")
        c = self.config = config
        self.src_embed = TokenEmbedding(c.vocab_size, c)
        # one shared vocabulary: the source embedding serves the target too
        shared = c.tgt_vocab_size is None
        self.tgt_embed = self.src_embed if shared else TokenEmbedding(c.tgt_vocab, c)
        common = dict(d_model=c.d_model, n_heads=c.n_heads, d_ff=c.d_ff, dropout=c.dropout,
                      norm_first=c.norm_first, activation=c.activation, final_norm=c.final_norm,
                      **c.attention_options)
        self.encoder = Encoder(c.n_layers, **common)
        self.decoder = Decoder(c.decoder_layers, **common)
        self.out = None if c.tie_embeddings else nn.Linear(c.d_model, c.tgt_vocab)

    supports_cache = True  # decode(..., cache=) works: minformer.decode uses it

    @property
    def n_cached_layers(self) -> int:
        return len(self.decoder.layers)

    def new_cache(self) -> KVCache:
        """An empty :class:`KVCache` for :meth:`decode`: self-attention keys and values of
        every decoder layer, and its cross-attention keys and values of the memory."""
        return KVCache(self.n_cached_layers, cross=True)

    def source_mask(self, src):
        """(batch, 1, 1, s) bool: True at real source tokens (src != pad_id)."""
        return padding_mask(tokens=src, pad_id=self.config.pad_id)

    def target_mask(self, tgt):
        """(batch, 1, t, t) bool: causal, and never a padding key."""
        t = tgt.shape[1]
        pad = padding_mask(tokens=tgt, pad_id=self.config.pad_id)  # (batch, 1, 1, t)
        return causal_mask(t, device=tgt.device) & pad  # (batch, 1, t, t)

    def encode(self, src, src_mask=None):
        """memory (batch, s, d_model) of the source ids src (batch, s). src_mask: bool, True =
        may attend (default :meth:`source_mask`); a mask in the opposite convention is refused
        when it lets a query see padding while hiding a real token (a batch without padding
        gives no way to tell)."""
        _check_ids(src, self.config.vocab_size, "src", self.config.max_len)
        if src_mask is None:
            src_mask = self.source_mask(src)
        else:
            _check_source_mask(src_mask, src, self.config.pad_id)
        return self.encoder(self.src_embed(src), src_mask)  # (batch, s, d_model)

    def decode(self, tgt, memory, src_mask=None, need_weights: bool = False,
               cache: KVCache | None = None, project: bool = True):
        """Logits (batch, t, vocab) for the target tokens tgt (batch, t).

        src_mask: :meth:`source_mask` of the source that made ``memory``. The default None
        lets every target position attend to every memory position, padding included: right
        only when the source has no padding (a batch of one sentence, say).

        project=False: the decoder's vectors (batch, t, d_model) before the output projection
        instead (:meth:`project` maps any of them to logits), so that a loss can project only
        the positions it scores.

        Without a cache tgt is the whole prefix from <bos>. With ``cache`` (from
        :meth:`new_cache`) tgt holds only the NEW tokens, at positions cache.length …; their
        keys and values are appended to the cache, the memory's are projected on the first call
        only, and the logits are those of the new tokens alone — the same numbers (to rounding)
        as the uncached decoder's last t positions. memory and src_mask must then keep their
        batch rows in the cache's order (beam search: ``cache.reorder(index)``).
        """
        _check_ids(tgt, self.config.tgt_vocab, "tgt", self.config.max_len)
        if not isinstance(memory, torch.Tensor):
            raise TypeError(f"memory must be a torch tensor; got {type(memory).__name__}")
        if memory.ndim != 3 or memory.shape[0] != tgt.shape[0]:
            raise ValueError(f"memory must be (batch={tgt.shape[0]}, s, d_model); got shape "
                             f"{tuple(memory.shape)}")
        if cache is None:
            y, mask = self.tgt_embed(tgt), self.target_mask(tgt)  # (batch, t, d_model)
        else:
            _check_cache(cache, self)
            y = self.tgt_embed(tgt, start=cache.length)  # (batch, t_new, d_model)
            mask = cache.step_mask(tgt, self.config.pad_id)  # (batch, 1, t_new, length)
        out = self.decoder(y, memory, mask, src_mask, need_weights=need_weights,
                           cache=None if cache is None else cache.layers)
        finish = self.project if project else (lambda h: h)
        if need_weights:
            h, weights = out
            return finish(h), weights
        return finish(out)  # (batch, t, vocab), or (batch, t, d_model) unprojected

    def project(self, h):
        """The output projection: decoder vectors (..., d_model) → logits (..., vocab)."""
        return _project(h, self.tgt_embed, self.out)

    def forward(self, src, tgt, src_mask=None, need_weights: bool = False):
        _check_ids(src, self.config.vocab_size, "src", self.config.max_len)
        src_mask = self.source_mask(src) if src_mask is None else src_mask
        memory = self.encode(src, src_mask)
        return self.decode(tgt, memory, src_mask, need_weights=need_weights)


class _SingleStack(nn.Module):
    """What EncoderOnly and DecoderOnly share: embedding, one stack of encoder layers, the
    output projection. They differ only in ``mask(ids)``."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        _check_config(config, type(self).__name__)
        c = self.config = config
        self.embed = TokenEmbedding(c.vocab_size, c)
        self.layers = Encoder(c.n_layers, c.d_model, c.n_heads, c.d_ff, c.dropout,
                              c.norm_first, c.activation, c.final_norm, **c.attention_options)
        self.out = None if c.tie_embeddings else nn.Linear(c.d_model, c.vocab_size)

    def hidden(self, ids, cache: KVCache | None = None):
        """The contextual vectors (batch, t, d_model) before the output projection (with a
        cache: of the new tokens ids only, see :meth:`DecoderOnly.forward`)."""
        _check_ids(ids, self.config.vocab_size, "ids", self.config.max_len)
        if cache is None:
            return self.layers(self.embed(ids), self.mask(ids))  # (batch, t, d_model)
        if not self.supports_cache:
            raise TypeError(f"{type(self).__name__} has no KV cache: every token attends to "
                            "later ones, so new tokens change the earlier keys' layers")
        _check_cache(cache, self)
        x = self.embed(ids, start=cache.length)  # (batch, t_new, d_model)
        mask = cache.step_mask(ids, self.config.pad_id)  # (batch, 1, t_new, length)
        return self.layers(x, mask, cache=cache.layers)  # (batch, t_new, d_model)

    def forward(self, ids, cache: KVCache | None = None):
        return _project(self.hidden(ids, cache), self.embed, self.out)  # (batch, t, vocab)


class EncoderOnly(_SingleStack):
    """Bidirectional stack (BERT-style): forward(ids (batch, t)) → logits (batch, t, vocab).

    The only mask is padding: every real token attends to every real token, in both directions.
    """

    supports_cache = False

    def mask(self, ids):
        """(batch, 1, 1, t) bool: True at real tokens."""
        return padding_mask(tokens=ids, pad_id=self.config.pad_id)


class DecoderOnly(_SingleStack):
    """Causal stack (GPT-style language model): forward(ids (batch, t)) → logits (batch, t,
    vocab), where logits[:, i] predicts token i + 1 from tokens 0..i only.

    The layers are encoder layers (self-attention and FFN, no cross-attention: there is no
    source) under a causal mask.

    forward(ids, cache=model.new_cache()): ids holds only the NEW tokens, at positions
    cache.length …; returns their logits alone, and the cache keeps their keys and values
    (generation without re-reading the prefix, chapter 14).
    """

    supports_cache = True

    @property
    def n_cached_layers(self) -> int:
        return len(self.layers.layers)

    def new_cache(self) -> KVCache:
        """An empty :class:`KVCache` (self-attention keys and values of every layer)."""
        return KVCache(self.n_cached_layers, cross=False)

    def mask(self, ids):
        """(batch, 1, t, t) bool: causal, and never a padding key."""
        t = ids.shape[1]
        return causal_mask(t, device=ids.device) & padding_mask(tokens=ids,
                                                                 pad_id=self.config.pad_id)


def count_parameters(model: nn.Module) -> int:
    """Number of trained numbers in ``model`` (a tied matrix counts once)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
