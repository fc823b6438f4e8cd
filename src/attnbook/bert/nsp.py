"""Next-sentence prediction: pairs of lines, half of them consecutive, half not.

BERT's second pretraining task (Devlin et al. 2018,
https://arxiv.org/abs/1810.04805, section 3.1): given sentences A and B, tell
whether B is the sentence that follows A in the text ("is next") or a random
one. The classifier reads the pooled ``[CLS]`` vector; the segment ids tell the
model which tokens belong to A and which to B. RoBERTa (Liu et al. 2019,
https://arxiv.org/abs/1907.11692) found the task does not help and dropped it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import torch

__all__ = ["make_nsp_pairs"]

Line = TypeVar("Line")


def make_nsp_pairs(
    lines: Sequence[Line], generator: torch.Generator | None = None
) -> list[tuple[Line, Line, bool]]:
    """One ``(a, b, is_next)`` per consecutive pair ``(lines[i], lines[i+1])``, half of them replaced.

    Exactly half of the pairs (rounded down) keep ``b = lines[i+1]``
    (``is_next=True``); the others take ``b`` from a random position other
    than ``i + 1``, so a random ``b`` is never the true next line (unless the
    text repeats itself). Which pairs are replaced, and by what, is drawn with
    ``generator``.

    >>> g = torch.Generator().manual_seed(0)
    >>> pairs = make_nsp_pairs(["a", "b", "c", "d", "e"], generator=g)
    >>> [a for a, _, _ in pairs], sum(is_next for *_, is_next in pairs)
    (['a', 'b', 'c', 'd'], 2)
    >>> all((b == "abcde"["abcde".index(a) + 1]) == is_next for a, b, is_next in pairs)
    True
    """
    if isinstance(lines, (str, bytes)) or not isinstance(lines, Sequence):
        raise TypeError(f"lines must be a sequence of lines (a list), got {type(lines).__name__}")
    n = len(lines)
    if n < 2:
        raise ValueError(f"lines must hold at least 2 items to make a consecutive pair, got {n}")
    n_pairs = n - 1
    order = torch.randperm(n_pairs, generator=generator)  # which pairs stay consecutive
    is_next = torch.zeros(n_pairs, dtype=torch.bool)
    is_next[order[: n_pairs // 2]] = True
    # a random index in 0 .. n-2, shifted past i + 1: uniform over every index but the true next one
    draws = torch.randint(n - 1, (n_pairs,), generator=generator)
    pairs = []
    for i in range(n_pairs):
        if bool(is_next[i]):
            pairs.append((lines[i], lines[i + 1], True))
        else:
            j = int(draws[i])
            j = j + 1 if j >= i + 1 else j  # skip i + 1
            pairs.append((lines[i], lines[j], False))
    return pairs
