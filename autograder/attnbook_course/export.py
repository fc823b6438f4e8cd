"""Grades out: a Canvas gradebook CSV and a plain per-student totals CSV, from nbgrader's gradebook.

``attnbook-course export [--roster CSV]`` writes, in the state folder:

* ``canvas.csv``, for Canvas's Grades → Import: the columns ``Student, ID, SIS User ID, SIS Login ID,
  Section``, then one column per assignment, and a ``Points Possible`` row, as Canvas's own gradebook
  export lays them out. Canvas matches a row to a student by ``ID``, ``SIS User ID`` or ``SIS Login ID``:
  with a roster (Canvas's gradebook export with a ``student`` column added, or any roster of
  ``intake.py``), those come from it, and an assignment whose id begins one of the roster's column
  names (``02-transformer (123456)``) takes that name, so that Canvas fills that assignment rather than
  making a new one. Without a roster, a numeric student id (what ``collect`` names a student the roster
  lacked) is the Canvas ``ID`` and any other is the ``SIS Login ID``.
* ``totals.csv``: ``student``, each assignment's score, ``total`` and ``max_total``.

Every score is the gradebook's, less its late penalty (:mod:`late`), never below 0; a student with no
submission of an assignment gets an empty cell (Canvas leaves it ungraded; put 0 there to charge it).

A text cell that a student, the roster or Canvas controls (a name, an id, a section, a roster's column
name) and that a spreadsheet would read as a formula is written with a ``'`` before it, and every text
cell is quoted (:mod:`csvcells`); scores are numbers, never prefixed.

>>> canvas_header("02-transformer", ["Student", "ID", "02-transformer (70412)"])
'02-transformer (70412)'
"""

from __future__ import annotations

from pathlib import Path

from . import csvcells, intake

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def canvas_header(assignment: str, roster_fields: list[str]) -> str:
    """The column of ``assignment`` in Canvas: the roster's column that names it, else its id.

    >>> canvas_header("01-rnn-attention", ["Student", "02-transformer (70412)"])
    '01-rnn-attention'
    """
    return next((f for f in roster_fields if f == assignment or f.startswith(f"{assignment} (")), assignment)


def net_scores(db_url: str) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """(assignment -> max score, student -> assignment -> score less late penalty) from the gradebook."""
    from .nbgrader_run import gradebook

    maxima: dict[str, float] = {}
    scores: dict[str, dict[str, float]] = {}
    with gradebook(db_url) as gb:
        for assignment in gb.assignments:
            maxima[assignment.name] = float(assignment.max_score)
            for submission in assignment.submissions:
                net = max(0.0, float(submission.score) - float(submission.late_submission_penalty or 0))
                scores.setdefault(submission.student_id, {})[assignment.name] = round(net, 2)
        for student in gb.students:
            scores.setdefault(student.id, {})
    return dict(sorted(maxima.items())), dict(sorted(scores.items()))


def _cell(value: float | None) -> float | int | str:
    """A score as a number (written bare: 16, 5.5), or ``""`` when there is none."""
    return "" if value is None else int(value) if float(value).is_integer() else value


def canvas_rows(maxima: dict[str, float], scores: dict[str, dict[str, float]],
                roster: dict[str, dict[str, str]], roster_fields: list[str]) -> tuple[list[str], list[list]]:
    """Canvas's header and rows (the ``Points Possible`` row first).

    >>> header, rows = canvas_rows({"a1": 20.0}, {"340934": {"a1": 16.0}, "bo": {}}, {}, [])
    >>> header, rows
    (['Student', 'ID', 'SIS User ID', 'SIS Login ID', 'Section', 'a1'], \
[['Points Possible', '', '', '', '', 20], ['340934', '340934', '', '', '', 16], ['bo', '', '', 'bo', '', '']])
    """
    header = CANVAS_COLUMNS + [canvas_header(a, roster_fields) for a in maxima]
    rows = [["Points Possible", "", "", "", ""] + [_cell(m) for m in maxima.values()]]
    for student, got in scores.items():
        info = roster.get(student)
        if info:
            who = [info.get("Student", student), info.get("ID") or info["lms_id"], info.get("SIS User ID", ""),
                   info.get("SIS Login ID", ""), info.get("Section", "")]
        else:
            who = [student, student if student.isdigit() else "", "", "" if student.isdigit() else student, ""]
        rows.append([*who, *(_cell(got.get(a)) for a in maxima)])
    return header, rows


def export(db_url: str, state: Path, roster_path: Path | None = None, problems: list[str] | None = None) -> list[Path]:
    """Write ``state/canvas.csv`` and ``state/totals.csv``; return their paths. A roster row that
    :func:`intake.roster_rows` leaves out (a duplicated or invalid id) is a line in ``problems``: that
    student's row is exported under their course id, unmatched by the roster."""
    fields, roster = intake.roster_rows(roster_path, problems) if roster_path else ([], {})
    maxima, scores = net_scores(db_url)
    if not maxima:
        raise ValueError(f"the gradebook {db_url} holds no assignment: run `attnbook-course grade` first")
    canvas, totals = state / "canvas.csv", state / "totals.csv"
    csvcells.write(canvas, *canvas_rows(maxima, scores, roster, fields))
    csvcells.write(totals, ["student", *maxima, "total", "max_total"],
                   [[student, *(_cell(got.get(a)) for a in maxima), _cell(round(sum(got.values()), 2)),
                     _cell(sum(maxima.values()))] for student, got in scores.items()])
    return [canvas, totals]
