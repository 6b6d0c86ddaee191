"""Chapter 6's interactive figure (_static/figures/ch06.js, "ch06-heads", issue 46) computes what
the package computes. One Node process (tests/js/figures_ch06.mjs) runs the figure's code.

- The models are the chapter's seed-0 neighbour models (minformer.neighbours, stored in
  data/checkpoints/ch06-neighbours/models.json and exported into the script by minformer.figure_data): the
  script's block equals a fresh export, and the models decoded from it are the stored ones.
- On the chapter's sentence and on 39 other sentences, for one head and two: the fused buffers
  Q, K, V, every head's scores and attention weights, the heads side by side, the attention's
  output and both read-outs' logits agree with minformer.multihead.MultiHeadAttention
  (need_weights=True) and the model's nn.Linear layers on the same weights: within 1e-6 in float32
  (the weights absolutely, the other tensors relative to their largest entry), within 1e-12 in
  float64; the read-outs' guesses (argmax) agree exactly.
- view(1, n, h, d_k) and transpose(1, 2): the figure's shapes, strides and contiguity are
  torch's, and every (head, token, feature) lies at the memory place torch reads it from.
- The texts the page writes: the weights to two decimals as minformer's, and the numbers the
  chapter quotes from the figure.
"""

import json
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from minformer import figure_data, neighbours

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures_ch06.mjs"
NODE = shutil.which("node")
TOL = 1e-6
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the figures' scripts "
                                                     "(_static/figures/) are checked under Node 20")


def run(tasks: list[dict]) -> list:
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": tasks}), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"node failed ({done.returncode}): {done.stderr[-2000:]}"
    results = json.loads(done.stdout)["results"]
    for task, result in zip(tasks, results):
        assert not (isinstance(result, dict) and "error" in result), (task["op"], result)
    return results


def biggest(a, b) -> float:
    """The largest |a - b|, each difference divided by max(1, |b|)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0))


def fmt(x: float, digits: int = 2) -> str:
    """core.js's fmt."""
    s = f"{x:.{digits}f}"
    if s.lstrip("-").strip("0.") == "":
        s = s.lstrip("-")
    return s.replace("-", "−")


HS = (1, 2, 4, 8, 32)
STATES = [{"ids": None, "view": v, "query": q, "feature": f} for v in (0, 1, 2) for q, f in ((2, 5), (0, 0), (7, 15))]


@pytest.fixture(scope="module")
def node():
    """Every task of this module, answered by one Node process: {op: [results in order]}."""
    ids = sentences()
    for state in STATES:
        state["ids"] = ids[0]
    groups = {"data": [{"op": "data"}],
              "compute": [{"op": "compute", "h": h, "ids": s} for h in (1, 2) for s in ids],
              "layout": [{"op": "layout", "h": h, "n": 8, "d": 32} for h in HS],
              "texts": [{"op": "texts", "state": s} for s in STATES]
              + [{"op": "texts"}, {"op": "texts", "state": {**STATES[0], "view": 0}},
                 {"op": "texts", "state": {**STATES[0], "view": 2}}]}
    answers = iter(run([t for g in groups.values() for t in g]))
    return {name: [(t, next(answers)) for t in g] for name, g in groups.items()}


def exported_models():
    payload = figure_data._payload("ch06.js")
    return {h: neighbours.decode(payload["models"][str(h)], h) for h in (1, 2)}


def sentences(k=40, seed=0):
    rng = random.Random(seed)
    ids = [[neighbours.WORDS.index(w) for w in neighbours.SENTENCE]]
    ids += [[rng.randrange(neighbours.V) for _ in range(neighbours.T)] for _ in range(k - 3)]
    ids += [[0] * neighbours.T, [neighbours.V - 1] * neighbours.T, list(range(neighbours.T))]
    return ids


def reference(model: neighbours.NeighbourModel, ids: list[int]) -> dict:
    """The model's numbers in float32, through MultiHeadAttention."""
    x = torch.tensor([ids])
    with torch.no_grad():
        Z = model.embed(x) + model.position.weight                # (1, T, d_model)
        attn = model.attn
        Y, A = attn(Z, need_weights=True)                         # A: (1, h, T, T)
        d = attn.d_model
        W, b = attn.in_proj_weight, attn.in_proj_bias
        Q, K, V = (Z @ W[k * d:(k + 1) * d].T + b[k * d:(k + 1) * d] for k in range(3))
        h, dk = attn.n_heads, d // attn.n_heads
        split = [M.view(1, -1, h, dk).transpose(1, 2) for M in (Q, K, V)]  # (1, h, T, d_k)
        S = (split[0] / dk**0.5) @ split[1].transpose(-2, -1)
        H = (A @ split[2]).transpose(1, 2).reshape(1, -1, d)      # the heads side by side
        lp, ln = model.read_prev(Y), model.read_next(Y)
    return {"Z": Z[0], "Q": Q[0], "K": K[0], "V": V[0], "S": S[0], "A": A[0], "H": H[0], "Y": Y[0],
            "logitsPrev": lp[0], "logitsNext": ln[0], "prev": lp[0].argmax(-1).tolist(),
            "next": ln[0].argmax(-1).tolist()}


