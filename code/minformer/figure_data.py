"""The data that interactive figures carry inside their scripts, exported from the package.

A figure is one script on top of core.js, inline in a page or a notebook's output (see
:mod:`minformer.figures`): it cannot fetch a file (Colab runs each output in a sandboxed frame, a
copy of the book opened from file:// has no server). So the data a figure needs is written into
its script, between two marker lines, by a command::

    python -m minformer.figure_data            # rewrite the blocks from the package
    python -m minformer.figure_data --check    # exit 1 if a block differs from a fresh export

Each block starts with the sha256 of its data line, and :func:`check` (run by
tests/test_figures_ch02_ch10.py) compares every block with a fresh export byte for byte, so a
changed source without a new export fails a test.

- ``ch02.js``: chapter 2's 40 noisy samples of f(x) = sin 2x + x/2 (numpy's generator, seed 0,
  drawn exactly as the chapter draws them), as the shortest decimals that give the same float64.
- ``ch10.js``: the merges of the chapter's 8,000-token BPE tokenizer, the one shipped for
  chapter 13's runs (data/checkpoints/race/tokenizer.json, checked against data/manifest.json),
  as pairs of token ids (left, right), little-endian uint16, in base64: 4 bytes a merge.
- ``ch11.js``: chapter 11's skip-gram input vectors (data/checkpoints/word2vec/skipgram.pt) of its
  3,000 most frequent words, int8 with one float32 scale per vector (:func:`ch11_quantized`).
- ``ch06.js``: chapter 6's seed-0 neighbour models, one head and two heads (the embeddings, the
  attention and the read-outs), float32 little-endian in URL-safe base64, as ``python -m
  minformer.neighbours`` stored them (data/checkpoints/ch06-neighbours/models.json).
- ``ch09.js``: chapter 9's GRU language model (data/checkpoints/gru-lm, the shipped run): the
  GRU's weight matrices and the embeddings of its :data:`CH09_WORDS` most frequent words as int8
  with one float32 scale a row, its biases as shipped (float16), and those words
  (:func:`ch09_payload`), in base64url.
"""

from __future__ import annotations

import argparse
import base64
import functools
import hashlib
import json
import struct
import sys
from pathlib import Path

import numpy as np

FIGURES = Path(__file__).resolve().parents[2] / "_static" / "figures"
BEGIN = "// BEGIN EXPORT: python -m minformer.figure_data writes the next two lines"
END = "// END EXPORT"
T_K = 40  # chapter 2's number of samples


