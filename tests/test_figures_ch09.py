"""Chapter 9's interactive figure (_static/figures/ch09.js, issue 46) computes what the package
computes. One Node process (tests/js/figures_ch09.mjs) runs the figure's code; each test compares
its answers with minformer's.

- ch09-gates: the shipped GRU language model (minformer.gru_lm.load_gru_lm) read word by word.
  The words of a sentence, exactly as minformer.data.text_to_words cuts them, and their ids
  (words outside the figure's 600 carried ones read as <unk>); at every word the reset and update
  gates and the state within 1e-6 of the float32 model taken one step at a time from the figure's
  previous state (the gates recomputed from its weights, the step checked against its nn.GRU),
  and everything within 1e-12 of the same model in float64 over whole sentences; and the
  readout's numbers (the mean gate, the counts above 0.9 and below 0.1, the mean products of z)
  within 1e-6 of the float32 model's run, counts exactly.
  "The model" is the shipped one with the weights the figure carries: its embedding rows and GRU
  matrices int8 with a float32 scale a row (minformer.figure_data.ch09_quantize), dequantized
  exactly as the figure dequantizes them; the biases as shipped.
- How far that is from the shipped model itself, on every sentence here: the gates and states
  (largest differences printed), and the readout's numbers at every word.
- The exported words are the model's first 600 ids (minformer.gru_lm.frequency_ids): checked by
  the fresh export (minformer.figure_data.check, tests/test_figures_ch02_ch10.py), which recounts
  the training words.
"""

import copy
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from minformer.data import read_shipped_state, text_to_words
from minformer.figure_data import CH09_INT8, CH09_WORDS, ch09_dequantized, ch09_in_script, ch09_quantize
from minformer.gru_lm import FOLDER, load_gru_lm

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures_ch09.mjs"
SCRIPT = REPO / "_static" / "figures" / "ch09.js"
NODE = shutil.which("node")
TOL = 1e-6
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the figures' scripts "
                                                     "(_static/figures/) are checked under Node 20")

TEXTS = ["the band released the album in the united states and it reached number one on the chart",
         "The cat sat on the mat.", "In 1999, the government's new law was passed; however, it failed.",
         "Café, naïve résumé – Zürich’s 2,000 people!", "it it it it it it it it it it it it it it it it",
         "<unk> is a token here", "a", "", "... !!! ???", "rock'n'roll isn't dead, y'know",
         " ".join(["the war ended in 1945 and the army returned home"] * 4)]


def run(tasks: list[dict]) -> list:
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": tasks}), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, f"node failed ({done.returncode}): {done.stderr[-2000:]}"
    results = json.loads(done.stdout)["results"]
    for task, result in zip(tasks, results):
        assert not (isinstance(result, dict) and "error" in result), (task["op"], result)
    return results


@pytest.fixture(scope="module")
def answers():
    tasks = [{"op": "vocab"}] + [{"op": "run", "text": t} for t in TEXTS]
    tasks += [{"op": "summary", "text": TEXTS[0], "t": t} for t in range(17)]
    tasks += [{"op": "words", "text": t} for t in TEXTS]
    res = run(tasks)
    n = len(TEXTS)
    return {"vocab": res[0], "run": res[1:1 + n], "summary": res[1 + n:18 + n], "words": res[18 + n:]}


@pytest.fixture(scope="module")
def shipped():
    m, _ = load_gru_lm(device="cpu")
    return m


@pytest.fixture(scope="module")
def model(shipped):
    """The shipped model with the figure's weights: matrices q * s, float32 (the biases as shipped)."""
    m = copy.deepcopy(shipped)
    with torch.no_grad():
        for name in CH09_INT8:
            w = dict(m.named_parameters())[name]
            rows = CH09_WORDS if name == "embed.weight" else w.shape[0]
            w[:rows] = ch09_dequantized(w[:rows])
    return m


