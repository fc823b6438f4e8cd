"""A submission's *plan*: the steps the judge runs, in order, each a :class:`Cell` or a :class:`Test`, and
every fact about them that the route needs, worked out once (:class:`Plan`).

``autograder/attnbook_course/submission.py``'s ``plan`` makes it from the source notebook and the
student's; :func:`.judge.grade_cells` runs it, :mod:`.earlier` reads it to grade
each part on its own, and ``tests/exercise_harness.py`` runs it in-process.
Nothing after the plan parses a test cell or reads a notebook again.

>>> plan = [Cell("import torch"), Cell("def f(x):\\n    return x", own=True, solution="def f(x):\\n    return x + 1"),
...         Test("f_ok", "check_f(f)", 2.0)]
>>> [step.grade_id for step in plan if isinstance(step, Test)], [step.own for step in plan if isinstance(step, Cell)]
(['f_ok'], [False, True])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .earlier import Graded
    from .notes import Note
    from .testcells import TestCall


@dataclass(frozen=True)
class Cell:
    """A code cell: a locked one of the source notebook, or the student's own (``own``): their answer in an
    answer cell, whose source-notebook answer is ``solution``, or a cell they added (``solution`` None)."""

    source: str
    own: bool = False
    solution: str | None = None


@dataclass(frozen=True)
class Test:
    """A graded test cell as the source notebook has it (its hidden tests too): its grade id and points."""

    __test__ = False  # a step of the plan, not a class of tests for pytest to collect

    grade_id: str
    source: str
    points: float


Step = Cell | Test


@dataclass(frozen=True)
class Plan:
    """One submission's plan: its ``steps``; its ``parts`` (each test step's number and reach, :mod:`.earlier`);
    each test cell's parsed ``calls`` by grade id; and the ``notes`` planning made (an edited test cell)."""

    steps: tuple[Step, ...]
    parts: tuple[Graded, ...]
    calls: Mapping[str, tuple[TestCall, ...]]
    notes: tuple[Note, ...] = ()
