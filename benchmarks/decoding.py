"""Greedy decoding with the KV cache against without it, on chapter 13's shipped translator.

The trained model of data/checkpoints/en-es (d_model 256, 3 + 3 layers, 4 heads, 7,000-token
BPE) translates the first 16 English sentences of the test split. So that every run writes
exactly N tokens (N = 24 and 128), the search is given no end token (eos_id=None): past the
model's own <eos> it keeps writing, which costs the same per step. Without
the cache every step re-runs the decoder over the whole prefix; with it only the newest token,
and the encoder's keys and values for cross-attention are computed once. The two are timed in
interleaved repetitions (alternating which goes first) and must give identical tokens.
Goal: speed-up ≥ 2× at 24 tokens and ≥ 4× at 128.

    python benchmarks/decoding.py [--reps N] [--device cpu|cuda]   (run it alone)
"""

import argparse
import statistics

import torch
from interleave import DEVICES, device_from, interleaved, timed

from minformer.data import load_translation_pairs
from minformer.decode import greedy_search
from minformer.translator import Translator, references_by_source

BATCH = 16
GOALS = {24: 2.0, 128: 4.0}


def translator_and_sources(device: str | None = "cpu") -> tuple[Translator, torch.Tensor]:
    """The shipped translator on ``device`` ("cpu" or "cuda") and (BATCH, s) padded source ids
    of test sentences, there too."""
    device = device_from(device)
    translator = Translator.load(device=device)
    sources, _ = references_by_source(load_translation_pairs("test"))
    src = translator.tokenizer.pad(translator.encode_sources(sources[:BATCH]))[0]
    return translator, src.to(device)


def measure(n_tokens: int, reps: int, translator: Translator, src: torch.Tensor) -> dict:
    """Seconds per run, with and without the cache, ``reps`` interleaved runs each, for the
    sources ``src`` of :func:`translator_and_sources`."""
    tok = translator.tokenizer
    never = None  # no end token: the search writes exactly n_tokens

    def search(use_cache):
        return greedy_search(translator.model, src, n_tokens, tok.bos_id, never, tok.pad_id,
                             use_cache=use_cache)

    runs = {"cached": timed(lambda: search(True), src.device),
            "uncached": timed(lambda: search(False), src.device)}
    first = {name: fn()[1] for name, fn in runs.items()}  # warm-up, and the check
    assert first["cached"].shape == (BATCH, n_tokens)
    assert torch.equal(first["cached"], first["uncached"]), "the cache changed the tokens"
    times = {}
    for name, results in interleaved(runs, reps).items():
        assert all(torch.equal(out, first["cached"]) for _, out in results)
        times[name] = [seconds for seconds, _ in results]
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    args = parser.parse_args()
    translator, src = translator_and_sources(args.device)
    print(f"greedy decoding with the shipped translator, {BATCH} test sentences, {args.device}, "
          f"{torch.get_num_threads()} threads; speed-up = uncached time / cached time")
    for n, goal in GOALS.items():
        t = measure(n, args.reps, translator, src)
        speedups = [u / c for u, c in zip(t["uncached"], t["cached"])]
        print(f"  {n:4d} tokens: cached {statistics.median(t['cached']):.3f} s, uncached "
              f"{statistics.median(t['uncached']):.3f} s, speed-up "
              f"{statistics.median(speedups):.2f}x ({min(speedups):.2f}-{max(speedups):.2f}; "
              f"goal ≥ {goal:.0f}x)")


if __name__ == "__main__":
    main()
