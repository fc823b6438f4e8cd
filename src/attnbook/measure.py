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
* :func:`attention_peak_mib` -- :func:`peak_bytes` of one attention call on
  random ``q, k, v`` for each of several sequence lengths.
* :func:`median_seconds` -- the median time of a few calls after a warm-up,
  synchronising CUDA around each (:func:`sync`).
* :func:`matmul_peak` -- the FLOP/s of one big matrix multiply, the peak
  against which a benchmark states its model FLOP utilisation (MFU).
* :func:`machine_header` -- the line that says how and where a benchmark's
  results were made, the first line of its CSV in ``benchmarks/results/``.

Chapter 2 (``4-full-model.md``) and ``benchmarks/bench_attention_memory.py``
measure the attention's memory with these; the benchmarks time with them.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import statistics
import sys
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from attnbook._checks import positive_int

__all__ = [
    "PeakTensorMemory",
    "peak_bytes",
    "attention_peak_mib",
    "median_seconds",
    "sync",
    "matmul_peak",
    "machine_header",
]


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


def sync(device: torch.device | str | None = None) -> None:
    """Wait until the kernels queued on ``device`` have run: CUDA's are asynchronous, the CPU's are not.

    Call it before reading a clock, so that the time is the kernels' and not only their launch.

    >>> sync("cpu")                                      # nothing to wait for
    """
    device = _device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


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
        sync(device)
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        out = fn()
        sync(device)
        del out
        return torch.cuda.max_memory_allocated(device) - before
    with PeakTensorMemory() as meter:
        out = fn()
        del out
    return meter.peak


def attention_peak_mib(
    attention: Callable[[torch.Tensor, torch.Tensor, torch.Tensor], Any],
    lengths: Sequence[int],
    *,
    heads: int = 8,
    head_size: int = 64,
    device: torch.device | str | None = None,
) -> list[float]:
    """Peak memory (MiB) of one ``attention(q, k, v)`` call per length T, under ``torch.no_grad()``.

    ``q``, ``k`` and ``v`` are (1, heads, T, head_size) float32, drawn from
    torch's global generator before each call (made outside: not counted).

    >>> explicit = lambda q, k, v: (q @ k.transpose(-2, -1)).softmax(-1) @ v   # keeps a (T, T) matrix
    >>> [round(m, 2) for m in attention_peak_mib(explicit, [64, 128], heads=1, head_size=8)]
    [0.04, 0.13]
    """
    if not callable(attention):
        raise TypeError(f"attention must be a callable (q, k, v) -> output, got {type(attention).__name__}")
    heads, head_size = positive_int("heads", heads), positive_int("head_size", head_size)
    mib = []
    for T in lengths:
        shape = (1, heads, positive_int("T", T), head_size)  # (B, nh, T, hs)
        q, k, v = (torch.randn(shape, device=device) for _ in range(3))
        with torch.no_grad():
            mib.append(peak_bytes(lambda: attention(q, k, v), device) / 2**20)  # noqa: B023 (called at once)
    return mib


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
    device = _device(device)
    fn()  # warm-up: kernels chosen, memory pools filled
    times = []
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def matmul_peak(device: torch.device | str | None = None, *, reps: int = 10, size: int | None = None
                ) -> tuple[float, str]:
    """``(FLOP/s, what)``: the best of ``reps`` timed ``size x size`` matrix multiplies on ``device``.

    By default fp32 2048 x 2048 on the CPU (with torch's current thread
    count) and bf16 8192 x 8192 on CUDA: what the hardware reaches on the
    operation that dominates a Transformer, measured in the same run as the
    model so that the ratio (the MFU) holds on a shared machine too.
    ``what`` names the multiply, for the report.

    >>> flops, what = matmul_peak("cpu", reps=2, size=64)
    >>> flops > 0, what
    (True, '64x64 float32 matmul')
    """
    device = _device(device)
    positive_int("reps", reps)
    cuda = device.type == "cuda"
    n = positive_int("size", size) if size is not None else (8192 if cuda else 2048)
    dtype = torch.bfloat16 if cuda else torch.float32
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):  # warm up: allocator, kernel selection, clocks
        a @ b
    sync(device)
    best = math.inf
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best, f"{n}x{n} {str(dtype).removeprefix('torch.')} matmul"


def machine_header(
    device: torch.device | str | None = None,
    *,
    threads: int | str | None = None,
    notes: Sequence[str] = (),
    command: Sequence[str] | None = None,
    today: datetime.date | None = None,
) -> str:
    """``# command | machine | date``: how and where a benchmark made its results (the first line of its CSV).

    * the command: ``python`` and ``sys.argv`` unless ``command`` is given;
    * the machine: the CPU (``platform.processor()``, else the architecture),
      its cores, torch's CPU threads (``threads``: a count, by default
      ``torch.get_num_threads()``, or words such as ``"1 thread a run"``),
      torch's version, the ``device`` (a GPU with its name), the ``notes``
      (``"bf16 autocast"``, ...) and the load average as the line is made --
      make it as the measurement starts;
    * the date, ``today`` unless given.

    A benchmark with more to say (the checkpoint it measured, a result)
    appends ``" | ..."`` sections of its own. :func:`attnbook.results.committed_results`
    reads the line back without its ``#``, and :func:`attnbook.results.provenance`
    says the command and the machine in words.

    >>> line = machine_header("cpu", threads=1, notes=["shared machine"], today=datetime.date(2026, 11, 26),
    ...                       command=["python", "benchmarks/bench_x.py", "--fast"])
    >>> command, machine, date = line.split(" | ")
    >>> command, date
    ('# python benchmarks/bench_x.py --fast', '2026-11-26')
    >>> machine  # doctest: +ELLIPSIS
    '..., ... cores, 1 thread, torch ..., cpu, shared machine, load average ... at start'
    """
    device = _device(device)
    if threads is None:
        threads = torch.get_num_threads()
    if isinstance(threads, int) and not isinstance(threads, bool):
        threads = f"{threads} thread{'s' if threads != 1 else ''}"
    elif not isinstance(threads, str):
        raise TypeError(f"threads must be a count or words, got {type(threads).__name__}")
    where = f"cuda ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else device.type
    machine = [f"{platform.processor() or platform.machine()}", f"{os.cpu_count()} cores", threads,
               f"torch {torch.__version__}", where, *notes]
    if hasattr(os, "getloadavg"):
        machine.append(f"load average {os.getloadavg()[0]:.1f} at start")
    command = ["python", *sys.argv] if command is None else list(command)
    return f"# {' '.join(command)} | {', '.join(machine)} | {today or datetime.date.today()}"
