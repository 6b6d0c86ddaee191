"""The interactive figures of Part I (_static/figures/*.js, issue 34) compute what the package
computes. One Node process (tests/js/figures.mjs) runs every figure's computation on fixed inputs;
each test compares the answers with minformer's, in float32 within 1e-6, and masks exactly.

- ch01-attention: weights and outputs of dot_product_attention, chapter 1's example and others;
- ch03-qkv: scores and weights of scaled_dot_product_attention with the scale undone, as chapter 3
  does, for the page's slider and for hand-typed W_Q, W_K;
- ch04-scaling: the page's statistics (score spread, largest weight, entropy, ‖J‖_F, ‖∂L/∂q‖
  by autograd) on fixed inputs and on the page's own seeded draws (compared in float64: the
  statistics are sums over thousands of numbers, which float32 rounds at the 1e-6 level);
- ch05-masking: causal_mask & padding_mask exactly, for all 16 settings of the page, the
  package's weights (zeros in a row with no key) and the plain softmax's NaN in the same places;
- ch08-positions: sinusoidal_encoding, the dot product by offset and its closed form.

tests/test_figures_browser.py (make check-book) checks that the built pages show these numbers.
"""

import itertools
import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from minformer import figure_data
from minformer.attention import dot_product_attention, scaled_dot_product_attention, softmax
from minformer.masks import causal_mask, padding_mask
from minformer.positional import sinusoidal_encoding

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures.mjs"
FIGURES = REPO / "_static" / "figures"
NODE = shutil.which("node")
TOL = 1e-6
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the figures' scripts "
                                                     "(_static/figures/) are checked under Node 20")


def run_figures(tasks: list[dict]) -> list:
    """Each task's answer from tests/js/figures.mjs (NaN and ±inf back as floats)."""
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": tasks}), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"node failed ({done.returncode}): {done.stderr[-2000:]}"

    def numbers(v):
        if isinstance(v, str) and v in ("NaN", "Infinity", "-Infinity"):
            return float(v.lower().replace("infinity", "inf"))
        if isinstance(v, list):
            return [numbers(x) for x in v]
        if isinstance(v, dict):
            return {k: numbers(x) for k, x in v.items()}
        return v

    results = numbers(json.loads(done.stdout))["results"]
    for task, result in zip(tasks, results):
        assert not (isinstance(result, dict) and "error" in result), (task["op"], result)
    return results


def close(js, ref, tol=TOL) -> float:
    """The largest |js - ref| (NaN only where both are NaN), asserted at most tol."""
    a = np.asarray(js, dtype=np.float64)
    b = ref.detach().double().numpy() if isinstance(ref, torch.Tensor) else np.asarray(ref, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    assert np.array_equal(np.isnan(a), np.isnan(b)), "NaN in different places"
    diff = float(np.nanmax(np.abs(a - b), initial=0.0))
    assert diff <= tol, f"max |difference| {diff:.3g} > {tol}"
    return diff


def f32(x):
    return torch.tensor(x, dtype=torch.float32)


# --- chapter 1 --------------------------------------------------------------------------------

CH1_X = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]
_rng = np.random.default_rng(0)
CH1_CASES = [(CH1_X, 1), (CH1_X, 0), ([[1.0, 0.0], [-1.5, 0.35], [0.0, 1.0]], 1),
             ([[1.5, 1.5], [-1.5, -1.5], [0.05, -0.6]], 2),
             (_rng.normal(size=(6, 2)).round(2).tolist(), 3)]


