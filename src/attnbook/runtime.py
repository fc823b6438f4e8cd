"""Where code runs: device choice, threads for the CPUs that are free, seeding, mixed precision, parameter
counts.

Every other module asks this one for a device instead of naming ``cuda`` or
``cpu``, so the same notebook runs on a laptop CPU and on a GPU.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from attnbook import settings
from attnbook._checks import an_int


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
    choice = settings.DEVICE.read() or prefer
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


def autocast(device: torch.device | str) -> contextlib.AbstractContextManager[object]:
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


def count_parameters_on_meta(build: Callable[[Any], torch.nn.Module], config: Any) -> int:
    """``count_parameters(build(config))`` for a model built on PyTorch's ``meta`` device: shapes, no memory.

    So even a 175 B-parameter configuration is counted at once.

    >>> count_parameters_on_meta(lambda n: torch.nn.Linear(n, n), 100_000)   # 40 GB in float32
    10000100000
    """
    if not callable(build):
        raise TypeError(f"build must be a callable config -> nn.Module, got {type(build).__name__}")
    with torch.device("meta"):
        return count_parameters(build(config))


def readable_count(n: float) -> str:
    """A count as people write model sizes: ``"1.5 B"``, ``"117.0 M"``, or the number itself below a million.

    >>> readable_count(1_557_611_200), readable_count(117e6), readable_count(52_000)
    ('1.6 B', '117.0 M', '52,000')
    """
    for unit, scale in (("B", 1e9), ("M", 1e6)):
        if n >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f}"


def _cpu_times(cpus: set[int]) -> tuple[int, int] | None:
    """(idle, total) clock ticks of ``cpus`` so far, from ``/proc/stat``; ``None`` where there is none."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    idle = total = 0
    for line in lines:
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in cpus:
            ticks = [int(f) for f in fields[:8]]
            idle += ticks[3] + ticks[4]  # idle and iowait
            total += sum(ticks)
    return idle, total


def free_cpus(sample_seconds: float = 0.25) -> int:
    """How many of the CPUs this process may run on are idle now (at least 1).

    Measured over ``sample_seconds`` from ``/proc/stat`` (Linux); elsewhere, every CPU allowed counts as
    free. A CPU that another process keeps busy is not free: threads that share it wait on each other at
    every parallel region, so that two threads on one free core run slower than one.

    >>> 1 <= free_cpus(0.05) <= (os.cpu_count() or 1)
    True
    """
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    before = _cpu_times(cpus)
    if before is None:
        return max(1, len(cpus))
    time.sleep(sample_seconds)
    now = _cpu_times(cpus)
    if now is None:
        return max(1, len(cpus))
    idle, total = (after - first for after, first in zip(now, before, strict=True))
    return max(1, min(len(cpus), round(len(cpus) * idle / max(total, 1))))


def set_threads(most: int | None = None) -> int:
    """Give PyTorch one thread per free CPU (:func:`free_cpus`), at most ``most``; return how many.

    Pages and benchmarks call it instead of ``torch.set_num_threads(2)``: on a machine where another
    process holds a core, they train on the core that is left instead of fighting for it.

    >>> set_threads(most=1)
    1
    """
    threads = free_cpus() if most is None else min(most, free_cpus())
    torch.set_num_threads(threads)
    return threads
