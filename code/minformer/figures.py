"""The book's interactive figures as the output of a code cell: ``figures.show("ch01-attention")``.

Each figure is a small JavaScript program, ``_static/figures/<chapter>.js`` on top of
``_static/figures/core.js`` (tests/test_figures_js.py checks their numbers against this package
under Node). :func:`show` returns an object that a notebook displays as one output bundle, so that
one implementation serves every place the chapter is read:

- ``text/html``: the figure's element and both scripts, inline (nothing is fetched: Colab runs
  each output in a sandboxed frame of its own, and a copy of the book opened from file:// has no
  server). Inside the element, the figure's still picture and one line, "Run this cell to
  interact with the figure."; the scripts replace them with the figure when they run. A browser
  (the web edition, JupyterLab once the cell has run, Colab, VS Code) shows the figure; where
  scripts are stripped, as in a stored output of an untrusted notebook, the still and the line.
- ``image/png``: the still alone, for the PDF and for viewers without HTML.
- ``text/plain``: one line naming the figure, for a terminal.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path

STATIC = Path(__file__).resolve().parents[2] / "_static"  # the repository's, beside code/


@dataclass(frozen=True)
class Figure:
    """One interactive figure: its script (under _static/figures), its still picture (under
    _static/pdf) and the still's alt text."""

    script: str
    still: str
    alt: str


FIGURES = {
    "ch01-attention": Figure(
        "ch01.js", "figure-ch01-attention.png",
        "The chapter 1 figure at its start: token 2 is the query, its scores are 0.80, 1.00 and "
        "0.60, its weights 0.33, 0.40 and 0.27, and its output y_2 = (0.65, 0.51) lies inside the "
        "triangle of the three tokens, joined to each by a line as thick as its weight."),
    "ch03-qkv": Figure(
        "ch03.js", "figure-ch03-qkv.png",
        "The chapter 3 figure at its start: the queries turned by 45 degrees (W_Q = 2 R(45°), "
        "entries ±1.41) and W_K = 2 I. Chapter 1's X Xᵀ is unchanged, the scores S = Q Kᵀ are "
        "not symmetric (max |S − Sᵀ| = 5.64), and neither are the weights."),
    "ch04-scaling": Figure(
        "ch04.js", "figure-ch04-scaling.png",
        "The chapter 4 figure at its start, d_k = 64 and seed 0: unscaled, the scores' standard "
        "deviation is 8.04 and the mean largest weight 0.822; scaled, 1.01 and 0.165. Below the "
        "table, one query's 32 weights, largest first, unscaled and scaled."),
    "ch05-masking": Figure(
        "ch05.js", "figure-ch05-masking.png",
        "The chapter 5 figure at its start: causal and padding masks on, pads at the end, the "
        "package's softmax. Hidden keys are dots; every row sums to 1.00."),
    "ch08-positions": Figure(
        "ch08.js", "figure-ch08-positions.png",
        "The chapter 8 figure at its start, p = 10 and k = 5: the encodings PE(10) and PE(15) as "
        "strips of 64 features, pairs 0, 4, 8 and 16 on their circles turned by ω_i · 5, and "
        "PE(10) · PE(15) = 23.50 marked on the dot product against the offset."),
    "ch02-bandwidth": Figure(
        "ch02.js", "figure-ch02-bandwidth.png",
        "The chapter 2 figure at its start, h = 0.2: the 40 samples, the true f dashed and the "
        "Nadaraya-Watson fit; beside it the leave-one-out and the test error against h, least at "
        "h = 0.2 and 0.25. At h = 0.2 the leave-one-out error is 0.1722, the test error 0.0270, "
        "the training error 0.0989 and the hardness 0.274."),
    "ch10-bpe": Figure(
        "ch10.js", "figure-ch10-bpe.png",
        "The chapter 10 figure at its start: the text \"Tom's grandmother is unbelievably "
        "stubborn.\" after all 32 merge steps of the 8,000-token tokenizer, 11 tokens from 43 "
        "bytes: Tom, 's, grandmother, is, un, bel, ie, v, ably, stubborn and the full stop."),
    "ch11-neighbours": Figure(
        "ch11.js", "figure-ch11-neighbours.png",
        "The chapter 11 figure at its start, the skip-gram vectors of the 3,000 most frequent words: "
        "the ten nearest neighbours of river are missouri (cosine 0.816), mississippi 0.734, rivers "
        "0.719, basin 0.680, mountains 0.623, lake 0.618, montana 0.601, canal 0.591, crossing 0.576 "
        "and mouth 0.563; france : french :: japan : ? is answered by japanese 0.495, then typical, "
        "american, available and non."),
    "ch14-tiles": Figure(
        "ch14.js", "figure-ch14-tiles.png",
        "The chapter 14 figure at its start: 16 positions in tiles of 4, causal, step 5 of the 10 "
        "tiles computed (6 of the 16 skipped). Left, the 16 by 16 score matrix cut into tiles: the "
        "six above the diagonal hatched as skipped, the diagonal tiles with their upper triangles "
        "masked, four tiles done and the fifth (queries 8-11, keys 4-7) in hand. Right, every "
        "query's running maximum m, sum l and output o/l: rows 0-7 final, rows 8-11 updated, two "
        "of them rescaled by 0.931 and 0.461 because their maximum rose, rows 12-15 still at m = "
        "-inf and l = 0."),
    "ch12-masks": Figure(
        "ch12.js", "figure-ch12-masks.png",
        "The chapter 12 figure at its start: the encoder-only architecture's self-attention over "
        "the input \"the cat sat down\" and two pads, a 6 by 6 grid with 24 of its 36 pairs "
        "allowed. Every query, the pads too, has weights on the four real keys only (query 0: "
        "0.24, 0.31, 0.26 and 0.19); the two pad columns are forbidden, shown as dots."),
    "ch06-heads": Figure(
        "ch06.js", "figure-ch06-heads.png",
        "The chapter 6 figure at its start: the sentence the big dog ran under the old tree, the "
        "two-head model, head 1. Its weights put 0.99 or more on the previous word at every word "
        "but the first; the read-outs guess the previous and the next word right at all 7 "
        "positions. Below, the fused query buffer of 8 by 32 = 256 numbers drawn in memory, as "
        "view(1, 8, 2, 16) with strides (256, 32, 16, 1) and after transpose(1, 2) as (1, 2, 8, "
        "16) with strides (256, 16, 32, 1), not contiguous: head 1's queries are 8 runs of 16 "
        "numbers, 32 places apart."),
    "ch09-gates": Figure(
        "ch09.js", "figure-ch09-gates.png",
        "The chapter 9 figure at its start: the shipped GRU language model reads \"the band released "
        "the album in the united states and it reached number one on the chart\", 17 words. At "
        "word 2, band, the update gate's mean is 0.667: 71 of the 128 dimensions are above 0.9 and "
        "27 below 0.1. Along the gate path the last word still holds a mean share 0.203 of that "
        "state, the product of z over the 15 later words, and 24 dimensions keep more than half. "
        "A heat map of z, 128 rows by 17 columns, has a band of deep blue rows at its top across "
        "the whole sentence; the bars below it fall from 1 at band to about 0.2."),
    "ch07-norms": Figure(
        "ch07.js", "figure-ch07-norms.png",
        "The chapter 7 figure at its start: 24 encoder layers of width 16 at initialization, "
        "post-norm (red) and pre-norm (blue). Left, the residual stream's rms after each layer: "
        "post-norm's stays at 1.00, pre-norm's grows to 2.64. Right, each layer's parameter "
        "gradient norm on a log scale: post-norm's rises from 0.412 at layer 1 to 1.40 at layer "
        "24, pre-norm's falls from 0.953 to 0.363."),
}
FIGURES = dict(sorted(FIGURES.items()))  # in the book's order, chapter 1 first

