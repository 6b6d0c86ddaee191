"""The chapter 7 checkers accept correct answers and reject typical wrong ones with a message
that says what is wrong."""

import torch
from helpers import rejects

from minformer.blocks import LayerNorm
from minformer.checks import check_encoder_layer, check_layer_norm

# -- check_layer_norm ----------------------------------------------------------------------

def ln(x, gamma, beta, eps, dim=-1, unbiased=False):
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, unbiased=unbiased, keepdim=True)
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def test_check_layer_norm_accepts_correct(capsys):
    check_layer_norm(ln)
    check_layer_norm(lambda x, g, b, eps: torch.nn.functional.layer_norm(x, (x.shape[-1],), g, b,
                                                                          eps))

    def package(x, g, b, eps):
        m = LayerNorm(x.shape[-1], eps)
        with torch.no_grad():
            m.weight.copy_(g)
            m.bias.copy_(b)
            return m(x)
    check_layer_norm(package)
    assert capsys.readouterr().out.count("✓ layer norm: 9 cases passed") == 3


def test_check_layer_norm_rejects_wrong_axis():
    rejects(check_layer_norm, lambda x, g, b, e: ln(x, g, b, e, dim=0), "the batch axis",
            "last axis")
    rejects(check_layer_norm, lambda x, g, b, e: ln(x, g, b, e, dim=-2), "sequence axis",
            "last axis")
    # BatchNorm-style: statistics over batch and sequence together
    rejects(check_layer_norm,
            lambda x, g, b, e: ln(x, g, b, e, dim=tuple(range(x.ndim - 1))), "as BatchNorm does")


def test_check_layer_norm_rejects_unbiased_variance():
    rejects(check_layer_norm, lambda x, g, b, e: ln(x, g, b, e, unbiased=True), "unbiased",
            "unbiased=False")


def test_check_layer_norm_rejects_eps_outside_sqrt():
    def eps_outside(x, g, b, eps):
        mu = x.mean(-1, keepdim=True)
        return g * (x - mu) / (x.var(-1, unbiased=False, keepdim=True).sqrt() + eps) + b
    rejects(check_layer_norm, eps_outside, "inside the square root")


def test_check_layer_norm_rejects_missing_or_swapped_gamma_beta():
    def z(x, eps):
        return ln(x, 1.0, 0.0, eps)
    rejects(check_layer_norm, lambda x, g, b, e: z(x, e), "γ and β are missing")
    rejects(check_layer_norm, lambda x, g, b, e: g * z(x, e), "shift β is missing")
    rejects(check_layer_norm, lambda x, g, b, e: z(x, e) + b, "scale γ is missing")
    rejects(check_layer_norm, lambda x, g, b, e: b * z(x, e) + g, "swapped")


def test_check_layer_norm_rejects_nan_and_shape():
    def no_eps(x, g, b, eps):
        mu = x.mean(-1, keepdim=True)
        return g * (x - mu) / x.var(-1, unbiased=False, keepdim=True).sqrt() + b
    rejects(check_layer_norm, no_eps, "ε is missing", "divides by zero")

    def no_eps_safe_on_small_values(x, g, b, eps):  # reaches the constant tokens' case
        return ln(x, g, b, eps) if eps > 1e-3 else no_eps(x, g, b, eps)
    rejects(check_layer_norm, no_eps_safe_on_small_values, "NaN", "zero variance")
    rejects(check_layer_norm, lambda x, g, b, e: ln(x, g, b, e).mean(-1), "expected shape")


# -- check_encoder_layer ---------------------------------------------------------------------

def encoder_layer(x, layer, norm_first):
    sa, ff, n1, n2 = layer.self_attn, layer.ffn, layer.norm1, layer.norm2
    if norm_first:
        x = x + sa(n1(x))
        return x + ff(n2(x))
    x = n1(x + sa(x))
    return n2(x + ff(x))


def test_check_encoder_layer_accepts_correct(capsys):
    check_encoder_layer(encoder_layer)
    assert capsys.readouterr().out.count("✓ encoder layer: 10 cases passed") == 1


def test_check_encoder_layer_does_not_disturb_the_callers_seed():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check_encoder_layer(encoder_layer)
    assert torch.equal(torch.rand(3), expected)


def test_check_encoder_layer_rejects_swapped_placement():
    rejects(check_encoder_layer, lambda x, layer, nf: encoder_layer(x, layer, not nf),
            "you computed the pre-norm layer", "asks for post-norm")


def test_check_encoder_layer_rejects_missing_residuals():
    def no_attention_residual(x, layer, norm_first):
        sa, ff, n1, n2 = layer.self_attn, layer.ffn, layer.norm1, layer.norm2
        if norm_first:
            x = sa(n1(x))
            return x + ff(n2(x))
        x = n1(sa(x))
        return n2(x + ff(x))
    rejects(check_encoder_layer, no_attention_residual, "residual around attention")

    def no_ffn_residual(x, layer, norm_first):
        sa, ff, n1, n2 = layer.self_attn, layer.ffn, layer.norm1, layer.norm2
        if norm_first:
            x = x + sa(n1(x))
            return ff(n2(x))
        x = n1(x + sa(x))
        return n2(ff(x))
    rejects(check_encoder_layer, no_ffn_residual, "residual around the FFN")


def test_check_encoder_layer_rejects_misplaced_norms():
    def post_without_norms(x, layer, norm_first):
        if norm_first:
            return encoder_layer(x, layer, True)
        x = x + layer.self_attn(x)
        return x + layer.ffn(x)
    rejects(check_encoder_layer, post_without_norms, "after each addition")

    def pre_with_extra_norm(x, layer, norm_first):
        if not norm_first:
            return encoder_layer(x, layer, False)
        z = layer.norm1(x + layer.self_attn(layer.norm1(x)))
        return layer.norm2(z + layer.ffn(layer.norm2(z)))
    rejects(check_encoder_layer, pre_with_extra_norm, "does not normalize the sum")
