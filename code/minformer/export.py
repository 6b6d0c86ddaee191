"""The trained translator exported for the browser: the weights in one binary file, everything
else in one JSON file, read by the plain-JavaScript engine ``_static/translator/translator.js``.

- :func:`export_for_browser` writes ``model.json``, ``weights.bin`` and ``SHA256SUMS`` into the
  book's static files (``_static/translator/`` by default); ``make export-translator`` runs it on
  the shipped checkpoint.
- :func:`browser_files` is the same export in memory (``{file name: bytes}``), and
  :func:`check_export` compares an export on disk with a fresh one from the checkpoint, byte for
  byte, so a test fails when the checkpoint changes and the export was not regenerated.
- :func:`quantize_int8` / :func:`dequantize_int8` store a matrix as int8 with one float32 scale
  per row; :func:`quantized_translator` is a translator whose matrices went through that round
  trip (to measure what int8 costs in BLEU before shipping it).

The two files::

    weights.bin   the tensors one after another, little-endian, each starting at a multiple of
                  16 bytes: float16, or (dtype "int8") int8 rows followed by their float32 scales
    model.json    {"format", "version", "dtype",
                   "weights":   {"file", "bytes", "sha256"}         the binary it describes
                   "config":    the model's sizes and switches, defaults resolved, and max_source_tokens
                   "tokenizer": {"special_tokens", "merges" as [left id, right id] in order,
                                 "vocab_size", "pattern"}           what BPETokenizer is built from
                   "tensors":   [{"name", "shape", "dtype", "offset", "bytes"(, "scale_offset")}]
                   "aliases":   {name: name it shares its storage with}  (tied embeddings)
                   "checkpoint": {file: sha256} of the checkpoint exported (null for a Translator
                                 given in memory)}

float16 is the checkpoint's own precision (``Translator.save`` stores fp16), so the float16 export
holds exactly the checkpoint's numbers. int8 stores each row w of a matrix as round(w / s) with
s = max|w| / 127 (biases and LayerNorm vectors stay float16): half the bytes, slightly other
numbers. Both are deterministic: the same checkpoint always gives the same bytes.

The book ships float16. Measured on the shipped checkpoint (test split, 1,659 sentences): float16
downloads 14.73 MB (budget 15), int8 7.53 MB (budget 8); int8 moves BLEU by +0.10 greedy
(53.51 → 53.61) and -0.10 with beam 4 (55.08 → 54.98), within the 0.5 allowed, but changes 1.3 %
of the greedy and 2.0 % of the beam-4 translations. float16 keeps the page's translations those
of the chapter and of ``minformer-translate``, token for token; ``make export-translator
DTYPE=int8`` switches if the download matters more.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

import torch

from .tokenizer import PATTERN, BPETokenizer
from .transformer import Transformer
from .translator import CHECKPOINT, FILES, CheckpointError, Translator

FORMAT = "minformer-browser-translator"
VERSION = 1
DTYPES = ("float16", "int8")
MODEL_JSON, WEIGHTS_BIN, SUMS = "model.json", "weights.bin", "SHA256SUMS"
STATIC_DIR = Path(__file__).resolve().parents[2] / "_static" / "translator"  # the book's copy
ALIGN = 16  # every tensor starts at a multiple of this many bytes
REGENERATE = "make export-translator"


class ExportError(ValueError):
    """An export on disk is missing a file or differs from the checkpoint it should come from."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- int8


