"""Training speed of minformer's encoder-decoder against nn.Transformer, in target tokens/s.

The configuration of chapter 12's benchmark: d_model 256, 3 + 3 layers, 8 heads, FFN 1024,
shared vocabulary of 8,000, batch 64 × 24 source and target tokens, dropout 0.1, Adam. Both
models get the same embeddings, the same √d_model scale and positions, and the same tied output
projection; only the encoder-decoder in between differs (ours vs ``nn.Transformer``, weights
copied). A step is forward, label-smoothed loss, backward and the optimizer step. The two are
timed in interleaved repetitions (alternating which goes first); medians compared, with min–max.
Goal: ours ≥ 1.1× nn.Transformer's tokens/s in fp32; bf16 autocast reported as well.

    python benchmarks/train_step.py [--reps N] [--device cpu|cuda]   (run it alone)
"""

import argparse
import itertools
import statistics
import time
from functools import partial

import torch
from interleave import DEVICES, device_from, interleaved, synchronize
from torch import nn

from minformer.blocks import copy_weights_from_torch
from minformer.train import sequence_loss
from minformer.transformer import Transformer, TransformerConfig

VOCAB, D, LAYERS, HEADS, FF, BATCH, T = 8000, 256, 3, 8, 1024, 64, 24
GOAL = 1.1


class TorchModel(nn.Module):
    """nn.Transformer between our embeddings and tied projection (the same as our model's)."""

    def __init__(self, ours: Transformer):
        super().__init__()
        c = ours.config
        self.embed = ours.src_embed  # shared with ours: same inputs, same projection
        self.core = nn.Transformer(c.d_model, c.n_heads, c.n_layers, c.decoder_layers, c.d_ff,
                                   c.dropout, batch_first=True, norm_first=c.norm_first)
        # True = may not attend, a bool mask like the padding masks below (mixing a float causal
        # mask with bool padding masks is deprecated in torch 2.15)
        self.register_buffer("causal", torch.ones(T, T, dtype=torch.bool).triu(1),
                             persistent=False)

    def forward(self, src, tgt):
        src_pad, tgt_pad = src == 0, tgt == 0  # PyTorch: True = padding
        h = self.core(self.embed(src), self.embed(tgt), tgt_mask=self.causal, tgt_is_causal=True,
                      src_key_padding_mask=src_pad, tgt_key_padding_mask=tgt_pad,
                      memory_key_padding_mask=src_pad)
        return h @ self.embed.weight.T  # (batch, t, vocab)


def make_batch(g):
    """Random ids with a few padded tails, as a real batch has."""
    src = torch.randint(3, VOCAB, (BATCH, T), generator=g)
    tgt = torch.randint(3, VOCAB, (BATCH, T + 1), generator=g)
    lengths = torch.randint(T // 2, T + 1, (BATCH,), generator=g)
    keep = torch.arange(T)[None, :] < lengths[:, None]
    src = src.masked_fill(~keep, 0)
    tgt[:, :T] = tgt[:, :T].masked_fill(~keep, 0)
    tgt[:, 1:] = tgt[:, 1:].masked_fill(~keep, 0)
    return src, tgt[:, :T], tgt[:, 1:]


def step(model, opt, batch, dtype) -> tuple[float, int]:
    """(seconds, target tokens) of one training step; ``dtype`` None or the autocast dtype."""
    src, tgt_in, tgt_out = batch
    device = src.device
    synchronize(device)
    start = time.perf_counter()
    with torch.autocast(device.type, dtype=dtype, enabled=dtype is not None):
        loss = sequence_loss(model(src, tgt_in), tgt_out, label_smoothing=0.1)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    synchronize(device)
    return time.perf_counter() - start, int((tgt_out != 0).sum())


def bench(reps: int, dtype, device: str | None = "cpu", warmup: int = 2) -> dict:
    """{"minformer": [tokens/s, ...], "nn.Transformer": [...]}, ``reps`` interleaved steps each
    on ``device`` ("cpu" or "cuda"), under autocast to ``dtype`` unless it is None, after
    ``warmup`` untimed steps of each."""
    device = device_from(device)
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=VOCAB, d_model=D, n_heads=HEADS, d_ff=FF,
                               n_layers=LAYERS, dropout=0.1, max_len=64, final_norm=True)
    ours = Transformer(config)
    theirs = TorchModel(Transformer(config))
    copy_weights_from_torch(ours.encoder, theirs.core.encoder)
    copy_weights_from_torch(ours.decoder, theirs.core.decoder)
    ours, theirs = ours.to(device), theirs.to(device)
    g = torch.Generator().manual_seed(0)
    batches = [tuple(x.to(device) for x in make_batch(g)) for _ in range(4)]
    models = {"minformer": ours, "nn.Transformer": theirs}
    opts = {k: torch.optim.Adam(m.parameters(), lr=1e-4) for k, m in models.items()}
    for name in models:  # warm-up
        for b in batches[:warmup]:
            step(models[name], opts[name], b, dtype)
    feeds = {name: itertools.cycle(batches) for name in models}  # both see the same batches

    def rate(name):
        seconds, tokens = step(models[name], opts[name], next(feeds[name]), dtype)
        return tokens / seconds

    return interleaved({name: partial(rate, name) for name in models}, reps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=16)
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    args = parser.parse_args()
    print(f"encoder-decoder training step: d_model {D}, {LAYERS}+{LAYERS} layers, {HEADS} heads, "
          f"FFN {FF}, vocab {VOCAB}, batch {BATCH}x{T}, dropout 0.1, {args.device}, "
          f"{torch.get_num_threads()} threads; target tokens/s, median (min-max) of {args.reps}")
    for label, dtype in (("fp32", None), ("bf16 autocast", torch.bfloat16)):
        rates = bench(args.reps, dtype, args.device)
        med = {k: statistics.median(v) for k, v in rates.items()}
        ratio = med["minformer"] / med["nn.Transformer"]
        for name, v in rates.items():
            print(f"  {label:14s} {name:15s} {med[name]:8.0f} ({min(v):.0f}-{max(v):.0f})")
        verdict = ("goal met" if ratio >= GOAL else "goal NOT met") if dtype is None else "report"
        print(f"  {label:14s} ratio minformer / nn.Transformer = {ratio:.2f}  "
              f"(goal ≥ {GOAL:.1f} in fp32: {verdict})")


if __name__ == "__main__":
    main()
