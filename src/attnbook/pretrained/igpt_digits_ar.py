"""``igpt-digits-ar``: chapter 5's ImageGPT on the grey digits, trained on the next pixel.

The autoregressive half of the comparison in chapter 5 (sections 3 and 4):
the preset ``digits-8x8`` trained with the recipe of :mod:`igpt_common` for
the same budget as ``igpt-digits-masked``, which differs only in objective.
"""

from __future__ import annotations

from attnbook.imagegpt import ImageGPT, evaluate_bits_per_dim, next_pixel_loss
from attnbook.pretrained import igpt_common as common
from attnbook.pretrained._recipe import Recipe, Settings, Trained


def make(config: dict) -> ImageGPT:
    return ImageGPT(common.make_config(config))


def train(settings: Settings) -> Trained:
    data, config, make_batch, _, model = common.start(make, settings)
    val = data["val"].to(settings.device)
    notes = common.train_early_stopped(model, next_pixel_loss, make_batch,
                                       lambda m: evaluate_bits_per_dim(m, val), settings)
    return Trained(model, config, {**notes, "objective": "next pixel", "val_metric": "bits/dim"})


RECIPE = Recipe(
    name="igpt-digits-ar",
    summary="ImageGPT (4 blocks of width 64) trained on the next grey pixel of 8x8 digits; "
            "chapter 5 compares it with igpt-digits-masked",
    data=common.DIGITS_DATA,
    make=make,
    train=train,
    evaluate=common.digits_metrics,
    tolerance={**common.TOLERANCE, "test_bpd": 0.01},
)
