"""Where code runs: device choice, seeding, mixed precision, parameter counts.

Every other module asks this one for a device instead of naming ``cuda`` or
``cpu``, so the same notebook runs on a laptop CPU and on a GPU.
"""

from __future__ import annotations

import contextlib
import os
import random

import numpy as np
import torch

from attnbook._checks import an_int

_DEVICE_ENV = "ATTNBOOK_DEVICE"


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def get_device(prefer: str | None = None) -> torch.device:
    """Return the best available device: cuda > mps > cpu.

    ``prefer`` (or the environment variable ``ATTNBOOK_DEVICE``, which wins)
    names a device to use instead; asking for one that is not present raises.

    >>> get_device("cpu")
    device(type='cpu')
    """
    choice = os.environ.get(_DEVICE_ENV) or prefer
    if choice:
        device = torch.device(choice)
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError(f"device {choice!r} was asked for, but CUDA is not available here")
        if device.type == "mps" and not _mps_available():
            raise ValueError(f"device {choice!r} was asked for, but MPS is not available here")
        return device
    if torch.cuda.is_available():
        return torch.device("cuda")
    if _mps_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy and PyTorch (all devices) so a run can be repeated.

    >>> seed_everything(0); a = torch.rand(1); seed_everything(0)
    >>> bool(torch.equal(a, torch.rand(1)))
    True
    """
    an_int("seed", seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def autocast(device: torch.device | str):
    """Mixed precision where it pays: bf16 autocast on CUDA, a no-op elsewhere.

    >>> with autocast("cpu"):
    ...     y = torch.ones(2, 2) @ torch.ones(2, 2)
    >>> y.dtype
    torch.float32
    """
    device = torch.device(device)
    if device.type == "cuda":
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def count_parameters(model: torch.nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) parameters of ``model``.

    >>> count_parameters(torch.nn.Linear(3, 2))  # 3*2 weights + 2 biases
    8
    """
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
