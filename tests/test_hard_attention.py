"""attnbook.hard_attention: soft attention, hard-attention sampling and the score-function gradient."""

import math

import pytest
import torch

from attnbook.attention import AdditiveAttention
from attnbook.hard_attention import (
    baseline_ablation,
    estimator_errors,
    exact_gradient,
    plain_score_function_gradient,
    sample_hard_attention,
    score_function_gradient,
    soft_attention,
)

NEG = float("-inf")


def _inputs(seed=0, B=3, S=5, d_v=4, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, S, generator=g, dtype=dtype)
    scores[0, -2:] = NEG  # padding in the first row
    return scores, torch.randn(B, S, d_v, generator=g, dtype=dtype)


def test_soft_attention_matches_the_additive_attention_module():
    torch.manual_seed(0)
    att = AdditiveAttention(query_size=3, key_size=4, attn_size=6)
    s, z = torch.randn(2, 3), torch.randn(2, 5, 4)
    mask = torch.tensor([[True] * 5, [True, True, False, False, False]])
    context, weights = soft_attention(att.scores(s, z, mask), z)
    ref_context, ref_weights = att(s, z, mask=mask)
    assert torch.allclose(context, ref_context, atol=1e-6) and torch.allclose(weights, ref_weights, atol=1e-6)


def test_soft_attention_worked_by_hand_and_keeps_dtype():
    scores = torch.tensor([[math.log(3.0), 0.0, NEG]], dtype=torch.float64)  # weights 3/4, 1/4, 0
    values = torch.tensor([[[4.0], [8.0], [1e6]]], dtype=torch.float64)
    context, weights = soft_attention(scores, values)
    assert torch.allclose(weights, torch.tensor([[0.75, 0.25, 0.0]], dtype=torch.float64))
    assert context.item() == pytest.approx(5.0) and context.dtype == torch.float64


def test_hard_attention_picks_one_value_with_the_softmax_frequencies():
    scores, values = _inputs()
    n = 20000
    tiled_s, tiled_v = scores.repeat(n, 1), values.repeat(n, 1, 1)
    context, index = sample_hard_attention(tiled_s, tiled_v, generator=torch.Generator().manual_seed(1))
    assert index.dtype == torch.long and index.shape == (3 * n,)
    assert torch.equal(context, tiled_v[torch.arange(3 * n), index])  # one-hot: a value, never a mixture
    assert not torch.isinf(tiled_s[torch.arange(3 * n), index]).any()  # padding is never drawn
    freq = torch.stack([torch.bincount(index.view(n, 3)[:, r], minlength=5) for r in range(3)]) / n
    p = torch.softmax(scores, -1)
    assert ((freq - p).abs() <= 6 * (p * (1 - p) / n).sqrt() + 1 / n).all()


def test_a_generator_makes_draws_repeatable():
    scores, values = _inputs()
    a = sample_hard_attention(scores, values, generator=torch.Generator().manual_seed(3))[1]
    b = sample_hard_attention(scores, values, generator=torch.Generator().manual_seed(3))[1]
    assert torch.equal(a, b)


def test_exact_gradient_matches_autograd():
    scores, values = _inputs(dtype=torch.float64)

    def f(c):
        return (c**2).sum(-1) + torch.sin(c).sum(-1)

    e = scores.clone().requires_grad_(True)
    losses = torch.stack([f(values[:, j]) for j in range(values.shape[1])], 1)  # (B, S)
    (torch.softmax(e, -1) * losses.masked_fill(torch.isinf(scores), 0.0)).sum().backward()
    assert torch.allclose(exact_gradient(scores, values, f), e.grad)


@pytest.mark.parametrize("num_samples", [2, 5])
def test_score_function_estimate_is_unbiased_and_ignores_constants(num_samples):
    scores, values = _inputs(seed=2, B=2, S=4)

    def f(c):
        return ((c - 0.5) ** 2).mean(-1)

    copies = 20000
    tiled_s, tiled_v = scores.repeat(copies, 1), values.repeat(copies, 1, 1)
    g = torch.Generator().manual_seed(4)
    est = score_function_gradient(tiled_s, tiled_v, f, num_samples, generator=g).double().view(copies, 2, 4)
    mean, sem = est.mean(0), est.std(0) / math.sqrt(copies)
    assert ((mean - exact_gradient(scores, values, f).double()).abs() <= 6 * sem + 1e-6).all()
    shifted = score_function_gradient(tiled_s, tiled_v, lambda c: f(c) + 1000.0, num_samples,
                                      generator=torch.Generator().manual_seed(4)).double().view(copies, 2, 4)
    assert torch.allclose(shifted, est, atol=1e-2)  # the baseline cancels the constant (up to float32 rounding)
    assert (est[:, 0, -2:] == 0).all()  # padded positions get no gradient


