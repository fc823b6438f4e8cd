"""Shared test set-up: GPU tests are skipped where no CUDA device is present, the
helpers beside the tests (``oracles``, ``exercise_harness``) are importable, and
``one_thread`` runs a test on one PyTorch thread."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))


def pytest_collection_modifyitems(config, items):
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
