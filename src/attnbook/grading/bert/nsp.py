"""Part 4: ``make_nsp_pairs(lines, generator) -> [(a, b, is_next), ...]``, one pair per consecutive
``(lines[i], lines[i + 1])``, half of them with ``b`` replaced by a random other line.

Exact rules: ``a`` runs through ``lines[:-1]`` in order, ``is_next`` says
whether ``b`` is ``lines[i + 1]``, and a random ``b`` is never the true next
line (the lines of a case are all different). The balance is checked against
a fair coin (6 standard deviations, over 800 pairs in the visible case: a coin of 0.7 fails there; an exact
half passes too), and random
``b`` must come from all over the text, not from a fixed neighbour; a
``"uniform"`` case (one of them visible) calls it ``DRAWS`` times on a short
text and counts each pair's random lines, which must be uniform over every
line but ``lines[i + 1]``: ``lines[i]`` itself may be drawn, as in
:func:`attnbook.bert.nsp.make_nsp_pairs`.

>>> lines, seed, mode = check_nsp_pairs.visible[0].make()
>>> len(lines), lines[0]
(801, 'line 0: to be')
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot

Z = 6.0
DRAWS = 400  # calls of a "uniform" case, each with its own seed
WORDS = ("to be", "or not", "that is", "the question", "whether", "tis nobler")


def _case(n: int, seed: int, mode: str = "") -> Callable[[], tuple]:
    return lambda: ([f"line {i}: {WORDS[i % len(WORDS)]}" for i in range(n)], seed, mode)


def _pairs(fn: Callable, lines: list[str], seed: int) -> list[tuple]:
    before = snapshot(lines)
    result = run_student(fn, list(lines), torch.Generator().manual_seed(seed), what="make_nsp_pairs")
    require_unchanged(before, lines, message="make_nsp_pairs changed lines in place")
    if not isinstance(result, list) or not all(isinstance(p, tuple) and len(p) == 3 for p in result):
        raise CheckFailed("make_nsp_pairs should return a list of tuples (a, b, is_next)")
    return result


def _check_pairs(lines: list[str], pairs: list[tuple]) -> list[int]:
    """The exact rules; returns the offsets j - i of the random b's (b = lines[j])."""
    if len(pairs) != len(lines) - 1:
        raise CheckFailed(f"there should be one pair per consecutive (lines[i], lines[i + 1]): {len(lines) - 1} "
                          f"pairs for {len(lines)} lines, got {len(pairs)}")
    if [a for a, _, _ in pairs] != lines[:-1]:
        raise CheckFailed("sentence a of pair i should be lines[i], in order: a is never replaced, only b")
    index = {line: j for j, line in enumerate(lines)}
    offsets = []
    for i, (_, b, is_next) in enumerate(pairs):
        if not isinstance(is_next, bool):
            raise CheckFailed(f"is_next should be a bool (True when b follows a), got {type(is_next).__name__}")
        if b not in index:
            raise CheckFailed("sentence b should be one of the lines")
        if is_next != (b == lines[i + 1]):
            if is_next:
                raise CheckFailed("a pair marked is_next=True has a b that is not the line after a")
            raise CheckFailed("a random b was the true next line: draw the random sentence from every line but "
                              "lines[i + 1]")
        if not is_next:
            offsets.append(index[b] - i)
    return offsets


def _check_uniform(fn: Callable, lines: list[str], seed: int) -> None:
    """Over ``DRAWS`` calls (seeds ``seed``, ``seed + 1``, ...) on a short text, the random ``b`` of each pair ``i``
    must follow the exact rules every time and come up as often as each of the other ``n - 1`` lines."""
    n = len(lines)
    counts = torch.zeros(n - 1, n)  # [i, j]: how often pair i took lines[j] at random
    for r in range(1, DRAWS):
        pairs = _pairs(fn, lines, seed + r)
        for i, offset in zip([i for i, p in enumerate(pairs) if not p[2]], _check_pairs(lines, pairs), strict=True):
            counts[i, i + offset] += 1
    for i in range(n - 1):
        drawn, q = float(counts[i].sum()), 1.0 / (n - 1)
        spread = Z * (drawn * q * (1 - q)) ** 0.5 + 2
        if bool(((counts[i] - drawn * q).abs() > spread)[torch.arange(n) != i + 1].any()):
            raise CheckFailed("the random sentence b is not drawn uniformly from every line but lines[i + 1]: "
                              "each of them, lines[i] included, should come up equally often")


def _check(fn: Callable) -> Callable:
    def check_one(lines, seed, mode):
        pairs = _pairs(fn, lines, seed)
        offsets = _check_pairs(lines, pairs)
        n = len(pairs)
        n_next = n - len(offsets)
        if not abs(n_next - n / 2) <= Z * (n / 4) ** 0.5 + 1:
            raise CheckFailed(f"{n_next} of {n} pairs are consecutive: half of the pairs should keep the true next "
                              "line and half take a random one")
        if len(offsets) >= 20 and len(set(offsets)) <= 3:
            raise CheckFailed("the random sentence is always taken at the same distance from a: draw it at random "
                              "from the whole text")
        if mode == "uniform":
            _check_uniform(fn, lines, seed)
        if mode == "repeat":
            if _pairs(fn, lines, seed) != pairs:
                raise CheckFailed("two calls with generators seeded alike gave different pairs: draw with the "
                                  "generator (torch.rand/torch.randint(..., generator=generator))")
            if _pairs(fn, lines, seed + 1) == pairs:
                raise CheckFailed("the pairs do not depend on the generator: draw with it, and do not reseed")

    return check_one


check_nsp_pairs = Part(
    name="check_nsp_pairs",
    visible=(
        Case("800 pairs: half of them consecutive", _case(801, 1)),
        Case("the random line is uniform over every line but the next", _case(5, 7, "uniform")),
        Case("a seeded generator repeats the pairs", _case(40, 2, "repeat")),
    ),
    check=_check,
    forbidden=("attnbook.bert.nsp.make_nsp_pairs",),
)
