"""Chapter 6's checkpoints, ``vit-mnist`` and ``detr-squares``, meet the targets its pages rely on
(loading, reproducing and rebuilding them: ``test_pretrained_checkpoints.py``)."""

from __future__ import annotations

from attnbook import pretrained


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
