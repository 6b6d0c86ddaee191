"""Every number in a chapter's prose must come from something the chapter checks.

A review found prose that had drifted from the outputs it describes ("fell from 0.42 s to
0.13 s" over outputs of 0.49 s and 0.17 s; "1,009 steps" over 968). This module finds such
numbers in the stored notebooks (JSON only, nothing is executed). `tests/test_prose_numbers.py`
runs it per chapter; `python tests/prose_numbers.py [REPORT.md]` writes a report of every flag.

**Prose** is the markdown cells. Before numbers are read, these are blanked out (replaced by
spaces, so that a flag can quote the original sentence): math (`$...$`, `$$...$$`, `\\(...\\)`,
`\\[...\\]`, ```` ```{math} ```` blocks), inline code, MyST roles with their content ({cite}`...`,
{doc}`...`, {ref}`...`, {numref}`...`, any {role}`...`), the target of a markdown link or image
(`[kept](blanked)`), bare URLs, footnote labels, HTML tags and comments, fence lines (a
directive's title is kept: ```` ```{exercise} Title ````, `:::{admonition} Hint 1`), directive
option lines (`:label:`, `:class:`), MyST comment lines (`% ...`, read for declarations, rule c)
and fenced code blocks inside markdown (not prose: their literals count as code, rule b).

**Numbers read** from prose: decimals (29.4, 0.42), scientific (3.6e-07), thousands separators
(1,009), percents (93%, 5.7 %, 5 percent; the 97 of "97–99%" too), integers, ratios (2.8x) and
units glued on (10ms). Scales: "32k" stands for 32,000 or 32 x 1,024 = 32,768, "1.75 million"
for 1,750,000 ("thousand", "million", "billion", "M" likewise). A number followed by a unit of
time (s, ms, min, seconds, minutes, h, hours) is a *timing*: only a printed timing (a number
followed by such a unit) or a code literal supports it, not any other printed number that
happens to be equal. Signs are ignored (prose says "0.19 below", outputs print -0.19).
**Not read** (not measurements):

- integers below 10 (counts written in digits: "k = 4", "8 heads"); decimals and percents count;
- a number after a reference word, or a list of numbers after one: chapter(s), section(s),
  part(s), exercise(s), figure(s)/fig., table(s), equation(s)/eq./eqs., appendix, §, and the
  index words layer, head, row, column, line, page, item, id(s), token (singular), position(s)
  ("layer 12", "chapters 4, 5 and 12", "id 1,234", "token 129"). Step words (step, steps, epoch)
  are *not* reference words: "1,009 steps" and "by step 800" are measurements;
- years: 1900-2099 after in/since/until/by/from/before/after/around/circa/year/et al., or alone
  in parentheses "(2017)"; decades ("the 1960s");
- versions: a number with two dots (2.13.0), or a decimal after Python/PyTorch/torch/NumPy/CUDA/
  version/v;
- parts of names: glued to a letter or underscore before it (x1, float32, d_128, word2vec), after
  a word and a hyphen (GPT-2, WikiText-103, AVX-512, top-5), before "-bit" (64-bit floats), or
  with letters after it that are no unit (Mistral 7B, 70B, 1st, 2D);
- ordered-list markers at the start of a line ("10. ").

**Supported** numbers. A prose number v written with rounding unit q (q = 0.01 for "0.42", 1 for
"968") matches a value x when |x - v| <= q/2, i.e. when x rounded to the prose's decimals is v
(29.43 -> "29.4", 0.4931 -> "0.49", 1009 -> "1,009").

a. a number printed by a code cell that nbval compares: a cell without the `nbval-ignore-output`
   tag; its stream text (stdout and stderr), text/plain and text/html (tags, style and script
   removed; figure reprs ignored). A prose percent p% matches a printed percent p% or a printed
   fraction p/100 (0.933 matches "93%" and "93.3%"), never a plain printed p (a count). Not
   compared, and so run-dependent even in a compared cell: spans that a sanitizer of
   `nbval_sanitize.cfg` replaces (timings such as "0.49 s") and tqdm progress lines (which steps
   they show depends on the clock);
b. a numeric literal in the source of any code cell of the chapter (Python NUMBER tokens; comments
   and strings excluded): constants such as 1400 or 0.1, the bounds of `assert 0.4 < x < 0.6`;
   also the literals of fenced code blocks in the prose. Up to the same rounding; a percent
   matches a literal fraction p/100 only;
c. a declaration in the same markdown cell, a MyST comment line
   `% prose-numbers: 31.9 31.8 (source: Vaswani et al. 2017, table 2)`: the author states that
   these numbers come from outside the page, and from where. Values compare exactly
   (1,009 == 1009). A declaration without a non-empty "source: ..." after its numbers is itself
   flagged ("declaration without source").

**Ranges.** Two prose numbers joined as a range ("between 0.25 and 0.45", "from 530 to 590",
"0.285–0.380") are read as a pair as well, and flagged even when each end is supported:

d. **assertion band as range**: both ends are numbers of one `assert` statement (its bounds) and
   neither is printed by a compared cell nor declared in the markdown cell. A band that an
   assertion allows is the test's business; the prose gives the spread the runs measured;
e. **wider than measured**: the markdown cell declares a measured range,
   `% prose-numbers: 540-572 (source: seeds 0-4, ...)`, and the prose range contains it and is
   wider (quoting "between 530 and 590" for runs that gave 540-572), unless that wider range is
   declared too (the spread over more runs, which its source names).

A number that matches only run-dependent outputs (cells tagged `nbval-ignore-output`, sanitized
spans, progress lines) is flagged **run-dependent**: if it quotes one machine's run exactly, state
it as a range that an assertion checks. Everything else is flagged **unsupported**.

Limits: a number is matched by value anywhere in the chapter, not to the output it describes, so
prose that swaps two printed numbers ("gains 2.5 and 2.1" over a table of 2.1 and 3.0) is caught
only for the number that is printed nowhere; and a prose number may coincide with an unrelated
printed one.
"""

