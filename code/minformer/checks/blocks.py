"""Checkers for chapter 7: LayerNorm from scratch and the encoder layer's two norm placements."""

import torch

from ..blocks import EncoderLayer
from ._core import (
    call,
    checker,
    expect_close,
    expect_finite,
    expect_shape,
    expect_tensor,
    fail,
    matches,
    random_name,
    to_numpy,
)


def _ln(x, gamma, beta, eps, *, dim=-1, unbiased=False, eps_inside=True, affine="both"):
    """LayerNorm and typical wrong versions of it (for the diagnosis)."""
    mu = x.mean(dim=dim, keepdim=True)
    var = x.var(dim=dim, unbiased=unbiased, keepdim=True)
    z = (x - mu) / (torch.sqrt(var + eps) if eps_inside else torch.sqrt(var) + eps)
    if affine == "both":
        return gamma * z + beta
    if affine == "gamma":
        return gamma * z
    if affine == "beta":
        return z + beta
    if affine == "swapped":
        return beta * z + gamma
    return z


def _ln_cases(rng, seed):
    g = torch.Generator().manual_seed(2)
    rg = torch.Generator().manual_seed(seed)
    shape = (int(rng.integers(1, 4)), int(rng.integers(9, 14)), 2 * int(rng.integers(2, 6)) + 1)
    r_gamma = 1 + 0.5 * torch.randn(shape[-1], generator=rg)
    r_beta = 0.5 * torch.randn(shape[-1], generator=rg)
    offsets = torch.tensor([0.0, 120.0, -90.0])[:, None, None]  # (3, 1, 1)
    ties = torch.tensor([[[0.0, 0, 0, 1, 1, 1], [2.0, 2, 0, 0, 2, 2], [0.0] * 6]])
    d = 6
    gamma, beta = 1 + 0.5 * torch.randn(d, generator=g), 0.5 * torch.randn(d, generator=g)
    small = torch.randn(4, 5, d, generator=g) * 0.05  # small variance: eps matters
    const = torch.full((2, 3, d), 7.0)  # constant tokens: variance 0
    return [
        ("x (2, 3, 6)", torch.randn(2, 3, d, generator=g), gamma, beta, 1e-5),
        ("x (5, 6), one sequence", 3 + 2 * torch.randn(5, d, generator=g), gamma, beta, 1e-5),
        ("x (4, 5, 6) with small values and eps = 0.01", small, gamma, beta, 1e-2),
        ("x (2, 3, 6) of constant tokens (variance 0)", const, gamma, beta, 1e-5),
        ("x (3, 4, 6) far from 0", 100 + torch.randn(3, 4, d, generator=g), gamma, beta, 1e-5),
        ("x (3, 2, 6) whose sequences sit far apart (means 0, 120, -90)",
         offsets + torch.randn(3, 2, d, generator=g), gamma, beta, 1e-5),
        ("x (1, 3, 6) with ties and an all-zero token, eps = 0.5", ties, gamma, beta, 0.5),
        ("x (1, 9, 6), one sequence of 9 tokens", torch.randn(1, 9, d, generator=g), gamma,
         beta, 1e-5),
        (random_name(seed, f"x {shape}"), 2 * torch.randn(*shape, generator=rg) + 1, r_gamma,
         r_beta, float(rng.choice([1e-5, 1e-3, 0.1]))),
    ]


