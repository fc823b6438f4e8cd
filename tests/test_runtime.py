"""runtime: device choice, free CPUs, seeding, autocast, parameter counts."""

import pytest
import torch

from attnbook import runtime
from attnbook.runtime import autocast, count_parameters, get_device, seed_everything


def test_get_device_defaults_to_an_available_device(monkeypatch):
    monkeypatch.delenv("ATTNBOOK_DEVICE", raising=False)
    device = get_device()
    assert device.type in {"cuda", "mps", "cpu"}
    if not torch.cuda.is_available():
        assert device.type != "cuda"


def test_environment_overrides_preference(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_DEVICE", "cpu")
    assert get_device("cuda") == torch.device("cpu")


def test_asking_for_missing_cuda_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("ATTNBOOK_DEVICE", raising=False)
    if torch.cuda.is_available():
        pytest.skip("CUDA is present")
    with pytest.raises(ValueError, match="CUDA is not available"):
        get_device("cuda")


def test_seed_everything_repeats_and_rejects_non_ints():
    seed_everything(3)
    a = torch.randn(4)
    seed_everything(3)
    assert torch.equal(a, torch.randn(4))
    with pytest.raises(TypeError, match="seed must be an int"):
        seed_everything(1.5)


def test_autocast_is_a_noop_on_cpu():
    with autocast("cpu"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


@pytest.mark.gpu
def test_autocast_uses_bf16_on_cuda():
    with autocast("cuda"):
        y = torch.ones(2, 2, device="cuda") @ torch.ones(2, 2, device="cuda")
    assert y.dtype == torch.bfloat16


def test_count_parameters_counts_trainable_only_by_default():
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    model[0].weight.requires_grad_(False)
    assert count_parameters(model) == 2 + 2 + 1
    assert count_parameters(model, trainable_only=False) == 6 + 2 + 2 + 1


STAT = """cpu  0 0 0 0 0 0 0 0
cpu0 {u0} 0 0 {i0} 0 0 0 0
cpu1 {u1} 0 0 {i1} 0 0 0 0
"""


@pytest.mark.parametrize("busy, allowed, free", [
    ((0, 0), {0, 1}, 2),     # a quiet machine: both cores
    ((100, 0), {0, 1}, 1),   # another process keeps core 0 busy: one thread, on the core that is left
    ((100, 100), {0, 1}, 1),  # both busy: still one
    ((0, 0), {1}, 1),        # pinned to one core (taskset -c 1)
    ((0, 100), {0}, 1),      # pinned to core 0; core 1's load is not ours to count
])
def test_free_cpus_counts_idle_cpus_among_those_allowed(monkeypatch, tmp_path, busy, allowed, free):
    """Over the sample, each busy core spent 100 ticks working and none idle; a quiet one 100 idle."""
    samples = iter([STAT.format(u0=0, i0=0, u1=0, i1=0),
                    STAT.format(u0=busy[0], i0=100 - busy[0], u1=busy[1], i1=100 - busy[1])])
    stat = tmp_path / "stat"

    def fake_open(path, *args, **kwargs):
        assert path == "/proc/stat"
        stat.write_text(next(samples))
        return open(stat, *args, **kwargs)

    monkeypatch.setattr(runtime, "open", fake_open, raising=False)
    monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: allowed)
    assert runtime.free_cpus(sample_seconds=0) == free


def test_count_parameters_on_meta_allocates_nothing_and_agrees_with_a_real_build():
    build = lambda n: torch.nn.Sequential(torch.nn.Linear(n, 2 * n), torch.nn.LayerNorm(2 * n))  # noqa: E731
    assert runtime.count_parameters_on_meta(build, 7) == count_parameters(build(7))
    assert runtime.count_parameters_on_meta(build, 1_000_000) == 2_000_000_000_000 + 6_000_000
    assert runtime.readable_count(999_999) == "999,999" and runtime.readable_count(2.5e9) == "2.5 B"
    with pytest.raises(TypeError, match="build must be a callable"):
        runtime.count_parameters_on_meta("GPT", 7)