def test_chapter_1_figure_is_dot_product_attention():
    results = run_figures([{"op": "ch01", "X": X, "i": i} for X, i in CH1_CASES])
    for (X, i), r in zip(CH1_CASES, results):
        Y, A = dot_product_attention(f32(X), return_weights=True)
        close(r["A"], A)
        close(r["Y"], Y)
        close(r["weights"], A[i])
        close(r["y"], Y[i])
        close(r["scores"], f32(X) @ f32(X)[i])
    first = results[0]  # the page's start: the chapter's token 2 (attention_pipeline_diagram)
    assert [f"{x:.2f}" for x in first["scores"]] == ["0.80", "1.00", "0.60"]
    assert [f"{x:.2f}" for x in first["weights"]] == ["0.33", "0.40", "0.27"]
    assert [f"{x:.2f}" for x in first["y"]] == ["0.65", "0.51"]


# --- chapter 3 --------------------------------------------------------------------------------

CH3_CASES = [{"theta": 0}, {"theta": 45}, {"theta": 90}, {"theta": -135}, {"theta": 180},
             {"WQ": [[0.5, -1.2], [2.0, 0.3]], "WK": [[1.0, 0.4], [-0.7, 1.5]]},
             {"WQ": [[1.0, 0.0], [0.0, 1.0]], "WK": [[1.0, 0.0], [0.0, 1.0]]}]


def test_chapter_3_figure_is_qkv_attention():
    results = run_figures([dict(op="ch03", **c) for c in CH3_CASES])
    X = f32(CH1_X)
    for case, r in zip(CH3_CASES, results):
        if "theta" in case:  # W_Q = 2 R(θ), rounded to two decimals as the number boxes show it
            t = math.radians(case["theta"])
            c, s = round(2 * math.cos(t), 2), round(2 * math.sin(t), 2)
            assert r["WQ"] == [[c, s], [-s, c]], (case, r["WQ"])
        WQ, WK = f32(r["WQ"]), f32(r["WK"])
        Q, K = X @ WQ, X @ WK
        Y, A = scaled_dot_product_attention(Q * math.sqrt(2), K, X, return_weights=True)
        S = Q @ K.T
        close(r["S"], S)
        close(r["A"], A)
        close(r["Y"], Y)
        close(r["B"], WQ @ WK.T)
        close(r["raw"], X @ X.T)
        close([r["asymmetry"]], [(S - S.T).abs().max()])
    sym = {case.get("theta"): r["asymmetry"] for case, r in zip(CH3_CASES, results)}
    assert sym[0] == 0 and sym[180] == 0 and results[-1]["asymmetry"] == 0  # B symmetric
    assert sym[45] > 1 and sym[90] > 1


# --- chapter 4 --------------------------------------------------------------------------------

def scaling_stats(q, K, g, d_k, scaled):
    """The page's statistics from q (n, d_k), K (n, t, d_k), g (n, t), by the package and autograd:
    L = Σ_j a_j g_j is attention's output with the values V = g (one column)."""
    q = q.clone().requires_grad_(True)
    qs = q if scaled else q * math.sqrt(d_k)  # the package divides by √d_k; unscaled undoes it
    Y, A = scaled_dot_product_attention(qs[:, None, :], K, g[:, :, None], return_weights=True)
    Y.sum().backward()
    a = A[:, 0, :].detach()  # (n, t)
    s = (q[:, None, :] @ K.transpose(-2, -1))[:, 0, :].detach() / (math.sqrt(d_k) if scaled else 1)
    assert torch.allclose(a, softmax(s), atol=1e-12)
    J = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]
    return {"std": s.std().item(), "maxWeight": a.max(dim=-1).values.mean().item(),
            "entropy": (-(a * torch.log(a.clamp_min(1e-30))).sum(-1)).mean().item(),
            "medianJ": torch.linalg.matrix_norm(J).median().item(),
            "medianGrad": q.grad.norm(dim=-1).median().item(),
            "first": a[0].sort(descending=True).values}


STATS = ["std", "maxWeight", "entropy", "medianJ", "medianGrad"]


