"""The interactive figures as a code cell's output (minformer.figures): one bundle that carries
everything it needs (the scripts inline, the still as a data URI), the still alone for the PDF,
and, in headless Chromium (`make check-book`), each figure's output loaded alone into a sandboxed
frame as Colab shows outputs, where it must mount and answer an input."""

import base64
import json
import os
import re
import time

import pytest
from browser import CHROMIUM, MOVE_FIRST_CONTROL, Browser

from minformer import figures


@pytest.mark.parametrize("name", figures.FIGURES)
def test_the_bundle_carries_the_figure_its_scripts_and_its_still(name):
    data, metadata = figures.show(name)._repr_mimebundle_()
    html = data["text/html"]
    spec = figures.FIGURES[name]
    assert html.startswith(f'<div class="mff" data-figure="{name}">')
    still = (figures.STATIC / "pdf" / spec.still).read_bytes()
    assert base64.b64decode(data["image/png"]) == still
    uri = re.search(r'<img src="(data:image/png;base64,[^"]*)"', html).group(1)
    assert base64.b64decode(uri.split(",", 1)[1].replace("\n", "")) == still
    assert figures.RUN_TO_INTERACT in html and metadata["image/png"]["alt"] == spec.alt
    # both scripts, whole and inline; nothing to fetch (Colab's frames reach no server)
    for js in ("core.js", spec.script):
        source = (figures.STATIC / "figures" / js).read_text(encoding="utf-8")
        assert source.replace("</script", "<\\/script") in html
    assert re.findall(r'src="([^"]*)"', html) == [uri]
    assert "<script src" not in html and "href=" not in html
    assert name in data["text/plain"] and repr(figures.show(name)) == data["text/plain"]


def test_an_unknown_figure_is_named():
    with pytest.raises(ValueError, match="no figure named 'ch02-lookup'; the book's figures: "
                                         "ch01-attention, ch02-bandwidth"):
        figures.show("ch02-lookup")


def test_a_missing_static_folder_says_what_is_needed(monkeypatch, tmp_path):
    monkeypatch.setattr(figures, "STATIC", tmp_path)
    with pytest.raises(FileNotFoundError, match="the figures need the repository's _static"):
        figures.figure_html("ch01-attention")


# In the frame, after the figure's output: wait for the figure to mount, read its HTML, move its
# first control (browser.MOVE_FIRST_CONTROL), read it again, and post both to the page.
HARNESS = """<script>
""" + MOVE_FIRST_CONTROL + """
(function () {
  var t0 = Date.now();
  function texts(f) {  // what the figure draws and writes (a control's state is a property)
    return f.innerHTML;
  }
  function go() {
    var f = document.querySelector('.mff');
    if (!f.dataset.mffReady) {
      if (Date.now() - t0 > 5000) parent.postMessage({ready: false}, '*');
      else setTimeout(go, 20);
      return;
    }
    var before = texts(f);
    moveFirstControl(f);
    setTimeout(function () {
      parent.postMessage({ready: true, before: before, after: texts(f),
                          still: !!f.querySelector('img')}, '*');
    }, 100);
  }
  go();
})();
</script>"""


@pytest.mark.skipif(not os.environ.get("BOOK_HTML"),
                    reason="a reader's view: `make check-book` runs it (after `make book`)")
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)")
def test_each_figure_answers_an_input_alone_in_a_sandboxed_frame():
    browser = Browser(900, 900)
    try:
        browser.goto("about:blank", settle=0.1)
        results = {}
        for name in figures.FIGURES:
            srcdoc = figures.figure_html(name) + HARNESS
            browser.evaluate(f"""new Promise(resolve => {{
              document.body.innerHTML = '';
              window.onmessage = e => {{ window.figureResult = e.data; resolve(true); }};
              const frame = document.createElement('iframe');
              frame.setAttribute('sandbox', 'allow-scripts');   // an opaque origin, as Colab's
              frame.style.width = '860px'; frame.style.height = '800px';
              frame.srcdoc = {json.dumps(srcdoc)};
              document.body.appendChild(frame);
            }})""")
            results[name] = browser.evaluate("window.figureResult")
            time.sleep(0.05)
        for name, r in results.items():
            assert r["ready"], f"{name} did not mount in a sandboxed frame"
            assert not r["still"], f"{name}: the still stayed after the figure mounted"
            assert r["before"] and r["after"] != r["before"], (name, r)
        assert browser.errors == []
    finally:
        browser.close()
