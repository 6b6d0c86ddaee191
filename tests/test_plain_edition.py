"""The plain edition (`make notebooks`, _ext/plain_edition.py): every chapter as a notebook with
no MyST syntax left, the same code cells in the same order, exercises numbered as in the web
edition, hints and solutions folded, and an error naming the chapter for syntax it does not know.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEC = importlib.util.spec_from_file_location("plain_edition", ROOT / "_ext" / "plain_edition.py")
pe = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(pe)

CHAPTERS = pe.chapters()
# What MyST syntax looks like in a markdown cell: a directive's fence, a role, an option line, a
# comment, a label target.
MYST = re.compile(r"^(`{3,}|:{3,})\{|\{[\w:-]+\}`|^:(class|label|file|tags|name):|^% |^\([\w-]+\)=$",
                  re.M)


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("plain")
    written, _ = pe.write_edition(out)
    return {p.name: json.loads(p.read_text(encoding="utf-8")) for p in written}, out


def _markdown(nb):
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def _code(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def test_every_chapter_is_written_in_the_tocs_order(edition):
    notebooks, out = edition
    assert list(notebooks) == [p.name for p in CHAPTERS] and len(notebooks) == 14
    assert "make notebooks" in (out / "README.md").read_text()


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem[:2])
def test_no_myst_syntax_is_left_and_the_code_cells_are_the_sources(edition, path):
    plain = edition[0][path.name]
    source = json.loads(path.read_text(encoding="utf-8"))
    for text in _markdown(plain):
        assert not MYST.search(text), (path.name, MYST.search(text).group(0), text[:300])
    ours, theirs = _code(plain), _code(source)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        code = "".join(a["source"])
        if a["metadata"].get("cellView") == "form":  # hidden: its title line added
            title, code = code.split("\n", 1)
            if "remove-cell" in b["metadata"].get("tags", []):  # a check for the tests
                assert title == f"#@title {pe.CHECK_TITLE}"
            else:  # a gated solution
                assert title.startswith("#@title Solution to Exercise ")
            assert a["metadata"]["jupyter"]["source_hidden"] is True
        else:
            assert "remove-cell" not in b["metadata"].get("tags", []), code[:200]
        assert code == "".join(b["source"])
        assert a["outputs"] == b["outputs"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem[:2])
def test_exercises_get_numbered_headings_and_solutions_fold(edition, path):
    plain = edition[0][path.name]
    number = CHAPTERS.index(path) + 1
    twin = (ROOT / "chapters" / "text" / f"{path.stem}.md").read_text(encoding="utf-8")
    text = "\n".join(_markdown(plain))
    headings = re.findall(rf"^### Exercise {number}\.(\d+)", text, re.M)
    assert [int(k) for k in headings] == list(range(1, twin.count("```{exercise}") + 1))
    # every prose solution and every dropdown hint inside <details>, closed
    assert text.count("<summary>Solution to Exercise") == twin.count("```{solution}")
    assert text.count("<details>") == text.count("</details>")
    assert "<details open" not in text
    hidden = [c for c in _code(plain) if c["metadata"].get("cellView") == "form"
              and "remove-cell" not in c["metadata"].get("tags", [])]
    assert len(hidden) == twin.count("{solution-start}")


def test_citations_and_references_become_links():
    book = pe.Book()
    chapter = pe.Chapter(book, CHAPTERS[0])
    text = chapter.markdown("As {cite}`vaswani2017attention` and {cite:t}`bahdanau2015neural` "
                            "show; see {ref}`ex-softmax`, {doc}`chapter 3 "
                            "<03_queries_keys_values>` and {doc}`../translate`.")
    assert "([Vaswani et al., 2017](" in text
    assert "[Bahdanau et al. (2015)](https://arxiv.org/abs/1409.0473)" in text
    assert f"[Exercise 1.1]({book.web}chapters/01_dot_product_attention.html#ex-softmax)" in text
    assert f"[chapter 3]({book.web}chapters/03_queries_keys_values.html)" in text
    assert f"]({book.web}translate.html)" in text
    # code spans are left alone, even across a line break
    assert chapter.markdown("`x =\n{cite}` stays") == "`x =\n{cite}` stays"
    assert chapter.markdown(":::{admonition} Why\nBecause.\n:::") == "> **Why**\n>\n> Because."


def test_screenshots_for_paper_are_attached_and_figures_stay_outputs(edition):
    # chapter 13's explorer and translator: their screenshots, attached to the cell
    plain = edition[0]["13_training_a_translator.ipynb"]
    cells = [c for c in plain["cells"] if c.get("attachments")]
    assert len(cells) == 2
    for cell in cells:
        (name, data), = cell["attachments"].items()
        assert name.endswith(".png") and f"(attachment:{name})" in "".join(cell["source"])
        assert data["image/png"].startswith("iVBOR")  # base64 of a PNG's signature
    # chapter 1's figure: the output of its cell (minformer.figures), and no words for paper
    ch01 = edition[0]["01_dot_product_attention.ipynb"]
    shown = [o for c in _code(ch01) for o in c["outputs"]
             if 'data-figure="ch01-attention"' in "".join(o.get("data", {}).get("text/html", ""))]
    assert len(shown) == 1 and "image/png" in shown[0]["data"]
    assert not any("On paper" in t for t in _markdown(ch01))


def _chapter_2_with(tmp_path, bad):
    nb = json.loads(CHAPTERS[1].read_text(encoding="utf-8"))
    nb["cells"].insert(2, {"cell_type": "markdown", "metadata": {}, "source": [bad]})
    copy = tmp_path / CHAPTERS[1].name
    copy.write_text(json.dumps(nb), encoding="utf-8")
    return copy


@pytest.mark.parametrize("bad, named", [
    (":::{tabbed} One\nText\n:::", "unknown directive {tabbed}"),
    ("See {eq}`my-equation`.", "unknown role {eq}"),
    ("```{exercise} Broken\nNever closed", "never closes"),
    ("See {cite}`nobody2099`.", "citation 'nobody2099' is not in references.bib"),
    ("{ref}`ex-nowhere`", "no label 'ex-nowhere'"),
    ("```{raw} html\n<div>a figure</div>\n```", "{raw} html holding more than scripts"),
])
def test_unknown_syntax_stops_it_naming_the_chapter(tmp_path, bad, named):
    with pytest.raises(pe.PlainEditionError) as error:
        pe.write_edition(tmp_path / "out", [_chapter_2_with(tmp_path, bad)])
    assert str(error.value).startswith(f"{CHAPTERS[1].name}: ") and named in str(error.value)
    assert not (tmp_path / "out" / "chapters" / CHAPTERS[1].name).exists()


def test_make_notebooks_fails_with_one_line_naming_chapter_and_directive(tmp_path):
    copy = _chapter_2_with(tmp_path, ":::{tabbed} One\nText\n:::")
    got = subprocess.run([sys.executable, str(ROOT / "_ext" / "plain_edition.py"), "--out",
                          str(tmp_path / "out"), str(copy)], capture_output=True, text=True)
    assert got.returncode == 2 and got.stdout == ""
    assert got.stderr == (f"make notebooks: {CHAPTERS[1].name}: unknown directive {{tabbed}}\n")


def test_a_notebook_that_is_no_chapter_is_refused(tmp_path):
    stray = tmp_path / "99_extra.ipynb"
    stray.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4,
                                 "nbformat_minor": 5}))
    with pytest.raises(pe.PlainEditionError, match="99_extra.ipynb is not a chapter of _toc.yml"):
        pe.write_edition(tmp_path / "out", [stray])


@pytest.mark.skipif(not os.environ.get("BOOK_HTML"), reason="needs the built book: make check-book")
def test_exercise_numbers_are_the_web_editions(edition):
    book = Path(os.environ["BOOK_HTML"])
    for path in CHAPTERS:
        html = (book / "chapters" / f"{path.stem}.html").read_text(encoding="utf-8")
        web = sorted(set(re.findall(r"Exercise (\d+\.\d+)", html)),
                     key=lambda n: tuple(map(int, n.split("."))))
        plain = re.findall(r"^### Exercise (\d+\.\d+)", "\n".join(_markdown(edition[0][path.name])),
                           re.M)
        assert plain == web, path.name


def test_a_notebook_the_reader_changed_is_kept_unless_forced(tmp_path):
    first, _ = pe.write_edition(tmp_path, [CHAPTERS[0]])
    assert pe.write_edition(tmp_path, [CHAPTERS[0]]) == (first, [])  # unchanged: rewritten
    mine = first[0].read_text() + " "
    first[0].write_text(mine)                                  # the reader's work
    assert pe.write_edition(tmp_path, [CHAPTERS[0]]) == ([], first)
    assert first[0].read_text() == mine
    assert pe.write_edition(tmp_path, [CHAPTERS[0]], force=True) == (first, [])
    assert first[0].read_text() != mine
