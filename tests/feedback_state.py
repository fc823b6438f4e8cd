"""A grading state folder for tests of the feedback pages, made as ``attnbook-course grade`` makes one.

``write_feedback`` records one assignment (a graded cell ``test_answer`` of 1
point and a solution cell ``answer``) in a fresh SQLite gradebook, the given
students' scores, their autograded notebooks, and writes their pages with
``feedback_pages.write_pages``. Used by tests/test_hostile_pages.py and
tests/test_a11y.py (each with its own ``state`` folder).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import nbformat
import pytest


def write_feedback(state: Path, assignment: str, notebooks: dict[str, nbformat.NotebookNode], score: float):
    """Each student's autograded notebook in ``notebooks`` recorded at ``score`` and its page written: what
    ``feedback_pages.write_pages`` answers."""
    from nbgrader.api import Gradebook

    from attnbook_course import feedback_pages, recording
    from attnbook_course.nbgrader_run import Nbgrader

    with contextlib.ExitStack() as stack:
        mp = stack.enter_context(pytest.MonkeyPatch.context())
        mp.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))  # alembic
        mp.delenv("ATTNBOOK_GRADEBOOK", raising=False)
        nbgrader = Nbgrader(state)
        with Gradebook(nbgrader.db_url) as gb:
            gb.add_assignment(assignment)
            gb.add_notebook("exercises", assignment)
            gb.add_grade_cell("test_answer", "exercises", assignment, max_score=1.0, cell_type="code")
            gb.add_solution_cell("answer", "exercises", assignment)
        results = [{"student": s, "assignment": assignment, "parts": {"test_answer": {"score": score}}}
                   for s in notebooks]
        recording.record(nbgrader.db_url, results, state / "submitted")
        for student, nb in notebooks.items():
            (state / "autograded" / student / assignment).mkdir(parents=True)
            nbformat.write(nb, state / "autograded" / student / assignment / "exercises.ipynb")
        return feedback_pages.write_pages(nbgrader, [(s, assignment) for s in notebooks], [])
