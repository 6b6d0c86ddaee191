"""The package itself: what importing it checks."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import minformer
from minformer import check_torch

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("version", ["2.5.0", "2.5.0+cu124", "2.13.0+cpu", "2.15.0", "3.0.0a0"])
def test_supported_torch_versions_pass(version):
    check_torch(version)


@pytest.mark.parametrize("version", ["2.4.1", "2.4.1+cpu", "1.13.1", "2.0.0"])
def test_an_older_torch_is_refused_with_both_versions_named(version):
    with pytest.raises(ImportError, match=rf"needs torch >= 2\.5, found {re.escape(version)}: pip"):
        check_torch(version)


def test_an_unreadable_version_is_named():
    with pytest.raises(ImportError, match="cannot read the torch version 'nightly'"):
        check_torch("nightly")


def test_the_bound_is_pyprojects_and_this_torch_passes():
    assert '"torch>=2.5"' in (ROOT / "pyproject.toml").read_text()
    assert minformer.OLDEST_TORCH == (2, 5)
    check_torch(torch.__version__)


def test_importing_with_an_old_torch_fails_at_once_with_the_message(tmp_path):
    # a stand-in torch 2.4.1 ahead of the real one on the path: `import minformer` stops there
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text('__version__ = "2.4.1"\n')
    package = Path(minformer.__file__).parent.parent
    run = subprocess.run([sys.executable, "-c", "import minformer"], capture_output=True,
                         text=True, env={"PYTHONPATH": f"{tmp_path}:{package}"})
    assert run.returncode == 1
    assert "ImportError: minformer needs torch >= 2.5, found 2.4.1" in run.stderr
