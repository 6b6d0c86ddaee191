"""Chapter 3's QKV diagram carried on to the output (plots.qkv_projections_diagram with
through_output=True): the scores, the softmax and Y = A V are drawn, each with its shape."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402


def test_qkv_diagram_through_output_draws_scores_weights_and_outputs():
    from matplotlib.patches import Rectangle

    from minformer.plots import qkv_projections_diagram

    ax = qkv_projections_diagram(n=4, d=6, d_k=3, d_v=2, through_output=True)
    cells = [p for p in ax.patches if type(p) is Rectangle]
    projections = 4 * 6 + 2 * (6 * 3 + 4 * 3) + (6 * 2 + 4 * 2)
    # then S and A (n by n each) and Y (n by d_v)
    assert len(cells) == projections + 2 * 4 * 4 + 4 * 2
    text = " ".join(t.get_text() for t in ax.texts)
    for label in ["$S = Q K^\\top$", "softmax", "$Y = A V$", "(4 \\times 4)",
                  "rows sum", "weighted by row $r$ of $A$"]:
        assert label in text, label
    plt.close("all")
