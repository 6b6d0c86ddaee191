"""The page translator's HTML and files (minformer.widget); the widget itself is driven in a
real browser by tests/test_widget_browser.py."""

import base64
import json

import pytest

from minformer.widget import FRAGMENT, STATIC, page_translator_html, write_page_fragment, write_script_copies

EXAMPLE = [{"source": ["I", " am", "<eos>"], "target": ["Soy", "<eos>"],
            "weights": [[[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]]], "label": "I am"}]


def test_the_fragment_holds_the_explorer_and_the_box_settings_but_no_script():
    out = page_translator_html(EXAMPLE, size="7 MB", example='He said "<b>hi</b>" & left.')
    assert out.startswith('<div class="mft') and 'data-size="7 MB"' in out
    assert "widget.js" not in out and "data-base" not in out  # each page loads widget.js itself
    assert 'class="mfx' in out  # the explorer the reader's sentences are added to
    assert "<b>hi</b>" not in out and "&lt;b&gt;hi&lt;/b&gt;" in out  # escaped, never markup


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(size=7), TypeError, "size must be a str"),
    (dict(example=None), TypeError, "example must be a str"),
])
def test_the_fragment_refuses_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        page_translator_html(examples=EXAMPLE, **kwargs)


def test_one_fragment_is_written_and_both_pages_include_it(tmp_path):
    path = write_page_fragment(EXAMPLE, tmp_path, size="7 MB")
    assert path == tmp_path / FRAGMENT
    assert path.read_text(encoding="utf-8") == page_translator_html(EXAMPLE, size="7 MB") + "\n"
    root = STATIC.parents[1]
    for page, up in (("translate.md", ""), ("chapters/text/13_training_a_translator.md", "../")):
        text = (root / page).read_text(encoding="utf-8")
        assert f":file: {up}_static/translator/{FRAGMENT}" in text, page
        assert f'<script src="{up}_static/translator/widget.js"></script>' in text, page


def test_widget_js_finds_its_folder_from_its_own_url():
    source = (STATIC / "widget.js").read_text(encoding="utf-8")
    assert "document.currentScript" in source
    assert 'root.getAttribute("data-base") || HERE' in source


def test_script_copies_rebuild_the_weights_byte_for_byte(tmp_path, monkeypatch):
    import minformer.widget as widget

    monkeypatch.setattr(widget, "CHUNK", 1000)
    weights = bytes(range(256)) * 11  # 2,816 bytes: three chunks
    (tmp_path / "w.bin").write_bytes(weights)
    model = {"weights": {"file": "w.bin"}, "config": {"d_model": 4}}
    (tmp_path / "model.json").write_text(json.dumps(model))
    monkeypatch.setattr(widget, "CHUNK", 200)
    assert len(write_script_copies(tmp_path)) == 15  # an earlier, longer export
    (tmp_path / "weights-mine.js").write_text("a reader's own file")
    (tmp_path / "weights-20.js").write_text("a reader's own file too")
    monkeypatch.setattr(widget, "CHUNK", 1000)
    paths = write_script_copies(tmp_path)
    assert [p.name for p in paths] == ["weights-00.js", "weights-01.js", "weights-02.js"]
    assert not (tmp_path / "weights-07.js").exists()  # the old copy's chunks are removed
    assert (tmp_path / "weights-mine.js").exists() and (tmp_path / "weights-20.js").exists()
    chunks, count, read = {}, None, None
    for p in paths:
        for line in p.read_text().splitlines():
            if line.startswith("MinformerWeights.chunks["):
                k = int(line.split("[")[1].split("]")[0])
                chunks[k] = base64.b64decode(line.split('"')[1])
            elif line.startswith("MinformerWeights.count"):
                count = int(line.split("=")[1].strip(" ;"))
            elif line.startswith("MinformerWeights.model"):
                read = json.loads(line.split("=", 1)[1].strip().rstrip(";"))
    assert count == 3 and read == model
    assert b"".join(chunks[k] for k in sorted(chunks)) == weights


def test_script_copies_need_an_export(tmp_path):
    with pytest.raises(FileNotFoundError, match="make export-translator"):
        write_script_copies(tmp_path)


