"""The plain edition: every chapter as a notebook that plain Markdown renderers show well.

``make notebooks`` (``python _ext/plain_edition.py``) writes ``_build/notebooks/chapters/`` from
the notebooks in ``chapters/``: the same code cells in the same order, with their stored outputs,
and markdown cells in which no MyST syntax is left, so that Colab, VS Code, GitHub's preview and
a JupyterLab without ``jupyterlab-myst`` show the book and not its markup:

- an exercise (``{exercise}``) becomes a heading with its number, "Exercise 1.2: title", as the
  web edition numbers it;
- a hint (a dropdown ``{admonition}``) and a prose solution (``{solution}``) go inside
  ``<details>``, folded until opened; any other admonition or note becomes a blockquote with a
  bold title;
- a gated solution (code cells between ``{solution-start}`` and ``{solution-end}``) keeps its
  code, hidden: ``jupyter.source_hidden`` (JupyterLab, VS Code) and Colab's form view
  (``cellView: form`` and a first line ``#@title ...``, the one change made to a code cell);
- a citation becomes author-year text linked to the work (its URL or DOI), or to the web
  edition's bibliography; ``{doc}`` and ``{ref}`` become links to the web edition;
- an interactive figure is the output of its code cell (``minformer.figures.show``), which needs
  no change; a screenshot for paper (``{only} latex``) becomes the picture, attached to its cell
  so that the notebook carries it, and a link to the web edition; the translator's widget, a
  link to it;
- a cell that only checks a run for the book's tests (tagged ``remove-cell``, which the web
  edition drops) keeps its code, hidden under a title as a gated solution's is;
- MyST comments (``% ...``) and label targets (``(name)=``) are dropped.

Anything else in MyST syntax (a directive or role this script does not know) stops it with an
error naming the chapter and the directive: nothing is passed through unconverted.

The web edition's address comes from ``repository.url`` in ``_config.yml``
(:mod:`minformer.publish`), the author-year labels from ``_ext/bibstyle.py``.
"""

from __future__ import annotations

import argparse
import base64
import copy
import functools
import hashlib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "code"))
sys.path.insert(0, str(ROOT / "_ext"))

from bibstyle import author_year_label, text_fields  # noqa: E402

from minformer.publish import current_repository_url, parse_repository_url, repository_forms  # noqa: E402