from __future__ import annotations

import ast
import bisect
import configparser
import io
import json
import re
import sys
import tokenize
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHAPTER_DIR = REPO / "chapters"
SANITIZE_CFG = REPO / "nbval_sanitize.cfg"
IGNORE_TAG = "nbval-ignore-output"

UNSUPPORTED = "unsupported"
RUN_DEPENDENT = "run-dependent"
BAD_DECLARATION = "declaration without source"
BAND_AS_RANGE = "assertion band as range"
WIDER_THAN_MEASURED = "wider than measured"
WHY = {
    UNSUPPORTED: "no compared output, code literal or `% prose-numbers:` declaration gives this number",
    RUN_DEPENDENT: "matches only run-dependent outputs (nbval-ignore-output cells, sanitized timings, progress"
    " bars): it quotes a run-dependent output exactly; state it as a range that an assertion checks",
    BAD_DECLARATION: "a `% prose-numbers:` line needs '(source: ...)' after its numbers",
    BAND_AS_RANGE: "both ends of this range are the bounds of one assertion, which is the test's business,"
    " not a measured spread: give the range the runs measured (printed, or declared with its source)",
    WIDER_THAN_MEASURED: "this range contains the measured range declared in its cell (`% prose-numbers: A-B"
    " (source: ...)`) and is wider: quote the measured one",
}

# ---------------------------------------------------------------------------------------------
# blanking what is not prose


def _blank(match: re.Match) -> str:
    """Spaces for the match, newlines kept, so offsets into the original text stay valid."""
    return re.sub(r"[^\n]", " ", match.group(0))


def _blank_group(name: str):
    def repl(match: re.Match) -> str:
        start, end = match.span(name)
        s0 = match.start()
        text = match.group(0)
        return text[: start - s0] + re.sub(r"[^\n]", " ", text[start - s0 : end - s0]) + text[end - s0 :]

    return repl


FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*(?:(?:\d+[.)]|[-*+])[ \t]+)?)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
COLON_FENCE = re.compile(r"^[ \t]*:{3,}(?P<rest>.*)$")
OPTION_LINE = re.compile(r"^[ \t]*:[\w-]+:.*$")
DIRECTIVE_NAME = re.compile(r"^\s*\{[\w:-]+\}")
NON_PROSE_DIRECTIVES = {"math", "code", "code-block", "code-cell", "raw", "literalinclude", "mermaid"}

