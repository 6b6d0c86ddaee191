"""minformer: the minimal Transformer that grows with the book *Transformers from Scratch*.

Import what a chapter needs from the module named after its idea::

    from minformer.attention import softmax, dot_product_attention

``minformer.DATA_DIR`` is the repository's ``data/`` folder (see :func:`minformer.utils.data_dir`).
It is looked up when first used, so importing the package never fails for want of data.
"""

__version__ = "0.1.0"


def __getattr__(name):
    if name == "DATA_DIR":
        from .utils import data_dir

        return data_dir()
    raise AttributeError(f"module 'minformer' has no attribute {name!r}")