def reference(model, ids, given=None):
    """r, z, n, h at every word from the model's GRU weights (PyTorch's gate order), in the
    model's dtype, and the model's own nn.GRU states over the whole sentence. given: the states
    h_1 .. h_n of another run; then each step starts from that run's h_{t-1} (one step at a
    time, so that float32's rounding does not pile up over the sentence)."""
    g = model.gru
    W_ih, W_hh, b_ih, b_hh = g.weight_ih_l0, g.weight_hh_l0, g.bias_ih_l0, g.bias_hh_l0
    d = W_hh.shape[1]
    out = {k: [] for k in "rznh"}
    with torch.no_grad():
        x = model.embed(torch.tensor(ids, dtype=torch.long))  # (n, d_emb)
        states = g(x[None])[0][0].numpy() if ids else np.zeros((0, d))  # (n, d): the package's GRU
        h = torch.zeros(d, dtype=W_hh.dtype)
        for t, x_t in enumerate(x):
            if given is not None and t > 0:
                h = torch.tensor(given[t - 1], dtype=W_hh.dtype)
            gi, gh = W_ih @ x_t + b_ih, W_hh @ h + b_hh
            r = torch.sigmoid(gi[:d] + gh[:d])
            z = torch.sigmoid(gi[d:2 * d] + gh[d:2 * d])
            n = torch.tanh(gi[2 * d:] + r * gh[2 * d:])
            if given is not None:  # the package's cell, one step, from the same h_{t-1}
                assert torch.allclose(g(x_t[None, None], h[None, None])[0][0, 0],
                                      (1 - z) * n + z * h, atol=TOL, rtol=0)
            h = (1 - z) * n + z * h
            for k, v in zip("rznh", (r, z, n, h)):
                out[k].append(v)
    out = {k: torch.stack(v).numpy() if v else np.zeros((0, d)) for k, v in out.items()}
    return out, states


def expected_ids(vocab, text):
    index = {w: i for i, w in enumerate(vocab["words"])}
    words = text_to_words(text)
    return words[:vocab["maxWords"]], [index.get(w, vocab["unk"]) for w in words[:vocab["maxWords"]]]


def test_the_figure_carries_the_shipped_weights_quantized(answers, model):
    state = read_shipped_state(FOLDER, "model.pt")
    words, weights = ch09_in_script()
    vocab = answers["vocab"]
    assert words == vocab["words"] and len(words) == CH09_WORDS and vocab["d"] == 128
    assert vocab["words"][vocab["unk"]] == "<unk>"
    params = dict(model.named_parameters())
    for name, w in weights.items():
        shipped = state[name][:len(w)].float()
        assert torch.equal(w, params[name][:len(w)].detach()), name  # what the tests' model uses
        if name in CH09_INT8:
            _, scale = ch09_quantize(state[name][:len(w)])
            assert ((w - shipped).abs() <= scale[:, None] / 2 + TOL).all(), name  # half a step
        else:
            assert torch.equal(w, shipped), name  # the biases as shipped
    assert len(SCRIPT.read_bytes()) < 500_000  # chapter 9's share of the figures' budget


def test_the_figure_reads_the_words_as_the_package_does(answers):
    vocab = answers["vocab"]
    for text, r in zip(TEXTS, answers["words"]):
        words, ids = expected_ids(vocab, text)
        assert r["words"] == words and r["ids"] == ids, text
        assert r["more"] == (len(text_to_words(text)) > vocab["maxWords"])


def test_the_figure_runs_the_shipped_gru(answers, model):
    """Step by step against the float32 model (each step from the figure's h_{t-1}): within 1e-6.
    The whole sentence against the same model in float64 (the float16 weights are exact in
    both): within 1e-12. The float32 model's own run of a whole sentence drifts from both by its
    rounding, a few 1e-7 a step (printed)."""
    vocab, model64 = answers["vocab"], copy.deepcopy(model).double()
    worst32, worst64, drift, count = {k: 0.0 for k in "rznh"}, 0.0, 0.0, 0
    for text, r in zip(TEXTS, answers["run"]):
        _, ids = expected_ids(vocab, text)
        assert r["ids"] == ids
        got = {k: np.asarray(r[k], dtype=np.float64).reshape(-1, 128) for k in "rznh"}
        ref32, states32 = reference(model, ids, given=got["h"])
        ref64, states64 = reference(model64, ids)
        for k in "rznh":
            worst32[k] = max(worst32[k], float(np.abs(got[k] - ref32[k]).max(initial=0.0)))
            worst64 = max(worst64, float(np.abs(got[k] - ref64[k]).max(initial=0.0)))
        worst64 = max(worst64, float(np.abs(got["h"] - states64).max(initial=0.0)))
        drift = max(drift, float(np.abs(got["h"] - states32).max(initial=0.0)))
        count += len(ids)
    print(f"{count} words; largest |difference| step by step in float32: "
          + ", ".join(f"{k} {v:.2g}" for k, v in worst32.items())
          + f"; whole sentences in float64 {worst64:.2g}; the float32 GRU's own drift {drift:.2g}")
    # the candidate n is not drawn; its float32 reference is itself good to about 1e-6 only (its
    # pre-activation sums 128 products of size up to a few units), so it gets 2e-6 there
    assert max(worst32[k] for k in "rzh") <= TOL and worst32["n"] <= 2 * TOL, worst32
    assert worst64 <= 1e-12, worst64
    assert drift < 5e-6