PATTERNS_TO_BLANK = [
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"\{[\w:-]+\}(`+).*?\1", re.S),  # MyST roles with their content
    re.compile(r"(`+).+?\1", re.S),  # inline code
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"\\\[.*?\\\]", re.S),
    re.compile(r"\\\(.*?\\\)", re.S),
    re.compile(r"(?<![\\$])\$(?!\s)[^$]+?(?<![\s\\])\$(?!\d)"),  # inline math
    re.compile(r"\[\^[^\]]*\]"),  # footnote labels
    re.compile(r"https?://\S+|www\.\S+"),  # bare URLs
    re.compile(r"</?[A-Za-z][^>\n]*>"),  # HTML tags and autolinks
]
LINK_TARGET = re.compile(r"\](?P<target>\([^)\n]*\)|\[[^\]\n]*\])")


def _keep_title(line: str, title: str) -> str:
    """A fence line blanked but for its directive's title, which stays where it was."""
    title = title.strip()
    at = line.rfind(title) if title else len(line)
    return " " * at + line[at:]


def split_markdown(source: str) -> tuple[str, list[str], list[str]]:
    """(prose with non-prose blanked, code blocks inside the markdown, MyST comment lines)."""
    lines = source.split("\n")
    out: list[str] = []
    code_blocks: list[str] = []
    comments: list[str] = []
    fence: str | None = None  # the fence that opened a non-prose block
    directives: list[str] = []  # fences of the open directives with prose inside
    block: list[str] = []
    for line in lines:
        if fence is not None:  # inside a code or math block: not prose
            closing = line.strip()
            if closing.startswith(fence) and closing.strip(fence[0]) == "":
                fence = None
                code_blocks.append("\n".join(block))
                block = []
            else:
                block.append(line)
            out.append(" " * len(line))
            continue
        opened = FENCE_OPEN.match(line)
        if opened:
            info = opened.group("info").strip()
            name = DIRECTIVE_NAME.match(info)
            directive = name.group(0).strip()[1:-1] if name else None
            mark = opened.group("fence")
            if not info and directives and mark[0] == directives[-1][0] and len(mark) >= len(directives[-1]):
                directives.pop()  # the end of a directive
                out.append(" " * len(line))
                continue
            if directive is None or directive in NON_PROSE_DIRECTIVES:
                fence = mark  # ```python, ```{math}: not prose
                out.append(" " * len(line))
                continue
            # a directive with prose inside (exercise, solution, admonition...): keep its title
            directives.append(mark)
            out.append(_keep_title(line, info[name.end() :] if name else ""))
            continue
        colon = COLON_FENCE.match(line)
        if colon:
            rest = colon.group("rest")
            name = DIRECTIVE_NAME.match(rest)
            out.append(_keep_title(line, rest[name.end() :] if name else ""))
            continue
        if OPTION_LINE.match(line):
            out.append(" " * len(line))
            continue
        if line.lstrip().startswith("%"):
            comments.append(line.lstrip()[1:].strip())
            out.append(" " * len(line))
            continue
        out.append(line)
    if fence is not None and block:
        code_blocks.append("\n".join(block))
    text = "\n".join(out)
    for pattern in PATTERNS_TO_BLANK:
        text = pattern.sub(_blank, text)
    text = LINK_TARGET.sub(_blank_group("target"), text)
    return text, code_blocks, comments


# ---------------------------------------------------------------------------------------------
# numbers in prose

