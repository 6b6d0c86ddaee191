"""Chapter 2's and chapter 10's interactive figures (_static/figures/ch02.js, ch10.js, issue 46)
compute what the package computes. One Node process (tests/js/figures_ch02_ch10.mjs) runs the
figures' code; each test compares its answers with minformer's.

- ch02-bandwidth: Nadaraya–Watson weights through minformer.attention.softmax, the fit on the
  chapter's 200 queries, the leave-one-out error (the diagonal masked), the test, training error
  and hardness: within 1e-6 (of the value's size, where above 1) of the chapter's own float64
  computation, and within as much of the
  same computation in float32 tensors (the package's softmax and masked softmax) wherever float32
  computes the fit to 1e-6 itself (h ≥ 0.2: at h = 0.1 the float32 scores' own rounding moves the
  float32 fit by up to 1.8e-6 from the float64 one, and at h = 0.01 the scores reach
  -(5²)/(2h²) = -1.25e5); its data are the chapter's samples.
- ch10-bpe: the shipped tokenizer rebuilt from the exported merges (every id's text and every
  pair), the ids after every step against a reference that merges the earliest-learned pair of
  the whole text at each step, and the ids at the end against BPETokenizer.encode: exactly.

The exported data are checked against a fresh export (minformer.figure_data.check).
"""

import json
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from minformer import figure_data
from minformer.attention import _masked_softmax as masked_softmax
from minformer.attention import softmax
from minformer.tokenizer import _PAT, _merge

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures_ch02_ch10.mjs"
NODE = shutil.which("node")
TOL = 1e-6
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the figures' scripts "
                                                     "(_static/figures/) are checked under Node 20")


def run(tasks: list[dict]) -> list:
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": tasks}), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"node failed ({done.returncode}): {done.stderr[-2000:]}"
    results = json.loads(done.stdout)["results"]
    for task, result in zip(tasks, results):
        assert not (isinstance(result, dict) and "error" in result), (task["op"], result)
    return results


def biggest(a, b) -> float:
    """The largest |a - b|, each difference divided by max(1, |b|): within TOL means within 1e-6,
    or 1e-6 of the value's size where it is above 1 (a float32 fit near 4 is itself only good to
    about 5e-7, one unit in its last place)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0))


def test_the_exported_data_are_a_fresh_export():
    sums = figure_data.check()
    assert {"ch02.js", "ch10.js"} <= set(sums) and set(sums) == set(figure_data.SCRIPTS)


# --- chapter 2 --------------------------------------------------------------------------------

def f(x):
    return np.sin(2 * x) + 0.5 * x


def nadaraya_watson(x, y, h, queries):
    """The chapter's computation in float64: nw_weights, the fit, and the four numbers."""
    A = softmax(-(queries[:, None] - x[None, :]) ** 2 / (2 * h**2), axis=-1)
    S = -(x[:, None] - x[None, :]) ** 2 / (2 * h**2)
    train = softmax(S, axis=-1) @ y
    np.fill_diagonal(S, -np.inf)  # ex-loo-bandwidth's mask
    loo = softmax(S, axis=-1) @ y
    fit = A @ y
    return {"fit": fit, "test": np.mean((fit - f(queries)) ** 2), "loo": np.mean((loo - y) ** 2),
            "train": np.mean((train - y) ** 2), "hardness": A.max(axis=1).mean()}


def nadaraya_watson_f32(x, y, h, queries):
    """The fit and the leave-one-out predictions in float32 tensors, through the package's
    softmax and its masked softmax (attention's mask: True = may attend)."""
    t = lambda v: torch.tensor(np.asarray(v), dtype=torch.float32)  # noqa: E731
    x32, y32, h32 = t(x), t(y), t(h)
    A = softmax(-(t(queries)[:, None] - x32[None, :]) ** 2 / (2 * h32**2), axis=-1)
    S = -(x32[:, None] - x32[None, :]) ** 2 / (2 * h32**2)
    mask = ~torch.eye(len(x), dtype=torch.bool)
    loo = masked_softmax(S, mask) @ y32
    return A @ y32, loo


