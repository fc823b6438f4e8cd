"""What a checkpoint recipe gives the registry: how to make, train and score one model.

A recipe module (``attnbook.pretrained.<module>``) defines ``RECIPE``; the
registry (:mod:`attnbook.pretrained`) imports it only when the name is asked
for, so ``import attnbook.pretrained`` stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

__all__ = ["Settings", "Trained", "Recipe"]


@dataclass(frozen=True)
class Settings:
    """How to train: ``device``, ``smoke`` (a few steps, to test the command end to end), ``seed``."""

    device: torch.device
    smoke: bool = False
    seed: int = 0


@dataclass
class Trained:
    """A trained model and the JSON-able ``config`` that :attr:`Recipe.make` rebuilds its shape from
    (sizes, and whatever else a page needs, such as a vocabulary); ``notes`` go to the sidecar."""

    model: nn.Module
    config: dict
    notes: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Recipe:
    """One registered checkpoint.

    ``make(config)`` returns the model with random weights; ``train(settings)``
    a :class:`Trained`; ``evaluate(model, config, device)`` the metrics on the
    test split, which the sidecar records and a test reproduces within
    ``tolerance`` (metric name -> largest absolute difference allowed).
    """

    name: str
    summary: str  # one line: what the model is and what the book shows with it
    data: str  # what it was trained on, and what was held out
    make: Callable[[dict], nn.Module]
    train: Callable[[Settings], Trained]
    evaluate: Callable[[Any, dict, torch.device], dict[str, float]]  # takes the model that train built
    tolerance: dict[str, float]
    dtype: str = "float16"  # storage; weights are float32 again once loaded
