"""The Colab launch button opens the plain edition (`make notebooks`, _ext/plain_edition.py).

sphinx-book-theme points its Colab button at the chapter's notebook on the book's branch, whose
markdown is MyST: Colab would show the directives and roles as text and every solution in plain
sight. The book's publishing workflow (.github/workflows/book.yml) pushes the plain edition to the
branch ``PLAIN_BRANCH``, with the chapters at the same paths; this points the button there.
"""

import re

PLAIN_BRANCH = "notebooks"


def _point_colab_at_the_plain_edition(app, pagename, templatename, context, doctree):
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group["buttons"]:
            if button.get("text") == "Colab":
                button["url"] = re.sub(r"/blob/[^/]+/", f"/blob/{PLAIN_BRANCH}/",
                                       button["url"], count=1)
                button["tooltip"] = "Launch on Colab (the plain edition)"


def setup(app):
    # after sphinx-book-theme builds the launch buttons (its handlers run at priority 501)
    app.connect("html-page-context", _point_colab_at_the_plain_edition, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
