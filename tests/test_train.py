"""minformer.train: the loss, the schedule and the one training loop."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minformer.train import (
    History,
    sequence_loss,
    smoothed_cross_entropy,
    train,
    warmup_inverse_sqrt,
    warmup_linear_decay,
)


def test_sequence_loss_ignores_padding_and_smooths_labels():
    torch.manual_seed(0)
    logits = torch.randn(2, 4, 7)
    tgt = torch.tensor([[3, 4, 0, 0], [5, 6, 1, 0]])
    real = tgt != 0
    expected = F.cross_entropy(logits[real], tgt[real])
    torch.testing.assert_close(sequence_loss(logits, tgt), expected)
    # label smoothing ε: (1-ε)·CE + ε·mean over the vocabulary of -log p
    eps = 0.1
    logp = logits[real].log_softmax(-1)
    smoothed = ((1 - eps) * -logp.gather(1, tgt[real][:, None])[:, 0] - eps * logp.mean(-1)).mean()
    torch.testing.assert_close(sequence_loss(logits, tgt, label_smoothing=eps), smoothed)
    with pytest.raises(ValueError, match=r"logits \(2, 4, 7\), tgt_out \(2, 3\)"):
        sequence_loss(logits, tgt[:, :3])
    with pytest.raises(ValueError, match="label_smoothing must lie in"):
        sequence_loss(logits, tgt, label_smoothing=1.0)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.5])
def test_smoothed_cross_entropy_matches_pytorch_value_and_gradient(eps):
    """The hand-written gradient (softmax minus the smoothed target) is PyTorch's, to rounding,
    in float64 and float32."""
    torch.manual_seed(0)
    for dtype, tol in ((torch.float64, 1e-12), (torch.float32, 1e-6)):
        z = (3 * torch.randn(37, 301, dtype=dtype)).requires_grad_()
        y = torch.randint(0, 301, (37,))
        ours = smoothed_cross_entropy(z, y, eps)
        (g_ours,) = torch.autograd.grad(3.0 * ours, z)  # an upstream gradient that is not 1
        theirs = F.cross_entropy(z, y, label_smoothing=eps)
        (g_theirs,) = torch.autograd.grad(3.0 * theirs, z)
        torch.testing.assert_close(ours, theirs, rtol=tol, atol=tol)
        torch.testing.assert_close(g_ours, g_theirs, rtol=tol, atol=tol)
    z64 = torch.randn(5, 11, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: smoothed_cross_entropy(x, y[:5] % 11, eps), (z64,))


def test_smoothed_cross_entropy_computes_half_precision_in_float32():
    torch.manual_seed(0)
    z = torch.randn(8, 50).to(torch.bfloat16)
    y = torch.randint(0, 50, (8,))
    out = smoothed_cross_entropy(z, y, 0.1)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, F.cross_entropy(z.float(), y, label_smoothing=0.1))


@pytest.mark.parametrize("args, error, message", [
    ((torch.zeros(2, 3, 4), torch.zeros(2, dtype=torch.long)), ValueError, "logits must have"),
    ((torch.zeros(2, 4), torch.zeros(3, dtype=torch.long)), ValueError,
     r"logits \(2, 4\), labels \(3,\)"),
    ((torch.zeros(2, 4), torch.tensor([1, 4])), ValueError, r"labels must lie in \[0, 4\).*1\.\.4"),
    ((torch.zeros(2, 4), torch.tensor([-1, 2])), ValueError, r"got -1\.\.2"),
    ((torch.zeros(2, 4), torch.tensor([1.0, 2.0])), TypeError, "labels must be int64"),
    ((torch.zeros(0, 4), torch.zeros(0, dtype=torch.long)), ValueError, "no rows to score"),
    ((torch.zeros(2, 4, dtype=torch.long), torch.zeros(2, dtype=torch.long)), TypeError,
     "logits must be a floating-point tensor"),
    ((torch.zeros(2, 4), torch.zeros(2, dtype=torch.long), 1.0), ValueError,
     "label_smoothing must lie in"),
])
def test_smoothed_cross_entropy_refuses_bad_input(args, error, message):
    with pytest.raises(error, match=message):
        smoothed_cross_entropy(*args)


def test_sequence_loss_is_importable_from_rnn_as_before():
    from minformer import rnn

    assert rnn.sequence_loss is sequence_loss


def test_warmup_then_inverse_square_root():
    w = 100
    f = [warmup_inverse_sqrt(s, w) for s in range(1000)]
    assert f[0] == pytest.approx(1 / w) and f[w - 1] == pytest.approx(1.0)
    assert max(f) == pytest.approx(1.0)
    assert all(a < b for a, b in zip(f[:w - 1], f[1:w]))  # rises
    assert all(a > b for a, b in zip(f[w:-1], f[w + 1:]))  # then falls
    assert f[4 * w - 1] == pytest.approx(0.5)  # √(w / 4w)
    # the paper's formula, d_model^-0.5 · min(n^-0.5, n · w^-1.5), is this times its peak
    d = 512
    for n in (1, 50, 100, 400, 4000):
        paper = d ** -0.5 * min(n ** -0.5, n * w ** -1.5)
        assert paper == pytest.approx(d ** -0.5 * w ** -0.5 * warmup_inverse_sqrt(n - 1, w))
    assert warmup_inverse_sqrt(10, 0) == 1.0
    with pytest.raises(TypeError, match="warmup must be an int; got 2.5"):
        warmup_inverse_sqrt(0, 2.5)
    with pytest.raises(ValueError, match="warmup must be an int ≥ 0; got -1"):
        warmup_inverse_sqrt(0, -1)


def test_warmup_then_linear_decay_to_zero():
    w, n = 100, 1000
    f = [warmup_linear_decay(s, w, n) for s in range(n + 5)]
    assert f[0] == pytest.approx(1 / w) and f[w - 1] == pytest.approx(1.0) and max(f) == 1.0
    assert all(a < b for a, b in zip(f[:w - 1], f[1:w]))  # rises
    assert all(a > b for a, b in zip(f[w:n], f[w + 1:n + 1]))  # then falls, in a straight line
    assert all(b - a == pytest.approx(-1 / (n - w)) for a, b in zip(f[w:n], f[w + 1:n]))
    assert f[(w + n) // 2] == pytest.approx(0.5)  # halfway down at the middle of the decay
    assert f[n - 1] == pytest.approx(1 / (n - w)) and f[n] == 0.0 and f[n + 4] == 0.0
    assert warmup_linear_decay(0, 0, 10) == 1.0  # no warmup: starts at the peak
    with pytest.raises(ValueError, match="warmup=10 must be smaller than steps=10"):
        warmup_linear_decay(0, 10, 10)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        warmup_linear_decay(0, 0, 0)
    with pytest.raises(TypeError, match="warmup must be an int; got 2.5"):
        warmup_linear_decay(0, 2.5, 10)


def test_train_follows_the_linear_schedule_and_refuses_it_without_steps():
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    hist = train(model, _regression(), _mse, opt, steps=50, warmup=10, schedule="linear",
                 progress=False)
    assert hist.lrs == pytest.approx([0.1 * warmup_linear_decay(s, 10, 50) for s in range(50)])
    assert hist.lrs[-1] == pytest.approx(0.1 / 40) and opt.param_groups[0]["lr"] == 0.1
    with pytest.raises(ValueError, match='schedule="linear" decays to zero at the last step'):
        train(model, _regression(), _mse, opt, max_seconds=1.0, schedule="linear")
    with pytest.raises(ValueError, match="warmup=50 must be smaller than steps=50"):
        train(model, _regression(), _mse, opt, steps=50, warmup=50, schedule="linear")
    with pytest.raises(ValueError, match="schedule must be one of"):
        train(model, _regression(), _mse, opt, steps=5, schedule="cosine")


def _regression(n=256, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 3, generator=g)
    y = X @ torch.tensor([1.0, -2.0, 0.5]) + 0.3
    return [(X[i:i + 32], y[i:i + 32]) for i in range(0, n, 32)]


def _mse(model, batch):
    X, y = batch
    return F.mse_loss(model(X)[:, 0], y), len(y)


def test_train_fits_a_line_and_reports_what_happened():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    evals = []
    hist = train(model, _regression(), _mse, opt, steps=300, warmup=20, eval_every=100,
                 eval_fn=lambda m: evals.append(m.training) or 0.0, progress=False)
    assert isinstance(hist, History) and hist.steps == 300
    assert hist.losses[-1] < 1e-3 < hist.losses[0]
    assert hist.tokens == 300 * 32 and hist.tokens_per_second > 0
    assert [e[0] for e in hist.evals] == [100, 200, 300]
    assert evals == [False, False, False] and model.training  # evaluated in eval mode
    assert hist.lrs[0] == pytest.approx(0.05 / 20) and max(hist.lrs) == pytest.approx(0.05)
    assert opt.param_groups[0]["lr"] == 0.05  # the peak is left behind
    assert len(hist.smoothed(10)) == 300


def test_train_re_iterates_data_and_calls_a_function_each_epoch():
    epochs = []

    def data(epoch):
        epochs.append(epoch)
        return _regression()[:2]

    model = nn.Linear(3, 1)
    train(model, data, _mse, torch.optim.SGD(model.parameters(), lr=0.01), steps=7,
          progress=False)
    assert epochs == [0, 1, 2, 3]


def test_train_stops_on_the_time_budget():
    model = nn.Linear(3, 1)
    hist = train(model, _regression(), _mse, torch.optim.SGD(model.parameters(), lr=0.01),
                 max_seconds=0.2, progress=False)
    assert hist.steps > 1 and 0.2 <= hist.seconds < 2.0


def test_clipping_bounds_the_gradient_norm():
    model = nn.Linear(3, 1)
    norms = []

    def loss_fn(m, batch):
        return 1e6 * _mse(m, batch)[0]

    class Spy(torch.optim.SGD):
        def step(self, closure=None):
            norms.append(math.sqrt(sum(float(p.grad.pow(2).sum()) for p in model.parameters())))
            return super().step(closure)

    train(model, _regression(), loss_fn, Spy(model.parameters(), lr=0.0), steps=3, clip=1.0,
          progress=False)
    assert max(norms) == pytest.approx(1.0, rel=1e-4)


def test_train_runs_under_bf16_autocast_on_cpu():
    torch.manual_seed(0)
    model = nn.Linear(3, 1)
    seen = []

    def loss_fn(m, batch):
        out = m(batch[0])
        seen.append(out.dtype)
        return F.mse_loss(out[:, 0].float(), batch[1])

    train(model, _regression(), loss_fn, torch.optim.Adam(model.parameters()), steps=2,
          autocast_dtype=torch.bfloat16, progress=False)
    assert seen == [torch.bfloat16] * 2 and model.weight.dtype == torch.float32


def test_train_refuses_bad_arguments_and_reports_divergence():
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="give steps=..., max_seconds=..., or both"):
        train(model, _regression(), _mse, opt)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        train(model, _regression(), _mse, opt, steps=0)
    with pytest.raises(TypeError, match="steps must be an int; got 10.0"):
        train(model, _regression(), _mse, opt, steps=10.0)
    with pytest.raises(ValueError, match=r"clip must lie in \(0, inf\)"):
        train(model, _regression(), _mse, opt, steps=1, clip=0.0)
    with pytest.raises(ValueError, match="eval_every needs an eval_fn"):
        train(model, _regression(), _mse, opt, steps=1, eval_every=5)
    with pytest.raises(ValueError, match="yielded no batch"):
        train(model, [], _mse, opt, steps=1, progress=False)
    with pytest.raises(FloatingPointError, match="the loss became nan at step 0"):
        train(model, _regression(), lambda m, b: m(b[0]).sum() * float("nan"), opt, steps=1,
              progress=False)


@pytest.mark.parametrize("every, error, match", [
    (-1, ValueError, "eval_every must be an int ≥ 0; got -1"),
    (2.5, TypeError, r"eval_every must be an int; got 2\.5"),
    (True, TypeError, "eval_every must be an int; got True"),
])
def test_train_refuses_an_eval_every_that_is_not_a_count(every, error, match):
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(error, match=match):
        train(model, _regression(), _mse, opt, steps=3, eval_fn=lambda m: 0.0, eval_every=every,
              progress=False)
    assert opt.param_groups[0]["lr"] == 0.1 and model.weight.grad is None  # refused before training


def test_evaluation_runs_without_gradients_and_a_failing_one_leaves_the_model_training():
    model = nn.Sequential(nn.Linear(3, 1), nn.Dropout(0.1))
    seen = []

    def eval_fn(m):
        seen.append((m.training, m[1].training, torch.is_grad_enabled()))
        if len(seen) == 2:
            raise RuntimeError("evaluation failed")
        return 0.0

    with pytest.raises(RuntimeError, match="evaluation failed"):
        train(model, _regression(), _mse, torch.optim.SGD(model.parameters(), lr=0.01), steps=4,
              eval_fn=eval_fn, eval_every=1, progress=False)
    assert seen == [(False, False, False)] * 2
    assert model.training and model[1].training and torch.is_grad_enabled()


def test_train_translator_refuses_a_model_that_disagrees_with_the_tokenizer():
    from minformer.rnn import Seq2SeqGRU
    from minformer.tokenizer import BPETokenizer
    from minformer.train_translator import train_translator
    from minformer.transformer import Transformer, TransformerConfig

    tok = BPETokenizer.train(["low lower lowest"] * 3, 4 + 256 + 4)
    ids = dict(pad_id=tok.pad_id, bos_id=tok.bos_id, eos_id=tok.eos_id)
    small = dict(d_model=8, n_heads=2, d_ff=16, n_layers=1, max_len=16, dropout=0.0)
    good = TransformerConfig(vocab_size=tok.vocab_size, **small, **ids)
    pairs = [("low", "lower"), ("lower", "lowest")]

    def run(config, **kw):
        return train_translator(config, tok, pairs, steps=1, batch_size=2, progress=False,
                                device="cpu", **kw)

    for change, match in [
        (dict(bos_id=5), f"config.bos_id=5 but tokenizer.bos_id={tok.bos_id}"),
        (dict(pad_id=4), f"config.pad_id=4 but tokenizer.pad_id={tok.pad_id}"),
        (dict(tgt_vocab_size=300), f"config.tgt_vocab_size=300 but tokenizer.vocab_size={tok.vocab_size}"),
    ]:
        bad = TransformerConfig(vocab_size=tok.vocab_size, **small, **{**ids, **change})
        with pytest.raises(ValueError, match=match):
            run(bad)
        with pytest.raises(ValueError, match=match.replace("config.", "model.config.", 1)):
            run(Transformer(bad))
    with pytest.raises(ValueError, match=f"model.tgt_vocab=100 but tokenizer.vocab_size={tok.vocab_size}"):
        run(Seq2SeqGRU(tok.vocab_size, 100, 4, 4))
    with pytest.raises(ValueError, match="average_last must be an int ≥ 0; got -1"):
        run(good, average_last=-1)
    _, history = run(good)  # the tokenizer's own ids pass
    assert history.steps == 1
    _, history = run(Seq2SeqGRU(tok.vocab_size, tok.vocab_size, 4, 4, pad_id=tok.pad_id))
    assert history.steps == 1


def test_history_to_dict_and_back_through_json():
    h = History(losses=[3.5, 2.25], lrs=[1e-3, 5e-4], evals=[(1, 0.5, 4.0), (2, 1.0, 3.0)],
                seconds=1.0, eval_seconds=0.25, tokens=64)
    back = History.from_dict(json.loads(json.dumps(h.to_dict())))
    assert back == h and back.evals[0] == (1, 0.5, 4.0)
    # a shipped history without learning rates or evaluation time (chapter 13's race)
    race = History.from_dict({"losses": [2.0], "evals": [[1, 0.1, 0.5]], "seconds": 2.0,
                              "tokens": 9})
    assert (race.lrs, race.eval_seconds, race.evals, race.steps) == ([], 0.0, [(1, 0.1, 0.5)], 1)
    with pytest.raises(ValueError, match="lacks tokens"):
        History.from_dict({"losses": [2.0], "evals": [], "seconds": 2.0})
