"""Chapter 14's interactive figure (_static/figures/ch14.js, "ch14-tiles", issue 46) computes what
the package computes. One Node process (tests/js/figures_ch14.mjs) runs the figure's code on the
inputs it draws in the page (a seed: Q, K of width 4 and V of width 2, 16 positions, float32).

- The tiles: the loop's order and which tiles a causal run skips are minformer.attention's
  _block_pairs exactly, and the scores masked inside each tile are those _block_scores sets to
  -inf, exactly, for every tile size 1 … 16, causal or not.
- Every step: the running maximum m, sum ℓ and unnormalized output o of all 16 rows after each
  tile are the package's _online_update run on the same tiles in float32 within 1e-6 (of the
  value's size, where above 1), and the same numbers from their definition in float64 (m the
  largest score seen, ℓ = Σ e^(s - m), o = Σ e^(s - m) v over the keys seen), also within 1e-6; the
  rescale factors are e^(m - m') of those states and the rows whose maximum rose are counted
  exactly.
- The end: o/ℓ, the page's full attention, chunked_attention and F.scaled_dot_product_attention
  agree within 1e-6, and the largest difference the page writes is its own o/ℓ against its own
  full attention (float32 rounding, under 1e-6).
"""

import json
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from minformer import figure_data
from minformer.attention import _block_pairs, _block_scores, _online_update, chunked_attention

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures_ch14.mjs"
NODE = shutil.which("node")
TOL = 1e-6
T = 16
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
    """The largest |a - b|, each divided by max(1, |b|); -inf against -inf counts as 0."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert np.array_equal(np.isneginf(a), np.isneginf(b)), (a, b)
    a, b = np.where(np.isneginf(a), 0.0, a), np.where(np.isneginf(b), 0.0, b)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0))


def unnull(m) -> np.ndarray:
    return np.array([-math.inf if x is None else x for x in m], dtype=np.float64)


# every tile size, causal or not, for the page's starting seed; three more seeds at a few sizes
# (sizes that divide 16 and sizes that do not, one tile)
CASES = ([(5, b, causal) for b in range(1, T + 1) for causal in (False, True)]
         + [(seed, b, causal) for seed in (0, 1, 2) for b in (3, 4, 5, 16) for causal in (False, True)])


@pytest.fixture(scope="module")
def runs():
    """The figure's start, and for each case the figure's run and the package's (replay)."""
    results = run([{"op": "ch14start"}] + [{"op": "ch14", "seed": s, "b": b, "causal": c} for s, b, c in CASES])
    return results[0], {case: (r, replay(r, case[1], case[2])) for case, r in zip(CASES, results[1:])}


def replay(r, b, causal):
    """The package's loop (_ChunkedAttention.forward without autograd) on the figure's inputs,
    the state of every row after every tile, and each tile's masked scores."""
    Q, K, V = (torch.tensor(r[x], dtype=torch.float32) for x in ("Q", "K", "V"))
    Q_scaled = Q / math.sqrt(Q.shape[-1])
    m = torch.full((T, 1), -math.inf)
    ell, acc = torch.zeros(T, 1), torch.zeros(T, V.shape[-1])
    states, masked = [(m.clone(), ell.clone(), acc.clone())], []
    pairs = _block_pairs(T, T, b, causal)
    for i0, i1, j0, j1 in pairs:
        S = _block_scores(Q_scaled, K, None, i0, i1, j0, j1, causal)
        masked.append(sorted(map(list, torch.nonzero(S == -math.inf).tolist())))
        m[i0:i1], ell[i0:i1], acc[i0:i1] = _online_update(m[i0:i1], ell[i0:i1], acc[i0:i1], S, V[j0:j1])
        states.append((m.clone(), ell.clone(), acc.clone()))
    return pairs, masked, states, (Q, K, V)


def definition(r, causal, seen):
    """m, ℓ, o of every row in float64 from their definition, over the keys `seen` (a boolean
    (16, 16) array: query i has seen key j)."""
    Q, K, V = (np.array(r[x], dtype=np.float64) for x in ("Q", "K", "V"))
    S = Q @ K.T / 2.0
    allowed = seen & (np.tril(np.ones((T, T), dtype=bool)) if causal else True)
    S = np.where(allowed, S, -np.inf)
    m = S.max(axis=1)
    safe = np.where(np.isneginf(m), 0.0, m)
    P = np.exp(S - safe[:, None])
    return m, P.sum(axis=1), P @ V


