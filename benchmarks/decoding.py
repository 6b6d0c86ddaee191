"""Greedy decoding with the KV cache against without it (minformer.decode.greedy_search).

The translator's shape (chapter 13): an encoder-decoder with d_model 128, 2 + 2 layers, 4 heads,
FFN 512, a shared vocabulary of 8,000; 32 source sentences of 12 tokens; random weights, with the
<eos> logit pushed down so that every run writes exactly N tokens (N = 24 and 128). Without the
cache every step re-runs the decoder over the whole prefix; with it only the newest token. The
two are timed in interleaved repetitions (alternating which goes first) and must give identical
tokens. Goal: speed-up ≥ 2× at 24 tokens and ≥ 4× at 128.

    python benchmarks/decoding.py [--reps N]     (the machine is shared: run it alone)
"""

import argparse
import statistics
import time

import torch

from minformer.decode import greedy_search
from minformer.transformer import Transformer, TransformerConfig

VOCAB, D, LAYERS, HEADS, FF, BATCH, S = 8000, 128, 2, 4, 512, 32, 12
PAD, BOS, EOS = 0, 1, 2
GOALS = {24: 2.0, 128: 4.0}


def model_and_sources():
    torch.manual_seed(0)
    config = TransformerConfig(vocab_size=VOCAB, d_model=D, n_heads=HEADS, d_ff=FF,
                               n_layers=LAYERS, dropout=0.0, max_len=160, tie_embeddings=False)
    model = Transformer(config).eval()
    with torch.no_grad():
        model.out.bias[EOS] = -1e4  # never <eos>: every run writes exactly max_len tokens
    src = torch.randint(3, VOCAB, (BATCH, S), generator=torch.Generator().manual_seed(0))
    return model, src


def timed(fn) -> tuple[float, torch.Tensor]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def measure(n_tokens: int, reps: int) -> dict:
    """Seconds per run, with and without the cache, ``reps`` interleaved runs each."""
    model, src = model_and_sources()
    runs = {"cached": lambda: greedy_search(model, src, n_tokens, BOS, EOS),
            "uncached": lambda: greedy_search(model, src, n_tokens, BOS, EOS, use_cache=False)}
    outs = {name: fn() for name, fn in runs.items()}  # warm-up, and the check
    assert outs["cached"].shape == (BATCH, n_tokens)
    assert torch.equal(outs["cached"], outs["uncached"]), "the cache changed the tokens"
    times = {name: [] for name in runs}
    for r in range(reps):
        for name in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            seconds, out = timed(runs[name])
            assert torch.equal(out, outs["cached"])
            times[name].append(seconds)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    print(f"greedy decoding, {BATCH} sentences, d_model {D}, {LAYERS}+{LAYERS} layers, "
          f"{torch.get_num_threads()} threads; speed-up = uncached time / cached time")
    for n, goal in GOALS.items():
        t = measure(n, args.reps)
        speedups = [u / c for u, c in zip(t["uncached"], t["cached"])]
        print(f"  {n:4d} tokens: cached {statistics.median(t['cached']):.3f} s, uncached "
              f"{statistics.median(t['uncached']):.3f} s, speed-up "
              f"{statistics.median(speedups):.2f}x ({min(speedups):.2f}-{max(speedups):.2f}; "
              f"goal ≥ {goal:.0f}x)")


if __name__ == "__main__":
    main()
