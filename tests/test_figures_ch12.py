"""Chapter 12's interactive figure (_static/figures/ch12.js, issue 46) computes what the package
computes. One Node process (tests/js/figures_ch12.mjs) runs the figure's code on many inputs, in
every architecture and attention the page offers; each test compares its answers with minformer's.

- masks exactly: EncoderOnly.mask(ids), DecoderOnly.mask(ids), and the encoder-decoder's
  Transformer.source_mask(src) (its encoder's self-attention; broadcast over the target queries,
  its cross-attention) and Transformer.target_mask(tgt) (its decoder's masked self-attention),
  with padding found from pad_id wherever it is (a typed "<pad>" too), and the chapter's own
  functions causal_mask & padding_mask;
- the weights within 1e-6 of scaled_dot_product_attention in float32 (zeros in a row with no key),
  on the figure's vectors: each word's seeded vector (the same word, the same vector; <pad> the
  zero vector) plus sinusoidal_encoding(t, 8), checked here too;
- the page's words: what each query reads, and the summary line, from the mask and the weights.
"""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from minformer.attention import scaled_dot_product_attention
from minformer.masks import causal_mask, padding_mask
from minformer.positional import sinusoidal_encoding
from minformer.transformer import DecoderOnly, EncoderOnly, Transformer, TransformerConfig

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures_ch12.mjs"
NODE = shutil.which("node")
TOL = 1e-6
pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed: the figures' scripts "
                                                     "(_static/figures/) are checked under Node 20")
PICTURES = [("encoder-only", "self"), ("decoder-only", "masked"), ("encoder-decoder", "self"),
            ("encoder-decoder", "masked"), ("encoder-decoder", "cross")]
INPUTS = [{},  # the page's start
          {"srcPads": 0, "tgtPads": 0}, {"srcPads": 3, "tgtPads": 3},
          {"source": "one", "srcPads": 0, "target": ""},
          {"source": "a b c d e f g h i", "target": "uno dos tres cuatro cinco seis siete"},  # cut to 6
          {"source": "the <pad> cat <pad>", "target": "<pad> el gato", "tgtPads": 1},
          {"source": "<pad> the cat", "srcPads": 1},
          {"source": "  Café   naïve 日本 😀 the the ", "target": "¿Dónde está?", "tgtPads": 2}]


