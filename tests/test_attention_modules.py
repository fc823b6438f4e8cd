"""MultiHeadAttention: parity with nn.MultiheadAttention, explicit vs fused, clear errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnbook.attention import MultiHeadAttention, causal_mask, padding_mask

B, T, S, C, NH = 3, 5, 7, 12, 3


def make_pair(d_model: int = C, num_heads: int = NH, bias: bool = True, seed: int = 0):
    """Our module and nn.MultiheadAttention with the same weights, float64, dropout off."""
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, num_heads, bias=bias).double()
    if bias:  # non-zero biases, so that a swapped bias would show
        for proj in (ours.q_proj, ours.k_proj, ours.v_proj, ours.out_proj):
            nn.init.normal_(proj.bias)
    ref = nn.MultiheadAttention(d_model, num_heads, dropout=0.0, bias=bias, batch_first=True).double()
    with torch.no_grad():
        # in_proj_weight stacks W^Q, W^K, W^V along the output axis: (3 C, C)
        ref.in_proj_weight.copy_(torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight]))
        ref.out_proj.weight.copy_(ours.out_proj.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias]))
            ref.out_proj.bias.copy_(ours.out_proj.bias)
    return ours.eval(), ref.eval()


def pad_ids(lengths: list[int], total: int) -> torch.Tensor:
    """(B, total) ids with real tokens (1) up to each length, then padding (0)."""
    return (torch.arange(total)[None, :] < torch.tensor(lengths)[:, None]).long()


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, atol=1e-10, rtol=1e-8)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("need_weights", [False, True])
def test_self_attention_matches_torch(bias: bool, need_weights: bool) -> None:
    ours, ref = make_pair(bias=bias)
    x = torch.randn(B, T, C, dtype=torch.float64)
    out, w = ours(x, need_weights=need_weights)
    ref_out, ref_w = ref(x, x, x, need_weights=True, average_attn_weights=False)
    assert close(out, ref_out)
    if need_weights:
        assert w.shape == (B, NH, T, T)
        assert close(w, ref_w)
    else:
        assert w is None


def test_cross_attention_matches_torch() -> None:
    ours, ref = make_pair()
    x = torch.randn(B, T, C, dtype=torch.float64)
    mem = torch.randn(B, S, C, dtype=torch.float64)
    val = torch.randn(B, S, C, dtype=torch.float64)
    out, w = ours(x, mem, val, need_weights=True)
    ref_out, ref_w = ref(x, mem, val, average_attn_weights=False)
    assert w.shape == (B, NH, T, S)
    assert close(out, ref_out) and close(w, ref_w)
    # value defaults to key
    assert close(ours(x, mem)[0], ref(x, mem, mem)[0])


@pytest.mark.parametrize("need_weights", [False, True])
def test_causal_mask_matches_torch(need_weights: bool) -> None:
    ours, ref = make_pair()
    x = torch.randn(B, T, C, dtype=torch.float64)
    ref_out, ref_w = ref(
        x, x, x, attn_mask=~causal_mask(T), average_attn_weights=False
    )  # True = blocked there
    out, w = ours(x, mask=causal_mask(T), need_weights=need_weights)
    assert close(out, ref_out)
    out_fast, w_fast = ours(x, is_causal=True, need_weights=need_weights)
    assert close(out_fast, ref_out)
    if need_weights:
        assert close(w, ref_w) and close(w_fast, ref_w)
        assert (w.triu(diagonal=1) == 0).all()


@pytest.mark.parametrize("need_weights", [False, True])
def test_padding_mask_matches_torch(need_weights: bool) -> None:
    ours, ref = make_pair()
    x = torch.randn(B, T, C, dtype=torch.float64)
    mem = torch.randn(B, S, C, dtype=torch.float64)
    ids = pad_ids([S, 4, 1], S)
    mask = padding_mask(ids, pad_id=0)  # (B, 1, S), True = real token
    ref_out, ref_w = ref(x, mem, mem, key_padding_mask=~mask.squeeze(1), average_attn_weights=False)
    out, w = ours(x, mem, mask=mask, need_weights=need_weights)
    assert close(out, ref_out)
    if need_weights:
        assert close(w, ref_w)
        assert (w[1, :, :, 4:] == 0).all() and (w[2, :, :, 1:] == 0).all()


def test_padding_and_causal_combined_match_torch() -> None:
    ours, ref = make_pair()
    x = torch.randn(B, T, C, dtype=torch.float64)
    mask = padding_mask(pad_ids([T, 3, 2], T), pad_id=0)  # (B, 1, T)
    ref_out, ref_w = ref(
        x, x, x, attn_mask=~causal_mask(T), key_padding_mask=~mask.squeeze(1), average_attn_weights=False
    )
    for need_weights in (False, True):
        out, w = ours(x, mask=mask, is_causal=True, need_weights=need_weights)
        assert close(out, ref_out)
    assert close(w, ref_w)
    # the same mask built by hand as (B, T, T)
    assert close(ours(x, mask=mask & causal_mask(T))[0], ref_out)


def test_per_example_3d_mask() -> None:
    ours, _ = make_pair()
    x = torch.randn(B, T, C, dtype=torch.float64)
    mem = torch.randn(B, S, C, dtype=torch.float64)
    mask = torch.rand(B, T, S) > 0.4
    mask[..., 0] = True  # no fully masked rows
    out, w = ours(x, mem, mask=mask, need_weights=True)
    assert (w.masked_select(~mask[:, None]) == 0).all()
    assert close(w.sum(-1), torch.ones(B, NH, T, dtype=torch.float64))
    assert close(out, ours(x, mem, mask=mask)[0])  # fused path agrees
    # a 4-D mask already carrying the head axis is taken as is
    assert close(out, ours(x, mem, mask=mask[:, None])[0])


def test_explicit_and_fused_paths_agree_float32() -> None:
    torch.manual_seed(1)
    mha = MultiHeadAttention(16, 4)
    x = torch.randn(2, 9, 16)
    for kwargs in ({}, {"is_causal": True}, {"mask": padding_mask(pad_ids([9, 5], 9), 0)}):
        fast, none = mha(x, **kwargs)
        slow, w = mha(x, need_weights=True, **kwargs)
        assert none is None
        torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 9))


def test_fully_masked_row_gives_zero_on_both_paths() -> None:
    ours, _ = make_pair()
    x = torch.randn(1, 3, C, dtype=torch.float64)
    mask = torch.tensor([[True, True, False], [False, False, False], [True, False, True]])
    fast = ours(x, mask=mask)[0]
    slow, w = ours(x, mask=mask, need_weights=True)
    assert torch.isfinite(fast).all() and close(fast, slow)
    assert (w[0, :, 1] == 0).all()
    # a query that sees nothing gets out_proj's bias only
    assert close(slow[0, 1], ours.out_proj.bias)


def test_heads_are_independent_slices() -> None:
    """Head i only uses features i*hs .. (i+1)*hs of the projected q, k, v."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, bias=False).double()
    x = torch.randn(1, 4, 8, dtype=torch.float64)
    _, w = mha(x, need_weights=True)
    q = mha.q_proj(x)[..., 4:]  # second head's queries
    k = mha.k_proj(x)[..., 4:]
    expected = torch.softmax(q @ k.transpose(-2, -1) / 2.0, dim=-1)  # sqrt(hs) = 2
    assert close(w[:, 1], expected)


