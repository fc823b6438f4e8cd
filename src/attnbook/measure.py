"""Measuring what a computation costs: its peak memory and its time, on CPU or GPU.

* :func:`peak_bytes` -- the peak extra memory of one call. On CUDA it reads
  ``torch.cuda.max_memory_allocated``; on the CPU, where PyTorch keeps no peak
  statistic (and the process's resident size is blurred by the C allocator,
  which keeps freed pages), it counts with :class:`PeakTensorMemory`.
* :class:`PeakTensorMemory` -- a ``TorchDispatchMode`` that sees every ATen
  operator run inside its ``with`` block: it adds the storage size of each new
  tensor an operator returns, subtracts it when that storage is freed (a
  ``weakref.finalize`` on the storage), and keeps the maximum of the running
  sum. Views share their base's storage and are counted once. It cannot see
  scratch memory that one C++ kernel allocates and frees inside itself (the
  fused attention kernel's per-thread blocks, a constant independent of the
  sequence length), so its figures are a lower bound off by that constant.
* :func:`median_seconds` -- the median time of a few calls after a warm-up,
  synchronising CUDA around each.

Chapter 2 (``4-full-model.md``) and ``benchmarks/bench_attention_memory.py``
measure the attention's memory with these; the benchmarks time with them.
"""

from __future__ import annotations

import statistics
import time
import weakref
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from attnbook._checks import positive_int

__all__ = ["PeakTensorMemory", "peak_bytes", "median_seconds"]


class PeakTensorMemory(TorchDispatchMode):
    """Peak bytes of live tensor storage created by ATen operators inside the ``with`` block.

    >>> with PeakTensorMemory() as m:
    ...     a = torch.zeros(1000)          # 4000 bytes
    ...     b = a + 1                      # 4000 more: peak 8000
    ...     c = b[:10]                     # a view: no new storage
    ...     del b, c                       # freed: live 4000
    >>> m.peak, m.live
    (8000, 4000)
    """

    def __init__(self) -> None:
        super().__init__()
        self.live = 0  # bytes of storages created in the block that are still alive
        self.peak = 0  # the largest value ``live`` reached
        self._sizes: dict[int, int] = {}  # data pointer -> bytes, for storages still alive

    def _free(self, key: int) -> None:
        self.live -= self._sizes.pop(key, 0)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # untyped: torch's dispatch protocol
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor):
                continue
            storage = t.untyped_storage()
            key, size = storage.data_ptr(), storage.nbytes()
            if size == 0 or key in self._sizes:  # a view of a storage already counted
                continue
            self._sizes[key] = size
            self.live += size
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._free, key)
        return out


def _device(device: torch.device | str | None) -> torch.device:
    return torch.device("cpu") if device is None else torch.device(device)


def peak_bytes(fn: Callable[[], Any], device: torch.device | str | None = None) -> int:
    """Peak memory (bytes) that one call of ``fn()`` adds on ``device`` (default: the CPU).

    ``fn``'s result is freed before returning, so what it keeps counts only
    until then. Run it under ``torch.no_grad()`` to measure inference.

    >>> x = torch.zeros(256, 256)                        # made outside: not counted
    >>> peak_bytes(lambda: (x + 1) * 2)                  # two (256, 256) float32 results at once
    524288
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable with no arguments, got {type(fn).__name__}")
    device = _device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        out = fn()
        torch.cuda.synchronize(device)
        del out
        return torch.cuda.max_memory_allocated(device) - before
    with PeakTensorMemory() as meter:
        out = fn()
        del out
    return meter.peak


def median_seconds(fn: Callable[[], Any], device: torch.device | str | None = None, repeats: int = 5) -> float:
    """Median wall-clock seconds of ``repeats`` calls of ``fn()``, after one warm-up call.

    On CUDA the device is synchronised before and after each call, so the time
    is the kernels', not only their launch.

    >>> calls = []
    >>> seconds = median_seconds(lambda: calls.append(1), repeats=3)
    >>> len(calls), 0 <= seconds < 1                     # warm-up + 3 timed calls
    (4, True)
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable with no arguments, got {type(fn).__name__}")
    positive_int("repeats", repeats)
    cuda = _device(device).type == "cuda"
    fn()  # warm-up: kernels chosen, memory pools filled
    times = []
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if cuda:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
