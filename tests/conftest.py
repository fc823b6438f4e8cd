"""Shared test set-up: the tests' groups for pytest-xdist, GPU tests skipped where no CUDA
device is present, the helpers beside the tests (``oracles``, ``exercise_harness``)
importable, and ``one_thread`` to run a test on one PyTorch thread."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Group the tests for ``pytest -n N --dist loadgroup`` (``make test``): each file runs on one worker
    (its module fixtures are built once), and the files with end-to-end tests (``slow``: a class graded
    through the sandbox, each with two judges at once) run one after another on one worker, first, while
    the other workers take the rest. Without GPU, the ``gpu`` tests are skipped."""
    slow_files = {item.path for item in items if "slow" in item.keywords}
    for item in items:
        group = "end-to-end" if item.path in slow_files else item.path.stem
        item.add_marker(pytest.mark.xdist_group(group))
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