def test_dropout_acts_only_in_training() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 6, 8)
    mha.eval()
    assert torch.equal(mha(x)[0], mha(x)[0])
    mha.train()
    for need_weights in (False, True):
        a, b = mha(x, need_weights=need_weights)[0], mha(x, need_weights=need_weights)[0]
        assert not torch.allclose(a, b)
    _, w = mha(x, need_weights=True)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 6))  # weights are reported before dropout


def test_forward_backward_no_nans() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 4, dropout=0.1).train()
    x = torch.randn(2, 5, 16, requires_grad=True)
    mem = torch.randn(2, 6, 16, requires_grad=True)
    for need_weights in (False, True):
        out, _ = mha(x, mem, mask=padding_mask(pad_ids([6, 3], 6), 0), need_weights=need_weights)
        out.square().sum().backward()
    grads = [x.grad, mem.grad] + [p.grad for p in mha.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)


def test_default_init_like_torch() -> None:
    mha = MultiHeadAttention(16, 4)
    assert all((p == 0).all() for n, p in mha.named_parameters() if n.endswith("bias"))
    assert mha.head_size == 4


# --- clear errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("d_model", "num_heads", "match"),
    [(10, 3, "divisible by num_heads"), (0, 1, "d_model must be a positive int"), (8, 0, "num_heads")],
)
def test_bad_constructor_arguments(d_model: int, num_heads: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        MultiHeadAttention(d_model, num_heads)


def test_bad_dropout() -> None:
    with pytest.raises(ValueError, match="dropout"):
        MultiHeadAttention(8, 2, dropout=1.0)


def test_bad_inputs_raise_clear_errors() -> None:
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match=r"query must have shape \(B, length, d_model=8\)"):
        mha(torch.randn(2, 4, 6))
    with pytest.raises(ValueError, match="query must have shape"):
        mha(torch.randn(4, 8))
    with pytest.raises(ValueError, match="key must have shape"):
        mha(x, torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match="same batch size"):
        mha(x, torch.randn(3, 5, 8))
    with pytest.raises(ValueError, match="same length S"):
        mha(x, torch.randn(2, 5, 8), torch.randn(2, 6, 8))
    with pytest.raises(ValueError, match="value was given without key"):
        mha(x, value=x)
    with pytest.raises(TypeError, match="floating-point"):
        mha(torch.ones(2, 4, 8, dtype=torch.long))
    with pytest.raises(TypeError, match="share one dtype"):
        mha(x, x.double())
    with pytest.raises(ValueError, match="is_causal=True needs as many queries as keys"):
        mha(x, torch.randn(2, 5, 8), is_causal=True)


@pytest.mark.parametrize(
    "mask",
    [
        torch.ones(4, 5, dtype=torch.bool),  # (T, S) with S wrong
        torch.ones(3, 1, 4, dtype=torch.bool),  # batch 3 for B = 2
        torch.ones(4, dtype=torch.bool),  # 1-D
        torch.ones(2, 3, 4, 4, dtype=torch.bool),  # 4-D with 3 heads for nh = 2
    ],
)
def test_mask_of_wrong_shape(mask: torch.Tensor) -> None:
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(ValueError, match="does not broadcast"):
        mha(torch.randn(2, 4, 8), mask=mask)


def test_mask_of_wrong_dtype() -> None:
    mha = MultiHeadAttention(8, 2)
    with pytest.raises(TypeError, match="boolean"):
        mha(torch.randn(2, 4, 8), mask=torch.ones(4, 4))
