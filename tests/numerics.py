"""The numeric environment pinned in the Makefile (its NUMERICS variable), read from there."""

import re
from pathlib import Path

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


ALTERNATIVES = ("NUMERICS_ALT_AVX512", "NUMERICS_ALT_PORTABLE")


def pinned_numerics(name: str = "NUMERICS") -> dict[str, str]:
    """{variable: value} of the Makefile's ``NUMERICS := A=a B=b ...`` (continued lines too);
    a name of ALTERNATIVES: one of the second environments `make test-alt ALT=avx512|portable`
    checks the chapters in."""
    text = MAKEFILE.read_text()
    match = re.search(rf"^{name}\s*:=((?:.*\\\n)*.*)$", text, re.M)
    if not match:
        raise RuntimeError(f"the Makefile defines no {name} := ... line")
    return dict(pair.split("=", 1) for pair in match.group(1).replace("\\\n", " ").split())


def mismatches(environ, name: str = "NUMERICS") -> list[str]:
    """The pinned variables that ``environ`` lacks or sets differently, as readable lines."""
    return [f"{k}={environ.get(k, '(unset)')} (pinned: {v})"
            for k, v in pinned_numerics(name).items() if environ.get(k) != v]
