"""Keep the page translator's scripts, and the interactive figures', out of every page's <head>.

Jupyter Book 1 adds every ``_static/**/*.js`` to ``html_js_files``, so each page would load the
translator's engine and, worse, the ~20 MB of weights that ``make book`` writes as script files
for ``file://`` copies. The translator's pages load ``widget.js`` themselves, and it loads the
rest when the reader presses its button. The interactive figures of Part I (_static/figures/)
are loaded by the five chapters that show them, with script tags beside each figure.
"""


def _drop_translator_scripts(app, config):
    def path(entry):
        return entry if isinstance(entry, str) else entry[0]

    config.html_js_files = [f for f in config.html_js_files
                            if not path(f).startswith(("translator/", "figures/"))]


def setup(app):
    app.connect("config-inited", _drop_translator_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
