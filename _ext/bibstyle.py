"""A pybtex style whose bibliography labels read like the citations in the text.

The chapters cite author–year (``bibtex_reference_style: author_year``: "Vaswani et al., 2017"),
but pybtex's default label style prints alpha labels ("[VSP+17]") in the bibliography, so a
reader cannot match the two. Style ``authoryear`` labels every entry "Vaswani et al., 2017";
two works of the same authors and year are told apart by their ``year`` field ("2013a").

Inline TeX math in a field (``Self-attention Does Not Need {$O(n^2)$} Memory``) is written as
text, "O(n²)", before the entry is formatted: pybtex would print the dollars and the caret as
they are, in the bibliography and in every citation's tooltip (a ``title`` attribute, where
MathJax cannot reach), and in the PDF.
"""

import re

from pybtex.database import Entry
from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle


_SUPERSCRIPT = dict(zip("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ"))
_SUBSCRIPT = dict(zip("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎"))
_SYMBOLS = {"cdot": "·", "times": "×", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "sqrt": "√",
            "infty": "∞", "approx": "≈", "ne": "≠", "to": "→", "alpha": "α", "beta": "β",
            "epsilon": "ε", "lambda": "λ", "mu": "μ", "sigma": "σ", "theta": "θ", "ell": "ℓ"}


def _script(text: str, table: dict, mark: str) -> str:
    """``text`` in superscript (or subscript) characters, or ``mark`` + text where one has none."""
    if all(ch in table for ch in text):
        return "".join(table[ch] for ch in text)
    return f"{mark}({text})" if len(text) > 1 else mark + text


def math_as_text(tex: str) -> str:
    """The inside of ``$...$`` as plain text: ``O(n^2)`` → ``O(n²)``, ``\\log n`` → ``log n``."""
    out = re.sub(r"\\([A-Za-z]+)\s*", lambda m: _SYMBOLS.get(m[1], m[1]) + (
        " " if m[1] not in _SYMBOLS else ""), tex)  # \log n → "log n", \sqrt → √
    for mark, table in (("^", _SUPERSCRIPT), ("_", _SUBSCRIPT)):
        out = re.sub(re.escape(mark) + r"(?:\{([^{}]*)\}|(\S))",
                     lambda m, t=table, k=mark: _script(m[1] if m[1] is not None else m[2], t, k), out)
    return out.replace("{", "").replace("}", "").replace("\\", "").strip()


def text_fields(entry) -> Entry:
    """A copy of ``entry`` whose fields have their ``$...$`` math written as text."""
    fields = {k: re.sub(r"\$([^$]*)\$", lambda m: math_as_text(m[1]), v)
              for k, v in entry.fields.items()}
    if fields == dict(entry.fields):
        return entry
    copy = Entry(entry.type, fields=fields, persons=entry.persons)
    copy.key = entry.key
    return copy


def _last_name(person) -> str:
    return Text.from_latex(" ".join(person.prelast_names + person.last_names)).render_as("text")


def author_year_label(entry) -> str:
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last_name(p) for p in persons]
    if not names:
        who = Text.from_latex(entry.fields.get("organization", entry.key)).render_as("text")
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year_label(entry)


class AuthorYearStyle(UnsrtStyle):
    default_label_style = AuthorYearLabelStyle
    default_sorting_style = SortingStyle

    def format_entry(self, label, entry, bib_data=None):
        return super().format_entry(label, text_fields(entry), bib_data=bib_data)


def setup(app):
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