@checker("layer norm")
def check_layer_norm(fn, *, rng, seed) -> int:
    """Check ``fn(x, gamma, beta, eps)`` = γ ⊙ (x - μ) / √(σ² + ε) + β over the last axis.

    x: (..., d) tensor, gamma and beta: (d,), eps: float. Returns (..., d).
    """
    cases = _ln_cases(rng, seed)
    for name, x, gamma, beta, eps in cases:
        out = call(fn, x.clone(), gamma.clone(), beta.clone(), eps, what="layer_norm", where=name)
        got = to_numpy(out, what="layer_norm")
        expect_shape(got, tuple(x.shape), labels="(..., d)", hint="LayerNorm keeps the shape")
        expect_tensor(out, "layer_norm", x.dtype, where=name)
        expect_finite(got, "a token with zero variance divides by zero unless ε is added "
                      "inside the square root")
        expected = _ln(x, gamma, beta, eps).numpy()
        if matches(got, expected):
            continue

        def wrong(got=got, x=x, gamma=gamma, beta=beta, eps=eps, **kw):
            return matches(got, _ln(x, gamma, beta, **{"eps": eps, **kw}).numpy())

        for dim, axis in ((-2, "the sequence axis (dim=-2)"), (0, "the batch axis (dim=0)")):
            if x.ndim + dim >= 1 and x.shape[dim] > 1 and (
                    wrong(dim=dim) or wrong(dim=dim, unbiased=True)):
                fail(f"on {name}: you normalized over {axis}; LayerNorm normalizes each token "
                     "over its own features (the last axis, dim=-1)")
        if x.ndim == 3 and (wrong(dim=(0, 1)) or wrong(dim=(0, 1), unbiased=True)):
            fail(f"on {name}: you normalized each feature over the batch and the positions, "
                 "as BatchNorm does; LayerNorm normalizes each token over its own features "
                 "(the last axis, dim=-1)")
        if wrong(dim=tuple(range(x.ndim))):
            fail(f"on {name}: you normalized over the whole tensor; LayerNorm normalizes each "
                 "token over its own features (the last axis, dim=-1)")
        if eps > 1e-4 and wrong(eps=0.0):
            fail(f"on {name}: ε is missing: divide by √(σ² + ε) (without it a token whose "
                 "features are all equal divides by zero)")
        for fixed in (1e-5, 1e-6):
            if abs(eps - fixed) > 1e-3 and wrong(eps=fixed):
                fail(f"on {name}: you used ε = {fixed:g}, not the eps = {eps:g} passed in: use "
                     "the argument eps")
        if wrong(unbiased=True):
            fail(f"on {name}: you used the unbiased variance (dividing by d - 1); LayerNorm uses "
                 "the biased one, dividing by d: x.var(dim=-1, unbiased=False)")
        if wrong(eps_inside=False):
            fail(f"on {name}: ε must go inside the square root: (x - μ) / √(σ² + ε), "
                 "not (x - μ) / (σ + ε)")
        if wrong(affine="none"):
            fail(f"on {name}: the output is normalized but γ and β are missing: "
                 "return gamma * x_hat + beta")
        if wrong(affine="gamma"):
            fail(f"on {name}: the shift β is missing: return gamma * x_hat + beta")
        if wrong(affine="beta"):
            fail(f"on {name}: the scale γ is missing: return gamma * x_hat + beta")
        if wrong(affine="swapped"):
            fail(f"on {name}: γ and β are swapped: γ scales, β shifts")
        expect_close(got, expected, f"on {name}, the output", atol=1e-5, rtol=1e-4)
    return len(cases)


def _layer_cases():
    torch.manual_seed(3)  # the layers' initial weights; the caller's seed is restored below
    cases = []
    for norm_first in (False, True, True, False):  # the last two: built one way, asked another
        layer = EncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first).eval()
        with torch.no_grad():  # non-trivial norms, so that a misplaced norm shows
            for norm in (layer.norm1, layer.norm2):
                norm.weight.uniform_(0.5, 1.5)
                norm.bias.uniform_(-0.5, 0.5)
        cases.append((norm_first, layer))
    # the argument disagrees with the layer's own attribute: the argument decides
    cases[2], cases[3] = (False, cases[2][1]), (True, cases[3][1])
    return cases


def _placed(x, layer, norm_first):
    """The layer's forward pass with the norms placed as ``norm_first`` says."""
    sa, ff, n1, n2 = layer.self_attn, layer.ffn, layer.norm1, layer.norm2
    if norm_first:
        z = x + sa(n1(x))
        return z + ff(n2(z))
    z = n1(x + sa(x))
    return n2(z + ff(z))