def test_bad_input_gets_a_clear_error():
    scores, values = _inputs()
    with pytest.raises(ValueError, match=r"values must have shape \(B, S, d_v\)"):
        soft_attention(scores, values[:, :3])
    with pytest.raises(TypeError, match="scores must be a floating-point tensor"):
        sample_hard_attention(scores.long(), values)
    with pytest.raises(ValueError, match="at least one finite score"):
        soft_attention(torch.full((1, 2), NEG), torch.zeros(1, 2, 1))
    with pytest.raises(ValueError, match="num_samples must be at least 2"):
        score_function_gradient(scores, values, lambda c: c.sum(-1), 1)
    with pytest.raises(ValueError, match="f must map contexts"):
        score_function_gradient(scores, values, lambda c: c, 3)


def test_estimator_errors_interleaves_the_estimators_and_checks_their_shape():
    calls = []

    def constant(value):
        def estimate(n):
            calls.append((value, n))
            return torch.full((1, 2), value)
        return estimate

    errors = estimator_errors({"a": constant(1.0), "b": constant(0.0)}, torch.zeros(1, 2), [2, 4], repeats=3)
    assert errors == {"a": [2.0, 2.0], "b": [0.0, 0.0]}  # squared distance summed over S
    assert calls == [(1.0, 2)] * 3 + [(0.0, 2)] * 3 + [(1.0, 4)] * 3 + [(0.0, 4)] * 3  # sizes outer
    with pytest.raises(ValueError, match="must return \\(1, S\\) = \\(1, 2\\)"):
        estimator_errors({"bad": lambda n: torch.zeros(1, 3)}, torch.zeros(1, 2), [2])


def test_the_estimate_without_a_baseline_is_unbiased_but_a_constant_in_f_spreads_it():
    scores, values = _inputs(seed=3, B=1, S=4, d_v=2)
    f = lambda c: (c ** 2).sum(-1)  # noqa: E731
    exact = exact_gradient(scores, values, f)
    rows, many = scores.expand(20000, -1), values.expand(20000, -1, -1)
    g = torch.Generator().manual_seed(0)
    plain = plain_score_function_gradient(rows, many, f, 4, generator=g)
    assert plain.shape == rows.shape and plain.dtype == rows.dtype
    assert torch.allclose(plain.mean(0, keepdim=True), exact, atol=6 * plain.std(0).max().item() / 20000 ** 0.5)
    shifted = plain_score_function_gradient(rows, many, lambda c: f(c) + 100.0, 4, generator=g)
    based = score_function_gradient(rows, many, lambda c: f(c) + 100.0, 4, generator=g)
    assert shifted.std(0).sum() > 20 * based.std(0).sum()  # the baseline ignores the constant, the plain one not
    assert (plain[:, torch.isinf(scores[0])] == 0).all()  # padding gets nothing


def test_baseline_ablation_measures_both_estimators_for_each_size():
    scores, values = torch.tensor([[0.5, 0.0, -0.5]]), torch.tensor([[[0.0], [1.0], [3.0]]])
    f = lambda c: c.sum(-1) + 10.0  # noqa: E731
    out = baseline_ablation(scores, values, f, [2, 8, 32], repeats=300, generator=torch.Generator().manual_seed(1))
    assert list(out) == ["with baseline", "without baseline"]
    exact = exact_gradient(scores, values, f)
    for spread, mean in out.values():
        assert len(spread) == 3 and mean.shape == (3, 3)
        assert spread[0] > spread[1] > spread[2]  # more draws, less spread
        assert ((mean - exact).abs() <= 5 * torch.tensor(spread)[:, None] / 300 ** 0.5).all()  # unbiased
    assert all(w > 5 * b for w, b in zip(out["without baseline"][0], out["with baseline"][0], strict=True))
    with pytest.raises(ValueError, match="takes one row"):
        baseline_ablation(scores.expand(2, -1), values.expand(2, -1, -1), f, [2])
    with pytest.raises(ValueError, match="every size must be at least 2"):
        baseline_ablation(scores, values, f, [1])
    with pytest.raises(ValueError, match="repeats must be at least 2"):
        baseline_ablation(scores, values, f, [2], repeats=1)
