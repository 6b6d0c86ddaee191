"""Transformer.decode and the source's padding (chapter 12): the memory does not say which
source positions were padding, so decode masks them only when given ``src_mask``; its default,
None, hides no memory position (documented in its docstring). forward and minformer.decode
pass the mask; a padded batch decoded without it reads the padding."""

import torch

from minformer.decode import greedy_search
from minformer.transformer import Transformer, TransformerConfig

PAD = 0


def _model_and_batch():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig(vocab_size=23, d_model=16, n_heads=2, d_ff=32,
                                          n_layers=2, dropout=0.0, max_len=32)).eval()
    g = torch.Generator().manual_seed(0)
    src = torch.randint(3, 23, (2, 7), generator=g)
    src[1, 4:] = PAD  # the second source has 3 padding positions
    tgt = torch.randint(3, 23, (2, 5), generator=g)
    return model, src, tgt


@torch.no_grad()
def test_decode_masks_source_padding_only_when_given_the_source_mask():
    model, src, tgt = _model_and_batch()
    memory = model.encode(src)
    masked = model.decode(tgt, memory, model.source_mask(src))
    torch.testing.assert_close(masked, model(src, tgt), rtol=0, atol=0)  # what forward does
    unmasked = model.decode(tgt, memory)  # the default: no memory position hidden
    # the unpadded row is the same either way; the padded row read its padding
    torch.testing.assert_close(unmasked[0], masked[0])
    assert (unmasked[1] - masked[1]).abs().max() > 1e-3
    # padding's memory vectors do not matter once the mask hides them
    changed = memory.clone()
    changed[1, 4:] = 100.0
    torch.testing.assert_close(model.decode(tgt, changed, model.source_mask(src)), masked)


@torch.no_grad()
def test_a_row_decodes_alone_as_in_a_padded_batch_with_the_mask():
    model, src, tgt = _model_and_batch()
    alone = model.decode(tgt[1:], model.encode(src[1:, :4]))  # no padding: None is right
    batch = model.decode(tgt, model.encode(src), model.source_mask(src))
    torch.testing.assert_close(batch[1:], alone, atol=1e-5, rtol=1e-5)
    # greedy search masks the source itself: a padded row gives the tokens it gives alone
    together = greedy_search(model, src, 6, bos_id=1, eos_id=2)
    single = greedy_search(model, src[1:, :4], 6, bos_id=1, eos_id=2)
    assert together[1, :single.shape[1]].tolist() == single[0].tolist()
