"""Checkers for the book's code exercises.

A checker runs the reader's function on a handful of cases, edge cases included, and either
prints one short success line or raises ``AssertionError`` whose message says in plain words what
is wrong and where to look. One module per topic; every checker is re-exported here, so a
notebook writes ``from minformer.checks import check_softmax``.
"""

from ._core import CheckFailed, passed
from .attention import check_attention, check_softmax

__all__ = ["CheckFailed", "passed", "check_softmax", "check_attention"]

from .scaling import check_scaled_attention  # chapter 4

__all__ += ["check_scaled_attention"]

from .masks import check_causal_mask, check_masked_attention  # chapter 5

__all__ += ["check_causal_mask", "check_masked_attention"]

from .lookup import check_nadaraya_watson  # chapter 2
from .qkv import check_qkv_attention  # chapter 3

__all__ += ["check_nadaraya_watson", "check_qkv_attention"]

from .sequence import check_bigram_perplexity, check_bptt  # chapter 9

__all__ += ["check_bigram_perplexity", "check_bptt"]

from .positional import check_sinusoidal  # chapter 8

__all__ += ["check_sinusoidal"]

from .tokenization import check_apply_merges, check_count_pairs  # chapter 10

__all__ += ["check_apply_merges", "check_count_pairs"]

from .multihead import check_multi_head_attention, check_split_heads  # chapter 6

__all__ += ["check_multi_head_attention", "check_split_heads"]

from .blocks import check_encoder_layer, check_layer_norm  # chapter 7

__all__ += ["check_encoder_layer", "check_layer_norm"]

from .embeddings import (  # chapter 11
    check_analogy,
    check_negative_sampling_loss,
    check_skipgram_pairs,
)

__all__ += ["check_analogy", "check_negative_sampling_loss", "check_skipgram_pairs"]

from .architectures import check_mask_tokens  # chapter 12

__all__ += ["check_mask_tokens"]

from .beam import check_beam_step  # chapter 13
from .translation import check_clipped_precision  # chapter 13

__all__ += ["check_beam_step", "check_clipped_precision"]

from .efficient import check_cached_attention_step, check_online_softmax_update  # chapter 14

__all__ += ["check_cached_attention_step", "check_online_softmax_update"]