def ch02_samples(seed: int = 0, t_K: int = T_K) -> tuple[np.ndarray, np.ndarray]:
    """Chapter 2's data: x sorted uniform on [0, 5], y = sin 2x + x/2 + N(0, 0.3²) noise."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 5, t_K))
    y = np.sin(2 * x) + 0.5 * x + rng.normal(0, 0.3, t_K)
    return x, y


def ch10_tokenizer():
    """The shipped 8,000-token tokenizer (chapter 10's, trained on both sides of the train pairs)."""
    from .race import load_race_tokenizer

    return load_race_tokenizer()


CH11_WORDS = 3000  # chapter 11's figure: the 3,000 most frequent words of the skip-gram run


@functools.lru_cache(maxsize=1)
def ch11_quantized(words: int = CH11_WORDS):
    """Chapter 11's skip-gram input vectors (the shipped run, seed 0) of its ``words`` most
    frequent words, quantized to int8 with one scale per vector: q = round(v / s), s = max|v| / 127.
    Returns (the words, q (words, dim) int8, s (words,) float32, v (words, dim) float32): the
    dequantized vectors are q * s in float32 (a scale changes no cosine: it only sets a length).

    The vocabulary is counted over the whole training text at once, which gives the counts of
    build_vocab(chapter_paragraphs(), min_count=5) in less time (no word spans a line);
    load_chapter_run checks it against the sha256 of the run's own vocabulary."""
    from collections import Counter

    import torch

    from .data import _WORD, load_wikitext
    from .word2vec import Vocab, load_chapter_run

    counts = Counter(_WORD.findall(load_wikitext("train").lower()))
    kept = sorted((w for w, c in counts.items() if c >= 5), key=lambda w: (-counts[w], w))
    vocab = Vocab(kept, [counts[w] for w in kept], min_count=5)
    v = load_chapter_run("skipgram", vocab).model.vectors()[:words].float()
    s = v.abs().amax(dim=1) / 127
    q = torch.round(v / s[:, None]).to(torch.int8)
    return vocab.itos[:words], q, s, v


@functools.lru_cache(maxsize=1)
def ch11_payload() -> dict:
    """The words joined by spaces, q as bytes (row after row), s as little-endian float32, both in
    URL-safe base64 ("-" and "_" for "+" and "/": no run of it reads like a file path to the
    tools that look for machine paths in a notebook's outputs). Built once a process (counting
    the vocabulary takes seconds)."""
    words, q, s, _ = ch11_quantized()
    assert all(w and " " not in w for w in words)
    return {"model": "skipgram", "dim": int(q.shape[1]), "words": " ".join(words),
            "q": base64.urlsafe_b64encode(q.numpy().tobytes()).decode("ascii"),
            "scale": base64.urlsafe_b64encode(s.numpy().astype("<f4").tobytes()).decode("ascii")}


def ch11_in_script(folder: Path = FIGURES):
    """(words, q, s) as ch11.js carries them, decoded from its export block (chapter 11's hidden
    cell compares them with the page's own skip-gram run, without counting the vocabulary)."""
    _, old, _ = _split((folder / "ch11.js").read_text(encoding="utf-8"), "ch11.js")
    line = old.split("\n")[1].strip()
    data = json.loads(line[len("var DATA = "):-1])
    words = data["words"].split(" ")
    q = np.frombuffer(base64.urlsafe_b64decode(data["q"]), dtype=np.int8).reshape(len(words), data["dim"])
    s = np.frombuffer(base64.urlsafe_b64decode(data["scale"]), dtype="<f4")
    return words, q, s


CH09_WORDS = 600  # chapter 9's figure: the embeddings of the 600 most frequent words
CH09_INT8 = ("embed.weight", "gru.weight_ih_l0", "gru.weight_hh_l0")  # the rest stays float16


def ch09_quantize(w):
    """A matrix (rows, d) as int8 with one float32 scale a row: q = round(w / s), s = max|w| / 127.
    Returns (q int8, s float32); the figure's weights are q * s, in float32 (ch09_dequantized)."""
    import torch

    w = w.float()
    s = w.abs().amax(dim=1) / 127
    s = torch.where(s > 0, s, torch.ones_like(s))  # an all-zero row: q = 0, any scale
    return torch.round(w / s[:, None]).to(torch.int8), s


def ch09_dequantized(w):
    """What the figure computes with in place of the matrix w: q * s in float32."""
    q, s = ch09_quantize(w)
    return q.float() * s[:, None]


def _b64(raw: bytes) -> str:
    # base64url: no "/" (a run of base64 with slashes reads like a file path to the book's checks)
    return base64.urlsafe_b64encode(raw).decode("ascii")


def ch09_payload(words: int = CH09_WORDS) -> dict:
    """Chapter 9's GRU language model as its figure needs it: the ``words`` most frequent words
    (the model's ids 0 .. words-1, numbered by minformer.gru_lm.frequency_ids), the id of <unk>,
    the embedding rows of those words and the GRU's weight_ih (3d, d) and weight_hh (3d, d) as
    int8 with one float32 scale a row (:func:`ch09_quantize`), and its bias_ih and bias_hh (3d,)
    as shipped (float16). All little-endian, in base64url."""
    from .data import read_shipped_state
    from .gru_lm import FOLDER, frequency_ids
    from .pretrain import word_stream

    state = read_shipped_state(FOLDER, "model.pt")
    itos = list(frequency_ids(word_stream("train")[0]))[:words]
    out = {"d": int(state["gru.weight_hh_l0"].shape[1]), "words": itos, "unk": itos.index("<unk>")}
    for key, name in (("emb", "embed.weight"), ("wih", "gru.weight_ih_l0"), ("whh", "gru.weight_hh_l0")):
        q, s = ch09_quantize(state[name][:words] if key == "emb" else state[name])
        out[key] = {"q": _b64(q.numpy().tobytes()), "s": _b64(s.numpy().astype("<f4").tobytes())}
    for key, name in (("bih", "gru.bias_ih_l0"), ("bhh", "gru.bias_hh_l0")):
        out[key] = _b64(state[name].numpy().astype("<f2").tobytes())
    return out


def _payload(name: str) -> dict:
    if name == "ch02.js":
        x, y = ch02_samples()
        return {"x": [float(v) for v in x], "y": [float(v) for v in y]}
    if name == "ch10.js":
        tok = ch10_tokenizer()
        ids = [i for a, b, _ in tok._merges for i in (a, b)]
        assert max(ids) < 1 << 16
        return {"specials": list(tok.special_tokens), "vocabSize": tok.vocab_size,
                "merges": base64.b64encode(struct.pack(f"<{len(ids)}H", *ids)).decode("ascii")}
    if name == "ch11.js":
        return ch11_payload()
    if name == "ch06.js":  # chapter 6's seed-0 models, stored by python -m minformer.neighbours
        from .neighbours import SENTENCE, stored

        rec = stored()  # base64 with - and _ for + and / (no run of it reads like a file path)
        models = {h: {name: [shape, b64.replace("+", "-").replace("/", "_")]
                      for name, (shape, b64) in params.items()} for h, params in rec["models"].items()}
        return {"words": rec["words"], "T": rec["T"],
                "sentence": [rec["words"].index(w) for w in SENTENCE], "models": models}
    if name == "ch09.js":
        return ch09_payload()
    raise ValueError(f"no exported data for {name!r}; known: {', '.join(SCRIPTS)}")


SCRIPTS = ("ch02.js", "ch10.js", "ch11.js", "ch06.js", "ch09.js")


def block(name: str) -> str:
    """The two generated lines of a script: the data's sha256, then `var DATA = {...};`."""
    line = "  var DATA = " + json.dumps(_payload(name), separators=(",", ":")) + ";"
    digest = hashlib.sha256(line.encode("utf-8")).hexdigest()
    return f"  // sha256 of the next line: {digest}\n{line}\n"


def _split(text: str, name: str) -> tuple[str, str, str]:
    start = text.find(BEGIN)
    stop = text.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"{name}: no '{BEGIN}' ... '{END}' block")
    head_end = text.index("\n", start) + 1
    return text[:head_end], text[head_end:text.rindex("\n", 0, stop) + 1], text[text.rindex("\n", 0, stop) + 1:]