def quantize_int8(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-row int8: weight (rows, cols) → q (rows, cols) int8 in [-127, 127] and
    scale (rows,) float32, with weight ≈ q · scale[:, None] and scale = max|row| / 127 (1 for a
    row of zeros)."""
    if not isinstance(weight, torch.Tensor) or not weight.is_floating_point():
        what = f"dtype {weight.dtype}" if isinstance(weight, torch.Tensor) else type(weight).__name__
        raise TypeError(f"quantize_int8 takes a floating-point torch tensor; got {what}")
    if weight.ndim != 2:
        raise ValueError(f"quantize_int8 takes a (rows, cols) matrix; got shape {tuple(weight.shape)}")
    w = weight.detach().float().cpu()  # (rows, cols)
    if not bool(torch.isfinite(w).all()):
        raise ValueError("quantize_int8: the matrix holds NaN or infinity")
    scale = w.abs().amax(dim=1) / 127.0  # (rows,)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8)  # (rows, cols)
    return q, scale


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """q (rows, cols) int8 and scale (rows,) → the float32 matrix q · scale[:, None] (what the
    browser computes with)."""
    if not isinstance(q, torch.Tensor) or q.dtype != torch.int8:
        raise TypeError(f"q must be an int8 torch tensor; got {getattr(q, 'dtype', type(q).__name__)}")
    if q.ndim != 2:
        raise ValueError(f"q must be a (rows, cols) matrix; got shape {tuple(q.shape)}")
    if not isinstance(scale, torch.Tensor):
        raise TypeError(f"scale must be a torch tensor; got {type(scale).__name__}")
    if tuple(scale.shape) != (q.shape[0],):
        raise ValueError(f"scale must be a ({q.shape[0]},) tensor, one per row of q; got shape "
                         f"{tuple(scale.shape)}")
    return q.float() * scale.float()[:, None]  # (rows, cols)


def quantized_translator(translator_or_folder=None, trust_unverified: bool = False) -> Translator:
    """A copy of a translator (a Translator, a checkpoint folder, or None: the shipped one) whose
    weight matrices went through int8 and back, biases and LayerNorm vectors unchanged: the model
    the int8 export runs in the browser. trust_unverified: as for :meth:`Translator.load`."""
    translator = _translator(translator_or_folder, trust_unverified)
    model = copy.deepcopy(translator.model)
    with torch.no_grad():
        for _, p in _unique_tensors(model):
            if p.ndim == 2:
                p.copy_(dequantize_int8(*quantize_int8(p)))
    return Translator(model, translator.tokenizer, translator.max_source_tokens)


# ---------------------------------------------------------------- the export


def _translator(translator_or_folder, trust_unverified: bool = False) -> Translator:
    """A Translator from itself, a checkpoint folder (refused without its SHA256SUMS unless
    ``trust_unverified``: see :meth:`Translator.load`), or None (the shipped checkpoint)."""
    if translator_or_folder is None or isinstance(translator_or_folder, (str, os.PathLike)):
        return Translator.load(translator_or_folder, trust_unverified=trust_unverified)
    if not isinstance(translator_or_folder, Translator):
        raise TypeError(f"translator_or_folder must be a Translator, a checkpoint folder or None "
                        f"(the shipped checkpoint); got {type(translator_or_folder).__name__}")
    return translator_or_folder


def _check_supported(translator: Translator) -> None:
    """The JavaScript engine implements minformer's Transformer with one shared vocabulary and
    ReLU; refuse anything else with the reason."""
    model = translator.model
    if not isinstance(model, Transformer):
        raise TypeError(f"only a minformer Transformer can be exported for the browser; this "
                        f"translator's model is a {type(model).__name__}")
    c = model.config
    refused = {"tgt_vocab_size": (c.tgt_vocab_size, (None,)),
               "activation": (c.activation, ("relu",)),
               "positions": (c.positions, ("sinusoidal", "learned")),
               "n_kv_heads": (getattr(c, "n_kv_heads", None), (None, c.n_heads))}
    for name, (value, allowed) in refused.items():
        if value not in allowed:
            raise ValueError(f"the browser engine implements {name} in {allowed}; this model has "
                             f"{name}={value!r}")
    for name in ("d_model", "d_ff", "vocab_size"):  # its matrix products take four rows at a time
        if getattr(c, name) % 4:
            raise ValueError(f"the browser engine needs {name} to be a multiple of 4; this model has "
                             f"{name}={getattr(c, name)}")


def _config_json(translator: Translator) -> dict:
    """The sizes and switches the JavaScript engine reads, every default resolved."""
    c, eps = translator.model.config, translator.model.encoder.layers[0].norm1.eps
    return {"vocab_size": c.vocab_size, "d_model": c.d_model, "n_heads": c.n_heads, "d_ff": c.d_ff,
            "n_layers": c.n_layers, "n_decoder_layers": c.decoder_layers, "max_len": c.max_len,
            "norm_first": c.norm_first, "final_norm": c.norm_first if c.final_norm is None else c.final_norm,
            "layer_norm_eps": eps, "positions": c.positions, "pad_id": c.pad_id,
            "bos_id": c.bos_id, "eos_id": c.eos_id, "tie_embeddings": c.tie_embeddings,
            "activation": c.activation, "max_source_tokens": translator.max_source_tokens}


def _unique_tensors(model) -> list[tuple[str, torch.Tensor]]:
    """(name, tensor) of the state dict, a tensor shared by several names (tied embeddings)
    listed once, under its first name."""
    seen, out = set(), []
    for name, t in model.state_dict(keep_vars=True).items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
        if key not in seen:
            seen.add(key)
            out.append((name, t))
    return out


def _aliases(model) -> dict[str, str]:
    """{name: first name of the same storage} for every repeated tensor of the state dict."""
    first, out = {}, {}
    for name, t in model.state_dict(keep_vars=True).items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
        if key in first:
            out[name] = first[key]
        else:
            first[key] = name
    return out


def _pad(buf: bytearray) -> int:
    """Pad ``buf`` with zeros to the next multiple of ALIGN; return its length (the offset)."""
    buf.extend(b"\0" * (-len(buf) % ALIGN))
    return len(buf)


_FLOAT16_MAX = torch.finfo(torch.float16).max  # 65504


def _check_exportable(name: str, t: torch.Tensor, stored_as: str) -> None:
    """A weight the browser can hold: finite, and within float16's range where it is stored as
    float16 (a larger one would become inf in weights.bin)."""
    bad = ~torch.isfinite(t)
    if bad.any():
        raise ValueError(f"tensor {name} holds {int(bad.sum())} non-finite value(s) (NaN or inf), "
                         f"e.g. at index {tuple(bad.nonzero()[0].tolist())}: refusing to export it")
    big = t.abs().max() if t.numel() else torch.tensor(0.0)
    if stored_as == "float16" and float(big) > _FLOAT16_MAX:
        raise ValueError(f"tensor {name} holds {float(big):g}, beyond float16's largest value "
                         f"{_FLOAT16_MAX:g}: it would be stored as inf")


def _weights(model, dtype: str) -> tuple[bytes, list[dict]]:
    """The binary (little-endian) and its table of tensors. ValueError naming the tensor for a
    weight that is not finite, or too large for float16 where it is stored as float16."""
    buf, table = bytearray(), []
    for name, t in _unique_tensors(model):
        t = t.detach().cpu()
        if not t.is_floating_point():
            raise ValueError(f"tensor {name} has dtype {t.dtype}; only floating-point weights "
                             f"can be exported")
        _check_exportable(name, t, "int8" if dtype == "int8" and t.ndim == 2 else "float16")
        entry = {"name": name, "shape": list(t.shape)}
        if dtype == "int8" and t.ndim == 2:
            q, scale = quantize_int8(t)
            entry.update(dtype="int8", offset=_pad(buf))
            buf += q.numpy().astype("i1").tobytes()
            entry["scale_offset"] = _pad(buf)
            buf += scale.numpy().astype("<f4").tobytes()
        else:
            entry.update(dtype="float16", offset=_pad(buf))
            buf += t.float().numpy().astype("<f2").tobytes()
        entry["bytes"] = len(buf) - entry["offset"]
        table.append(entry)
    _pad(buf)
    return bytes(buf), table


def _tokenizer_json(tok: BPETokenizer) -> dict:
    """What the JavaScript BPETokenizer is built from: merges as (left id, right id), in order
    (a merge's own id is the next free id, or the id of the same bytes built earlier)."""
    merges = [[tok.token_to_id(a), tok.token_to_id(b)] for a, b in tok.merges]
    return {"special_tokens": list(tok.special_tokens), "merges": merges,
            "vocab_size": tok.vocab_size, "pattern": PATTERN}


def _checkpoint_sums(translator_or_folder) -> dict | None:
    if isinstance(translator_or_folder, Translator):
        return None
    from .utils import data_dir

    folder = Path(translator_or_folder) if translator_or_folder is not None else data_dir() / CHECKPOINT
    return {name: _sha256((folder / name).read_bytes()) for name in FILES if name != "train_log.json"}


def _check_dtype(dtype) -> str:
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(map(repr, DTYPES))}; got {dtype!r}")
    return dtype


def browser_files(translator_or_folder=None, dtype: str = "float16",
                  trust_unverified: bool = False) -> dict[str, bytes]:
    """The export in memory: ``{"weights.bin": bytes, "model.json": bytes}`` (see the module's
    docstring). translator_or_folder: a :class:`~minformer.translator.Translator`, a checkpoint
    folder, or None for the shipped checkpoint (``data/checkpoints/en-es``, checked against its
    sha256). dtype: "float16" (the checkpoint's own numbers) or "int8". trust_unverified: load a
    folder without its SHA256SUMS (:meth:`Translator.load`). ValueError for a model the browser
    engine does not implement, or a weight that is NaN, inf or beyond float16's range."""
    _check_dtype(dtype)
    translator = _translator(translator_or_folder, trust_unverified)
    _check_supported(translator)
    model = translator.model
    weights, table = _weights(model, dtype)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "dtype": dtype,
        "weights": {"file": WEIGHTS_BIN, "bytes": len(weights), "sha256": _sha256(weights)},
        "config": _config_json(translator),
        "tokenizer": _tokenizer_json(translator.tokenizer),
        "tensors": table,
        "aliases": _aliases(model),
        "checkpoint": _checkpoint_sums(translator_or_folder),
    }
    text = json.dumps(meta, ensure_ascii=False, separators=(",", ":")) + "\n"
    return {WEIGHTS_BIN: weights, MODEL_JSON: text.encode("utf-8")}


