"""``igpt-digits-masked``: the same transformer, bidirectional, trained to predict 15 % masked pixels.

The BERT-style half of the comparison in chapter 5 (sections 3 and 4):
:class:`attnbook.imagegpt.MaskedPixelModel` with the sizes and initial
weights of ``igpt-digits-ar``, the same data, steps, batches and learning
rate; only the objective differs. Early stopping watches the bits on a fixed
15 % of the validation pixels.
"""

from __future__ import annotations

import torch

from attnbook.imagegpt import MaskedPixelModel, mask_pixels, masked_pixel_bits, masked_pixel_loss
from attnbook.pretrained import igpt_common as common
from attnbook.pretrained._recipe import Recipe, Settings, Trained


def make(config: dict) -> MaskedPixelModel:
    return MaskedPixelModel(common.make_config(config))


def train(settings: Settings) -> Trained:
    data, config, images, g, model = common.start(make, settings)
    mask_id = model.mask_id

    def make_batch():
        return mask_pixels(images(), mask_id, rate=common.MASK_RATE, generator=g)

    val = data["val"].to(settings.device)
    val_masked = mask_pixels(data["val"], mask_id, rate=common.MASK_RATE,
                             generator=torch.Generator().manual_seed(1))[2].to(settings.device)
    notes = common.train_early_stopped(model, masked_pixel_loss, make_batch,
                                       lambda m: masked_pixel_bits(m, val, val_masked), settings)
    return Trained(model, config, {**notes, "objective": "15 % masked pixels",
                                   "val_metric": "bits per masked pixel"})


RECIPE = Recipe(
    name="igpt-digits-masked",
    summary="the same transformer made bidirectional and trained on 15 % masked grey pixels (BERT-style); "
            "chapter 5 compares it with igpt-digits-ar",
    data=common.DIGITS_DATA, make=make, train=train, evaluate=common.digits_metrics, tolerance=common.TOLERANCE,
)
