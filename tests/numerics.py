"""The numeric environment pinned in the Makefile (its NUMERICS variable), read from there."""

import re
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


def pinned_numerics() -> dict[str, str]:
    """{variable: value} of the Makefile's ``NUMERICS := A=a B=b ...`` (continued lines too)."""
    text = MAKEFILE.read_text()
    match = re.search(r"^NUMERICS\s*:=((?:.*\\\n)*.*)$", text, re.M)
    if not match:
        raise RuntimeError("the Makefile defines no NUMERICS := ... line")
    return dict(pair.split("=", 1) for pair in match.group(1).replace("\\\n", " ").split())


def mismatches(environ) -> list[str]:
    """The pinned variables that ``environ`` lacks or sets differently, as readable lines."""
    return [f"{k}={environ.get(k, '(unset)')} (pinned: {v})"
            for k, v in pinned_numerics().items() if environ.get(k) != v]
