"""Learning-rate schedules: :func:`~attnbook.train.fit`'s warmup then constant or cosine, and the paper's.

:func:`lr_factor` is the multiplier that :func:`~attnbook.train.fit` applies:
a linear warmup, then constant or a cosine decay (karpathy/nanoGPT's).
:func:`noam_lr` is the learning rate itself of Vaswani et al. (2017, section
5.3), the inverse-square-root schedule with a linear warmup that later code
calls "Noam" (after Noam Shazeer, one of the paper's authors). Why a warmup
helps at all is measured in :mod:`attnbook.train.adam`.
"""

from __future__ import annotations

import math
from typing import overload

import torch

from attnbook._checks import int_at_least, positive_int

__all__ = ["lr_factor", "noam_lr"]

_SCHEDULES = ("constant", "cosine")
_MIN_LR_RATIO = 0.1  # cosine decays to 10 % of the peak learning rate, as in nanoGPT
_TICKS = 1000  # a time-budgeted schedule is lr_factor over the budget cut into this many ticks


def lr_factor(step: int, *, steps: int, warmup_steps: int = 0, schedule: str = "constant") -> float:
    """Multiplier of the peak learning rate at (0-based) ``step`` of ``steps``.

    Linear warmup over ``warmup_steps`` steps, then either ``"constant"`` or a
    ``"cosine"`` decay to 10 % of the peak at the last step.

    >>> [round(lr_factor(s, steps=7, warmup_steps=2, schedule="cosine"), 2) for s in range(7)]
    [0.5, 1.0, 1.0, 0.87, 0.55, 0.23, 0.1]
    """
    if schedule not in _SCHEDULES:
        raise ValueError(f"schedule must be one of {_SCHEDULES}, got {schedule!r}")
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    progress = min(1.0, (step - warmup_steps) / max(1, steps - 1 - warmup_steps))  # 0 -> 1
    return _MIN_LR_RATIO + (1 - _MIN_LR_RATIO) * 0.5 * (1 + math.cos(math.pi * progress))


@overload
def noam_lr(step: int, d_model: int, warmup: int) -> float: ...
@overload
def noam_lr(step: torch.Tensor, d_model: int, warmup: int) -> torch.Tensor: ...
def noam_lr(step: int | torch.Tensor, d_model: int, warmup: int) -> float | torch.Tensor:
    """The learning rate after ``step`` updates in *Attention Is All You Need*'s schedule.

    ``d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)``: it grows
    linearly for ``warmup`` steps, peaks at ``(d_model * warmup) ** -0.5`` on
    step ``warmup``, then decays as ``1 / sqrt(step)``. The paper's base model
    (``d_model = 512``, 4000 warmup steps), in units of ``1e-4``:

    >>> [round(1e4 * noam_lr(s, 512, 4000), 3) for s in (1, 1000, 4000, 16000)]
    [0.002, 1.747, 6.988, 3.494]

    A quarter of the peak at step 1000, the peak of about ``7e-4`` at step
    4000, half the peak four times later. Steps count from 1, as in the paper;
    step 0, before the first update, gives the formula's limit 0.0 (the
    warm-up term is 0, the decay term infinite), which is what
    ``torch.optim.lr_scheduler.LambdaLR`` asks for when it is built. ``step``
    may be an int (the result is a float) or an integer tensor of steps of any
    shape (the result is a tensor of that shape in torch's default dtype):

    >>> noam_lr(0, 512, 4000), noam_lr(torch.tensor([[0, 4000]]), 512, 4000).shape
    (0.0, torch.Size([1, 2]))
    """
    positive_int("d_model", d_model)
    positive_int("warmup", warmup)
    if isinstance(step, torch.Tensor):
        if step.dtype.is_floating_point or step.dtype.is_complex or step.dtype == torch.bool:
            raise TypeError(f"step must be an int or an integer tensor of steps, got a {step.dtype} tensor")
        if step.numel() and int(step.min()) < 0:
            raise ValueError(f"step must count updates from 0, got {int(step.min())}")
        s = step.double()
        rate = d_model**-0.5 * torch.minimum(s.rsqrt(), s * warmup**-1.5)  # rsqrt(0) = inf: 0 at step 0
        return rate.to(torch.get_default_dtype())
    int_at_least("step", step, 0)
    if step == 0:
        return 0.0  # the warm-up term; step ** -0.5 would divide by zero
    return d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def _time_factor(elapsed: float, max_seconds: float, warmup_seconds: float, schedule: str) -> float:
    """:func:`lr_factor` with the budget as the run: ``elapsed / max_seconds`` in 1000 ticks.

    >>> [round(_time_factor(e, 10.0, 2.0, "cosine"), 2) for e in (0.0, 0.99, 2.0, 6.0, 9.99)]
    [0.01, 0.5, 1.0, 0.55, 0.1]
    """
    tick = min(_TICKS - 1, int(_TICKS * elapsed / max_seconds))
    warmup = round(_TICKS * warmup_seconds / max_seconds)
    return lr_factor(tick, steps=_TICKS, warmup_steps=warmup, schedule=schedule)