def _out_folder(out_folder) -> Path:
    if out_folder is None:
        return STATIC_DIR
    if not isinstance(out_folder, (str, os.PathLike)):
        raise TypeError(f"out_folder must be a folder path (str or Path); got {type(out_folder).__name__}")
    folder = Path(out_folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"out_folder {folder} is a file: give a folder (it is created if missing)")
    return folder


def export_for_browser(translator_or_folder=None, out_folder=None, dtype: str = "float16",
                       trust_unverified: bool = False) -> dict[str, str]:
    """Write the translator for the browser into ``out_folder`` (default ``_static/translator/``):
    ``weights.bin``, ``model.json`` and ``SHA256SUMS`` (the sha256 of the two). Returns
    {file name: sha256} of the three files written.

    translator_or_folder: a Translator, a checkpoint folder, or None (the shipped checkpoint).
    dtype: "float16" or "int8"; trust_unverified: as for :func:`browser_files`. Each file is
    written beside its final name and renamed into place, so an error never leaves a half-written
    file; other files in the folder are left alone."""
    _check_dtype(dtype)
    folder = _out_folder(out_folder)
    files = browser_files(translator_or_folder, dtype, trust_unverified)
    sums = {name: _sha256(data) for name, data in files.items()}
    files[SUMS] = "".join(f"{h}  {n}\n" for n, h in sums.items()).encode("utf-8")
    sums[SUMS] = _sha256(files[SUMS])
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():  # weights first: model.json then never names a missing binary
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; these are the book's public files
            os.replace(tmp, folder / name)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    return sums


