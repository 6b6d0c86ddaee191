"""minformer.objectives (shifted next-token targets, BERT masking) and minformer.decode
(next-token choice, autoregressive generation)."""

import pytest
import torch

from minformer.decode import generate, sample_next
from minformer.objectives import IGNORE, mask_tokens, shift_for_next_token
from minformer.transformer import DecoderOnly, TransformerConfig


def test_shift_for_next_token():
    x = torch.tensor([[1, 5, 6, 7, 2, 0], [1, 8, 2, 0, 0, 0]])
    inp, tgt = shift_for_next_token(x, pad_id=0)
    assert inp.tolist() == [[1, 5, 6, 7, 2], [1, 8, 2, 0, 0]]
    assert tgt.tolist() == [[5, 6, 7, 2, IGNORE], [8, 2, IGNORE, IGNORE, IGNORE]]
    assert x[0, -1] == 0  # input untouched
    assert shift_for_next_token(x)[1][1].tolist() == [8, 2, 0, 0, 0]
    with pytest.raises(ValueError, match="at least 2 tokens"):
        shift_for_next_token(x[:, :1])
    with pytest.raises(TypeError, match="integer ids; got dtype torch.float32"):
        shift_for_next_token(x.float())


def test_mask_tokens_follows_bert_rule_in_proportion():
    V, MASK, PAD, BOS = 50, 3, 0, 1
    g = torch.Generator().manual_seed(0)
    x = torch.randint(4, V, (400, 250), generator=g)
    x[:, 0] = BOS
    x[:, -20:] = PAD
    before = x.clone()
    inp, tgt = mask_tokens(x, MASK, V, special_ids=(PAD, BOS), generator=g)
    assert torch.equal(x, before)  # not modified
    picked = tgt != IGNORE
    real = (x != PAD) & (x != BOS)
    assert not (picked & ~real).any()  # specials never picked
    assert torch.equal(tgt[picked], x[picked])  # targets are the originals
    assert torch.equal(inp[~picked], x[~picked])  # unpicked positions unchanged
    share = picked.sum() / real.sum()
    assert abs(share - 0.15) < 0.005
    n = picked.sum().item()
    masked = (inp[picked] == MASK).sum().item() / n
    kept = (inp[picked] == x[picked]).sum().item() / n
    assert abs(masked - 0.8) < 0.01 and abs(kept - 0.1 - 0.1 / 47) < 0.01
    randoms = inp[picked & (inp != MASK) & (inp != x)]
    assert not torch.isin(randoms, torch.tensor([PAD, BOS, MASK])).any()  # never a special id


def test_mask_tokens_is_reproducible_with_a_generator_and_checks_input():
    x = torch.randint(4, 30, (8, 40))
    a = mask_tokens(x, 3, 30, generator=torch.Generator().manual_seed(5))
    b = mask_tokens(x, 3, 30, generator=torch.Generator().manual_seed(5))
    assert all(torch.equal(u, v) for u, v in zip(a, b))
    with pytest.raises(ValueError, match="mask_id=30 is not an id of the vocabulary 0..29"):
        mask_tokens(x, 30, 30)
    with pytest.raises(ValueError, match="p must lie in"):
        mask_tokens(x, 3, 30, p=0.0)
    with pytest.raises(ValueError, match=r"\(batch, t\) tensor of ids"):
        mask_tokens(x[0], 3, 30)


def test_sample_next_greedy_temperature_and_top_k():
    logits = torch.tensor([[0.0, 2.0, 1.0, -1.0]])
    assert sample_next(logits, greedy=True).tolist() == [1]
    g = torch.Generator().manual_seed(0)
    draws = torch.stack([sample_next(logits, top_k=2, generator=g) for _ in range(2000)])
    assert set(draws.flatten().tolist()) == {1, 2}  # only the two best
    share_best = (draws == 1).float().mean().item()
    assert abs(share_best - torch.tensor([2.0, 1.0]).softmax(0)[0].item()) < 0.03
    cold = torch.stack([sample_next(logits, temperature=0.05, generator=g) for _ in range(200)])
    assert (cold == 1).all()
    hot = torch.stack([sample_next(logits, temperature=100.0, generator=g) for _ in range(4000)])
    assert all(abs((hot == k).float().mean().item() - 0.25) < 0.03 for k in range(4))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        sample_next(logits, temperature=0)
    with pytest.raises(ValueError, match="top_k must be a positive int"):
        sample_next(logits, top_k=0)
    with pytest.raises(ValueError, match=r"\(batch, vocab\)"):
        sample_next(logits[0])


def test_generate_extends_greedily_like_a_loop_and_stops_at_eos():
    torch.manual_seed(0)
    m = DecoderOnly(TransformerConfig(vocab_size=20, d_model=16, n_heads=2, d_ff=32,
                                      n_layers=1, dropout=0.0, max_len=12))
    prompt = torch.tensor([[1, 5, 6], [1, 7, 8]])
    out = generate(m, prompt, 6, greedy=True)
    assert out.shape == (2, 9) and torch.equal(out[:, :3], prompt)
    ids = prompt
    for _ in range(6):  # the same by hand
        ids = torch.cat([ids, m(ids)[:, -1].argmax(-1, keepdim=True)], 1)
    assert torch.equal(out, ids)
    # prefixes longer than max_len are cut to the last max_len tokens
    assert generate(m, prompt, 15, greedy=True).shape == (2, 18)
    # eos: each sequence stops at its first eos and is padded with eos after
    first = out[0, 3].item()
    stopped = generate(m, prompt, 6, greedy=True, eos_id=first)
    assert (stopped[0, 3:] == first).all()
    assert m.training  # left in the mode it was in