PROSE_NUMBER = re.compile(
    r"""
    (?P<num>
        (?:\d{1,3}(?:,\d{3})+(?![\d])|\d+)   # 1,009 or 1009
        (?:\.\d+)?                          # decimals
        (?:[eE][-+−]?\d+)?                  # 3.6e-07
    )
    (?P<pct>\s?%|\s+percent\b)?
    """,
    re.X,
)
# letters glued after a number that make it a quantity, not part of a name
UNITS = {
    "x", "×", "s", "ms", "us", "µs", "ns", "min", "h", "k", "K", "M", "b", "kb", "KB", "kB", "MB", "GB", "TB",
    "KiB", "MiB", "GiB", "TiB", "bit", "bits", "px", "Hz", "GHz", "MHz", "it",
}  # fmt: skip
REFERENCE_WORDS = (
    r"chapters?|sections?|parts?|exercises?|figures?|figs?\.|tables?|equations?|eqs?\.|appendix|appendices|§"
    r"|layer|head|row|column|line|page|item|ids?|token|positions?"
)
REFERENCE_BEFORE = re.compile(rf"(?:^|[^\w])(?:{REFERENCE_WORDS})\s*(?:[\d.]+\s*(?:,|and|or|to|–|—|-|&)\s*)*$", re.I)
VERSION_BEFORE = re.compile(r"(?:^|[^\w])(?:python|pytorch|torch|numpy|cuda|version|versions|v)\s*$", re.I)
YEAR_BEFORE = re.compile(
    r"(?:^|[^\w])(?:in|since|until|by|from|before|after|around|circa|c\.|year|et al\.?,?)\s*$", re.I
)
# a unit of time after a number (glued or not)
TIME_UNIT = re.compile(r"\s?(?:s|secs?|seconds?|ms|milliseconds?|µs|us|ns|min|mins|minutes?|h|hrs?|hours?)\b")
# "1.75 million", "3.3 billion"; glued k and M: the values they may stand for
MULTIPLIER = re.compile(r"\s+(thousand|million|billion)\b|\s(M)\b")
SCALES = {
    "k": (1000, 1024), "K": (1000, 1024), "thousand": (1000,), "million": (10**6,), "M": (10**6,),
    "billion": (10**9,),
}  # fmt: skip
# the first number of "97–99%" is a percent too
PERCENT_RANGE = re.compile(r"\s*(?:–|-|—|to|and|or)\s*\d[\d.,]*\s?%")
LIST_MARKER = re.compile(r"^[ \t>]*$")


@dataclass(frozen=True)
class ProseNumber:
    text: str  # as written, e.g. "1,009" or "93%"
    value: Decimal  # absolute value as written (93 for "93%")
    quantum: Decimal  # the unit of its last digit: 0.01 for "0.42"
    percent: bool
    suffix: str  # unit glued to it ("x", "k"), or ""
    time: bool  # followed by a unit of time: only a printed time supports it
    start: int
    end: int
    scales: tuple[int, ...] = (1,)  # "32k": (1000, 1024); "1.75 million": (10**6,)


def parse_number(text: str) -> tuple[Decimal, Decimal] | None:
    """(absolute value, rounding unit) of a number as written: "1,009" -> (1009, 1)."""
    clean = text.replace(",", "").replace("_", "").replace("−", "-").lstrip("+-")
    try:
        value = Decimal(clean)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    return abs(value), Decimal(1).scaleb(value.as_tuple().exponent)


def _skip_reason(text: str, match: re.Match, value: Decimal, quantum: Decimal, percent: bool) -> str | None:
    """Why a number in prose is not a measurement, or None."""
    start, end = match.span("num")
    raw = match.group("num")
    before = text[max(0, start - 80) : start]
    after = text[match.end() : match.end() + 40]
    prev = before[-1:] if before else ""
    if prev and (prev.isalnum() or prev in "_.,"):
        if prev.isalpha() or prev == "_":
            return "identifier"
        if prev == "." and re.search(r"\d\.$", before):
            return "version"
        if prev == "," and re.search(r"\d,$", before):
            return "list"
    if prev in "-‐" and re.search(r"[A-Za-z_][-‐]$", before):
        return "identifier"  # GPT-2, WikiText-103, top-5
    if re.match(r"\.\d", text[end : end + 2]):
        return "version"  # 2.13.0
    if re.match(r"[-‐]bits?\b", text[end:]):
        return "identifier"  # 64-bit floats: a type
    glued = re.match(r"[A-Za-z_µ×]+", text[match.end() :]) if not match.group("pct") else None
    if glued:
        word = glued.group(0)
        if re.fullmatch(r"(?:19|20)\d0", raw) and word == "s":
            return "decade"
        if word not in UNITS:
            return "identifier"  # 7B, 1st, 2D
    if REFERENCE_BEFORE.search(before):
        return "reference"
    if VERSION_BEFORE.search(before) and quantum < 1:
        return "version"
    is_int = quantum >= 1 and "e" not in raw.lower()
    if is_int and "," not in raw and 1900 <= value <= 2099:
        if YEAR_BEFORE.search(before) or (before.rstrip().endswith("(") and re.match(r"\s*[),;]", after)):
            return "year"
    if is_int and LIST_MARKER.match(text[text.rfind("\n", 0, start) + 1 : start]) and re.match(r"[.)]\s", after):
        return "list marker"
    if is_int and not percent and value < 10:
        return "small integer"
    return None


