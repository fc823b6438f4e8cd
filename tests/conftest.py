"""Shared test set-up: the end-to-end files first (for pytest-xdist), GPU tests skipped where no CUDA
device is present, and ``one_thread`` to run a test on one PyTorch thread. The helpers beside the tests
(``oracles``, ``exercise_harness``, ``reaper``, ``browser``) import by name: pytest's ``pythonpath``
(pyproject.toml) puts ``tests/`` on the path."""

import pytest
import torch


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