def export(folder: Path = FIGURES) -> list[str]:
    """Rewrite every block; return the names of the scripts that changed."""
    changed = []
    for name in SCRIPTS:
        path = folder / name
        text = path.read_text(encoding="utf-8")
        head, old, tail = _split(text, name)
        new = block(name)
        if old != new:
            path.write_text(head + new + tail, encoding="utf-8")
            changed.append(name)
    return changed


def check(folder: Path = FIGURES) -> dict[str, str]:
    """{script: sha256} if every block equals a fresh export and its own checksum; else raises."""
    sums = {}
    for name in SCRIPTS:
        _, old, _ = _split((folder / name).read_text(encoding="utf-8"), name)
        first, _, line = old.partition("\n")
        digest = hashlib.sha256(line.rstrip("\n").encode("utf-8")).hexdigest()
        if not first.endswith(digest):
            raise ValueError(f"{name}: the data line does not match its sha256 (edited by hand?)")
        if old != block(name):
            raise ValueError(f"{name}: the exported data is out of date: run "
                             "python -m minformer.figure_data")
        sums[name] = digest
    return sums


def ch09_in_script(folder: Path = FIGURES) -> tuple[list[str], dict]:
    """(words, {name: float32 tensor}) as ch09.js computes with them, decoded from its export
    block (chapter 9's hidden cell compares them with the page's model, without counting the
    words): the keys are the shipped state's, embed.weight holding the carried words' rows only;
    the matrices are q * s (float32), the biases the shipped float16 values."""
    import torch

    _, old, _ = _split((folder / "ch09.js").read_text(encoding="utf-8"), "ch09.js")
    data = json.loads(old.split("\n")[1].strip()[len("var DATA = "):-1])
    d = data["d"]

    def matrix(key, rows):
        q = np.frombuffer(base64.urlsafe_b64decode(data[key]["q"]), dtype=np.int8).reshape(rows, d)
        s = np.frombuffer(base64.urlsafe_b64decode(data[key]["s"]), dtype="<f4")
        return torch.from_numpy(q.astype(np.float32)) * torch.from_numpy(s.astype(np.float32))[:, None]

    def bias(key):
        return torch.from_numpy(np.frombuffer(base64.urlsafe_b64decode(data[key]), dtype="<f2").astype(np.float32))

    return data["words"], {"embed.weight": matrix("emb", len(data["words"])),
                           "gru.weight_ih_l0": matrix("wih", 3 * d), "gru.weight_hh_l0": matrix("whh", 3 * d),
                           "gru.bias_ih_l0": bias("bih"), "gru.bias_hh_l0": bias("bhh")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    args = parser.parse_args(argv)
    if args.check:
        try:
            for name, digest in check().items():
                print(f"{digest}  {name}")
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        return 0
    changed = export()
    for name, digest in check().items():
        print(f"{digest}  {name}{'  (rewritten)' if name in changed else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
