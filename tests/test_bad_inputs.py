"""A table of inputs, documented and not, to every public function: each gives the right result
or fails at the door with an error of the agreed kind (TypeError for a wrong type, ValueError
for a wrong value or shape) whose message names the shapes, dtypes or values involved — never a
traceback from inside torch or NumPy. Then the mask rules: no shape that can be misread, and a
warning (once) for a self-attention query left with no key."""

import json
import re
import traceback
import warnings
from functools import cache

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import minformer.attention as attention  # noqa: E402
import minformer.bottleneck as bottleneck  # noqa: E402
import minformer.plots as plots  # noqa: E402
import minformer.pretrain as pretrain  # noqa: E402
import minformer.race as race  # noqa: E402
import minformer.train_translator as tt  # noqa: E402
import minformer.variants as variants  # noqa: E402
from minformer.attention import (  # noqa: E402
    EmptyRowWarning,
    attention_weights,
    chunked_attention,
    dot_product_attention,
    scaled_dot_product_attention,
    softmax,
)
from minformer.blocks import (  # noqa: E402
    EncoderLayer,
    FeedForward,
    LayerNorm,
    copy_weights_from_torch,
    copy_weights_to_torch,
)
from minformer.decode import (  # noqa: E402
    beam_search,
    generate,
    gnmt_length_penalty,
    greedy_search,
    sample_next,
    sequence_scores,
)
from minformer.export import browser_files  # noqa: E402
from minformer.gru_lm import frequency_ids, streams_of  # noqa: E402
from minformer.masks import (  # noqa: E402
    causal_mask,
    padding_mask,
    sliding_window_mask,
    to_additive_mask,
    to_torch_mask,
)
from minformer.metrics import (  # noqa: E402  # noqa: E402
    bleu_from_stats,
    bootstrap_interval,  # noqa: E402
    bucket_label,
    closest_ref_length,
    ngrams,
    sentence_stats,
    tokenize_13a,
)
from minformer.multihead import (  # noqa: E402
    MultiHeadAttention,
    MultiHeadAttentionLoop,
    grouped_query_attention,
    repeat_kv,
)
from minformer.objectives import mask_tokens  # noqa: E402
from minformer.plots import attention_heatmap  # noqa: E402
from minformer.positional import (  # noqa: E402
    LearnedPositions,
    SinusoidalPositions,
    sinusoidal_encoding,
)
from minformer.pretrain import encode_stream, windows_of  # noqa: E402
from minformer.pretrain import random_windows as pretrain_windows  # noqa: E402
from minformer.publish import set_repository  # noqa: E402
from minformer.race import step_time_ratio  # noqa: E402
from minformer.rnn import AdditiveAttention, Seq2SeqGRU  # noqa: E402
from minformer.sentences import not_english_reason  # noqa: E402
from minformer.tokenizer import BPETokenizer, pad_sequences  # noqa: E402
from minformer.train import (  # noqa: E402
    History,
    sequence_loss,
    smoothed_cross_entropy,
    train,
    warmup_inverse_sqrt,
    warmup_linear_decay,
)
from minformer.train_translator import average_states, train_translator  # noqa: E402
from minformer.transformer import (  # noqa: E402
    DecoderOnly,
    Transformer,
    TransformerConfig,
    count_parameters,  # noqa: E402
)
from minformer.translator import Translator  # noqa: E402
from minformer.utils import evaluating, seed_everything  # noqa: E402
from minformer.variants import (
    random_windows,  # noqa: E402
    summarize,  # noqa: E402
    validation_loss,  # noqa: E402
)
from minformer.word2vec import (  # noqa: E402
    CBOW,
    SkipGram,
    Vocab,
    analogy,
    build_vocab,
    cbow_examples,
    cosine_similarity,
    keep_probabilities,
    most_similar,
    negative_sampling_loss,
    noise_distribution,
    skipgram_pairs,
    subsample,
    train_word2vec,
    unigram_table,
)

OK = "ok"


def r(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


@cache
def tok():
    return BPETokenizer.train(["low lower lowest newer newest wider"] * 3, 4 + 256 + 8)


@cache
def vocab():
    return Vocab(["the", "cat", "sat"], [3, 2, 1])


@cache
def mha():
    return MultiHeadAttention(16, 4).eval()


def E():
    return r(3, 4)


def _file(tmp_path, text, name="tok.json"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _tok_json(**changes):
    state = json.loads(json.dumps({"format": "minformer-bpe", "version": 1}))
    state.update(changes)
    return json.dumps(state)


X3 = r(3, 5, 16)  # (batch 3, t 5, d_model 16); 4 heads
SRC = torch.tensor([[5, 6, 7], [8, 9, 0]])  # two source sentences, the second padded
BLEU_STATS = [5, 5, 5, 4, 3, 2, 5, 4, 3, 2]  # c, r, matches_1..4, totals_1..4 of a perfect output


def _cfg(**changes):
    cfg = dict(vocab_size=12, d_model=8, n_heads=2, d_ff=16, n_layers=1, dropout=0.0, max_len=16)
    return TransformerConfig(**{**cfg, **changes})


@cache
def s2s():
    """A tiny encoder-decoder over 12 tokens (pad 0, bos 1, eos 2), max_len 16."""
    torch.manual_seed(0)
    return Transformer(_cfg()).eval()


@cache
def gru():
    torch.manual_seed(0)
    return Seq2SeqGRU(12, 12, d_emb=4, d_hidden=4).eval()


@cache
def lm():
    torch.manual_seed(0)
    return DecoderOnly(_cfg()).eval()


def _stats(**entries):
    """BLEU_STATS with some entries changed: _stats(s2=9) sets stats[2] = 9."""
    stats = list(BLEU_STATS)
    for key, value in entries.items():
        stats[int(key[1:])] = value
    return stats


def _logits(**where):
    """(2, 3) logits with the entries named row_col set: _logits(r1c2=nan)."""
    logits = torch.tensor([[0.0, 1.0, 2.0], [0.5, 0.5, 0.5]])
    for key, value in where.items():
        logits[int(key[1]), int(key[3])] = value
    return logits


def _train_tiny(**kw):
    """train() on a one-weight regression, SGD at lr 0.1, with the given arguments."""
    model = torch.nn.Linear(3, 1)
    data = [(torch.ones(2, 3), torch.ones(2))]
    return train(model, data, lambda m, b: (m(b[0])[:, 0] - b[1]).pow(2).mean(),
                 torch.optim.SGD(model.parameters(), lr=0.1), progress=False, **kw)


def _train_returning(result):
    """train() one step of the regression, with a loss_fn that returns ``result(loss)``."""
    model = torch.nn.Linear(3, 1)
    return train(model, [torch.ones(2, 3)], lambda m, b: result(m(b).pow(2).mean()),
                 torch.optim.SGD(model.parameters(), lr=0.1), steps=1, progress=False)


def _history():
    return History(losses=[1.0, 2.0, 3.0])


def _train_eval_every(every):
    return _train_tiny(steps=1, eval_fn=lambda m: 0.0, eval_every=every)


def _tt_config(**changes):
    t = tok()
    return TransformerConfig(**{**dict(vocab_size=t.vocab_size, d_model=8, n_heads=2, d_ff=16,
                                       n_layers=1, max_len=16, pad_id=t.pad_id, bos_id=t.bos_id,
                                       eos_id=t.eos_id), **changes})


def _train_translator(config=None, **kw):
    return train_translator(config if config is not None else _tt_config(), tok(),
                            [("low", "lower")], steps=1, progress=False, device="cpu", **kw)


def _near_300():
    """float16 Q, K near 300 (d_k = 64): the scores Q Kᵀ / 8 ≈ 7·10⁵ overflow float16."""
    Q, K = ((300 + r(6, 64, seed=s)).half() for s in (1, 2))
    return Q, K, r(6, 64, seed=3).half()


def _fp16_300(ours, theirs=F.scaled_dot_product_attention):
    Q, K, V = _near_300()
    assert not torch.isfinite((Q / 8) @ K.T).all()
    out, ref = ours(Q, K, V), theirs(Q, K, V)
    assert out.dtype == torch.float16 and torch.isfinite(ref).all()
    torch.testing.assert_close(out.float(), ref.float(), atol=2e-3, rtol=2e-3)
    return out


def _under_float16_autocast(attention_fn):
    """attention_fn run inside torch.autocast to float16, which casts matrix products to
    float16: the float32 scores must stay float32 there too."""
    def run(Q, K, V):
        with torch.autocast("cpu", dtype=torch.float16):
            return attention_fn(Q, K, V)
    return run


def _mha_fp16_300(need_weights):
    """MultiHeadAttention in float16 whose projections pass x (entries near 300) through: the
    explicit path (need_weights) must stay finite and agree with PyTorch's fused one."""
    m = MultiHeadAttention(16, 4).eval()
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.eye(16).repeat(3, 1))
        m.in_proj_bias.zero_()
    m = m.half()
    x = (300 + r(1, 5, 16)).half()
    y, _ = m(x, need_weights=True)
    torch.testing.assert_close(y.float(), m(x).float(), atol=0.05, rtol=2e-3)
    return y


def _w2v_ids(batch):
    """centers (batch,), contexts (batch,), negatives (batch, 2) of a 10-word vocabulary."""
    return (torch.arange(batch) % 10, (torch.arange(batch) + 1) % 10,
            torch.zeros(batch, 2, dtype=torch.long))


def _torch_layer(**kw):
    return torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, **kw)


def _g():
    return torch.Generator().manual_seed(0)


def _exportable(value):
    """A tiny Translator for the browser export with one weight set to ``value``."""
    torch.manual_seed(0)
    model = Transformer(_tt_config()).eval()
    with torch.no_grad():
        model.encoder.layers[0].ffn.linear1.weight[0, 1] = value
    return Translator(model, tok(), max_source_tokens=16)


def _bn_batch():
    """bottleneck.encode_pairs of one pair over a two-word vocabulary: src (1, 6), tgt (1, 7)."""
    stoi, _ = bottleneck.build_vocab([["a", "b"]], 1)
    return bottleneck.encode_pairs([(["a"], ["b"])], stoi, stoi)


def _tt_examples():
    return tt.encode_pairs(tok(), [("low", "lower"), ("newer wider", "new")])


def _tt_loss(batch, model=None):
    return tt.translation_loss()(s2s_tok() if model is None else model, batch)


@cache
def s2s_tok():
    torch.manual_seed(0)
    return Transformer(_tt_config()).eval()


def _axes(n):
    return plt.subplots(1, n)[1]


def finite(out):
    out = out[0] if isinstance(out, tuple) else out
    return bool(torch.isfinite(torch.as_tensor(out)).all())


