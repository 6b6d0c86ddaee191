"""Publishing the book from another GitHub repository: ``make set-repository URL=...``.

The book's address is ``repository.url`` in ``_config.yml`` (the book's repository button, and
the Binder and Colab launch buttons, which Jupyter Book derives from it). Every chapter's setup
cell repeats it, in the text twin and in the notebook, because on Colab the cell clones the
repository (``tests/test_notebooks.py`` checks that they agree). :func:`set_repository` moves all
of them to a new address at once::

    python -m minformer.publish set-repository https://github.com/owner/name

``make set-repository URL=...`` hands the address over in an environment variable
(``--url-from-environment ARG_URL``), never pasted into a shell command line, so that quotes,
backticks and ``$(...)`` in it are text that :func:`parse_repository_url` refuses.

- :func:`parse_repository_url` checks an address (``https://github.com/<owner>/<name>``) and
  splits it into owner and name.
- :func:`current_repository_url` reads ``repository.url`` from ``_config.yml``.
- :func:`repository_forms` lists the spellings of one repository that can appear in a file: its
  GitHub address, its GitHub Pages site, Binder and Colab links, raw file links.
- :func:`covered_files` is where :func:`set_repository` looks: ``PLACES`` below
  (``tests/test_publish_kit.py`` checks that no other file of the repository holds the address).
- :func:`set_repository` replaces each form of the current repository by the same form of the
  new one in those files and returns the files it changed. Running it twice changes nothing the
  second time; running it back with the old address restores every file byte for byte.

Notebooks are edited as JSON (every string in them: cell sources, outputs, metadata) and written
back as nbformat writes them (``indent=1``, keys sorted, non-ASCII kept, a final newline), so
that the lines that do not hold the address stay byte for byte as they were. Other files are
edited as text, with their line endings kept.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

# Where the repository's address may live, relative to the repository's root.
PLACES = (
    "_config.yml",
    "_toc.yml",
    "*.md",                       # README, the introduction and the book's other pages
    ".binder/*",
    ".github/workflows/*.yml",
    ".github/workflows/*.yaml",
    "chapters/text/*.md",         # the setup cells' text twins
    "chapters/*.ipynb",           # ... and the notebooks
    "data/README.md",
)

# GitHub's rules: an owner is 1-39 letters, digits and single inner hyphens; a repository name
# is up to 100 letters, digits, '.', '-' and '_' (not '.' or '..').
_OWNER = r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
_NAME = r"[A-Za-z0-9._-]{1,100}"
_URL = re.compile(rf"https://github\.com/(?P<owner>{_OWNER})/(?P<name>{_NAME})")
_CONFIG_URL = re.compile(r"^repository:\s*\n\s+url:\s*(\S+)", re.M)


def parse_repository_url(url: str) -> tuple[str, str]:
    """``(owner, name)`` of ``https://github.com/<owner>/<name>``; ``ValueError`` naming the value
    for anything else (another host, http, a trailing slash or ``.git``, a path below the
    repository, characters GitHub does not allow)."""
    match = _URL.fullmatch(url) if isinstance(url, str) else None
    if match is None or match["name"] in (".", "..") or match["name"].endswith(".git"):
        raise ValueError(
            f"not a GitHub repository address: {url!r}; expected https://github.com/<owner>/<name>, "
            "for example https://github.com/someone/transformers-book (no trailing slash or .git)")
    return match["owner"], match["name"]


def current_repository_url(root: Path | str = REPO_ROOT) -> str:
    """``repository.url`` from ``root/_config.yml`` (read as tests/test_notebooks.py reads it)."""
    config = Path(root) / "_config.yml"
    if not config.is_file():
        raise FileNotFoundError(f"no _config.yml in {root}: give the book's root folder")
    match = _CONFIG_URL.search(config.read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f"{config} has no repository.url")
    return match.group(1)


def repository_forms(owner: str, name: str) -> list[str]:
    """The spellings of repository ``owner/name`` that files may hold, without the scheme: its
    address, its GitHub Pages site (the owner in lower case, as the host is), its Binder and Colab
    links and raw file links. A user or organization site (``<owner>.github.io``) is served at the
    host's root."""
    if name.lower() == f"{owner.lower()}.github.io":
        pages = f"{owner.lower()}.github.io"
    else:
        pages = f"{owner.lower()}.github.io/{name}"
    return [
        f"github.com/{owner}/{name}",
        pages,
        f"mybinder.org/v2/gh/{owner}/{name}",
        f"colab.research.google.com/github/{owner}/{name}",
        f"raw.githubusercontent.com/{owner}/{name}",
    ]


