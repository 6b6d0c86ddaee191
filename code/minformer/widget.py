"""The page translator: chapter 13's translator running in the reader's browser, with no kernel.

The engine is ``_static/translator/translator.js`` (the model in plain JavaScript, fed by
:func:`minformer.export.export_for_browser`); the widget around it is ``widget.js``. This module
writes what the book's pages need around those two files:

- :func:`page_translator_html`: the widget's HTML fragment, an input box and buttons that
  ``widget.js`` builds, around a cross-attention explorer (:mod:`minformer.explorer`) to which
  each of the reader's translations is added;
- :func:`write_page_fragment`: that fragment as ``_static/translator/widget.html``, which both the
  page "Translate in your browser" and chapter 13 include. Each page then loads ``widget.js`` with
  its own ``<script>`` tag, and the script finds the folder it came from (and so the engine and
  the weights beside it) from its own URL, so one fragment serves pages at any depth;
- :func:`write_english_data`: what ``english.js`` needs to give the page the command line's
  "does not look like English" warning (:func:`minformer.sentences.not_english_reason`): the
  English words the translator was trained on, and Python's own Unicode tables for the rule
  (which characters are letters and of what script, which make words, which are capitals, how
  each folds), as ``english-data.js``. Committed; ``make export-translator`` rewrites it;
- :func:`write_script_copies`: the export's weights as script files (``weights-NN.js``, base64),
  for a copy of the book opened from ``file://``, where browsers refuse ``fetch``. ``make book``
  writes them; they are not kept in git.
"""

from __future__ import annotations

import base64
import html
import json
import re
import sys
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from .explorer import attention_explorer_html
from .utils import data_dir

STATIC = data_dir().parent / "_static" / "translator"  # the book's static folder for the widget
CHUNK = 2 * 2**20  # bytes of weights per script file
PAGE_EXAMPLE = "The train leaves at eight, so we have to get up early."  # the explorer's first

_CSS = """
.mft{margin:1em 0}
.mft-ui{border:1px solid var(--mfx-line,#d0d7de);border-radius:8px;padding:12px;margin-bottom:8px;
 font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:15px}
.mft-label{display:block;font-weight:600;margin-bottom:4px}
.mft-input{width:100%;box-sizing:border-box;font:inherit;padding:6px;border-radius:4px;
 border:1px solid #8c959f;background:transparent;color:inherit;resize:vertical}
.mft-row{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:8px 0}
.mft-row button{font:inherit;padding:4px 12px;border-radius:6px;border:1px solid #8c959f;
 background:#f6f8fa;color:#1f2328;cursor:pointer}
.mft-row button:disabled{opacity:.55;cursor:default}
.mft-row button:focus-visible,.mft-input:focus-visible,.mft-row select:focus-visible{
 outline:2px solid #f59e0b;outline-offset:1px}
.mft-row select{font:inherit;font-size:14px}
.mft-progress{flex:1 1 120px;min-width:80px}
.mft-status{font-size:13px;color:#59636e;min-height:1.2em}
.mft-status.mft-bad{color:#cf222e}
.mft-output{font-size:17px;margin-top:6px;min-height:1.4em;font-weight:600}
html[data-theme=dark] .mft-row button{background:#2d333b;color:#e6edf3;border-color:#545d68}
html[data-theme=dark] .mft-status{color:#9198a1}
html[data-theme=dark] .mft-status.mft-bad{color:#ff7b72}
"""


def page_translator_html(examples: Sequence[dict], size: str = "15 MB",
                         example: str = "My brother, who lives in Madrid, is coming to visit us "
                                        "next month.") -> str:
    """The widget's HTML fragment: ``<div class="mft">`` holding its style and a cross-attention
    explorer of ``examples`` (as :func:`~minformer.explorer.attention_explorer_html` takes them).
    ``widget.js``, which a page loads after the fragment, builds the input box and buttons in it.
    size: the download the button announces; example: the sentence typed in the box."""
    for name, v in (("size", size), ("example", example)):
        if not isinstance(v, str):
            raise TypeError(f"{name} must be a str; got {type(v).__name__}")
    explorer = attention_explorer_html(examples, title="Cross-attention of your sentences "
                                                       "(the first is an example)")
    esc = html.escape
    return (f'<div class="mft tex2jax_ignore mathjax_ignore" data-size="{esc(size)}" '
            f'data-example="{esc(example)}"><style>{_CSS}</style>'
            '<noscript>The page translator needs JavaScript.</noscript>'
            f'{explorer}</div>')


