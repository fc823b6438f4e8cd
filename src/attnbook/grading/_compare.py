"""Comparisons the checks share: tolerances by dtype, the torch canaries, tensor types."""

from __future__ import annotations

import math

import torch

from .errors import CheckFailed

NUMBER_RTOL = 1e-6  # a number (a count, a cost, a loss) agrees to one part in a million: float32 holds that


def _tolerance(dtype: torch.dtype) -> float:
    return 1e-9 if dtype == torch.float64 else 1e-4


def same_number(a: float, b: float) -> bool:
    """Whether two numbers agree to :data:`NUMBER_RTOL` (a float32 answer does), or both are near 0.

    >>> same_number(0.1, float(torch.tensor(0.1))), same_number(1.0, 1.001)
    (True, False)
    """
    return math.isclose(a, b, rel_tol=NUMBER_RTOL, abs_tol=1e-9)


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest absolute difference, computed in float64 (NaN/inf count as infinitely far)."""
    diff = (a.detach().to("cpu", torch.float64) - b.detach().to("cpu", torch.float64)).abs()
    value = diff.max().item() if diff.numel() else 0.0
    return value if math.isfinite(value) else math.inf


def close(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype | None = None) -> bool:
    """Whether ``a`` and ``b`` have one shape and agree to the tolerance of ``dtype``."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    tol = _tolerance(dtype or b.dtype)
    scale = max(1.0, b.detach().abs().max().item() if b.numel() else 0.0)
    return max_abs_diff(a, b) <= tol * scale


def verify_toolkit() -> None:
    """Fail loudly if the torch functions the checker relies on were tampered with.

    Cheap canaries with answers known by hand: a patched ``torch.allclose``,
    ``softmax`` or tensor arithmetic in the notebook would make them fail.
    """
    x = torch.tensor([0.0, math.log(3.0)], dtype=torch.float64)
    ok = (
        max_abs_diff(torch.zeros(3), torch.ones(3)) == 1.0
        and max_abs_diff(x, x) == 0.0
        and abs(torch.softmax(x, dim=0)[1].item() - 0.75) < 1e-12
        and not torch.allclose(torch.zeros(2), torch.ones(2))
        and abs((torch.eye(2, dtype=torch.float64) @ x).sum().item() - math.log(3.0)) < 1e-12
        and type(torch.zeros(1)) is torch.Tensor
    )
    if not ok:
        raise CheckFailed(
            "torch functions that the checker needs were modified in this notebook; "
            "restart the kernel, remove the code that patches torch, and run all cells again"
        )


def require_tensor(x: object, what: str) -> torch.Tensor:
    """``x`` if it is a plain ``torch.Tensor`` (not a subclass), else a clear failure."""
    if type(x) is not torch.Tensor:
        raise CheckFailed(f"{what} should be a torch.Tensor, got {type(x).__name__}")
    return x
