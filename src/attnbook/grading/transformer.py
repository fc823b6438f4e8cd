"""Checks for chapter 2's exercises (``solutions/02-transformer``).

Each ``check_*`` compares the student's object with the reference in
:mod:`attnbook.attention` and explains a failure in words. Called without
``points`` it runs the visible cases and raises on the first failure; with
``points`` it runs every case and returns the points earned.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ._core import Case, CheckFailed, close, fresh_module, require_tensor, run_student, score_cases

_REF = fresh_module("attnbook.attention")
_FORBIDDEN_ATTENTION = (
    "attnbook.attention.scaled_dot_product_attention",
    "attnbook.attention.fused_attention",
    "torch.nn.functional.scaled_dot_product_attention",
)


# ------------------------------------------------------------------ inputs


def _qkv(seed: int, lead: tuple[int, ...], T: int, S: int, d_k: int, d_v: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*lead, T, d_k, generator=g, dtype=dtype)  # (..., T, d_k)
    k = torch.randn(*lead, S, d_k, generator=g, dtype=dtype)  # (..., S, d_k)
    v = torch.randn(*lead, S, d_v, generator=g, dtype=dtype)  # (..., S, d_v)
    return q, k, v, g


def _plain(seed, lead, T, S, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, _ = _qkv(seed, lead, T, S, d_k, d_v, dtype)
        return q, k, v, None

    return make


def _causal(seed, lead, T, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, _ = _qkv(seed, lead, T, T, d_k, d_v, dtype)
        return q, k, v, torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)

    return make


def _padded(seed, B, T, S, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, g = _qkv(seed, (B,), T, S, d_k, d_v, dtype)
        lengths = torch.randint(1, S + 1, (B,), generator=g)  # at least one real key
        mask = (torch.arange(S) < lengths[:, None]).unsqueeze(1)  # (B, 1, S)
        return q, k, v, mask

    return make


def _random_mask(seed, B, T, S, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, g = _qkv(seed, (B,), T, S, d_k, d_v, dtype)
        mask = torch.rand(B, T, S, generator=g) < 0.6  # (B, T, S)
        mask[..., 0] |= ~mask.any(-1)  # every query keeps at least one key
        return q, k, v, mask

    return make


_SDPA_VISIBLE = [Case("shapes and values", _plain(0, (2,), 3, 4, 8, 5))]
_SDPA_HIDDEN = [
    Case("batch of one, odd lengths", _plain(101, (1,), 7, 5, 16, 3)),
    Case("one query", _plain(102, (3,), 1, 6, 4, 2)),
    Case("float64 inputs", _plain(103, (2,), 5, 4, 6, 3, torch.float64)),
    Case("extra leading axis (heads)", _plain(104, (2, 3), 4, 4, 8, 8)),
    Case("large d_k", _plain(105, (2,), 4, 6, 256, 4), weight=2.0),
]
_MASK_VISIBLE = [Case("causal mask", _causal(1, (2,), 4, 8, 3))]
_MASK_HIDDEN = [
    Case("causal mask, heads", _causal(201, (2, 2), 5, 8, 4)),
    Case("causal mask, float64", _causal(202, (1,), 6, 16, 2, torch.float64)),
    Case("padding mask (B, 1, S)", _padded(203, 4, 3, 7, 8, 5), weight=2.0),
    Case("arbitrary mask (B, T, S)", _random_mask(204, 2, 5, 6, 32, 3), weight=2.0),
]


# --------------------------------------------------------------- diagnosis


def _masked_softmax(scores, mask, *, dim=-1, fill=float("-inf"), inverted=False):
    if mask is not None:
        keep = ~mask if inverted else mask
        scores = scores.masked_fill(~keep, fill)
    return torch.softmax(scores, dim=dim).nan_to_num(0.0)


def _diagnose_weights(w: torch.Tensor, q, k, v, mask) -> str:
    """Name the likely mistake behind wrong attention weights, in words."""
    q64, k64 = q.double(), k.double()
    raw = q64 @ k64.transpose(-2, -1)  # (..., T, S)
    d_k = q.shape[-1]
    scaled = raw / math.sqrt(d_k)
    known = [
        ("the scores were not divided by sqrt(d_k): the softmax saturates as d_k grows",
         _masked_softmax(raw, mask)),
        ("the scores were divided by d_k instead of sqrt(d_k)", _masked_softmax(raw / d_k, mask)),
        ("the softmax runs over the wrong axis: each query's row of weights (the last axis, over keys) "
         "must sum to 1", _masked_softmax(scaled, mask, dim=-2)),
    ]
    if mask is not None:
        known += [
            ("the mask is applied the wrong way round: True means 'may attend', so it is the positions "
             "where the mask is False that get -inf", _masked_softmax(scaled, mask, inverted=True)),
            ("the mask is ignored: positions where it is False must get zero weight",
             _masked_softmax(scaled, None)),
            ("masked scores were set to 0 instead of -inf, so masked positions still get weight",
             _masked_softmax(scaled, mask, fill=0.0)),
            ("the mask was applied after the softmax, so the rows no longer sum to 1; "
             "mask the scores before the softmax", _masked_softmax(scaled, None) * mask),
        ]
    student = w.detach().double().nan_to_num(0.0)
    for message, variant in known:
        if close(student, variant, torch.float32):
            return message
    if torch.isnan(w).any():
        return "the attention weights contain NaN"
    if mask is not None and (w.detach().abs() * ~mask).max() > 1e-6:
        return "positions where the mask is False get non-zero weight"
    if not close(w.detach().double().sum(-1), torch.ones(w.shape[:-1], dtype=torch.float64), torch.float32):
        return "rows of the attention weights do not sum to 1"
    return "the attention weights differ from softmax(Q Kᵀ / sqrt(d_k))"


def _check_sdpa_case(fn: Callable) -> Callable:
    def check(q, k, v, mask):
        inputs = [x.clone() for x in (q, k, v)]
        args = (q, k, v) if mask is None else (q, k, v, mask)
        result = run_student(fn, *args, forbidden=_FORBIDDEN_ATTENTION, what="scaled_dot_product_attention")
        if not isinstance(result, tuple) or len(result) != 2:
            raise CheckFailed("scaled_dot_product_attention should return a pair (out, weights)")
        out = require_tensor(result[0], "out (the first value returned)")
        w = require_tensor(result[1], "weights (the second value returned)")
        if any(not torch.equal(a, b) for a, b in zip(inputs, (q, k, v))):
            raise CheckFailed("the function changed q, k or v in place; compute on new tensors instead")
        expected_out, expected_w = _REF.scaled_dot_product_attention(q, k, v, mask)
        if w.shape != expected_w.shape:
            raise CheckFailed("weights should have shape (..., T, S): one row per query, one column per key")
        if out.shape != expected_out.shape:
            raise CheckFailed("out should have shape (..., T, d_v): one row per query, as wide as the values")
        if w.dtype != q.dtype or out.dtype != q.dtype:
            raise CheckFailed(f"for {q.dtype} inputs the results should be {q.dtype} too")
        if not close(w, expected_w):
            raise CheckFailed(_diagnose_weights(w, q, k, v, mask))
        if not close(out, expected_out):
            raise CheckFailed("the weights are right but out is not weights @ V")

    return check


# ------------------------------------------------------------------ checks


def check_scaled_dot_product_attention(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(q, k, v) -> (out, weights)`` without masks.

    Visible cases when ``points`` is None, every case (returning the points
    earned) otherwise.
    """
    cases = _SDPA_VISIBLE if points is None else _SDPA_VISIBLE + _SDPA_HIDDEN
    return score_cases(cases, _check_sdpa_case(fn), points)


def check_attention_masks(fn: Callable, points: float | None = None) -> float | None:
    """Check ``fn(q, k, v, mask) -> (out, weights)`` with causal, padding and arbitrary masks."""
    cases = _MASK_VISIBLE if points is None else _MASK_VISIBLE + _MASK_HIDDEN
    return score_cases(cases, _check_sdpa_case(fn), points)
