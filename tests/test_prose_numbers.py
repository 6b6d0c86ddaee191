"""Every number in a chapter's prose comes from something the chapter checks (rules: the docstring
of tests/prose_numbers.py). Reads the stored notebooks' JSON only; nothing is executed."""

import pytest
from prose_numbers import (
    BAD_DECLARATION,
    BAND_AS_RANGE,
    RUN_DEPENDENT,
    UNSUPPORTED,
    WHY,
    WIDER_THAN_MEASURED,
    chapters,
    check_chapter,
    check_notebook,
    format_findings,
    load_sanitizers,
    prose_numbers,
    split_markdown,
)

CHAPTERS = chapters()
SANITIZERS = load_sanitizers()


@pytest.mark.parametrize("path", CHAPTERS, ids=[p.stem for p in CHAPTERS])
def test_prose_numbers_are_supported(path):
    report = check_chapter(path, SANITIZERS)
    if report.findings:
        pytest.fail(
            f"{path.stem}: {len(report.findings)} number(s) in the prose that the chapter does not check\n"
            + format_findings(report.findings)
            + "\nFix the number, print it in a compared cell, assert a range in code, or declare it in the cell:"
            " `% prose-numbers: 31.9 (source: ...)`.",
            pytrace=False,
        )


def test_there_are_fourteen_chapters():
    assert len(CHAPTERS) == 14, [p.name for p in CHAPTERS]


# ---------------------------------------------------------------------------------------------
# the rules, on small synthetic notebooks


def md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def code(source, *outputs, ignore=False):
    tags = ["nbval-ignore-output"] if ignore else []
    return {"cell_type": "code", "metadata": {"tags": tags}, "source": source, "outputs": list(outputs)}


