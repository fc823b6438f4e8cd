"""Steps that many parts' ``check_one`` share: snapshots, result shapes, scalars, a whole loss check.

Chapters add a step here when a second part needs it (never a copy in a chapter).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ._compare import close, require_tensor
from ._core import run_student
from .engine import first_match
from .errors import CheckFailed


def snapshot(*values: object) -> list:
    """Copies of the tensors and lists among ``values``, to compare after the student's code ran."""
    return [v.detach().clone() if isinstance(v, torch.Tensor) else list(v) if isinstance(v, list) else v
            for v in values]


def require_unchanged(before: list, *values: object, message: str) -> None:
    """Raise ``message`` if any tensor or list among ``values`` differs from its snapshot ``before``."""
    for old, new in zip(before, values, strict=True):
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


def require_count(result: object, what: str, unit: str) -> int:
    """``result`` (an int, an integral float or a one-element integer tensor) as a Python int, or a failure
    saying that ``what`` returns a whole number of ``unit``.

    >>> require_count(torch.tensor(7), "gpt_params", "parameters"), require_count(7.0, "gpt_params", "parameters")
    (7, 7)
    >>> require_count(7.5, "forward_flops", "FLOPs")
    Traceback (most recent call last):
    attnbook.grading.errors.CheckFailed: forward_flops should return a whole number of FLOPs (an int), got float
    """
    if isinstance(result, torch.Tensor) and result.numel() == 1 and not result.is_floating_point():
        result = result.item()
    if isinstance(result, float) and result.is_integer() and abs(result) < 2 ** 53:
        result = int(result)
    if isinstance(result, bool) or not isinstance(result, int):
        raise CheckFailed(f"{what} should return a whole number of {unit} (an int), got {type(result).__name__}")
    return result


def require_scalar(result: object, what: str, hint: str = "") -> torch.Tensor:
    """``result`` as a 0-dim tensor, or a failure saying that ``what`` returns one number (``hint``: how to get it).

    >>> require_scalar(0.5, "mlm_loss")
    Traceback (most recent call last):
    attnbook.grading.errors.CheckFailed: mlm_loss should return a tensor (a float from .item() cannot be ...
    """
    if isinstance(result, float):
        raise CheckFailed(f"{what} should return a tensor (a float from .item() cannot be back-propagated)")
    value = require_tensor(result, f"the result of {what}")
    if value.dim() != 0:
        raise CheckFailed(f"{what} should return one number (a 0-dim tensor), got shape {tuple(value.shape)}{hint}")
    return value


def require_same_gradient(value: torch.Tensor, logits: torch.Tensor,
                          reference: Callable[[torch.Tensor], torch.Tensor], what: str = "the loss") -> None:
    """Raise unless ``value``'s gradient with respect to ``logits`` equals that of ``reference(logits)``."""
    if not value.requires_grad:
        raise CheckFailed(f"{what} is detached from the logits: backward() must reach them")
    (got,) = torch.autograd.grad(value, logits)
    ref = logits.detach().clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(reference(ref), ref)
    if not close(got, expected):
        raise CheckFailed(f"{what} has the right value but the wrong gradient")


def check_loss(fn: Callable, logits: torch.Tensor, targets: torch.Tensor, grad: bool, *, what: str,
               reference: Callable, variants: Callable, fallback: str, targets_name: str, hint: str = "",
               value_name: str = "the loss", explain: Callable | None = None) -> None:
    """Check the student's ``fn(logits, targets)``, a scalar loss, against ``reference(logits, targets)``.

    In order: nothing changed in place, one number of the logits' dtype, the
    value (a wrong one named by ``variants(logits, targets)``, a list of
    ``(message, value)``, else ``fallback``) and, with ``grad``, the gradient.
    ``explain(fn, logits, targets, err)`` may replace a crash's message.
    """
    logits = logits.detach().clone().requires_grad_(grad)  # clone keeps the strides of a transposed view
    before = snapshot(logits, targets)
    try:
        result = run_student(fn, logits, targets, what=what)
    except CheckFailed as err:
        if explain is not None:
            explain(fn, logits, targets, err)
        raise
    require_unchanged(before, logits, targets, message=f"{what} changed logits or {targets_name} in place")
    value = require_scalar(result, what, hint)
    if value.dtype != logits.dtype:
        raise CheckFailed(f"for {logits.dtype} logits {value_name} should be {logits.dtype} too")
    if not close(value.detach(), reference(logits.detach(), targets)):
        raise first_match(value, variants(logits, targets), fallback, torch.float32)
    if grad:
        require_same_gradient(value, logits, lambda ref: reference(ref, targets), value_name)
