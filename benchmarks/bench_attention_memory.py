"""Explicit vs fused attention: time and peak memory as the sequence length T grows.

Compares :func:`attnbook.attention.scaled_dot_product_attention` (the explicit
math, which builds the ``(B, nh, T, T)`` score and weight matrices) with
:func:`attnbook.attention.fused_attention` (PyTorch's fused kernel, which
streams over blocks of keys and never holds a ``T x T`` matrix) on
self-attention inputs ``q, k, v`` of shape ``(B, nh, T, hs)``, for ``T`` from 64
to 2048. It prints, per ``T``, the forward time and the peak memory of each
path and the explicit/fused ratios; the explicit path's memory grows as
``T²``, the fused path's as ``T``.

**How peak memory is measured** (:func:`attnbook.measure.peak_bytes`).

* CUDA: ``torch.cuda.reset_peak_memory_stats()`` before one call and
  ``torch.cuda.max_memory_allocated()`` after it, minus the bytes allocated
  before the call (the inputs). This counts every tensor the caching allocator
  hands out during the call, kernel workspaces included.
* CPU: PyTorch keeps no peak statistic for CPU memory, and the process's
  resident size (``ru_maxrss``) is blurred by the C allocator, which keeps
  freed pages. So the call runs under
  :class:`attnbook.measure.PeakTensorMemory`, a ``TorchDispatchMode`` that
  sees every ATen operator and keeps the peak of live tensor storage created
  inside the call, the CPU analogue of ``max_memory_allocated``. What it
  cannot see is scratch memory that a single C++ kernel allocates and frees
  internally: the fused CPU kernel's per-thread blocks (about ``threads x 2 x
  block_q x block_kv`` floats, a constant independent of ``T``), so the fused
  figures are a lower bound that is off by that constant. On a GPU run the two
  methods can be compared.

Time is the median of ``--repeats`` forward calls after one warm-up call
(:func:`attnbook.measure.median_seconds`), under ``torch.no_grad()``
(inference; a training step would also keep the explicit path's weights for
the backward pass).

Run::

    .venv/bin/python benchmarks/bench_attention_memory.py              # CPU, 2 threads
    .venv/bin/python benchmarks/bench_attention_memory.py --threads 1 --lengths 64 256 1024
"""

from __future__ import annotations

import argparse
import functools

import torch

from attnbook.attention import fused_attention, scaled_dot_product_attention
from attnbook.measure import machine_header, median_seconds, peak_bytes
from attnbook.runtime import get_device, seed_everything


def explicit_output(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The explicit path's output alone (its weights are dropped at once, as a model would)."""
    return scaled_dot_product_attention(q, k, v)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048])
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--head-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="CPU threads (torch.set_num_threads)")
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: attnbook.runtime.get_device)")
    args = parser.parse_args()

    device = get_device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    seed_everything(0)
    B, nh, hs = args.batch_size, args.heads, args.head_size
    print(machine_header(device))
    print(f"q/k/v (B={B}, nh={nh}, T, hs={hs}) float32, forward under no_grad")
    meter = "torch.cuda.max_memory_allocated" if device.type == "cuda" else "PeakTensorMemory (live ATen tensors)"
    print(f"memory: {meter}")
    header = (f"{'T':>5} | {'explicit ms':>11} {'fused ms':>9} {'time x':>7} | "
              f"{'explicit MiB':>12} {'fused MiB':>10} {'memory x':>9} | {'T²-matrix MiB':>13}")
    print(header)
    print("-" * len(header))
    with torch.no_grad():
        for T in args.lengths:
            q, k, v = (torch.randn(B, nh, T, hs, device=device) for _ in range(3))  # (B, nh, T, hs)
            explicit = functools.partial(explicit_output, q, k, v)
            fused = functools.partial(fused_attention, q, k, v)
            t_e = median_seconds(explicit, device, args.repeats)
            t_f = median_seconds(fused, device, args.repeats)
            m_e = peak_bytes(explicit, device)
            m_f = peak_bytes(fused, device)
            matrix = B * nh * T * T * 4  # one float32 (B, nh, T, T) matrix
            mib = 2**20
            print(f"{T:5d} | {1e3 * t_e:11.2f} {1e3 * t_f:9.2f} {t_e / t_f:7.2f} | "
                  f"{m_e / mib:12.2f} {m_f / mib:10.2f} {m_e / m_f:9.1f} | {matrix / mib:13.2f}", flush=True)
    print("time x and memory x are explicit / fused; the last column is one (B, nh, T, T) float32 matrix.")


if __name__ == "__main__":
    main()
