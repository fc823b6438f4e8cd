"""Chapter 5's training recipe: random batches of whole images, :func:`attnbook.train.fit`, early stopping.

Every pixel model of the chapter (PixelCNN, ImageGPT, the masked-pixel
model) trains the same way: each step draws ``batch_size`` random training
images (with replacement, :func:`random_batches`), AdamW at a constant
learning rate, and every ``eval_every`` steps a score on held-out images.
With only 1,439 training digits a model eventually memorises them, so
:func:`fit_early_stopped` keeps a copy of the weights whenever the monitored
validation score improves and loads the best copy at the end (**early
stopping**). The pages, ``benchmarks/bench_imagegpt.py`` and the ``igpt-*``
checkpoints of :mod:`attnbook.pretrained` all call these two functions.

>>> import torch
>>> from attnbook.imagegpt import ImageGPT, ImageGPTConfig, evaluate_bits_per_dim, next_pixel_loss
>>> _ = torch.manual_seed(0)
>>> images = torch.randint(8, (40, 8, 8))
>>> model = ImageGPT(ImageGPTConfig.preset("digits-8x8"))
>>> history = fit_early_stopped(
...     model, next_pixel_loss, random_batches(images[:32], 8, generator=torch.Generator().manual_seed(0)),
...     steps=4, eval_every=2, monitor="val_bpd", device="cpu", progress=False,
...     scores=lambda m: {"val_bpd": evaluate_bits_per_dim(m, images[32:])})
>>> best = history.best("val_bpd", mode="min")
>>> [e["step"] for e in history.evals], evaluate_bits_per_dim(model, images[32:]) == best["val_bpd"]
([2, 4], True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from attnbook._checks import positive_int
from attnbook.train import History, fit

__all__ = ["random_batches", "fit_early_stopped"]


def random_batches(images: torch.Tensor, batch_size: int = 32, *,
                   generator: torch.Generator | None = None) -> Callable[[], torch.Tensor]:
    """A callable returning ``batch_size`` random rows of ``images`` (drawn with replacement) each call.

    >>> next_batch = random_batches(torch.arange(10), 4, generator=torch.Generator().manual_seed(0))
    >>> next_batch().shape
    torch.Size([4])
    """
    if not isinstance(images, torch.Tensor) or images.dim() == 0 or len(images) == 0:
        raise ValueError("images must be a tensor with at least one row (N, ...)")
    positive_int("batch_size", batch_size)
    return lambda: images[torch.randint(len(images), (batch_size,), generator=generator)]


def fit_early_stopped(model: nn.Module, loss_fn: Callable[[nn.Module, Any], torch.Tensor],
                      batches: Callable[[], Any], *, steps: int,
                      scores: Callable[[nn.Module], Mapping[str, float]], monitor: str,
                      lr: float = 3e-3, eval_every: int = 50, **fit_kwargs: Any) -> History:
    """:func:`attnbook.train.fit`, then load the weights of the evaluation with the lowest ``monitor``.

    ``scores(model)`` returns ``{name: value}`` every ``eval_every`` steps
    (and after the last), ``monitor`` one of its names (a loss or bits: lower
    is better); whenever it improves, a copy of the weights is kept. The
    History holds every evaluation (``history.best(monitor, mode="min")`` is
    the one loaded). Other keyword arguments go to ``fit`` (``device``,
    ``schedule``, ``warmup_steps``, ``progress``, ``clock`` ...).
    """
    if not callable(scores):
        raise TypeError(f"scores must be callable as scores(model), got {type(scores).__name__}")
    best: dict[str, Any] = {"value": math.inf}

    def evaluate(m: nn.Module) -> Mapping[str, float]:
        record = scores(m)
        if monitor not in record:
            raise KeyError(f"monitor {monitor!r} is not among the scores {sorted(record)}")
        if record[monitor] < best["value"]:
            best.update(value=record[monitor], state={k: v.detach().clone() for k, v in m.state_dict().items()})
        return record

    history = fit(model, loss_fn, batches, steps=steps, lr=lr, eval_fn=evaluate, eval_every=eval_every,
                  **fit_kwargs)
    if "state" in best:  # absent only when no score was below infinity: the last weights stay
        model.load_state_dict(best["state"])
    return history
