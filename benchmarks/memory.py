"""Peak memory of chunked attention (online softmax over key blocks) against naive attention.

Causal self-attention, batch 1, 8 heads, d_head 64, L = 2048, forward pass without gradients:
naive is minformer.attention.scaled_dot_product_attention (it materializes the (8, L, L) score
and weight matrices) given the dense (L, L) causal mask; chunked is
minformer.attention.chunked_attention(causal=True) with blocks of 128 queries and keys, which
builds each block's causal mask from its indices and needs no (L, L) mask at all;
F.scaled_dot_product_attention (is_causal=True) is shown for reference. Both outputs must agree (allclose).

Peak memory is measured with minformer.utils.peak_memory: every allocation and release of
PyTorch's CPU allocator during the call, as recorded by its profiler, summed in order; the
peak is the most tensor memory held at once above what was held before the call (inputs
excluded, naive's (L, L) mask among them, which flatters naive). Tensor storage only: not
Python objects, not the allocator's caches. On a GPU (--device cuda) the peak is CUDA's
allocator's own: torch.cuda.max_memory_allocated during the call, above what was allocated
before it. Goal: chunked / naive ≤ 1/8.

    python benchmarks/memory.py [--device cpu|cuda]
"""

import argparse
import time
from functools import partial

import torch
import torch.nn.functional as F
from interleave import DEVICES, device_from, interleaved, synchronize

from minformer.attention import chunked_attention, scaled_dot_product_attention
from minformer.masks import causal_mask
from minformer.utils import peak_memory

BATCH, HEADS, L, D_HEAD, BLOCK = 1, 8, 2048, 64, 128
GOAL = 1 / 8


def device_peak_memory(fn, device: torch.device):
    """(fn's result, peak bytes of tensor memory above the start) on ``device``: the profiler's
    count on the CPU (minformer.utils.peak_memory), CUDA's allocator statistics on a GPU."""
    if device.type != "cuda":
        return peak_memory(fn)
    synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    result = fn()
    synchronize(device)
    return result, torch.cuda.max_memory_allocated(device) - before


def measure(reps: int = 2, device: str | None = "cpu", length: int = L) -> dict:
    """{method: [(peak bytes, seconds), ...]} for naive, chunked and PyTorch's SDPA, on
    ``device`` ("cpu" or "cuda"), for sequences of ``length`` tokens."""
    device = device_from(device)
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(BATCH, HEADS, length, D_HEAD, generator=g).to(device)
               for _ in range(3))
    mask = causal_mask(length).to(device)
    methods = {
        "naive": lambda: scaled_dot_product_attention(Q, K, V, mask),
        "chunked": lambda: chunked_attention(Q, K, V, block_size=BLOCK, causal=True),
        "torch SDPA": lambda: F.scaled_dot_product_attention(Q, K, V, is_causal=True),
    }
    outputs = {}

    def run(name):
        start = time.perf_counter()
        outputs[name], peak = device_peak_memory(methods[name], device)
        return peak, time.perf_counter() - start

    with torch.no_grad():
        results = interleaved({name: partial(run, name) for name in methods}, reps)
    torch.testing.assert_close(outputs["chunked"], outputs["naive"], atol=1e-4, rtol=1e-4)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    args = parser.parse_args()
    results = measure(device=args.device)
    print(f"causal attention, batch {BATCH}, {HEADS} heads, L {L}, d_head {D_HEAD}, forward, "
          f"{args.device}; peak tensor memory (MiB) during the call")
    for name, runs in results.items():
        print(f"  {name:11s} {max(p for p, _ in runs) / 2**20:8.1f} MiB")
    ratio = max(p for p, _ in results["chunked"]) / max(p for p, _ in results["naive"])
    print(f"  chunked / naive = {ratio:.4f} (goal ≤ {GOAL:.3f})")


if __name__ == "__main__":
    main()
