"""attnbook.measure: peak tensor memory and median timings."""

from __future__ import annotations

from functools import partial

import pytest
import torch

from attnbook import measure
from attnbook.attention import fused_attention, scaled_dot_product_attention
from attnbook.measure import PeakTensorMemory, median_seconds, peak_bytes


def test_peak_counts_live_storages_once_and_frees_them() -> None:
    with PeakTensorMemory() as m:
        a = torch.zeros(100, dtype=torch.float64)  # 800 bytes
        views = [a[:10], a.view(10, 10), a[::2]]  # no new storage
        b = torch.ones(50, dtype=torch.int32)  # 200 bytes
        assert (m.live, m.peak) == (1000, 1000)
        del b
        assert m.live == 800
        c = torch.zeros(300)  # 1200 bytes: live 2000, a new peak
        del c, views
    assert (m.peak, m.live) == (2000, 800)
    del a


def test_peak_bytes_sees_the_attention_matrix_grow_as_t_squared() -> None:
    def explicit(q, k, v):
        return scaled_dot_product_attention(q, k, v)[0]

    peaks = {}
    with torch.no_grad():
        for T in (64, 128):
            q, k, v = (torch.randn(1, 2, T, 8) for _ in range(3))  # (B, nh, T, hs)
            peaks[T] = (peak_bytes(partial(explicit, q, k, v)), peak_bytes(partial(fused_attention, q, k, v)))
    for T, (explicit_peak, fused_peak) in peaks.items():
        assert explicit_peak >= 2 * T * T * 4  # at least one (1, 2, T, T) float32 matrix
        assert fused_peak < explicit_peak
    assert peaks[128][0] / peaks[64][0] > 3  # about 4: quadratic
    assert peaks[128][1] / peaks[64][1] < 2.5  # about 2: linear (the output)


def test_median_seconds_warms_up_then_takes_the_median(monkeypatch) -> None:
    ticks = iter([0.0, 5.0, 10.0, 11.0, 20.0, 23.0])  # calls of 5, 1 and 3 s
    monkeypatch.setattr(measure.time, "perf_counter", lambda: next(ticks))
    calls = []
    assert median_seconds(lambda: calls.append(1), repeats=3) == 3.0
    assert len(calls) == 4  # one warm-up, three timed


def test_bad_arguments() -> None:
    with pytest.raises(TypeError, match="fn must be a callable"):
        peak_bytes(torch.zeros(2))
    with pytest.raises(TypeError, match="fn must be a callable"):
        median_seconds("f")
    with pytest.raises(ValueError, match="repeats must be a positive int, got 0"):
        median_seconds(lambda: None, repeats=0)


@pytest.mark.gpu
def test_peak_bytes_on_cuda_matches_the_allocation() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    n = 1 << 20
    assert peak_bytes(lambda: torch.empty(n, device="cuda"), "cuda") >= 4 * n
