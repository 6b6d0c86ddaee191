"""Chapter 11's interactive figure (_static/figures/ch11.js, issue 46) computes what the package
computes, on the vectors it carries. One Node process (tests/js/figures_ch11.mjs) runs the figure's
code; each test compares its answers with minformer.word2vec's.

- The figure carries the 3,000 most frequent words of the chapter's skip-gram run (seed 0) as int8
  with one float32 scale per vector (minformer.figure_data.ch11_quantized). Its dequantized vectors
  equal q.float() * s, exactly.
- On those same vectors: every cosine of 20 words with all 3,000 within 1e-6 of
  minformer.word2vec.cosine_similarity (float32), the 10 nearest neighbours of 500 words (the
  chapter's probe words and every sixth word) equal to most_similar's word for word, their cosines
  within 1e-6, and the 5 answers of the chapter's analogies (its four examples and its test set,
  where the figure has the words) equal to analogy's.
- How far the int8 rounding moves things from the full-precision vectors (the shipped float16
  ones, as the chapter loads them), over all 3,000 words: printed, and held to a loose band.
"""

import base64
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from minformer import figure_data
from minformer.word2vec import (
    ANALOGY_RELATIONS,
    EXAMPLE_ANALOGIES,
    PROBE_WORDS,
    Vocab,
    analogy,
    analogy_questions,
    cosine_similarity,
    most_similar,
)

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures_ch11.mjs"
SCRIPT = figure_data.FIGURES / "ch11.js"
NODE = shutil.which("node")
TOL = 1e-6
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the figures' scripts "
                                                     "(_static/figures/) are checked under Node 20")
PROBES = list(PROBE_WORDS) + ["queen", "woman", "paris", "japan"]


@pytest.fixture(scope="module")
def ref():
    words, q, s, v = figure_data.ch11_quantized()
    D = q.float() * s[:, None]  # the dequantized vectors, float32
    vocab = Vocab(words, np.ones(len(words), dtype=np.int64))
    return {"words": words, "D": D, "v": v, "vocab": vocab}


@pytest.fixture(scope="module")
def node(ref):
    words = ref["words"]
    asked = PROBES + [w for w in words[::6] if w not in PROBES]
    questions = [list(q) for q in EXAMPLE_ANALOGIES] + [
        [a, b, c] for _, a, b, c, d in analogy_questions(ANALOGY_RELATIONS, ref["vocab"])]
    tasks = [{"op": "ch11data"}, {"op": "ch11neighbours", "words": asked, "k": 10},
             {"op": "ch11cosines", "words": asked[:20]},
             {"op": "ch11analogy", "questions": questions, "k": 5},
             {"op": "ch11suggest", "words": ["River ", "zzyzx", "kingdoms", "qwerty", ""]}]
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": tasks}), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"node failed ({done.returncode}): {done.stderr[-2000:]}"
    results = json.loads(done.stdout)["results"]
    for task, result in zip(tasks, results):
        assert not (isinstance(result, dict) and "error" in result), (task["op"], result)
    data, near, cos, answers, suggest = results
    return {"data": data, "asked": asked, "near": near, "cos": cos, "questions": questions,
            "answers": answers, "suggest": suggest}


def test_the_exported_data_are_a_fresh_export():
    text = SCRIPT.read_text(encoding="utf-8")
    _, old, _ = figure_data._split(text, "ch11.js")
    assert old == figure_data.block("ch11.js")


def test_the_figure_dequantizes_to_the_same_float32_vectors(ref, node):
    data = node["data"]
    assert data["words"] == list(ref["words"]) and len(data["words"]) == 3000
    js = np.frombuffer(base64.b64decode(data["vectors"]), dtype="<f4").reshape(len(ref["words"]), -1)
    assert np.array_equal(js, ref["D"].numpy())


