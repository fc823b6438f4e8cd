"""The learning-rate schedule of :func:`~attnbook.train.fit`: linear warmup, then constant or cosine."""

from __future__ import annotations

import math

__all__ = ["lr_factor"]

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


def _time_factor(elapsed: float, max_seconds: float, warmup_seconds: float, schedule: str) -> float:
    """:func:`lr_factor` with the budget as the run: ``elapsed / max_seconds`` in 1000 ticks.

    >>> [round(_time_factor(e, 10.0, 2.0, "cosine"), 2) for e in (0.0, 0.99, 2.0, 6.0, 9.99)]
    [0.01, 0.5, 1.0, 0.55, 0.1]
    """
    tick = min(_TICKS - 1, int(_TICKS * elapsed / max_seconds))
    warmup = round(_TICKS * warmup_seconds / max_seconds)
    return lr_factor(tick, steps=_TICKS, warmup_steps=warmup, schedule=schedule)