def prose_numbers(text: str) -> Iterator[tuple[ProseNumber | None, str]]:
    """(number, "") for each number read from blanked prose, or (None, reason) for each skipped."""
    for match in PROSE_NUMBER.finditer(text):
        parsed = parse_number(match.group("num"))
        if parsed is None:
            continue
        value, quantum = parsed
        percent = bool(match.group("pct") or PERCENT_RANGE.match(text, match.end()))
        reason = _skip_reason(text, match, value, quantum, percent)
        if reason:
            yield None, reason
            continue
        glued = re.match(r"[A-Za-z_µ×]+", text[match.end() :]) if not percent else None
        word = MULTIPLIER.match(text, match.end())
        scale = (glued.group(0) if glued else None) or (word.group(word.lastindex) if word else None)
        yield (
            ProseNumber(
                text=match.group(0).strip() + (glued.group(0) if glued else ""),
                value=value,
                quantum=quantum,
                percent=percent,
                suffix=glued.group(0) if glued else "",
                time=not percent and bool(TIME_UNIT.match(text, match.end())),
                scales=SCALES.get(scale, (1,)),
                start=match.start(),
                end=match.end(),
            ),
            "",
        )


# ---------------------------------------------------------------------------------------------
# numbers in outputs and code

OUTPUT_NUMBER = re.compile(r"(?<![\d.])(\d{1,3}(?:,\d{3})+(?!\d)|\d+)(\.\d+)?([eE][-+]?\d+)?(\s?%)?")
FIGURE_REPR = re.compile(r"^<(?:Figure|matplotlib|IPython\.core\.display)[^>]*>$")
# a tqdm progress line: which steps it shows depends on the clock
PROGRESS_LINE = re.compile(r"^.*(?:it/s|s/it|\d+it \[|\|\s*\d+/\d+ \[).*$", re.M)


@dataclass
class Values:
    """Numbers printed (plain: as written; pct: p of a printed p%) or written as literals."""

    plain: list[Decimal] = field(default_factory=list)
    pct: list[Decimal] = field(default_factory=list)
    time: list[Decimal] = field(default_factory=list)  # followed by a unit of time (also in plain)

    def extend(self, other: Values) -> None:
        self.plain += other.plain
        self.pct += other.pct
        self.time += other.time

    def frozen(self) -> Values:
        return Values(sorted(self.plain), sorted(self.pct), sorted(self.time))

    def supports(self, number: ProseNumber) -> bool:
        """Is a value within half the prose number's rounding unit? (Sorted lists only.)"""
        if number.scales != (1,):
            return any(_near(self.plain, number.value * m, number.quantum * m) for m in number.scales)
        if number.time:
            return _near(self.time, number.value, number.quantum)
        if number.percent:
            return _near(self.pct, number.value, number.quantum) or _near(
                self.plain, number.value / 100, number.quantum / 100
            )
        return _near(self.plain, number.value, number.quantum)


def _near(values: list[Decimal], value: Decimal, quantum: Decimal) -> bool:
    half = quantum / 2
    i = bisect.bisect_left(values, value - half)
    return i < len(values) and values[i] <= value + half


def output_values(text: str, skip_spans: Iterable[tuple[int, int]] = ()) -> tuple[Values, Values]:
    """(values, values inside skip_spans) of every number printed in text. "1,234" gives 1234
    and its parts, in case it was a list."""
    spans = sorted(skip_spans)
    kept, skipped = Values(), Values()
    for match in OUTPUT_NUMBER.finditer(text):
        raw = match.group(1) + (match.group(2) or "") + (match.group(3) or "")
        parsed = parse_number(raw)
        if parsed is None:
            continue
        values = [parsed[0]]
        if "," in match.group(1):
            values += [Decimal(part) for part in match.group(1).split(",")]
        inside = any(s <= match.start() and match.end() <= e for s, e in spans)
        bag = skipped if inside else kept
        (bag.pct if match.group(4) else bag.plain).extend(values)
        if not match.group(4) and TIME_UNIT.match(text, match.end()):
            bag.time.extend(values)
    return kept, skipped


