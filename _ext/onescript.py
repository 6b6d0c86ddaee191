"""Each script once per page.

sphinx-thebe adds its inline configuration (``const THEBE_JS_URL = ...``) every time Sphinx
fires ``env-before-read-docs``; when that happens twice in one build, every page declares the
constant twice and the browser reports "Uncaught SyntaxError: Identifier 'THEBE_JS_URL' has
already been declared". This drops repeated script entries from each page's context.
"""


def _key(script):
    attributes = getattr(script, "attributes", {}) or {}
    filename = getattr(script, "filename", str(script)) or ""  # None and "" both mean inline
    return filename, tuple(sorted(attributes.items()))


def drop_repeated_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        key = _key(script)
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def setup(app):
    app.connect("html-page-context", drop_repeated_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
