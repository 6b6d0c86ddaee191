"""The page translator's HTML and files (minformer.widget); the widget itself is driven in a
real browser by tests/test_widget_browser.py."""

import base64
import json

import pytest

from minformer.widget import STATIC, page_translator_html, write_page_fragment, write_script_copies

EXAMPLE = [{"source": ["I", " am", "<eos>"], "target": ["Soy", "<eos>"],
            "weights": [[[[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]]]], "label": "I am"}]


def test_the_fragment_holds_the_explorer_the_box_settings_and_the_script():
    out = page_translator_html("../_static/translator/", EXAMPLE, size="7 MB",
                               example='He said "<b>hi</b>" & left.')
    assert out.startswith('<div class="mft')
    assert 'data-base="../_static/translator/"' in out and 'data-size="7 MB"' in out
    assert '<script src="../_static/translator/widget.js"></script>' in out
    assert 'class="mfx' in out  # the explorer the reader's sentences are added to
    assert "<b>hi</b>" not in out and "&lt;b&gt;hi&lt;/b&gt;" in out  # escaped, never markup


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(base="../_static/translator"), ValueError, "ending in '/'"),
    (dict(base=3), TypeError, "base must be a str"),
    (dict(base="x/", size=7), TypeError, "size must be a str"),
])
def test_the_fragment_refuses_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        page_translator_html(examples=EXAMPLE, **kwargs)


def test_the_fragments_are_written_for_the_book_root_and_for_a_chapter(tmp_path):
    paths = write_page_fragment(EXAMPLE, tmp_path, size="7 MB")
    assert [p.name for p in paths] == ["page.html", "chapter.html"]
    for path, base in zip(paths, ("_static/translator/", "../_static/translator/")):
        assert path.read_text(encoding="utf-8") == page_translator_html(
            base, EXAMPLE, size="7 MB") + "\n"


def test_script_copies_rebuild_the_weights_byte_for_byte(tmp_path, monkeypatch):
    import minformer.widget as widget

    monkeypatch.setattr(widget, "CHUNK", 1000)
    weights = bytes(range(256)) * 11  # 2,816 bytes: three chunks
    (tmp_path / "w.bin").write_bytes(weights)
    model = {"weights": {"file": "w.bin"}, "config": {"d_model": 4}}
    (tmp_path / "model.json").write_text(json.dumps(model))
    (tmp_path / "weights-07.js").write_text("stale")
    paths = write_script_copies(tmp_path)
    assert [p.name for p in paths] == ["weights-00.js", "weights-01.js", "weights-02.js"]
    assert not (tmp_path / "weights-07.js").exists()  # an old copy is removed
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


def test_the_committed_fragments_are_the_ones_the_shipped_translator_makes():
    """_static/translator/page.html and chapter.html: regenerate with `make export-translator`."""
    from minformer.explorer import examples_from_translator
    from minformer.translator import Translator
    from minformer.widget import PAGE_EXAMPLE, PAGES, export_size

    examples = examples_from_translator(Translator.load(), [PAGE_EXAMPLE], beam_size=4)
    for name, base in PAGES.items():
        want = page_translator_html(base, examples, size=export_size()) + "\n"
        assert (STATIC / name).read_text(encoding="utf-8") == want, name


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