def code_literals(source: str) -> list[Decimal]:
    """Numeric literals of Python source (comments and strings excluded; magics tolerated)."""
    lines = [("" if ln.lstrip().startswith(("%", "!")) else ln) for ln in source.split("\n")]
    text = "\n".join(lines)
    tokens: list[str] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NUMBER:
                tokens.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        no_comments = re.sub(r"#.*", "", text)
        tokens = re.findall(r"(?<![\w.])\d[\d_]*(?:\.\d*)?(?:[eE][-+]?\d+)?", no_comments)
    values = []
    for tok in tokens:
        tok = tok.lower()
        if tok.endswith("j"):
            continue
        if tok.startswith(("0x", "0o", "0b")):
            values.append(Decimal(int(tok.replace("_", ""), 0)))
            continue
        parsed = parse_number(tok.rstrip("."))
        if parsed:
            values.append(parsed[0])
    return values


def assertion_bands(source: str) -> list[set[Decimal]]:
    """The numeric literals of each `assert` statement of Python source (its test, not its message):
    ``assert 0.25 < x < 0.45, x`` gives {0.25, 0.45}. Source that does not parse gives none."""
    lines = [("" if ln.lstrip().startswith(("%", "!")) else ln) for ln in source.split("\n")]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    bands = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            values = set()
            for sub in ast.walk(node.test):
                if isinstance(sub, ast.Constant) and type(sub.value) in (int, float):
                    parsed = parse_number(repr(sub.value))
                    if parsed:
                        values.add(parsed[0])
            if len(values) >= 2:
                bands.append(values)
    return bands


def load_sanitizers(path: Path = SANITIZE_CFG) -> list[re.Pattern]:
    """The regexes of an nbval sanitize file (sections with regex: and replace:)."""
    if not path.exists():
        return []
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(path, encoding="utf-8")
    return [re.compile(parser[s]["regex"]) for s in parser.sections() if "regex" in parser[s]]


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def output_texts(cell: dict) -> Iterator[str]:
    """The texts that nbval compares for a code cell's outputs (images excluded)."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream":
            yield _text(out.get("text", ""))
        elif out.get("output_type") in ("execute_result", "display_data"):
            data = out.get("data", {})
            plain = _text(data.get("text/plain", "")).strip()
            if plain and not FIGURE_REPR.match(plain):
                yield plain
            if "text/html" in data:
                html = re.sub(r"<(style|script)\b.*?</\1\s*>", " ", _text(data["text/html"]), flags=re.S | re.I)
                html = re.sub(r"<[^>]*>", " ", html)
                yield re.sub(r"&\w+;", " ", html)


# ---------------------------------------------------------------------------------------------
# the check

DECLARATION = re.compile(r"^prose-numbers\s*:(?P<body>.*)$", re.I)
SOURCE = re.compile(r"\(?\s*source\s*:\s*(?P<src>[^)]*)\)?", re.I)


@dataclass
class Finding:
    chapter: str
    number: str
    category: str
    context: str
    cell: int

    def __str__(self) -> str:
        return f"{self.chapter} cell {self.cell}: {self.number!r} ({self.category}) {self.context}"


@dataclass
class Report:
    chapter: str
    findings: list[Finding] = field(default_factory=list)
    supported: dict[str, int] = field(default_factory=dict)  # rule -> count
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count


def context(source: str, start: int, end: int, width: int = 100) -> str:
    """About `width` characters of the original text around [start, end), on one line."""
    half = (width - (end - start)) // 2
    a, b = max(0, start - half), min(len(source), end + half)
    snippet = source[a:start] + "⟨" + source[start:end] + "⟩" + source[end:b]
    return ("…" if a > 0 else "") + re.sub(r"\s+", " ", snippet).strip() + ("…" if b < len(source) else "")


DECLARED_RANGE = re.compile(r"(\d[\d,]*(?:\.\d+)?)%?\s*[-–]\s*(\d[\d,]*(?:\.\d+)?)%?")


def declared_ranges(comments: list[str]) -> list[tuple[Decimal, Decimal]]:
    """The measured ranges ("540-572") declared in a cell's `% prose-numbers:` lines."""
    ranges = []
    for line in comments:
        match = DECLARATION.match(line)
        if match:
            body = match.group("body")
            source = SOURCE.search(body)
            for a, b in DECLARED_RANGE.findall(body[: source.start()] if source else body):
                lo, hi = parse_number(a.rstrip(",")), parse_number(b.rstrip(","))
                if lo and hi:
                    ranges.append((lo[0], hi[0]))
    return ranges


