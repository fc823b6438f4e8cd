"""Chapter 5's checkpoints, ``igpt-digits-ar``, ``igpt-digits-masked`` and ``igpt-colour-digits``:
they load, reproduce their sidecar's metrics on the CPU, and their recipes build end to end."""

from __future__ import annotations

import json

import pytest
import torch

from attnbook import pretrained
from attnbook.pretrained.__main__ import main

NAMES = ["igpt-digits-ar", "igpt-digits-masked", "igpt-colour-digits"]


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_reproduces_its_sidecar(name):
    side = pretrained.info(name)
    model = pretrained.load(name)
    assert not model.training
    assert side["bytes"] < 3_000_000, "keep each checkpoint under 3 MB"
    assert not side["smoke"]
    got = pretrained.recipe(name).evaluate(model, side["config"], torch.device("cpu"))
    for metric, tolerance in pretrained.recipe(name).tolerance.items():
        assert abs(got[metric] - side["metrics"][metric]) <= tolerance, (metric, got[metric], side["metrics"])


def test_both_digits_models_had_the_same_budget():
    """Chapter 5 compares the two objectives: same sizes, data, steps, batch and learning rate."""
    ar, masked = (pretrained.info(name) for name in NAMES[:2])
    assert ar["config"] == masked["config"]
    for key in ("steps", "batch", "lr", "eval_every"):
        assert ar["notes"][key] == masked["notes"][key], key
    assert ar["data"] == masked["data"]


@pytest.mark.parametrize("name", NAMES)
def test_smoke_build_runs_end_to_end(name, tmp_path):
    assert main(["build", name, "--smoke", "--out", str(tmp_path)]) == 0
    side = json.loads((tmp_path / f"{name}.json").read_text())
    assert side["smoke"] and side["command"].endswith("--smoke")
    assert set(pretrained.recipe(name).tolerance) <= set(side["metrics"])
    model = pretrained.load(name, folder=tmp_path)  # the sha256 matches, the shapes fit
    assert sum(p.numel() for p in model.parameters()) > 0