# (id, thunk, expected): expected is OK, a predicate on the result, or (Error, regex)
CASES = [
    # ---------------------------------------------------------------- softmax and friends
    ("softmax-list", lambda: softmax([1.0, 2.0, 3.0]), lambda y: np.isclose(y.sum(), 1)),
    ("softmax-int-array", lambda: softmax(np.array([1, 2])), lambda y: y.dtype == np.float64),
    ("softmax-int-tensor", lambda: softmax(torch.tensor([1, 2])), lambda y: y.is_floating_point()),
    ("softmax-str", lambda: softmax("abc"), (TypeError, "array or a tensor.*str")),
    ("softmax-none", lambda: softmax(None), (TypeError, "NoneType")),
    ("softmax-0d", lambda: softmax(np.array(3.0)), (ValueError, "at least one axis")),
    ("softmax-0d-tensor", lambda: softmax(torch.tensor(3.0)), (ValueError, "0-d tensor")),
    ("softmax-axis-float", lambda: softmax(np.ones((2, 3)), axis=1.5),
     (TypeError, r"axis must be an int; got 1\.5")),
    ("softmax-axis-range", lambda: softmax(np.ones((2, 3)), axis=2),
     (ValueError, r"axis=2 .*\(2, 3\)")),
    ("softmax-str-array", lambda: softmax(np.array(["a", "b"])), (TypeError, "dtype <U1")),
    ("softmax-large", lambda: softmax(np.array([[5000.0, 0.0], [-3000.0, -3001.0]])),
     lambda y: np.isfinite(y).all()),
    ("dpa-lists", lambda: dot_product_attention([[1.0, 0.0], [0.0, 1.0]]),
     lambda y: y.shape == (2, 2)),
    ("dpa-1d", lambda: dot_product_attention(np.ones(3)), (ValueError, r"\(n, d\).*\(3,\)")),
    ("dpa-empty", lambda: dot_product_attention(np.ones((0, 3))), (ValueError, "empty")),
    ("dpa-int-tensor", lambda: dot_product_attention(torch.ones(2, 3, dtype=torch.int64)),
     (TypeError, "floating-point.*torch.int64")),
    ("dpa-4d", lambda: dot_product_attention(np.ones((1, 2, 3, 4))),
     (ValueError, r"\(1, 2, 3, 4\)")),
    ("dpa-str", lambda: dot_product_attention("tokens"), (TypeError, "str")),
    ("dpa-batched-tensor", lambda: dot_product_attention(r(2, 3, 4), return_weights=True),
     lambda out: out[1].shape == (2, 3, 3)),
    ("weights-array", lambda: attention_weights(np.eye(3)),
     lambda A: np.allclose(A.sum(-1), 1)),
    # ---------------------------------------------------------------- scaled_dot_product_attention
    ("sdpa-numpy", lambda: scaled_dot_product_attention(np.ones((3, 2)), r(3, 2), r(3, 2)),
     (TypeError, "Q must be a torch tensor; got ndarray of dtype float64")),
    ("sdpa-mixed-dtypes", lambda: scaled_dot_product_attention(
        r(3, 4, dtype=torch.float16), r(3, 4), r(3, 4)),
     (TypeError, "dtypes must match: Q torch.float16, K torch.float32, V torch.float32")),
    ("sdpa-int", lambda: scaled_dot_product_attention(
        torch.ones(3, 4, dtype=torch.int64), r(3, 4), r(3, 4)),
     (TypeError, "Q must be a floating-point tensor; got dtype torch.int64")),
    ("sdpa-dk", lambda: scaled_dot_product_attention(r(3, 4), r(3, 5), r(3, 2)),
     (ValueError, r"d_k.*Q \(3, 4\), K \(3, 5\)")),
    ("sdpa-tk", lambda: scaled_dot_product_attention(r(3, 4), r(5, 4), r(6, 2)),
     (ValueError, r"t_k.*K \(5, 4\), V \(6, 2\)")),
    ("sdpa-1d", lambda: scaled_dot_product_attention(r(4), r(3, 4), r(3, 2)),
     (ValueError, r"Q must be \(\.\.\., t, d\).*\(4,\)")),
    ("sdpa-batch", lambda: scaled_dot_product_attention(r(2, 3, 4), r(3, 3, 4), r(3, 3, 4)),
     (ValueError, r"batch.*Q \(2, 3, 4\), K \(3, 3, 4\)")),
    ("sdpa-empty", lambda: scaled_dot_product_attention(r(0, 4), r(3, 4), r(3, 2)),
     (ValueError, r"empty.*Q \(0, 4\)")),
    ("sdpa-mask-float", lambda: scaled_dot_product_attention(
        r(5, 4), r(5, 4), r(5, 4), causal_mask(5).float()),
     (TypeError, r"bool.*torch.float32.*\(5, 5\).*mask == 0")),
    ("sdpa-mask-int", lambda: scaled_dot_product_attention(
        r(5, 4), r(5, 4), r(5, 4), causal_mask(5).long()), (TypeError, r"bool.*torch.int64")),
    ("sdpa-mask-numpy", lambda: scaled_dot_product_attention(
        r(5, 4), r(5, 4), r(5, 4), np.tril(np.ones((5, 5), dtype=bool))),
     (TypeError, "torch.bool tensor.*ndarray")),
    ("sdpa-key-padding-shape", lambda: scaled_dot_product_attention(
        r(2, 5, 4), r(2, 5, 4), r(2, 5, 4), torch.ones(2, 5, dtype=torch.bool)),
     (ValueError, r"\(2, 5\) looks like a \(batch, t_k\) key-padding mask.*mask\[:, None, :\]")),
    ("sdpa-key-padding-shape-heads", lambda: scaled_dot_product_attention(
        r(2, 4, 5, 4), r(2, 4, 5, 4), r(2, 4, 5, 4), torch.ones(2, 5, dtype=torch.bool)),
     (ValueError, r"mask\[:, None, None, :\].*padding_mask\(lengths\)")),
    ("sdpa-batch1-t_q-mask-ok", lambda: scaled_dot_product_attention(
        r(3, 3, 4), r(3, 3, 4), r(3, 3, 4), causal_mask(3)), lambda y: y.shape == (3, 3, 4)),
    ("sdpa-b1t-on-heads", lambda: scaled_dot_product_attention(
        r(2, 2, 5, 4), r(2, 2, 5, 4), r(2, 2, 5, 4), padding_mask([5, 3], head_axis=False)),
     (ValueError, r"\(2, 1, 5\) is ambiguous.*\(heads, t_q, t_k\).*mask\[:, None\]")),
    ("sdpa-b1t-single-head-ok", lambda: scaled_dot_product_attention(
        r(2, 5, 4), r(2, 5, 4), r(2, 5, 4), padding_mask([5, 3], head_axis=False)),
     lambda y: y.shape == (2, 5, 4)),
    ("sdpa-b11t-on-single-head", lambda: scaled_dot_product_attention(
        r(2, 5, 4), r(2, 5, 4), r(2, 5, 4), padding_mask([5, 3])),
     (ValueError, r"\(2, 1, 1, 5\) does not fit.*\(2, 5, 5\)")),
    ("sdpa-1d-mask", lambda: scaled_dot_product_attention(
        r(5, 4), r(5, 4), r(5, 4), torch.ones(5, dtype=torch.bool)),
     (ValueError, r"\(5,\) has one axis.*mask\[None, :\]")),
    ("sdpa-causal-batched", lambda: scaled_dot_product_attention(
        r(3, 2, 6, 4), r(3, 2, 6, 4), r(3, 2, 6, 4), causal_mask(6)), finite),
    ("sdpa-causal-and-pad", lambda: scaled_dot_product_attention(
        r(2, 2, 6, 4), r(2, 2, 6, 4), r(2, 2, 6, 4),
        causal_mask(6) & padding_mask([6, 2])), finite),
    ("sdpa-mask-too-small", lambda: scaled_dot_product_attention(
        r(5, 4), r(5, 4), r(5, 4), causal_mask(4)), (ValueError, r"\(4, 4\).*\(5, 5\)")),
    ("sdpa-mask-rank5", lambda: scaled_dot_product_attention(
        r(2, 2, 5, 4), r(2, 2, 5, 4), r(2, 2, 5, 4), torch.ones(1, 2, 2, 5, 5, dtype=bool)),
     (ValueError, r"\(1, 2, 2, 5, 5\) does not fit")),
    ("sdpa-mask-wrong-batch", lambda: scaled_dot_product_attention(
        r(2, 2, 5, 4), r(2, 2, 5, 4), r(2, 2, 5, 4), padding_mask([5, 3, 1])),
     (ValueError, r"\(3, 1, 1, 5\) does not fit.*\(2, 2, 5, 5\)")),
    ("sdpa-fp16-large", lambda: _fp16_case(), finite),
    ("sdpa-fp16-near-300", lambda: _fp16_300(scaled_dot_product_attention), finite),
    ("chunked-fp16-near-300", lambda: _fp16_300(
        lambda Q, K, V: chunked_attention(Q, K, V, block_size=3)), finite),
    ("chunked-fp16-near-300-causal", lambda: _fp16_300(
        lambda Q, K, V: chunked_attention(Q, K, V, block_size=4, causal=True),
        lambda Q, K, V: F.scaled_dot_product_attention(Q, K, V, is_causal=True)), finite),
    ("sdpa-fp16-near-300-under-autocast", lambda: _fp16_300(_under_float16_autocast(
        scaled_dot_product_attention)), finite),
    ("chunked-fp16-near-300-under-autocast", lambda: _fp16_300(_under_float16_autocast(
        chunked_attention)), finite),
    ("sdpa-fp16-weights-near-300", lambda: scaled_dot_product_attention(
        *_near_300(), return_weights=True), lambda out: finite(out[1]) and out[1].dtype == torch.float16),
    ("sdpa-weights", lambda: scaled_dot_product_attention(
        r(3, 4), r(5, 4), r(5, 2), return_weights=True),
     lambda out: out[1].shape == (3, 5) and torch.allclose(out[1].sum(-1), torch.ones(3))),
    ("sdpa-empty-row-allowed", lambda: scaled_dot_product_attention(
        r(3, 4), r(3, 4), r(3, 4), torch.tensor([[True, False, False], [False] * 3,
                                                 [True] * 3]), allow_empty_rows=True),
     lambda y: torch.equal(y[1], torch.zeros(4))),
    # ---------------------------------------------------------------- masks
    ("causal-ok", lambda: causal_mask(5), lambda m: m.dtype == torch.bool and m.shape == (5, 5)),
    ("causal-float", lambda: causal_mask(2.5), (TypeError, r"t must be an int; got 2\.5")),
    ("causal-float-int", lambda: causal_mask(4.0), (TypeError, r"t must be an int; got 4\.0")),
    ("causal-bool", lambda: causal_mask(True), (TypeError, "got True")),
    ("causal-zero", lambda: causal_mask(0), (ValueError, "t must be a positive int; got 0")),
    ("causal-str", lambda: causal_mask("5"), (TypeError, "got '5'")),
    ("causal-numpy-int", lambda: causal_mask(np.int64(4)), lambda m: m.shape == (4, 4)),
    ("window-zero", lambda: sliding_window_mask(5, 0), (ValueError, "window must be a positive")),
    ("window-float", lambda: sliding_window_mask(5, 2.0), (TypeError, "window must be an int")),
    ("window-causal-str", lambda: sliding_window_mask(5, 2, causal="no"),
     (TypeError, "causal must be True or False")),
    ("pad-none", lambda: padding_mask(), (ValueError, "exactly one")),
    ("pad-float-lengths", lambda: padding_mask(torch.tensor([1.0, 2.0])),
     (TypeError, r"integer.*float32.*\(2,\)")),
    ("pad-2d-lengths", lambda: padding_mask([[1, 2]]), (ValueError, r"\(batch,\).*\(1, 2\)")),
    ("pad-empty-lengths", lambda: padding_mask(torch.tensor([], dtype=torch.long)),
     (ValueError, r"batch ≥ 1.*\(0,\)")),
    ("pad-too-long", lambda: padding_mask([1, 5], t=3), (ValueError, r"0\.\.t=3.*\[1, 5\]")),
    ("pad-negative", lambda: padding_mask([-1, 2]), (ValueError, r"\[-1, 2\]")),
    ("pad-t-float", lambda: padding_mask([1, 2], t=3.0), (TypeError, r"t must be an int")),
    ("pad-tokens-no-id", lambda: padding_mask(tokens=torch.zeros(1, 2, dtype=torch.long)),
     (ValueError, "pad_id")),
    ("pad-tokens-float", lambda: padding_mask(tokens=torch.zeros(1, 2), pad_id=0),
     (TypeError, "integer ids.*float32")),
    ("pad-tokens-1d", lambda: padding_mask(tokens=torch.tensor([1, 2, 0]), pad_id=0),
     (ValueError, r"\(batch, t\).*\(3,\)")),
    ("pad-id-float", lambda: padding_mask(tokens=torch.tensor([[1, 0]]), pad_id=0.5),
     (TypeError, r"pad_id must be an int")),
    ("pad-head-axis-str", lambda: padding_mask([1, 2], head_axis="no"),
     (TypeError, "head_axis must be True or False")),
    ("pad-ok", lambda: padding_mask([2, 3]), lambda m: m.shape == (2, 1, 1, 3)),
    ("pad-tokens-ok", lambda: padding_mask(tokens=[[5, 6, 0]], pad_id=0),
     lambda m: m[0, 0, 0].tolist() == [True, True, False]),
    ("to-torch-float", lambda: to_torch_mask(torch.zeros(2, 2)),
     (TypeError, r"bool.*torch.float32")),
    ("additive-bool-dtype", lambda: to_additive_mask(causal_mask(3), dtype=torch.bool),
     (TypeError, "floating-point dtype.*torch.bool")),
    ("additive-int-dtype", lambda: to_additive_mask(causal_mask(3), dtype=torch.int64),
     (TypeError, "floating-point dtype.*torch.int64")),
    ("additive-half", lambda: to_additive_mask(causal_mask(3), dtype=torch.float16),
     lambda m: m.dtype == torch.float16 and m[0, 1] == float("-inf") and m[1, 0] == 0),
    ("additive-numpy", lambda: to_additive_mask(np.tril(np.ones((3, 3), bool))),
     (TypeError, "torch.bool tensor.*ndarray")),
    # ---------------------------------------------------------------- multi-head attention
    ("mha-heads-float", lambda: MultiHeadAttention(16, 4.0), (TypeError, "n_heads must be an int")),
    ("mha-heads-bool", lambda: MultiHeadAttention(16, True), (TypeError, "n_heads.*True")),
    ("mha-not-divisible", lambda: MultiHeadAttention(10, 4), (ValueError, "d_model=10.*n_heads=4")),
    ("mha-dropout", lambda: MultiHeadAttention(16, 4, dropout=1.5),
     (ValueError, r"dropout must lie in \[0, 1\); got 1\.5")),
    ("mha-dropout-str", lambda: MultiHeadAttention(16, 4, dropout="0.1"),
     (TypeError, "dropout must be a number")),
    ("mha-float64-input", lambda: mha()(X3.double()),
     (TypeError, "dtypes must match: x_q torch.float64, x_kv torch.float64, weights "
                 "torch.float32")),
    ("mha-numpy", lambda: mha()(X3.numpy()), (TypeError, "x_q must be a torch tensor")),
    ("mha-int", lambda: mha()(X3.long()), (TypeError, "x_q must be a floating-point tensor")),
    ("mha-d-model", lambda: mha()(X3[..., :12]), (ValueError, r"d_model=16.*\(3, 5, 12\)")),
    ("mha-b1t-mask", lambda: MultiHeadAttention(16, 3 * 1 + 1)(
        r(4, 5, 16), mask=padding_mask([5, 4, 3, 2], head_axis=False)),
     (ValueError, r"\(4, 1, 5\) is ambiguous.*mask\[:, None\]")),
    ("mha-bt-mask", lambda: mha()(X3, mask=torch.ones(3, 5, dtype=torch.bool)),
     (ValueError, r"\(3, 5\).*key-padding.*padding_mask\(lengths\)")),
    ("mha-pad-ok", lambda: mha()(X3, mask=padding_mask([5, 3, 1])), finite),
    ("mha-causal-ok", lambda: mha()(X3, mask=causal_mask(5)), finite),
    ("mha-causal-pad-ok", lambda: mha()(X3, mask=causal_mask(5) & padding_mask([5, 3, 1])),
     finite),
    ("mha-cross-pad-ok", lambda: mha()(X3[:, :2], X3, mask=padding_mask([5, 3, 1])),
     lambda y: y.shape == (3, 2, 16)),
    ("mha-unbatched-ok", lambda: mha()(X3[0], mask=causal_mask(5)),
     lambda y: y.shape == (5, 16)),
    ("mha-weights-ok", lambda: mha()(X3, mask=causal_mask(5), need_weights=True),
     lambda out: out[1].shape == (3, 4, 5, 5)),
    ("mha-loop-b1t-mask", lambda: MultiHeadAttentionLoop(16, 2)(
        r(2, 5, 16), mask=padding_mask([5, 4], head_axis=False)),
     (ValueError, r"\(2, 1, 5\) is ambiguous")),
    ("mha-batch-mismatch", lambda: mha()(X3, X3[:2]), (ValueError, "same batch size")),
    ("mha-fp16-near-300-weights", lambda: _mha_fp16_300(need_weights=True), finite),
    ("repeat-kv-not-a-multiple", lambda: repeat_kv(r(1, 2, 3, 4), 3),
     (ValueError, r"n_heads=3 must be a multiple of X's 2 key/value heads")),
    ("repeat-kv-fewer-heads", lambda: repeat_kv(r(1, 2, 3, 4), 1),
     (ValueError, r"n_heads=1 must be a multiple of X's 2")),
    ("repeat-kv-zero", lambda: repeat_kv(r(1, 2, 3, 4), 0),
     (ValueError, "n_heads must be a positive int; got 0")),
    ("repeat-kv-3d", lambda: repeat_kv(r(2, 3, 4), 2), (ValueError, r"X must have 4 axes")),
    ("repeat-kv-ok", lambda: repeat_kv(r(1, 2, 3, 4), 4), lambda y: y.shape == (1, 4, 3, 4)),
    ("gqa-zero-kv-heads", lambda: grouped_query_attention(r(1, 2, 3, 4), r(1, 0, 3, 4),
                                                          r(1, 0, 3, 4)),
     (ValueError, r"K and V need the same number of heads g")),
    # ---------------------------------------------------------------- positions
    ("sin-d-float", lambda: sinusoidal_encoding(4, 2.5), (TypeError, r"d must be an int; got 2\.5")),
    ("sin-int-dtype", lambda: sinusoidal_encoding(4, 8, dtype=torch.int64),
     (TypeError, "floating-point torch dtype.*torch.int64")),
    ("sin-base", lambda: sinusoidal_encoding(4, 8, base=1.0),
     (ValueError, r"base must lie in \(1, inf\)")),
    ("sin-odd-d", lambda: sinusoidal_encoding(4, 7), lambda pe: pe.shape == (4, 7)),
    ("sinpos-int-input", lambda: SinusoidalPositions(8, 4)(torch.zeros(1, 3, 4, dtype=torch.long)),
     lambda y: y.is_floating_point() and 0 < float(y[0, 1, 0]) < 1),
    ("sinpos-numpy", lambda: SinusoidalPositions(8, 4)(np.zeros((3, 4))),
     (TypeError, "x must be a torch tensor")),
    ("sinpos-too-long", lambda: SinusoidalPositions(8, 4)(torch.zeros(9, 4)),
     (ValueError, r"t=9 .*max_len=8")),
    ("sinpos-max-len-float", lambda: SinusoidalPositions(8.0, 4),
     (TypeError, "max_len must be an int")),
    ("learned-float64", lambda: LearnedPositions(8, 4)(torch.zeros(3, 4, dtype=torch.float64)),
     (TypeError, "dtypes must match: x torch.float64, weight torch.float32")),
    ("learned-int-input", lambda: LearnedPositions(8, 4)(torch.zeros(3, 4, dtype=torch.long)),
     lambda y: y.dtype == torch.float32),
    ("learned-d-model", lambda: LearnedPositions(8, 4)(torch.zeros(3, 5)),
     (ValueError, r"d_model=4.*\(3, 5\)")),
    # ---------------------------------------------------------------- plots
    ("heatmap-numpy-labels", lambda: attention_heatmap(
        np.eye(2), row_labels=np.array(["a", "b"]), col_labels=np.array(["c", "d"])), OK),
    ("heatmap-tensor", lambda: attention_heatmap(torch.eye(3), col_labels=["x", "y", "z"]), OK),
    ("heatmap-label-count", lambda: attention_heatmap(np.eye(2), row_labels=np.array(list("abc"))),
     (ValueError, r"3 row labels for a matrix of shape \(2, 2\)")),
    ("heatmap-3d", lambda: attention_heatmap(np.ones((2, 2, 2))),
     (ValueError, r"one \(t_q, t_k\) matrix.*\(2, 2, 2\)")),
    ("heatmap-str", lambda: attention_heatmap("A"), (TypeError, "A must be a tensor or an array")),
    ("heatmap-str-labels", lambda: attention_heatmap(np.eye(2), col_labels="ab"),
     (TypeError, "col_labels must be a list of labels")),
    # ---------------------------------------------------------------- tokenizer
    ("tok-train-str", lambda: BPETokenizer.train("low lower", 300),
     (TypeError, "not a single string")),
    ("tok-train-vocab-float", lambda: BPETokenizer.train(["low"], 300.0),
     (TypeError, r"vocab_size must be an int, got 300\.0")),
    ("tok-train-vocab-small", lambda: BPETokenizer.train(["low"], 10),
     (ValueError, "vocab_size=10 is too small.*260")),
    ("tok-train-minfreq-float", lambda: BPETokenizer.train(["low"], 300, min_frequency=1.5),
     (TypeError, r"min_frequency must be an int, got 1\.5")),
    ("tok-train-minfreq-zero", lambda: BPETokenizer.train(["low"], 300, min_frequency=0),
     (ValueError, "min_frequency must be an int >= 1, got 0")),
    ("tok-train-not-str", lambda: BPETokenizer.train(["low", 5], 300),
     (TypeError, r"texts\[1\] must be a str, got int")),
    ("tok-encode-bytes", lambda: tok().encode(b"low"), (TypeError, "text must be a str, got bytes")),
    ("tok-encode-batch-str", lambda: tok().encode_batch("low"), (TypeError, "not a single string")),
    ("tok-decode-float", lambda: tok().decode([2.5]), (TypeError, r"ids must be ints; got \[2\.5\]")),
    ("tok-decode-range", lambda: tok().decode([10**6]), (ValueError, r"unknown token ids \[1000000\]")),
    ("tok-decode-array", lambda: tok().decode(np.array(tok().encode("lowest"))),
     lambda s: s == "lowest"),
    ("tok-decode-np-ints", lambda: tok().decode([np.int64(i) for i in tok().encode("low")]),
     lambda s: s == "low"),
    ("tok-decode-batch", lambda: tok().decode([[1, 2]]), (ValueError, "one sequence")),
    ("tok-pad-empty", lambda: tok().pad([]), (ValueError, "empty batch")),
    ("tok-pad-str", lambda: tok().pad(["low"]), (TypeError, r"seqs\[0\] is a string")),
    ("tok-token-to-id-int", lambda: tok().token_to_id(5), (TypeError, "token must be a str")),
    ("tok-id-to-token-neg", lambda: tok().id_to_token(-1), (ValueError, r"unknown token ids \[-1\]")),
    ("tok-allowed-special-str", lambda: tok().encode("x", allowed_special="<bos>"),
     (TypeError, "wrap one token in a set")),
    ("tok-pad-float", lambda: tok().pad([[1, 2.5]]),
     (TypeError, r"seqs\[0\]\[1\] must be an int token id; got 2\.5 \(float\)")),
    ("tok-pad-float-whole", lambda: tok().pad([[1, 2.0]]), (TypeError, r"got 2\.0")),
    ("tok-pad-bool", lambda: tok().pad([[True, 1]]), (TypeError, r"seqs\[0\]\[0\].*True")),
    ("tok-pad-negative", lambda: tok().pad([[5], [-1]]),
     (ValueError, r"seqs\[1\]\[0\] = -1 is not a token id: ids are in \[0, 268\)")),
    ("tok-pad-huge", lambda: tok().pad([[10**9]]),
     (ValueError, r"= 1000000000 is not a token id: ids are in \[0, 268\)")),
    ("tok-pad-float-tensor", lambda: tok().pad([torch.tensor([1.0, 2.0])]),
     (TypeError, r"seqs\[0\]\[0\] must be an int token id; got 1\.0")),
    ("tok-pad-tensor-ok", lambda: tok().pad([torch.tensor([5, 6]), np.array([7])]),
     lambda out: out[0].tolist() == [[5, 6], [7, 0]] and out[1].tolist() == [2, 1]),
    ("pad-sequences-truncating-float", lambda: pad_sequences([[1, 1.9]], 0),
     (TypeError, r"got 1\.9")),
    ("pad-sequences-numpy-bool", lambda: pad_sequences([[np.True_]], 0),
     (TypeError, "must be an int token id; got np.True_")),
    ("pad-sequences-negative", lambda: pad_sequences([[1, -2]], 0),
     (ValueError, r"seqs\[0\]\[1\] = -2 is not a token id: ids are ints ≥ 0")),
    ("pad-sequences-pad-id-negative", lambda: pad_sequences([[1]], -1),
     (ValueError, r"pad_id must be an int ≥ 0; got -1")),
    ("pad-sequences-vocab", lambda: pad_sequences([[1]], 5, vocab_size=4),
     (ValueError, "pad_id=5 is not a token id of a vocabulary of 4")),
    # ---------------------------------------------------------------- word2vec
    ("vocab-encode-str", lambda: vocab().encode("cat"),
     (TypeError, "tokens must be a list of words, not a single str.*'cat'")),
    ("vocab-encode-unknown", lambda: vocab().encode(["cat", "zzz", "dog"]),
     (ValueError, r"2 of 3 words are not in the vocabulary, e.g. \['zzz', 'dog'\]")),
    ("vocab-encode-drop", lambda: vocab().encode(["cat", "zzz"], unknown="drop"),
     lambda ids: ids.tolist() == [1]),
    ("vocab-encode-mark", lambda: vocab().encode(["cat", "zzz"], unknown=-1),
     lambda ids: ids.tolist() == [1, -1]),
    ("vocab-encode-bad-unknown", lambda: vocab().encode(["cat"], unknown=2.5),
     (TypeError, "unknown.*must be an int")),
    ("vocab-encode-non-str", lambda: vocab().encode(["cat", 3]),
     (TypeError, r"tokens\[1\] must be a str; got 3")),
    ("vocab-index-int", lambda: vocab().index(3), (TypeError, "word must be a str")),
    ("vocab-float-counts", lambda: Vocab(["a"], [1.5]), (TypeError, "counts must be integers")),
    ("build-vocab-min-count-float", lambda: build_vocab(["a", "a"], min_count=2.5),
     (TypeError, r"min_count must be an int; got 2\.5")),
    ("build-vocab-str", lambda: build_vocab("a b"), (TypeError, "list of words.*got str")),
    ("build-vocab-empty", lambda: build_vocab([]), (ValueError, "empty")),
    ("build-vocab-max-size", lambda: build_vocab(["a"], min_count=1, max_size=0),
     (ValueError, "max_size must be a positive int; got 0")),
    ("skipgram-float-ids", lambda: skipgram_pairs(np.array([0.0, 1.0]), 1),
     (TypeError, "integer word ids.*float64")),
    ("skipgram-window-float", lambda: skipgram_pairs(np.array([0, 1]), 2.5),
     (TypeError, r"window must be an int; got 2\.5")),
    ("skipgram-2d", lambda: skipgram_pairs(np.zeros((2, 2), dtype=int), 1),
     (ValueError, r"1-D \(n,\), got shape \(2, 2\)")),
    ("skipgram-tensor-ok", lambda: skipgram_pairs(torch.tensor([0, 1, 2]), 1),
     lambda out: len(out[0]) == 4),
    ("cbow-window-zero", lambda: cbow_examples(np.array([0, 1]), 0, pad_id=9),
     (ValueError, "window must be a positive int; got 0")),
    ("ns-loss-dtypes", lambda: negative_sampling_loss(r(2, 3, dtype=torch.float64), r(2, 3),
                                                      r(2, 4, 3)),
     (TypeError, "dtypes must match: v torch.float64, u_pos torch.float32")),
    ("ns-loss-shapes", lambda: negative_sampling_loss(r(2, 3), r(2, 3), r(2, 3)),
     (ValueError, r"u_neg \(batch, k, dim\).*u_neg \(2, 3\)")),
    ("ns-loss-numpy", lambda: negative_sampling_loss(np.ones((2, 3)), r(2, 3), r(2, 4, 3)),
     (TypeError, "v must be a torch tensor")),
    ("ns-loss-k1-batch1", lambda: negative_sampling_loss(r(1, 3), r(1, 3), r(1, 1, 3)),
     lambda loss: loss.ndim == 0),
    ("skipgram-model-float", lambda: SkipGram(10.0, 4), (TypeError, "vocab_size must be an int")),
    ("cbow-model-zero", lambda: CBOW(0, 4), (ValueError, "vocab_size must be a positive int")),
    ("train-dim-float", lambda: train_word2vec(["a", "b"] * 10, dim=2.5, progress=False),
     (TypeError, r"dim must be an int; got 2\.5")),
    ("train-lr-zero", lambda: train_word2vec(["a", "b"] * 10, lr=0.0, progress=False),
     (ValueError, r"lr must lie in \(0, inf\); got 0")),
    ("train-str-tokens", lambda: train_word2vec("a b a b", progress=False),
     (TypeError, "list of words")),
    ("similar-unknown", lambda: most_similar(E(), vocab(), "zzz"),
     (ValueError, "'zzz' is not in the vocabulary")),
    ("similar-k-zero", lambda: most_similar(E(), vocab(), "cat", k=0),
     (ValueError, "k must be a positive int; got 0")),
    ("similar-k-float", lambda: most_similar(E(), vocab(), "cat", k=1.5),
     (TypeError, r"k must be an int; got 1\.5")),
    ("similar-int-word", lambda: most_similar(E(), vocab(), 5),
     (TypeError, "word must be a str or a vector")),
    ("similar-wrong-E", lambda: most_similar(r(4, 4), vocab(), "cat"),
     (ValueError, r"E must be \(vocab=3, dim\), got \(4, 4\)")),
    ("analogy-int", lambda: analogy(E(), vocab(), 1, "cat", "sat"),
     (TypeError, "a must be a word")),
    ("analogy-ok", lambda: analogy(E(), vocab(), "the", "cat", "sat", k=5), lambda out: out == []),
    ("noise-str", lambda: noise_distribution(["a"]), (TypeError, "counts must be numbers")),
    ("noise-empty", lambda: noise_distribution([]), (ValueError, "non-empty")),
    ("keep-t-zero", lambda: keep_probabilities([1, 2], t=0), (ValueError, r"t must lie in \(0")),
    ("table-size-float", lambda: unigram_table(torch.tensor([0.5, 0.5]), size=2.5),
     (TypeError, "size must be an int")),
    ("cosine-dims", lambda: cosine_similarity(r(3), r(4)), (ValueError, r"\(3,\), \(4,\)")),
    ("cosine-bool", lambda: cosine_similarity(torch.ones(3, dtype=torch.bool), r(3)),
     (TypeError, "A must hold numbers")),
    ("vocab-negative-count", lambda: Vocab(["a", "b"], [-1, 5]),
     (ValueError, r"counts must be ≥ 0 .*counts\[0\] = -1 for 'a'")),
    ("vocab-2d-counts", lambda: Vocab(["a", "b"], [[1, 2]]), (ValueError, r"1-D .*\(1, 2\)")),
    ("table-nan", lambda: unigram_table(torch.tensor([float("nan"), 0.5]), size=10),
     (ValueError, r"probs must be finite and ≥ 0; got probs\[0\] = nan")),
    ("table-negative", lambda: unigram_table(torch.tensor([0.5, -0.5]), size=10),
     (ValueError, r"probs\[1\] = -0\.5")),
    ("table-zeros", lambda: unigram_table(torch.zeros(3), size=10),
     (ValueError, "at least one entry > 0")),
    ("keep-all-zero", lambda: keep_probabilities([0, 0]),
     (ValueError, r"counts must have at least one entry > 0; got 2 entries, all 0")),
    ("keep-negative", lambda: keep_probabilities([3, -1]),
     (ValueError, r"counts\[1\] = -1")),
    ("keep-inf", lambda: keep_probabilities([3.0, float("inf")]),
     (ValueError, r"counts\[1\] = inf")),
    ("keep-str", lambda: keep_probabilities(["a"]), (TypeError, "counts must be numbers")),
    ("keep-zero-count-ok", lambda: keep_probabilities([0, 10**6], t=1e-4),
     lambda p: p[0] == 1.0 and 0 < p[1] < 1),
    ("subsample-negative-id", lambda: subsample(np.array([-1, 0]), np.array([0.5, 0.5]),
                                                np.random.default_rng(0)),
     (ValueError, r"ids must lie in \[0, 2\) .*got -1")),
    ("subsample-id-too-large", lambda: subsample(np.array([0, 2]), np.array([0.5, 0.5]),
                                                 np.random.default_rng(0)),
     (ValueError, r"got 2")),
    ("subsample-float-ids", lambda: subsample(np.array([0.0, 1.0]), np.array([0.5, 0.5]),
                                              np.random.default_rng(0)),
     (TypeError, "integer word ids")),
    ("subsample-segments-length", lambda: subsample(np.array([0, 1]), np.array([0.5, 0.5]),
                                                    np.random.default_rng(0), np.array([0])),
     (ValueError, "segments has 1 entries for 2 ids")),
    ("subsample-ok", lambda: subsample(np.array([0, 1], dtype=np.int32), np.array([1.0, 1.0]),
                                       np.random.default_rng(0)),
     lambda out: out[0].tolist() == [0, 1] and out[0].dtype == np.int32),
    ("ns-loss-empty-batch", lambda: negative_sampling_loss(r(0, 3), r(0, 3), r(0, 4, 3)),
     (ValueError, r"empty batch \(batch = 0\)")),
    ("skipgram-model-empty-batch", lambda: SkipGram(10, 4)(*_w2v_ids(0)),
     (ValueError, r"empty batch \(batch = 0\)")),
    ("cbow-model-empty-batch", lambda: CBOW(10, 4)(torch.zeros(0, 2, dtype=torch.long),
                                                   *_w2v_ids(0)[1:]),
     (ValueError, r"empty batch")),
    ("skipgram-model-float-ids", lambda: SkipGram(10, 4)(torch.tensor([1.0]), *_w2v_ids(1)[1:]),
     (TypeError, "centers must hold integer word ids; got dtype torch.float32")),
    ("skipgram-model-bool-ids", lambda: SkipGram(10, 4)(*_w2v_ids(1)[:2],
                                                        torch.ones(1, 2, dtype=torch.bool)),
     (TypeError, "negatives must hold integer word ids; got dtype torch.bool")),
    ("skipgram-model-id-10", lambda: SkipGram(10, 4)(torch.tensor([10]), *_w2v_ids(1)[1:]),
     (ValueError, r"centers holds id 10, outside the 10 words' ids \[0, 10\)")),
    ("skipgram-model-negative-id", lambda: SkipGram(10, 4)(*_w2v_ids(1)[:2],
                                                           torch.tensor([[1, -1]])),
     (ValueError, "negatives holds id -1")),
    ("cbow-model-pad-context-ok", lambda: CBOW(10, 4)(torch.tensor([[10, 1]]), *_w2v_ids(1)[1:]),
     lambda loss: loss.ndim == 0 and finite(loss)),
    ("cbow-model-context-11", lambda: CBOW(10, 4)(torch.tensor([[11, 1]]), *_w2v_ids(1)[1:]),
     (ValueError, r"contexts holds id 11, outside the 11 words' ids")),
    # ---------------------------------------------------------------- decoding
    ("lp-ok", lambda: gnmt_length_penalty(7, 0.5), lambda lp: abs(lp - 2 ** 0.5) < 1e-12),
    ("lp-inf", lambda: gnmt_length_penalty(3, float("inf")),
     (ValueError, "alpha must be finite; got inf")),
    ("lp-nan", lambda: gnmt_length_penalty(3, float("nan")),
     (ValueError, "alpha must be a number, got NaN")),
    ("lp-overflow", lambda: gnmt_length_penalty(10, 1e6),
     (ValueError, r"\(\(5 \+ 10\) / 6\)\^1e\+06 overflows: alpha=1e\+06 is too large for length 10")),
    ("lp-overflow-tensor", lambda: gnmt_length_penalty(torch.tensor([1, 10]), 1e6),
     (ValueError, r"overflows: alpha=1e\+06 is too large for length 10")),
    ("lp-negative-length", lambda: gnmt_length_penalty(-7, 0.5),
     (ValueError, r"length must lie in \[0, inf\); got -7")),
    ("lp-negative-length-tensor", lambda: gnmt_length_penalty(torch.tensor([3, -7]), 0.5),
     (ValueError, r"length must be ≥ 0 \(a number of tokens\); got -7")),
    ("beam-lp-ok", lambda: beam_search(s2s(), SRC, 2, 5, 1, 2, length_penalty=0.6),
     lambda ids: ids.shape[0] == 2),
    ("beam-lp-inf", lambda: beam_search(s2s(), SRC, 2, 5, 1, 2, length_penalty=float("inf")),
     (ValueError, "length_penalty must be finite; got inf")),
    ("beam-lp-nan", lambda: beam_search(s2s(), SRC, 2, 5, 1, 2, length_penalty=float("nan")),
     (ValueError, "length_penalty must be a number, got NaN")),
    ("beam-lp-overflow", lambda: beam_search(s2s(), SRC, 2, 5, 1, 2, length_penalty=1e6),
     (ValueError, r"length_penalty=1e\+06 is too large for outputs of up to 5 tokens.*"
                  r"use length_penalty ≤ 86\.8")),
    ("scores-lp-overflow", lambda: sequence_scores(s2s(), SRC, SRC, 1, 2, length_penalty=1e6),
     (ValueError, r"length_penalty=1e\+06 is too large for outputs of up to 3 tokens")),
    ("greedy-bos-vocab", lambda: greedy_search(s2s(), SRC, 5, 12, 2),
     (ValueError, r"bos_id=12 is not in the model's vocabulary of 12 tokens \(ids 0..11\)")),
    ("greedy-eos-vocab", lambda: greedy_search(s2s(), SRC, 5, 1, 40),
     (ValueError, r"eos_id=40 is not in the model's vocabulary of 12 tokens")),
    ("greedy-pad-vocab", lambda: greedy_search(s2s(), SRC, 5, 1, 2, pad_id=12),
     (ValueError, r"pad_id=12 is not in the model's vocabulary of 12 tokens")),
    ("greedy-gru-bos-vocab", lambda: greedy_search(gru(), SRC, 5, 12, 2),
     (ValueError, r"bos_id=12 is not in the model's vocabulary of 12 tokens")),
    ("beam-pad-vocab", lambda: beam_search(s2s(), SRC, 2, 5, 1, 2, pad_id=99),
     (ValueError, r"pad_id=99 is not in the model's vocabulary of 12 tokens")),
    ("beam-eos-vocab", lambda: beam_search(gru(), SRC, 2, 5, 1, 12),
     (ValueError, r"eos_id=12 is not in the model's vocabulary of 12 tokens")),
    ("scores-bos-vocab", lambda: sequence_scores(s2s(), SRC, SRC, 12, 2),
     (ValueError, r"bos_id=12 is not in the model's vocabulary of 12 tokens")),
    ("generate-zero-tokens", lambda: generate(lm(), SRC, 0),
     (ValueError, "max_new_tokens must be a positive int; got 0")),
    ("generate-negative-tokens", lambda: generate(lm(), SRC, -2),
     (ValueError, "max_new_tokens must be a positive int; got -2")),
    ("generate-float-tokens", lambda: generate(lm(), SRC, 2.5),
     (TypeError, r"max_new_tokens must be an int; got 2\.5")),
    ("generate-eos-vocab", lambda: generate(lm(), SRC, 3, eos_id=12),
     (ValueError, r"eos_id=12 is not in the model's vocabulary of 12 tokens")),
    ("generate-ok", lambda: generate(lm(), SRC, 2, greedy=True), lambda ids: ids.shape == (2, 5)),
    ("sample-nan", lambda: sample_next(_logits(r1c2=float("nan"))),
     (ValueError, r"logits hold NaN \(row 1 of \(2, 3\)\)")),
    ("sample-greedy-nan", lambda: sample_next(_logits(r0c0=float("nan")), greedy=True),
     (ValueError, r"logits hold NaN \(row 0 of \(2, 3\)\)")),
    ("sample-all-minus-inf", lambda: sample_next(
        _logits(r1c0=float("-inf"), r1c1=float("-inf"), r1c2=float("-inf")), greedy=True),
     (ValueError, r"logits are -inf for every token in row 1 of \(2, 3\)")),
    ("sample-plus-inf", lambda: sample_next(_logits(r0c1=float("inf"))),
     (ValueError, r"logits hold \+inf \(row 0 of \(2, 3\)\).*greedy=True")),
    ("sample-some-minus-inf-ok", lambda: sample_next(_logits(r0c2=float("-inf")), greedy=True),
     lambda ids: ids.tolist() == [1, 0]),
    ("sample-tiny-temperature", lambda: sample_next(_logits(), temperature=1e-45),
     lambda ids: ids[0] == 2 and 0 <= ids[1] <= 2),  # the limit: row 0's largest logit
    ("sample-tiny-temperature-top-k", lambda: sample_next(_logits(), temperature=1e-45, top_k=2),
     lambda ids: ids[0] == 2),
    ("sample-inf-temperature", lambda: sample_next(_logits(), temperature=float("inf")),
     (ValueError, "temperature must be > 0 and finite .*got inf")),
    ("sample-nan-temperature", lambda: sample_next(_logits(), temperature=float("nan")),
     (ValueError, "temperature must be > 0 and finite")),
    ("sample-str-temperature", lambda: sample_next(_logits(), temperature="1"),
     (TypeError, "temperature must be a number; got '1'")),
    ("generate-encoder-decoder", lambda: generate(s2s(), SRC, 2),
     (TypeError, "Transformer is an encoder-decoder: translate with greedy_search or "
                 "beam_search")),
    ("generate-gru", lambda: generate(gru(), SRC, 2), (TypeError, "Seq2SeqGRU is an encoder")),
    ("gru-lengths-cut-real-tokens", lambda: gru().encode(SRC, torch.tensor([2, 2])),
     (ValueError, r"src_lengths gives row 0 2 tokens, but src has the real \(non-pad\) token 7 "
                  r"at position 2: the encoder would silently drop it")),
    ("gru-mask-cuts-real-tokens", lambda: gru().encode(
        SRC, torch.tensor([[True, True, True], [True, False, False]])),
     (ValueError, r"src_mask gives row 1 1 tokens, but src has the real \(non-pad\) token 9 at "
                  r"position 1")),
    ("gru-lengths-ok", lambda: gru().encode(SRC, torch.tensor([3, 2])),
     lambda out: torch.equal(out[2], SRC != 0)),
    ("gru-lengths-over-padding-ok", lambda: gru().encode(SRC, torch.tensor([3, 3])),
     lambda out: bool(out[2].all())),
    ("evaluating-str", lambda: evaluating("model").__enter__(),
     (TypeError, "model must be a torch.nn.Module; got str")),
    # ---------------------------------------------------------------- BLEU
    ("bleu-stats-ok", lambda: bleu_from_stats(BLEU_STATS), lambda b: abs(b.score - 100) < 1e-9),
    ("bleu-matches-over-totals", lambda: bleu_from_stats(_stats(s3=7)),
     (ValueError, r"matches_2 \(stats\[3\]\) = 7 > totals_2 \(stats\[7\]\) = 4")),
    ("bleu-negative", lambda: bleu_from_stats(_stats(s4=-1)),
     (ValueError, r"stats\[4\] \(matches_3\) must be an int ≥ 0; got -1")),
    ("bleu-totals-not-c", lambda: bleu_from_stats(_stats(s6=9)),
     (ValueError, r"totals_1 \(stats\[6\]\) = 9 but c \(stats\[0\]\) = 5")),
    ("bleu-totals-growing", lambda: bleu_from_stats(_stats(s9=4)),
     (ValueError, r"totals_4 \(stats\[9\]\) = 4 > totals_3 \(stats\[8\]\) = 3")),
    ("bleu-stats-length", lambda: bleu_from_stats(BLEU_STATS + [1]),
     (ValueError, r"stats must hold 10 numbers .*got 11")),
    ("bleu-stats-float", lambda: bleu_from_stats(_stats(s0=5.0)),
     (TypeError, r"stats\[0\] \(c\) must be an int; got 5\.0")),
    ("ngrams-zero", lambda: ngrams(["a", "b"], 0), (ValueError, "n must be a positive int; got 0")),
    ("ngrams-negative", lambda: ngrams(["a", "b"], -1),
     (ValueError, "n must be a positive int; got -1")),
    ("ngrams-float", lambda: ngrams(["a", "b"], 2.0), (TypeError, r"n must be an int; got 2\.0")),
    ("bleu-bigrams-without-unigrams", lambda: bleu_from_stats([4, 4, 0, 3, 0, 0, 4, 3, 2, 1]),
     (ValueError, r"matches_2 \(stats\[3\]\) = 3 but matches_1 \(stats\[2\]\) = 0")),
    ("bleu-4grams-without-trigrams", lambda: bleu_from_stats(_stats(s4=0)),
     (ValueError, r"matches_4 \(stats\[5\]\) = 2 but matches_3 \(stats\[4\]\) = 0")),
    ("bleu-no-higher-matches-ok", lambda: bleu_from_stats(_stats(s3=0, s4=0, s5=0)),
     lambda b: b.score > 0),
    ("bucket-label-reversed", lambda: bucket_label((5, 3)),
     (ValueError, r"bucket \(5, 3\) is empty: its high end is below its low end")),
    ("bucket-label-zero", lambda: bucket_label((0, 3)),
     (ValueError, "bucket's low end must be a positive int; got 0")),
    ("bucket-label-float", lambda: bucket_label((1.5, 3)),
     (TypeError, r"bucket's low end must be an int; got 1\.5")),
    ("bucket-label-str", lambda: bucket_label("5-3"), (TypeError, "bucket must be a \\(low, high\\) pair")),
    ("bucket-label-ok", lambda: [bucket_label(b) for b in ((9, 12), (19, None), (1, 8))],
     lambda labels: labels == ["9–12", "19+", "≤ 8"]),
    # ---------------------------------------------------------------- training
    ("train-eval-every-negative", lambda: _train_eval_every(-1),
     (ValueError, "eval_every must be an int ≥ 0; got -1")),
    ("train-eval-every-float", lambda: _train_eval_every(2.5),
     (TypeError, r"eval_every must be an int; got 2\.5")),
    ("train-eval-every-ok", lambda: _train_eval_every(1), lambda h: len(h.evals) == 1),
    ("train-schedule-unknown", lambda: _train_tiny(steps=2, schedule="cosine"),
     (ValueError, r"schedule must be one of \('inverse_sqrt', 'linear'\); got 'cosine'")),
    ("train-linear-no-steps", lambda: _train_tiny(max_seconds=1.0, schedule="linear"),
     (ValueError, 'schedule="linear" decays to zero at the last step: give steps=')),
    ("train-linear-warmup-too-long", lambda: _train_tiny(steps=3, warmup=3, schedule="linear"),
     (ValueError, "warmup=3 must be smaller than steps=3")),
    ("train-loss-float", lambda: _train_returning(lambda loss: loss.item()),
     (TypeError, r"loss_fn must return the loss as a one-element tensor.*got float.*\.item\(\)")),
    ("train-loss-per-row", lambda: _train_returning(lambda loss: loss.expand(2)),
     (TypeError, r"got a tensor of shape \(2,\).*\.mean\(\)")),
    ("train-loss-detached", lambda: _train_returning(lambda loss: loss.detach()),
     (ValueError, "does not depend on the model's parameters")),
    ("train-loss-tuple-ok", lambda: _train_returning(lambda loss: (loss, 2)),
     lambda h: h.steps == 1 and h.tokens == 2),
    ("train-linear-ok", lambda: _train_tiny(steps=3, warmup=1, schedule="linear"),
     lambda h: h.lrs[-1] == pytest.approx(0.1 / 2)),
    ("tt-schedule-unknown", lambda: _train_translator(schedule="step"),
     (ValueError, "schedule must be one of")),
    ("tt-average-last-negative", lambda: _train_translator(average_last=-1),
     (ValueError, "average_last must be an int ≥ 0; got -1")),
    ("tt-average-last-float", lambda: _train_translator(average_last=2.5),
     (TypeError, r"average_last must be an int; got 2\.5")),
    ("tt-eval-every-negative", lambda: _train_translator(eval_every=-5),
     (ValueError, "eval_every must be an int ≥ 0; got -5")),
    ("tt-pad-mismatch", lambda: _train_translator(_tt_config(pad_id=3)),
     (ValueError, r"config.pad_id=3 but tokenizer.pad_id=0")),
    ("tt-eos-mismatch", lambda: _train_translator(_tt_config(eos_id=5)),
     (ValueError, r"config.eos_id=5 but tokenizer.eos_id=2")),
    ("tt-vocab-mismatch", lambda: _train_translator(_tt_config(vocab_size=300)),
     (ValueError, r"config.vocab_size=300 but tokenizer.vocab_size=268")),
    ("tt-gru-pad-mismatch", lambda: _train_translator(Seq2SeqGRU(268, 268, 4, 4, pad_id=3)),
     (ValueError, r"model.pad_id=3 but tokenizer.pad_id=0")),
    ("tt-fused-gru", lambda: _train_translator(Seq2SeqGRU(268, 268, 4, 4), fused=True),
     (TypeError, "fused=True needs a Transformer .*got Seq2SeqGRU")),
    ("tt-fused-ok", lambda: _train_translator(fused=True), lambda out: out[1].steps == 1),
    ("smoothed-ce-label-out-of-vocab",
     lambda: smoothed_cross_entropy(torch.zeros(2, 5), torch.tensor([0, 5])),
     (ValueError, r"labels must lie in \[0, 5\) .*got 0\.\.5")),
    ("smoothed-ce-rows-disagree",
     lambda: smoothed_cross_entropy(torch.zeros(2, 5), torch.tensor([0, 1, 2])),
     (ValueError, r"logits \(2, 5\), labels \(3,\)")),
    ("smoothed-ce-3d-logits",
     lambda: smoothed_cross_entropy(torch.zeros(2, 3, 5), torch.tensor([0, 1])),
     (ValueError, "logits must have")),
    ("smoothed-ce-near-float-max", lambda: smoothed_cross_entropy(
        torch.tensor([[3e38, 3e38]]), torch.tensor([1]), 0.1),
     lambda loss: abs(float(loss) - float(F.cross_entropy(
         torch.tensor([[3e38, 3e38]]), torch.tensor([1]), label_smoothing=0.1))) < 1e-6),
    ("smoothed-ce-inf-logit", lambda: smoothed_cross_entropy(
        torch.tensor([[float("inf"), 0.0]]), torch.tensor([1]), 0.1),
     (ValueError, "logits hold NaN or inf")),
    ("sequence-loss-all-padding", lambda: sequence_loss(torch.zeros(2, 3, 5),
                                                        torch.zeros(2, 3, dtype=torch.long), 0),
     (ValueError, r"every target token is padding \(pad_id=0, tgt_out \(2, 3\)\)")),
    ("sequence-loss-float-targets", lambda: sequence_loss(torch.zeros(1, 2, 5), torch.ones(1, 2)),
     (TypeError, "tgt_out must hold integer token ids; got dtype torch.float32")),
    ("sequence-loss-ok", lambda: sequence_loss(torch.zeros(1, 2, 5), torch.tensor([[3, 0]])),
     lambda loss: abs(float(loss) - np.log(5)) < 1e-6),
    ("linear-decay-negative-step", lambda: warmup_linear_decay(-3, 2, 10),
     (ValueError, "step must be an int ≥ 0; got -3")),
    ("linear-decay-float-step", lambda: warmup_linear_decay(2.5, 2, 10),
     (TypeError, r"step must be an int; got 2\.5")),
    ("inverse-sqrt-negative-step", lambda: warmup_inverse_sqrt(-1, 10),
     (ValueError, "step must be an int ≥ 0; got -1")),
    ("inverse-sqrt-bool-step", lambda: warmup_inverse_sqrt(True, 10),
     (TypeError, "step must be an int; got True")),
    ("inverse-sqrt-ok", lambda: warmup_inverse_sqrt(np.int64(9), 10), lambda m: m == 1.0),
    ("average-states-later-key", lambda: average_states(
        [{"w": torch.ones(2)}, {"w": torch.ones(2), "b": torch.ones(1)}]),
     (ValueError, r"states\[1\] has other keys than states\[0\]: extra \['b'\]")),
    ("average-states-missing-key", lambda: average_states(
        [{"w": torch.ones(2), "b": torch.ones(1)}, {"w": torch.ones(2)}]),
     (ValueError, r"states\[1\] .*missing \['b'\]")),
    ("average-states-shape", lambda: average_states([{"w": torch.ones(2)}, {"w": torch.ones(3)}]),
     (ValueError, r"states\[1\]\['w'\] has shape \(3,\), states\[0\]'s \(2,\)")),
    ("average-states-one-dict", lambda: average_states({"w": torch.ones(2)}),
     (ValueError, "a non-empty list of state dicts")),
    ("average-states-ok", lambda: average_states([{"w": torch.ones(2)}, {"w": torch.zeros(2)}]),
     lambda s: s["w"].tolist() == [0.5, 0.5]),
    ("tt-tokenizer-path", lambda: train_translator(_tt_config(), "tok.json", [("a", "b")],
                                                   steps=1, progress=False),
     (TypeError, r"tokenizer must be a BPETokenizer; got str \(load it first")),
    ("tt-no-pairs", lambda: train_translator(_tt_config(), tok(), [], steps=1, progress=False,
                                             device="cpu"),
     (ValueError, "train_pairs is empty: give at least one")),
    # ---------------------------------------------------------------- blocks
    ("ffn-d-ff-zero", lambda: FeedForward(4, 0),
     (ValueError, "d_ff must be a positive int; got 0")),
    ("ffn-d-model-float", lambda: FeedForward(4.0, 8), (TypeError, "d_model must be an int")),
    ("ffn-dropout", lambda: FeedForward(4, 8, dropout=1.0),
     (ValueError, r"dropout must lie in \[0, 1\); got 1")),
    ("copy-gelu-into-relu", lambda: copy_weights_from_torch(
        EncoderLayer(8, 2, 16), _torch_layer(activation="gelu")),
     (ValueError, r"the modules differ in ffn.activation|activation: ours has 'relu', "
                  r"PyTorch's 'gelu'")),
    ("copy-post-norm-into-pre-norm", lambda: copy_weights_from_torch(
        EncoderLayer(8, 2, 16, norm_first=True), _torch_layer()),
     (ValueError, r"norm_first: ours has True, PyTorch's False")),
    ("copy-eps", lambda: copy_weights_from_torch(EncoderLayer(8, 2, 16), _torch_layer(
        layer_norm_eps=1e-6)), (ValueError, r"eps: ours has 1e-05, PyTorch's 1e-06")),
    ("copy-to-torch-gelu", lambda: copy_weights_to_torch(
        EncoderLayer(8, 2, 16, activation="gelu"), _torch_layer()),
     (ValueError, r"activation: ours has 'gelu', PyTorch's 'relu'")),
    ("copy-ok", lambda: copy_weights_from_torch(EncoderLayer(8, 2, 16, activation="gelu"),
                                                _torch_layer(activation="gelu")),
     lambda m: isinstance(m, EncoderLayer)),
    # ---------------------------------------------------------------- rnn
    ("additive-attention-no-keys", lambda: AdditiveAttention(3, 4, 5)(r(2, 3), r(2, 0, 4)),
     (ValueError, r"keys has no source position \(t_src = 0, shape \(2, 0, 4\)\)")),
    # ---------------------------------------------------------------- transformer
    ("src-mask-opposite-convention", lambda: s2s()(SRC, SRC, src_mask=~s2s().source_mask(SRC)),
     (ValueError, "src_mask lets queries attend to padding while hiding real tokens: it is in "
                  "the opposite convention")),
    ("src-mask-key-padding-style", lambda: s2s().encode(SRC, (SRC == 0)[:, None, None, :]),
     (ValueError, "opposite convention")),
    ("src-mask-ours-ok", lambda: s2s()(SRC, SRC, src_mask=s2s().source_mask(SRC)),
     lambda y: y.shape == (2, 3, 12)),
    ("src-mask-hides-a-real-token-ok", lambda: s2s().encode(
        SRC, s2s().source_mask(SRC) & torch.tensor([True, False, True])), finite),
    # ---------------------------------------------------------------- variants
    ("windows-negative-length", lambda: random_windows(torch.arange(10), 2, -1, _g()),
     (ValueError, "length must be a positive int; got -1")),
    ("windows-too-long", lambda: random_windows(torch.arange(3), 2, 5, _g()),
     (ValueError, r"length=5 is longer than ids \(3 ids\)")),
    ("windows-zero-n", lambda: random_windows(torch.arange(10), 0, 2, _g()),
     (ValueError, "n must be a positive int; got 0")),
    ("windows-ok", lambda: random_windows(torch.arange(10), 2, 3, _g()),
     lambda w: w.shape == (2, 3) and bool((w[:, 1:] - w[:, :-1] == 1).all())),
    ("windows-generator-int", lambda: random_windows(torch.arange(10), 2, 3, 0),
     (TypeError, "generator must be a torch.Generator.*got int")),
    # ---------------------------------------------------------------- pretrain (as variants)
    ("pretrain-windows-zero-length", lambda: pretrain_windows(torch.arange(10), 2, 0, _g()),
     (ValueError, "length must be a positive int; got 0")),
    ("pretrain-windows-negative-length", lambda: pretrain_windows(torch.arange(10), 2, -1, _g()),
     (ValueError, "length must be a positive int; got -1")),
    ("pretrain-windows-zero-n", lambda: pretrain_windows(torch.arange(10), 0, 2, _g()),
     (ValueError, "n must be a positive int; got 0")),
    ("pretrain-windows-float-length", lambda: pretrain_windows(torch.arange(10), 2, 2.0, _g()),
     (TypeError, r"length must be an int; got 2\.0")),
    ("pretrain-windows-list", lambda: pretrain_windows(list(range(10)), 2, 3, _g()),
     (TypeError, "ids must be a torch tensor; got list")),
    ("pretrain-windows-float-ids", lambda: pretrain_windows(torch.arange(10.0), 2, 3, _g()),
     (TypeError, "ids must be integer token ids; got dtype torch.float32")),
    ("pretrain-windows-generator-none", lambda: pretrain_windows(torch.arange(10), 2, 3, None),
     (TypeError, "generator must be a torch.Generator")),
    ("pretrain-windows-ok", lambda: pretrain_windows(torch.arange(10), 2, 3, _g()),
     lambda w: w.shape == (2, 3) and bool((w[:, 1:] - w[:, :-1] == 1).all())),
    ("pretrain-windows-of-zero", lambda: windows_of(torch.arange(10), 0),
     (ValueError, "length must be a positive int; got 0")),
    # ---------------------------------------------------------------- errors named at the door
    ("softmax-empty-tensor", lambda: softmax(torch.empty(0)),
     (ValueError, r"softmax over an empty axis: axis=-1 of shape \(0,\)")),
    ("softmax-empty-axis-array", lambda: softmax(np.empty((2, 0))),
     (ValueError, r"empty axis: axis=-1 of shape \(2, 0\)")),
    ("softmax-empty-other-axis-ok", lambda: softmax(np.empty((0, 3))), lambda y: y.shape == (0, 3)),
    ("layernorm-numpy", lambda: LayerNorm(4)(np.ones((2, 4), dtype=np.float32)),
     (TypeError, "x must be a torch tensor; got ndarray of dtype float32")),
    ("layernorm-int64", lambda: LayerNorm(4)(torch.ones(2, 4, dtype=torch.long)),
     (TypeError, "x must be a floating-point tensor; got dtype torch.int64")),
    ("layernorm-float64", lambda: LayerNorm(4)(torch.ones(2, 4, dtype=torch.float64)),
     (TypeError, "dtypes must match: x torch.float64, weight torch.float32")),
    ("layernorm-half-ok", lambda: LayerNorm(4)(r(2, 4).half()), lambda y: y.dtype == torch.float16),
    ("layernorm-eps-zero", lambda: LayerNorm(4, eps=0), (ValueError, r"eps must lie in \(0, inf\)")),
    ("ffn-numpy", lambda: FeedForward(4, 8)(np.ones((1, 2, 4))),
     (TypeError, "x must be a torch tensor; got ndarray")),
    ("ffn-width", lambda: FeedForward(4, 8)(r(1, 2, 5)),
     (ValueError, r"FeedForward\(d_model=4\) got x of shape \(1, 2, 5\)")),
    ("history-smoothed-0", lambda: _history().smoothed(0),
     (ValueError, "window must be a positive int; got 0")),
    ("history-smoothed-negative", lambda: _history().smoothed(-1),
     (ValueError, "window must be a positive int; got -1")),
    ("history-smoothed-float", lambda: _history().smoothed(2.5),
     (TypeError, r"window must be an int; got 2\.5")),
    ("history-smoothed-ok", lambda: _history().smoothed(2), lambda y: y == [1.0, 1.5, 2.5]),
    ("history-from-dict-missing", lambda: History.from_dict({"losses": []}),
     (ValueError, "lacks evals, seconds, tokens")),
    ("history-from-dict-list", lambda: History.from_dict([1.0]),
     (TypeError, "a History's dict must be a dict.*got list")),
    ("sequence-loss-target-outside", lambda: sequence_loss(
        torch.zeros(2, 3, 5), torch.full((2, 3), 7), pad_id=0),
     (ValueError, r"tgt_out holds ids outside the vocabulary 0\.\.4 .*\[7\]")),
    ("sequence-loss-ignore-ok", lambda: sequence_loss(
        torch.zeros(1, 2, 5), torch.tensor([[3, -100]]), pad_id=-100), finite),
    ("mask-tokens-all-special", lambda: mask_tokens(
        torch.ones(2, 3, dtype=torch.long), 4, 5, special_ids=range(5), generator=_g()),
     (ValueError, "every id of the vocabulary 0..4 is special")),
    ("mask-tokens-outside-vocab", lambda: mask_tokens(
        torch.full((2, 3), 9), 4, 5, generator=_g()),
     (ValueError, r"tokens holds ids outside the vocabulary 0\.\.4: min 9, max 9")),
    ("mask-tokens-special-str", lambda: mask_tokens(
        torch.ones(2, 3, dtype=torch.long), 4, 5, special_ids="01", generator=_g()),
     (TypeError, "special_ids must be ints")),
    ("count-parameters-array", lambda: count_parameters(np.ones(3)),
     (TypeError, "model must be a torch.nn.Module; got ndarray")),
    ("gru-lm-streams-batch-0", lambda: streams_of(torch.arange(100), 0),
     (ValueError, "batch must be a positive int; got 0")),
    ("variants-summarize-empty", lambda: summarize([]),
     (ValueError, "results must be a non-empty list of VariantResult")),
    ("pretrain-encode-stream-no-tokenizer", lambda: encode_stream(None, ["a"]),
     (TypeError, "tok must be a BPETokenizer.*NoneType")),
    ("bootstrap-seed-str", lambda: bootstrap_interval(["a b"], [["a b"]], n=10, seed="x"),
     (TypeError, "seed must be an int; got 'x'")),
    ("race-step-ratio-empty", lambda: step_time_ratio({"gru": [], "transformer": [1.0]}),
     (ValueError, "seconds must be step_seconds' dict")),
    ("race-step-ratio-zero", lambda: step_time_ratio({"gru": [1.0], "transformer": [0.0]}),
     (ValueError, r"seconds\['transformer'\] entries must lie in \(0, inf\); got 0")),
    ("race-step-ratio-nan", lambda: step_time_ratio({"gru": [float("nan")], "transformer": [1.0]}),
     (ValueError, "must be a number, got NaN")),
    ("race-step-ratio-ok", lambda: step_time_ratio({"gru": [3.0, 1.0, 2.0], "transformer": [1.0]}),
     lambda x: x == 2.0),
    ("variants-validation-loss-empty", lambda: validation_loss(lm(), torch.ones(0, 5).long()),
     (ValueError, r"windows is empty \(shape \(0, 5\)\)")),
    ("variants-validation-loss-batch-0", lambda: validation_loss(lm(), torch.ones(2, 5).long(), 0),
     (ValueError, "batch must be a positive int; got 0")),
    ("gru-lm-frequency-ids-str", lambda: frequency_ids("the cat"),
     (TypeError, "train must be a list of training words, not a single str")),
    # ---------------------------------------------------------------- sentences
    ("not-english-negative-max", lambda: not_english_reason("the cat sat", max_unknown=-1),
     (ValueError, r"max_unknown must be a fraction in \[0, 1\]; got -1")),
    ("not-english-nan-max", lambda: not_english_reason("the cat sat", max_unknown=float("nan")),
     (ValueError, "max_unknown must be a fraction")),
    ("not-english-str-vocabulary", lambda: not_english_reason("the cat", vocabulary="the cat"),
     (TypeError, r"vocabulary must be a set of words.*got str \(a str would test substrings\)")),
    ("not-english-bytes-line", lambda: not_english_reason(b"the cat"),
     (TypeError, "line must be a str; got bytes")),
    ("not-english-set-ok", lambda: not_english_reason("the cat sat", vocabulary={"the", "cat"}),
     lambda reason: reason is None),
    # ---------------------------------------------------------------- utils
    ("seed-numpy-int", lambda: seed_everything(np.int64(3)), lambda out: out is None),
    ("seed-2-to-the-64", lambda: seed_everything(2**64),
     (ValueError, r"seed must be an int in 0..2\*\*64 - 1 \(PyTorch's range\); got 18446")),
    ("seed-largest-ok", lambda: seed_everything(2**64 - 1), lambda out: out is None),
    ("seed-float", lambda: seed_everything(3.0), (TypeError, r"seed must be an int; got 3\.0")),
    # ---------------------------------------------------------------- export
    ("export-nan-weight", lambda: browser_files(_exportable(float("nan"))),
     (ValueError, r"tensor .* holds 1 non-finite value\(s\) \(NaN or inf\)")),
    ("export-weight-beyond-float16", lambda: browser_files(_exportable(1e5)),
     (ValueError, r"holds 100000, beyond float16's largest value 65504")),
    ("export-int8-large-matrix-entry-ok", lambda: browser_files(_exportable(1e5), "int8"),
     lambda files: len(files) == 2),

    # ---------------------------------------------------------------- bottleneck (chapter 9)
    ("bn-vocab-str", lambda: bottleneck.build_vocab("abc"),
     (TypeError, "sentences must be a list of sentences, each a list of words; got one str")),
    ("bn-vocab-unsplit-sentences", lambda: bottleneck.build_vocab(["the cat", "the dog"], 1),
     (TypeError, r"sentences\[0\] must be a list of words, not a single str")),
    ("bn-vocab-empty", lambda: bottleneck.build_vocab([]), (ValueError, "sentences is empty")),
    ("bn-vocab-min-count-0", lambda: bottleneck.build_vocab([["a"]], 0),
     (ValueError, "min_count must be a positive int; got 0")),
    ("bn-vocab-int-words", lambda: bottleneck.build_vocab([[1, 2]], 1),
     (TypeError, r"sentences\[0\]\[0\] must be a str; got 1")),
    ("bn-vocab-special-word-keeps-its-id", lambda: bottleneck.build_vocab([["<pad>", "a"]], 1),
     lambda out: out[0]["<pad>"] == 0 and out[1] == bottleneck.SPECIALS + ["a"]),
    ("bn-encode-str-sides", lambda: bottleneck.encode_pairs([("a b", "b a")], {}, {}),
     (TypeError, r"pairs\[0\]'s source must be a list of words, not a single str")),
    ("bn-encode-one-pair", lambda: bottleneck.encode_pairs((["a"], ["b"]), {}, {}),
     (TypeError, r"wrap a single pair in a list")),
    ("bn-encode-stoi-list", lambda: bottleneck.encode_pairs([(["a"], ["b"])], ["a"], {}),
     (TypeError, "src_stoi must be a dict word -> id")),
    ("bn-encode-not-a-pair", lambda: bottleneck.encode_pairs([["a"]], {}, {}),
     (ValueError, r"pairs\[0\] must be a \(source words, target words\) pair")),
    ("bn-trim-1d", lambda: bottleneck.trim(*(x[0] for x in _bn_batch())),
     (ValueError, r"src must have 2 axes; got shape \(6,\)")),
    ("bn-trim-empty-batch", lambda: bottleneck.trim(*(x[:0] for x in _bn_batch())),
     (ValueError, r"trim takes one batch of B ≥ 1 rows.*\(0, 6\)")),
    ("bn-trim-numpy", lambda: bottleneck.trim(*(x.numpy() for x in _bn_batch())),
     (TypeError, "src must be a torch tensor; got ndarray")),
    ("bn-trim-all-padding", lambda: bottleneck.trim(*(torch.zeros_like(x) for x in _bn_batch())),
     (ValueError, "every source token of the batch is padding")),
    ("bn-trim-ok", lambda: bottleneck.trim(*_bn_batch()),
     lambda out: [tuple(x.shape) for x in out] == [(1, 1), (1, 2), (1, 2)]),
    ("bn-model-attention-str", lambda: bottleneck.build_model("yes", 10, 10, 0),
     (TypeError, "attention must be True or False; got 'yes'")),
    ("bn-train-two-tensors", lambda: bottleneck.train_translator(
        True, 0, _bn_batch()[:2], 10, 10, steps=1),
     (TypeError, "train_data must be encode_pairs' three tensors.*tuple of length 2")),
    ("bn-train-no-pairs", lambda: bottleneck.train_translator(
        True, 0, tuple(x[:0] for x in _bn_batch()), 10, 10, steps=1),
     (ValueError, r"same number ≥ 1 of pairs.*\(0, 6\)")),
    # ---------------------------------------------------------------- train_translator
    ("tt-encode-tokenizer-path", lambda: tt.encode_pairs("tok.json", [("a", "b")]),
     (TypeError, "tokenizer must be a BPETokenizer; got str")),
    ("tt-encode-dict", lambda: tt.encode_pairs(tok(), {"low": "lower"}),
     (TypeError, r"got dict: use list\(d.items\(\)\)")),
    ("tt-encode-none", lambda: tt.encode_pairs(tok(), None),
     (TypeError, "pairs must be a list of \\(en, es\\) pairs; got NoneType")),
    ("tt-encode-attribution-ok", lambda: tt.encode_pairs(tok(), [("low", "lower", "CC-BY")]),
     lambda out: len(out) == 1),
    ("tt-batches-seed-str", lambda: tt.bucketed_batches(_tt_examples(), 2, seed="x"),
     (TypeError, "seed must be an int; got 'x'")),
    ("tt-batches-bucket-str", lambda: tt.bucketed_batches(_tt_examples(), 2, bucket="no"),
     (TypeError, "bucket must be True or False")),
    ("tt-batches-text-pairs", lambda: tt.bucketed_batches([("low", "lower")], 2),
     (TypeError, r"examples\[0\] must be a \(source ids, target ids\) pair")),
    ("tt-batches-not-pairs", lambda: tt.bucketed_batches([[5, 6, 7]], 2),
     (TypeError, r"examples\[0\] must be a \(source ids, target ids\) pair")),
    ("tt-batches-empty-source", lambda: tt.bucketed_batches([([], [1, 2])], 2),
     (ValueError, r"examples\[0\] has an empty source")),
    ("tt-batches-pad-in-ids", lambda: tt.bucketed_batches([([5, 0, 2], [1, 2])], 2),
     (ValueError, r"examples\[0\]'s source holds pad_id=0 as a token")),
    ("tt-padding-fraction-empty", lambda: tt.padding_fraction([]),
     (ValueError, "batches holds no position at all")),
    ("tt-padding-fraction-one-batch", lambda: tt.padding_fraction(
        tt.bucketed_batches(_tt_examples(), 2)[0]), (TypeError, r"got one \(src, tgt\) pair")),
    ("tt-padding-fraction-numpy", lambda: tt.padding_fraction(
        [(np.zeros((1, 2), dtype=int), np.zeros((1, 2), dtype=int))]),
     (TypeError, r"batches\[0\]'s src must be a torch tensor; got ndarray")),
    ("tt-padding-fraction-pad-str", lambda: tt.padding_fraction(
        tt.bucketed_batches(_tt_examples(), 2), pad_id="0"), (TypeError, "pad_id must be an int")),
    ("tt-padding-fraction-ok", lambda: tt.padding_fraction(tt.bucketed_batches(_tt_examples(), 2)),
     lambda f: 0 < f < 1),
    ("tt-loss-fused-str", lambda: tt.translation_loss(fused="no"),
     (TypeError, "fused must be True or False")),
    ("tt-loss-pad-str", lambda: tt.translation_loss(pad_id="0"), (TypeError, "pad_id must be an int")),
    ("tt-loss-batch-tensor", lambda: _tt_loss(torch.ones(2, 3, dtype=torch.long)),
     (TypeError, r"batch must be a \(src, tgt\) pair of tensors.*got Tensor")),
    ("tt-loss-batch-numpy", lambda: _tt_loss((np.ones((1, 3), dtype=int), np.ones((1, 3), dtype=int))),
     (TypeError, "src must be a torch tensor; got ndarray")),
    ("tt-loss-model-str", lambda: _tt_loss(tt.bucketed_batches(_tt_examples(), 2)[0], "model"),
     (TypeError, "model must be an encoder-decoder.*got str")),
    ("tt-average-states-numpy", lambda: tt.average_states([{"w": np.ones(2)}, {"w": np.ones(2)}]),
     (TypeError, r"states\[0\]\['w'\] must be a tensor; got ndarray")),
    ("tt-oversample-str-pairs", lambda: tt.oversample_long(["ab"], ((1, 2),)),
     (ValueError, r"pairs\[0\] must be an \(en, es\) pair of strings; got 'ab'")),
    ("tt-concatenate-str-pairs", lambda: tt.concatenate_pairs(["ab", "cd"], 1),
     (ValueError, r"pairs\[0\] must be an \(en, es\) pair of strings")),
    ("tt-concatenate-seed-str", lambda: tt.concatenate_pairs([("a", "b"), ("c", "d")], 1, seed="x"),
     (TypeError, "seed must be an int; got 'x'")),
    ("tt-validation-pairs-negative", lambda: tt.validation_pairs(-1, 2),
     (ValueError, "short must be an int ≥ 0; got -1")),
    ("tt-training-mix-recipe", lambda: tt.training_mix([("a", "b")], {}),
     (ValueError, r"recipe must be a dict like FULL.*lacks \['repeat'")),
    # ---------------------------------------------------------------- race, pretrain, variants
    ("race-tokenizer-str-pairs", lambda: race.chapter_tokenizer("low lower"),
     (TypeError, "train_pairs must be a list of \\(en, es\\) pairs, not a string")),
    ("race-tokenizer-no-pairs", lambda: race.chapter_tokenizer([]),
     (ValueError, "train_pairs is empty")),
    ("race-config-tokenizer-str", lambda: race.transformer_config("tok"),
     (TypeError, "tokenizer must be a BPETokenizer.*got str")),
    ("race-model-tokenizer-none", lambda: race.build_model("gru", None),
     (TypeError, "tokenizer must be a BPETokenizer.*got NoneType")),
    ("pretrain-tokenizer-str", lambda: pretrain.chapter_tokenizer("the cat sat"),
     (TypeError, "train_words must be a list of words, not a single str")),
    ("pretrain-tokenizer-empty", lambda: pretrain.chapter_tokenizer([]),
     (ValueError, "train_words is empty")),
    ("pretrain-encode-stream-ints", lambda: encode_stream(tok(), [1, 2]),
     (TypeError, r"words\[0\] must be a str; got 1")),
    ("pretrain-encode-stream-empty-is-long", lambda: encode_stream(tok(), []),
     lambda ids: ids.dtype == torch.long and ids.shape == (0,)),
    ("pretrain-windows-of-float-ids", lambda: windows_of(torch.arange(10.0), 2),
     (TypeError, "ids must be integer token ids; got dtype torch.float32")),
    ("pretrain-window-batches-seed-str", lambda: next(pretrain.window_batches(
        torch.arange(100), 4, "x", "cpu")), (TypeError, "seed must be an int; got 'x'")),
    ("variants-windows-float-ids", lambda: random_windows(torch.arange(10.0), 2, 3, _g()),
     (TypeError, "ids must be integer token ids; got dtype torch.float32")),
    ("variants-kv-cache-context-negative", lambda: variants.kv_cache_bytes(lm(), -1),
     (ValueError, "context must be a positive int; got -1")),
    ("variants-kv-cache-small-vocab-ok", lambda: variants.kv_cache_bytes(lm(), 3),
     lambda b: b > 0),
    ("variants-options-str", lambda: variants.train_variant(
        "x", "rope", 0, torch.arange(3, 12), torch.ones(2, 5).long(), steps=1),
     (TypeError, "options must be a dict of TransformerConfig fields.*got str 'rope'")),
    ("variants-options-unknown", lambda: variants.train_variant(
        "x", {"bogus": 1}, 0, torch.arange(3, 12), torch.ones(2, 5).long(), steps=1),
     (ValueError, r"options holds \['bogus'\], not TransformerConfig fields")),
    ("variants-lr-nan", lambda: variants.train_variant(
        "x", {}, 0, torch.arange(3, 12), torch.ones(2, 5).long(), steps=1, lr=float("nan")),
     (ValueError, "lr must be a number, got NaN")),
    ("variants-batch-0", lambda: variants.train_variant(
        "x", {}, 0, torch.arange(3, 12), torch.ones(2, 5).long(), steps=1, batch=0),
     (ValueError, "batch must be a positive int; got 0")),
    ("variants-compare-seeds-int", lambda: variants.compare_variants(seeds=0, steps=1),
     (TypeError, "seeds must be a list of ints")),
    ("variants-compare-list", lambda: variants.compare_variants(["rope"], steps=1),
     (TypeError, "variants must be a dict name -> options")),
    ("variants-compare-empty", lambda: variants.compare_variants({}, steps=1),
     (ValueError, "variants is empty")),
    ("variants-compare-no-seeds", lambda: variants.compare_variants(seeds=(), steps=1),
     (ValueError, "seeds is empty")),
    ("variants-compare-length-0", lambda: variants.compare_variants(seeds=(0,), length=0),
     (ValueError, "length must be a positive int; got 0")),
    # ---------------------------------------------------------------- metrics
    ("tokenize-13a-bytes", lambda: tokenize_13a(b"a b"),
     (TypeError, "line must be a str \\(one sentence\\); got bytes")),
    ("tokenize-13a-none", lambda: tokenize_13a(None), (TypeError, "got NoneType")),
    ("ngrams-str", lambda: ngrams("abc", 2), (TypeError, "words must be a list of words, not a str")),
    ("closest-ref-empty", lambda: closest_ref_length(3, []), (ValueError, "ref_lens is empty")),
    ("closest-ref-negative", lambda: closest_ref_length(-3, [2]),
     (ValueError, "hyp_len must be an int ≥ 0; got -3")),
    ("sentence-stats-str-reference-ok", lambda: sentence_stats("a b c", "a b c"),
     lambda st: st == [3, 3, 3, 2, 1, 0, 3, 2, 1, 0]),
    ("sentence-stats-no-references", lambda: sentence_stats("a b", []),
     (ValueError, "references is empty")),
    ("sentence-stats-list-hypothesis", lambda: sentence_stats(["a", "b"], ["a b"]),
     (TypeError, "hypothesis must be a str; got list")),
    # ---------------------------------------------------------------- plots
    ("heatmap-complex", lambda: attention_heatmap(np.ones((2, 2)) * 1j),
     (TypeError, "A must hold real numbers")),
    ("heatmap-strings", lambda: attention_heatmap([["a", "b"]]), (TypeError, "A must hold real numbers")),
    ("heatmap-labels-int", lambda: attention_heatmap(np.ones((2, 2)), row_labels=5),
     (TypeError, "row_labels must be a list of labels; got int")),
    ("heatmap-labels-set", lambda: attention_heatmap(np.ones((2, 2)), row_labels={"a", "b"}),
     (TypeError, "a set has no order")),
    ("heatmap-ax-str", lambda: attention_heatmap(np.ones((2, 2)), ax="ax"),
     (TypeError, "ax must be a matplotlib Axes")),
    ("points-2d-empty", lambda: plots.tokens_and_outputs_2d(np.zeros((0, 2)), np.zeros((0, 2))),
     (ValueError, r"n ≥ 1; got X \(0, 2\)")),
    ("points-2d-nan", lambda: plots.tokens_and_outputs_2d(np.array([[np.nan, 1.0]]), np.zeros((1, 2))),
     (ValueError, "X holds NaN or inf")),
    ("points-2d-labels-short", lambda: plots.tokens_and_outputs_2d(np.eye(2), np.eye(2), ["a"]),
     (ValueError, "labels has 1 labels for 2")),
    ("points-2d-labels-str", lambda: plots.tokens_and_outputs_2d(np.eye(2), np.eye(2), "ab"),
     (TypeError, "labels must be a list of labels; got str")),
    ("rnn-diagram-steps-float", lambda: plots.rnn_unrolled_diagram(steps=2.5),
     (TypeError, r"steps must be an int; got 2\.5")),
    ("pipeline-i-float", lambda: plots.attention_pipeline_diagram(np.eye(2), 1.0),
     (TypeError, r"i must be an int; got 1\.0")),
    ("pipeline-overflow", lambda: plots.attention_pipeline_diagram(np.array([[1e200, 0], [0, 1]]), 0),
     (ValueError, "scores x_i · x_j are not all finite")),
    ("qkv-diagram-n-str", lambda: plots.qkv_projections_diagram(n="3"),
     (TypeError, "n must be an int; got '3'")),
    ("w2v-diagram-str", lambda: plots.word2vec_diagram("the cat", 1, 1),
     (TypeError, "words must be a list of words, not a single str")),
    ("w2v-diagram-window-float", lambda: plots.word2vec_diagram(["a", "b", "c"], 1, 1.5),
     (TypeError, r"window must be an int; got 1\.5")),
    ("w2v-diagram-one-axes", lambda: plots.word2vec_diagram(["a", "b"], 0, 1, axes=_axes(1)),
     (ValueError, "need two axes \\(skip-gram, CBOW\\); got one Axes")),
    ("layers-diagram-one-axes", lambda: plots.transformer_layers_diagram(axes=_axes(1)),
     (ValueError, "need two axes \\(encoder, decoder\\); got one Axes")),
    ("sdpa-diagram-ax-str", lambda: plots.sdpa_diagram(ax="x"),
     (TypeError, "ax must be a matplotlib Axes")),
]