# what joins the two ends of a range in prose, and the word that must come before the first end
RANGE_JOIN = re.compile(r"\s*(?:%|\s?percent)?\s*(?:–|—|-|\bto\b|\band\b)\s*$")
RANGE_OPENER = re.compile(r"(?:between|from)\s+$", re.I)


def prose_ranges(prose: str, numbers: list[ProseNumber]) -> Iterator[tuple[ProseNumber, ProseNumber]]:
    """Pairs of consecutive prose numbers written as a range: "A–B", "A to B", "from A to B",
    "between A and B" (an "and" counts only after "between")."""
    for a, b in zip(numbers, numbers[1:]):
        between = prose[a.end : b.start]
        join = RANGE_JOIN.match(between)
        if not join or join.end() != len(between) or "\n\n" in between:
            continue
        if "and" in between and not RANGE_OPENER.search(prose[max(0, a.start - 12) : a.start]):
            continue
        if a.percent != b.percent and not ("%" in between or "percent" in between):
            continue
        yield a, b


def parse_declarations(comments: list[str]) -> tuple[set[Decimal], list[str]]:
    """(declared values, declaration lines that lack a source) of a cell's MyST comment lines."""
    declared: set[Decimal] = set()
    bad: list[str] = []
    for line in comments:
        match = DECLARATION.match(line)
        if not match:
            continue
        body = match.group("body")
        source = SOURCE.search(body)
        numbers = body[: source.start()] if source else body
        if not source or not source.group("src").strip():
            bad.append(line)
        for token in re.findall(r"\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?%?", numbers):
            parsed = parse_number(token.rstrip("%").rstrip(","))
            if parsed:
                declared.add(parsed[0])
    return declared, bad


