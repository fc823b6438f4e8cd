"""Part 16: ``noam_lr(step, d_model, warmup)``, the learning rate of the paper's warm-up schedule.

``d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)`` after ``step``
updates: for an int step a Python float (0.0 at step 0, where ``step ** -0.5``
would divide by zero), for an integer tensor of steps of any shape a float
tensor of that shape. The reference is :func:`attnbook.train.noam_lr`. A case
is a whole curve: ``("ints", steps, d_model, warmup)`` calls the student once
per int step, ``("tensor", steps, d_model, warmup)`` once with the tensor. A
wrong curve is compared with the curves students get instead
(:func:`_mistakes`): the larger term instead of the smaller, the warm-up term
with ``warmup ** -0.5``, the ``d_model`` scale left out or inverted, step 0
given the rate of step 1, steps shifted by one, the arguments swapped.

>>> kind, steps, d_model, warmup = _tensor(0, (2, 3), 50, 16, 20)()
>>> kind, tuple(steps.shape), steps.dtype, d_model, warmup
('tensor', (2, 3), torch.int64, 16, 20)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .._compare import require_tensor
from .._core import private_modules, run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot

(SCHEDULE,) = private_modules("attnbook.train.schedule")  # the checker's own copy

WHAT = "noam_lr"
FORMULA = "d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)"


def _ints(d_model: int, warmup: int, steps: Sequence[int]) -> Callable[[], tuple]:
    """Python-int steps, each passed on its own."""
    return lambda: ("ints", tuple(steps), d_model, warmup)


def _tensor(seed: int, shape: tuple[int, ...], high: int, d_model: int, warmup: int, *,
            dtype: torch.dtype = torch.long, strided: bool = False, arange: bool = False) -> Callable[[], tuple]:
    """A tensor of steps in ``0 .. high`` (``arange``: all of them in order, 1-D; else random, of ``shape``, 0 and
    ``warmup`` among them when there are three or more); ``strided``: a transposed view of a 2-D tensor."""

    def make():
        if arange:
            steps = torch.arange(high + 1, dtype=dtype)
        else:
            g = torch.Generator().manual_seed(seed)
            flat = torch.randint(0, high + 1, (math.prod(shape),), generator=g)
            if flat.numel() >= 3:  # step 0 and the peak among them
                flat[:2] = torch.tensor([0, warmup])
                flat = flat[torch.randperm(flat.numel(), generator=g)]
            steps = flat.reshape(shape).to(dtype)
            if strided:  # the same steps, column-major
                steps = steps.t().contiguous().t()
        return "tensor", steps, d_model, warmup

    return make


def _rates(steps: torch.Tensor, d_model: float, warmup: float, *, bigger: bool = False,
           warm_power: float = -1.5, scale_power: float = -0.5) -> torch.Tensor:
    """The schedule's formula in float64, with the knobs that the mistakes turn (inf where it divides by 0)."""
    s = steps.double()
    pick = torch.maximum if bigger else torch.minimum
    return d_model**scale_power * pick(s.rsqrt(), s * warmup**warm_power)


def _mistakes(steps: torch.Tensor, d: int, w: int) -> list[tuple[str, Callable[[], torch.Tensor]]]:
    return [
        ("the rate is the smaller of the two terms, min(...): the linear warm-up term while step < warmup, "
         "the 1/sqrt(step) decay after; max gives the larger, which is never the schedule",
         lambda: _rates(steps, d, w, bigger=True)),
        ("the warm-up term is step * warmup ** -1.5, so that it meets step ** -0.5 at step = warmup: the peak "
         "is (d_model * warmup) ** -0.5", lambda: _rates(steps, d, w, warm_power=-0.5)),
        ("the warm-up term is step * warmup ** -1.5, so that it meets step ** -0.5 at step = warmup: the peak "
         "is (d_model * warmup) ** -0.5", lambda: _rates(steps, d, w, warm_power=-1.0)),
        ("the rate is not scaled by d_model ** -0.5: a wider model gets a smaller rate",
         lambda: _rates(steps, d, w, scale_power=0.0)),
        ("the rate is multiplied by sqrt(d_model); the scale is d_model ** -0.5, smaller for a wider model",
         lambda: _rates(steps, d, w, scale_power=0.5)),
        ("at step 0 the rate is 0.0 (the warm-up term, 0 * warmup ** -1.5, is the smaller), not the rate of "
         "step 1", lambda: _rates(steps.clamp(min=1), d, w)),
        ("step is the number of updates made, counted from 1 as in the paper: use it as it is, not step + 1",
         lambda: _rates(steps + 1, d, w)),
        ("step is the number of updates made, counted from 1 as in the paper: use it as it is, not step - 1",
         lambda: _rates((steps - 1).clamp(min=0), d, w)),
        ("d_model and warmup are swapped: the arguments are (step, d_model, warmup)",
         lambda: _rates(steps, w, d)),
    ]


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Whether two curves agree to float32's precision (inf where both are inf)."""
    return got.shape == want.shape and bool(torch.allclose(got.double(), want.double(), rtol=1e-5, atol=1e-12))


