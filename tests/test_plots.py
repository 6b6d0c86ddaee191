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
