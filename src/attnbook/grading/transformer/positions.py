"""Part 5: ``sinusoidal_positions(T, d_model)`` -> the (T, d_model) table of interleaved sines and cosines.

A wrong table is compared with the tables students get most often instead
(:func:`_pe_variant`), so that the message names the mistake.

>>> _pe_variant(2, 4, layout="halves")[1].tolist() == _pe_variant(2, 4)[1][[0, 2, 1, 3]].tolist()
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._compare import close, require_tensor
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import POS


def _pe_variant(T: int, d_model: int, *, layout: str = "interleaved", odd_exponent: str = "2i", exponent: str = "2i/d",
                start: int = 0) -> torch.Tensor:
    """Sinusoidal tables as students get them wrong, in float64 (the default arguments: right)."""
    t = torch.arange(start, start + T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (d/2,)
    if exponent == "2i/d":
        w = 10000.0 ** (-two_i / d_model)
    elif exponent == "i/d":  # the pair index i where 2i belongs
        w = 10000.0 ** (-(two_i / 2) / d_model)
    else:  # "times": t * 10000^(2i/d) instead of t / 10000^(2i/d)
        w = 10000.0 ** (two_i / d_model)
    w_odd = 10000.0 ** (-(two_i + 1) / d_model) if odd_exponent == "2i+1" else w
    sin, cos = (t * w).sin(), (t * w_odd).cos()  # (T, d/2) each
    if layout == "halves":
        return torch.cat([sin, cos], dim=1)  # (T, d): sin, ..., sin, cos, ..., cos
    pe = torch.empty(T, d_model, dtype=torch.float64)
    first, second = (cos, sin) if layout == "swapped" else (sin, cos)
    pe[:, 0::2], pe[:, 1::2] = first, second
    return pe


def _diagnose_pe(pe: torch.Tensor, T: int, d_model: int) -> str:
    known: list[tuple[str, dict[str, Any]]] = [
        ("sin and cos are swapped: column 2i holds sin(t w_i) and column 2i + 1 holds cos(t w_i)",
         dict(layout="swapped")),
        ("the sines and cosines must be interleaved (sin, cos, sin, cos, ...): columns 2i and 2i + 1 "
         "share one frequency, not all sines first and then all cosines", dict(layout="halves")),
        ("the cosine in column 2i + 1 must use the same frequency as the sine in column 2i, "
         "w_i = 1 / 10000^(2i / d_model), not an exponent of its own", dict(odd_exponent="2i+1")),
        ("the frequencies are wrong: pair i (columns 2i and 2i + 1) turns at w_i = 1 / 10000^(2i / d_model); "
         "the exponent uses 2i, the column index of the sine, not i", dict(exponent="i/d")),
        ("the frequencies are wrong: the angle is t / 10000^(2i / d_model), so the position is divided "
         "by the power of 10000, not multiplied", dict(exponent="times")),
        ("positions start at t = 0: the first row is sin(0) = 0, cos(0) = 1, ...", dict(start=1)),
    ]
    student = pe.detach().to(torch.float64)
    for message, kwargs in known:
        if close(student, _pe_variant(T, d_model, **kwargs), torch.float32):
            return message
    if torch.isnan(student).any():
        return "the table contains NaN"
    if student.abs().max() > 1 + 1e-6:
        return "the table holds values outside [-1, 1], so they are not sines and cosines of the angles"
    return "the table differs from P[t, 2i] = sin(t / 10000^(2i/d_model)), P[t, 2i+1] = cos(t / 10000^(2i/d_model))"


def _check(fn: Callable) -> Callable:
    def check_one(T, d_model):
        pe = require_tensor(run_student(fn, T, d_model, what="sinusoidal_positions"),
                            "sinusoidal_positions(T, d_model)")
        if not pe.is_floating_point():
            raise CheckFailed(f"sinusoidal_positions should return a floating-point tensor, got {pe.dtype}")
        if tuple(pe.shape) != (T, d_model):
            raise CheckFailed("sinusoidal_positions(T, d_model) should have shape (T, d_model): one row per position")
        expected = POS.sinusoidal_positions(T, d_model, dtype=torch.float64)
        if not close(pe, expected, torch.float32):
            raise CheckFailed(_diagnose_pe(pe, T, d_model))

    return check_one


check_sinusoidal_positions = Part(
    name="check_sinusoidal_positions",
    visible=(Case("a small table", lambda: (4, 6)),),
    check=_check,
    forbidden=(
        "attnbook.positional.sinusoidal_positions",
        "attnbook.positional.relative_shift_matrix",
        "attnbook.positional.SinusoidalPositions",
        "attnbook.positional._frequencies",
    ),
)
