"""check_nadaraya_watson accepts Nadaraya–Watson regression and rejects the usual mistakes with a
message that names them."""

import numpy as np
import torch
from helpers import rejects as reject_with

from minformer.attention import softmax
from minformer.checks import check_nadaraya_watson
from minformer.checks.lookup import _nadaraya_watson


def rejects(fn, *fragments):
    reject_with(check_nadaraya_watson, fn, *fragments)


def scores(q, k, h):
    return -(q[:, None] - k[None, :]) ** 2 / (2 * h**2)  # (t_q, t_k)


def good(q, k, v, h):
    return softmax(scores(q, k, h), axis=-1) @ v


def test_reference_is_kernel_regression_by_loops():
    rng = np.random.default_rng(0)
    q, k, v, h = rng.normal(size=4), rng.normal(size=7), rng.normal(size=7), 0.7
    expected = []
    for qi in q:
        kernel = np.exp(-((qi - k) ** 2) / (2 * h**2))  # Gaussian kernel, constants cancel
        expected.append((kernel * v).sum() / kernel.sum())
    np.testing.assert_allclose(_nadaraya_watson(q, k, v, h), expected, rtol=1e-12)


def test_accepts_correct(capsys):
    check_nadaraya_watson(good)
    check_nadaraya_watson(_nadaraya_watson)
    assert "✓ Nadaraya–Watson regression: 8 cases passed" in capsys.readouterr().out


def test_accepts_torch_output():
    def in_torch(q, k, v, h):
        q, k, v = (torch.tensor(a) for a in (q, k, v))
        A = torch.softmax(-(q[:, None] - k[None, :]) ** 2 / (2 * h**2), dim=-1)
        return A @ v
    check_nadaraya_watson(in_torch)


def test_rejects_normalizing_over_the_queries():
    rejects(lambda q, k, v, h: softmax(scores(q, k, h), axis=0) @ v,
            "normalized over the queries", "axis -1")


def test_rejects_missing_normalization():
    rejects(lambda q, k, v, h: np.exp(scores(q, k, h)) @ v, "not normalized")


def test_rejects_bandwidth_not_squared():
    rejects(lambda q, k, v, h: softmax(-(q[:, None] - k) ** 2 / (2 * h), axis=-1) @ v,
            "bandwidth enters squared")


def test_rejects_missing_two_and_multiplying():
    rejects(lambda q, k, v, h: softmax(-(q[:, None] - k) ** 2 / h**2, axis=-1) @ v, "2h²")
    rejects(lambda q, k, v, h: softmax(-(q[:, None] - k) ** 2 * h**2 / 2, axis=-1) @ v,
            "do not multiply")


def test_rejects_unsquared_distance_and_wrong_sign():
    rejects(lambda q, k, v, h: softmax(-np.abs(q[:, None] - k) / (2 * h**2), axis=-1) @ v,
            "must be squared")
    rejects(lambda q, k, v, h: softmax(-scores(q, k, h), axis=-1) @ v, "grow with distance")


def test_rejects_wrong_output_shapes():
    rejects(lambda q, k, v, h: softmax(scores(q, k, h), axis=-1), "weight matrix")
    rejects(lambda q, k, v, h: softmax(scores(k, q, h), axis=0) @ good(q, k, v, h),
            "expected shape (5,)", "got (8,)", "t_q entries, not t_k")
    rejects(lambda q, k, v, h: good(q, k, v, h)[:, None], "expected shape (5,)", "1-D")


def test_rejects_underflow_with_a_hint():
    def naive(q, k, v, h):
        with np.errstate(invalid="ignore", under="ignore"):
            e = np.exp(scores(q, k, h))
            return (e @ v) / e.sum(axis=-1)
    rejects(naive, "underflowed", "largest score")


def test_rejects_stub_crash_and_none():
    rejects(lambda q, k, v, h: None, "returned None")
    rejects(lambda q, k, v, h: softmax(scores(q, k, h)) @ v[:3], "raised ValueError")


def test_rejects_an_unrecognised_wrong_answer_by_value():
    rejects(lambda q, k, v, h: good(q, k, v, h) + 0.01, "prediction is wrong at index")
