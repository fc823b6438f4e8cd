"""scaled_dot_product_attention, fused_attention and the masks, against PyTorch's kernel."""

import math

import pytest
import torch
import torch.nn.functional as F

from attnbook.attention import causal_mask, fused_attention, padding_mask, scaled_dot_product_attention
from attnbook.runtime import get_device

SHAPES = [  # (lead, T, S, d_k, d_v)
    ((2,), 4, 4, 8, 8),
    ((1,), 7, 5, 3, 6),  # batch 1, odd lengths, T != S
    ((3, 2), 1, 9, 16, 2),  # heads axis, a single query
]


def qkv(lead, T, S, d_k, d_v, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*lead, T, d_k, generator=g, dtype=dtype),
        torch.randn(*lead, S, d_k, generator=g, dtype=dtype),
        torch.randn(*lead, S, d_v, generator=g, dtype=dtype),
    )


def random_mask(shape, seed=1):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(shape, generator=g) < 0.5
    mask[..., 0] = True  # no fully masked rows here; they have a test of their own
    return mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["none", "random", "causal", "padding"])
def test_matches_torch(shape, dtype, kind):
    lead, T, S, d_k, d_v = shape
    q, k, v = qkv(lead, T, S, d_k, d_v, dtype)
    if kind == "none":
        mask = None
    elif kind == "random":
        mask = random_mask((*lead, T, S))
    elif kind == "causal":
        if T != S:
            pytest.skip("a causal mask needs T == S")
        mask = causal_mask(T)
    else:
        mask = torch.ones(*lead[:1], 1, S, dtype=torch.bool)
        mask[..., S // 2 + 1 :] = False  # pad the second half of the keys
        if len(lead) == 2:
            mask = mask.unsqueeze(1)  # (B, 1, 1, S)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    torch.testing.assert_close(out, expected, atol=tol, rtol=tol)
    torch.testing.assert_close(fused_attention(q, k, v, mask), expected, atol=tol, rtol=tol)
    assert out.dtype == weights.dtype == dtype
    assert weights.shape == (*lead, T, S)
    torch.testing.assert_close(weights.sum(-1), torch.ones(*lead, T, dtype=dtype))
    if mask is not None:
        assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()


def test_worked_example():
    # One query [1, 0]; keys [1, 0] and [0, 1]; scores [1, 0] / sqrt(2).
    q = torch.tensor([[[1.0, 0.0]]])
    k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])
    v = torch.tensor([[[10.0], [20.0]]])
    out, w = scaled_dot_product_attention(q, k, v)
    a = math.exp(1 / math.sqrt(2))
    assert w[0, 0].tolist() == pytest.approx([a / (a + 1), 1 / (a + 1)])
    assert out.item() == pytest.approx(10 * a / (a + 1) + 20 / (a + 1))


def test_is_causal_matches_causal_mask():
    q, k, v = qkv((2,), 6, 6, 8, 4)
    torch.testing.assert_close(fused_attention(q, k, v, is_causal=True),
                               scaled_dot_product_attention(q, k, v, causal_mask(6))[0])


def test_fully_masked_row_gives_zeros_like_torch():
    q, k, v = qkv((1,), 3, 4, 8, 2)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    out, w = scaled_dot_product_attention(q, k, v, mask)
    assert not torch.isnan(out).any() and (w[0, 1] == 0).all() and (out[0, 1] == 0).all()
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def test_gradients_flow_and_are_finite():
    q, k, v = (t.requires_grad_() for t in qkv((2,), 5, 5, 8, 3, torch.float64))
    mask = causal_mask(5)
    out, _ = scaled_dot_product_attention(q, k, v, mask)
    out.sum().backward()
    assert all(t.grad is not None and torch.isfinite(t.grad).all() for t in (q, k, v))
    assert torch.autograd.gradcheck(lambda a, b, c: scaled_dot_product_attention(a, b, c, mask)[0], (q, k, v))


def test_causal_mask_and_padding_mask():
    assert causal_mask(3).tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    ids = torch.tensor([[4, 5, 0], [6, 0, 0]])
    assert padding_mask(ids, 0).tolist() == [[[True, True, False]], [[True, False, False]]]
    assert causal_mask(4, device=get_device("cpu")).device.type == "cpu"


