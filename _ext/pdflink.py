"""The whole book as a PDF in every page's download menu, beside the page's .ipynb and .md.

`make pdf` writes the PDF to the root of the HTML book (_build/html/PDF_NAME), where the
published site serves it; the menu entry links there from every page.
"""

PDF_NAME = "transformers-from-scratch.pdf"


def _add_pdf_entry(app, pagename, templatename, context, doctree):
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].append({
                "type": "link",
                "url": context["pathto"](PDF_NAME, 1),
                "text": "whole book .pdf",
                "tooltip": "Download the whole book as a PDF",
                "icon": "fas fa-book",
                "label": "download-book-pdf-button",
            })


def setup(app):
    # after sphinx-book-theme builds the menu (its handlers run at priority 501)
    app.connect("html-page-context", _add_pdf_entry, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
