"""Forward + backward time of minformer's MultiHeadAttention divided by nn.MultiheadAttention's.

Same weights, batch first, self-attention, need_weights=False for both, training mode with
dropout 0; batch 32, d_model 256, 8 heads, L ∈ {64, 256, 1024}. The two are timed in interleaved
repetitions (alternating which goes first) and the medians compared; goal: ratio ≤ 0.90.

    python benchmarks/attention.py [--device cpu|cuda]   (the machine is shared: run it alone)
"""

import argparse
import statistics
import time

import torch
from interleave import DEVICES, device_from, interleaved, synchronize
from torch import nn

from minformer.multihead import MultiHeadAttention

BATCH, D_MODEL, HEADS = 32, 256, 8
REPS = {64: 40, 256: 12, 1024: 4}  # fewer at L = 1024, where one step takes about a second
GOAL = 0.90


def step(module, x, grad, ours: bool) -> float:
    """Seconds for one forward + backward pass (parameter and input gradients)."""
    module.zero_grad(set_to_none=True)
    x.grad = None
    synchronize(x.device)
    start = time.perf_counter()
    y = module(x) if ours else module(x, x, x, need_weights=False)[0]
    y.backward(grad)
    synchronize(x.device)
    return time.perf_counter() - start


def measure(L: int, reps: int, device: str | None = "cpu",
            batch: int = BATCH) -> tuple[list[float], list[float]]:
    """Seconds per fwd+bwd step of ours and of nn.MultiheadAttention, ``reps`` interleaved, on
    ``device`` ("cpu" or "cuda")."""
    device = device_from(device)
    torch.manual_seed(0)
    theirs = nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True).to(device)
    ours = MultiHeadAttention(D_MODEL, HEADS).to(device)
    ours.load_state_dict(theirs.state_dict())
    x = torch.randn(batch, L, D_MODEL, device=device, requires_grad=True)
    grad = torch.randn(batch, L, D_MODEL, device=device)
    with torch.no_grad():  # same function, so the timings compare like with like
        tol = 1e-4 if device.type == "cuda" else 1e-5
        torch.testing.assert_close(ours(x), theirs(x, x, x, need_weights=False)[0],
                                   atol=tol, rtol=tol)
    for _ in range(2):  # warm-up: allocator, kernels
        step(ours, x, grad, True)
        step(theirs, x, grad, False)
    seconds = interleaved({"ours": lambda: step(ours, x, grad, True),
                           "theirs": lambda: step(theirs, x, grad, False)}, reps)
    return seconds["ours"], seconds["theirs"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=DEVICES, default="cpu")
    args = parser.parse_args()
    print(f"MultiHeadAttention fwd+bwd, batch {BATCH}, d_model {D_MODEL}, {HEADS} heads, "
          f"{args.device}, {torch.get_num_threads()} threads; ratio = minformer / "
          f"nn.MultiheadAttention (goal ≤ {GOAL:.2f})")
    for L, reps in REPS.items():
        t_ours, t_theirs = measure(L, reps, args.device)
        mine, torchs = statistics.median(t_ours), statistics.median(t_theirs)
        ratio = mine / torchs
        print(f"L={L:5d}: minformer {mine * 1e3:8.1f} ms, torch {torchs * 1e3:8.1f} ms, "
              f"ratio {ratio:.3f} ({reps} reps, median){'' if ratio <= GOAL else '  above goal'}")


if __name__ == "__main__":
    main()