def moved_samples():
    """Samples as a reader may leave them: some dragged, two on one spot, one far out."""
    x, y = figure_data.ch02_samples()
    x, y = x.copy(), y.copy()
    x[3], y[3] = 4.5, -1.5
    x[10], y[10] = 2.0, 4.5
    x[11], y[11] = 2.0, 4.5
    x[39], y[39] = 0.0, 3.3
    x[20] = 0.01
    return x, y


def test_chapter_2_figure_uses_the_chapters_data_and_queries():
    (data,) = run([{"op": "ch02data"}])
    x, y = figure_data.ch02_samples()
    assert data["x"] == x.tolist() and data["y"] == y.tolist()  # the same float64 numbers
    assert data["queries"] == np.linspace(0, 5, 200).tolist()
    assert data["h0"] == 0.2 and {0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 1, 3} <= set(data["hs"])


def test_chapter_2_figure_is_nadaraya_watson():
    x0, y0 = figure_data.ch02_samples()
    x1, y1 = moved_samples()
    hs = run([{"op": "ch02data"}])[0]["hs"]
    queries = np.linspace(0, 5, 200)
    cases = [(x0, y0, h) for h in hs] + [(x1, y1, h) for h in hs]
    tasks = [{"op": "ch02", "x": x.tolist(), "y": y.tolist(), "h": h} for x, y, h in cases]
    worst64, worst32 = 0.0, 0.0
    for (x, y, h), r in zip(cases, run(tasks)):
        ref = nadaraya_watson(x, y, h, queries)
        for name in ("test", "loo", "train", "hardness"):
            worst64 = max(worst64, biggest([r[name]], [ref[name]]))
        worst64 = max(worst64, biggest(r["fit"], ref["fit"]))
        if h >= 0.2:
            fit32, loo32 = nadaraya_watson_f32(x, y, h, queries)
            worst32 = max(worst32, biggest(r["fit"], fit32))
            S = -(x[:, None] - x[None, :]) ** 2 / (2 * h**2)
            np.fill_diagonal(S, -np.inf)
            worst32 = max(worst32, biggest(softmax(S, axis=-1) @ y, loo32))
    print(f"largest |difference|: {worst64:.2g} (float64), {worst32:.2g} (float32)")
    assert worst64 <= TOL and worst32 <= TOL, (worst64, worst32)


def test_chapter_2_figure_curves_and_the_chapters_numbers():
    x1, y1 = moved_samples()
    start, moved, first = run([{"op": "ch02curves"}, {"op": "ch02curves", "x": x1.tolist(), "y": y1.tolist()},
                               {"op": "ch02", "h": 0.2}])
    queries = np.linspace(0, 5, 200)
    for (x, y), r in [(figure_data.ch02_samples(), start), ((x1, y1), moved)]:
        refs = [nadaraya_watson(x, y, h, queries) for h in r["h"]]
        assert biggest(r["loo"], [q["loo"] for q in refs]) <= TOL
        assert biggest(r["test"], [q["test"] for q in refs]) <= TOL
        assert r["bestLoo"] == r["h"][int(np.argmin([q["loo"] for q in refs]))]
        assert r["bestTest"] == r["h"][int(np.argmin([q["test"] for q in refs]))]
    # the chapter's table (h = 0.2) and ex-loo-bandwidth's solution, at the figure's start
    assert [f"{first[k]:.4f}" for k in ("train", "test", "loo")] == ["0.0989", "0.0270", "0.1722"]
    assert f"{first['hardness']:.3f}" == "0.274"
    assert (start["bestLoo"], start["bestTest"]) == (0.2, 0.25)


# --- chapter 10 -------------------------------------------------------------------------------

