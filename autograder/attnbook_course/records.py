"""What grading one submission produces: JSON, from the judge process to the gradebook and the feedback.

A judge process returns a :class:`SubmissionRecord` (``judging.py``:
``grade_one``), one :class:`PartRecord` per graded cell (a
:class:`.judge.Result` as JSON) and its notes as data (:mod:`.notes`, never
prose); ``late.py`` adds its :class:`Lateness`; ``results/<student>/<assignment>.json`` keeps it, and the
gradebook (``recording.py``), the feedback (``feedback_notebook.py``),
``grades.csv`` (``classgrade.py``), the cache of earlier grades
(``gradecache.py``), the shards (``shards.py``) and the report read it.

>>> record: SubmissionRecord = {"student": "ada", "assignment": "01-rnn-attention", "notes": [],
...     "parts": {"luong_scores": {"score": 1.5, "max_score": 2.0, "message": "one case of four failed"}}}
>>> sum(part["score"] for part in record["parts"].values()), "late" in record
(1.5, False)
"""

from __future__ import annotations

from typing import TypedDict

from .notes import NoteRecord


class _Hidden(TypedDict, total=False):
    hidden: bool  # True: the visible checks passed and the hidden cases took the points (judge.Result)


class PartRecord(_Hidden):
    """One graded cell: the points earned, its points, and what the checks printed (the feedback)."""

    score: float
    max_score: float
    message: str


class Lateness(TypedDict):
    """When a submission came and was due (ISO 8601, or None), the hours late, the points deducted, and
    the policy that deducted them (``deadlines.csv``'s words; empty when on time)."""

    submitted: str | None
    due: str | None
    hours_late: float
    penalty: float
    policy: str


class _Added(TypedDict, total=False):
    log: str  # the tracebacks of what failed, for grading.log (never the student's feedback)
    late: Lateness  # added once the deadlines are applied


class SubmissionRecord(_Added):
    """One submission's grade: whose, which assignment, its notes (:class:`.notes.Note` as JSON: the
    ``status`` column and the feedback's notice are rendered from them), and a part for every graded cell
    of its assignment."""

    student: str
    assignment: str
    notes: list[NoteRecord]
    parts: dict[str, PartRecord]
