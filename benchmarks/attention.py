"""Forward + backward time of minformer's MultiHeadAttention divided by nn.MultiheadAttention's.

Same weights, batch first, self-attention, need_weights=False for both, training mode with
dropout 0; batch 32, d_model 256, 8 heads, L ∈ {64, 256, 1024}. The two are timed in interleaved
repetitions (alternating which goes first) and the medians compared; goal: ratio ≤ 0.90.

    python benchmarks/attention.py          (the machine is shared: run it alone)
"""

import statistics
import time

import torch
from interleave import interleaved
from torch import nn

from minformer.multihead import MultiHeadAttention

BATCH, D_MODEL, HEADS = 32, 256, 8
REPS = {64: 40, 256: 12, 1024: 4}  # fewer at L = 1024, where one step takes about a second
GOAL = 0.90


def step(module, x, grad, ours: bool) -> float:
    """Seconds for one forward + backward pass (parameter and input gradients)."""
    module.zero_grad(set_to_none=True)
    x.grad = None
    start = time.perf_counter()
    y = module(x) if ours else module(x, x, x, need_weights=False)[0]
    y.backward(grad)
    return time.perf_counter() - start


def measure(L: int, reps: int) -> tuple[list[float], list[float]]:
    """Seconds per fwd+bwd step of ours and of nn.MultiheadAttention, ``reps`` interleaved."""
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True)
    ours = MultiHeadAttention(D_MODEL, HEADS)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(BATCH, L, D_MODEL, requires_grad=True)
    grad = torch.randn(BATCH, L, D_MODEL)
    with torch.no_grad():  # same function, so the timings compare like with like
        assert torch.allclose(ours(x), theirs(x, x, x, need_weights=False)[0], atol=1e-5)
    for _ in range(2):  # warm-up: allocator, kernels
        step(ours, x, grad, True)
        step(theirs, x, grad, False)
    seconds = interleaved({"ours": lambda: step(ours, x, grad, True),
                           "theirs": lambda: step(theirs, x, grad, False)}, reps)
    return seconds["ours"], seconds["theirs"]


def main():
    print(f"MultiHeadAttention fwd+bwd, batch {BATCH}, d_model {D_MODEL}, {HEADS} heads, "
          f"{torch.get_num_threads()} threads; ratio = minformer / nn.MultiheadAttention "
          f"(goal ≤ {GOAL:.2f})")
    for L, reps in REPS.items():
        t_ours, t_theirs = measure(L, reps)
        mine, torchs = statistics.median(t_ours), statistics.median(t_theirs)
        ratio = mine / torchs
        print(f"L={L:5d}: minformer {mine * 1e3:8.1f} ms, torch {torchs * 1e3:8.1f} ms, "
              f"ratio {ratio:.3f} ({reps} reps, median){'' if ratio <= GOAL else '  above goal'}")


if __name__ == "__main__":
    main()
