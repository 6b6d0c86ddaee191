"""Chapter 6's neighbour task ("What the heads learn"), for the chapter's interactive figure.

The chapter trains, in its notebook, the smallest model that shows what heads learn: words and
positions embedded, one :class:`~minformer.multihead.MultiHeadAttention`, and two read-outs that
predict the previous and the next word at every position. This module holds the same code (the
chapter's cells, unchanged but for the names) so that the seed-0 models of the chapter, one head
and two heads, can be stored for the figure ``ch06-heads`` (``_static/figures/ch06.js``), which
runs them in the page::

    python -m minformer.neighbours     # retrain both seed-0 models (seconds) into
                                       # data/checkpoints/ch06-neighbours/models.json

The weights are written, float32, in the pinned numeric environment of the book's stored runs
(``make execute``'s); ``python -m minformer.figure_data`` then exports them into the figure's
script, and a hidden cell of chapter 6 compares the script's models with the chapter's own.
"""

from __future__ import annotations

import base64
import json
import platform
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .multihead import MultiHeadAttention
from .utils import seed_everything

WORDS = ("the a big small red old dog cat bird tree mat sat ran "
         "slept under near").split()
V, T = len(WORDS), 8
SENTENCE = "the big dog ran under the old tree".split()  # the chapter's heatmaps'
IGNORE = -100  # F.cross_entropy's default ignore_index
FOLDER, FILE = "checkpoints/ch06-neighbours", "models.json"  # under data/, in its manifest
REPRODUCE = "python -m minformer.neighbours"
# what the figure runs: the embeddings, the attention and the two read-outs
PARAMETERS = ("embed.weight", "position.weight", "attn.in_proj_weight", "attn.in_proj_bias",
              "attn.out_proj.weight", "attn.out_proj.bias", "read_prev.weight", "read_prev.bias",
              "read_next.weight", "read_next.bias")


def make_batch(size, generator):
    """Random sentences x (size, T), previous- and next-word targets."""
    x = torch.randint(0, V, (size, T), generator=generator)
    prev = torch.full((size, T), IGNORE)
    prev[:, 1:] = x[:, :-1]                 # position i: the word at i - 1
    nxt = torch.full((size, T), IGNORE)
    nxt[:, :-1] = x[:, 1:]                  # position i: the word at i + 1
    return x, prev, nxt


class NeighbourModel(nn.Module):
    """Embed words and positions, one multi-head attention, two read-outs."""

    def __init__(self, d_model, h):
        super().__init__()
        self.embed = nn.Embedding(V, d_model)
        self.position = nn.Embedding(T, d_model)   # one vector per position
        self.attn = MultiHeadAttention(d_model, h)
        self.read_prev = nn.Linear(d_model, V)
        self.read_next = nn.Linear(d_model, V)

    def forward(self, x):
        Z = self.embed(x) + self.position.weight    # (batch, T, d_model)
        Y, A = self.attn(Z, need_weights=True)      # A: (batch, h, T, T)
        return self.read_prev(Y), self.read_next(Y), A


def loss_and_accuracy(model, x, prev, nxt):
    logits_prev, logits_next, _ = model(x)
    loss = (F.cross_entropy(logits_prev.flatten(0, 1), prev.flatten())
            + F.cross_entropy(logits_next.flatten(0, 1), nxt.flatten()))
    acc = [(logits.argmax(-1) == y)[y != IGNORE].float().mean().item()
           for logits, y in ((logits_prev, prev), (logits_next, nxt))]
    return loss, acc


def train_neighbour_model(h, d_model=32, steps=400, lr=3e-3, seed=0, device="cpu"):
    """Train one model as the chapter does; return it and its test accuracy (previous, next)."""
    seed_everything(seed)
    model = NeighbourModel(d_model, h).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed + 1)
    for _ in range(steps):
        x, prev, nxt = (z.to(device) for z in make_batch(64, gen))
        loss, _ = loss_and_accuracy(model, x, prev, nxt)
        opt.zero_grad()
        loss.backward()
        opt.step()
    test = [z.to(device) for z in make_batch(2000, torch.Generator().manual_seed(123))]
    with torch.no_grad():
        _, accuracy = loss_and_accuracy(model, *test)
    return model.cpu(), tuple(accuracy)


def encode(model: NeighbourModel) -> dict:
    """The figure's parameters of one model: name -> [shape, float32 little-endian in base64]."""
    state = model.state_dict()
    return {name: [list(state[name].shape),
                   base64.b64encode(state[name].detach().float().numpy().astype("<f4").tobytes())
                   .decode("ascii")] for name in PARAMETERS}


def decode(params: dict, h: int) -> NeighbourModel:
    """A model from :func:`encode`'s dict (d_model read from the embedding; base64 either
    standard or URL-safe, as the figure's script holds it)."""
    d_model = params["embed.weight"][0][1]
    model = NeighbourModel(d_model, h)
    state = {name: torch.from_numpy(np.frombuffer(base64.urlsafe_b64decode(b64.replace("+", "-")
                                                                         .replace("/", "_")),
                                                  dtype="<f4").copy()
                                    .reshape(shape)) for name, (shape, b64) in params.items()}
    model.load_state_dict(state)
    return model.eval()


def figure_models() -> tuple[NeighbourModel, NeighbourModel]:
    """The two models the figure ``ch06-heads`` carries (one head, two heads), read from its
    script, _static/figures/ch06.js."""
    from .figure_data import FIGURES

    text = (FIGURES / "ch06.js").read_text(encoding="utf-8")
    line = next(x for x in text.splitlines() if x.startswith("  var DATA = "))
    models = json.loads(line[len("  var DATA = "):-1])["models"]
    return decode(models["1"], 1), decode(models["2"], 2)


def train_and_store(folder=None) -> dict:
    """Train the chapter's seed-0 models (one head, two heads) and write them to
    ``folder``/models.json; by default data/checkpoints/ch06-neighbours, then listed in the data
    manifest (:func:`minformer.data.record_shipped`)."""
    from .data import data_dir, record_shipped

    record = {"about": "chapter 6's seed-0 neighbour models (one head, two heads), float32; "
                       "written by `python -m minformer.neighbours`",
              "words": WORDS, "T": T, "machine": platform.processor() or platform.machine(),
              "torch": torch.__version__, "models": {}, "accuracy": {}}
    for h in (1, 2):
        model, accuracy = train_neighbour_model(h)
        record["models"][str(h)] = encode(model)
        record["accuracy"][str(h)] = [round(a, 4) for a in accuracy]
    out = Path(folder) if folder is not None else data_dir() / FOLDER
    out.mkdir(parents=True, exist_ok=True)
    (out / FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if folder is None:
        record_shipped(FOLDER, REPRODUCE)
    return record


def stored(folder=None) -> dict:
    """The stored record (:func:`train_and_store`): the shipped one, checked against the data
    manifest, or the one written into ``folder``."""
    from .data import read_shipped_json

    return read_shipped_json(FOLDER, FILE, folder, retrain="minformer.neighbours.train_and_store")


def main() -> int:
    record = train_and_store()
    for h, acc in record["accuracy"].items():
        print(f"h = {h}: test accuracy previous {acc[0]:.3f}, next {acc[1]:.3f}")
    print(f"written: data/{FOLDER}/{FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
