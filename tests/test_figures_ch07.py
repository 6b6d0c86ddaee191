"""Chapter 7's interactive figure (_static/figures/ch07.js, "ch07-norms", issue 46) computes what
the package computes. One Node process (tests/js/figures_ch07.mjs) runs the figure's code; each
test compares its answers with torch autograd through minformer.blocks.Encoder, given exactly
the weights, input and target the page drew (float32 numbers, returned by the driver).

- forward: the stack's output, the loss and the stream's size rms(x_ℓ) after every layer;
- backward: ∂loss/∂x_0 and every gradient of every layer's parameters, element by element, and
  the norms the page plots, ‖∂loss/∂θ_ℓ‖ and ‖∂loss/∂x_ℓ‖;
- in both placements, at every width and weight scale of the page's sliders, depths 1 to 24 and
  a few seeds: within 1e-6 (of the value's size where it is above 1) of float64 autograd, and
  of float32 autograd (the package's own precision) at every setting of the page.
"""

import base64
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from minformer.blocks import Encoder

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "js" / "figures_ch07.mjs"
NODE = shutil.which("node")
TOL = 1e-6
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


def unpack(text: str, dtype) -> np.ndarray:
    """An array the driver sent as base64 of its little-endian bytes."""
    return np.frombuffer(base64.b64decode(text), dtype=np.dtype(dtype).newbyteorder("<"))


def biggest(a, b) -> float:
    """The largest |a - b|, each difference divided by max(1, |b|)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0))


def reference(page: dict, L: int, d: int, heads: int, n: int, norm_first: bool, dtype):
    """The page's stack in minformer: Encoder(L, d, heads, 4d, dropout 0, norm_first) with the
    page's weights, one forward and one backward pass of mean((output - target)²)."""
    stack = Encoder(L, d, heads, 4 * d, dropout=0.0, norm_first=norm_first).to(dtype)
    state = stack.state_dict()
    for i, layer in enumerate(page["layers"]):
        for name, values in layer.items():
            key = f"layers.{i}.{name}"
            state[key] = torch.tensor(unpack(values, np.float32), dtype=dtype).reshape(state[key].shape)
    assert len(page["layers"]) == L and set(state) == {f"layers.{i}.{k}" for i in range(L)
                                                       for k in page["layers"][0]} | (
        {"norm.weight", "norm.bias"} if norm_first else set())
    stack.load_state_dict(state)  # a pre-norm stack's final norm stays at γ = 1, β = 0
    x0 = torch.tensor(unpack(page["x0"], np.float32), dtype=dtype).reshape(1, n, d).requires_grad_()
    target = torch.tensor(unpack(page["target"], np.float32), dtype=dtype).reshape(1, n, d)
    xs, x = [x0], x0
    for layer in stack.layers:
        x = layer(x)
        x.retain_grad()
        xs.append(x)
    y = x if stack.norm is None else stack.norm(x)
    loss = (y - target).pow(2).mean()
    loss.backward()
    return {
        "loss": loss.item(), "y": y.detach().flatten().tolist(),
        "rms": [(v.detach().norm() / (n * d) ** 0.5).item() for v in xs],
        "streamGrad": [v.grad.norm().item() for v in xs],
        "paramGrad": [torch.cat([p.grad.flatten() for p in layer.parameters()]).norm().item()
                      for layer in stack.layers],
        "dx0": x0.grad.flatten().tolist(),
        "grads": [{k: p.grad.flatten().tolist() for k, p in layer.named_parameters()}
                  for layer in stack.layers],
    }


def compare(page: dict, ref: dict, full: bool) -> float:
    worst = max(biggest([page["loss"]], [ref["loss"]]), biggest(page["rms"], ref["rms"]),
                biggest(page["streamGrad"], ref["streamGrad"]), biggest(page["paramGrad"], ref["paramGrad"]))
    if full:
        worst = max(worst, biggest(unpack(page["y"], np.float64), ref["y"]),
                    biggest(unpack(page["dx0"], np.float64), ref["dx0"]))
        for mine, theirs in zip(page["grads"], ref["grads"], strict=True):
            assert set(mine) == set(theirs)
            worst = max(worst, max(biggest(unpack(mine[k], np.float64), theirs[k]) for k in theirs))
    return worst