OUT = ROOT / "_build" / "notebooks"
FENCE = re.compile(r"^(?P<fence>`{3,}|:{3,})(?P<rest>.*)$")
DIRECTIVE = re.compile(r"^\{(?P<name>[\w:-]+)\}\s*(?P<arg>.*)$")
ROLE_OR_CODE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<body>[^`]*)`|`+[^`]*`+")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
# A cell that only checks a run for the book's tests (a band on run-dependent numbers): the web
# book drops it (Jupyter Book's remove-cell tag); here its code is folded under this title.
CHECK_TAG = "remove-cell"
CHECK_TITLE = "Check: the run above stays in its measured band (for the book's tests)"
TARGET = re.compile(r"^\((?P<label>[\w-]+)\)=\s*$")
WITH_TEXT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)


class PlainEditionError(ValueError):
    """A chapter holds MyST syntax that the plain edition does not know how to write."""


def web_edition() -> str:
    """The web edition's address, with a final slash: ``https://owner.github.io/name/``."""
    owner, name = parse_repository_url(current_repository_url(ROOT))
    return f"https://{repository_forms(owner, name)[1]}/"


def chapters() -> list[Path]:
    """The chapters' notebooks, in the order of ``_toc.yml``."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    return [ROOT / f"{f}.ipynb" for f in re.findall(r"file:\s*(chapters/\S+)", toc)]


def bibliography() -> dict[str, tuple[str, str]]:
    """``key -> (author-year label, link)`` for every entry of references.bib; the link is the
    entry's URL, else its DOI, else the web edition's bibliography page."""
    import pybtex.plugin
    from pybtex.database import parse_file

    # pybtex looks its plugins up among the installed entry points on every call (0.05 s each,
    # 16 s for the bibliography's 300 names): once per plugin is enough
    if not hasattr(pybtex.plugin._load_entry_point, "cache_info"):
        pybtex.plugin._load_entry_point = functools.lru_cache(maxsize=None)(
            pybtex.plugin._load_entry_point)
    entries = parse_file(str(ROOT / "references.bib")).entries
    out, web = {}, web_edition()
    for key, entry in entries.items():
        fields = entry.fields
        arxiv = (f"https://arxiv.org/abs/{fields['eprint']}"
                 if fields.get("archivePrefix", "").lower() == "arxiv" and "eprint" in fields else None)
        url = fields.get("url") or arxiv or (f"https://doi.org/{fields['doi']}" if "doi" in fields
                                             else f"{web}bibliography.html")
        out[key] = (author_year_label(text_fields(entry)), url)
    return out


def first_heading(path: Path) -> str:
    """The title of a page: the first ``# `` heading of a notebook or Markdown file."""
    if path.suffix == ".ipynb":
        text = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                         if c["cell_type"] == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    match = re.search(r"^# (.+)$", text, re.M)
    if match is None:
        raise PlainEditionError(f"{path.name} has no title (a '# ' heading)")
    return match.group(1).strip()


class Book:
    """What every chapter's conversion needs to know about the whole book: the web edition's
    address, the bibliography, each exercise's number and each label's page."""

    def __init__(self):
        self.web = web_edition()
        self.bib = bibliography()
        self.chapters = chapters()
        self.labels = {}  # label -> (page path without suffix, relative to ROOT; text)
        for number, path in enumerate(self.chapters, start=1):
            page = path.relative_to(ROOT).with_suffix("").as_posix()
            k = 0
            for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
                if cell["cell_type"] != "markdown":
                    continue
                lines = "".join(cell["source"]).splitlines()
                for i, line in enumerate(lines):
                    target = TARGET.match(line)
                    if target:
                        heading = next((x.lstrip("#").strip() for x in lines[i + 1:]
                                        if x.startswith("#")), target["label"])
                        self.labels[target["label"]] = (page, heading)
                    fence = FENCE.match(line)
                    if fence and fence["rest"].startswith("{exercise}"):
                        k += 1
                        label = next((OPTION.match(x)["value"] for x in lines[i + 1:]
                                      if OPTION.match(x) and OPTION.match(x)["key"] == "label"),
                                     None)
                        if label:
                            self.labels[label] = (page, f"Exercise {number}.{k}")

    def page_url(self, page: str, anchor: str = "") -> str:
        return f"{self.web}{page}.html" + (f"#{anchor}" if anchor else "")


class Chapter:
    """One chapter's conversion (:meth:`convert`)."""

    def __init__(self, book: Book, path: Path):
        """``path``: a chapter's notebook (or a copy of one: its name says which chapter it is;
        relative paths in it are read from chapters/)."""
        self.book, self.path = book, Path(path)
        self.page = f"chapters/{self.path.stem}"
        names = [p.name for p in book.chapters]
        if self.path.name not in names:
            raise PlainEditionError(f"{self.path.name} is not a chapter of _toc.yml")
        self.number = names.index(self.path.name) + 1
        self.base = ROOT / "chapters"
        self.exercises = 0
        self.attachments = {}
        self.hiding = None  # inside a gated solution: the exercise's name

    def fail(self, what: str):
        raise PlainEditionError(f"{self.path.name}: {what}")

    # ---------------------------------------------------------------- roles

    def role(self, match: re.Match) -> str:
        name, body = match["name"], match["body"]
        if name in ("cite", "cite:p", "cite:t"):
            works = []
            for key in (k.strip() for k in body.split(",")):
                if key not in self.book.bib:
                    self.fail(f"citation {key!r} is not in references.bib")
                works.append(self.book.bib[key])
            if name == "cite:t":
                return "; ".join(f"[{label.rsplit(', ', 1)[0]} ({label.rsplit(', ', 1)[1]})]"
                                 f"({url})" for label, url in works)
            return "(" + "; ".join(f"[{label}]({url})" for label, url in works) + ")"
        if name == "doc":
            m = WITH_TEXT.match(body)
            text, target = (m["text"], m["target"]) if m else (None, body)
            resolved = (self.base / target).resolve()
            page = resolved.relative_to(ROOT).as_posix()
            source = next((resolved.with_suffix(s) for s in (".ipynb", ".md")
                           if resolved.with_suffix(s).exists()), None)
            if source is None:
                self.fail(f"{{doc}}`{body}` names no page of the book")
            return f"[{text or first_heading(source)}]({self.book.page_url(page)})"
        if name == "ref":
            m = WITH_TEXT.match(body)
            text, label = (m["text"], m["target"]) if m else (None, body)
            if label not in self.book.labels:
                self.fail(f"{{ref}}`{body}`: no label {label!r} in the book")
            page, default = self.book.labels[label]
            return f"[{text or default}]({self.book.page_url(page, label)})"
        self.fail(f"unknown role {{{name}}} (in {match.group(0)!r})")

    def inline(self, text: str) -> str:
        """Roles replaced; inline code spans left as they are."""
        return ROLE_OR_CODE.sub(lambda m: self.role(m) if m["name"] else m.group(0), text)

    # ----------------------------------------------------------- directives

    def directive(self, name: str, arg: str, options: dict, body: str) -> str:
        classes = options.get("class", "").split()
        if name == "exercise":
            self.exercises += 1
            number = f"{self.number}.{self.exercises}"
            label = options.get("label")
            if label and self.book.labels.get(label, (None, ""))[1] != f"Exercise {number}":
                self.fail(f"exercise {label!r} numbered {number} here but not in the book's index")
            title = f"Exercise {number}" + (f": {self.inline(arg)}" if arg else "")
            return f"### {title}\n\n{self.markdown(body)}"
        if name == "solution-start":
            if self.hiding is not None:
                self.fail(f"{{solution-start}} {arg} inside the solution to {self.hiding}")
            self.hiding = self.exercise_name(arg)
            return (f"**Solution to {self.hiding}**: the next cell, its code hidden until you "
                    "open it.")
        if name == "solution-end":
            if self.hiding is None:
                self.fail("{solution-end} without a {solution-start}")
            self.hiding = None
            return ""
        if name == "solution":
            return self.details(f"Solution to {self.exercise_name(arg)}", body)
        if name == "admonition":
            if "dropdown" in classes:
                return self.details(self.inline(arg), body)
            return self.quote(self.inline(arg), body)
        if name in ("note", "tip", "warning", "important", "caution"):
            return self.quote(name.capitalize(), (arg + "\n" + body).strip())
        if name == "only":
            if arg.strip() != "latex":
                self.fail(f"{{only}} {arg} is not a known condition")
            return self.still(body)
        if name == "raw":
            if "file" in options and "widget.html" in options["file"]:
                return (f"The translator runs in the web edition, in [this chapter's page]"
                        f"({self.book.page_url(self.page)}) and on its own in "
                        f"[Translate]({self.book.page_url('translate')}).")
            if arg.strip() == "html" and re.fullmatch(r'(\s*<script src="[^"]+"></script>)+\s*',
                                                      body):
                return ""  # the web edition's scripts (the widget's): nothing to show here
            self.fail(f"{{raw}} {arg} holding more than scripts is not known")
        self.fail(f"unknown directive {{{name}}}")

    def exercise_name(self, label: str) -> str:
        label = label.strip()
        if label not in self.book.labels:
            self.fail(f"solution to an unknown exercise {label!r}")
        return self.book.labels[label][1]

    def details(self, summary: str, body: str) -> str:
        return f"<details>\n<summary>{summary}</summary>\n\n{self.markdown(body)}\n\n</details>"

    def quote(self, title: str, body: str) -> str:
        lines = [f"**{title}**", ""] + self.markdown(body).splitlines()
        return "\n".join(f"> {line}".rstrip() for line in lines)

    def still(self, body: str) -> str:
        """An ``{only} latex`` block: its picture (the explorer's and the translator's
        screenshots), attached to the cell, and a link to the web edition in place of its text
        for paper; a block with no picture (the words beside a figure's cell) is dropped."""
        m = re.search(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)]+)\)", body, re.S)
        if m is None:  # words for paper only, beside a figure's cell (its output is the still)
            return ""
        png = (self.base / m["src"]).resolve()
        if not png.is_file():
            self.fail(f"{m['src']} does not exist")
        self.attachments[png.name] = {"image/png": base64.b64encode(png.read_bytes()).decode()}
        alt = " ".join(m["alt"].split())
        return (f"![{alt}](attachment:{png.name})\n\n*A still picture: in the "
                f"[web edition]({self.book.page_url(self.page)}) this is interactive.*")

    # ------------------------------------------------------------ markdown

    def markdown(self, text: str) -> str:
        """``text`` with every directive, role, comment and target rewritten."""
        lines = text.splitlines()
        out, prose, i = [], [], 0

        def flush():  # roles are read over whole runs of prose: a code span may cross lines
            if prose:
                out.append(self.inline("\n".join(prose)))
                prose.clear()

        while i < len(lines):
            line = lines[i]
            fence = FENCE.match(line)
            if fence:
                flush()
                mark, rest = fence["fence"], fence["rest"].strip()
                end = next((j for j in range(i + 1, len(lines))
                            if lines[j].strip() == mark), None)
                if end is None:
                    self.fail(f"a {mark} block that never closes: {line!r}")
                inner = lines[i + 1:end]
                d = DIRECTIVE.match(rest)
                if d is None:
                    if mark.startswith(":"):
                        self.fail(f"a ::: block without a directive: {line!r}")
                    out.extend(lines[i:end + 1])  # a code block: as it is
                else:
                    options, k = {}, 0
                    while k < len(inner) and OPTION.match(inner[k]):
                        o = OPTION.match(inner[k])
                        options[o["key"]] = o["value"]
                        k += 1
                    body = "\n".join(inner[k:]).strip("\n")
                    out.append(self.directive(d["name"], d["arg"], options, body))
                i = end + 1
                continue
            if not (line.startswith("%") or TARGET.match(line)):
                prose.append(line)
            i += 1
        flush()
        text = "\n".join(out)
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")

    # ------------------------------------------------------------ notebook

    def convert(self) -> dict:
        """The plain edition of the chapter's notebook (a new dict; the file is not changed)."""
        nb = json.loads(self.path.read_text(encoding="utf-8"))
        cells = []
        for cell in nb["cells"]:
            cell = copy.deepcopy(cell)
            if cell["cell_type"] == "markdown":
                source = "".join(cell["source"])
                self.attachments = {}
                text = self.markdown(source)
                if not text.strip():
                    continue
                new = _markdown_cell(text, cell)
                if self.attachments:
                    new["attachments"] = self.attachments
                cells.append(new)
            elif cell["cell_type"] == "code" and self.hiding is not None:
                cells.append(_hidden(cell, f"Solution to {self.hiding}"))
            elif cell["cell_type"] == "code" and CHECK_TAG in cell["metadata"].get("tags", []):
                cells.append(_hidden(cell, CHECK_TITLE))
            else:
                cells.append(cell)
        if self.hiding is not None:
            self.fail(f"the solution to {self.hiding} never ends ({{solution-end}})")
        nb["cells"] = cells
        nb["metadata"].pop("jupytext", None)
        return nb


def _hidden(cell: dict, title: str) -> dict:
    """The code cell with its source folded: JupyterLab and VS Code (``jupyter.source_hidden``),
    Colab (its form view, titled by the first line)."""
    cell["metadata"].setdefault("jupyter", {})["source_hidden"] = True
    cell["metadata"]["cellView"] = "form"
    cell["source"] = _lines(f"#@title {title}\n{''.join(cell['source'])}")
    return cell


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _markdown_cell(text: str, like: dict) -> dict:
    cell = {"cell_type": "markdown", "metadata": {}, "source": _lines(text)}
    if "id" in like:
        cell["id"] = like["id"]
    return cell


README = """# Transformers from Scratch: the plain edition

These are the book's chapters as notebooks that Colab, VS Code, GitHub and any JupyterLab show as
they are: exercises with their numbers, hints and solutions folded until opened (a solution's code
in a hidden cell), citations as links to the works and cross-references as links to the web
edition, {web}.
They are written from the repository's `chapters/` by `make notebooks`; edit those, not these.
On Colab, run each chapter's first cell: it fetches the book's code and data.
"""


def write_edition(out: Path = OUT, paths: list[Path] | None = None,
                  force: bool = False) -> tuple[list[Path], list[Path]]:
    """Convert the chapters (all, or the notebooks ``paths``, each named as a chapter of
    _toc.yml) into ``out``/chapters/, with a README; returns the notebooks written and those
    kept.

    A notebook there that differs from what this wrote last time (``out``/.written.json holds
    their sha256) is a reader's work: it is kept, unless ``force``."""
    book = Book()
    record = out / ".written.json"
    written_before = json.loads(record.read_text()) if record.is_file() else {}
    written, kept = [], []
    for path in paths if paths else book.chapters:
        nb = Chapter(book, path).convert()
        target = out / "chapters" / Path(path).name
        text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        if (target.is_file() and not force
                and _sha256(target.read_bytes()) != written_before.get(target.name)):
            kept.append(target)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written_before[target.name] = _sha256(text.encode("utf-8"))
        written.append(target)
    (out / "README.md").write_text(README.format(web=book.web), encoding="utf-8")
    record.write_text(json.dumps(written_before, indent=1, sort_keys=True) + "\n")
    return written, kept


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make notebooks", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (default: %(default)s)")
    parser.add_argument("--force", action="store_true",
                        help="rewrite notebooks changed since they were written (your work in "
                             "them is lost)")
    parser.add_argument("chapters", nargs="*", help="chapter notebooks (default: all)")
    args = parser.parse_args(argv)
    try:
        written, kept = write_edition(args.out, [Path(c) for c in args.chapters], args.force)
    except PlainEditionError as err:
        print(f"make notebooks: {err}", file=sys.stderr)
        return 2
    print(f"the plain edition: {len(written)} notebooks in {args.out / 'chapters'}")
    for path in kept:
        print(f"kept {path}: you changed it since it was written (save your work under another "
              "name and delete it, or use --force, to get the new one)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
