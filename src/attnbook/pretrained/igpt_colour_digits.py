"""``igpt-colour-digits``: chapter 5's ImageGPT on digits in random colours, 512 palette tokens.

With 512 ids, one stroke in new colours is a new pattern of tokens, so 1,439
digits in one colouring each teach colours long before shapes (chapter 5's
first try, 2,000 steps, completed shapes worse than the per-position mode).
This recipe draws the same training digits in ``ROUNDS`` fresh colourings
(``make_coloured_digits(1797 * ROUNDS, seed=1)``, keeping the training
digits only) and trains for ``STEPS`` steps on a cosine schedule; validation
and test are the digits and colours of :func:`igpt_common.digits`. Its
completions are scored against the baselines of
:mod:`attnbook.imagegpt.baselines` (chapter 5, section 3).
"""

from __future__ import annotations

import torch

from attnbook.data import load_digits, make_coloured_digits, split_indices
from attnbook.imagegpt import (
    ImageGPT,
    complete,
    completion_scores,
    evaluate_bits_per_dim,
    next_pixel_loss,
    quantize_9bit,
)
from attnbook.pretrained import igpt_common as common
from attnbook.pretrained._recipe import Recipe, Settings, Trained

ROWS_KEPT, COMPLETION_SEED = 4, 1  # keep the top half of each test image; the seed of the draws
VOTES = 8  # draws per test image; a pixel of the vote is ink where most draws put ink
ROUNDS, COLOUR_SEED, STEPS = 40, 1, 12_000  # fresh colourings of each training digit; the training budget


def make(config: dict) -> ImageGPT:
    return ImageGPT(common.make_config(config))


def recoloured_training_digits(rounds: int = ROUNDS) -> torch.Tensor:
    """The training split's digits, each in ``rounds`` fresh colourings: (1439 * rounds, 8, 8) token ids.

    >>> recoloured_training_digits(1).shape
    torch.Size([1439, 8, 8])
    """
    n = len(load_digits()[1])  # 1,797
    train_idx = torch.tensor(split_indices(n, seed=0).train)
    pool = make_coloured_digits(n * rounds, seed=COLOUR_SEED)  # every digit ``rounds`` times, in new colours
    return quantize_9bit(pool.images[torch.isin(pool.index, train_idx)])


def train(settings: Settings) -> Trained:
    data = common.digits(colour=True)
    config = common.preset_dict("colour-9bit")
    train_images = recoloured_training_digits(2 if settings.smoke else ROUNDS)
    make_batch, _ = common.batches(train_images, settings)
    model = make(config)
    val = data["val"].to(settings.device)
    notes = common.train_early_stopped(model, next_pixel_loss, make_batch, lambda m: evaluate_bits_per_dim(m, val),
                                       settings, steps=STEPS, schedule="cosine")
    return Trained(model, config, {**notes, "objective": "next pixel", "val_metric": "bits/dim",
                                   "training_images": len(train_images)})


def completions(model: ImageGPT, test: torch.Tensor, draws: int = VOTES) -> torch.Tensor:
    """The bottom halves of the test images (N, 8, 8), drawn ``draws`` times each, seeded:
    (draws, N, 8, 8) on the CPU."""
    device = next(model.parameters()).device
    g = torch.Generator(device=device).manual_seed(COMPLETION_SEED)
    done = complete(model, test.repeat(draws, 1, 1).to(device), rows_kept=ROWS_KEPT, generator=g).cpu()
    return done.view(draws, *test.shape)


def evaluate(model: ImageGPT, config: dict, device: torch.device) -> dict[str, float]:
    data = common.digits(colour=True)
    test = data["test"]
    model = model.to(device).eval()
    done = completions(model, test)  # (VOTES, N, 8, 8)
    scores = completion_scores(done, data["train"], test, ROWS_KEPT)
    reused = torch.stack([torch.isin(d[ROWS_KEPT:], t[:ROWS_KEPT]).float().mean()
                          for d, t in zip(done[0], test, strict=True)])
    one, vote = scores["1 draw"], scores[f"vote of {VOTES} draws"]
    return {
        "test_bpd": evaluate_bits_per_dim(model, test.to(device)),
        "completion_agreement": one[0], "completion_ink_iou": one[1],
        "vote_agreement": vote[0], "vote_ink_iou": vote[1],
        "completion_colour_reuse": float(reused.mean()),
    }


RECIPE = Recipe(
    name="igpt-colour-digits",
    summary="ImageGPT (4 blocks of width 64, 512-token 9-bit palette) trained on the next pixel of "
            "8x8 digits in random colours; chapter 5 scores its completions against baselines",
    data=("trained on the 1,439 digits of split_indices(1797, seed=0) in 40 colourings each "
          "(make_coloured_digits(1797 * 40, seed=1), the training digits only) through the uniform 9-bit "
          "palette; early-stopped on the 179 validation and scored on the 179 test digits of "
          "make_coloured_digits(1797, seed=0) in load_digits' order"),
    make=make,
    train=train,
    evaluate=evaluate,
    tolerance={"test_bpd": 0.01, "completion_agreement": 0.03, "completion_ink_iou": 0.05,
               "vote_agreement": 0.03, "vote_ink_iou": 0.05, "completion_colour_reuse": 0.03},
)
