"""What the chapter-5 checkpoints share: the digits split, one training recipe, the comparison metrics.

Every ``igpt-*`` checkpoint trains on the training split of
``split_indices(1797, seed=0)`` (1,439 images), keeps the weights of its best
validation score (early stopping, every ``EVAL_EVERY`` steps) and is scored on
the 179 test images. The recipe is chapter 5's, run longer than a page may:
``STEPS`` AdamW steps of ``BATCH`` random images at a constant ``LR``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from attnbook.data import load_digits, make_coloured_digits, split_indices
from attnbook.imagegpt import (
    ImageGPT,
    ImageGPTConfig,
    MaskedPixelModel,
    evaluate_bits_per_dim,
    fit_early_stopped,
    grey_levels,
    layer_probes,
    mask_pixels,
    masked_pixel_bits,
    quantize_9bit,
    random_batches,
    to_sequence,
)
from attnbook.pretrained._recipe import Settings
from attnbook.runtime import seed_everything

STEPS, BATCH, LR, EVAL_EVERY = 2000, 32, 3e-3, 100  # the same budget for every igpt-* checkpoint
SMOKE_STEPS = 4
WARMUP = 200  # warm-up steps of a cosine schedule
MASK_RATE, TEST_MASK_SEED = 0.15, 5  # the masked test pixels both digits models are scored on


def digits(colour: bool = False) -> dict[str, torch.Tensor]:
    """Token images and labels of the split: ``train``, ``val``, ``test`` and ``*_labels``.

    Grey: 8 levels (ids 0..7). Colour: ``make_coloured_digits(1797, seed=0)``
    put back in ``load_digits``' order (so the split holds the same digits)
    through the uniform 9-bit palette (ids 0..511).
    """
    images, labels = load_digits(normalize=False)  # (1797, 8, 8) grey values 0..16
    if colour:
        coloured = make_coloured_digits(len(images), seed=0)
        tokens = quantize_9bit(coloured.images[torch.argsort(coloured.index)])  # (1797, 8, 8) ids 0..511
    else:
        tokens = grey_levels(images, levels=8, max_value=16)  # (1797, 8, 8) ids 0..7
    out = {}
    for part, idx in zip(("train", "val", "test"), split_indices(len(tokens), seed=0), strict=True):
        rows = torch.tensor(idx)
        out[part], out[f"{part}_labels"] = tokens[rows], labels[rows]
    return out


def train_early_stopped(model: torch.nn.Module, loss_fn: Callable[[Any, Any], torch.Tensor],
                        make_batch: Callable[[], Any], val_score: Callable[[Any], float], settings: Settings, *,
                        steps: int = STEPS, schedule: str = "constant") -> dict:
    """``fit`` for ``steps`` steps (``SMOKE_STEPS`` in a smoke run) at ``LR`` (``schedule``: "constant" or
    "cosine" after a warm-up); load the weights of the lowest ``val_score(model)``; return notes for the
    sidecar (steps, best step, its score)."""
    steps, every = (SMOKE_STEPS, 2) if settings.smoke else (steps, EVAL_EVERY)
    warmup = min(WARMUP, steps // 2) if schedule == "cosine" else 0
    history = fit_early_stopped(model, loss_fn, make_batch, steps=steps, lr=LR, eval_every=every,
                                scores=lambda m: {"val": val_score(m)}, monitor="val", schedule=schedule,
                                warmup_steps=warmup, device=settings.device, progress=False)
    best = history.best("val", mode="min")
    return {"steps": steps, "batch": BATCH, "lr": LR, "schedule": schedule, "eval_every": every,
            "best_step": best["step"], "best_val": round(best["val"], 4), "train_seconds": round(history.seconds, 1),
            "val_curve": [[e["step"], round(e["val"], 4)] for e in history.evals]}


def batches(train: torch.Tensor, settings: Settings) -> tuple[Callable[[], torch.Tensor], torch.Generator]:
    """A callable giving ``BATCH`` random training images (B, H, W), seeded by ``settings.seed``."""
    seed_everything(settings.seed)
    g = torch.Generator().manual_seed(settings.seed)
    return random_batches(train, BATCH, generator=g), g


def start(make: Callable[[dict], torch.nn.Module], settings: Settings) -> tuple:
    """What a grey-digits recipe begins with: ``(data, config, next_batch, generator, model)``.

    The model (``make`` of the ``digits-8x8`` preset) is built after the
    seeding of :func:`batches`, so its initial weights follow ``settings.seed``.
    """
    data = digits()
    config = preset_dict("digits-8x8")
    next_batch, g = batches(data["train"], settings)
    return data, config, next_batch, g, make(config)


def masked_test_pixels(test: torch.Tensor) -> torch.Tensor:
    """The fixed 15 % of test pixels (N, 64) that both digits models are scored on."""
    return mask_pixels(test, 0, rate=MASK_RATE, generator=torch.Generator().manual_seed(TEST_MASK_SEED))[2]


def probe_accuracies(model: ImageGPT | MaskedPixelModel, data: dict[str, torch.Tensor]) -> dict[str, float]:
    """Linear-probe test accuracy on the mean-pooled features of every layer: ``probe_layer0`` ..."""
    accuracies = layer_probes(model, to_sequence(data["train"]), data["train_labels"], to_sequence(data["test"]),
                              data["test_labels"])
    return {f"probe_layer{layer}": accuracy for layer, accuracy in enumerate(accuracies)}


def digits_metrics(model: ImageGPT | MaskedPixelModel, config: dict, device: torch.device) -> dict[str, float]:
    """Bits on the fixed masked test pixels and every layer's probe accuracy (+ test bits/dim for ImageGPT)."""
    data = digits()
    model = model.to(device).eval()
    test = data["test"].to(device)
    metrics = {"masked_bits": masked_pixel_bits(model, test, masked_test_pixels(data["test"]).to(device))}
    if isinstance(model, ImageGPT):
        metrics["test_bpd"] = evaluate_bits_per_dim(model, test)
    return {**metrics, **probe_accuracies(model.cpu(), data)}


def make_config(config: dict) -> ImageGPTConfig:
    return ImageGPTConfig(**config)


def preset_dict(name: str) -> dict:
    """The preset as a plain dict (JSON for the sidecar)."""
    c = ImageGPTConfig.preset(name)
    return {k: getattr(c, k) for k in ("vocab_size", "height", "width", "n_layer", "n_head", "n_embd",
                                       "n_inner", "dropout", "bias")}


DIGITS_DATA = ("sklearn's 8x8 digits at 8 grey levels (load_digits, 1797 images); trained on the 1,439 of "
               "split_indices(1797, seed=0), early-stopped on its 179 validation images, scored on its 179 "
               "test images")
TOLERANCE = {"masked_bits": 0.01, **{f"probe_layer{i}": 0.02 for i in range(5)}}
