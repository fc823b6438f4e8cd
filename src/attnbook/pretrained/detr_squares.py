"""``detr-squares``: chapter 6's tiny DETR trained long enough to give one box per square.

:class:`attnbook.vit.detr.TinyDETR` (6 queries, width 64) on 2,000 scenes of
coloured squares (:func:`attnbook.data.make_square_scenes`, seed 0), with the
set loss of :func:`attnbook.vit.detr.set_loss` ("no object" down-weighted by
``eos_coef``, the paper's 0.1). A query *claims* an object when the
probability of its best colour is at least ``threshold``; the threshold is
the one of :data:`THRESHOLDS` that gives the right number of boxes in the
most validation scenes (seed 2), and is kept in the config.

``evaluate`` scores 200 test scenes (seed 1): ``matched_iou`` and
``class_accuracy`` of the Hungarian-matched queries (as
:func:`attnbook.vit.detr.matched_box_iou`), and of the claimed boxes, each
assigned to the true square it overlaps most: ``duplicate_rate``, the share of
scenes where two claimed boxes land on the same square; ``count_accuracy``,
where the number of claimed boxes equals the number of squares; and
``missed_rate``, the share of squares no claimed box lands on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from attnbook.data import SquareScenes, make_square_scenes
from attnbook.pretrained._recipe import Recipe, Settings, Trained
from attnbook.vit import box_cxcywh_to_xyxy, box_iou
from attnbook.vit.detr import DETRConfig, TinyDETR, matched_box_iou, train_detr

__all__ = ["RECIPE", "TRAINING", "THRESHOLDS", "scenes", "make", "claimed", "scene_scores", "train", "evaluate"]

TRAINING = dict(steps=4000, batch_size=32, lr=1e-3, weight_decay=1e-4, eos_coef=0.1)
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)  # candidates for the claim threshold
_FIELDS = {f.name for f in dataclasses.fields(DETRConfig)}


def scenes(part: str) -> SquareScenes:
    """``"train"`` (2,000 scenes, seed 0), ``"test"`` (200, seed 1) or ``"validation"`` (200, seed 2)."""
    n, seed = {"train": (2000, 0), "test": (200, 1), "validation": (200, 2)}[part]
    return make_square_scenes(n, seed=seed)


def _detr_config(config: dict) -> DETRConfig:
    fields: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in config.items() if k in _FIELDS}
    return DETRConfig(**fields)


def make(config: dict) -> TinyDETR:
    return TinyDETR(_detr_config(config))


def claimed(outputs: dict[str, torch.Tensor], threshold: float) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per image, the claimed boxes (cx, cy, w, h) and their classes: queries whose best colour has
    probability >= ``threshold`` (the "no object" class left out of the best)."""
    probs = outputs["pred_logits"].softmax(-1)[..., :-1]  # (B, Q, K): the colours only
    score, cls = probs.max(-1)  # (B, Q)
    keep = score >= threshold
    return [(outputs["pred_boxes"][b][keep[b]], cls[b][keep[b]]) for b in range(len(keep))]


@torch.no_grad()
def scene_scores(outputs: dict[str, torch.Tensor], boxes: list[torch.Tensor], threshold: float) -> dict[str, float]:
    """``duplicate_rate``, ``count_accuracy`` and ``missed_rate`` of the boxes claimed at ``threshold``."""
    duplicate, right_count, missed, squares = 0, 0, 0, 0
    for (pred, _), true in zip(claimed(outputs, threshold), boxes, strict=True):
        right_count += len(pred) == len(true)
        squares += len(true)
        if len(pred) == 0:
            missed += len(true)
            continue
        iou = box_iou(box_cxcywh_to_xyxy(pred), box_cxcywh_to_xyxy(true.to(pred)))  # (claimed, M)
        hits = iou.argmax(-1)[iou.amax(-1) > 0]  # the square each overlapping claim lands on
        per_square = torch.bincount(hits, minlength=len(true))  # (M,)
        duplicate += bool((per_square > 1).any())
        missed += int((per_square == 0).sum())
    n = len(boxes)
    return {"duplicate_rate": duplicate / n, "count_accuracy": right_count / n, "missed_rate": missed / squares}


def _choose_threshold(model: TinyDETR) -> tuple[float, dict[float, float]]:
    val = scenes("validation")
    with torch.no_grad():
        out = model.eval()(val.images)
    by = {t: scene_scores(out, val.boxes, t)["count_accuracy"] for t in THRESHOLDS}
    return max(THRESHOLDS, key=lambda t: (by[t], -abs(t - 0.5))), by  # ties: the one nearest 0.5


def train(settings: Settings, **overrides: Any) -> Trained:
    """Train from random weights; ``overrides`` change :data:`TRAINING` (for sweeps)."""
    cfg = {**TRAINING, **overrides}
    steps = 4 if settings.smoke else cfg["steps"]
    data = scenes("train")
    config = DETRConfig(eos_coef=cfg["eos_coef"])
    torch.manual_seed(settings.seed)
    model = TinyDETR(config)
    train_detr(model, data, steps=steps, batch_size=cfg["batch_size"], lr=cfg["lr"], weight_decay=cfg["weight_decay"],
               generator=torch.Generator().manual_seed(settings.seed), device=settings.device)
    model = model.cpu()
    threshold, by = _choose_threshold(model)
    full = {**dataclasses.asdict(config), "threshold": threshold}
    return Trained(model, full, notes={"training": {**cfg, "steps": steps},
                                       "validation_count_accuracy": {str(t): round(v, 4) for t, v in by.items()}})


@torch.no_grad()
def evaluate(model: TinyDETR, config: dict, device: torch.device) -> dict[str, float]:
    test = scenes("test")
    out = {k: v.cpu() for k, v in model.to(device).eval()(test.images.to(device)).items()}
    return {**matched_box_iou(out, test.labels, test.boxes, _detr_config(config)),
            **scene_scores(out, test.boxes, config["threshold"])}


RECIPE = Recipe(
    name="detr-squares",
    summary="tiny DETR (SmallCNN backbone, 1 encoder + 2 decoder blocks, 6 queries) on scenes of coloured "
            "squares; chapter 6, section 4 shows its boxes",
    data="make_square_scenes: 2,000 training scenes (seed 0), 200 validation (seed 2) to choose the claim "
         "threshold, 200 test (seed 1)",
    make=make,
    train=train,
    evaluate=evaluate,
    tolerance={"matched_iou": 0.002, "class_accuracy": 0.002, "duplicate_rate": 0.006, "count_accuracy": 0.006},
)