def covered_files(root: Path | str = REPO_ROOT) -> list[Path]:
    """The files :func:`set_repository` edits when they hold the address: ``PLACES`` under
    ``root``, sorted."""
    root = Path(root)
    found = {path for pattern in PLACES for path in root.glob(pattern) if path.is_file()}
    return sorted(found)


def _replacer(old_forms: list[str], new_forms: list[str]):
    # One pass over the text, so that no replacement is replaced again. A whole form, not the
    # start of a longer name: "github.com/o/book" leaves "github.com/o/bookshelf" alone but moves
    # "github.com/o/book.git", "github.com/o/book/tree/main" and "github.com/o/book." ending a
    # sentence.
    new_of = dict(zip(old_forms, new_forms))
    alternatives = "|".join(re.escape(f) for f in sorted(new_of, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w-])(?:{alternatives})(?=\.git\b|(?![\w-]|\.[\w-]))")
    return lambda text: pattern.sub(lambda match: new_of[match.group()], text)


def _replace_in_json(value, replace):
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_replace_in_json(v, replace) for v in value]
    if isinstance(value, dict):
        return {k: _replace_in_json(v, replace) for k, v in value.items()}
    return value


def _notebook_text(notebook) -> str:
    return json.dumps(notebook, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def set_repository(url: str, root: Path | str = REPO_ROOT) -> list[Path]:
    """Move the book at ``root`` to the GitHub repository ``url``: every form of the current
    address (``_config.yml``'s ``repository.url``) in :func:`covered_files` becomes the same form
    of ``url``. Returns the files changed, relative to ``root`` (none when ``url`` is already the
    address). ``ValueError`` for an address :func:`parse_repository_url` rejects, before any file
    is touched."""
    root = Path(root)
    new_owner, new_name = parse_repository_url(url)
    old_url = current_repository_url(root)
    try:
        old_owner, old_name = parse_repository_url(old_url)
    except ValueError as error:
        raise ValueError(f"{root / '_config.yml'}: repository.url: {error}") from None
    if (old_owner, old_name) == (new_owner, new_name):
        return []
    replace = _replacer(repository_forms(old_owner, old_name), repository_forms(new_owner, new_name))

    edits = {}
    for path in covered_files(root):
        text = path.read_bytes().decode("utf-8")
        if path.suffix == ".ipynb":
            if replace(text) == text:
                continue
            changed = _notebook_text(_replace_in_json(json.loads(text), replace))
        else:
            changed = replace(text)
        if changed != text:
            edits[path] = changed
    # every file is worked out before the first is written: an unreadable one stops it all
    for path, text in edits.items():
        path.write_bytes(text.encode("utf-8"))
    if current_repository_url(root) != url:
        raise RuntimeError(f"{root / '_config.yml'}: repository.url is not {url} after the change; "
                           "is it written as `url: https://github.com/<owner>/<name>`?")
    return [path.relative_to(root) for path in edits]


def _main(argv) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minformer.publish",
        description="Prepare the book for publishing from another repository.")
    commands = parser.add_subparsers(dest="command", required=True)
    move = commands.add_parser(
        "set-repository",
        help="change the repository's address everywhere it lives (_config.yml, setup cells, "
             "links)")
    move.add_argument("url", nargs="?", help="https://github.com/<owner>/<name>")
    move.add_argument("--url-from-environment", metavar="NAME",
                      help="read the address from the environment variable NAME instead (how "
                           "`make set-repository URL=...` passes it: through no shell)")
    move.add_argument("--root", type=Path, default=REPO_ROOT,
                      help="the book's repository (default: %(default)s)")
    args = parser.parse_args(argv)
    if (args.url is None) == (args.url_from_environment is None):
        parser.error("give the address or --url-from-environment NAME: exactly one of them")
    if args.url_from_environment is not None:
        args.url = os.environ.get(args.url_from_environment, "")

    try:
        changed = set_repository(args.url, args.root)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    if not changed:
        print(f"The repository is already {args.url}: nothing to change.")
        return 0
    print(f"The repository is now {args.url}; changed {len(changed)} files:")
    for path in changed:
        print(f"  {path}")
    return 0


def main(argv=None) -> int:
    """The command line; a closed or full standard output, or Ctrl-C, ends it with one line
    (:func:`minformer.utils.run_command`)."""
    from .utils import run_command

    return run_command(_main, "python -m minformer.publish", argv)


if __name__ == "__main__":
    sys.exit(main())
