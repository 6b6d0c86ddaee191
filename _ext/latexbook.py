r"""Five fixes for `make pdf` (Jupyter Book 1's LaTeX builder); the HTML book is untouched.

- **Exercises referenced from another chapter.** sphinx-exercise labels an exercise in LaTeX as
  ``exercise:<label>`` only, but Sphinx writes a reference from another document as
  ``<docname>:<label>`` (chapter 4 points to an exercise of chapter 1), which LaTeX then reports
  as undefined. Each exercise also gets that second label.
- **HTML-only outputs.** An output that has nothing but HTML (the cross-attention explorer)
  would print as its text fallback, ``<IPython.core.display.HTML object>``. It is dropped; the
  chapter shows a static figure in its place in a ``{only} latex`` block.
- **Interactive figures' stills as they are now.** A chapter's ``figures.show("ch01-attention")``
  cell stores, as its image output, the still picture of the day it was executed; the PDF shows
  the figure's current still instead, ``_static/pdf/figure-<name>.png`` (``make pdf-figures``:
  the figure alone, without the web edition's controls), so a new still needs no re-execution.
- **Long tables break across pages.** A table too long for one page (the benchmarks appendix:
  15 rows of long cells) was typeset as one ``tabulary``, which ran off its page and lost 10 of
  its rows (LaTeX: "Overfull \vbox (626pt too high)"). A table of more than
  ``LONG_TABLE_ROWS`` rows, or of more than ``LONG_TABLE_CHARS`` characters, is a
  ``longtable``, its columns as wide as their longest words and average text ask.
- **Chapter numbers as on the web.** LaTeX numbers every chapter, so the notation page would be
  chapter 1 and every "chapter 4" of the text would point one chapter off. The documents of the
  table of contents' unnumbered parts (Getting started, Back matter) are typeset without numbers
  (``\mfbUnnumbered`` ... ``\mfbNumbered``, defined in _config.yml's LaTeX preamble).
"""

import math
import re
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx_exercise import nodes as exercise_nodes

HTML_FALLBACK = "<IPython.core.display.HTML object>"


def _visit_exercise_enumerable(self, node):
    exercise_nodes.visit_exercise_enumerable_node(self, node)
    label = node.attributes.get("label")
    entry = self.builder.env.sphinx_exercise_registry.get(label, {})
    if label and entry.get("docname"):
        # before the admonition the original visitor opened: \label{docname:label} as Sphinx
        # writes references from other documents
        self.body.insert(len(self.body) - 1, "\\label{\\detokenize{%s:%s}}" % (entry["docname"], label))


class DropHTMLFallbacks(SphinxPostTransform):
    """In LaTeX, remove outputs that are only the text stand-in of an HTML display."""

    default_priority = 5  # after myst-nb has chosen each output's MIME type (priority 4)
    formats = ("latex",)

    def run(self, **kwargs):
        for block in list(self.document.findall(nodes.literal_block)):
            if block.astext().strip() == HTML_FALLBACK:
                parent = block.parent
                while (parent.parent is not None and isinstance(parent.parent, nodes.container)
                       and len(parent.parent.children) == 1):
                    parent = parent.parent  # the mime container, the bundle, the outputs
                parent.parent.remove(parent)


FIGURE_CELL = re.compile(r"""figures\.show\(\s*["']([\w-]+)["']\s*\)""")


class CurrentStills(SphinxPostTransform):
    """In LaTeX, the image output of a ``figures.show(...)`` cell is the figure's current still,
    by its absolute path (not one of Sphinx's collected images: LaTeX reads it where it is)."""

    default_priority = 5  # after myst-nb has chosen each output's MIME type (priority 4)
    formats = ("latex",)

    def run(self, **kwargs):
        from minformer import figures

        stills = Path(self.env.srcdir) / "_static" / "pdf"
        for cell in list(self.document.findall(lambda n: isinstance(n, nodes.container)
                                               and n.get("nb_element") == "cell_code")):
            source = "".join(b.astext() for b in cell.findall(nodes.literal_block)
                             if b.parent.get("nb_element") == "cell_code_source")
            m = FIGURE_CELL.search(source)
            if not m or m[1] not in figures.FIGURES:
                continue
            for image in cell.findall(nodes.image):
                image["uri"] = str(stills / figures.FIGURES[m[1]].still)
                image["candidates"] = {"*": image["uri"]}


LONG_TABLE_ROWS = 12
LONG_TABLE_CHARS = 1500


class LongTables(SphinxPostTransform):
    """In LaTeX, a long table is a longtable (it breaks across pages), its column widths given."""

    default_priority = 6
    formats = ("latex",)

    def run(self, **kwargs):
        for table in list(self.document.findall(nodes.table)):
            rows = list(table.findall(nodes.row))
            chars = sum(len(r.astext()) for r in rows)
            if len(rows) <= LONG_TABLE_ROWS and chars <= LONG_TABLE_CHARS:
                continue
            table["classes"] = [c for c in table["classes"] if c != "colwidths-auto"] + [
                "longtable", "colwidths-given"]
            specs = list(table.findall(nodes.colspec))
            widths = [1.0] * len(specs)
            for row in rows:
                for k, entry in enumerate(e for e in row.children if isinstance(e, nodes.entry)):
                    if k < len(widths):
                        text = entry.astext()
                        longest = max((len(w) for w in text.split()), default=1)
                        widths[k] = max(widths[k], longest, math.sqrt(len(text)) * 2.5)
            total = sum(widths)
            for spec, w in zip(specs, widths):
                spec["colwidth"] = max(1, round(100 * w / total))


class UnnumberedChapters(SphinxPostTransform):
    """In LaTeX, the documents of unnumbered toctrees get no chapter or section numbers."""

    default_priority = 6
    formats = ("latex",)

    def run(self, **kwargs):
        root = self.env.get_doctree(self.config.root_doc)
        unnumbered = {doc for toctree in root.findall(addnodes.toctree)
                      if not toctree.get("numbered") for _, doc in toctree["entries"]}
        for start in list(self.document.findall(addnodes.start_of_file)):
            if start.get("docname") in unnumbered:
                start.insert(0, nodes.raw("", "\\mfbUnnumbered\n", format="latex"))
                start.append(nodes.raw("", "\\mfbNumbered\n", format="latex"))


def setup(app):
    app.add_node(exercise_nodes.exercise_enumerable_node, override=True,
                 singlehtml=(exercise_nodes.visit_exercise_enumerable_node,
                             exercise_nodes.depart_exercise_enumerable_node),
                 html=(exercise_nodes.visit_exercise_enumerable_node,
                       exercise_nodes.depart_exercise_enumerable_node),
                 latex=(_visit_exercise_enumerable, exercise_nodes.depart_exercise_enumerable_node))
    app.add_post_transform(DropHTMLFallbacks)
    app.add_post_transform(LongTables)
    app.add_post_transform(UnnumberedChapters)
    app.add_post_transform(CurrentStills)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
