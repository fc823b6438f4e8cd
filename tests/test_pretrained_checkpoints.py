"""Every committed checkpoint loads in eval mode, reproduces its sidecar's metrics on the CPU within
its recipe's tolerance, and its build command runs end to end at smoke size.

What each chapter's page claims of its checkpoints is tested beside it: ``test_pretrained_bert.py``,
``test_pretrained_imagegpt.py``, ``test_pretrained_vit.py``.
"""

from __future__ import annotations

import pytest
import torch

from attnbook import pretrained
from attnbook.pretrained.__main__ import main


@pytest.mark.parametrize("name", pretrained.names())
def test_checkpoint_reproduces_its_sidecar(name):
    side = pretrained.info(name)
    model = pretrained.load(name)
    assert not model.training
    assert not side["smoke"]
    got = pretrained.recipe(name).evaluate(model, side["config"], torch.device("cpu"))
    for metric, tolerance in pretrained.recipe(name).tolerance.items():
        assert got[metric] == pytest.approx(side["metrics"][metric], abs=tolerance), (metric, side["metrics"])


@pytest.mark.parametrize("name", pretrained.names())
def test_smoke_build_runs_end_to_end(name, tmp_path):
    assert main(["build", name, "--smoke", "--out", str(tmp_path)]) == 0
    side = pretrained.info(name, tmp_path)
    assert side["smoke"] and side["command"].endswith("--smoke")
    assert set(pretrained.recipe(name).tolerance) <= set(side["metrics"])
    model = pretrained.load(name, folder=tmp_path)  # the sha256 matches, the shapes fit
    assert sum(p.numel() for p in model.parameters()) > 0