def check_export(folder=None, translator_or_folder=None,
                 trust_unverified: bool = False) -> dict[str, str]:
    """Check that the export in ``folder`` (default ``_static/translator/``) is exactly what
    :func:`export_for_browser` makes from the checkpoint now (default: the shipped one), in the
    dtype its model.json names: every file byte for byte, and SHA256SUMS agreeing with them.
    Returns {file name: sha256}; raises :class:`ExportError` naming the file that differs."""
    folder = _out_folder(folder)
    path = folder / MODEL_JSON
    if not path.is_file():
        raise ExportError(f"no browser export at {folder}: {MODEL_JSON} is missing. Run `{REGENERATE}`")
    try:
        dtype = json.loads(path.read_text(encoding="utf-8"))["dtype"]
    except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise ExportError(f"{path} is not a browser export's model.json ({type(e).__name__}: {e}). "
                          f"Run `{REGENERATE}`") from None
    if dtype not in DTYPES:
        raise ExportError(f"{path} names dtype {dtype!r}, not one of {DTYPES}. Run `{REGENERATE}`")
    expected = browser_files(translator_or_folder, dtype, trust_unverified)
    sums = {}
    for name, data in expected.items():
        file = folder / name
        if not file.is_file():
            raise ExportError(f"the browser export is missing {file}. Run `{REGENERATE}`")
        found = _sha256(file.read_bytes())
        if found != _sha256(data):
            raise ExportError(
                f"{file} differs from the export of the checkpoint (sha256 {found[:12]}…, expected "
                f"{_sha256(data)[:12]}…): the checkpoint changed or the file was altered. Run "
                f"`{REGENERATE}`")
        sums[name] = found
    listed = (folder / SUMS).read_text(encoding="utf-8") if (folder / SUMS).is_file() else ""
    if listed != "".join(f"{h}  {n}\n" for n, h in sums.items()):
        raise ExportError(f"{folder / SUMS} is missing or does not list the files' sha256. Run "
                          f"`{REGENERATE}`")
    sums[SUMS] = _sha256(listed.encode("utf-8"))
    return sums


