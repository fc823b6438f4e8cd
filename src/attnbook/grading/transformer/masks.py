"""Part 3: ``causal_mask(T)`` -> (T, T) and ``padding_mask(ids, pad_id)`` -> (B, 1, S); True = may attend.

>>> kind, ids, pad_id = _padding_case(0, 2, 6, 9, lengths=(6, 2))()
>>> kind, pad_id, ids[1].tolist()[2:]
('padding', 9, [9, 9, 9, 9])
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from .._compare import require_tensor
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot
from ._common import REF, token_ids


def _causal_case(T: int) -> Callable[[], tuple]:
    return lambda: ("causal", T)


def _padding_case(seed: int, B: int, S: int, pad_id: int, lengths: tuple[int, ...] | None = None,
                  strided: bool = False) -> Callable[[], tuple]:
    def make():
        ids = token_ids(seed, B, S, pad_id, lengths=lengths)
        return "padding", ids.t().contiguous().t() if strided else ids, pad_id  # strided: non-contiguous (B, S)

    return make


def _diagnose_causal(m: torch.Tensor, T: int) -> str:
    lower = torch.ones(T, T, dtype=torch.bool).tril()
    known = [
        ("the mask is the wrong way round: True means 'may attend', so the diagonal and the lower "
         "triangle (the past) are True and the positions after t are False", ~lower),
        ("the mask lets a position see the future: row t (a query) may attend to columns 0..t only; "
         "take the lower triangle (tril), not the upper one", lower.T),
        ("the mask is off by one: position t can see position t + 1; the diagonal is the last True "
         "entry of each row", torch.ones(T, T, dtype=torch.bool).tril(1)),
        ("the mask is off by one: position t cannot see itself; the diagonal must be True",
         torch.ones(T, T, dtype=torch.bool).tril(-1)),
    ]
    for message, variant in known:
        if torch.equal(m, variant):
            return message
    if (m & ~lower).any():
        return "the mask lets a position see the future: entries above the diagonal must be False"
    return "the mask hides part of the past: every entry on or below the diagonal must be True"


def _check_causal(causal_fn: Callable, T: int) -> None:
    m = require_tensor(run_student(causal_fn, T, what="causal_mask"), "causal_mask(T)")
    if m.dtype != torch.bool:
        raise CheckFailed(f"causal_mask should return a boolean tensor (True = may attend), got {m.dtype}")
    if tuple(m.shape) != (T, T):
        raise CheckFailed("causal_mask(T) should have shape (T, T): one row per query, one column per key")
    if not torch.equal(m, REF.causal_mask(T)):
        raise CheckFailed(_diagnose_causal(m, T))


def _shape_hint(shape: tuple[int, ...], B: int, S: int) -> str:
    if shape == (B, S):
        return "insert the query axis in the middle (unsqueeze(1)) so that it broadcasts over the queries"
    if shape == (B, S, 1):
        return "the size-1 axis goes in the middle: (B, S, 1) would hide queries instead of keys"
    return "one row per sequence, a size-1 axis that broadcasts over the queries, one column per key"


def _check_padding(padding_fn: Callable, ids: torch.Tensor, pad_id: int) -> None:
    before = snapshot(ids)
    m = require_tensor(run_student(padding_fn, ids, pad_id, what="padding_mask"), "padding_mask(ids, pad_id)")
    require_unchanged(before, ids, message="padding_mask changed ids in place; build a new tensor instead")
    if m.dtype != torch.bool:
        raise CheckFailed(f"padding_mask should return a boolean tensor (True = may attend), got {m.dtype}")
    B, S = ids.shape
    if tuple(m.shape) != (B, 1, S):
        raise CheckFailed(f"padding_mask should have shape (B, 1, S): {_shape_hint(tuple(m.shape), B, S)}")
    expected = REF.padding_mask(ids, pad_id)  # (B, 1, S)
    if torch.equal(m, expected):
        return
    if torch.equal(m, ~expected):
        raise CheckFailed("the padding mask is the wrong way round: True marks the real tokens (may attend) "
                          "and False the padding")
    if pad_id != 0 and torch.equal(m, (ids != 0).unsqueeze(1)):
        raise CheckFailed("the mask looks for the id 0 instead of the pad_id argument: the padding is at the "
                          "positions equal to pad_id, not 0 (pad_id need not be 0)")
    raise CheckFailed("padding_mask must be False exactly where ids == pad_id and True elsewhere")


def _check(causal_fn: Callable, padding_fn: Callable) -> Callable:
    """check_one(kind, *args): a case of kind "causal" checks causal_mask, one of kind "padding" padding_mask."""
    checks = {"causal": functools.partial(_check_causal, causal_fn),
              "padding": functools.partial(_check_padding, padding_fn)}
    return lambda kind, *args: checks[kind](*args)


check_masks = Part(
    name="check_masks",
    visible=(
        Case("causal mask", _causal_case(4)),
        Case("padding mask", _padding_case(301, 2, 5, 0, lengths=(5, 3))),
        Case("padding mask, another padding id", _padding_case(310, 3, 6, 3, lengths=(6, 1, 4))),
    ),
    check=_check,
    forbidden=("attnbook.attention.causal_mask", "attnbook.attention.padding_mask"),
)
