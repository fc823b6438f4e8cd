"""Steps that many parts' ``check_one`` share: snapshots against changes in place, result shapes.

Chapters add a step here when a second part needs it (never a copy in a chapter).
"""

from __future__ import annotations

import torch

from ._compare import require_tensor
from .errors import CheckFailed


def snapshot(*values: object) -> list:
    """Copies of the tensors and lists among ``values``, to compare after the student's code ran."""
    return [v.detach().clone() if isinstance(v, torch.Tensor) else list(v) if isinstance(v, list) else v
            for v in values]


def require_unchanged(before: list, *values: object, message: str) -> None:
    """Raise ``message`` if any tensor or list among ``values`` differs from its snapshot ``before``."""
    for old, new in zip(before, values):
        same = torch.equal(old, new.detach()) if isinstance(new, torch.Tensor) else old == new
        if not same:
            raise CheckFailed(message)


def require_pair(result: object, what: str, names: tuple[str, str]) -> tuple[torch.Tensor, torch.Tensor]:
    """``result`` as two plain tensors, or a failure saying that ``what`` returns the pair ``names``."""
    if not isinstance(result, tuple) or len(result) != 2:
        raise CheckFailed(f"{what} should return a pair ({names[0]}, {names[1]})")
    return (require_tensor(result[0], f"{names[0]} (the first value returned)"),
            require_tensor(result[1], f"{names[1]} (the second value returned)"))


def require_shape(x: torch.Tensor, shape: tuple[int, ...], message: str) -> None:
    """Raise ``message`` if ``x`` does not have ``shape``, naming a ``squeeze()`` that dropped its size-1 axes.

    >>> require_shape(torch.zeros(3, 4), (1, 3, 4), "out should be (B, T, C)")
    Traceback (most recent call last):
    attnbook.grading.errors.CheckFailed: out should be (B, T, C); its size-1 axes are missing: a squeeze() drops ...
    """
    if tuple(x.shape) == tuple(shape):
        return
    if 1 in shape and tuple(x.shape) == tuple(n for n in shape if n != 1):
        message += ("; its size-1 axes are missing: a squeeze() drops every axis of size 1 (a batch of one, "
                    "a single position), so squeeze only the axis you mean, e.g. squeeze(-1), or none")
    raise CheckFailed(message)


def require_int_list(result: object, what: str) -> list[int]:
    """``result`` (a list, tuple or 1-D tensor of ints) as a list of Python ints, or a clear failure.

    >>> require_int_list(torch.tensor([2, 5, 3]), "ids")
    [2, 5, 3]
    """
    if isinstance(result, torch.Tensor):
        result = result.tolist()
    if not isinstance(result, (list, tuple)) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in result
    ):
        raise CheckFailed(f"{what} should be a list of ints, got {type(result).__name__}")
    return list(result)
