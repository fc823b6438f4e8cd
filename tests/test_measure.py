"""attnbook.measure: peak tensor memory, timings, the matmul peak and the benchmarks' machine line."""

from __future__ import annotations

import datetime
import os
from functools import partial

import pytest
import torch

from attnbook import measure
from attnbook.attention import fused_attention, scaled_dot_product_attention
from attnbook.measure import PeakTensorMemory, machine_header, matmul_peak, median_seconds, peak_bytes, sync
from attnbook.results import committed_results, finetune_selection, provenance


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


def test_matmul_peak_times_the_best_of_its_repeats(monkeypatch) -> None:
    ticks = iter([0.0, 4.0, 10.0, 12.0])  # two timed multiplies: 4 s, then 2 s
    monkeypatch.setattr(measure.time, "perf_counter", lambda: next(ticks))
    flops, what = matmul_peak("cpu", reps=2, size=16)
    assert (flops, what) == (2 * 16**3 / 2.0, "16x16 float32 matmul")
    with pytest.raises(ValueError, match="reps must be a positive int"):
        matmul_peak("cpu", reps=0)
    with pytest.raises(ValueError, match="size must be a positive int"):
        matmul_peak("cpu", size=0)
    sync("cpu")  # nothing queued on the CPU: returns at once


def test_machine_header_says_command_machine_and_date() -> None:
    line = machine_header(threads=2, notes=["bf16 autocast"], command=["python", "benchmarks/bench_x.py", "-q"],
                          today=datetime.date(2026, 1, 2))
    assert line.startswith("# python benchmarks/bench_x.py -q | ") and line.endswith(" | 2026-01-02")
    machine = line.split(" | ")[1].split(", ")
    assert machine[1:6] == [f"{os.cpu_count()} cores", "2 threads", f"torch {torch.__version__}", "cpu",
                            "bf16 autocast"]
    assert machine_header(threads="1 thread a run").split(" | ")[1].split(", ")[2] == "1 thread a run"
    assert f"{torch.get_num_threads()} thread" in machine_header()
    with pytest.raises(TypeError, match="threads must be a count or words"):
        machine_header(threads=True)


def test_machine_header_reads_back_as_the_pages_read_it(tmp_path, monkeypatch) -> None:
    """The line heads a results CSV; committed_results and provenance read it as they read the older lines."""
    folder = tmp_path / "benchmarks" / "results"
    folder.mkdir(parents=True)
    line = machine_header(threads=1, command=[".venv/bin/python", "benchmarks/bench_x.py", "--fast"])
    (folder / "x.csv").write_text(line + " | checkpoint abc\nname,value\na,1\n")
    monkeypatch.chdir(tmp_path)
    made_by, rows = committed_results("x.csv")
    assert rows == [{"name": "a", "value": "1"}] and made_by == line.removeprefix("# ") + " | checkpoint abc"
    text = provenance(made_by, width=1000)
    cpu = made_by.split(" | ")[1].split(",")[0]
    assert text == (f"made by benchmarks/bench_x.py --fast; on {cpu}, {os.cpu_count()} cores, 1 thread, "
                    f"torch {torch.__version__}, cpu | checkpoint abc")


@pytest.mark.gpu
def test_matmul_peak_and_machine_header_on_cuda() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    flops, what = matmul_peak("cuda", reps=2, size=1024)
    assert flops > 1e11 and what == "1024x1024 bfloat16 matmul"
    assert f"cuda ({torch.cuda.get_device_name()})" in machine_header("cuda")


def test_attention_peak_mib_grows_quadratically_for_the_explicit_path_only():
    lengths = [64, 256]
    explicit = measure.attention_peak_mib(lambda q, k, v: scaled_dot_product_attention(q, k, v)[0], lengths,
                                          heads=2, head_size=16)
    fused = measure.attention_peak_mib(fused_attention, lengths, heads=2, head_size=16)
    assert explicit[1] / explicit[0] > 8  # T² dominates: x16 at most
    assert fused[1] / fused[0] < 6  # linear: x4 plus a constant
    with pytest.raises(TypeError, match="attention must be a callable"):
        measure.attention_peak_mib("sdpa", lengths)


def test_finetune_selection_on_the_committed_table_picks_one_setting_per_start_and_budget():
    _, rows = committed_results("bert_finetune.csv")
    tuned, other = finetune_selection(rows)
    budgets = sorted({int(r["labels"]) for r in rows})
    assert set(tuned) == {(start, n) for start in ("scratch", "pretrained") for n in budgets}
    assert set(other) == {(name, n) for name in ("bag-of-words", "scratch probe", "pretrained probe")
                          for n in budgets}
    for (start, n), (val, test, setting) in tuned.items():
        runs = [r for r in rows if (r["start"], int(r["labels"])) == (start, n) and r["pooling"] in ("cls", "mean")]
        assert val == max(sum(float(r["val_accuracy"]) for r in same) / len(same)
                          for same in ([r for r in runs if (r["pooling"], r["finetune_lr"]) == key]
                                       for key in {(r["pooling"], r["finetune_lr"]) for r in runs}))
        assert setting.split(",")[0] in ("cls", "mean") and 0 < test < 1
