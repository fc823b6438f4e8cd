"""The check engine: a graded part is a :class:`Part`, its inputs are :class:`Case` s, one pipeline scores them.

A chapter describes each graded part of its notebook in a short module::

    check_masks = Part(               # the name the notebook's test cell calls
        name="check_masks",
        visible=(Case("causal, T = 4", _causal(4)),),
        check=_check,                 # _check(causal_fn, padding_fn) -> check_one(*case args)
        forbidden=("attnbook.attention.causal_mask", ...),
        kernels=(),                   # aten operators refused while the student's code runs
    )

and its hidden cases in the instructor's ``autograder/hidden/<chapter>.py``
(``HIDDEN["check_masks"] = (Case("padding id 7", masks._padding_case(...)), ...)``),
which :mod:`.hidden_cases` reads at grading time: the student's package holds
no hidden case. Called in a notebook, ``check_masks(causal_mask, padding_mask)``
runs the visible cases, each under a time limit (:func:`._core.time_limit`),
and raises :class:`CheckFailed` at the first failure;
``check_masks(..., points=2)`` runs every case and returns the points earned
(partial credit by the cases' weights), raising when nothing passed; without
the instructor's files it grades the visible cases and says so. The same
object is what the judge runs on proxies of the worker's objects; ``forbidden``
and ``kernels`` are refused (:mod:`._refuse`) in the worker, and in the
student's kernel while the student's code runs. A ``check_one`` compares outputs with the reference and names
known mistakes with :func:`first_match`; a part whose test cell passes two
functions dispatches with :func:`by_kind`. The steps that parts share
(snapshots, result shapes, a whole scalar-loss check) live in :mod:`.steps`;
:func:`._core.build_loaded` builds the student's module beside the reference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from . import hidden_cases
from ._compare import close, verify_toolkit
from ._core import REFUSED, _is_proxy, time_limit, visible_seconds
from .errors import CheckFailed


@dataclass(frozen=True)
class Case:
    """One input the checker tries: a concept for grouping, a seeded maker of the arguments, a weight."""

    group: str  # a concept, e.g. "masks"; a failing group is reported once
    make: Callable[[], tuple]  # returns the arguments of the case (seeded: the same every time)
    weight: float = 1.0


@dataclass(frozen=True)
class Mistake:
    """A known wrong answer: what to tell the student, and how to compute it from the reference's pieces."""

    message: str
    compute: Callable[..., torch.Tensor]  # the wrong output, from the same arguments as the case


def first_match(got: Any, variants: Iterable[tuple[str, Any]], fallback: str,
                dtype: torch.dtype | None = None, *, matches: Callable[[Any, Any], bool] | None = None
                ) -> CheckFailed:
    """The failure for a wrong ``got``: the message of the first variant it matches, else ``fallback``.

    A variant is ``(message, output)``, the output a tensor, ``None`` (does
    not apply) or a function computing it (skipped when it does not run on
    these shapes). Tensors match within the tolerance of ``dtype``, else of
    the variant's dtype; ``matches(got, output)`` replaces that test.

    >>> str(first_match(torch.ones(2), [("doubled", lambda: torch.full((2,), 2.0)),
    ...                                 ("ones", torch.ones(2))], "differs"))
    'ones'
    """
    with torch.no_grad():
        for message, variant in variants:
            if callable(variant):
                try:
                    variant = variant()
                except (RuntimeError, ValueError):
                    continue
            if variant is None:
                continue
            if matches(got, variant) if matches else close(got.detach().double(), variant.double(),
                                                           dtype or variant.dtype):
                return CheckFailed(message)
    return CheckFailed(fallback)


def diagnose(got: torch.Tensor, mistakes: Iterable[Mistake], args: Sequence, fallback: str,
             dtype: torch.dtype = torch.float32) -> CheckFailed:
    """The failure to raise for a wrong output: the first mistake it matches, else ``fallback``."""
    return first_match(got, ((m.message, lambda m=m: m.compute(*args)) for m in mistakes), fallback, dtype)