def export_size(folder=None) -> str:
    """The size of the export's weights file in ``folder`` (default: the book's static folder),
    as the button announces it: "14.6 MB"."""
    folder = Path(folder) if folder is not None else STATIC
    return f"{_weights_path(folder).stat().st_size / 1e6:.1f} MB"


def _weights_path(folder: Path) -> Path:
    """The weights file that ``folder/model.json`` names: a plain file name in ``folder`` itself,
    never a path (``../secret``, ``/etc/passwd``) that would read a file outside it."""
    model_path = folder / "model.json"
    if not model_path.is_file():
        raise FileNotFoundError(f"{model_path} is missing: run `make export-translator` first")
    try:
        model = json.loads(model_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{model_path} is not JSON ({err}): run `make export-translator` "
                         "again") from None
    name = model.get("weights", {}).get("file") if isinstance(model, dict) and isinstance(
        model.get("weights"), dict) else None
    if not isinstance(name, str):
        raise ValueError(f"{model_path} names no weights file (model['weights']['file']); got "
                         f"{name!r}: run `make export-translator` again")
    if name in ("", ".", "..") or Path(name).name != name or "/" in name or "\\" in name:
        raise ValueError(f"{model_path} names the weights file {name!r}, which is not a file name "
                         f"in {folder}: the export only reads files beside model.json")
    path = folder / name
    if path.is_symlink() and path.resolve().parent != folder.resolve():
        raise ValueError(f"{path} is a link to {path.resolve()}, outside {folder}: the export "
                         "only reads files beside model.json")
    if not path.is_file():
        raise FileNotFoundError(f"{path}, the weights file that {model_path} names, is missing: "
                                "run `make export-translator` again")
    return path


FRAGMENT = "widget.html"  # the file the book's pages include


def write_page_fragment(examples: Sequence[dict] | None = None, folder=None,
                        size: str | None = None) -> Path:
    """Write :func:`page_translator_html` into ``folder`` (default: the book's static folder) as
    :data:`FRAGMENT`, and return its path. Defaults: the explorer starts with the shipped
    translator's beam-4 translation of :data:`PAGE_EXAMPLE`, and the button announces
    :func:`export_size`."""
    folder = Path(folder) if folder is not None else STATIC
    if examples is None:
        from .explorer import examples_from_translator
        from .translator import Translator

        examples = examples_from_translator(Translator.load(), [PAGE_EXAMPLE], beam_size=4)
    size = export_size(folder) if size is None else size
    path = folder / FRAGMENT
    path.write_text(page_translator_html(examples, size=size) + "\n", encoding="utf-8")
    return path


def write_script_copies(folder=None) -> list[Path]:
    """The export in ``folder`` (default: the book's static folder) as script files a page opened
    from ``file://`` can load: ``weights-00.js`` sets ``MinformerWeights.model`` (model.json) and
    ``.count``, and each ``weights-NN.js`` pushes one base64 chunk of the weights file, in order.
    Returns the paths written. The engine checks the weights' sha256 after joining them.

    The weights file must be a plain name beside model.json (a ``../`` or absolute path is
    refused, so nothing outside ``folder`` is read). Files are only overwritten under the exact
    names written; a stale ``weights-NN.js`` of an earlier, longer export is removed only if it
    starts as this function's files do, so a reader's own files are never deleted."""
    folder = Path(folder) if folder is not None else STATIC
    weights_path = _weights_path(folder)
    model = json.loads((folder / "model.json").read_text(encoding="utf-8"))
    weights = weights_path.read_bytes()
    chunks = [weights[i:i + CHUNK] for i in range(0, len(weights), CHUNK)] or [b""]
    head = _SCRIPT_HEAD
    written = {f"weights-{i:02d}.js" for i in range(len(chunks))}
    for old in folder.glob("weights-*.js"):
        # a stale chunk of an earlier, longer export; only files this function wrote (their
        # name and first line are its own) are removed, never a reader's own weights-*.js
        if old.name not in written and _SCRIPT_NAME.fullmatch(old.name) and _written_here(old):
            old.unlink()
    paths = []
    for i, chunk in enumerate(chunks):
        body = head
        if i == 0:
            body += (f"MinformerWeights.model = {json.dumps(model, separators=(',', ':'))};\n"
                     f"MinformerWeights.count = {len(chunks)};\n")
        body += f'MinformerWeights.chunks[{i}] = "{base64.b64encode(chunk).decode("ascii")}";\n'
        path = folder / f"weights-{i:02d}.js"
        path.write_text(body, encoding="ascii")
        paths.append(path)
    return paths