def test_chapter_4_figure_on_fixed_inputs():
    gen = torch.Generator().manual_seed(0)
    cases = []
    for n, t, D, d_k in [(5, 8, 16, 16), (4, 32, 1024, 1024), (4, 32, 1024, 3), (7, 3, 2, 1)]:
        q, K, g = (torch.randn(*shape, generator=gen, dtype=torch.float64)
                   for shape in [(n, D), (n, t, D), (n, t)])
        for scaled in (False, True):
            cases.append((q, K, g, d_k, scaled))
    tasks = [{"op": "ch04", "q": q.tolist(), "K": K.tolist(), "g": g.tolist(), "n": q.shape[0],
              "t": K.shape[1], "D": q.shape[1], "d_k": d_k, "scaled": scaled} for q, K, g, d_k, scaled in cases]
    for (q, K, g, d_k, scaled), r in zip(cases, run_figures(tasks)):
        ref = scaling_stats(q[:, :d_k], K[:, :, :d_k], g, d_k, scaled)
        for name in STATS:
            close([r[name]], [ref[name]], tol=TOL * max(1.0, abs(ref[name])))
        close(r["first"], ref["first"])


def test_chapter_4_figure_on_the_pages_own_draws():
    """The page's seeded samples (seed 0, d_k = 1, 64, 256), dumped by Node and recomputed here; and
    the same numbers again from a second run (the generator is reproducible)."""
    tasks = [{"op": "ch04", "seed": 0, "d_k": d_k, "dump": True} for d_k in (1, 64, 256)]
    results = run_figures(tasks)
    again = run_figures([{"op": "mulberry32", "seed": 0, "count": 3}] * 2)
    assert again[0] == again[1] and len(set(again[0])) == 3
    for task, r in zip(tasks, results):
        d_k = task["d_k"]
        q, K, g = (torch.tensor(r[k], dtype=torch.float64) for k in ("q", "K", "g"))
        K = K.reshape(r["n"], r["t"], d_k)
        assert q.shape == (50, d_k) and g.shape == (50, 32)
        for scaled in (False, True):
            ref = scaling_stats(q, K, g, d_k, scaled)
            got = r["scaled" if scaled else "unscaled"]
            for name in STATS:
                close([got[name]], [ref[name]], tol=TOL * max(1.0, abs(ref[name])))
            close(got["first"], ref["first"])
    # what the chapter measures, in the page's small sample: unscaled spread near √d_k, scaled near 1
    spread = {t["d_k"]: (r["unscaled"]["std"], r["scaled"]["std"]) for t, r in zip(tasks, results)}
    assert 12 < spread[256][0] < 20 and 0.8 < spread[256][1] < 1.2, spread


# --- chapter 5 --------------------------------------------------------------------------------

WORDS = ["the", "cake", "was", "sour"]


def test_chapter_5_figure_masks_and_weights_are_the_packages():
    states = [dict(zip(["causal", "padding", "padsAtStart", "plain"], v))
              for v in itertools.product([False, True], repeat=4)]
    for state, r in zip(states, run_figures([{"op": "ch05", "state": s} for s in states])):
        tokens = ["<pad>"] * 2 + WORDS if state["padsAtStart"] else WORDS + ["<pad>"] * 2
        assert r["tokens"] == tokens
        t = len(tokens)
        mask = torch.ones(t, t, dtype=torch.bool)
        if state["causal"]:
            mask = mask & causal_mask(t)
        if state["padding"]:
            ids = torch.tensor([[0 if w == "<pad>" else 1 + i for i, w in enumerate(tokens)]])
            mask = mask & padding_mask(tokens=ids, pad_id=0, head_axis=False)[0]
        assert torch.equal(torch.tensor(r["mask"]), mask), state  # exactly
        X = f32(r["X"])
        if state["plain"]:  # chapter 5's inline attention: -inf, then softmax
            S = (X @ X.T / 2).masked_fill(~mask, float("-inf"))
            A = torch.softmax(S, dim=-1)
            Y = A @ X
        else:
            Y, A = scaled_dot_product_attention(X, X, X, mask, return_weights=True, allow_empty_rows=True)
        close(r["A"], A)
        close(r["Y"], Y)
        close(r["sums"], A.sum(-1))
        assert all(a == 0 for row, m in zip(r["A"], r["mask"]) for a, ok in zip(row, m) if not ok
                   and not math.isnan(a))  # masked weights exactly 0
    # the NaN trap is on the page: causal & padding with the pads at the start
    nan_rows = [i for i, row in enumerate(run_figures([{"op": "ch05", "state": dict(
        causal=True, padding=True, padsAtStart=True, plain=True)}])[0]["A"]) if any(map(math.isnan, row))]
    assert nan_rows == [0, 1]


