"""minformer: the minimal Transformer that grows with the book *Transformers from Scratch*.

Import what a chapter needs from the module named after its idea::

    from minformer.attention import softmax, dot_product_attention

``minformer.DATA_DIR`` is the repository's ``data/`` folder (see :func:`minformer.utils.data_dir`).
It is looked up when first used, so importing the package never fails for want of data.
"""

import re

import torch

__version__ = "0.1.0"
OLDEST_TORCH = (2, 5)  # as pyproject.toml's "torch>=2.5"; the reader's run checks 2.5.0


def check_torch(version: str) -> None:
    """Refuse a torch older than :data:`OLDEST_TORCH` with the versions named: torch 2.4 has no
    ``enable_gqa`` in ``F.scaled_dot_product_attention`` and returns NaN for fully masked rows,
    which would otherwise surface as a TypeError deep inside a chapter, or a wrong answer."""
    found = re.match(r"(\d+)\.(\d+)", str(version))
    if found is None:
        raise ImportError(f"minformer cannot read the torch version {version!r}")
    if tuple(map(int, found.groups())) < OLDEST_TORCH:
        raise ImportError(f"minformer needs torch >= {'.'.join(map(str, OLDEST_TORCH))}, found "
                          f"{version}: pip install --upgrade torch")


check_torch(torch.__version__)


def __getattr__(name):
    if name == "DATA_DIR":
        from .utils import data_dir

        return data_dir()
    raise AttributeError(f"module 'minformer' has no attribute {name!r}")
