"""tests/solutions_edition.py: the prose solutions' code, put where a reader runs it."""

import json

import solutions_edition as se

MARKDOWN = """Some prose.

````{solution} ex-one
:class: dropdown

It is not.

```python
y = f(x)
print(y)
```

```python
# not run
layer(...)
```

```text
not python
```
````

```python
outside = "a code block outside any solution"
```
"""


def test_solution_blocks_are_the_python_of_prose_solutions_only():
    assert se.solution_blocks(MARKDOWN) == [("ex-one", "y = f(x)\nprint(y)\n")]
    # a gated solution is code cells already; an exercise's text is not a solution
    assert se.solution_blocks("````{solution-start} ex-two\n````\n") == []
    assert se.solution_blocks("```{exercise} T\n:label: ex-3\n```\n") == []


def test_the_blocks_follow_their_cell_and_nothing_else_moves():
    nb = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": MARKDOWN, "id": "m1"},
                    {"cell_type": "code", "metadata": {}, "source": "z = 1", "outputs": [], "id": "c1",
                     "execution_count": 1}],
          "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    new, added = se.with_solutions(nb)
    assert added == 1
    assert [c.get("id") for c in new["cells"]] == ["m1", "m1-solution", "c1"]
    inserted = new["cells"][1]
    assert inserted["metadata"]["tags"] == ["nbval-ignore-output"]
    assert inserted["source"].endswith("y = f(x)\nprint(y)\n")
    assert nb["cells"][1] == new["cells"][2] and len(nb["cells"]) == 2  # the original is untouched


def test_every_chapter_is_written_with_its_guard(tmp_path):
    counts = se.write(tmp_path)
    assert len(counts) == 14 and sum(counts.values()) >= 14
    assert "chapters_conftest" in (tmp_path / "conftest.py").read_text()
    for name in counts:
        nb = json.loads((tmp_path / f"{name}.ipynb").read_text())
        assert sum("solution_of" in c["metadata"] for c in nb["cells"]) == counts[name]
