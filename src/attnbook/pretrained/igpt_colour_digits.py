"""``igpt-colour-digits``: chapter 5's ImageGPT on digits in random colours, 512 palette tokens.

The page trains this model for 300 steps in a minute and its completions
keep the colours but lose the shape; this checkpoint runs the same recipe for
the budget of :mod:`igpt_common`. Its completions are scored against the
baselines of :mod:`attnbook.imagegpt.baselines` (chapter 5, section 3).
"""

from __future__ import annotations

import torch

from attnbook.imagegpt import (
    ImageGPT,
    complete,
    evaluate_bits_per_dim,
    ink_iou,
    ink_mask,
    next_pixel_loss,
    shape_agreement,
)
from attnbook.pretrained import igpt_common as common
from attnbook.pretrained._recipe import Recipe, Settings, Trained

ROWS_KEPT, COMPLETION_SEED = 4, 1  # keep the top half of each test image; the seed of the draws


def make(config: dict) -> ImageGPT:
    return ImageGPT(common.make_config(config))


def train(settings: Settings) -> Trained:
    data = common.digits(colour=True)
    config = common.preset_dict("colour-9bit")
    make_batch, _ = common.batches(data["train"], settings)
    model = make(config)
    val = data["val"].to(settings.device)
    notes = common.train_early_stopped(model, next_pixel_loss, make_batch,
                                       lambda m: evaluate_bits_per_dim(m, val), settings)
    return Trained(model, config, {**notes, "objective": "next pixel", "val_metric": "bits/dim"})


def completions(model: ImageGPT, test: torch.Tensor) -> torch.Tensor:
    """The bottom halves of the test images (N, 8, 8) drawn once each, seeded: (N, 8, 8) on the CPU."""
    device = next(model.parameters()).device
    g = torch.Generator(device=device).manual_seed(COMPLETION_SEED)
    return complete(model, test.to(device), rows_kept=ROWS_KEPT, generator=g).cpu()


def evaluate(model: ImageGPT, config: dict, device: torch.device) -> dict[str, float]:
    test = common.digits(colour=True)["test"]
    model = model.to(device).eval()
    done = completions(model, test)
    reused = torch.stack([torch.isin(d[ROWS_KEPT:], t[:ROWS_KEPT]).float().mean()
                          for d, t in zip(done, test, strict=True)])
    return {
        "test_bpd": evaluate_bits_per_dim(model, test.to(device)),
        "completion_agreement": shape_agreement(ink_mask(done), ink_mask(test), ROWS_KEPT),
        "completion_ink_iou": ink_iou(ink_mask(done), ink_mask(test), ROWS_KEPT),
        "completion_colour_reuse": float(reused.mean()),
    }


RECIPE = Recipe(
    name="igpt-colour-digits",
    summary="ImageGPT (4 blocks of width 64, 512-token 9-bit palette) trained on the next pixel of "
            "8x8 digits in random colours; chapter 5 scores its completions against baselines",
    data=("make_coloured_digits(1797, seed=0) in load_digits' order through the uniform 9-bit palette; "
          "trained on the 1,439 images of split_indices(1797, seed=0), early-stopped on its 179 "
          "validation images, scored on its 179 test images"),
    make=make,
    train=train,
    evaluate=evaluate,
    tolerance={"test_bpd": 0.01, "completion_agreement": 0.03, "completion_ink_iou": 0.05,
               "completion_colour_reuse": 0.03},
)
