"""Running a trusted notebook's cells in this process, for the graders that need no sandbox.

The solutions, the catalogue's answers (``tests/exercise_harness.py``) and the
mutants of a solution (``autograder/attnbook_course/mutants.py``) are the course's own code: they
run here, cell by cell, and each test cell is scored by
:func:`attnbook_course.judge.score_test_cell`, as the judge scores it (the
visible check, then the hidden one).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """Printed output and warnings dropped: they are no test cell's business."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def run_cell(source: str, namespace: dict, name: str = "cell") -> None:
    """Execute a cell's code in ``namespace``, :func:`quietly`.

    >>> namespace = {}
    >>> run_cell("x = 1 + 1\\nprint(x)", namespace); namespace["x"]
    2
    """
    with quietly():
        exec(compile(source, f"<{name}>", "exec"), namespace)