@pytest.mark.parametrize(
    "make, error, words",
    [
        (lambda q, k, v: (q, k[..., :-1], v, None), ValueError, "same width d_k"),
        (lambda q, k, v: (q, k, v[:, :-1], None), ValueError, "same length S"),
        (lambda q, k, v: (q, k[:1], v[:1], None), ValueError, "leading (batch) dimensions"),
        (lambda q, k, v: (q, k.double(), v, None), TypeError, "one dtype"),
        (lambda q, k, v: (q.long(), k.long(), v.long(), None), TypeError, "floating-point"),
        (lambda q, k, v: (q[0, 0], k, v, None), ValueError, "(..., length, width)"),
        (lambda q, k, v: (q, k, v, torch.ones(4, 4)), TypeError, "boolean tensor"),
        (lambda q, k, v: (q, k, v, torch.ones(4, 3, dtype=torch.bool)), ValueError, "does not broadcast"),
        # (B, 1, 1, S) against 3-D scores would silently broadcast to (B, B, T, S): refused.
        (lambda q, k, v: (q, k, v, torch.ones(2, 1, 1, 4, dtype=torch.bool)), ValueError, "does not broadcast"),
        (lambda q, k, v: ([[1.0]], k, v, None), TypeError, "torch.Tensor"),
    ],
)
def test_clear_errors(make, error, words):
    args = make(*qkv((2,), 4, 4, 8, 8))
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        scaled_dot_product_attention(*args)
    with pytest.raises(error):
        fused_attention(*args)


def test_mask_and_is_causal_together_is_refused():
    q, k, v = qkv((1,), 3, 3, 4, 4)
    with pytest.raises(ValueError, match="either mask or is_causal"):
        fused_attention(q, k, v, causal_mask(3), is_causal=True)


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_causal_mask_rejects_bad_length(bad):
    with pytest.raises(ValueError, match="positive int"):
        causal_mask(bad)


def test_padding_mask_rejects_bad_ids():
    with pytest.raises(TypeError, match="integer tensor"):
        padding_mask(torch.zeros(2, 3), 0)
    with pytest.raises(ValueError, match=r"\(B, S\)"):
        padding_mask(torch.zeros(3, dtype=torch.long), 0)


@pytest.mark.gpu
def test_cuda_matches_cpu():
    q, k, v = qkv((2,), 8, 8, 16, 16)
    mask = causal_mask(8)
    cpu, _ = scaled_dot_product_attention(q, k, v, mask)
    dev = torch.device("cuda")
    gpu, _ = scaled_dot_product_attention(q.to(dev), k.to(dev), v.to(dev), mask.to(dev))
    torch.testing.assert_close(gpu.cpu(), cpu, atol=1e-5, rtol=1e-4)
    fused = fused_attention(q.to(dev), k.to(dev), v.to(dev), mask.to(dev))
    torch.testing.assert_close(fused.cpu(), cpu, atol=1e-5, rtol=1e-4)


def test_scaling_ablation_shows_the_softmax_saturate_without_the_scale():
    """attnbook.attention.scaling_ablation (chapter 2's Part 14): with the scale nothing changes with d_k;
    without it the largest weight tends to 1 and the softmax's Jacobian to 0; the same draws for both."""
    from attnbook.attention import scaling_ablation

    d_ks = [1, 4, 64, 1024]
    out = scaling_ablation(d_ks, keys=16, queries=256, seed=3)
    assert set(out) == {"max_weight_scaled", "max_weight_unscaled", "grad_scaled", "grad_unscaled"}
    assert all(v.shape == (4,) and v.dtype == torch.float64 for v in out.values())
    assert out["max_weight_scaled"][0] == out["max_weight_unscaled"][0]  # d_k = 1: the scale is 1
    assert out["max_weight_scaled"].min() > 1 / 16 and out["max_weight_scaled"].max() < 0.35
    assert out["max_weight_unscaled"][-1] > 0.9 and out["grad_unscaled"][-1] < 0.01 < out["grad_scaled"].min()
    again = scaling_ablation(d_ks, keys=16, queries=256, seed=3)
    assert all(torch.equal(out[k], again[k]) for k in out)  # seeded
    with pytest.raises(ValueError, match="d_k must be a positive int"):
        scaling_ablation([0])
