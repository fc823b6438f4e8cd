"""Chapter 5's checkpoints, ``igpt-digits-ar``, ``igpt-digits-masked`` and ``igpt-colour-digits``, are
what its pages say they are (loading, reproducing and rebuilding them: ``test_pretrained_checkpoints.py``)."""

from __future__ import annotations

from attnbook import pretrained
from attnbook.imagegpt import fill_rows, ink_iou, ink_mask, position_mode, shape_agreement
from attnbook.pretrained import igpt_common
from attnbook.pretrained.igpt_colour_digits import ROWS_KEPT


def test_both_digits_models_had_the_same_budget():
    """Chapter 5 compares the two objectives: same sizes, data, steps, batch and learning rate."""
    ar, masked = (pretrained.info(name) for name in ("igpt-digits-ar", "igpt-digits-masked"))
    assert ar["config"] == masked["config"]
    for key in ("steps", "batch", "lr", "eval_every"):
        assert ar["notes"][key] == masked["notes"][key], key
    assert ar["data"] == masked["data"]


def test_colour_completions_beat_the_per_position_mode():
    """Chapter 5, section 3: the vote of the colour model's draws beats the completion that looks at no
    pixel (the per-position mode of the training digits' ink) on agreement and on ink IoU."""
    data = igpt_common.digits(colour=True)
    true_ink = ink_mask(data["test"])  # (179, 8, 8)
    mode = fill_rows(true_ink, ROWS_KEPT, position_mode(ink_mask(data["train"])))
    metrics = pretrained.info("igpt-colour-digits")["metrics"]
    assert metrics["vote_agreement"] > shape_agreement(mode, true_ink, ROWS_KEPT) + 0.02
    assert metrics["vote_ink_iou"] > ink_iou(mode, true_ink, ROWS_KEPT) + 0.02