def _explain(err: CheckFailed, step: object) -> CheckFailed:
    """The student's error, with a hint where a known one raised it."""
    words = str(err)
    if "ZeroDivisionError" in words and step == 0:
        return err.hinted(" -- at step 0, before the first update, step ** -0.5 divides by zero: the rate is "
                          "0.0 there (the warm-up term, 0 * warmup ** -1.5, is the smaller of the two)")
    if "Boolean value of Tensor" in words:
        return err.hinted(" -- Python's min and if compare single numbers; for a tensor of steps work "
                          "elementwise: torch.minimum (torch.where for a choice)")
    if "cannot be converted to Scalar" in words or "only one element tensors" in words:
        return err.hinted(" -- for a tensor of steps return a tensor of rates, one per step")
    return err


def _check_ints(fn: Callable, steps: tuple[int, ...], d_model: int, warmup: int) -> None:
    got = []
    for step in steps:
        try:
            rate = run_student(fn, step, d_model, warmup, what=WHAT)
        except CheckFailed as err:
            raise _explain(err, step) from None
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            kind = "a tensor" if isinstance(rate, torch.Tensor) else type(rate).__name__
            raise CheckFailed(f"for an int step {WHAT} should return a Python float, got {kind}: "
                              "float(...) or .item() turns a 0-dim tensor into one")
        got.append(float(rate))
    check_curve(torch.tensor(got, dtype=torch.float64), torch.tensor(steps), d_model, warmup)


def _check_tensor(fn: Callable, steps: torch.Tensor, d_model: int, warmup: int) -> None:
    before = snapshot(steps)
    try:
        result = run_student(fn, steps, d_model, warmup, what=WHAT)
    except CheckFailed as err:
        raise _explain(err, None) from None
    require_unchanged(before, steps, message=f"{WHAT} changed the tensor of steps in place")
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        raise CheckFailed(f"for a tensor of steps {WHAT} should return a tensor of rates, one per step, "
                          "not one number")
    rates = require_tensor(result, f"the result of {WHAT} for a tensor of steps")
    if tuple(rates.shape) != tuple(steps.shape):
        raise CheckFailed(f"for a tensor of steps of shape {tuple(steps.shape)} {WHAT} should return rates of "
                          f"the same shape, one per step, got {tuple(rates.shape)}")
    if not rates.is_floating_point():
        raise CheckFailed(f"the rates should be a floating-point tensor, got {rates.dtype}")
    check_curve(rates.detach(), steps, d_model, warmup)


def check_curve(got: torch.Tensor, steps: torch.Tensor, d_model: int, warmup: int) -> None:
    """Raise unless ``got`` holds the schedule's rate at each of ``steps``, naming the mistake it matches."""
    want = SCHEDULE.noam_lr(steps.long(), d_model, warmup).double()
    if _same(got, want):
        return
    raise first_match(got, _mistakes(steps.long(), d_model, warmup), f"the rates differ from {FORMULA}",
                      matches=_same)


def _check(fn: Callable) -> Callable[..., None]:
    def check_one(kind: str, steps: Any, d_model: int, warmup: int) -> None:
        (_check_ints if kind == "ints" else _check_tensor)(fn, steps, d_model, warmup)

    return check_one


VISIBLE = (
    Case("the paper's base model: d_model 512, 4000 warm-up steps",
         _ints(512, 4000, (1, 2, 100, 1000, 3999, 4000, 4001, 8000, 16000, 100_000))),
    Case("another width and warm-up", _ints(64, 10, range(1, 41))),
    Case("step 0, before the first update", _ints(512, 4000, (0,))),
    Case("a tensor of steps, 0 to 200", _tensor(0, (), 200, 128, 50, arange=True)),
    Case("a tensor of steps of another shape", _tensor(3, (4, 6), 300, 256, 100)),
)

check_noam_lr = Part(name="check_noam_lr", visible=VISIBLE, check=_check,
                     forbidden=("attnbook.train.schedule.noam_lr",))