def test_the_exported_models_are_the_stored_seed_0_models(node):
    text = (figure_data.FIGURES / "ch06.js").read_text(encoding="utf-8")
    _, old, _ = figure_data._split(text, "ch06.js")
    assert old == figure_data.block("ch06.js"), "run python -m minformer.figure_data"
    stored = neighbours.stored()
    assert stored["words"] == neighbours.WORDS and stored["T"] == neighbours.T == 8
    ((_, data),) = node["data"]
    assert data["words"] == neighbours.WORDS
    assert [neighbours.WORDS[i] for i in data["sentence"]] == neighbours.SENTENCE
    for h, model in exported_models().items():
        assert model.attn.n_heads == h and model.attn.d_model == 32
        for name in neighbours.PARAMETERS:  # the float32 numbers, exactly
            assert stored["models"][str(h)][name] == neighbours.encode(model)[name]


def test_the_figure_is_the_chapters_multi_head_attention(node):
    """The figure computes in float64 on the float32 weights. Against the package in float64 every
    number agrees within 1e-12; against the package in float32 the attention weights agree within
    1e-6, and every other tensor within 1e-6 of its largest entry (up to 49 for the logits: the
    float32 computation's own rounding, a few units in its last place, is what differs)."""
    models = exported_models()
    worst32, worst64, guesses, exact = {}, 0.0, 0, 0
    for task, r in node["compute"]:
        model = models[task["h"]]
        ref = reference(model, task["ids"])
        ref64 = reference(model.double(), task["ids"])
        model.float()
        for name in ("Z", "Q", "K", "V", "S", "A", "H", "Y", "logitsPrev", "logitsNext"):
            size = 1.0 if name == "A" else max(1.0, float(ref[name].abs().max()))
            gap = float(np.max(np.abs(np.asarray(r[name]) - ref[name].double().numpy()))) / size
            worst32[name] = max(worst32.get(name, 0.0), gap)
            worst64 = max(worst64, biggest(r[name], ref64[name]))
        for name in ("prev", "next"):
            guesses += len(ref[name])
            exact += sum(a == b for a, b in zip(r[name], ref[name]))
    print("largest differences from float32:", {k: f"{v:.2g}" for k, v in worst32.items()},
          f"from float64: {worst64:.2g}; guesses equal: {exact} of {guesses}")
    assert max(worst32.values()) <= TOL, worst32
    assert worst64 <= 1e-12, worst64
    assert exact == guesses


def test_view_and_transpose_are_torchs(node):
    for task, r in node["layout"]:
        h, n, d = task["h"], task["n"], task["d"]
        buffer = torch.arange(n * d, dtype=torch.float32).view(1, n, d)  # entry = its memory place
        viewed = buffer.view(1, n, h, d // h)
        moved = viewed.transpose(1, 2)
        assert r["view"]["shape"] == list(viewed.shape) and r["view"]["strides"] == list(viewed.stride())
        assert r["transposed"]["shape"] == list(moved.shape)
        assert r["transposed"]["strides"] == list(moved.stride())
        assert r["view"]["contiguous"] == viewed.is_contiguous()
        assert r["transposed"]["contiguous"] == moved.is_contiguous() == (h == 1)
        assert r["places"] == moved[0].long().tolist()  # head c, token t, feature j: its place


def test_the_texts_are_the_packages_numbers_and_the_chapters(node):
    models, ids = exported_models(), sentences()[0]
    for state, t in node["texts"][:len(STATES)]:
        state = state["state"]
        h, c = [(1, 0), (2, 0), (2, 1)][state["view"]]
        ref = reference(models[h], ids)
        assert {k: v for k, v in t.items() if k.startswith("A-")} == {
            f"A-{i}-{j}": fmt(float(ref["A"][c, i, j])) for i in range(8) for j in range(8)}
        q, f = state["query"], state["feature"]
        dk = 32 // h
        assert t["entry"].endswith(f"= {q * 32 + c * dk + f} in memory: {fmt(float(ref['Q'][q, c * dk + f]), 3)}.")
    # what chapter 6 says of the figure at its start (two heads, head 1, word 3 "dog")
    start, one, other = (t for _, t in node["texts"][len(STATES):])
    assert start["summary"].startswith("Two heads, head 1: word 3 dog attends most to word 2 big (weight 0.99).")
    assert "previous word right at 7 of 7 positions, the next word at 7 of 7" in start["summary"]
    assert other["summary"].startswith("Two heads, head 2: word 3 dog attends most to word 4 ran (weight 1.00).")
    assert "previous word right at 2 of 7 positions, the next word at 6 of 7" in one["summary"]
    assert start["strides-t"] == "transpose(1, 2) → (1, 2, 8, 16): strides (256, 16, 32, 1), not contiguous"


def test_the_figure_stays_small():
    """Issue 46: this figure's script with its data under 150 KB."""
    assert (figure_data.FIGURES / "ch06.js").stat().st_size < 150_000
