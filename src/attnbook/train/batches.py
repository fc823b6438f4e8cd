"""Batches for :func:`~attnbook.train.fit`: moving them to a device, and reading them one step at a time."""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

__all__ = ["to_device"]


def to_device(batch: Any, device: torch.device | str) -> Any:
    """Move every tensor in a (nested) batch to ``device``; anything else passes through.

    Tuples (named ones included), lists and dicts are rebuilt with the same structure.

    >>> b = to_device({"x": torch.ones(2), "ids": [torch.zeros(1), 3]}, "cpu")
    >>> b["x"].device, b["ids"][1]
    (device(type='cpu'), 3)
    """
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, Mapping):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a namedtuple
        return type(batch)(*(to_device(value, device) for value in batch))
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(value, device) for value in batch)
    return batch


def _batch_size(batch: Any) -> int:
    """Examples in a batch: the first dimension of the first tensor found (0 if none)."""
    if isinstance(batch, torch.Tensor):
        return batch.shape[0] if batch.dim() > 0 else 1
    if isinstance(batch, Mapping):
        batch = list(batch.values())
    if isinstance(batch, (tuple, list)):
        for value in batch:
            n = _batch_size(value)
            if n:
                return n
    return 0


def _reject_single_batch(name: str, batches: Any) -> None:
    """Catch the easy slip of passing one batch where an iterable of batches is expected."""
    looks_like_one_batch = isinstance(batches, (torch.Tensor, Mapping)) or (
        isinstance(batches, tuple) and batches and all(isinstance(b, torch.Tensor) for b in batches)
    )
    if looks_like_one_batch:
        raise TypeError(
            f"{name} looks like a single batch ({type(batches).__name__}), but it must be an "
            "iterable of batches or a callable returning one; to reuse one batch every step pass "
            f"[batch] or lambda: batch"
        )


def _batch_source(train_batches: Any) -> Callable[[int], Any]:
    """Turn ``train_batches`` into ``next_batch(step)``; re-iterables restart when exhausted."""
    _reject_single_batch("train_batches", train_batches)
    if callable(train_batches):

        def call(step: int) -> Any:
            batch = train_batches()
            if isinstance(batch, types.GeneratorType):
                raise TypeError(
                    "train_batches() returned a generator, not a batch; pass the generator "
                    "itself (train_batches=gen()) or a function that returns one batch"
                )
            return batch

        return call
    if not isinstance(train_batches, Iterable):
        raise TypeError(
            "train_batches must be an iterable of batches (list, DataLoader, generator) or a "
            f"callable returning a batch, got {type(train_batches).__name__}"
        )
    one_shot = iter(train_batches) is train_batches  # a generator or iterator cannot restart
    iterator = iter(train_batches)

    def next_batch(step: int) -> Any:
        nonlocal iterator
        try:
            return next(iterator)
        except StopIteration:
            if one_shot:
                raise ValueError(
                    f"train_batches ran out before step {step}: it is an iterator that cannot "
                    "restart; pass a list, a DataLoader or a callable, or lower steps"
                ) from None
        iterator = iter(train_batches)  # start the next epoch
        try:
            return next(iterator)
        except StopIteration:
            raise ValueError("train_batches is empty: it yielded no batch") from None

    return next_batch
