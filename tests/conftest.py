"""Shared test set-up: each pytest-xdist worker on its share of the cores, the end-to-end files first, GPU
tests skipped where no CUDA device is present, and ``one_thread`` to run a test on one PyTorch thread.
The helpers beside the tests (``oracles``, ``exercise_harness``, ``reaper``, ``browser``) import by name:
pytest's ``pythonpath`` (pyproject.toml) puts ``tests/`` on the path."""

import os

import pytest
import torch


def pytest_configure(config):
    """Each of ``make test``'s pytest-xdist workers computes on its share of the cores (PyTorch's threads, and
    OpenMP's in the processes a test starts), as ``tools/execute_pages.py`` does for the book's kernels: with
    two workers on two cores, a test's two threads beside a busy core spin and wait (the registry's smoke
    build of ``bert-plays``: 15 s alone; beside one busy core 31 s on two threads, 23 s on one; 157 s in
    the suite before this, 21 s after)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        threads = max(1, len(os.sched_getaffinity(0)) // workers)
        torch.set_num_threads(threads)
        os.environ["OMP_NUM_THREADS"] = str(threads)


def pytest_collection_modifyitems(config, items):
    """The files with end-to-end tests (``slow``: a class graded through the sandbox) first: ``make test``
    runs each file on one pytest-xdist worker (``--dist loadfile``, its module fixtures built once) in this
    order (``--no-loadscope-reorder``: xdist would put the files with most tests first), so the longest
    start at once and the short files fill the cores after. Without GPU, the ``gpu`` tests are
    skipped."""
    slow_files = {item.path for item in items if "slow" in item.keywords}
    items.sort(key=lambda item: item.path not in slow_files)  # stable: the slow files first, in order
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def one_thread():
    """Tiny models run fastest on one thread: on a busy 2-core machine a second thread only adds
    OpenMP synchronisation. Files of small models use it with ``pytest.mark.usefixtures``."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