def test_the_tiles_and_the_skipped_blocks_are_the_packages(runs):
    _, by_case = runs
    for (seed, b, causal), (r, (pairs, masked, _, _)) in by_case.items():
        computed = [t for t in r["tiles"] if not t["skipped"]]
        assert [(t["i0"], t["i1"], t["j0"], t["j1"]) for t in computed] == pairs, (seed, b, causal)
        every = _block_pairs(T, T, b, False)
        assert [(t["i0"], t["i1"], t["j0"], t["j1"]) for t in r["tiles"]] == every  # all, in order
        assert [t["step"] for t in computed] == list(range(1, len(pairs) + 1))
        assert [sorted(t["masked"]) for t in computed] == masked, (seed, b, causal)
        assert r["skipped"] == len(every) - len(pairs)
        if not causal:
            assert r["skipped"] == 0 and all(t["masked"] == [] for t in computed)
    # the chapter's numbers: 6 of 16 tiles skipped at b = 4
    start = by_case[(5, 4, True)][0]
    assert start["skipped"] == 6 and len(start["tiles"]) == 16


def test_every_step_is_the_packages_online_update(runs):
    _, by_case = runs
    worst32 = worst64 = 0.0
    n_steps = 0
    for (_, _, causal), (r, (pairs, _, states, _)) in by_case.items():
        assert len(r["steps"]) == len(states) == len(pairs) + 1
        seen = np.zeros((T, T), dtype=bool)
        for k, (step, (m, ell, acc)) in enumerate(zip(r["steps"], states)):
            if k > 0:
                i0, i1, j0, j1 = pairs[k - 1]
                seen[i0:i1, j0:j1] = True
            got_m = unnull(step["m"])
            worst32 = max(worst32, biggest(got_m, m[:, 0].numpy()), biggest(step["ell"], ell[:, 0].numpy()),
                          biggest(step["acc"], acc.numpy()))
            m64, ell64, acc64 = definition(r, causal, seen)
            worst64 = max(worst64, biggest(got_m, m64), biggest(step["ell"], ell64), biggest(step["acc"], acc64))
            if k == 0:
                assert step["alpha"] is None and step["rose"] == 0
                continue
            old = unnull(r["steps"][k - 1]["m"])
            rows = range(pairs[k - 1][0], pairs[k - 1][1])
            assert sorted(map(int, step["alpha"])) == list(rows)
            for i in rows:
                a = step["alpha"][str(i)]
                if np.isneginf(old[i]):
                    assert a is None  # the row's first keys: nothing to rescale
                else:
                    worst32 = max(worst32, abs(a - math.exp(old[i] - got_m[i])))
            assert step["rose"] == sum(1 for i in rows if not np.isneginf(old[i]) and got_m[i] > old[i])
            n_steps += 1
    print(f"{n_steps} steps: largest difference {worst32:.2g} from the package's float32 loop, "
          f"{worst64:.2g} from the definition in float64")
    assert worst32 <= TOL and worst64 <= TOL, (worst32, worst64)


def test_the_end_is_softmax_attention(runs):
    _, by_case = runs
    worst = 0.0
    for (_, b, causal), (r, (_, _, states, (Q, K, V))) in by_case.items():
        sdpa = F.scaled_dot_product_attention(Q, K, V, is_causal=causal).numpy()
        Y, full = np.array(r["Y"]), np.array(r["full"])
        worst = max(worst, biggest(Y, sdpa), biggest(full, sdpa))
        if b >= 3:  # the package's own function too (its loop is the replay's, checked above)
            with torch.no_grad():
                worst = max(worst, biggest(Y, chunked_attention(Q, K, V, block_size=b, causal=causal).numpy()))
        assert r["diff"] == float(np.abs(Y - full).max())  # what the page writes: its own two
        assert r["diff"] < TOL
        _, ell, acc = states[-1]
        assert biggest(Y, (acc / ell).numpy()) <= TOL
    print(f"largest difference at the end: {worst:.2g}")
    assert worst <= TOL


def test_the_start_and_the_sentences(runs):
    start, by_case = runs
    assert start == {"seed": 5, "b": 4, "causal": True, "step": 5, "t": 16, "d_k": 4, "d_v": 2}
    r = by_case[(5, 4, True)][0]
    assert r["texts"][0].startswith("Step 0 of 10 (16 tiles of 4 positions, 10 computed, 6 skipped (causal))")
    assert "the maximum rose in 2 of 4 rows" in r["texts"][5]
    assert r["texts"][-1].endswith(f"largest difference {r['diff']:.1e} (float32 rounding).".replace("e-0", "e−"))
    # the inputs are standard normal numbers in float32
    x = np.concatenate([np.ravel(r[k]) for k in ("Q", "K", "V")])
    assert np.array_equal(x.astype(np.float32).astype(np.float64), x)
    assert abs(x.mean()) < 0.3 and 0.7 < x.std() < 1.3


def test_the_figure_stays_small():
    """Issue 46: chapter 14's share is 60 KB; the figure draws its inputs and exports nothing."""
    script = (figure_data.FIGURES / "ch14.js").read_bytes()
    assert len(script) < 20_000 and b"BEGIN EXPORT" not in script
