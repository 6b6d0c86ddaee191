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
