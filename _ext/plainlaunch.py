"""The Colab and Binder launch buttons open the plain edition (`make notebooks`,
_ext/plain_edition.py).

sphinx-book-theme points both buttons at the chapter's notebook in the book's repository, whose
markdown is MyST: Colab and a plain JupyterLab would show the directives and roles as text and
every solution in plain sight. So:

- Colab: the book's publishing workflow (.github/workflows/book.yml) pushes the plain edition to
  the branch ``PLAIN_BRANCH``, with the chapters at the same paths; the button opens it there.
- Binder: .binder/postBuild writes the plain edition into ``PLAIN_FOLDER`` when Binder builds the
  reader's environment; the button opens the chapter there.
"""

import re

PLAIN_BRANCH = "notebooks"
PLAIN_FOLDER = "_build/notebooks"


def _point_launch_buttons_at_the_plain_edition(app, pagename, templatename, context, doctree):
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group["buttons"]:
            if button.get("text") == "Colab":
                button["url"] = re.sub(r"/blob/[^/]+/", f"/blob/{PLAIN_BRANCH}/",
                                       button["url"], count=1)
                button["tooltip"] = "Launch on Colab (the plain edition)"
            elif button.get("text") == "Binder":
                button["url"] = re.sub(r"(urlpath=(?:lab/)?tree/)", rf"\g<1>{PLAIN_FOLDER}/",
                                       button["url"], count=1)
                button["tooltip"] = "Launch on Binder (the plain edition)"


def setup(app):
    # after sphinx-book-theme builds the launch buttons (its handlers run at priority 501)
    app.connect("html-page-context", _point_launch_buttons_at_the_plain_edition, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