TEXTS = ["Tom's grandmother is unbelievably stubborn.", "La abuela de Tom es increíblemente terca.",
         "Yo hablo, tú hablas, nosotros hablaríamos.", "I recieved your mesage yesterday.",
         "Peter Piper picked a peck of pickled peppers", "Café ☕ at 8:30!", "\u00e9 = e\u0301",
         "three   spaces\tand\ttabs", "line one\n\nline three", "日本語のテキスト", "🤖🧠✨",
         "<eos> is just text", "They'll say we'd've done it, don't you think?  ", "", " ", "a",
         "¿Dónde está la estación?", "1234567 ½ Ⅻ ²³ ١٢٣", "___--__ !!!???", "x" * 300]


def random_texts(n=40, seed=0):
    rng = random.Random(seed)
    alphabet = ("abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ .,;:!?¿¡'\"-_()0123456789 \t\n"
                "áéíóúñüçÁÉÑ€£½²ⅫΩж日本😀🤖\u0301\u00a0\u2003")
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 80))) for _ in range(n)]


def global_steps(tok, text):
    """BPE on the whole text as the figure steps it, written from the definition: at each step
    the pair of lowest rank among all adjacent pairs of all chunks, merged wherever it occurs."""
    k = len(tok.special_tokens)
    chunks = [[k + b for b in c.encode("utf-8")] for c in _PAT.findall(text)]
    states, steps = [[i for c in chunks for i in c]], []
    while True:
        found = [tok._ranks[p] for c in chunks for p in zip(c, c[1:]) if p in tok._ranks]
        if not found:
            break
        rank, new = min(found)
        a, b, _ = tok._merges[rank]
        before = sum(map(len, chunks))
        chunks = [_merge(c, a, b, new) for c in chunks]
        steps.append({"rank": rank, "left": a, "right": b, "id": new, "places": before - sum(map(len, chunks))})
        states.append([i for c in chunks for i in c])
    return steps, states


def test_chapter_10_figure_rebuilds_the_shipped_tokenizer():
    (vocab,) = run([{"op": "ch10vocab"}])
    tok = figure_data.ch10_tokenizer()
    assert vocab["size"] == tok.vocab_size == 8000 and vocab["mergeCount"] == len(tok.merges) == 7740
    assert vocab["pairs"] == [[a, b] for a, b, _ in tok._merges]
    assert vocab["text"] == [tok.id_to_token(i) for i in range(tok.vocab_size)]


def test_chapter_10_figure_steps_to_the_tokenizers_encoding():
    tok = figure_data.ch10_tokenizer()
    texts = TEXTS + random_texts()
    for text, r in zip(texts, run([{"op": "ch10", "text": t} for t in texts])):
        ids = tok.encode(text)
        assert r["encode"] == ids and r["states"][-1] == ids, text  # tokens exactly
        assert r["chunks"] == _PAT.findall(text) and r["bytes"] == len(text.encode("utf-8"))
        steps, states = global_steps(tok, text)
        assert r["steps"] == steps, text
        assert r["states"] == states, text
    first = run([{"op": "ch10", "text": TEXTS[0]}])[0]
    assert (len(first["steps"]), len(first["encode"]), first["bytes"]) == (32, 11, 43)


def test_chapter_10_figure_refuses_a_lone_surrogate_as_the_package_does():
    tok = figure_data.ch10_tokenizer()
    with pytest.raises(ValueError, match="lone surrogate"):
        tok.encode("a\ud800b")
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": [{"op": "ch10", "text": "a\ud800b"}]}),
                          capture_output=True, text=True, timeout=60)
    assert "lone surrogate" in json.loads(done.stdout)["results"][0]["error"]


def test_the_two_figures_stay_small():
    """Issue 46: the two figures' scripts, data included, well under 300 KB together."""
    sizes = {n: (figure_data.FIGURES / n).stat().st_size for n in ("ch02.js", "ch10.js")}
    assert sum(sizes.values()) < 100_000, sizes
