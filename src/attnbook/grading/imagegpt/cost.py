"""Part 8: ``sequence_cost(side, n_head=1, bytes_per_value=4) -> dict`` — what one image costs attention.

An image of ``side`` x ``side`` tokens is a sequence of ``side**2`` tokens; one
head's attention matrix has ``tokens**2`` entries; ``n_head`` of them, at
``bytes_per_value`` bytes each, take ``attention_mib`` MiB (2**20 bytes). The
named mistakes: tokens = side (the side, not the area), entries growing like
the tokens instead of their square, megabytes of 10**6 bytes, the heads or the
bytes per value ignored.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

from .._compare import same_number
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import IG

__all__ = ["check_sequence_cost"]

_KEYS = ("tokens", "attention_entries", "attention_mib")


def _case(side: int, **kwargs: int) -> Callable[[], tuple]:
    return lambda: (side, kwargs)


VISIBLE = (
    Case("a 32 x 32 image", _case(32)),
    Case("four heads", _case(16, n_head=4)),
    Case("2-byte values (bf16)", _case(32, bytes_per_value=2)),
)


def _check(sequence_cost: Callable) -> Callable:
    def check(side: int, kwargs: dict) -> None:
        got = run_student(sequence_cost, side, **kwargs, what="sequence_cost")
        if not isinstance(got, dict) or set(_KEYS) - set(got):
            raise CheckFailed(f"sequence_cost should return a dict with the keys {', '.join(_KEYS)}")
        want = IG.sequence_cost(side, **kwargs)
        for key in _KEYS:
            value = got[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise CheckFailed(f"{key} should be a number, got {type(value).__name__}")
        if got["tokens"] != want["tokens"]:
            if side > 1 and got["tokens"] == side:
                raise CheckFailed("tokens is the side of the image: a side x side image is side**2 tokens")
            raise CheckFailed("tokens is not the number of pixels in the image")
        if got["attention_entries"] != want["attention_entries"]:
            if side > 1 and got["attention_entries"] == want["tokens"]:
                raise CheckFailed("attention_entries grows like the tokens: every token attends to every token, "
                                  "so one head's matrix has tokens**2 entries")
            raise CheckFailed("attention_entries is not the size of one head's tokens x tokens matrix")
        if not same_number(got["attention_mib"], want["attention_mib"]):
            n_head, nbytes = kwargs.get("n_head", 1), kwargs.get("bytes_per_value", 4)
            entries = want["attention_entries"]
            if same_number(got["attention_mib"], entries * n_head * nbytes / 1e6):
                raise CheckFailed("attention_mib divides by 10**6: a MiB is 2**20 bytes")
            if n_head > 1 and same_number(got["attention_mib"], entries * nbytes / 2**20):
                raise CheckFailed("attention_mib ignores n_head: every head has its own attention matrix")
            if nbytes != 4 and same_number(got["attention_mib"], entries * n_head * 4 / 2**20):
                raise CheckFailed("attention_mib ignores bytes_per_value (it assumes 4-byte floats)")
            raise CheckFailed("attention_mib is not entries x heads x bytes per value, in MiB (2**20 bytes)")

    return check


FORBIDDEN = ("attnbook.imagegpt.sequence.sequence_cost",)

check_sequence_cost = Part(name="check_sequence_cost", visible=VISIBLE, check=_check,
                           forbidden=FORBIDDEN)
