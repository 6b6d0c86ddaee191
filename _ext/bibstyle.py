"""A pybtex style whose bibliography labels read like the citations in the text.

The chapters cite author–year (``bibtex_reference_style: author_year``: "Vaswani et al., 2017"),
but pybtex's default label style prints alpha labels ("[VSP+17]") in the bibliography, so a
reader cannot match the two. Style ``authoryear`` labels every entry "Vaswani et al., 2017";
two works of the same authors and year are told apart by their ``year`` field ("2013a").
"""

from pybtex.plugin import register_plugin
from pybtex.richtext import Text
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.sorting.author_year_title import SortingStyle


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


def setup(app):
    register_plugin("pybtex.style.formatting", "authoryear", AuthorYearStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
