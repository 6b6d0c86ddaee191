"""The chapters with their prose solutions run where a reader runs them.

A prose solution (a ``{solution}`` directive in a markdown cell) often holds a ```` ```python ````
block that a reader copies into a cell and runs, right there in the notebook, with the chapter's
names as they stand at that point. A review found one that crashed when run so: chapter 8's
``ex-causal`` called ``layer(X, mask)`` after a later cell had rebound ``X`` to another shape.
nbval cannot see this, since these blocks are markdown.

``python tests/solutions_edition.py OUT`` writes ``OUT/NN_topic.ipynb`` for every chapter: the
chapter's cells unchanged, and after each markdown cell that holds a prose solution, one code
cell per python block of that solution, tagged ``nbval-ignore-output`` (a reader's numbers vary
with the machine; what matters is that the block runs). ``make test-alt`` runs nbval on these
notebooks instead of ``chapters/``: every solution block must run without an error in notebook
order, and every stored output after it must still compare, so a solution that rebinds a name
the chapter uses later fails too. A block that is not meant to run as it stands (a sketch with
``...``) is fenced as ```` ```text ```` or marked ```` ```python ```` with a first line
``# not run``.
"""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"

# A {solution} directive (not solution-start/-end, whose code is already code cells) and its body:
# the fence of 3 or more backticks or colons that opened it closes it.
SOLUTION = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                      re.MULTILINE | re.DOTALL)
PYTHON = re.compile(r"^(?P<fence>`{3,})python[ \t]*\n(?P<code>.*?)^(?P=fence)[ \t]*$",
                    re.MULTILINE | re.DOTALL)
NOT_RUN = "# not run"

# The chapters' own conftest (the numeric environment's guard), loaded from chapters/.
CONFTEST = f'''"""Written by tests/solutions_edition.py: chapters/conftest.py applies here too."""
import importlib.util

_spec = importlib.util.spec_from_file_location("chapters_conftest", {str(CHAPTERS / "conftest.py")!r})
_chapters = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_chapters)
pytest_configure = _chapters.pytest_configure
pytest_report_header = _chapters.pytest_report_header
'''


def solution_blocks(markdown: str) -> list[tuple[str, str]]:
    """(label, code) of every python block inside a prose solution of one markdown cell."""
    blocks = []
    for solution in SOLUTION.finditer(markdown):
        header = markdown[solution.start():markdown.index("\n", solution.start())]
        label = header.split("}", 1)[1].strip()
        for block in PYTHON.finditer(solution.group("body")):
            code = block.group("code")
            if code.lstrip().startswith(NOT_RUN):
                continue
            blocks.append((label, code))
    return blocks


def _code_cell(label: str, code: str, like: dict) -> dict:
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"tags": ["nbval-ignore-output"], "solution_of": label},
        "outputs": [],
        "source": f"# the prose solution of {label}, run where a reader runs it\n{code}",
    }
    if "id" in like:
        cell["id"] = f"{like['id']}-solution"[:64]
    return cell


def with_solutions(nb: dict) -> tuple[dict, int]:
    """A copy of the notebook with every prose solution's python blocks as code cells."""
    nb = copy.deepcopy(nb)
    cells, added = [], 0
    for cell in nb["cells"]:
        cells.append(cell)
        if cell["cell_type"] == "markdown":
            for k, (label, code) in enumerate(solution_blocks("".join(cell["source"]))):
                new = _code_cell(label, code, cell)
                if k:
                    new["id"] = f"{new.get('id', label)}-{k}"[:64]
                cells.append(new)
                added += 1
    nb["cells"] = cells
    return nb, added


def write(out: Path) -> dict[str, int]:
    """Write every chapter with its solutions into ``out``; {chapter: blocks added}."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.ipynb"):
        old.unlink()
    (out / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    counts = {}
    for path in sorted(CHAPTERS.glob("[0-9][0-9]_*.ipynb")):
        nb, added = with_solutions(json.loads(path.read_text(encoding="utf-8")))
        (out / path.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n",
                                     encoding="utf-8")
        counts[path.stem] = added
    return counts


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python tests/solutions_edition.py OUT_DIR", file=sys.stderr)
        return 2
    counts = write(Path(argv[0]))
    print(f"chapters with their prose solutions in {argv[0]}: "
          f"{sum(counts.values())} solution blocks in {len(counts)} chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
