"""Chapter 6's checkpoints, ``vit-mnist`` and ``detr-squares``: they load, reproduce their sidecar's
metrics on the CPU, meet the targets the pages rely on, and their recipes build end to end."""

from __future__ import annotations

import json

import pytest
import torch

from attnbook import pretrained
from attnbook.pretrained.__main__ import main

NAMES = ["vit-mnist", "detr-squares"]


@pytest.mark.parametrize("name", NAMES)
def test_checkpoint_reproduces_its_sidecar(name):
    side = pretrained.info(name)
    model = pretrained.load(name)
    assert not model.training
    assert side["bytes"] < 3_000_000, "keep each checkpoint under 3 MB"
    got = pretrained.recipe(name).evaluate(model, side["config"], torch.device("cpu"))
    for metric, tolerance in pretrained.recipe(name).tolerance.items():
        assert abs(got[metric] - side["metrics"][metric]) <= tolerance, (metric, got[metric], side["metrics"])


def test_vit_mnist_positions_show_the_grid():
    """Chapter 6, section 3 says the learned positions rediscover the grid: hold it to a number."""
    metrics = pretrained.info("vit-mnist")["metrics"]
    assert metrics["pos_contrast"] >= 0.25
    assert metrics["test_accuracy"] >= 0.95


def test_detr_squares_gives_one_box_per_square():
    """Chapter 6, section 4 shows one box per square: duplicates in at most 10 % of the test scenes."""
    metrics = pretrained.info("detr-squares")["metrics"]
    assert metrics["duplicate_rate"] <= 0.10
    assert metrics["class_accuracy"] >= 0.9


@pytest.mark.parametrize("name", NAMES)
def test_smoke_build_runs_end_to_end(name, tmp_path, capsys):
    assert main(["build", name, "--smoke", "--out", str(tmp_path)]) == 0
    side = json.loads((tmp_path / f"{name}.json").read_text())
    assert side["smoke"] and side["command"].endswith("--smoke")
    assert set(pretrained.recipe(name).tolerance) <= set(side["metrics"])
    model = pretrained.load(name, folder=tmp_path)  # the sha256 matches, the shapes fit
    assert sum(p.numel() for p in model.parameters()) > 0