def _wrong_layers(x, layer, norm_first):
    """Typical mistakes, each as (output, message)."""
    sa, ff, n1, n2 = layer.self_attn, layer.ffn, layer.norm1, layer.norm2
    other = "post" if norm_first else "pre"
    wanted = "pre" if norm_first else "post"
    z = n1(x + sa(x))
    post = n2(z + ff(z))
    z = x + sa(n1(x))
    pre = z + ff(n2(z))
    swapped = (f"you computed the {other}-norm layer; norm_first={norm_first} asks for "
               f"{wanted}-norm")
    out = [(pre if not norm_first else post, swapped)]
    if norm_first:
        z = sa(n1(x))
        out.append((z + ff(n2(z)), ("the residual around attention is missing: "
                                    "x + SA(Norm(x))")))
        z = x + sa(n1(x))
        out.append((ff(n2(z)), "the residual around the FFN is missing: z + FFN(Norm(z))"))
        z = n1(x + sa(n1(x)))
        out.append((n2(z + ff(n2(z))), ("pre-norm does not normalize the sum: "
                                         "x + SA(Norm(x)), with no norm after the addition")))
    else:
        z = n1(sa(x))
        out.append((n2(z + ff(z)), ("the residual around attention is missing: "
                                    "Norm(x + SA(x))")))
        z = n1(x + sa(x))
        out.append((n2(ff(z)), "the residual around the FFN is missing: Norm(z + FFN(z))"))
        z = x + sa(x)
        out.append((z + ff(z), "post-norm applies norm1 and norm2 after each addition"))
    return out


@checker("encoder layer")
def check_encoder_layer(fn, *, rng, seed) -> int:
    """Check ``fn(x, layer, norm_first)``: the forward pass of an encoder layer built from
    ``layer.self_attn``, ``layer.ffn``, ``layer.norm1`` and ``layer.norm2`` (no dropout, no
    mask), post-norm if norm_first is False, pre-norm if True. x: (batch, t, d_model)."""
    state = torch.random.get_rng_state()
    try:
        cases = _layer_cases()
    finally:
        torch.random.set_rng_state(state)
    g = torch.Generator().manual_seed(4)
    rg = torch.Generator().manual_seed(seed)
    shape = (int(rng.integers(1, 4)), int(rng.integers(9, 14)), 8)
    inputs = [("x (2, 5, 8)", torch.randn(2, 5, 8, generator=g)),
              ("x (1, 9, 8)", torch.randn(1, 9, 8, generator=g)),
              ("x (3, 1, 8)", torch.randn(3, 1, 8, generator=g)),
              (random_name(seed, f"x {shape}"), torch.randn(*shape, generator=rg))]
    runs = [(norm_first, layer, x_name, x) for k, (norm_first, layer) in enumerate(cases)
            for x_name, x in (inputs[:1] if k >= 2 else inputs)]
    n = 0
    for norm_first, layer, x_name, x in runs:
        name = f"{x_name}, norm_first={norm_first}"
        if layer.norm_first != norm_first:
            name += f" (the layer itself was built with norm_first={layer.norm_first})"
        with torch.no_grad():
            out = call(fn, x.clone(), layer, norm_first, what="your encoder layer", where=name)
            got = to_numpy(out, what="your encoder layer")
            expect_shape(got, tuple(x.shape), labels="(batch, t, d_model)")
            expect_tensor(out, "your encoder layer", x.dtype, where=name)
            expected = _placed(x, layer, norm_first).numpy()
            if not matches(got, expected):
                if layer.norm_first != norm_first and matches(got, layer(x).numpy()):
                    fail(f"on {name}: you followed the layer's own layer.norm_first (or called "
                         "layer(x)); the argument norm_first decides where the norms go")
                for wrong, message in _wrong_layers(x, layer, norm_first):
                    if matches(got, wrong.numpy()):
                        fail(f"on {name}: {message}")
                expect_close(got, expected, f"on {name}, the output", atol=1e-5, rtol=1e-4)
        n += 1
    return n
