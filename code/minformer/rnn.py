"""The RNN encoder-decoder with additive (Bahdanau) attention: the Transformer's predecessor.

Bahdanau, Cho & Bengio (2014) translate with a bidirectional GRU encoder that turns the source
sentence into one state per token, h_1 … h_{t_src}, and a GRU decoder that, before emitting each
target token, looks back at all of them through *additive attention*:

    e_ij = vᵀ tanh(W_q s_{i-1} + W_k h_j)        score of source token j for target step i
    α_ij = softmax_j(e_ij)                         over the real (non-padding) source tokens
    c_i  = Σ_j α_ij h_j                            context vector, (d_key,)

Without attention (``attention=False``) the decoder only sees the encoder's final state: the whole
sentence squeezed through one fixed-size vector, the "bottleneck" that attention removed.

Masks follow the book's convention: bool, True = real token / may attend. Rows are tokens, and
every sequence tensor is batch-first: ``(batch, t, d)``. The loss is
:func:`minformer.train.sequence_loss`.
"""

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# sequence_loss moved to minformer.train (one loss for every model); importable here as before
from .train import sequence_loss  # noqa: F401
from .utils import evaluating
from .validate import integer, number, positive_int, row_index


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score(s, h_j) = vᵀ tanh(W_q s + W_k h_j).

    d_query: size of the query s (the decoder state), d_key: size of the keys h_j (the encoder
    states, which are also the values), d_attn: size of the hidden layer inside the score.
    """

    def __init__(self, d_query: int, d_key: int, d_attn: int):
        super().__init__()
        for name, value in (("d_query", d_query), ("d_key", d_key), ("d_attn", d_attn)):
            if int(value) < 1:
                raise ValueError(f"{name} must be a positive integer, got {value}")
        self.d_query, self.d_key, self.d_attn = d_query, d_key, d_attn
        self.W_q = nn.Linear(d_query, d_attn, bias=False)
        self.W_k = nn.Linear(d_key, d_attn, bias=True)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """W_k h_j for every key, computed once per source sentence and reused at every step.

        keys: (batch, t_src, d_key). Returns (batch, t_src, d_attn).
        """
        return self.W_k(keys)

    def forward(self, query, keys, mask=None, keys_proj=None):
        """Context c = Σ_j α_j h_j and weights α = softmax_j(vᵀ tanh(W_q s + W_k h_j)).

        query: (batch, d_query)   keys: (batch, t_src, d_key)
        mask: bool (batch, t_src), True = real token; None = every key is real.
        keys_proj: optional precomputed ``project_keys(keys)``, (batch, t_src, d_attn).
        Returns context (batch, d_key) and weights (batch, t_src): each row sums to 1 and is
        exactly 0 where mask is False.
        """
        if query.ndim != 2 or query.shape[-1] != self.d_query:
            raise ValueError(
                f"query must be (batch, d_query={self.d_query}), got {tuple(query.shape)}"
            )
        if keys.ndim != 3 or keys.shape[-1] != self.d_key:
            raise ValueError(
                f"keys must be (batch, t_src, d_key={self.d_key}), got {tuple(keys.shape)}"
            )
        if keys.shape[0] != query.shape[0]:
            raise ValueError(
                f"query and keys disagree on batch: query {tuple(query.shape)}, "
                f"keys {tuple(keys.shape)}"
            )
        if keys.shape[1] == 0:
            raise ValueError(f"keys has no source position (t_src = 0, shape {tuple(keys.shape)}): "
                             "attention over nothing is undefined")
        if mask is not None:
            if mask.dtype != torch.bool or tuple(mask.shape) != tuple(keys.shape[:2]):
                raise ValueError(
                    f"mask must be bool (batch, t_src) = {tuple(keys.shape[:2])}, "
                    f"got {mask.dtype} {tuple(mask.shape)}"
                )
            empty = ~mask.any(dim=-1)
            if empty.any():
                rows = empty.nonzero().flatten().tolist()
                raise ValueError(
                    f"mask rows {rows} have no real token: softmax over nothing is undefined"
                )
        if keys_proj is None:
            if mask is not None:  # padded keys: nothing in them reaches a gradient either
                keys = keys.masked_fill(~mask[..., None], 0.0)
            keys_proj = self.project_keys(keys)
        elif tuple(keys_proj.shape) != (*keys.shape[:2], self.d_attn):
            raise ValueError(
                f"keys_proj must be (batch, t_src, d_attn) = {(*keys.shape[:2], self.d_attn)}, "
                f"got {tuple(keys_proj.shape)}"
            )
        return self._attend(query, keys, keys_proj, mask)

    def _attend(self, query, keys, keys_proj, mask):
        """forward without the checks (the decoder calls this once per target step)."""
        q = self.W_q(query).unsqueeze(1)  # (batch, 1, d_attn)
        scores = self.v(torch.tanh(q + keys_proj)).squeeze(-1)  # (batch, t_src)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
            # a padded key's weight is exactly 0, but 0 · NaN is NaN: zero those rows, so that
            # nothing in them reaches the context (the products with real keys are unchanged)
            keys = keys.masked_fill(~mask[..., None], 0.0)
        weights = torch.softmax(scores, dim=-1)  # (batch, t_src), 0 where masked
        context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)  # (batch, d_key)
        return context, weights


class GRUDecoderState:
    """What :class:`Seq2SeqGRU`'s decoder carries from one search step to the next: the recurrent
    counterpart of the Transformer's KV cache (``model.new_cache()``; :mod:`minformer.decode`'s
    searches use it). A GRU needs no keys or values of past tokens: its state s (n_layers, batch,
    d_hidden) after the tokens fed so far is all that the next step reads, plus the projected
    source keys (batch, t_src, d_attn), computed once. With it a search feeds one new token per
    step, O(t) decoder steps for t tokens, instead of re-reading the prefix, O(t²).

    ``length`` is the number of tokens fed so far; ``reorder(index)`` keeps batch rows ``index``
    in that order (beam search)."""

    def __init__(self):
        self.s = None  # (n_layers, batch, d_hidden) once the first token is fed
        self.keys_proj = None  # (batch, t_src, d_attn), with attention
        self.length = 0

    def reorder(self, index):
        """index: (batch',) long, the rows to keep, in order."""
        row_index(index)
        if self.s is not None:
            self.s = self.s.index_select(1, index)  # (n_layers, batch', d_hidden)
        if self.keys_proj is not None:
            self.keys_proj = self.keys_proj.index_select(0, index)  # (batch', t_src, d_attn)

    @property
    def nbytes(self) -> int:
        """Bytes held: the state and the projected keys. It does not grow with the output."""
        return sum(x.numel() * x.element_size() for x in (self.s, self.keys_proj) if x is not None)


class Seq2SeqGRU(nn.Module):
    """GRU encoder-decoder, with additive attention (Bahdanau et al. 2014) or without (Cho et al.).

    Encoder: embedding → bidirectional GRU over packed sequences, so padding never reaches the
    states of real tokens; H = [h→; h←] of size 2·d_hidden per source token.
    Decoder state: s_0 = tanh(W_b [h→_last; h←_first]) per layer (the "bridge").
    Decoder step i (attention=True): c_i = attention(s_{i-1}, H); s_i = GRU([y_{i-1}; c_i], s_{i-1}).
    Decoder step i (attention=False): s_i = GRU(y_{i-1}, s_{i-1}); the source reaches the decoder
    only through s_0, a single fixed-size vector.
    Output: logits_i = W_o tanh(W_p [s_i; c_i; y_{i-1}]) (c_i left out without attention).

    Same interface as :class:`minformer.transformer.Transformer`, so one greedy or beam search
    (:mod:`minformer.decode`) serves both: ``src_mask = source_mask(src)``, ``memory =
    encode(src, src_mask)`` (here the tuple (H, s_0, mask)), ``decode(tgt, memory, src_mask)`` →
    (batch, t, tgt_vocab) logits for the whole target prefix; with ``cache=model.new_cache()``
    (a :class:`GRUDecoderState`) tgt holds only the new tokens, as the Transformer's KV cache.
    """

    supports_cache = True  # decode(..., cache=) works: minformer.decode uses it

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        d_emb: int,
        d_hidden: int,
        n_layers: int = 1,
        dropout: float = 0.0,
        attention: bool = True,
        pad_id: int = 0,
        d_attn: int | None = None,
    ):
        super().__init__()
        for name, value in (
            ("src_vocab", src_vocab),
            ("tgt_vocab", tgt_vocab),
            ("d_emb", d_emb),
            ("d_hidden", d_hidden),
            ("n_layers", n_layers),
        ):
            positive_int(value, name)
        number(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        integer(pad_id, "pad_id", minimum=0)
        if not (0 <= pad_id < src_vocab and pad_id < tgt_vocab):
            raise ValueError(
                f"pad_id={pad_id} must be a valid id in both vocabularies "
                f"(src_vocab={src_vocab}, tgt_vocab={tgt_vocab})"
            )
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.d_emb, self.d_hidden, self.n_layers = d_emb, d_hidden, n_layers
        self.attention, self.pad_id = attention, pad_id
        d_ctx = 2 * d_hidden  # encoder states: forward and backward halves
        rnn_dropout = dropout if n_layers > 1 else 0.0  # nn.GRU drops only between layers

        self.src_emb = nn.Embedding(src_vocab, d_emb, padding_idx=pad_id)
        self.tgt_emb = nn.Embedding(tgt_vocab, d_emb, padding_idx=pad_id)
        self.encoder = nn.GRU(
            d_emb, d_hidden, n_layers, batch_first=True, bidirectional=True, dropout=rnn_dropout
        )
        self.bridge = nn.Linear(d_ctx, d_hidden)
        d_dec_in = d_emb + (d_ctx if attention else 0)
        self.decoder = nn.GRU(d_dec_in, d_hidden, n_layers, batch_first=True, dropout=rnn_dropout)
        self.attn = AdditiveAttention(d_hidden, d_ctx, d_attn or d_hidden) if attention else None
        d_feat = d_hidden + d_emb + (d_ctx if attention else 0)
        self.pre_out = nn.Linear(d_feat, d_hidden)
        self.out = nn.Linear(d_hidden, tgt_vocab)
        self.drop = nn.Dropout(dropout)

    # ----------------------------------------------------------------------------- input checks
    def _ids(self, x, name: str, vocab: int):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be an integer tensor (batch, t), got {type(x).__name__}")
        if x.dtype.is_floating_point or x.dtype == torch.bool or x.is_complex():
            raise TypeError(f"{name} must be an integer tensor (batch, t), got dtype {x.dtype} "
                            f"with shape {tuple(x.shape)}")
        if x.ndim != 2:
            raise ValueError(f"{name} must be an integer tensor (batch, t), got {tuple(x.shape)}")
        if x.shape[1] == 0:
            raise ValueError(f"{name} is empty: shape {tuple(x.shape)}")
        if x.numel() and (x.min() < 0 or x.max() >= vocab):
            raise ValueError(
                f"{name} ids must lie in [0, {vocab}), got min {int(x.min())}, max {int(x.max())}"
            )

    def source_mask(self, src, src_mask=None):
        """Resolve the source mask, given as a mask, as lengths, or (None) from ``src != pad_id``.

        src: (batch, t_src) ids. src_mask: bool (batch, t_src) with True = real token, or
        integer lengths (batch,) with 1 ≤ length ≤ t_src, or None. Padding must be on the right,
        and every token past a row's length must be pad_id (a length shorter than the real tokens
        would drop some silently: a ValueError names the row). Returns the bool mask (batch,
        t_src).
        """
        self._ids(src, "src", self.src_vocab)
        batch, t_src = src.shape
        if src_mask is None:
            src_mask = src != self.pad_id
        if not isinstance(src_mask, torch.Tensor):
            src_mask = torch.as_tensor(src_mask)
        if src_mask.dtype == torch.bool:
            if tuple(src_mask.shape) != (batch, t_src):
                raise ValueError(
                    f"src_mask must be bool (batch, t_src) = {(batch, t_src)} like src, "
                    f"got {tuple(src_mask.shape)}"
                )
            lengths = src_mask.sum(dim=1)
        else:
            if src_mask.ndim != 1 or src_mask.shape[0] != batch or src_mask.dtype.is_floating_point:
                raise ValueError(
                    f"src_lengths must be integers (batch,) = ({batch},) for src "
                    f"{tuple(src.shape)}, got {src_mask.dtype} {tuple(src_mask.shape)}"
                )
            lengths = src_mask.to(src.device)
            if lengths.max() > t_src:
                raise ValueError(
                    f"src_lengths must be ≤ t_src={t_src} (src {tuple(src.shape)}), "
                    f"got max length {int(lengths.max())}"
                )
        if lengths.min() < 1:
            bad = (lengths < 1).nonzero().flatten().tolist()
            raise ValueError(f"every source needs at least one real token; rows {bad} have none")
        prefix = torch.arange(t_src, device=src.device) < lengths.unsqueeze(1)  # (batch, t_src)
        if src_mask.dtype == torch.bool and not torch.equal(prefix, src_mask):
            raise ValueError(
                "src_mask must mark a prefix of each row (padding on the right only): "
                "True…True False…False"
            )
        cut = ~prefix & (src != self.pad_id)  # real tokens the mask or lengths would drop
        if bool(cut.any()):
            row, col = (int(i) for i in cut.nonzero()[0])
            given = "src_lengths" if src_mask.dtype != torch.bool else "src_mask"
            raise ValueError(
                f"{given} gives row {row} {int(lengths[row])} tokens, but src has the real "
                f"(non-pad) token {int(src[row, col])} at position {col}: the encoder would "
                f"silently drop it. Give the lengths of the real tokens (or src_mask=None: "
                f"src != pad_id={self.pad_id})"
            )
        return prefix

    # ----------------------------------------------------------------------------- encoder
    def encode(self, src, src_mask=None):
        """Run the bidirectional encoder.

        src: (batch, t_src) ids; src_mask: bool (batch, t_src) or lengths (batch,) or None.
        Returns H (batch, t_src, 2·d_hidden), zero at padding; s_0 (n_layers, batch, d_hidden);
        and the bool mask (batch, t_src).
        """
        mask = self.source_mask(src, src_mask)
        batch, t_src = src.shape
        lengths = mask.sum(dim=1).cpu()  # pack_padded_sequence wants CPU lengths
        x = self.drop(self.src_emb(src))  # (batch, t_src, d_emb)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h_n = self.encoder(packed)  # h_n: (n_layers·2, batch, d_hidden), batch order restored
        H, _ = pad_packed_sequence(out, batch_first=True, total_length=t_src)
        # H: (batch, t_src, 2·d_hidden); the backward half at j has read tokens j…length-1 only
        h_n = h_n.view(self.n_layers, 2, batch, self.d_hidden)  # (layer, direction, batch, d_h)
        s0 = torch.tanh(self.bridge(torch.cat([h_n[:, 0], h_n[:, 1]], dim=-1)))  # (layers, b, d_h)
        return H, s0.contiguous(), mask

    # ----------------------------------------------------------------------------- decoder
    def _logits(self, S, E, C=None):
        """logits = W_o tanh(W_p [s; c; y_prev]) for any leading shape (..., ·)."""
        feats = [S, C, E] if C is not None else [S, E]
        return self.out(self.drop(torch.tanh(self.pre_out(torch.cat(feats, dim=-1)))))

    def _step(self, e, s, H, keys_proj, mask):
        """One decoder step. e: (batch, d_emb) embedded previous token; s: (layers, batch, d_h).

        Returns the top state (batch, d_h), the new s, the context (batch, 2·d_h) or None, and the
        attention weights (batch, t_src) or None.
        """
        if self.attention:
            c, a = self.attn._attend(s[-1], H, keys_proj, mask)  # query: top layer's s_{i-1}
            x = torch.cat([e, c], dim=-1).unsqueeze(1)  # (batch, 1, d_emb + 2·d_h)
        else:
            c, a = None, None
            x = e.unsqueeze(1)  # (batch, 1, d_emb)
        o, s = self.decoder(x, s)  # o: (batch, 1, d_h)
        return o.squeeze(1), s, c, a

    def forward(self, src, src_mask, tgt_in, return_attention: bool = False):
        """Teacher-forced decoding: step i is fed the true previous target token tgt_in[:, i].

        src: (batch, t_src) ids   src_mask: bool (batch, t_src), lengths (batch,), or None
        tgt_in: (batch, t_tgt) ids, usually [bos, y_1, …, y_{n-1}] (padding on the right is fine:
        position i only depends on tgt_in[:, :i+1]).
        Returns logits (batch, t_tgt, tgt_vocab), and with return_attention=True also the
        attention weights (batch, t_tgt, t_src) (None when attention=False).
        """
        self._ids(tgt_in, "tgt_in", self.tgt_vocab)
        if src.ndim == 2 and tgt_in.shape[0] != src.shape[0]:
            raise ValueError(
                f"src and tgt_in disagree on batch: src {tuple(src.shape)}, "
                f"tgt_in {tuple(tgt_in.shape)}"
            )
        memory = self.encode(src, src_mask)
        return self._decode(tgt_in, memory, return_attention)

    def new_cache(self) -> GRUDecoderState:
        """An empty decoder state for :meth:`decode`'s ``cache``: pass it to every step."""
        return GRUDecoderState()

    def decode(self, tgt, memory, src_mask=None, return_attention: bool = False, cache=None):
        """The decoder alone: the interface of :class:`minformer.transformer.Transformer`, so
        that :mod:`minformer.decode`'s searches serve both models.

        tgt: (batch, t) ids, [bos, y_1, …]; memory: what :meth:`encode` returned, (H, s_0, mask);
        src_mask: the bool (batch, t_src) mask of :meth:`source_mask`, or None for memory's own.
        Returns logits (batch, t, tgt_vocab) for every position of tgt (and the attention
        weights with return_attention=True). Without a cache tgt is the whole prefix, and a
        search that calls this at every step re-reads it: O(t²) decoder steps. With ``cache``
        (:meth:`new_cache`) tgt holds only the tokens after those fed before, the decoder
        continues from the state the cache keeps, and a search costs O(t) steps.
        """
        if cache is not None and not isinstance(cache, GRUDecoderState):
            raise TypeError(f"cache must be a GRUDecoderState (model.new_cache()); got "
                            f"{type(cache).__name__}")
        self._ids(tgt, "tgt", self.tgt_vocab)
        if not (isinstance(memory, tuple) and len(memory) == 3):
            raise ValueError(f"memory must be the (H, s0, mask) that encode returned; got "
                             f"{type(memory).__name__}")
        H, s, mask = memory
        if H.shape[0] != tgt.shape[0]:
            raise ValueError(f"memory and tgt disagree on batch: H {tuple(H.shape)}, tgt {tuple(tgt.shape)}")
        if src_mask is not None:
            if not isinstance(src_mask, torch.Tensor) or src_mask.dtype != torch.bool or \
                    tuple(src_mask.shape) != tuple(mask.shape):
                raise ValueError(f"src_mask must be the bool (batch, t_src) = {tuple(mask.shape)} mask of "
                                 f"source_mask; got {getattr(src_mask, 'dtype', type(src_mask).__name__)} "
                                 f"{tuple(getattr(src_mask, 'shape', ()))}")
            memory = (H, s, src_mask)
        if cache is not None and cache.s is not None and cache.s.shape[1] != tgt.shape[0]:
            raise ValueError(f"the cache holds {cache.s.shape[1]} sequences but tgt has "
                             f"{tgt.shape[0]}; reorder it with cache.reorder(index)")
        return self._decode(tgt, memory, return_attention, cache)

    def _decode(self, tgt_in, memory, return_attention: bool = False, cache=None):
        """decode without the checks (forward and decode share it)."""
        H, s, mask = memory
        if cache is not None:
            if cache.s is None:  # the first tokens: start from s_0, project the keys once
                cache.s = s
                cache.keys_proj = self.attn.project_keys(H) if self.attention else None
            s = cache.s
            cache.length += tgt_in.shape[1]
        E = self.drop(self.tgt_emb(tgt_in))  # (batch, t_tgt, d_emb)
        if not self.attention:
            S, s = self.decoder(E, s)  # (batch, t_tgt, d_h): no loop needed without attention
            if cache is not None:
                cache.s = s
            logits = self._logits(S, E)
            return (logits, None) if return_attention else logits
        keys_proj = cache.keys_proj if cache is not None else self.attn.project_keys(H)  # (b, t_src, d_attn)
        states, contexts, weights = [], [], []
        for i in range(tgt_in.shape[1]):
            o, s, c, a = self._step(E[:, i], s, H, keys_proj, mask)
            states.append(o)
            contexts.append(c)
            weights.append(a)
        if cache is not None:
            cache.s = s  # (n_layers, batch, d_h) after the last token fed
        S = torch.stack(states, dim=1)  # (batch, t_tgt, d_h)
        C = torch.stack(contexts, dim=1)  # (batch, t_tgt, 2·d_h)
        logits = self._logits(S, E, C)  # (batch, t_tgt, tgt_vocab), all steps in one matmul
        return (logits, torch.stack(weights, dim=1)) if return_attention else logits

    @torch.no_grad()
    def greedy_decode(
        self,
        src,
        src_mask=None,
        bos_id: int = 1,
        eos_id: int = 2,
        max_len: int = 50,
        return_attention: bool = False,
    ):
        """Greedy decoding: feed back the most likely token until every row has emitted eos.

        src: (batch, t_src) ids; src_mask: bool (batch, t_src), lengths (batch,), or None.
        Runs in eval mode (dropout off) and restores the previous mode afterwards.
        Returns ids (batch, t_out), t_out ≤ max_len, without bos; each row keeps its first eos and
        is padded with pad_id after it. With return_attention=True also the weights
        (batch, t_out, t_src) (None when attention=False).
        """
        if max_len < 1:
            raise ValueError(f"max_len must be ≥ 1, got {max_len}")
        for name, tok in (("bos_id", bos_id), ("eos_id", eos_id)):
            if not 0 <= tok < self.tgt_vocab:
                raise ValueError(
                    f"{name}={tok} is not in the target vocabulary [0, {self.tgt_vocab})"
                )
        with evaluating(self):
            H, s, mask = self.encode(src, src_mask)
            keys_proj = self.attn.project_keys(H) if self.attention else None
            batch = src.shape[0]
            y = torch.full((batch,), bos_id, dtype=torch.long, device=src.device)
            done = torch.zeros(batch, dtype=torch.bool, device=src.device)
            ids, weights = [], []
            for _ in range(max_len):
                e = self.tgt_emb(y)  # (batch, d_emb)
                o, s, c, a = self._step(e, s, H, keys_proj, mask)
                y = self._logits(o, e, c).argmax(dim=-1)  # (batch,)
                y = y.masked_fill(done, self.pad_id)  # finished rows only pad
                ids.append(y)
                weights.append(a)
                done = done | (y == eos_id)
                if bool(done.all()):
                    break
        ids = torch.stack(ids, dim=1)  # (batch, t_out)
        if not return_attention:
            return ids
        return ids, (torch.stack(weights, dim=1) if self.attention else None)


class GRULanguageModel(nn.Module):
    """A word-level GRU language model: embedding → GRU → softmax over the vocabulary.

    p(w_{t+1} | w_1 … w_t) = softmax(W_o h_t), with h_t = GRU(E[w_t], h_{t-1}).

    Shapes (rows are time steps, batch first):
        ids, targets: (batch, t) integer ids in [0, vocab_size)
        h:            (n_layers, batch, d_hidden), the state carried in from a previous chunk
                      (None = zeros); truncated BPTT passes it on with ``h.detach()``
        states:       (batch, t, d_hidden), the top layer's h_t for every step

    ``cutoffs=None`` uses a full softmax (a Linear d_hidden → vocab_size). A list of increasing
    cutoffs uses an adaptive softmax (:class:`torch.nn.AdaptiveLogSoftmaxWithLoss`, Grave et al.
    2017): ids below ``cutoffs[0]`` get their own row in a small "head" softmax, the rarer ids
    share clusters reached through one head entry each, with smaller projections (``d_hidden /
    div_value**i``). It is exact (every id gets a normalized probability), and fast only if ids
    are numbered by decreasing frequency, so that most targets fall in the head.

    ``sparse=True`` gives the embedding sparse gradients (only the rows of the words in the
    batch), for :class:`torch.optim.SparseAdam`; see :meth:`dense_parameters`.
    """

    def __init__(
        self,
        vocab_size: int,
        d_emb: int,
        d_hidden: int,
        n_layers: int = 1,
        cutoffs=None,
        div_value: float = 4.0,
        dropout: float = 0.0,
        sparse: bool = False,
    ):
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("d_emb", d_emb),
            ("d_hidden", d_hidden),
            ("n_layers", n_layers),
        ):
            positive_int(value, name)
        if vocab_size < 2:
            raise ValueError(f"vocab_size must be at least 2; got {vocab_size}")
        number(div_value, "div_value", low=1.0)
        number(dropout, "dropout", low=0.0, high=1.0, high_open=True)
        if not isinstance(sparse, bool):
            raise TypeError(f"sparse must be a bool; got {sparse!r}")
        if cutoffs is not None:
            if isinstance(cutoffs, (str, bytes)) or not hasattr(cutoffs, "__iter__"):
                raise TypeError(f"cutoffs must be a list of ints or None; got {cutoffs!r}")
            cutoffs = [integer(c, f"cutoffs[{i}]", minimum=1) for i, c in enumerate(cutoffs)]
            if not cutoffs or cutoffs != sorted(set(cutoffs)) or cutoffs[-1] >= vocab_size:
                raise ValueError(
                    "cutoffs must be strictly increasing ints in [1, vocab_size="
                    f"{vocab_size}); got {cutoffs}"
                )
        self.vocab_size, self.d_emb, self.d_hidden = vocab_size, d_emb, d_hidden
        self.n_layers, self.cutoffs = n_layers, cutoffs
        self.embed = nn.Embedding(vocab_size, d_emb, sparse=sparse)
        self.gru = nn.GRU(d_emb, d_hidden, n_layers, batch_first=True,
                          dropout=dropout if n_layers > 1 else 0.0)
        self.drop = nn.Dropout(dropout)
        if cutoffs is None:
            self.out = nn.Linear(d_hidden, vocab_size)
        else:
            self.out = nn.AdaptiveLogSoftmaxWithLoss(d_hidden, vocab_size, cutoffs,
                                                     div_value=div_value)

    def dense_parameters(self):
        """Every parameter except a sparse embedding's (which needs SparseAdam)."""
        sparse = self.embed.sparse
        return [p for n, p in self.named_parameters() if not (sparse and n.startswith("embed."))]

    # ----------------------------------------------------------------------------- checks
    def _ids(self, x, name: str):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch tensor of ids (batch, t); got "
                            f"{type(x).__name__}")
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer ids; got dtype {x.dtype}")
        if x.ndim != 2 or x.shape[1] == 0:
            raise ValueError(f"{name} must be (batch, t) with t ≥ 1; got shape {tuple(x.shape)}")
        if x.numel() and (x.min() < 0 or x.max() >= self.vocab_size):
            raise ValueError(f"{name} must hold ids in [0, {self.vocab_size}); got min "
                             f"{int(x.min())}, max {int(x.max())}")

    def _state(self, h, batch: int):
        if h is None:
            return
        want = (self.n_layers, batch, self.d_hidden)
        if not isinstance(h, torch.Tensor) or not h.is_floating_point():
            raise TypeError(f"h must be a float tensor (n_layers, batch, d_hidden) = {want}; "
                            f"got {getattr(h, 'dtype', type(h).__name__)}")
        if tuple(h.shape) != want:
            raise ValueError(f"h must be (n_layers, batch, d_hidden) = {want}; got "
                             f"{tuple(h.shape)}")

    # ----------------------------------------------------------------------------- model
    def forward(self, ids, h=None):
        """Run the GRU. ids: (batch, t); h: (n_layers, batch, d_hidden) or None.

        Returns states (batch, t, d_hidden) and the last state h_n (n_layers, batch, d_hidden).
        """
        self._ids(ids, "ids")
        self._state(h, ids.shape[0])
        states, h_n = self.gru(self.drop(self.embed(ids)), h)
        return self.drop(states), h_n

    def nll(self, ids, targets, h=None):
        """Negative log-likelihood (nats) of each target given its prefix.

        ids, targets: (batch, t), targets[:, i] the word after ids[:, i] (usually the stream
        shifted by one). Returns nll (batch, t) and h_n (n_layers, batch, d_hidden); the training
        loss is ``nll.mean()``, the perplexity ``exp(nll.mean())``.
        """
        self._ids(targets, "targets")
        if isinstance(ids, torch.Tensor) and tuple(ids.shape) != tuple(targets.shape):
            raise ValueError(f"ids and targets must have the same shape (batch, t); got "
                             f"{tuple(ids.shape)} and {tuple(targets.shape)}")
        states, h_n = self(ids, h)
        flat, y = states.reshape(-1, self.d_hidden), targets.reshape(-1)
        if self.cutoffs is None:
            nll = nn.functional.cross_entropy(self.out(flat), y, reduction="none")
        else:
            nll = -self.out(flat, y).output
        return nll.view(targets.shape), h_n

    def log_probs(self, ids, h=None):
        """log p(next word) over the whole vocabulary: (batch, t, vocab_size), and h_n."""
        states, h_n = self(ids, h)
        flat = states.reshape(-1, self.d_hidden)
        if self.cutoffs is None:
            lp = torch.log_softmax(self.out(flat), dim=-1)
        else:
            lp = self.out.log_prob(flat)
        return lp.view(*ids.shape, self.vocab_size), h_n
