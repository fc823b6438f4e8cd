"""Part 1: ``scaled_dot_product_attention(q, k, v)`` -> ``(out, weights)``, without masks.

The check that compares a student's function with the reference on one case,
:func:`check_sdpa`, serves Part 2 (:mod:`.sdpa_masks`) too.

>>> q, k, v, mask = _plain(0, (2, 3), 4, 5, 8, 2, swap=(1, 2))()
>>> q.is_contiguous(), tuple(q.shape), mask is None
(False, (2, 3, 4, 8), True)
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .._compare import close
from .._core import run_student
from .._shared import randn_strided
from ..engine import Case, Mistake, Part, diagnose
from ..errors import CheckFailed
from ..steps import require_pair, require_shape, require_unchanged, snapshot
from ._common import ATTENTION_KERNELS, REF

FORBIDDEN = (
    "attnbook.attention.scaled_dot_product_attention",
    "attnbook.attention.fused_attention",
    "torch.nn.functional.scaled_dot_product_attention",
)


LEADING_AXES = ("q, k and v may have any leading axes (...), here a batch and heads: work on the last two axes "
                "only, counting them from the end")


def qkv(seed: int, lead: tuple[int, ...], T: int, S: int, d_k: int, d_v: int, dtype: torch.dtype = torch.float32,
        swap: tuple[int, int] | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Generator]:
    """q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) and the generator, for more draws."""
    g = torch.Generator().manual_seed(seed)
    q = randn_strided((*lead, T, d_k), g, dtype, swap)
    k = randn_strided((*lead, S, d_k), g, dtype, swap)
    v = randn_strided((*lead, S, d_v), g, dtype, swap)
    return q, k, v, g


def _plain(seed, lead, T, S, d_k, d_v, dtype=torch.float32, swap=None):
    def make():
        q, k, v, _ = qkv(seed, lead, T, S, d_k, d_v, dtype, swap)
        return q, k, v, None

    return make


# ------------------------------------------------------------ diagnosis


def _masked_softmax(scores, mask, *, dim=-1, fill=float("-inf"), inverted=False):
    if mask is not None:
        keep = ~mask if inverted else mask
        scores = scores.masked_fill(~keep, fill)
    return torch.softmax(scores, dim=dim).nan_to_num(0.0)


def _scaled(q, k, divisor=None):
    raw = q.double() @ k.double().transpose(-2, -1)  # (..., T, S)
    return raw if divisor is None else raw / divisor(q.shape[-1])


_SQRT = math.sqrt
_MISTAKES = (
    Mistake("the scores were not divided by sqrt(d_k): the softmax saturates as d_k grows",
            lambda q, k, v, m: _masked_softmax(_scaled(q, k), m)),
    Mistake("the scores were divided by d_k instead of sqrt(d_k)",
            lambda q, k, v, m: _masked_softmax(_scaled(q, k, float), m)),
    Mistake("the softmax runs over the wrong axis: each query's row of weights (the last axis, over keys) "
            "must sum to 1", lambda q, k, v, m: _masked_softmax(_scaled(q, k, _SQRT), m, dim=-2)),
)
_MASK_MISTAKES = (
    Mistake("the mask is applied the wrong way round: True means 'may attend', so it is the positions "
            "where the mask is False that get -inf",
            lambda q, k, v, m: _masked_softmax(_scaled(q, k, _SQRT), m, inverted=True)),
    Mistake("the mask is ignored: positions where it is False must get zero weight",
            lambda q, k, v, m: _masked_softmax(_scaled(q, k, _SQRT), None)),
    Mistake("masked scores were set to 0 instead of -inf, so masked positions still get weight",
            lambda q, k, v, m: _masked_softmax(_scaled(q, k, _SQRT), m, fill=0.0)),
    Mistake("the mask was applied after the softmax, so the rows no longer sum to 1; "
            "mask the scores before the softmax", lambda q, k, v, m: _masked_softmax(_scaled(q, k, _SQRT), None) * m),
)


def _fallback(w: torch.Tensor, mask: torch.Tensor | None) -> str:
    if torch.isnan(w).any():
        return "the attention weights contain NaN"
    if mask is not None and (w.detach().abs() * ~mask).max() > 1e-6:
        return "positions where the mask is False get non-zero weight"
    if not close(w.detach().double().sum(-1), torch.ones(w.shape[:-1], dtype=torch.float64), torch.float32):
        return "rows of the attention weights do not sum to 1"
    return "the attention weights differ from softmax(Q Kᵀ / sqrt(d_k))"


def _swapped(out: torch.Tensor, w: torch.Tensor, expected_out: torch.Tensor, expected_w: torch.Tensor) -> bool:
    """Whether the student returned ``(weights, out)``: each has the other's shape and, where the shapes
    alone cannot tell (d_v = S), the other's values."""
    if out.shape != expected_w.shape or w.shape != expected_out.shape:
        return False
    if expected_out.shape != expected_w.shape:
        return True
    return (close(out, expected_w) and close(w, expected_out)
            and not (close(out, expected_out) and close(w, expected_w)))


def check_sdpa(fn: Callable) -> Callable:
    """check_one(q, k, v, mask) for the student's ``fn``; ``mask=None`` calls ``fn(q, k, v)``."""

    def check_one(q, k, v, mask):
        before = snapshot(q, k, v)
        args = (q, k, v) if mask is None else (q, k, v, mask)
        try:
            result = run_student(fn, *args, what="scaled_dot_product_attention")
        except CheckFailed as err:
            if q.dim() > 3 and "RuntimeError" in str(err) and "view size" not in str(err):  # not a stride error
                raise err.hinted(f" -- {LEADING_AXES}") from None
            raise
        out, w = require_pair(result, "scaled_dot_product_attention", ("out", "weights"))
        require_unchanged(before, q, k, v,
                          message="the function changed q, k or v in place; compute on new tensors instead")
        expected_out, expected_w = REF.scaled_dot_product_attention(q, k, v, mask)
        if _swapped(out, w, expected_out, expected_w):
            raise CheckFailed("the pair is swapped: the function returned (weights, out); return (out, weights), "
                              "the output first, then the attention weights")
        require_shape(w, expected_w.shape,
                      "weights should have shape (..., T, S): one row per query, one column per key")
        require_shape(out, expected_out.shape,
                      "out should have shape (..., T, d_v): one row per query, as wide as the values")
        if w.dtype != q.dtype or out.dtype != q.dtype:
            raise CheckFailed(f"for {q.dtype} inputs the results should be {q.dtype} too")
        if not close(w, expected_w):
            mistakes = _MISTAKES if mask is None else _MISTAKES + _MASK_MISTAKES
            raise diagnose(w.nan_to_num(0.0), mistakes, (q, k, v, mask), _fallback(w, mask))
        if not close(out, expected_out):
            raise CheckFailed("the weights are right but out is not weights @ V")

    return check_one


check_scaled_dot_product_attention = Part(
    name="check_scaled_dot_product_attention",
    visible=(
        Case("shapes and values", _plain(0, (2,), 3, 4, 8, 5)),
        Case("two leading axes (a batch and heads)", _plain(1, (2, 3), 3, 4, 4, 2)),
        Case("float64 inputs", _plain(2, (2,), 2, 3, 4, 3, torch.float64)),
    ),
    check=check_sdpa,
    forbidden=FORBIDDEN,
    kernels=ATTENTION_KERNELS,
)
