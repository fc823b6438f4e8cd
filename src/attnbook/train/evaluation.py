"""Scoring a model outside the loop: a batch-weighted mean metric, and classification accuracy."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from .batches import _batch_size, _reject_single_batch, to_device

__all__ = ["evaluate", "accuracy"]


def evaluate(
    model: torch.nn.Module,
    metric_fn: Callable[[torch.nn.Module, Any], torch.Tensor | float],
    batches: Iterable[Any],
    *,
    device: torch.device | str | None = None,
) -> float:
    """Mean of ``metric_fn(model, batch)`` over ``batches``, weighted by batch size.

    Runs in eval mode without gradients on ``device`` (default: where the
    model's parameters are), then restores the model's mode. Handy inside an
    ``eval_fn``: ``lambda m: {"val_loss": evaluate(m, loss_fn, val_batches)}``.

    >>> model = torch.nn.Identity()
    >>> batches = [torch.ones(3), torch.zeros(1)]  # batch means 1.0 and 0.0
    >>> evaluate(model, lambda m, b: m(b).mean(), batches)  # (3 * 1.0 + 1 * 0.0) / 4
    0.75
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    _reject_single_batch("batches", batches)
    if not isinstance(batches, Iterable):
        raise TypeError(f"batches must be an iterable of batches, got {type(batches).__name__}")
    if device is None:
        param = next(model.parameters(), None)
        device = param.device if param is not None else torch.device("cpu")
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    try:
        with torch.no_grad():
            for batch in batches:
                batch = to_device(batch, device)
                value = metric_fn(model, batch)
                if isinstance(value, torch.Tensor):
                    if value.numel() != 1:
                        raise ValueError(f"metric_fn must return a scalar, got shape {tuple(value.shape)}")
                    value = value.item()
                n = max(1, _batch_size(batch))
                total += float(value) * n
                count += n
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError("batches is empty: there is nothing to evaluate")
    return total / count


def accuracy(logits: torch.Tensor, targets: torch.Tensor, *, ignore_index: int | None = None) -> float:
    """Fraction of positions where ``logits.argmax(-1)`` equals ``targets``.

    ``logits`` is (..., C) and ``targets`` is (...) class ids; positions whose
    target is ``ignore_index`` (e.g. padding, or unmasked tokens in BERT) are skipped.

    >>> logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [3.0, 1.0]])
    >>> accuracy(logits, torch.tensor([0, 1, 1]))
    0.6666666666666666
    >>> accuracy(logits, torch.tensor([0, 1, -100]), ignore_index=-100)
    1.0
    """
    if not isinstance(logits, torch.Tensor) or not isinstance(targets, torch.Tensor):
        raise TypeError("logits and targets must be torch.Tensors")
    if targets.is_floating_point() or targets.dtype == torch.bool:
        raise TypeError(f"targets must be integer class ids, got dtype {targets.dtype}")
    if logits.dim() < 1 or logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"logits must have shape (..., C) and targets (...), got logits {tuple(logits.shape)} "
            f"and targets {tuple(targets.shape)}"
        )
    keep = torch.ones_like(targets, dtype=torch.bool) if ignore_index is None else targets != ignore_index
    n = int(keep.sum())
    if n == 0:
        raise ValueError("no targets left to score (empty, or all equal to ignore_index)")
    correct = (logits.argmax(dim=-1) == targets) & keep
    return int(correct.sum()) / n
