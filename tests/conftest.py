import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Tests import the package from the working tree even when it is not installed.
sys.path.insert(0, str(REPO / "code"))

import pytest  # noqa: E402
import torch  # noqa: E402


@pytest.fixture(autouse=True)
def one_thread():
    """Test tensors are small: one thread is faster, and far faster when pytest-xdist's workers
    (or other jobs) share the two cores."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


_notebook_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Adds up each notebook's cell times (nbval items) for the summary below."""
    if report.when == "call" and ".ipynb::" in report.nodeid:
        name = report.nodeid.split("::")[0]
        _notebook_seconds[name] = _notebook_seconds.get(name, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter):
    if not _notebook_seconds:
        return
    terminalreporter.section("time per notebook (nbval, sum of cell times)")
    for name, seconds in sorted(_notebook_seconds.items()):
        terminalreporter.write_line(f"{seconds:7.1f} s  {name}")
    terminalreporter.write_line(f"{sum(_notebook_seconds.values()):7.1f} s  total")
    # the same lines for `make bench` (benchmarks/suite.py), which quotes them in its table
    lines = [f"{s:7.1f} s  {n}" for n, s in sorted(_notebook_seconds.items())]
    lines.append(f"{sum(_notebook_seconds.values()):7.1f} s  total")
    out = REPO / "_build" / "notebook-times.txt"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