def test_the_figures_cosines_are_the_packages(ref, node):
    D = ref["D"]
    worst = 0.0
    for w, row in zip(node["asked"], node["cos"]):
        want = cosine_similarity(D, D[ref["vocab"].index(w)]).numpy()
        worst = max(worst, float(np.max(np.abs(np.asarray(row) - want))))
    print(f"cosines of 20 words with all 3,000: largest |difference| {worst:.2g}")
    assert worst <= TOL


def test_the_figures_neighbours_are_most_similars(ref, node):
    D, vocab = ref["D"], ref["vocab"]
    worst, n, gap = 0.0, 0, 1.0
    for w, got in zip(node["asked"], node["near"]):
        want = most_similar(D, vocab, w, k=11)  # the 11th: how close the 10th came to losing
        assert [x for x, _ in got] == [x for x, _ in want[:10]], w
        worst = max(worst, max(abs(a - b) for (_, a), (_, b) in zip(got, want)))
        gap = min(gap, min(want[i][1] - want[i + 1][1] for i in range(10)))
        n += 1
    # equal cosines would be listed in id order (the more frequent word first) by the figure;
    # none of these lists has two cosines closer than `gap`, so no order here rests on a tie
    print(f"neighbour lists of {n} words: all equal, cosines within {worst:.2g}; the closest two "
          f"neighbours in a list (the 11th included) differ by {gap:.2g}")
    assert worst <= TOL and n == len(node["asked"]) > 500


def test_the_figures_analogies_are_the_packages(ref, node):
    D, vocab = ref["D"], ref["vocab"]
    worst = 0.0
    for (a, b, c), got in zip(node["questions"], node["answers"]):
        want = analogy(D, vocab, a, b, c, k=5)
        assert [x for x, _ in got] == [x for x, _ in want], (a, b, c)
        worst = max(worst, max(abs(x - y) for (_, x), (_, y) in zip(got, want)))
    print(f"{len(node['questions'])} analogies: all equal, cosines within {worst:.2g}")
    assert worst <= TOL and len(node["questions"]) >= 40


def test_the_figure_knows_its_words_and_suggests_others(node):
    s = node["suggest"]
    assert s["has"] == [True, False, False, False, False]  # typed words are trimmed, lower-cased
    assert s["suggestions"][1] and all(w.startswith("z") for w in s["suggestions"][1])
    assert all(w.startswith("king") for w in s["suggestions"][2]) and s["suggestions"][2]
    assert all(w.startswith("q") for w in s["suggestions"][3])


def test_what_quantization_moves(ref):
    """The int8 vectors against the full-precision ones, over the figure's 3,000 words: how many
    of each word's 10 nearest neighbours stay, and the largest change of any cosine."""
    v, D = ref["v"], ref["D"]
    n = len(v)

    def sims(E):
        U = torch.nn.functional.normalize(E, dim=1)  # float32: cosines to about 1e-7
        S = U @ U.T
        S.fill_diagonal_(-2.0)
        return S

    S0, S1 = sims(v), sims(D)
    top0, top1 = S0.topk(10, dim=1).indices, S1.topk(10, dim=1).indices
    overlap = np.array([len(set(a) & set(b)) for a, b in zip(top0.tolist(), top1.tolist())])
    same_order = int((top0 == top1).all(dim=1).sum())
    first = int((top0[:, 0] == top1[:, 0]).sum())
    change = (S0 - S1).abs()
    change.fill_diagonal_(0.0)
    largest = float(change.max())
    print(f"quantization over {n} words: top-10 overlap mean {overlap.mean():.3f}, least "
          f"{overlap.min()}; {int((overlap == 10).sum())} words keep all 10, {same_order} in the "
          f"same order, {first} the same nearest; largest cosine change {largest:.4f}, "
          f"mean {float(change.sum()) / (n * (n - 1)):.5f}")
    assert overlap.mean() > 9.5 and overlap.min() >= 7 and largest < 0.02


def test_the_figure_stays_within_its_share():
    """Issue 46: chapter 11's share of the figures' budget is 600 KB, script and data."""
    assert SCRIPT.stat().st_size < 600_000