# --- chapter 8 --------------------------------------------------------------------------------

def test_chapter_8_figure_is_the_sinusoidal_encoding():
    cases = [(10, 5), (0, 0), (99, 50), (37, 1), (3, 17)]
    results = run_figures([{"op": "sinusoidal", "n": 150, "d": 64}, {"op": "sinusoidal", "n": 7, "d": 5}]
                          + [{"op": "ch08", "p": p, "k": k} for p, k in cases])
    close(results[0], sinusoidal_encoding(150, 64))
    close(results[1], sinusoidal_encoding(7, 5))
    PE = sinusoidal_encoding(150, 64, dtype=torch.float64)
    omega = 10000 ** (-2 * torch.arange(32, dtype=torch.float64) / 64)
    profile = torch.cos(torch.arange(101, dtype=torch.float64)[:, None] * omega).sum(-1)
    for (p, k), r in zip(cases, results[2:]):
        close(r["a"], PE[p].float())
        close(r["b"], PE[p + k].float())
        close([r["dot"]], [PE[p] @ PE[p + k]])
        close([r["closed"]], [profile[k]])
        close(r["profile"], profile)
    by_offset = {(p, k): r["dot"] for (p, k), r in zip(cases, results[2:])}
    assert by_offset[0, 0] == pytest.approx(32)


# --- the page weight --------------------------------------------------------------------------

def test_the_figures_scripts_stay_small():
    """Issue 34, then 46: the figures' code (their scripts without the data that
    minformer.figure_data exports into them) stays under 300 KB over the whole book, and code and
    data together under 2 MB (the translator's weights are not in these scripts)."""
    sizes, code = {}, {}
    for p in sorted(FIGURES.glob("*.js")):
        text = p.read_text(encoding="utf-8")
        sizes[p.name] = len(text.encode("utf-8"))
        kept = text.splitlines(keepends=True)
        if figure_data.BEGIN in text:
            start = next(i for i, line in enumerate(kept) if figure_data.BEGIN in line)
            stop = next(i for i, line in enumerate(kept) if figure_data.END in line)
            kept = kept[:start] + kept[stop + 1:]
        code[p.name] = len("".join(kept).encode("utf-8"))
    assert {"core.js", "ch01.js", "ch02.js", "ch10.js"} <= set(sizes), sizes
    assert sum(code.values()) < 300_000, code
    assert sum(sizes.values()) < 2_000_000, sizes


def test_the_numbers_the_chapters_quote_from_the_figures():
    """The PDF's stills and their captions show each figure at its start (chapters 3, 4, 8; chapter
    1's is asserted above): these numbers are in the chapters' prose."""
    ch3, ch4, ch8 = run_figures([{"op": "ch03", "theta": 45}, {"op": "ch04", "seed": 0, "d_k": 64},
                                 {"op": "ch08", "p": 10, "k": 5}])
    assert ch3["WQ"][0] == [1.41, 1.41] and f"{ch3['asymmetry']:.2f}" == "5.64"
    assert [f"{ch4['unscaled']['std']:.2f}", f"{ch4['unscaled']['maxWeight']:.3f}",
            f"{ch4['scaled']['std']:.2f}", f"{ch4['scaled']['maxWeight']:.3f}"] == ["8.04", "0.822", "1.01", "0.165"]
    assert f"{ch8['dot']:.2f}" == "23.50"
