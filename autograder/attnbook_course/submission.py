"""A submission and its assignment's notebooks: reading them safely, and what the judge runs.

A submission's notebook is the student's to break: :func:`read_submission`
reports a missing, oversized or malformed one instead of failing, and
:func:`nbgrader_meta` reads metadata of the wrong types as none. :func:`plan`
puts the student's answers into the source notebook's cells.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import TYPE_CHECKING

from . import earlier, review, testcells
from .nbgrader_run import CHAPTERS, MAX_NOTEBOOK, NOTEBOOK, ROOT, SOLUTIONS
from .notes import Note
from .plan import Cell, Plan, Step, Test

if TYPE_CHECKING:
    from nbformat import NotebookNode

CELL_TYPES = ("code", "markdown", "raw")
CELL_ID = re.compile(r"[a-zA-Z0-9-_]{1,64}")  # nbformat's pattern for a cell's id


def nbgrader_meta(cell: object) -> dict:
    """A cell's nbgrader metadata when it has the types nbgrader gives it, else ``{}`` (a submission's
    metadata is the student's to break: a list, a number or a grade_id that is not a string reads as none).

    >>> nbgrader_meta({"metadata": {"nbgrader": {"grade_id": "a", "points": 2}}})
    {'grade_id': 'a', 'points': 2}
    >>> nbgrader_meta({"metadata": {"nbgrader": ["grade_id"]}})
    {}
    >>> nbgrader_meta({"metadata": {"nbgrader": {"grade_id": [1]}}})
    {}
    """
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return meta if isinstance(meta, dict) and isinstance(meta.get("grade_id"), (str, type(None))) else {}


def grade_id(cell: object) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def test_cells(nb: NotebookNode) -> dict[str, NotebookNode]:
    """The graded cells of ``nb`` by grade id, in notebook order."""
    return {gid: c for c in nb.cells if nbgrader_meta(c).get("grade") and (gid := grade_id(c))}


def flags(nb: NotebookNode) -> list[str]:
    """What deserves a human look in the code cells the student could edit (``review.py``; never penalised)."""
    return review.flags([c.source for c in nb.cells  # the cells plan() takes from the submission
                         if c.cell_type == "code" and (nbgrader_meta(c).get("solution") or not grade_id(c))])


def planned(steps: list[Step], notes: list[Note] | None = None) -> Plan:
    """The :class:`.plan.Plan` of ``steps``: its parts numbered and their reach, each test cell parsed once.

    >>> test = "from attnbook.grading.transformer import check_masks\\ncheck_masks(causal_mask, padding_mask)"
    >>> made = planned([Cell("x = 1"), Test("masks", test, 2.0)])
    >>> [(p.number, sorted(p.names)) for p in made.parts], [c.check.name for c in made.calls["masks"]]
    ([(1, ['causal_mask', 'padding_mask'])], ['check_masks'])
    """
    tests = [s for s in steps if isinstance(s, Test)]
    return Plan(tuple(steps), tuple(earlier.parts(steps, testcells.checked_names)),
                {t.grade_id: testcells.parse_test_cell(t.source) for t in tests}, tuple(notes or ()))


def plan(source: NotebookNode, released: NotebookNode, submitted: NotebookNode) -> Plan:
    """What the judge runs, in order (:mod:`attnbook_course.plan`): the source's cells with the student's
    answers in them.

    Answer cells come from the submission (the released stub if it lost one)
    with the source's answer beside them, locked cells and test cells from the
    source, and the cells the student added after the labelled cell they follow.
    Its notes say where a test cell was edited or deleted.
    """
    theirs = {grade_id(c): c for c in submitted.cells if grade_id(c)}
    stubs = {grade_id(c): c for c in released.cells if grade_id(c)}
    added: dict[str | None, list[str]] = {}
    previous = None
    for cell in submitted.cells:
        if grade_id(cell):
            previous = grade_id(cell)
        elif cell.cell_type == "code":
            added.setdefault(previous, []).append(cell.source)
    steps: list[Step] = [Cell(s, own=True) for s in added.get(None, [])]
    notes: list[Note] = []
    for cell in source.cells:
        gid, meta = grade_id(cell), nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("grade") and gid:
            if gid not in theirs or theirs[gid].source != stubs[gid].source:
                notes.append(Note("test_cell_edited", gid))
            steps.append(Test(gid, cell.source, float(meta["points"])))
        elif cell.cell_type == "code" and meta.get("solution"):
            steps.append(Cell((theirs.get(gid) or stubs[gid]).source, own=True, solution=cell.source))
        elif cell.cell_type == "code":
            steps.append(Cell(cell.source))
        steps += [Cell(s, own=True) for s in added.get(gid, [])] if gid else []
    return planned(steps, notes)


def read_submission(path: Path) -> tuple[NotebookNode | None, Note | None]:
    """(notebook or None, why not): a missing, unreadable or malformed notebook is reported, never fatal."""
    import nbformat  # here: it takes seconds to import, and the CLI's other commands need it not

    if not path.exists():
        return None, Note("missing", "")
    if path.stat().st_size > MAX_NOTEBOOK:
        size = f"{path.stat().st_size / 2**20:.0f} MiB"
        return None, Note("not_graded", f"notebook of {size} (at most {MAX_NOTEBOOK >> 20})")
    try:
        nb = nbformat.reads(path.read_text(errors="replace"), as_version=4)
    except Exception:  # any malformed file
        return None, Note("not_graded", "notebook is not valid JSON")
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not all(
            isinstance(c, dict) and isinstance(c.get("source"), str) and c.get("cell_type") in CELL_TYPES
            for c in cells):
        return None, Note("not_graded", "the notebook's cells are malformed")
    return nb, None


@functools.cache
def _read(folder: Path, assignment: str) -> NotebookNode:
    """The notebook of ``assignment`` in ``folder``, read once per process (callers never change it)."""
    import nbformat

    return nbformat.read(folder / assignment / NOTEBOOK, as_version=4)


def source(assignment: str) -> NotebookNode:
    """The assignment's source notebook (``solutions/``), with the hidden tests."""
    return _read(SOLUTIONS, assignment)


def released(assignment: str) -> NotebookNode:
    """The assignment's student notebook (``chapters/``)."""
    return _read(CHAPTERS, assignment)


def hidden(state: Path) -> list[Path]:
    """Folders the sandbox hides: the course, the grading state, attnbook's source, nbgrader's exchange."""
    import attnbook

    return [ROOT, state.resolve(), Path(attnbook.__file__).resolve().parent, Path("/srv/nbgrader")]
