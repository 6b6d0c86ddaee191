"""minformer.plots: the figures draw what they are given, and reject what they cannot draw."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from minformer.plots import _convex_hull, attention_heatmap, tokens_and_outputs_2d  # noqa: E402


def test_attention_heatmap_draws_matrix_and_labels():
    A = np.array([[0.2, 0.8], [0.5, 0.5], [1.0, 0.0]])
    ax = attention_heatmap(torch.tensor(A), ["a", "b", "c"], ["x", "y"], annotate=True, title="t")
    np.testing.assert_allclose(ax.images[0].get_array(), A)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x", "y"]
    assert len(ax.texts) == 6 and ax.get_title() == "t"
    assert len(ax.figure.axes) == 2  # the colorbar
    plt.close("all")


def test_attention_heatmap_errors():
    with pytest.raises(ValueError, match="one \\(t_q, t_k\\) matrix"):
        attention_heatmap(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match="3 row labels for a matrix of shape \\(2, 2\\)"):
        attention_heatmap(np.zeros((2, 2)), ["a", "b", "c"])
    plt.close("all")


def test_convex_hull_of_square_with_inside_points():
    P = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5], [0.2, 0.7]])
    hull = _convex_hull(P)
    assert {tuple(p) for p in hull} == {(0, 0), (1, 0), (1, 1), (0, 1)}


def test_tokens_and_outputs_2d():
    X = np.random.default_rng(0).normal(size=(5, 2))
    ax = tokens_and_outputs_2d(X, X * 0.5, labels=list("abcde"), title="hull")
    assert ax.get_title() == "hull" and len(ax.collections) == 2
    with pytest.raises(ValueError, match="same shape \\(n, 2\\)"):
        tokens_and_outputs_2d(np.zeros((3, 3)), np.zeros((3, 3)))
    plt.close("all")


# --- diagrams: each draws its boxes and the labels a reader needs, on a given axis or a new one

def _texts(axes):
    return " ".join(t.get_text() for ax in np.atleast_1d(axes) for t in ax.texts)


def _boxes(ax):
    from matplotlib.patches import FancyBboxPatch

    return [p for p in ax.patches if isinstance(p, FancyBboxPatch)]


def test_sdpa_diagram_shows_every_step_with_shapes():
    from minformer.plots import sdpa_diagram

    ax = sdpa_diagram()
    text = _texts(ax)
    for label in ["$Q$", "$K$", "$V$", "$Q K^\\top$", "\\sqrt{d_k}", "softmax", "mask",
                  "$A V$", "(t_q, t_k)", "(t_q, d_v)"]:
        assert label in text, label
    assert len(_boxes(ax)) == 8
    plt.close("all")


def test_multihead_diagram_shows_split_heads_and_concat():
    from minformer.plots import multihead_diagram

    _, given = plt.subplots()
    ax = multihead_diagram(ax=given)
    assert ax is given
    text = _texts(ax)
    for label in ["(b, t, h, d_k)", "(b, h, t, d_k)", "(b, t, h d_k)", "concat", "W_O",
                  "head $h$", "d_k = d_{model} / h"]:
        assert label in text, label
    plt.close("all")


def test_transformer_layers_diagram_has_two_and_three_add_and_norms():
    from minformer.plots import transformer_layers_diagram

    enc, dec = transformer_layers_diagram()
    assert _texts(enc).count("Add & Norm") == 2
    assert _texts(dec).count("Add & Norm") == 3
    for label in ["masked multi-head", "cross-attention", "K, V: encoder", "Q: decoder",
                  "causal"]:
        assert label in _texts(dec), label
    assert enc.get_title() == "Encoder layer" and dec.get_title() == "Decoder layer"
    with pytest.raises(ValueError, match="need two axes"):
        transformer_layers_diagram(axes=[enc])
    plt.close("all")


def test_rnn_unrolled_diagram_draws_one_cell_per_step():
    from minformer.plots import rnn_unrolled_diagram

    ax = rnn_unrolled_diagram(steps=3)
    assert len(_boxes(ax)) == 1 + 3 * 3          # h_0, then x_t, h_t, y_t per step
    assert "$h_T$" in _texts(ax) and "$W_h$" in _texts(ax)
    with pytest.raises(ValueError, match="at least 2 steps"):
        rnn_unrolled_diagram(steps=1)
    plt.close("all")


def test_architectures_diagram_draws_the_three_wirings():
    from minformer.plots import architectures_diagram

    ax = architectures_diagram()
    texts = _texts(ax)
    assert len(_boxes(ax)) == 3 + 3 + 5          # in, stack, out; twice; then src, tgt, 2 stacks, out
    for name in ("encoder-only", "decoder-only", "encoder-decoder", "causal", "cross-attention"):
        assert name in texts
    plt.close("all")


def test_gru_cell_diagram_shows_both_gates_and_the_direct_path():
    from minformer.plots import gru_cell_diagram

    ax = gru_cell_diagram()
    texts = _texts(ax)
    assert len(_boxes(ax)) == 7                  # h_{t-1}, x_t, r, n, z, the mix, h_t
    assert "reset gate" in texts and "update gate" in texts
    assert "z_t \\odot h_{t-1}" in texts        # the mix keeps h_{t-1}
    plt.close("all")


def test_seq2seq_diagram_contexts_only_with_attention():
    from minformer.plots import seq2seq_diagram

    without, with_attention = seq2seq_diagram()
    assert "$c_1$" not in _texts(without) and "$f(h_T)$" in _texts(without)
    assert all(f"$c_{i}$" in _texts(with_attention) for i in (1, 2, 3))
    assert "hungry" in _texts(without) and "<eos>" in _texts(with_attention)
    plt.close("all")


def test_attention_pipeline_diagram_prints_chapter_1s_numbers():
    from minformer.plots import attention_pipeline_diagram

    X = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
    ax = attention_pipeline_diagram(X, 1)
    text = _texts(ax)
    assert len(_boxes(ax)) == 3 * 3 + 1          # tokens, scores, weights; the output
    for label in ["x_2 \\cdot x_1 = 0.80", "x_2 \\cdot x_3 = 0.60", "a_{21} = 0.33",
                  "a_{22} = 0.40", "a_{23} = 0.27", "(0.65, 0.51)", "softmax"]:
        assert label in text, label
    with pytest.raises(ValueError, match="2 <= n <= 4"):
        attention_pipeline_diagram(np.zeros((6, 2)), 0)
    with pytest.raises(ValueError, match="query index"):
        attention_pipeline_diagram(X, 3)
    plt.close("all")


def test_qkv_projections_diagram_keeps_one_row_per_token():
    from matplotlib.patches import Rectangle

    from minformer.plots import qkv_projections_diagram

    ax = qkv_projections_diagram(n=4, d=6, d_k=3, d_v=2)
    cells = [p for p in ax.patches if type(p) is Rectangle]
    # X, then W_Q and Q, W_K and K, W_V and V, cell by cell
    assert len(cells) == 4 * 6 + 2 * (6 * 3 + 4 * 3) + (6 * 2 + 4 * 2)
    text = _texts(ax)
    for label in ["$Q = X W_Q$", "$K = X W_K$", "$V = X W_V$", "(4 \\times 6)", "(6 \\times 2)",
                  "queries", "keys", "values"]:
        assert label in text, label
    with pytest.raises(ValueError, match="draw with"):
        qkv_projections_diagram(n=20)
    plt.close("all")


def test_word2vec_diagram_predicts_context_or_centre():
    from minformer.plots import word2vec_diagram

    words = "swam across the river to get to".split()
    skipgram, cbow = word2vec_diagram(words, centre=3, window=2)
    red = [(0.839, 0.153, 0.157, 1.0)]                  # tab:red, the predicted words
    def predicted(ax):
        return [t for p, t in zip(ax.patches, words)
                if np.allclose(p.get_edgecolor(), red[0], atol=1e-3)]
    assert predicted(skipgram) == ["across", "the", "to", "get"]
    assert predicted(cbow) == ["river"]
    assert "4 pairs" in skipgram.get_title() and "average" in _texts(cbow)
    with pytest.raises(ValueError, match="centre must index"):
        word2vec_diagram(words, centre=7, window=2)
    with pytest.raises(ValueError, match="at most 8 words"):
        word2vec_diagram(words * 2, centre=3, window=2)
    plt.close("all")


def test_diagram_boxes_reject_an_unknown_kind():
    from minformer.plots import _box

    _, ax = plt.subplots()
    with pytest.raises(ValueError, match="unknown box kind"):
        _box(ax, 0, 0, "x", kind="nonsense")
    plt.close("all")