def test_the_page_starts_where_the_chapter_says(answers):
    data, _ = answers
    assert data["start"] == {"placement": "both", "L": 24, "d": 16, "gain": 1, "seed": 0}
    assert data["widths"] == [8, 12, 16] and data["gains"] == [0.25, 0.5, 1, 1.5, 2, 3, 4]
    assert (data["maxL"], data["n"], data["heads"]) == (24, 6, 4)


# (L, d, g, seed): every element of the forward and backward pass is compared in float64 for the
# first list, in float32 too for the second (the page's start among them); the numbers plotted
# (loss, rms, gradient norms) in float32 for the third. At g >= 2 float32 autograd itself is off
# the exact values by more than 1e-6 in a deep stack (up to 3e-5 at g = 4, L = 24: its rounding,
# amplified), so there the page is held to float64 autograd.
EVERY_64 = [(24, 16, 4, 0), (24, 8, 1, 0), (3, 12, 0.25, 7), (1, 16, 2, 5)]
EVERY_32 = [(12, 16, 1, 0), (6, 12, 1, 3), (2, 8, 0.5, 1)]
PLOTTED_32 = [(24, 16, 1, 0), (24, 12, 0.25, 2), (16, 8, 1.5, 4)]


@pytest.fixture(scope="module")
def answers():
    cases = EVERY_64 + EVERY_32 + PLOTTED_32
    tasks = [{"op": "ch07", "placement": "both", "L": L, "d": d, "gain": g, "seed": s, "weights": True,
              "keep": (L, d, g, s) not in PLOTTED_32} for L, d, g, s in cases]
    tasks += [{"op": "ch07", "L": 24, "d": 16, "gain": g, "seed": 0} for g in (1, 4)] + [{"op": "ch07data"}]
    *got, start, strong, data = run(tasks)  # one Node process for the module
    return data, dict(zip(cases, got)) | {"start": start, "strong": strong}


def check(answers, cases, dtype, full):
    data, got = answers
    worst = 0.0
    for L, d, g, s in cases:
        page = got[L, d, g, s]
        for norm_first, kind in ((False, "post"), (True, "pre")):
            ref = reference(page, L, d, data["heads"], data["n"], norm_first, dtype)
            worst = max(worst, compare(page[kind], ref, full))
    return worst


def test_every_value_and_gradient_is_minformers_float64(answers):
    worst = check(answers, EVERY_64 + EVERY_32, torch.float64, True)
    print(f"float64: largest difference {worst:.2g}")
    assert worst <= TOL, worst


def test_every_value_and_gradient_is_minformers_float32(answers):
    worst = check(answers, EVERY_32, torch.float32, True)
    print(f"float32, every element: largest difference {worst:.2g}")
    assert worst <= TOL, worst


def test_the_plotted_numbers_are_minformers_float32(answers):
    worst = check(answers, PLOTTED_32, torch.float32, False)
    print(f"float32, the plotted numbers: largest difference {worst:.2g}")
    assert worst <= TOL, worst


def test_the_chapters_numbers(answers):
    """The numbers chapter 7's prose quotes from the figure (its start, and g = 4)."""
    start, strong = answers[1]["start"], answers[1]["strong"]
    post, pre = start["post"], start["pre"]
    assert [f"{post['rms'][-1]:.2f}", f"{pre['rms'][-1]:.2f}"] == ["1.00", "2.64"]
    assert [f"{v:.3g}" for v in (post["paramGrad"][0], post["paramGrad"][-1])] == ["0.412", "1.4"]
    assert [f"{v:.3g}" for v in (pre["paramGrad"][0], pre["paramGrad"][-1])] == ["0.953", "0.363"]
    assert f"{strong['post']['paramGrad'][0]:.3g}" == "0.167" and round(strong["pre"]["rms"][-1]) == 47
    assert round(strong["post"]["paramGrad"][-1] / strong["post"]["paramGrad"][0]) == 8


def test_the_figure_stays_small():
    """No data shipped: the weights are drawn in the page. The script well under 100 KB."""
    assert (REPO / "_static" / "figures" / "ch07.js").stat().st_size < 40_000