def out(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def flags(*cells):
    """{number as written: category} of every flagged prose number."""
    report = check_notebook({"cells": list(cells)}, "synthetic", SANITIZERS)
    return {f.number: f.category for f in report.findings}


def read(text):
    """The numbers read from one markdown cell, as written."""
    prose, _, _ = split_markdown(text)
    return [n.text for n, _ in prose_numbers(prose) if n]


def test_non_prose_is_blanked():
    text = (
        "Math $t = 2048$ and $$\nd = 512\n$$ and \\(x = 33\\), code `n = 4096`, a role {cite}`vaswani2017`"
        " and {numref}`fig-12`, a [link](https://example.org/page/123), <!-- 77 --> <span id='x-55'>"
        " and 31.5 left.\n% prose-numbers: 88 (source: x)\n"
        "```{exercise} Ninety\n:label: ex-99\n:class: dropdown\nThe 47 words.\n```\n"
        "```python\nsteps = 1234\n```\n"
    )
    assert read(text) == ["31.5", "47"]


def test_what_is_read_and_what_is_skipped():
    assert read("from 0.42 s to 0.13 s, 1,009 steps, 93% and 5.7 %, 3.6e-07, 2.8x, 32k tokens") == [
        "0.42", "0.13", "1,009", "93%", "5.7 %", "3.6e-07", "2.8x", "32k",
    ]  # fmt: skip
    # small integers, references, years, decades, versions and identifiers are not measurements
    skipped = (
        "k = 4 with 8 heads; chapter 12, chapters 4, 5 and 12, section 3.2, exercise 11, layer 12,"
        " figure 10, table 2, eq. 14; in 2014 (2017), the 1990s; PyTorch 2.13.0, Python 3.11;"
        " GPT-2, WikiText-103, x1, d_128, float32, 64-bit floats, Mistral 7B, the 21st token"
    )
    assert read(skipped) == []
    assert read("the first 97–99% of them") == ["97", "99%"]


def test_outputs_support_up_to_rounding():
    cells = [
        md("BLEU 29.4, weight 0.49, 968 steps, 1,009 pairs, 93% and 93.3%, 41% and 12.0%, 3.6e-07."),
        code("run()", out("BLEU 29.43, weight 0.4931, 968 steps, 1009 pairs, acc 0.933, 41.2%, 0.12\n3.6e-07")),
    ]
    assert flags(*cells) == {}
    assert flags(md("BLEU 29.5 and 0.50"), code("run()", out("BLEU 29.43, weight 0.4931"))) == {
        "29.5": UNSUPPORTED,
        "0.50": UNSUPPORTED,
    }


def test_percent_needs_a_printed_fraction_or_percent():
    # 93% is matched by 0.93 or by "93%", not by a plain 93 (a count) nor by a code literal 93
    assert flags(md("about 93% of them"), code("n = 93", out("93 sentences"))) == {"93%": UNSUPPORTED}


def test_code_literals_support():
    cells = [
        md("We train for 1,400 steps at a rate of 0.1; the loss ends below 0.6 on every machine."),
        code("STEPS = 1400\nLR = 0.1  # not 0.7\nloss = train(STEPS, LR)\nprint(f'{loss:.4f}')", out("0.5123"),
             ignore=True),
        code("assert 0.4 < loss < 0.6, loss"),
    ]  # fmt: skip
    assert flags(*cells) == {}
    # a comment is not a literal
    assert flags(md("at 0.7 it diverges"), code("lr = 0.1  # not 0.7")) == {"0.7": UNSUPPORTED}


def test_declarations():
    declared = md("The paper's BLEU was 31.9 and 31.8.\n% prose-numbers: 31.9 31.8 (source: Vaswani et al. 2017)\n")
    assert flags(declared) == {}
    assert flags(md("It was 31.9.\n% prose-numbers: 31.9\n")) == {"% prose-numbers: 31.9": BAD_DECLARATION}
    # a declaration holds for its own cell only
    assert flags(declared, md("Again 31.9.")) == {"31.9": UNSUPPORTED}


def test_run_dependent_outputs_do_not_support():
    timing = code("t = train(1400)\nprint(f'{t:.0f} s')", out("1400 steps in 573 s\n"), ignore=True)
    assert flags(md("It took 573 s for 1,400 steps."), timing) == {"573": RUN_DEPENDENT}
    # a timing that an nbval sanitizer replaces is not compared either, tag or not
    assert flags(md("the dense mask took 0.49 s"), code("time_it()", out("dense: 0.49 s\n"))) == {"0.49": RUN_DEPENDENT}
    # nor is a tqdm progress bar
    bar = out("GRU:  45%|####5     | 450/1000 [00:12<00:15, 36.1it/s, loss=2.802]\n")
    assert flags(md("a loss of 2.802 at step 450"), code("train()", bar)) == {
        "2.802": RUN_DEPENDENT,
        "450": RUN_DEPENDENT,
    }


def test_review_examples_are_caught():
    # chapter 14: "fell from 0.42 s to 0.13 s" over outputs of 0.49 s and 0.17 s
    ch14 = [
        md("In the run stored here the time fell from 0.42 s to 0.13 s."),
        code("compare()", out(" dense (t, t) mask: 0.49 s, peak 12.8 MiB\n causal=True: 0.17 s, peak 12.8 MiB\n")),
    ]
    assert flags(*ch14) == {"0.42": UNSUPPORTED, "0.13": UNSUPPORTED}
    # chapter 13: "1,009 steps" and "590 s" over a printed 968 steps, 572 s and 573 s
    ch13 = [
        md("The GRU scored 23.9 here, with 1,009 steps done in 590 s."),
        code("train_gru()", out("GRU: 968 steps in 573 s; test BLEU = 23.92\n"), ignore=True),
        code("train_tf()", out("Transformer: 1400 steps in 572 s\n"), ignore=True),
    ]
    got = flags(*ch13)
    assert got["1,009"] == UNSUPPORTED and got["590"] == UNSUPPORTED
    # beam search "gains 2.5 and 2.1" where the table gives 2.1 and 3.0
    table = out("seed  greedy  beam  gain\n   1    28.0  30.1   2.1\n   2    27.5  30.5   3.0\n")
    assert flags(md("The same model gained 2.5 and 2.1 points from beam search."), code("table()", table)) == {
        "2.5": UNSUPPORTED
    }


def test_an_assertions_band_is_not_a_measured_range():
    # chapter 9: "between 530 and 590 in our runs", the bounds of an assert, where runs gave 540-572
    train = code("ppl = train()\nprint(f'{ppl:.0f}')", out("556\n"), ignore=True)
    band = code("assert 530 < ppl < 590, ppl")
    for prose in ("a perplexity between 530 and 590 in our runs", "a perplexity of 530 to 590",
                  "a perplexity from 530 to 590", "a perplexity of 530–590"):
        assert flags(md(prose), train, band) == {"530…590": BAND_AS_RANGE}, prose
    # percents against the fractions of the assert; and the ends of one assert only
    assert flags(md("between 25% and 45% of the time"), code("assert 0.25 < a < 0.45")) == {"25%…45%": BAND_AS_RANGE}
    assert flags(md("between 530 and 590"), code("assert 530 < a\nassert b < 590")) == {}
    # the measured range, declared with its source, is what the prose should say
    measured = "% prose-numbers: 540-572 (source: seeds 0-4, pinned and portable)\n"
    assert flags(md(measured + "a perplexity of 540 to 572 in five runs"), train, band) == {}
    # an "and" joins a range only after "between"; two numbers in a list are not a range
    assert flags(md("rates of 530 and 590 steps"), band) == {}
    # printed ends are the page's numbers, not a band
    assert flags(md("between 530 and 590"), band, code("show()", out("530 ... 590\n"))) == {}


def test_a_range_wider_than_the_declared_measured_one_is_caught():
    declared = "% prose-numbers: 540-572 (source: seeds 0-4, pinned and portable)\n"
    printed = code("show()", out("530 590\n"))
    assert flags(md(declared + "between 530 and 590 in our runs"), printed) == {"530…590": WIDER_THAN_MEASURED}
    assert flags(md(declared + "between 540 and 572 in our runs"), printed) == {}
    # the spread over more runs, declared with its own source, is measured too
    more = "% prose-numbers: 530-590 (source: seeds 0-9 on two machines)\n"
    assert flags(md(declared + more + "540 to 572 here, 530 to 590 over all runs"), printed) == {}


def test_every_category_has_a_reason():
    assert set(WHY) == {UNSUPPORTED, RUN_DEPENDENT, BAD_DECLARATION, BAND_AS_RANGE, WIDER_THAN_MEASURED}
