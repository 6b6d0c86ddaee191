"""The shipped translator as two ONNX graphs, to measure onnxruntime-web against the book's own
JavaScript engine (benchmarks/onnx_runtime_web.mjs; the numbers are in onnx_runtime_web.md).

    pip install onnx onnxscript onnxruntime        # not in requirements.txt: a one-off measure
    python benchmarks/onnx_export.py OUT_FOLDER

writes OUT_FOLDER/encoder.onnx and step.onnx (float32) and checks them with onnxruntime (Python)
against the package's model: the same logits to 1e-4 and the same greedy tokens.

- encoder.onnx: src (1, s) int64 → cross_k, cross_v (L, 1, H, s, d_head): the encoder, then each
  decoder layer's cross-attention keys and values of its output, computed once per sentence.
- step.onnx: one decoder step with a KV cache. tok (B, 1) int64, pos (1,) int64, past_k, past_v
  (L, B, H, t, d_head), cross_k, cross_v (L, B, H, s, d_head) → logits (B, vocab), new_k, new_v
  (L, B, H, t + 1, d_head).

The graphs are written with plain tensor functions from the checkpoint's weights, because the
package's layers check their inputs with Python code that an exporter cannot trace. Batch 1 has
no padding, so no mask is needed.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "code"))
from minformer.translator import Translator  # noqa: E402


def _ln(x, norm):
    return F.layer_norm(x, norm.weight.shape, norm.weight, norm.bias, 1e-5)


def _heads(X, H):  # (B, t, H·d_head) -> (B, H, t, d_head)
    B, t, w = X.shape
    return X.reshape(B, t, H, w // H).transpose(1, 2)


def _attend(Q, K, V):  # (B, H, t_q, d_head), (B, H, t_k, d_head) -> (B, t_q, H·d_head)
    A = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    Y = A @ V  # (B, H, t_q, d_head)
    return Y.transpose(1, 2).reshape(Y.shape[0], Y.shape[2], -1)


def _ffn(x, ffn):
    return F.linear(F.relu(F.linear(x, ffn.linear1.weight, ffn.linear1.bias)),
                    ffn.linear2.weight, ffn.linear2.bias)


class EncoderGraph(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m, self.H, self.d = model, model.config.n_heads, model.config.d_model
        self.register_buffer("pe", model.src_embed.positions.pe.clone())

    def forward(self, src):  # (1, s)
        m, H, d = self.m, self.H, self.d
        x = F.embedding(src, m.src_embed.weight) * math.sqrt(d) + self.pe[: src.shape[1]]
        for layer in m.encoder.layers:
            a = layer.self_attn
            Q, K, V = F.linear(_ln(x, layer.norm1), a.in_proj_weight, a.in_proj_bias).split(d, -1)
            x = x + F.linear(_attend(_heads(Q, H), _heads(K, H), _heads(V, H)),
                             a.out_proj.weight, a.out_proj.bias)
            x = x + _ffn(_ln(x, layer.norm2), layer.ffn)
        memory = _ln(x, m.encoder.norm)  # (1, s, d)
        ks, vs = [], []
        for layer in m.decoder.layers:
            a = layer.cross_attn
            K, V = F.linear(memory, a.in_proj_weight[d:], a.in_proj_bias[d:]).split(d, -1)
            ks.append(_heads(K, H))
            vs.append(_heads(V, H))
        return torch.stack(ks), torch.stack(vs)  # (L, 1, H, s, d_head) each


class StepGraph(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m, self.H, self.d = model, model.config.n_heads, model.config.d_model
        self.register_buffer("pe", model.tgt_embed.positions.pe.clone())

    def forward(self, tok, pos, past_k, past_v, cross_k, cross_v):
        m, H, d = self.m, self.H, self.d
        E = m.tgt_embed.weight
        x = F.embedding(tok, E) * math.sqrt(d) + self.pe[pos]  # (B, 1, d)
        new_k, new_v = [], []
        for i, layer in enumerate(m.decoder.layers):
            a = layer.self_attn
            q, k, v = F.linear(_ln(x, layer.norm1), a.in_proj_weight, a.in_proj_bias).split(d, -1)
            K = torch.cat([past_k[i], _heads(k, H)], dim=2)  # (B, H, t + 1, d_head)
            V = torch.cat([past_v[i], _heads(v, H)], dim=2)
            x = x + F.linear(_attend(_heads(q, H), K, V), a.out_proj.weight, a.out_proj.bias)
            c = layer.cross_attn
            q = F.linear(_ln(x, layer.norm2), c.in_proj_weight[:d], c.in_proj_bias[:d])
            x = x + F.linear(_attend(_heads(q, H), cross_k[i], cross_v[i]),
                             c.out_proj.weight, c.out_proj.bias)
            x = x + _ffn(_ln(x, layer.norm3), layer.ffn)
            new_k.append(K)
            new_v.append(V)
        logits = F.linear(_ln(x, m.decoder.norm), E)  # (B, 1, vocab): tied output
        return logits[:, 0], torch.stack(new_k), torch.stack(new_v)


def greedy(enc, step, src, bos, eos, max_new=100):
    """Greedy search with the two graphs (any callables with their signatures)."""
    cross_k, cross_v = enc(src)
    L, _, H, _, dh = cross_k.shape
    past_k = past_v = torch.zeros(L, 1, H, 0, dh)
    tok, out = torch.tensor([[bos]]), []
    for t in range(max_new):
        logits, past_k, past_v = step(tok, torch.tensor([t]), past_k, past_v, cross_k, cross_v)
        nxt = int(logits[0].argmax())
        if nxt == eos:
            break
        out.append(nxt)
        tok = torch.tensor([[nxt]])
    return out


def main(out: Path) -> None:
    import numpy as np
    import onnxruntime as ort

    tr = Translator.load()
    model = tr.model.float().eval()
    c = model.config
    enc, step = EncoderGraph(model).eval(), StepGraph(model).eval()
    out.mkdir(parents=True, exist_ok=True)
    L, H, dh = len(model.decoder.layers), c.n_heads, c.d_model // c.n_heads
    src = torch.tensor([tr.encode_sources(["The train leaves at eight."])[0]])
    with torch.no_grad():
        ck, cv = enc(src)
        z = torch.zeros(L, 1, H, 3, dh)
        torch.onnx.export(enc, (src,), out / "encoder.onnx", input_names=["src"],
                          output_names=["cross_k", "cross_v"], dynamo=False, opset_version=17,
                          dynamic_axes={"src": {1: "s"}, "cross_k": {3: "s"}, "cross_v": {3: "s"}})
        torch.onnx.export(
            step, (torch.tensor([[5]]), torch.tensor([3]), z, z, ck, cv), out / "step.onnx",
            input_names=["tok", "pos", "past_k", "past_v", "cross_k", "cross_v"],
            output_names=["logits", "new_k", "new_v"], dynamo=False, opset_version=17,
            dynamic_axes={"tok": {0: "B"}, "past_k": {1: "B", 3: "t"}, "past_v": {1: "B", 3: "t"},
                          "cross_k": {1: "B", 3: "s"}, "cross_v": {1: "B", 3: "s"},
                          "logits": {0: "B"}, "new_k": {1: "B", 3: "t1"}, "new_v": {1: "B", 3: "t1"}})
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    e = ort.InferenceSession(str(out / "encoder.onnx"), so)
    s = ort.InferenceSession(str(out / "step.onnx"), so)

    def enc_ort(x):
        return [torch.from_numpy(a) for a in e.run(None, {"src": x.numpy()})]

    def step_ort(tok, pos, pk, pv, ck, cv):
        feed = {"tok": tok.numpy(), "pos": pos.numpy(), "past_k": pk.numpy(), "past_v": pv.numpy(),
                "cross_k": ck.numpy(), "cross_v": cv.numpy()}
        return [torch.from_numpy(np.asarray(a)) for a in s.run(None, feed)]

    sentences = ["The train leaves at eight, so we have to get up early.",
                 "My brother, who lives in Madrid, is coming to visit us next month.",
                 "I don't know.", "Where is the nearest pharmacy?"]
    same = 0
    for sentence in sentences:
        x = torch.tensor([tr.encode_sources([sentence])[0]])
        want = tr.search(x, beam_size=1)[0].tolist()
        want = [i for i in want if i not in (c.pad_id, c.bos_id, c.eos_id)]
        with torch.no_grad():
            mine = greedy(enc, step, x, c.bos_id, c.eos_id)
        theirs = greedy(enc_ort, step_ort, x, c.bos_id, c.eos_id)
        same += mine == want == theirs
        print(f"{sentence!r}: package {len(want)} tokens, graphs {mine == want}, onnxruntime "
              f"{theirs == want}")
    with torch.no_grad():  # logits of one step, package vs graph
        x = torch.tensor([tr.encode_sources([sentences[0]])[0]])
        memory = model.encode(x)
        ref = model.decode(torch.tensor([[c.bos_id]]), memory)[0, -1]
        ck, cv = enc_ort(x)
        got = step_ort(torch.tensor([[c.bos_id]]), torch.tensor([0]), torch.zeros(L, 1, H, 0, dh),
                       torch.zeros(L, 1, H, 0, dh), ck, cv)[0][0]
    diff = float((ref - got).abs().max())
    print(f"largest logit difference, package vs onnxruntime: {diff:.2e}")
    print(f"same greedy tokens: {same} of {len(sentences)}")
    for f in ("encoder.onnx", "step.onnx"):
        print(f"{f}: {(out / f).stat().st_size / 1e6:.2f} MB")
    assert same == len(sentences)
    assert diff < 1e-4


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "onnx"))