def _main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m minformer.export",
                                     description="Export the translator for the browser "
                                                 "(_static/translator/), or check the export.")
    parser.add_argument("--dtype", choices=DTYPES, default="float16")
    parser.add_argument("--out", default=None, help=f"output folder (default: {STATIC_DIR})")
    parser.add_argument("--checkpoint", default=None,
                        help="checkpoint folder (default: the shipped one); checked against its "
                             "own SHA256SUMS file, and refused without one")
    parser.add_argument("--trust-unverified", action="store_true",
                        help="export a --checkpoint folder that has no SHA256SUMS file")
    parser.add_argument("--check", action="store_true", help="only check the export against the checkpoint")
    args = parser.parse_args(argv)
    try:
        if args.check:
            sums = check_export(args.out, args.checkpoint, args.trust_unverified)
        else:
            sums = export_for_browser(args.checkpoint, args.out, args.dtype, args.trust_unverified)
        sizes = {name: (_out_folder(args.out) / name).stat().st_size for name in sums}
    except (ExportError, CheckpointError, ValueError, TypeError, OSError) as e:
        # a checkpoint the engine does not implement (gelu), a weight it cannot hold, a folder
        # that cannot be written: one line, never a traceback
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.check:
        print(f"the export in {_out_folder(args.out)} matches the checkpoint")
    for name, h in sums.items():
        print(f"{h}  {name}  ({sizes[name]:,} bytes)")
    return 0


def main(argv=None) -> int:
    """``python -m minformer.export [--dtype D] [--out FOLDER] [--checkpoint FOLDER]
    [--trust-unverified] [--check]``: exit status 0, or 1 with one ``error:`` line on stderr."""
    from .utils import run_command

    return run_command(_main, "python -m minformer.export", argv)


if __name__ == "__main__":
    sys.exit(main())
