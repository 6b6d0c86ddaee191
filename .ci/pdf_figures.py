"""The PDF's stand-ins for the two things that only the web edition can show: screenshots of the
built HTML book in headless Chromium, written to _static/pdf/ (committed; `make pdf-figures`
after `make book` refreshes them when the pages change).

- explorer.png: chapter 13's cross-attention explorer, a Spanish token hovered;
- translator.png: the page translator (translate.md) after translating a sentence with beam 4,
  its explorer below, a token hovered;
- figure-<name>.png: the interactive figures (_static/figures/, one for each name in
  minformer.figures.FIGURES, found on its chapter's page), each
  at its start, as the page first shows it.
"""

from __future__ import annotations

import base64
import functools
import http.server
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from browser import CHROMIUM, Browser  # noqa: E402

from minformer import figures  # noqa: E402

HTML = Path(os.environ.get("BOOK_HTML") or ROOT / "_build" / "html")  # BOOK_HTML: another build
OUT = ROOT / "_static" / "pdf"
SENTENCE = "She said that she would call me when she arrived at the airport."


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(folder: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}"


HIDE = ("header, .bd-header, .bd-header-article, .skip-link, #pst-back-to-top,"
        " .header-article-items { display: none !important; }")


def prepare(browser: Browser, url: str) -> None:
    """Open url in a tall viewport, with the page's sticky headers hidden."""
    browser.send("Emulation.setDeviceMetricsOverride", width=1100, height=2400,
                 deviceScaleFactor=1, mobile=False)
    browser.goto(url, settle=1.5)
    browser.evaluate(f"(() => {{ const s = document.createElement('style'); s.textContent = "
                     f"{HIDE!r}; document.head.appendChild(s); }})()")


def rect(browser: Browser, selector: str, index: int = 0) -> dict:
    """The page-coordinate box of the index-th element matching selector."""
    return browser.evaluate(
        f"(() => {{ const e = document.querySelectorAll({selector!r})[{index}];"
        " const r = e.getBoundingClientRect();"
        " return {x: r.left, y: r.top, sx: window.scrollX, sy: window.scrollY,"
        " width: r.width, height: r.height}; })()")


def scroll_to(browser: Browser, selector: str, index: int = 0) -> None:
    browser.evaluate(f"document.querySelectorAll({selector!r})[{index}]"
                     ".scrollIntoView({block: 'start'})")
    browser.evaluate("new Promise(r => setTimeout(r, 300))")


def hover(browser: Browser, selector: str, index: int) -> None:
    r = rect(browser, selector, index)
    browser.send("Input.dispatchMouseEvent", type="mouseMoved",
                 x=r["x"] + r["width"] / 2, y=r["y"] + r["height"] / 2)


def shoot(browser: Browser, boxes: list[dict], path: Path, pad: int = 8) -> None:
    """A PNG of the union of boxes (from rect), 2 device pixels per CSS pixel."""
    left = min(b["x"] + b["sx"] for b in boxes) - pad
    top = min(b["y"] + b["sy"] for b in boxes) - pad
    right = max(b["x"] + b["sx"] + b["width"] for b in boxes) + pad
    bottom = max(b["y"] + b["sy"] + b["height"] for b in boxes) + pad
    shot = browser.send("Page.captureScreenshot", format="png", captureBeyondViewport=False,
                        clip={"x": left, "y": top, "width": right - left,
                              "height": bottom - top, "scale": 2})
    path.write_bytes(base64.b64decode(shot["data"]))
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KB)")


def explorer_figure(browser: Browser, base: str) -> None:
    prepare(browser, f"{base}/chapters/13_training_a_translator.html")
    scroll_to(browser, ".mfx", 0)
    hover(browser, ".mfx .mfx-tgt .mfx-tok", 2)
    shoot(browser, [rect(browser, ".mfx", 0)], OUT / "explorer.png")


def translator_figure(browser: Browser, base: str) -> None:
    prepare(browser, f"{base}/translate.html")
    browser.evaluate("document.querySelector('.mft-load').click()")
    browser.wait_for("document.querySelector('.mft').dataset.mftState === 'ready'", 120)
    browser.evaluate(f"(() => {{ document.querySelector('.mft-input').value = {SENTENCE!r};"
                     " document.querySelector('.mft-row select').value = '4';"
                     " document.querySelector('.mft-go').click(); })()")
    browser.wait_for("document.querySelector('.mft').dataset.mftState === 'translated'", 120)
    scroll_to(browser, ".mft")
    hover(browser, ".mfx .mfx-tgt .mfx-tok", 3)
    shoot(browser, [rect(browser, ".mft"), rect(browser, ".mfx")], OUT / "translator.png")


def _page(name: str) -> str:
    """A figure's page: "ch06-heads" is on chapters/06_*.html (one chapter, one page)."""
    (page,) = sorted((HTML / "chapters").glob(f"{name[2:4]}_*.html"))
    return f"chapters/{page.name}"


FIGURES = tuple(figures.FIGURES)  # every figure that figures.show draws


# On paper a figure is what it shows, not how it is worked: its controls (sliders, buttons) but
# not the values they show (chapter 4's "d_k = 64"), its title and its note, which say what to
# drag or slide, are left out of the still; a box of numbers shows as numbers.
WEB_ONLY = (".mff-controls > :not(.mff-out), .mff-title, .mff-note { display: none !important; }"
            " .mff input[type=number] { border-color: transparent !important; }")


def interactive_figures(browser: Browser, base: str, names=None) -> None:
    for name in FIGURES:
        if names and name not in names:
            continue
        prepare(browser, f"{base}/{_page(name)}")
        selector = f".mff[data-figure='{name}']"
        browser.wait_for(f"document.querySelector({selector!r})?.dataset.mffReady === '1'", 30)
        # every number drawn (chapter 4 draws its sample in steps after the page: '…' until then)
        browser.wait_for(f"!document.querySelector({selector!r}).querySelector('[aria-busy=true]')", 30)
        browser.evaluate(f"(() => {{ const s = document.createElement('style'); s.textContent = "
                         f"{WEB_ONLY!r}; document.head.appendChild(s); }})()")
        scroll_to(browser, selector)
        shoot(browser, [rect(browser, selector)], OUT / f"figure-{name}.png")


def main() -> int:
    if CHROMIUM is None:
        print("error: Chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    if not (HTML / "translate.html").is_file():
        print("error: no built book in _build/html: run `make book` first", file=sys.stderr)
        return 1
    # `python .ci/pdf_figures.py figures` refreshes some only: explorer, translator, figures;
    # `python .ci/pdf_figures.py figures ch01-attention ch04-scaling` only those figures
    wanted = {a for a in sys.argv[1:] if a not in FIGURES} or {"explorer", "translator", "figures"}
    names = {a for a in sys.argv[1:] if a in FIGURES}
    OUT.mkdir(parents=True, exist_ok=True)
    httpd, base = serve(HTML)
    browser = Browser(width=1100, height=900)
    try:
        for name, make in (("explorer", explorer_figure), ("translator", translator_figure),
                           ("figures", lambda b, u: interactive_figures(b, u, names))):
            if name in wanted:
                make(browser, base)
        for error in browser.errors:  # offline: MathJax's CDN, no favicon; shown, not fatal
            print(f"note: the page logged: {error}", file=sys.stderr)
    finally:
        browser.close()
        httpd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
