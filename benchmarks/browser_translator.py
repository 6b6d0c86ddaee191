"""The page translator's budgets, measured in headless Chromium from a local web server:
download size, seconds from the Load click to the first translation, a 10-word sentence greedy
and with beam 4 (the engine's own timer, in its Web Worker), the longest main-thread task while
translating, and the JS-vs-PyTorch speed ratio on the same sentence (PyTorch on one thread).

    python benchmarks/browser_translator.py        # prints a Markdown table
"""

from __future__ import annotations

import functools
import http.server
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

SENTENCE = "We should leave early tomorrow because the roads are busy."  # 10 words


def measure(repeats: int = 5) -> dict:
    import torch
    from browser import CHROMIUM, Browser

    from minformer.translator import Translator
    from minformer.widget import STATIC

    if CHROMIUM is None:
        raise SystemExit("Chromium is not installed (apt-get install chromium)")
    site = Path(tempfile.mkdtemp())
    shutil.copytree(STATIC, site / "_static" / "translator",
                    ignore=shutil.ignore_patterns("weights-*.js"))
    (site / "index.html").write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><link rel='icon' href='data:,'>"
        "</head><body>" + (STATIC / "widget.html").read_text(encoding="utf-8")
        + '<script src="_static/translator/widget.js"></script>' + "</body></html>",
        encoding="utf-8")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/index.html"
    b = Browser()
    try:
        b.goto(url)
        b.evaluate("window.__long = 0; new PerformanceObserver(l => l.getEntries().forEach(e => "
                   "{ window.__long = Math.max(window.__long, e.duration); }))"
                   ".observe({entryTypes: ['longtask']}); 1")
        t0 = time.perf_counter()
        b.evaluate(f"document.querySelector('.mft-input').value = {SENTENCE!r}; "
                   "document.querySelector('.mft-load').click(); 1")
        b.wait_for("document.querySelector('.mft').dataset.mftState === 'ready'", timeout=120)
        b.evaluate("document.querySelector('.mft-go').click(); 1")
        b.wait_for("document.querySelector('.mft').dataset.mftState === 'translated'", timeout=120)
        first = time.perf_counter() - t0
        b.evaluate("window.__long = 0; 1")  # loading is over: watch the translations alone
        times = {}
        for beam in ("1", "4"):
            ms = []
            for _ in range(repeats):
                b.evaluate("document.querySelector('.mft').dataset.mftState = 'busy'; "
                           f"document.querySelector('.mft-row select').value = '{beam}'; "
                           "document.querySelector('.mft-go').click(); 1")
                b.wait_for("document.querySelector('.mft').dataset.mftState === 'translated'")
                status = b.evaluate("document.querySelector('.mft-status').textContent")
                ms.append(float(status.split("Translated in ")[1].split(" s")[0]))
            times[beam] = statistics.median(ms)
        longest = b.evaluate("window.__long")
        errors = list(b.errors)
    finally:
        b.close()
        httpd.shutdown()
    torch.set_num_threads(1)
    tr = Translator.load()
    py = {}
    for beam in (1, 4):
        runs = []
        for _ in range(repeats):
            t = time.perf_counter()
            tr.translate([SENTENCE], beam_size=beam)
            runs.append(time.perf_counter() - t)
        py[beam] = statistics.median(runs)
    size = sum(f.stat().st_size for f in STATIC.iterdir() if f.name in ("weights.bin", "model.json",
                                                                        "translator.js"))
    return {"download_MB": size / 1e6, "first_s": first, "greedy_s": times["1"],
            "beam4_s": times["4"], "longest_main_task_ms": longest, "errors": errors,
            "py_greedy_s": py[1], "py_beam4_s": py[4]}


def table(m: dict) -> list[str]:
    """The measurements of :func:`measure` as Markdown table lines."""
    lines = [
        "| page translator (headless Chromium, local server) | measured | budget |",
        "|---|---:|---:|",
        f"| download (weights, model.json, engine) | {m['download_MB']:.1f} MB | ≤ 15 MB (fp16) |",
        f"| Load click to first translation | {m['first_s']:.2f} s | ≤ 2 s |",
        f"| 10-word sentence, greedy | {m['greedy_s']:.3f} s | ≤ 0.3 s |",
        f"| 10-word sentence, beam 4 | {m['beam4_s']:.3f} s | ≤ 1 s |",
        f"| longest main-thread task while translating (0: none over 50 ms) | "
        f"{m['longest_main_task_ms'] or 0:.0f} ms | ≤ 200 ms |",
        f"| JS / PyTorch time, greedy (PyTorch {m['py_greedy_s']:.3f} s, one thread) | "
        f"{m['greedy_s'] / m['py_greedy_s']:.2f}x | |",
        f"| JS / PyTorch time, beam 4 (PyTorch {m['py_beam4_s']:.3f} s, one thread) | "
        f"{m['beam4_s'] / m['py_beam4_s']:.2f}x | |",
    ]
    if m["errors"]:
        lines.append(f"\nconsole errors: {m['errors']}")
    return lines


def main() -> int:
    print("\n".join(table(measure())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