def by_kind(**checks: Callable[..., None]) -> Callable[..., Callable[..., None]]:
    """The ``check`` of a part whose test cell passes several functions, each with cases of its own.

    ``by_kind(encode=_check_encode, decode=_check_decode)`` is called with the
    student's ``(encode, decode)``; a case ``("decode", *args)`` then runs
    ``_check_decode(decode, *args)``.
    """
    def check(*functions: Callable) -> Callable[..., None]:
        students = dict(zip(checks, functions, strict=True))

        def check_one(kind: str, *args: object) -> None:
            checks[kind](students[kind], *args)

        return check_one

    check.__module__ = next(iter(checks.values())).__module__  # the part's module: where its hidden cases are
    return check


@dataclass(frozen=True)
class Part:
    """One graded part: its cases, how one case is checked, and what is out of the student's reach."""

    name: str  # the public check name that the test cell calls
    visible: tuple[Case, ...]  # the cases a student's visible check runs
    check: Callable[..., Callable[..., None]]  # check(*students) -> check_one(*case arguments)
    forbidden: tuple[str, ...] = ()  # attnbook and torch names the student's code may not reach
    kernels: tuple[str, ...] = ()  # aten operators refused too (torch's own fused kernels)
    # Names refused only while the student's functions run, not in the notebook's cells: a model the provided
    # cells build, which a count "by reasoning" may not build (on the meta device or anywhere) and measure.
    refused_in_calls: tuple[str, ...] = ()
    own_hidden: tuple[Case, ...] | None = None  # hidden cases given here (a test's part); None: the instructor's

    @property
    def __name__(self) -> str:  # test cells import the part under this name
        return self.name

    @property
    def hidden(self) -> tuple[Case, ...]:
        """The cases added when grading: ``own_hidden``, else the instructor's (:func:`.hidden_cases.find`)."""
        cases = self.own_hidden if self.own_hidden is not None else hidden_cases.find(self)
        if cases is None:
            raise LookupError(f"the hidden cases of {self.name} are the instructor's and are not installed here")
        return cases

    def __call__(self, *students: object, points: float | None = None) -> float | None:
        token = REFUSED.set((self.forbidden + self.refused_in_calls, self.kernels))
        try:
            cases = self.visible
            if points is not None:
                hidden = self.own_hidden if self.own_hidden is not None else hidden_cases.find(self)
                if hidden is None and not _TOLD:
                    _TOLD.append(True)
                    print("Graded on the visible cases only: the hidden cases are the instructor's, not here.")
                cases += hidden or ()
            timed = points is None and not any(map(_is_proxy, students))  # the judge's worker has its own limits
            return score_cases(cases, self.check(*students), points, timed=self.name if timed else None)
        finally:
            REFUSED.reset(token)


_TOLD: list[bool] = []  # whether a student's kernel was told that the hidden cases are not here (once)


def score_cases(cases: Iterable[Case], check_one: Callable[..., None], points: float | None,
                timed: str | None = None) -> float | None:
    """Run ``check_one(*case.make())`` on every case and turn the results into a grade.

    ``points=None`` (the visible check): stop at the first failure and raise
    it; return ``None`` when everything passes; ``timed``, the part's name,
    runs each of those cases under :func:`._core.time_limit`, so that a loop
    that never ends fails the check. With ``points`` (the hidden test): run
    every case, report each failing group once, and return the
    points earned, ``points`` times the passed share of the weights, so that
    nbgrader gives partial credit. A score of zero raises instead of returning
    0, so a check never fails silently.
    """
    verify_toolkit()
    cases = list(cases)
    if not cases:
        raise ValueError("no cases to check")
    if points is None:
        for case in cases:
            with time_limit(visible_seconds() if timed else None, timed or "", case.group):
                check_one(*case.make())
        print("The visible check passed." if len(cases) == 1 else f"All {len(cases)} visible checks passed.")
        return None
    earned, total = 0.0, 0.0
    failures: dict[str, str] = {}  # group -> its first failure
    for case in cases:
        total += case.weight
        try:
            check_one(*case.make())
            earned += case.weight
        except CheckFailed as err:
            failures.setdefault(case.group, str(err))
    if not failures:
        print("The check passed." if len(cases) == 1 else f"All {len(cases)} checks passed.")
        return float(points)
    report = "\n".join(f"- {group}: {msg}" for group, msg in failures.items())
    if earned == 0:
        raise CheckFailed(f"no check passed:\n{report}")
    print(f"Some checks failed:\n{report}")
    return round(points * earned / total, 2)