def check_notebook(nb: dict, chapter: str = "notebook", sanitizers: list[re.Pattern] | None = None) -> Report:
    """Every prose number of a notebook (a dict, as in the .ipynb JSON) against rules a-c."""
    if sanitizers is None:
        sanitizers = load_sanitizers()
    checked, run_dependent, literals = Values(), Values(), Values()
    bands: list[set[Decimal]] = []
    cells = nb.get("cells", [])
    markdown: list[tuple[int, str, str, list[str]]] = []
    for index, cell in enumerate(cells):
        source = _text(cell.get("source", ""))
        if cell.get("cell_type") == "code":
            literals.plain += code_literals(source)
            bands += assertion_bands(source)
            ignored = IGNORE_TAG in cell.get("metadata", {}).get("tags", [])
            for text in output_texts(cell):
                spans = [m.span() for pattern in sanitizers for m in pattern.finditer(text)]
                spans += [m.span() for m in PROGRESS_LINE.finditer(text)]
                kept, loose = output_values(text, spans)
                (run_dependent if ignored else checked).extend(kept)
                run_dependent.extend(loose)
        elif cell.get("cell_type") == "markdown":
            prose, blocks, comments = split_markdown(source)
            for block in blocks:
                literals.plain += code_literals(block)
            markdown.append((index, source, prose, comments))
    literals.time = literals.plain  # a constant in code supports "104 s" as well as "104"
    sources = {"a: checked output": checked.frozen(), "b: code literal": literals.frozen()}
    loose_values = run_dependent.frozen()
    report = Report(chapter)
    for index, source, prose, comments in markdown:
        declared, bad = parse_declarations(comments)
        for line in bad:
            pos = source.find(line)
            report.findings.append(
                Finding(chapter, "% " + line, BAD_DECLARATION, context(source, pos, pos + len(line)), index)
            )
        read: list[ProseNumber] = []
        rules: dict[int, str] = {}  # start of a supported number -> its rule
        for number, reason in prose_numbers(prose):
            if number is None:
                report.skipped[reason] = report.skipped.get(reason, 0) + 1
                continue
            read.append(number)
            rule = None
            if number.value in declared:
                rule = "c: declared"
            else:
                for name, values in sources.items():
                    if values.supports(number):
                        rule = name
                        break
            if rule:
                rules[number.start] = rule
                report.supported[rule] = report.supported.get(rule, 0) + 1
                continue
            category = RUN_DEPENDENT if loose_values.supports(number) else UNSUPPORTED
            report.findings.append(
                Finding(chapter, number.text, category, context(source, number.start, number.end), index)
            )
        measured = declared_ranges(comments)
        for a, b in prose_ranges(prose, read):
            if a.start not in rules or b.start not in rules:
                continue  # an end is flagged already
            text = f"{source[a.start:a.end].strip()}…{source[b.start:b.end].strip()}"
            where = context(source, a.start, b.end)
            lo, hi = sorted((a.value, b.value))
            ends = [{n.value, n.value / 100} if n.percent else {n.value} for n in (a, b)]
            if rules[a.start] == rules[b.start] == "b: code literal" and any(
                ends[0] & band and ends[1] & band for band in bands
            ):
                report.findings.append(Finding(chapter, text, BAND_AS_RANGE, where, index))
            elif (lo, hi) not in measured and any(
                lo <= m_lo and m_hi <= hi and (lo, hi) != (m_lo, m_hi) for m_lo, m_hi in measured
            ):  # a range declared itself (a wider set of runs, named in its source) is measured too
                report.findings.append(Finding(chapter, text, WIDER_THAN_MEASURED, where, index))
    return report


def chapters(directory: Path = CHAPTER_DIR) -> list[Path]:
    return sorted(directory.glob("[0-9][0-9]_*.ipynb"))


def check_chapter(path: Path, sanitizers: list[re.Pattern] | None = None) -> Report:
    with open(path, encoding="utf-8") as f:
        return check_notebook(json.load(f), path.stem, sanitizers)


def format_findings(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        lines.append(f"- cell {f.cell}: {f.number!r} [{f.category}] {f.context}")
    if findings:
        lines.append("")
        for category in sorted({f.category for f in findings}):
            lines.append(f"{category}: {WHY[category]}")
    return "\n".join(lines)


def markdown_report(reports: list[Report]) -> str:
    total = sum(len(r.findings) for r in reports)
    out = [
        "# Prose numbers not supported by the chapters",
        "",
        "Made by `tests/prose_numbers.py` (rules in its docstring). Categories:",
        "",
        *(f"- **{c}**: {WHY[c]}" for c in WHY),
        "",
        "| chapter | flagged | unsupported | run-dependent | bad declaration | supported (a / b / c) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    sums = dict.fromkeys(WHY, 0)
    for r in reports:
        n = {c: sum(f.category == c for f in r.findings) for c in WHY}
        sums = {c: sums[c] + n[c] for c in WHY}
        s = " / ".join(str(r.supported.get(k, 0)) for k in ("a: checked output", "b: code literal", "c: declared"))
        out.append(
            f"| {r.chapter} | {len(r.findings)} | {n[UNSUPPORTED]} | {n[RUN_DEPENDENT]} | {n[BAD_DECLARATION]} | {s} |"
        )
    out += [
        f"| **total** | {total} | {sums[UNSUPPORTED]} | {sums[RUN_DEPENDENT]} | {sums[BAD_DECLARATION]} | |",
        "",
    ]
    for r in reports:
        out += [f"## {r.chapter} ({len(r.findings)} flagged)", ""]
        for f in r.findings:
            out.append(f"- cell {f.cell}, **{f.number}** [{f.category}]: {f.context}")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sanitizers = load_sanitizers()
    all_reports = [check_chapter(p, sanitizers) for p in chapters()]
    text = markdown_report(all_reports)
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text, encoding="utf-8")
    else:
        print(text)
