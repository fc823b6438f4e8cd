"""Train / validation / test splits with a fixed seed.

:func:`split` cuts one or more aligned collections (lists, strings, NumPy
arrays, tensors) into a :class:`Split`. Shuffled splits use a seeded
permutation, so the same seed gives the same split on every machine; with
``shuffle=False`` the parts are contiguous blocks, which is what a language
model's text wants (no sentence leaks across the cut).

Sizes: ``n_val = floor(n * fractions[1])``, ``n_test = floor(n * fractions[2])``
and the training part takes the rest, so the parts are disjoint and cover
every item exactly once.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
import torch

from attnbook._checks import an_int, int_at_least

T = TypeVar("T")


@dataclass(frozen=True)
class Split(Generic[T]):
    """The three parts of a data set; unpacks as ``train, val, test``.

    >>> train, val, test = Split([1, 2], [3], [])
    >>> train, val, test
    ([1, 2], [3], [])
    """

    train: T
    val: T
    test: T

    def __iter__(self) -> Iterator[T]:
        return iter((self.train, self.val, self.test))


def split_sizes(n: int, fractions: Sequence[float] = (0.8, 0.1, 0.1)) -> tuple[int, int, int]:
    """Sizes (train, val, test) of a split of ``n`` items; they add up to ``n``.

    >>> split_sizes(10, (0.8, 0.1, 0.1))
    (8, 1, 1)
    >>> split_sizes(7, (0.5, 0.25, 0.25))
    (5, 1, 1)
    """
    int_at_least("n", n, 0)
    fractions = tuple(fractions)
    if len(fractions) != 3:
        raise ValueError(f"fractions must be 3 numbers (train, val, test), got {len(fractions)}: {fractions!r}")
    if any(not isinstance(f, (int, float)) or isinstance(f, bool) or f < 0 for f in fractions):
        raise ValueError(f"fractions must be non-negative numbers, got {fractions!r}")
    if not math.isclose(sum(fractions), 1.0, abs_tol=1e-9):
        raise ValueError(f"fractions must sum to 1, got {fractions!r} (sum {sum(fractions)})")
    n_val, n_test = math.floor(n * fractions[1]), math.floor(n * fractions[2])
    return n - n_val - n_test, n_val, n_test


def split_indices(
    n: int, fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0, shuffle: bool = True
) -> Split[list[int]]:
    """Indices 0..n-1 cut into train/val/test; shuffled with ``seed`` unless ``shuffle=False``.

    >>> split_indices(5, (0.6, 0.2, 0.2), shuffle=False)
    Split(train=[0, 1, 2], val=[3], test=[4])
    """
    an_int("seed", seed)
    n_train, n_val, _ = split_sizes(n, fractions)
    order = list(range(n))
    if shuffle:
        random.Random(seed).shuffle(order)
    return Split(order[:n_train], order[n_train : n_train + n_val], order[n_train + n_val :])


def _length(data: Any) -> int:
    if isinstance(data, (torch.Tensor, np.ndarray)):
        return int(data.shape[0])
    try:
        return len(data)
    except TypeError:
        kind = type(data).__name__
        raise TypeError(f"split needs sized collections (list, str, array, tensor), got {kind}") from None


def _take(data: Any, idx: list[int], contiguous: bool) -> Any:
    if contiguous:  # a slice keeps the type (str stays str) and shares memory
        return data[idx[0] : idx[-1] + 1] if idx else data[:0]
    if isinstance(data, torch.Tensor):
        return data[torch.tensor(idx, dtype=torch.long, device=data.device)]
    if isinstance(data, np.ndarray):
        return data[np.asarray(idx, dtype=np.int64)]
    if isinstance(data, str):
        raise TypeError("a str can only be split with shuffle=False (contiguous parts)")
    return [data[i] for i in idx]


def split(*data: Any, fractions: Sequence[float] = (0.8, 0.1, 0.1), seed: int = 0, shuffle: bool = True) -> Split:
    """Split aligned collections into train/val/test with a fixed seed.

    With one collection each part is that collection's subset (a list for a
    list, a tensor for a tensor, a str for a str when ``shuffle=False``); with
    several, each part is a tuple of aligned subsets, e.g.
    ``(train_x, train_y), (val_x, val_y), (test_x, test_y) = split(x, y)``.

    >>> split(list("abcdefghij"), seed=0)
    Split(train=['h', 'i', 'b', 'f', 'd', 'e', 'c', 'a'], val=['j'], test=['g'])
    >>> split("abcdefghij", fractions=(0.8, 0.2, 0.0), shuffle=False)
    Split(train='abcdefgh', val='ij', test='')
    """
    if not data:
        raise TypeError("split needs at least one collection to split")
    lengths = [_length(d) for d in data]
    if len(set(lengths)) != 1:
        raise ValueError(f"collections to split must have the same length, got lengths {lengths}")
    parts = split_indices(lengths[0], fractions, seed, shuffle)
    cut = [tuple(_take(d, idx, not shuffle) for d in data) for idx in parts]
    if len(data) == 1:
        return Split(cut[0][0], cut[1][0], cut[2][0])
    return Split(*cut)