_SCRIPT_HEAD = ("var MinformerWeights = window.MinformerWeights = window.MinformerWeights || "
                "{chunks: []};\n")
_SCRIPT_NAME = re.compile(r"weights-\d{2,}\.js")


def _written_here(path: Path) -> bool:
    """Whether ``path`` starts as :func:`write_script_copies` writes its files."""
    try:
        with path.open("rb") as f:
            return f.read(len(_SCRIPT_HEAD)) == _SCRIPT_HEAD.encode("ascii")
    except OSError:
        return False


ENGLISH_DATA = "english-data.js"  # beside english.js, which holds the rule itself


def _ranges(values) -> list[list]:
    """[[first, last, value], ...]: the runs of equal, non-None ``values[c]`` over code points c."""
    runs = []
    for c, v in enumerate(values):
        if v is None:
            continue
        if runs and runs[-1][2] == v and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c, v])
    return runs


def english_data() -> dict:
    """What ``_static/translator/english.js`` needs to run :func:`~minformer.sentences.not_english_reason`
    exactly as Python does, with this Python's Unicode tables (a browser's own differ by version):

    - ``words``: :func:`~minformer.sentences.english_words`, sorted;
    - ``letters``: runs [first, last, k] of the code points that are letters (``str.isalpha``),
      ``scripts[k]`` naming their script as the warning does ("Cyrillic", "Cjk");
    - ``word``: runs [first, last] of the characters a word is made of (``[^\\W\\d_]``);
    - ``upper``: runs [first, last] of the capitals (``str.isupper``);
    - ``fold``: {code point: its ``str.casefold``} wherever that is not the character itself."""
    from .sentences import _script, english_words

    chars = [chr(c) for c in range(sys.maxunicode + 1)]
    names: dict[str, int] = {}
    letters = _ranges([names.setdefault(_script(ch).title(), len(names)) if ch.isalpha() else None
                       for ch in chars])
    word_char = re.compile(r"[^\W\d_]")
    return {
        "unicode": unicodedata.unidata_version,
        "words": sorted(english_words()),
        "scripts": list(names),
        "letters": letters,
        "word": [r[:2] for r in _ranges([True if word_char.match(ch) else None for ch in chars])],
        "upper": [r[:2] for r in _ranges([True if ch.isupper() else None for ch in chars])],
        "fold": {str(ord(ch)): ch.casefold() for ch in chars if ch.casefold() != ch},
    }


def english_data_script(data: dict | None = None) -> str:
    """:func:`english_data` as the script file ``english-data.js``."""
    data = english_data() if data is None else data
    return ("// Written by minformer.widget.write_english_data (make export-translator); do not edit.\n"
            "// The data of english.js: see minformer.widget.english_data.\n"
            "(typeof self !== 'undefined' ? self : globalThis).MinformerEnglishData = "
            + json.dumps(data, separators=(",", ":"), ensure_ascii=True) + ";\n")


def write_english_data(folder=None) -> Path:
    """:func:`english_data_script` as ``english-data.js`` in ``folder`` (default: the book's
    static folder); returns its path."""
    folder = Path(folder) if folder is not None else STATIC
    path = folder / ENGLISH_DATA
    path.write_text(english_data_script(), encoding="ascii")
    return path