def test_a_changed_sentence_reuses_only_the_steps_of_its_unchanged_words():
    """The page reruns the GRU from the first word that changed: the same numbers as a fresh run."""
    pairs = [(TEXTS[0], TEXTS[0] + " again"), (TEXTS[0], "the band"), (TEXTS[0], "a band released it"),
             (TEXTS[1], TEXTS[0]), ("", TEXTS[1]), (TEXTS[0], TEXTS[0])]
    for (before, text), r in zip(pairs, run([{"op": "incremental", "before": a, "text": b} for a, b in pairs])):
        assert r["same"], (before, text)


def test_the_readout_is_the_gates_summary(answers, model):
    vocab = answers["vocab"]
    _, ids = expected_ids(vocab, TEXTS[0])
    ref, _ = reference(model, ids)
    z = ref["z"].astype(np.float64)
    for t, s in enumerate(answers["summary"]):
        assert s["ids"] == ids
        assert abs(s["meanZ"] - z[t].mean()) <= TOL
        margin = np.abs(z[t] - vocab["keep"]).min(), np.abs(z[t] - vocab["drop"]).min()
        assert min(margin) > TOL  # no gate so near a threshold that rounding could move a count
        assert s["keep"] == int((z[t] > vocab["keep"]).sum()) and s["drop"] == int((z[t] < vocab["drop"]).sum())
        carry = [1.0] + [float(np.prod(z[t + 1:u + 1], axis=0).mean()) for u in range(t + 1, len(ids))]
        assert np.abs(np.asarray(s["carry"]) - carry).max() <= TOL
        prod = np.prod(z[t + 1:], axis=0)
        assert np.abs(prod - 0.5).min() > TOL and s["half"] == int((prod > 0.5).sum())
        assert s["later"] == len(ids) - 1 - t


def test_the_quantized_model_is_close_to_the_shipped_one(answers, model, shipped):
    """Not the figure's own error but its weights': the same sentences through the shipped model."""
    vocab, worst, moved, cases = answers["vocab"], {k: 0.0 for k in "zh"}, [], 0
    for text in TEXTS:
        _, ids = expected_ids(vocab, text)
        ours, _ = reference(model, ids)
        theirs, _ = reference(shipped, ids)
        for k in "zh":
            worst[k] = max(worst[k], float(np.abs(ours[k] - theirs[k]).max(initial=0.0)))
        for t in range(len(ids)):
            a, b = ours["z"][t], theirs["z"][t]
            pa, pb = np.prod(ours["z"][t + 1:], axis=0), np.prod(theirs["z"][t + 1:], axis=0)
            moved.append((abs(a.mean() - b.mean()), abs(int((a > 0.9).sum()) - int((b > 0.9).sum())),
                          abs(int((a < 0.1).sum()) - int((b < 0.1).sum())), abs(pa.mean() - pb.mean()),
                          abs(int((pa > 0.5).sum()) - int((pb > 0.5).sum()))))
            cases += 1
    moved = np.array(moved)
    same = [int((moved[:, j] == 0).sum()) for j in (1, 2, 4)]
    print(f"{cases} words; quantized against shipped: largest |z| difference {worst['z']:.2g}, |h| "
          f"{worst['h']:.2g}; mean gate {moved[:, 0].max():.2g}, mean carry {moved[:, 3].max():.2g}; "
          f"counts equal (above 0.9, below 0.1, carry above half) at {same} of {cases} words, "
          f"off by at most {moved[:, [1, 2, 4]].max(axis=0).astype(int).tolist()}")
    assert worst["z"] < 0.05 and moved[:, 0].max() < 0.005 and moved[:, 3].max() < 0.01
