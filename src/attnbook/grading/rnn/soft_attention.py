"""Part 3: soft attention, ``weights = softmax(scores)`` over the keys and ``context = Σ_j α_j h_j``."""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_pair, require_shape, require_unchanged, snapshot
from ._common import FORBIDDEN_SCORES, HARD, lengths_mask, strided


def _case(seed, B, S, d_v, *, masked=False, lengths=None, all_padded=False, noncontiguous=False,
          dtype=torch.float32, scale=2.0):
    """(scores (B, S) with -inf at the padding, values (B, S, d_v))."""

    def make():
        g = torch.Generator().manual_seed(seed)
        scores = torch.randn(B, S, generator=g, dtype=dtype) * scale
        values = torch.randn(B, S, d_v, generator=g, dtype=dtype)
        if masked:
            scores = scores.masked_fill(~lengths_mask(g, B, S, lengths, all_padded=all_padded), float("-inf"))
        return (strided(scores), strided(values)) if noncontiguous else (scores, values)

    return make


def _weights_diagnosis(w: torch.Tensor, scores: torch.Tensor) -> str:
    real = torch.isfinite(scores)
    known = [
        ("the softmax runs over the wrong axis: each sequence's weights (over its S keys, the last axis) "
         "must sum to 1", torch.softmax(scores, dim=0).nan_to_num(0.0)),
        ("-inf scores were replaced by 0 before the softmax, so padded keys get weight; keep the -inf",
         torch.softmax(scores.masked_fill(~real, 0.0), dim=-1)),
    ]
    student = w.detach().nan_to_num(0.0)
    for message, variant in known:
        if close(student, variant):
            return message
    if torch.isnan(w).any():
        return ("the weights contain NaN: exp of a large score overflows to inf (use torch.softmax, which "
                "subtracts each row's maximum first)")
    if (w.detach().abs() * ~real).max() > 1e-6:
        return "keys with a score of -inf (padding) get non-zero weight"
    if not close(w.detach().sum(-1), torch.ones(w.shape[:-1], dtype=w.dtype)):
        return "the weights of a sequence do not sum to 1"
    return "the weights differ from softmax(scores) over the keys"


def _check(fn: Callable) -> Callable:
    def check_one(scores, values):
        before = snapshot(scores, values)
        context, w = require_pair(run_student(fn, scores, values, what="soft_attention"), "soft_attention",
                                  ("context", "weights"))
        require_unchanged(before, scores, values,
                          message="soft_attention changed scores or values in place; compute on new tensors instead")
        expected_c, expected_w = HARD.soft_attention(scores, values)
        require_shape(w, expected_w.shape, "weights should have shape (B, S), like the scores")
        require_shape(context, expected_c.shape, "context should have shape (B, d_v): one vector per sequence, as "
                      "wide as the values (a batched product needs a (B, 1, S) @ (B, S, d_v) shape, then squeeze)")
        if w.dtype != scores.dtype or context.dtype != scores.dtype:
            raise CheckFailed(f"for {scores.dtype} inputs the results should be {scores.dtype} too")
        if not close(w, expected_w):
            raise CheckFailed(_weights_diagnosis(w, scores))
        if bool((w.detach()[torch.isneginf(scores)] != 0).any()):  # close, yet a tiny weight (a clamped score)
            raise CheckFailed("a key with a score of -inf (padding) must get weight exactly 0, exp(-inf) = 0")
        if close(context, expected_c):
            return
        if close(context, values.mean(dim=1)):
            raise CheckFailed("the context is the plain average of the values; weigh each h_j by its α_j")
        if close(context, values.sum(dim=1)):
            raise CheckFailed("the context is the plain sum of the values; weigh each h_j by its α_j")
        raise CheckFailed("the weights are right but the context is not Σ_j α_j h_j")

    return check_one


check_soft_attention = Part(
    name="check_soft_attention",
    visible=(Case("padding", _case(4, 2, 5, 3, masked=True, lengths=(5, 3))),),
    check=_check,
    forbidden=("attnbook.hard_attention.soft_attention",) + FORBIDDEN_SCORES,
)