RUN_TO_INTERACT = "Run this cell to interact with the figure."


def _figure(name: str) -> Figure:
    if name not in FIGURES:
        raise ValueError(f"no figure named {name!r}; the book's figures: {', '.join(FIGURES)}")
    return FIGURES[name]


def _read(*parts: str) -> bytes:
    path = STATIC.joinpath(*parts)
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the figures need the repository's _static "
                                "folder beside code/ (pip install -e . from a clone)")
    return path.read_bytes()


def still_png(name: str) -> bytes:
    """The figure's still picture (its start), PNG bytes."""
    return _read("pdf", _figure(name).still)


def figure_html(name: str) -> str:
    """The figure as one self-contained piece of HTML: its element, holding the still picture and
    the line :data:`RUN_TO_INTERACT` until the scripts replace them, then core.js and the figure's
    script, inline."""
    figure = _figure(name)
    # a newline after each "/" of the base64: a URL's parser drops newlines, and no run of it
    # then reads like a file path to the tools that look for machine paths in outputs
    still = base64.b64encode(still_png(name)).decode("ascii").replace("/", "/\n")
    scripts = "".join(
        "<script>\n" + _read("figures", js).decode("utf-8").replace("</script", "<\\/script")
        + "\n</script>\n" for js in ("core.js", figure.script))
    return (f'<div class="mff" data-figure="{name}">'
            f'<img src="data:image/png;base64,{still}" alt="{html.escape(figure.alt)}" '
            f'style="max-width: 100%; height: auto;">'
            f"<p><em>{RUN_TO_INTERACT}</em></p></div>\n{scripts}")


class InteractiveFigure:
    """What :func:`show` returns: displayed by IPython as the bundle the module describes."""

    def __init__(self, name: str):
        self.name = name
        _figure(name)

    def _repr_mimebundle_(self, include=None, exclude=None):
        figure = _figure(self.name)
        data = {"text/html": figure_html(self.name),
                "image/png": base64.b64encode(still_png(self.name)).decode("ascii"),
                "text/plain": repr(self)}
        return data, {"image/png": {"alt": figure.alt}}

    def __repr__(self) -> str:
        return f"<the interactive figure {self.name}: shown in a browser>"


def show(name: str) -> InteractiveFigure:
    """The interactive figure ``name`` (a key of :data:`FIGURES`), for a cell's last line."""
    return InteractiveFigure(name)
