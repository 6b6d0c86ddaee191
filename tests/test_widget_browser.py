"""The page translator in a real browser (headless Chromium), as a reader uses it: press Load,
type a sentence, press Translate, read the Spanish and the explorer, with no console error; from
a web server and from a file:// copy, at desktop and phone width. The page under test is the
book's own fragment (_static/translator/widget.html) and the book's own scripts, loaded as
the book's pages load them."""

import functools
import http.server
import shutil
import threading

import pytest
from browser import CHROMIUM, Browser

from minformer.widget import STATIC, write_script_copies

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed "
                                "(.ci/run installs Debian's chromium)")
SENTENCE = "She said that she would call me when she arrived at the airport."


@functools.cache
def python_translation(sentence, beam):
    """What minformer-translate writes: the shipped model, with the command's length floor."""
    from minformer.translate import MIN_LENGTH_RATIO, MIN_LENGTH_SLACK
    from minformer.translator import Translator

    return Translator.load().translate([sentence], beam_size=beam,
                                       min_length_ratio=MIN_LENGTH_RATIO,
                                       min_length_slack=MIN_LENGTH_SLACK)[0]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A one-page site: the fragment at its root, _static/translator/ beside it."""
    root = tmp_path_factory.mktemp("site")
    static = root / "_static" / "translator"
    shutil.copytree(STATIC, static, ignore=shutil.ignore_patterns("weights-*.js"))
    write_script_copies(static)
    fragment = (STATIC / "widget.html").read_text(encoding="utf-8")
    (root / "chapters").mkdir()
    for page, up in (("index.html", ""), ("chapters/index.html", "../")):  # as the book's pages
        (root / page).write_text(
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            "content='width=device-width, initial-scale=1'><link rel='icon' href='data:,'>"
            "<title>translator</title></head><body>" + fragment
            + f"<script src='{up}_static/translator/widget.js'></script></body></html>",
            encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
    httpd.shutdown()


def use_the_widget(browser, url, beam="4"):
    browser.goto(url)
    assert browser.evaluate("document.querySelector('.mft-output').textContent") == ""
    assert browser.evaluate("typeof MinformerTranslator") == "undefined"  # nothing loaded yet
    browser.evaluate("document.querySelector('.mft-load').click()")
    browser.wait_for("document.querySelector('.mft').dataset.mftState === 'ready' || "
                     "document.querySelector('.mft').dataset.mftState === 'error'")
    assert browser.evaluate("document.querySelector('.mft').dataset.mftState") == "ready", \
        browser.evaluate("document.querySelector('.mft-status').textContent")
    browser.evaluate(f"(() => {{ const b = document.querySelector('.mft-input'); b.value = "
                     f"{SENTENCE!r}; document.querySelector('.mft-row select').value = '{beam}'; "
                     "document.querySelector('.mft-go').click(); })()")
    browser.wait_for("document.querySelector('.mft').dataset.mftState === 'translated' || "
                     "document.querySelector('.mft-status.mft-bad')")
    return {
        "output": browser.evaluate("document.querySelector('.mft-output').textContent"),
        "status": browser.evaluate("document.querySelector('.mft-status').textContent"),
        "sentences": browser.evaluate("document.querySelector('.mfx select').options.length"),
        "chosen": browser.evaluate("(() => { const s = document.querySelector('.mfx select'); "
                                   "return s.options[s.selectedIndex].textContent; })()"),
        "target": browser.evaluate("[...document.querySelectorAll('.mfx-tgt .mfx-tok')]"
                                   ".map(e => e.firstChild.textContent).join('')"),
        "cells": browser.evaluate("document.querySelectorAll('.mfx-heat .mfx-c').length"),
        "overflow": browser.evaluate("document.documentElement.scrollWidth > "
                                     "document.documentElement.clientWidth"),
    }


@pytest.mark.parametrize("width", [1280, 400])
def test_the_widget_translates_from_a_web_server_like_python(server, width):
    browser = Browser(width=width)
    try:
        got = use_the_widget(browser, server)
    finally:
        browser.close()
    assert got["output"] == python_translation(SENTENCE, 4), got
    assert got["sentences"] == 2 and got["chosen"].startswith("2. She said"), got
    assert got["target"].replace("<eos>", "").strip() != "" and got["cells"] > 10
    assert not got["overflow"], "the page scrolls sideways"
    assert browser.errors == []


def test_the_widget_works_from_a_file_copy_of_the_book_in_a_chapter_folder(site):
    """The page one folder down, as chapter 13 is: widget.js finds the engine and the weights
    beside itself, wherever the page that loads it sits."""
    browser = Browser()
    try:
        got = use_the_widget(browser, (site / "chapters" / "index.html").as_uri(), beam="1")
    finally:
        browser.close()
    assert got["output"] == python_translation(SENTENCE, 1), got
    assert browser.errors == []


def test_missing_weights_get_a_sentence_not_a_blank_widget(site, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(site, broken)
    for f in (broken / "_static" / "translator").glob("weights*"):
        f.unlink()
    browser = Browser()
    try:
        browser.goto((broken / "index.html").as_uri())
        browser.evaluate("document.querySelector('.mft-load').click()")
        browser.wait_for("document.querySelector('.mft').dataset.mftState === 'error'")
        status = browser.evaluate("document.querySelector('.mft-status').textContent")
    finally:
        browser.close()
    assert status.startswith("The translator could not be loaded") and "copy" in status


def test_an_over_long_input_gets_a_sentence(server):
    browser = Browser()
    try:
        browser.goto(server)
        browser.evaluate("document.querySelector('.mft-load').click()")
        browser.wait_for("document.querySelector('.mft').dataset.mftState === 'ready'")
        browser.evaluate("(() => { const b = document.querySelector('.mft-input'); "
                         "b.removeAttribute('maxlength'); b.value = 'word '.repeat(200); "
                         "document.querySelector('.mft-go').click(); })()")
        status = browser.evaluate("document.querySelector('.mft-status').textContent")
    finally:
        browser.close()
    assert "characters" in status and "Split it" in status