def run(tasks: list[dict]) -> list:
    done = subprocess.run([NODE, str(DRIVER)], input=json.dumps({"tasks": tasks}), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, f"node failed ({done.returncode}): {done.stderr[-2000:]}"
    results = json.loads(done.stdout)["results"]
    for task, result in zip(tasks, results):
        assert not (isinstance(result, dict) and "error" in result), (task, result)
    return results


@pytest.fixture(scope="module")
def answers():
    data = run([{"op": "ch12data"}])[0]
    states = [dict(data["start"], arch=a, attn=b, **x) for x in INPUTS for a, b in PICTURES]
    return data, states, run([{"op": "ch12", "state": s} for s in states])


def ids_of(*sides):
    """The tokens as ids: <pad> 0 (pad_id), <bos> 1, each other word its own id from 5 on."""
    vocab = {"<pad>": 0, "<bos>": 1}
    out = []
    for tokens in sides:
        out.append(torch.tensor([[vocab.setdefault(w, len(vocab) + 3) for w in tokens]]))
    return out


def packages_mask(arch, attn, queries, keys):
    """The mask the package's model uses for this picture, (t_q, t_k)."""
    config = TransformerConfig(vocab_size=64, d_model=8, n_heads=1, d_ff=8, n_layers=1, max_len=16,
                               dropout=0.0)
    q_ids, k_ids = ids_of(queries, keys)
    t_q, t_k = len(queries), len(keys)
    if arch == "encoder-only":
        return EncoderOnly(config).mask(k_ids).expand(1, 1, t_q, t_k)[0, 0]
    if arch == "decoder-only":
        return DecoderOnly(config).mask(k_ids)[0, 0]
    model = Transformer(config)
    if attn == "masked":
        return model.target_mask(q_ids)[0, 0]
    return model.source_mask(k_ids).expand(1, 1, t_q, t_k)[0, 0]  # self (src, src) or cross (tgt, src)


def test_the_masks_are_the_packages_exactly(answers):
    _, states, results = answers
    seen = set()
    for s, r in zip(states, results):
        q, k = r["queries"], r["keys"]
        assert r["attn"] == s["attn"]
        words = lambda text: text.split()[:6]  # noqa: E731
        src = words(s["source"]) + ["<pad>"] * s["srcPads"]
        tgt = ["<bos>"] + words(s["target"]) + ["<pad>"] * s["tgtPads"]
        decoder_side = s["arch"] == "encoder-decoder" and s["attn"] != "self"
        assert q == (tgt if decoder_side else src) and k == (src if s["attn"] == "cross" else q), s
        mask = torch.tensor(r["mask"])
        assert torch.equal(mask, packages_mask(s["arch"], s["attn"], q, k)), s
        # and as the chapter writes them, with minformer.masks
        (k_ids,) = ids_of(k)
        keys_real = padding_mask(tokens=k_ids, pad_id=0)[0, 0].expand(len(q), len(k))
        assert torch.equal(mask, keys_real & causal_mask(len(k)) if s["attn"] == "masked" else keys_real)
        seen.add((s["arch"], s["attn"], tuple(mask.shape), bool((~mask.any(-1)).any())))
    assert {(a, b) for a, b, _, _ in seen} == set(PICTURES)
    assert any(empty for *_, empty in seen)  # a row with no key at all is among the cases
    assert any(shape[0] != shape[1] for _, _, shape, _ in seen)  # cross-attention is not square


def test_the_vectors_are_a_word_vector_plus_the_position(answers):
    data, states, results = answers
    d = data["d"]
    by_word = {}
    for r in results:
        for tokens, X in ((r["queries"], r["Xq"]), (r["keys"], r["Xk"])):
            P = sinusoidal_encoding(len(tokens), d, dtype=torch.float64).numpy()
            E = np.asarray(X) - P
            assert np.abs(E - (np.asarray(X) - sinusoidal_encoding(len(tokens), d).double().numpy())).max() <= TOL
            for w, e in zip(tokens, E):
                if w == "<pad>":
                    assert np.abs(e).max() <= 1e-12, "a pad's vector is zero plus its position"
                by_word.setdefault(w, []).append(e)
    for w, es in by_word.items():
        assert np.abs(np.asarray(es) - es[0]).max() <= 1e-12, w  # one vector per word
    assert len(by_word) > 20


def test_the_weights_are_scaled_dot_product_attention_in_float32(answers):
    data, states, results = answers
    WQ = torch.tensor(data["WQ"], dtype=torch.float32)
    WK = torch.tensor(data["WK"], dtype=torch.float32)
    worst, exact_zeros, n = 0.0, 0, 0
    for s, r in zip(states, results):
        Xq = torch.tensor(r["Xq"], dtype=torch.float32)
        Xk = torch.tensor(r["Xk"], dtype=torch.float32)
        mask = torch.tensor(r["mask"])
        Q, K = Xq @ WQ, Xk @ WK
        _, A = scaled_dot_product_attention(Q, K, K, mask, return_weights=True, allow_empty_rows=True)
        a = np.asarray(r["A"])
        worst = max(worst, float(np.abs(a - A.double().numpy()).max()))
        S = (Q @ K.T / np.sqrt(data["d"])).double().numpy()
        worst = max(worst, float(np.abs(np.asarray(r["S"]) - S).max()))
        assert np.all(a[~mask.numpy()] == 0), s  # forbidden pairs exactly 0
        exact_zeros += int((~mask).sum())
        n += a.size
    print(f"largest |difference| (weights and scores, float32): {worst:.2g}; {exact_zeros} of {n} "
          "entries forbidden, each exactly 0")
    assert worst <= TOL, worst


def test_the_pages_words(answers):
    _, states, results = answers
    r = results[0]  # the start: encoder-only over "the cat sat down" and two pads
    assert r["summary"] == "encoder-only, self-attention: 6 queries × 6 keys, 24 of 36 pairs allowed."
    assert r["reads"][1].startswith("Query 1 “cat” reads 4 keys: 0 the ")
    assert r["reads"][1].endswith("; hidden from it: 4 <pad>, 5 <pad>.")
    for r in results:
        for i, text in enumerate(r["reads"]):
            n = sum(r["mask"][i])
            assert (f"reads {n} keys" in text or (n == 1 and "reads 1 key:" in text)
                    or (n == 0 and "reads no key" in text)), text
