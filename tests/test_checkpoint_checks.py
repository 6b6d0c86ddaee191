"""Checkpoints that cannot lie: Translator.load refuses a folder whose files disagree with each
other, with their own checksum file, or hold impossible weights, naming the file and the
mismatch; Translator.save never leaves a half-written folder."""

import fractions
import json

import pytest
import torch

from minformer.tokenizer import BPETokenizer
from minformer.transformer import Transformer, TransformerConfig
from minformer.translator import FILES, SUMS, CheckpointError, Translator

TEXT = ["Where is the train station?", "¿Dónde está la estación de tren?", "I am hungry.",
        "Tengo hambre."] * 3


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer.train(TEXT, 300)


def make(tok, **kw):
    torch.manual_seed(0)
    cfg = dict(vocab_size=tok.vocab_size, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=32,
               norm_first=True, pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
    cfg.update(kw)
    return Translator(Transformer(TransformerConfig(**cfg)).eval(), tok, max_source_tokens=24)


@pytest.fixture
def folder(tok, tmp_path):
    make(tok).save(tmp_path / "ckpt", {"tiny": True})
    return tmp_path / "ckpt"


def refuses(folder, match):
    """The error Translator.load gives; a folder whose SHA256SUMS a test deleted is loaded with
    trust_unverified=True, to reach the checks behind that one."""
    with pytest.raises(CheckpointError, match=match) as err:
        Translator.load(folder, trust_unverified=not (folder / SUMS).exists())
    assert "weights_only=False" not in str(err.value)
    return str(err.value)


def edit_config(folder, **changes):
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    for key in [k for k, v in changes.items() if v is KeyError]:
        del config[key]
    path.write_text(json.dumps(config))


def test_a_saved_folder_loads_and_lists_its_own_checksums(folder, tok):
    sums = (folder / SUMS).read_text().splitlines()
    assert [line.split("  ")[1] for line in sums] == list(FILES)
    tr = Translator.load(folder)
    assert tr.model.config.norm_first is True and tr.tokenizer.vocab_size == tok.vocab_size


@pytest.mark.parametrize("change", [{"norm_first": False}, {"n_heads": 4}, {"dropout": 0.3}])
def test_an_edited_config_disagrees_with_the_folders_checksums(folder, change):
    edit_config(folder, **change)  # same shapes: only the checksum file can tell
    message = refuses(folder, "config.json disagrees with the folder's own checksum file")
    assert "SHA256SUMS" in message


def test_a_damaged_checksum_file_is_named(folder):
    (folder / SUMS).write_text("not a checksum line\n")
    refuses(folder, "SHA256SUMS line 1 is not")


def test_a_folder_without_its_checksum_file_is_refused_unless_trusted(folder):
    """Deleting SHA256SUMS must not turn the checks off: an edited config.json would then load
    as a plausible model."""
    (folder / SUMS).unlink()
    edit_config(folder, n_heads=4)
    with pytest.raises(CheckpointError, match=r"has no SHA256SUMS file.*trust_unverified=True "
                                              r"\(the command line's --trust-unverified\)"):
        Translator.load(folder)
    assert Translator.load(folder, trust_unverified=True).model.config.n_heads == 4
    with pytest.raises(TypeError, match="trust_unverified must be True or False; got 'yes'"):
        Translator.load(folder, trust_unverified="yes")


@pytest.mark.parametrize("keep", [slice(1, None), slice(0, 0)])
def test_a_checksum_file_must_list_every_file(folder, keep):
    lines = (folder / SUMS).read_text().splitlines(keepends=True)
    (folder / SUMS).write_text("".join(lines[keep]))
    refuses(folder, "SHA256SUMS does not list model.pt")


def test_a_checksum_file_lists_each_file_once(folder):
    lines = (folder / SUMS).read_text().splitlines(keepends=True)
    (folder / SUMS).write_text("".join(lines + lines[:1]))
    refuses(folder, "SHA256SUMS line 5 is not .*each once")


def test_a_flipped_exponent_bit_is_refused(folder):
    (folder / SUMS).unlink()  # a folder without its own checksums: the weights are still checked
    state = torch.load(folder / "model.pt", weights_only=True)
    key = next(k for k, v in state.items() if v.is_floating_point())
    bits = state[key].view(torch.int16)
    bits.view(-1)[0] = bits.view(-1)[0] | 0x7C00  # fp16 exponent all ones: inf or NaN
    torch.save(state, folder / "model.pt")
    refuses(folder, f"tensor {key} holds 1 non-finite value")


def test_shapes_that_disagree_with_the_config(folder):
    (folder / SUMS).unlink()
    edit_config(folder, d_ff=64)
    refuses(folder, r"has shape \(32, 16\), but config.json gives \(64, 16\)")


def test_missing_and_unexpected_tensors(folder):
    (folder / SUMS).unlink()
    state = torch.load(folder / "model.pt", weights_only=True)
    first = next(iter(state))
    state["extra.weight"] = state.pop(first)
    torch.save(state, folder / "model.pt")
    message = refuses(folder, "does not fit config.json")
    assert "extra.weight" in message and first in message


@pytest.mark.parametrize("change, match", [
    ({"n_heads": "2"}, "n_heads must be int; got '2'"),
    ({"norm_first": 1}, "norm_first must be bool; got 1"),
    ({"dropout": "0.1"}, "dropout must be float"),
    ({"max_source_tokens": 99}, "max_source_tokens=99 must lie in 1..max_len=32"),
    ({"n_heads": 3}, "not divisible by n_heads=3"),
    ({"positions": "rotary"}, "positions must be"),
    ({"colour": "blue"}, "unknown key"),
    ({"d_model": KeyError}, "missing key.*d_model"),
])
def test_config_keys_of_the_wrong_type_or_value(folder, change, match):
    (folder / SUMS).unlink()
    edit_config(folder, **change)
    message = refuses(folder, match)
    assert "config.json" in message


def test_a_tokenizer_of_another_size(folder):
    (folder / SUMS).unlink()
    BPETokenizer.train(TEXT, 280).save(folder / "tokenizer.json")
    refuses(folder, r"tokenizer.json has \d+ tokens, but config.json's model has vocab_size=")


def test_special_ids_that_disagree(tok, tmp_path):
    tr = make(tok)
    tr.save(tmp_path / "c")
    (tmp_path / "c" / SUMS).unlink()
    edit_config(tmp_path / "c", pad_id=tok.bos_id, bos_id=tok.pad_id)
    refuses(tmp_path / "c", "tokenizer pad_id=")


def test_a_pickle_with_code_is_refused_without_torch_advice(folder):
    (folder / SUMS).unlink()
    torch.save({"weights": fractions.Fraction(1, 3)}, folder / "model.pt")  # not weights-only
    message = refuses(folder, "cannot be read as a checkpoint")
    assert "no pickled code is run" in message


def test_a_truncated_model_file(folder):
    (folder / SUMS).unlink()
    data = (folder / "model.pt").read_bytes()
    (folder / "model.pt").write_bytes(data[: len(data) // 2])
    refuses(folder, "model.pt cannot be read as a checkpoint")


def test_not_a_json_config(folder):
    (folder / SUMS).unlink()
    (folder / "config.json").write_text("{not json")
    refuses(folder, "config.json is not valid JSON")


def test_save_is_all_or_nothing(tok, tmp_path, monkeypatch):
    target = tmp_path / "ckpt"
    make(tok).save(target, {"first": True})
    before = {name: (target / name).read_bytes() for name in (*FILES, SUMS)}

    def broken(self, path):
        raise OSError("disk full")

    monkeypatch.setattr(BPETokenizer, "save", broken)
    with pytest.raises(OSError, match="disk full"):
        make(tok, d_ff=64).save(target, {"second": True})
    assert {name: (target / name).read_bytes() for name in (*FILES, SUMS)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]  # no temporary folder left
    monkeypatch.undo()
    make(tok, d_ff=64).save(target, {"second": True})  # replaces the old one whole
    assert Translator.load(target).model.config.d_ff == 64
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt"]