def _fp16_case():
    """float16 scores q·k reach ~10⁵ and overflow unless Q is scaled first, as PyTorch does."""
    Q, K = ((60 * r(6, 64, seed=s)).half() for s in (1, 2))
    V = r(6, 64, seed=3).half()
    assert not torch.isfinite(Q @ K.T).all()  # the unscaled product overflows
    ours = scaled_dot_product_attention(Q, K, V)
    theirs = F.scaled_dot_product_attention(Q, K, V)
    assert torch.isfinite(theirs).all()
    torch.testing.assert_close(ours.float(), theirs.float(), atol=0.05, rtol=0.05)
    return ours


def _from_package(err: BaseException) -> bool:
    """The exception was raised by minformer's own code, not deep inside torch or NumPy."""
    frames = traceback.extract_tb(err.__traceback__)
    return "minformer" in frames[-1].filename


@pytest.mark.parametrize(("thunk", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_table(thunk, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyRowWarning)
        if isinstance(expected, tuple):
            error, pattern = expected
            with pytest.raises(Exception) as info:
                thunk()
            err = info.value
            assert type(err) is error, f"{type(err).__name__}: {err}"
            assert re.search(pattern, str(err)), str(err)
            assert _from_package(err), "".join(traceback.format_exception(err))
        else:
            out = thunk()
            if callable(expected):
                assert expected(out), out
    plt.close("all")


def test_table_size_and_verdicts():
    verdicts = [c[2] if not isinstance(c[2], tuple) else c[2][0] for c in CASES]
    n_ok = sum(1 for v in verdicts if v is OK or callable(v) and not isinstance(v, type))
    n_value = verdicts.count(ValueError)
    n_type = verdicts.count(TypeError)
    assert len(CASES) >= 100 and n_ok + n_value + n_type == len(CASES)
    assert len({c[0] for c in CASES}) == len(CASES)


def test_tokenizer_load_errors_name_the_file(tmp_path):
    path = tmp_path / "tok.json"
    tok().save(path)
    text = path.read_text(encoding="utf-8")
    cases = [
        (_file(tmp_path, text[: len(text) // 2], "truncated.json"), "truncated.json.*JSON"),
        (_file(tmp_path, "[1, 2]", "list.json"), "list.json is not a minformer BPE"),
        (_file(tmp_path, text.replace('"merges"', '"merged"'), "keys.json"),
         "keys.json: a damaged tokenizer file"),
        (tmp_path / "missing.json", "no tokenizer file at .*missing.json"),
        (tmp_path, "no tokenizer file at"),
    ]
    for bad, pattern in cases:
        with pytest.raises(ValueError, match=pattern) as info:
            BPETokenizer.load(bad)
        assert _from_package(info.value)
    with pytest.raises(TypeError, match="path must be a str or a Path"):
        BPETokenizer.load(3)
    assert BPETokenizer.load(path).merges == tok().merges


# ---------------------------------------------------------------- the empty-row warning
@pytest.fixture
def fresh_warning(monkeypatch):
    monkeypatch.setattr(attention, "_empty_row_warned", False)


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if issubclass(w.category, EmptyRowWarning)]


def test_flipped_causal_mask_warns_once(fresh_warning):
    Q = r(5, 4)
    flipped = ~causal_mask(5)  # nn.MultiheadAttention's convention: the last query sees nothing
    caught = _warnings(lambda: scaled_dot_product_attention(Q, Q, Q, flipped))
    assert len(caught) == 1 and "query 4" in str(caught[0].message)
    assert "~mask" in str(caught[0].message) and "allow_empty_rows=True" in str(caught[0].message)
    assert _warnings(lambda: scaled_dot_product_attention(Q, Q, Q, flipped)) == []  # once


def test_allow_empty_rows_silences_the_warning(fresh_warning):
    Q = r(5, 4)
    assert _warnings(lambda: scaled_dot_product_attention(
        Q, Q, Q, ~causal_mask(5), allow_empty_rows=True)) == []
    assert _warnings(lambda: mha()(X3, mask=~causal_mask(5), allow_empty_rows=True)) == []


def test_multi_head_attention_warns_on_a_flipped_padding_mask(fresh_warning):
    flipped = ~padding_mask([5, 5, 5])  # no padding: every key hidden
    assert len(_warnings(lambda: mha()(X3, mask=flipped))) == 1


@pytest.mark.parametrize("lengths", [[5, 3, 1], [1, 1, 1], [5, 5, 2]])
def test_ordinary_padded_batches_never_warn(fresh_warning, lengths):
    pad = padding_mask(lengths, 5)  # right padding, every sequence at least 1 token
    Q4 = r(3, 2, 5, 4)
    for mask in (pad, causal_mask(5) & pad, sliding_window_mask(5, 2) & pad):
        assert _warnings(lambda mask=mask: mha()(X3, mask=mask)) == []
        assert _warnings(lambda mask=mask: scaled_dot_product_attention(Q4, Q4, Q4, mask)) == []
    single = padding_mask(lengths, 5, head_axis=False)
    X = r(3, 5, 4)
    assert _warnings(lambda: scaled_dot_product_attention(
        X, X, X, causal_mask(5) & single)) == []


def test_cross_attention_does_not_warn(fresh_warning):
    mask = torch.zeros(3, 6, dtype=torch.bool)
    mask[0, 0] = True
    assert _warnings(lambda: scaled_dot_product_attention(r(3, 4), r(6, 4), r(6, 4), mask)) == []


def test_an_empty_sequence_warns(fresh_warning):
    assert len(_warnings(lambda: mha()(X3, mask=padding_mask([5, 0, 3])))) == 1


def test_the_transformer_style_masks_are_accepted():
    """(batch, 1, t_q, t_k) and (batch, 1, 1, t_k) bool masks and a (t, t) causal mask."""
    tokens = torch.tensor([[5, 6, 7, 0], [5, 0, 0, 0]])
    src = padding_mask(tokens=tokens, pad_id=0)  # (batch, 1, 1, t)
    tgt = causal_mask(4) & src  # (batch, 1, t, t)
    x = r(2, 4, 16)
    m = MultiHeadAttention(16, 4).eval()
    for mask in (src, tgt, causal_mask(4)):
        assert torch.isfinite(m(x, mask=mask)).all()
    assert torch.isfinite(m(r(2, 3, 16), x, mask=src)).all()  # cross-attention


# ---------------------------------------------------------------- the validation module itself
def test_validate_policy():
    from minformer import validate

    assert validate.positive_int(np.int64(3), "n") == 3
    for bad in (2.5, 2.0, True, np.float64(2.0), "2", None):
        with pytest.raises(TypeError, match="n must be an int"):
            validate.positive_int(bad, "n")
    with pytest.raises(ValueError, match="n must be a positive int; got 0"):
        validate.positive_int(0, "n")
    assert validate.number(0.5, "p", low=0, high=1) == 0.5
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\); got 1"):
        validate.number(1, "p", low=0, high=1, high_open=True)
    with pytest.raises(ValueError, match="NaN"):
        validate.number(float("nan"), "p")
    with pytest.raises(TypeError, match="p must be a number"):
        validate.number(True, "p")
    with pytest.raises(TypeError, match="torch.from_numpy"):
        validate.tensor(np.zeros(2), "x")
    with pytest.raises(ValueError, match=r"x must have 2 or 3 axes; got shape \(2,\)"):
        validate.tensor(torch.zeros(2), "x", ndim=(2, 3))
    with pytest.raises(TypeError, match="dtypes must match: a torch.float32, b torch.float64"):
        validate.same_dtype(a=torch.zeros(1), b=torch.zeros(1, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"not a single str.*\['a b'\]"):
        validate.str_list("a b", "words")
    assert validate.str_list(("a", "b"), "words") == ["a", "b"]
    assert validate.array(torch.ones(2), "x").dtype == np.float32
    with pytest.raises(TypeError, match="x must be a NumPy array; got list"):
        validate.array([1, 2], "x")
    rows = torch.tensor([2, 0])
    assert validate.row_index(rows) is rows
    for bad in (torch.tensor([0.0, 1.0]), torch.zeros(2, 2, dtype=torch.long), [0, 1]):
        with pytest.raises(TypeError, match=r"rows must be a \(batch,\) tensor of row numbers"):
            validate.row_index(bad, "rows")


def test_the_warning_points_at_the_callers_line(fresh_warning):
    caught = _warnings(lambda: mha()(X3, mask=~causal_mask(5)))
    assert caught[0].filename == __file__


def test_training_stops_with_a_clear_error_when_the_loss_becomes_non_finite():
    """lr 1e6: the loss overflows within a few steps; the error names the step and the rate."""
    model = torch.nn.Linear(3, 1)
    data = [(torch.ones(2, 3), torch.ones(2))]
    with pytest.raises(FloatingPointError, match=r"the loss became (nan|inf) at step \d+ "
                                                 r"\(learning rate 1e\+06\)") as info:
        train(model, data, lambda m, b: (m(b[0])[:, 0] - b[1]).pow(2).mean(),
              torch.optim.SGD(model.parameters(), lr=1e6), steps=50, clip=None, progress=False)
    assert _from_package(info.value)


def test_the_gru_language_model_stops_on_a_non_finite_loss():
    from minformer.gru_lm import BPTT, train_steps
    from minformer.rnn import GRULanguageModel

    torch.manual_seed(0)
    model = GRULanguageModel(300, cutoffs=[100], d_emb=8, d_hidden=8, sparse=True)
    ids = torch.randint(300, (32 * (BPTT + 2),), generator=_g())
    with pytest.raises(FloatingPointError, match=r"at step \d+ \(lr 1e\+30\)"):
        train_steps(model, ids, 40, lr=1e30)
    for bad, error in ((0.0, ValueError), (float("nan"), ValueError), ("1e-3", TypeError)):
        with pytest.raises(error, match="lr must"):
            train_steps(model, ids, 1, lr=bad)


# ---------------------------------------------------------------- masked positions change nothing
def _garbage(X, where, value=float("nan")):
    X = X.clone()
    X[where] = value
    return X


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_value_or_key_behind_the_mask_changes_no_output(value):
    """A padded position may hold anything (NaN from a division by a zero length, say): its
    weight is exactly 0, and 0 · NaN must not reach the output (it did, through A @ V)."""
    Q, K, V = r(2, 3, 6, 4, seed=1), r(2, 3, 6, 4, seed=2), r(2, 3, 6, 4, seed=3)
    pad = padding_mask([6, 4])
    bad_K, bad_V = _garbage(K, (1, slice(None), slice(4, None))), _garbage(
        V, (1, slice(None), slice(4, None)), value)
    ref = scaled_dot_product_attention(Q, K, V, pad)
    assert torch.equal(scaled_dot_product_attention(Q, bad_K, bad_V, pad), ref)
    for block in (1, 4, 128):
        want = chunked_attention(Q, K, V, pad, block_size=block)
        assert torch.equal(chunked_attention(Q, bad_K, bad_V, pad, block_size=block), want)
    # causal: the last position's value is hidden from every earlier query, shown to itself
    late = _garbage(V, (..., 5, slice(None)), value)
    out, want = scaled_dot_product_attention(Q, K, late, causal_mask(6)), \
        scaled_dot_product_attention(Q, K, V, causal_mask(6))
    assert torch.equal(out[..., :5, :], want[..., :5, :]) and not finite(out[..., 5, :])
    out = chunked_attention(Q, K, late, block_size=2, causal=True)
    assert torch.equal(out[..., :5, :], chunked_attention(Q, K, V, block_size=2, causal=True)[..., :5, :])
    # multi-head attention: NaN in a padded token's embedding, both paths
    x = r(2, 5, 16, seed=4)
    bad_x = _garbage(x, (1, slice(3, None)), value)
    for need_weights in (False, True):
        y = mha()(bad_x, mask=padding_mask([5, 3]), need_weights=need_weights)
        y = y[0] if need_weights else y
        ref = mha()(x, mask=padding_mask([5, 3]), need_weights=need_weights)
        ref = ref[0] if need_weights else ref
        assert finite(y[1, :3]) and finite(y[0])
        torch.testing.assert_close(y[:, :3], ref[:, :3], rtol=0, atol=1e-6)
    # the GRU's additive attention: its keys are its values
    att = AdditiveAttention(4, 4, 4)
    keys, query = r(2, 5, 4, seed=5), r(2, 4, seed=6)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])
    context, weights = att(query, _garbage(keys, (1, slice(3, None)), value), mask)
    assert torch.equal(context, att(query, keys, mask)[0]) and finite(context)


def test_a_nan_value_behind_the_mask_reaches_no_gradient():
    Q, K, V = r(2, 6, 4, seed=1), r(2, 6, 4, seed=2), r(2, 6, 4, seed=3)
    pad = padding_mask([6, 4], head_axis=False)
    bad_V = _garbage(V, (1, slice(4, None)))

    def grads(fn, V):
        q, k, v = (x.clone().requires_grad_() for x in (Q, K, V))
        fn(q, k, v).sum().backward()
        return q.grad, k.grad, v.grad

    for fn in (lambda q, k, v: scaled_dot_product_attention(q, k, v, pad),
               lambda q, k, v: chunked_attention(q, k, v, pad, block_size=4)):
        for want, got in zip(grads(fn, V), grads(fn, bad_V), strict=True):
            assert torch.equal(got, want)
    att = AdditiveAttention(4, 4, 4)
    keys, query = r(2, 5, 4, seed=5), r(2, 4, seed=6)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False]])

    def param_grads(keys):
        att.zero_grad()
        att(query, keys, mask)[0].sum().backward()
        return [p.grad.clone() for p in att.parameters()]

    for want, got in zip(param_grads(keys), param_grads(_garbage(keys, (1, slice(3, None)))),
                         strict=True):
        assert torch.equal(got, want)


def test_finite_values_give_the_same_numbers_bit_for_bit():
    """The guards only act on non-finite values: A @ V itself otherwise."""
    Q, K, V = r(2, 3, 6, 4, seed=1), r(2, 3, 6, 4, seed=2), r(2, 3, 6, 4, seed=3)
    pad = causal_mask(6) & padding_mask([6, 4])
    Y, A = scaled_dot_product_attention(Q, K, V, pad, return_weights=True)
    assert torch.equal(Y, A @ V)
    att = AdditiveAttention(4, 4, 4)
    keys, query = r(3, 5, 4, seed=5), r(3, 4, seed=6)
    mask = torch.tensor([[True] * 5, [True, True, True, False, False], [True] + [False] * 4])
    context, weights = att(query, keys, mask)
    assert torch.equal(context, torch.bmm(weights.unsqueeze(1), keys).squeeze(1))


def test_set_repository_names_a_root_without_the_books_config(tmp_path):
    with pytest.raises(FileNotFoundError, match="no _config.yml in .*: give the book's root") as info:
        set_repository("https://github.com/a/b", tmp_path)
    assert _from_package(info.value)
