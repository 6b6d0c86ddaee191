"""Three fixes for `make pdf` (Jupyter Book 1's LaTeX builder); the HTML book is untouched.

- **Exercises referenced from another chapter.** sphinx-exercise labels an exercise in LaTeX as
  ``exercise:<label>`` only, but Sphinx writes a reference from another document as
  ``<docname>:<label>`` (chapter 4 points to an exercise of chapter 1), which LaTeX then reports
  as undefined. Each exercise also gets that second label.
- **HTML-only outputs.** An output that has nothing but HTML (the cross-attention explorer)
  would print as its text fallback, ``<IPython.core.display.HTML object>``. It is dropped; the
  chapter shows a static figure in its place in a ``{only} latex`` block.
- **Chapter numbers as on the web.** LaTeX numbers every chapter, so the notation page would be
  chapter 1 and every "chapter 4" of the text would point one chapter off. The documents of the
  table of contents' unnumbered parts (Getting started, Back matter) are typeset without numbers
  (``\mfbUnnumbered`` ... ``\mfbNumbered``, defined in _config.yml's LaTeX preamble).
"""

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
    app.add_post_transform(UnnumberedChapters)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