def test_the_committed_fragment_is_the_one_the_shipped_translator_makes():
    """_static/translator/widget.html: regenerate with `make export-translator`."""
    from minformer.explorer import examples_from_translator
    from minformer.translator import Translator
    from minformer.widget import PAGE_EXAMPLE, export_size

    examples = examples_from_translator(Translator.load(), [PAGE_EXAMPLE], beam_size=4)
    want = page_translator_html(examples, size=export_size()) + "\n"
    assert (STATIC / FRAGMENT).read_text(encoding="utf-8") == want


def test_export_size_reads_the_weights_file_named_in_model_json(tmp_path):
    from minformer.widget import export_size

    (tmp_path / "w.bin").write_bytes(b"\0" * 7_340_000)
    (tmp_path / "model.json").write_text(json.dumps({"weights": {"file": "w.bin"}}))
    assert export_size(tmp_path) == "7.3 MB"


def test_the_page_uses_the_commands_minimum_length():
    """widget.js passes minformer-translate's default minimum length to the engine."""
    import re

    from minformer.translate import MIN_LENGTH_RATIO, MIN_LENGTH_SLACK

    source = (STATIC / "widget.js").read_text(encoding="utf-8")
    found = re.findall(r"var MIN_LENGTH_RATIO = ([0-9.]+), MIN_LENGTH_SLACK = ([0-9]+);", source)
    assert found and (float(found[0][0]), int(found[0][1])) == (MIN_LENGTH_RATIO, MIN_LENGTH_SLACK)
    for name in ("MIN_LENGTH_RATIO", "MIN_LENGTH_SLACK"):  # defined, sent to the worker, in-page
        assert source.count(name) >= 3


def test_the_page_uses_the_commands_loop_guard_and_clauses():
    """widget.js turns on the loop guard and clause by clause translation as minformer-translate
    does by default, in the worker and in the page."""
    import re

    from minformer.translate import NO_LOOPS, SPLIT_CLAUSES

    source = (STATIC / "widget.js").read_text(encoding="utf-8")
    found = re.findall(r"var NO_LOOPS = (true|false), SPLIT_CLAUSES = (true|false);", source)
    assert found and found[0] == (str(NO_LOOPS).lower(), str(SPLIT_CLAUSES).lower())
    for name in ("NO_LOOPS", "SPLIT_CLAUSES"):  # defined, sent to the worker, in-page
        assert source.count(name) >= 3
    assert "noLoops: m.noLoops" in source and "splitClauses: m.split" in source


@pytest.mark.parametrize("name", ["../outside.bin", "/etc/passwd", "sub/w.bin", "..", "", 3])
def test_script_copies_never_read_outside_their_folder(tmp_path, name):
    from minformer.widget import export_size

    folder = tmp_path / "export"
    folder.mkdir()
    (tmp_path / "outside.bin").write_bytes(b"secret")
    (folder / "model.json").write_text(json.dumps({"weights": {"file": name}}))
    for fn in (write_script_copies, export_size):
        with pytest.raises(ValueError, match="model.json"):
            fn(folder)
    assert list(folder.glob("weights-*.js")) == []


def test_script_copies_refuse_a_link_out_of_the_folder(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (tmp_path / "outside.bin").write_bytes(b"secret")
    (folder / "w.bin").symlink_to(tmp_path / "outside.bin")
    (folder / "model.json").write_text(json.dumps({"weights": {"file": "w.bin"}}))
    with pytest.raises(ValueError, match="outside"):
        write_script_copies(folder)


@pytest.mark.parametrize("text, message", [("{", "is not JSON"), ("[1]", "names no weights"),
                                           ('{"weights": {}}', "names no weights")])
def test_script_copies_name_a_damaged_model_json(tmp_path, text, message):
    (tmp_path / "model.json").write_text(text)
    with pytest.raises(ValueError, match=message):
        write_script_copies(tmp_path)
    (tmp_path / "model.json").write_text('{"weights": {"file": "gone.bin"}}')
    with pytest.raises(FileNotFoundError, match="gone.bin"):
        write_script_copies(tmp_path)
