"""The two ideas every BPE trainer is built from: count adjacent pairs, merge one.

These are the teaching helpers: short, readable and exactly what the
reference trainer (:func:`attnbook.tokenizers.train_bpe_reference`) calls.
The fast trainer keeps the same counts incrementally instead of calling them
again after every merge.

Counting and merging agree on one subtle point, a run of equal tokens such as
``aaa``: :func:`get_stats` counts *every* adjacent pair, overlapping ones
included (``aaa`` holds the pair ``(a, a)`` twice), while :func:`merge`
replaces occurrences from left to right without overlap (``aaa`` becomes
``Za``, not ``ZZ`` or ``aZ``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

__all__ = ["get_stats", "merge"]

Pair = tuple[int, int]
T = TypeVar("T")  # an id: an int for BPE, a string unit for WordPiece


def get_stats(ids: Sequence[int], counts: dict[Pair, int] | None = None) -> dict[Pair, int]:
    """Count how often each adjacent pair of ids occurs in ``ids``.

    Pass ``counts`` to add to an existing dictionary (it is updated in place
    and returned), which is how counts over many chunks are summed.

    >>> get_stats([1, 2, 3, 1, 2])
    {(1, 2): 2, (2, 3): 1, (3, 1): 1}

    Overlapping pairs count once per position: ``aaa`` holds ``(a, a)`` twice.

    >>> get_stats([97, 97, 97])
    {(97, 97): 2}
    >>> totals = get_stats([1, 2])
    >>> get_stats([1, 2, 3], totals)
    {(1, 2): 2, (2, 3): 1}
    """
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:], strict=False):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids: Sequence[T], pair: tuple[T, T], idx: T) -> list[T]:
    """Replace every occurrence of ``pair`` in ``ids`` with the new id ``idx``.

    Occurrences are taken from left to right and never overlap, so the result
    does not depend on anything but the input. The ids may be of any kind that
    compares with ``==``: WordPiece merges its string units with it.

    >>> merge([1, 2, 3, 1, 2], (1, 2), 4)
    [4, 3, 4]

    In ``aaa`` the first two ``a`` merge and the third is left alone:

    >>> merge([97, 97, 97], (97, 97), 256)
    [256, 97]
    >>> merge([97, 97, 97, 97], (97, 97), 256)
    [256, 256]
    """
    first, second = pair
    out: list[T] = []
    i, n = 0, len(ids)
    while i < n:
        if ids[i] == first and i + 1 < n and ids[i + 1] == second:
            out.append(idx)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out
