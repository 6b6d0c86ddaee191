"""Hygiene of the chapters: the stored notebooks are what nbval re-runs and the book shows.

Reads JSON only (fast); nbval itself re-executes every cell in `make test`.
"""

import json
import re
from pathlib import Path

import jupytext
import pytest

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "chapters").glob("*.ipynb"))
IDS = [p.stem for p in CHAPTERS]
# an absolute path of three or more parts outside a URL: differs between machines
MACHINE_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.-]+/){2,}[\w.-]+")
# a stored notebook above this is bloated (figures at too high a resolution, long logs)
MAX_BYTES = 2 * 1024 * 1024
# cell metadata that execution writes and a twin does not carry
RUNTIME_METADATA = {"execution", "collapsed", "scrolled"}


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code"]


def source(cell):
    return "".join(cell["source"])


def tags(cell):
    return set(cell.get("metadata", {}).get("tags", []))


def output_text(out):
    if out["output_type"] == "stream":
        return "".join(out["text"])
    if out["output_type"] == "error":
        return out["ename"] + ": " + out["evalue"]
    return "".join("".join(v) if isinstance(v, list) else str(v)
                   for k, v in out.get("data", {}).items() if k.startswith("text/"))


def repository_url():
    config = (REPO / "_config.yml").read_text()
    match = re.search(r"^repository:\s*\n\s+url:\s*(\S+)", config, re.M)
    assert match, "_config.yml has no repository.url"
    return match.group(1)


def test_there_are_chapters():
    assert CHAPTERS, "no notebooks in chapters/"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_executed_in_order_in_one_fresh_kernel(path):
    counts = [c["execution_count"] for c in code_cells(load(path))]
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts}; run `make execute NB={path.relative_to(REPO)}`")


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_stored_error_unless_tagged(path):
    for i, cell in enumerate(code_cells(load(path))):
        errors = [o for o in cell["outputs"] if o["output_type"] == "error"]
        if "raises-exception" in tags(cell):
            assert errors, f"{path.name} code cell {i} is tagged raises-exception but raised nothing"
        else:
            assert not errors, f"{path.name} code cell {i} stored an error: {errors[0]['ename']}"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_listed_in_toc(path):
    toc = (REPO / "_toc.yml").read_text()
    assert f"file: chapters/{path.stem}\n" in toc + "\n", f"{path.name} is not in _toc.yml"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_no_machine_paths_in_outputs(path):
    for i, cell in enumerate(code_cells(load(path))):
        for out in cell["outputs"]:
            match = MACHINE_PATH.search(output_text(out))
            assert not match, f"{path.name} code cell {i} shows a machine path: {match.group()}"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_setup_cell_first_and_uses_the_repository_url(path):
    first = source(code_cells(load(path))[0])
    assert first.lstrip().startswith("# Setup"), f"{path.name}: the first code cell is not the setup cell"
    assert f'REPO_URL = "{repository_url()}"' in first, (
        f"{path.name}: the setup cell must clone _config.yml's repository.url ({repository_url()})")
    assert '"google.colab" in sys.modules' in first


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_exercises_follow_the_pattern(path):
    nb = load(path)
    cells = nb["cells"]
    markdown = [source(c) for c in cells if c["cell_type"] == "markdown"]
    assert sum("{exercise}" in m for m in markdown) >= 3, f"{path.name}: fewer than 3 exercises"
    starts = [i for i, c in enumerate(cells)
              if c["cell_type"] == "markdown" and "{solution-start}" in source(c)]
    assert starts, f"{path.name}: no code exercise (gated solution)"
    for i in starts:
        stub, solution, end, check = cells[i - 1], cells[i + 1], cells[i + 2], cells[i + 3]
        assert stub["cell_type"] == "code" and "raises-exception" in tags(stub)
        assert "NotImplementedError" in source(stub)
        assert solution["cell_type"] == "code" and "{solution-end}" in source(end)
        assert check["cell_type"] == "code" and "check_" in source(check), (
            f"{path.name}: the cell after a solution must call a minformer.checks checker")
        assert any("✓" in output_text(o) for o in check["outputs"]), (
            f"{path.name}: the check after cell {i} did not pass on the solution")


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_ignored_outputs_are_followed_by_an_assertion(path):
    cells = code_cells(load(path))
    ignored = [i for i, c in enumerate(cells) if "nbval-ignore-output" in tags(c)]
    assert len(ignored) <= max(2, len(cells) // 8), f"{path.name}: too many nbval-ignore-output cells"
    for i in ignored:
        nxt = source(cells[i + 1]) if i + 1 < len(cells) else ""
        assert "assert" in nxt, (
            f"{path.name} code cell {i} ignores its output but the next cell asserts nothing")


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_plots_end_with_show(path):
    for i, cell in enumerate(code_cells(load(path))):
        src = source(cell)
        if "plt." in src and ("plt.subplots" in src or "plt.figure" in src):
            assert "plt.show()" in src, f"{path.name} code cell {i} draws but never calls plt.show()"


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_stored_size_stays_reasonable(path):
    size = path.stat().st_size
    assert size < MAX_BYTES, f"{path.name}: {size // 1024} KiB stored (limit {MAX_BYTES // 1024})"


def test_every_notebook_has_a_twin_and_every_twin_a_notebook():
    twins = {p.stem for p in (REPO / "chapters" / "text").glob("*.md")}
    notebooks = set(IDS)
    assert notebooks - twins == set(), f"notebooks without a text twin: {sorted(notebooks - twins)}"
    assert twins - notebooks == set(), (
        f"twins without a notebook: {sorted(twins - notebooks)} (run `make execute NB=...`)")


def _cell_key(cell):
    metadata = {k: v for k, v in dict(cell.get("metadata", {})).items()
                if k not in RUNTIME_METADATA}
    return cell["cell_type"], source(cell) if isinstance(cell["source"], list) else cell["source"], metadata


@pytest.mark.parametrize("path", CHAPTERS, ids=IDS)
def test_notebook_agrees_with_its_text_twin(path):
    twin = REPO / "chapters" / "text" / f"{path.stem}.md"
    if not twin.exists():
        pytest.skip("no twin (reported by the test above)")
    stored = [_cell_key(c) for c in load(path)["cells"]]
    written = [_cell_key(c) for c in jupytext.read(twin)["cells"]]
    hint = f"edit the twin and run `make execute NB=chapters/{path.name}`"
    assert len(stored) == len(written), (
        f"{path.name} has {len(stored)} cells, its twin {len(written)}: {hint}")
    for i, (a, b) in enumerate(zip(stored, written)):
        assert a == b, f"{path.name} cell {i} differs from its twin ({a[0]}: {a[1][:60]!r}): {hint}"
