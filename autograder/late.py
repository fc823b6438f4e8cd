"""Deadlines and late work: when each submission was due and handed in, and what lateness costs.

A due date per assignment comes from ``deadlines.csv`` in the state folder
(columns ``assignment,student,due,policy``; a row with an empty ``student`` is
the assignment's, a row with one is that student's extension, ``*`` as the
assignment applies to every assignment without a row of its own), or, for an
assignment the file does not name, from nbgrader's gradebook (the ``duedate``
that ``nbgrader db assignment add ID --duedate=…`` or the formgrader sets, and
the student's ``extension``)::

    assignment,student,due,policy
    *,,,"per-day 10%, zero after 7d"
    02-transformer,,2026-03-01 17:00 UTC,
    02-transformer,alice,2026-03-04 17:00 UTC,

A submission's time is its ``timestamp.txt`` (what nbgrader's exchange writes,
and what ``intake.py`` writes from an LMS download), read as nbgrader reads it.
The policy (:func:`parse_policy`) turns hours late into points deducted, with
the semantics of nbgrader's ``LateSubmissionPlugin``: a penalty per notebook,
never below 0 nor above the score (``zero`` is nbgrader's own method). The
penalty goes into the gradebook (``late_submission_penalty``, and the
submission's ``timestamp``), so that nbgrader's feedback page, formgrader and
``nbgrader export`` show it, and into each result as ``result["late"]``.

>>> policy = parse_policy("per-day 10%, zero after 7d")
>>> penalty(policy, hours_late=26.0, score=15.0, max_score=20.0)  # two started days: 20 % of 20 points
4.0
"""

from __future__ import annotations

import csv
import math
import re
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

DEADLINES = "deadlines.csv"
_RATE = re.compile(r"per-(hour|day)\s+(\d+(?:\.\d+)?)\s*%")
_CUTOFF = re.compile(r"zero after\s+(\d+(?:\.\d+)?)\s*([hd])")


@dataclass(frozen=True)
class Policy:
    """What lateness costs: ``rate`` percent of the assignment's points per started ``unit`` (hours) late,
    and the whole score once more than ``cutoff`` hours late (``None``: never)."""

    text: str
    rate: float = 0.0
    unit: float = 1.0
    cutoff: float | None = None


def parse_policy(text: str) -> Policy:
    """A policy from its words: ``none``, ``zero`` (nbgrader's: any lateness costs the whole score),
    ``per-hour P%`` or ``per-day P%``, ``zero after N h`` or ``N d``, or a rate and a cut-off together.

    >>> parse_policy("per-hour 2%")
    Policy(text='per-hour 2%', rate=2.0, unit=1.0, cutoff=None)
    >>> parse_policy("per-day 10%, zero after 3d").cutoff, parse_policy("zero").cutoff, parse_policy("").rate
    (72.0, 0.0, 0.0)
    >>> parse_policy("a week of grace")
    Traceback (most recent call last):
    ValueError: policy: expected none, zero, per-hour P%, per-day P%, zero after N(h|d) or both, got 'a week of grace'
    """
    words = " ".join(text.lower().split())
    if words in ("", "none"):
        return Policy(text)
    if words == "zero":
        return Policy(text, cutoff=0.0)
    rate, cutoff = _RATE.search(words), _CUTOFF.search(words)
    rest = _CUTOFF.sub("", _RATE.sub("", words)).strip(" ,")
    if rest or not (rate or cutoff):
        raise ValueError(f"policy: expected none, zero, per-hour P%, per-day P%, zero after N(h|d) or both, "
                         f"got {text!r}")
    return Policy(text, rate=float(rate[2]) if rate else 0.0, unit=24.0 if rate and rate[1] == "day" else 1.0,
                  cutoff=float(cutoff[1]) * (24.0 if cutoff[2] == "d" else 1.0) if cutoff else None)


def penalty(policy: Policy, hours_late: float, score: float, max_score: float) -> float:
    """Points deducted, clipped to [0, score] as nbgrader clips them. A started hour or day counts whole.

    >>> per_hour = parse_policy("per-hour 1%")
    >>> penalty(per_hour, hours_late=2.5, score=18.0, max_score=20.0)  # 3 started hours: 3 % of 20 points
    0.6
    >>> penalty(per_hour, hours_late=50.0, score=3.0, max_score=20.0)  # 50 % of 20 is 10, but only 3 to lose
    3.0
    >>> penalty(parse_policy("zero"), hours_late=0.01, score=17.5, max_score=20.0)
    17.5
    >>> penalty(parse_policy("per-day 10%, zero after 3d"), hours_late=80.0, score=17.5, max_score=20.0)
    17.5
    >>> penalty(parse_policy("zero after 48h"), hours_late=47.0, score=17.5, max_score=20.0)  # accepted till then
    0.0
    >>> penalty(parse_policy("per-day 10%"), hours_late=0.0, score=17.5, max_score=20.0)
    0.0
    """
    if hours_late <= 0:
        return 0.0
    if policy.cutoff is not None and hours_late > policy.cutoff:
        return round(max(score, 0.0), 2)
    deducted = math.ceil(hours_late / policy.unit - 1e-9) * policy.rate / 100 * max_score
    return round(min(max(deducted, 0.0), max(score, 0.0)), 2)


def parse_time(text: str, what: str) -> datetime:
    """A time as nbgrader reads one (``timestamp.txt``, ``--duedate``), as an aware UTC datetime; a time
    without a zone is UTC.

    >>> parse_time("2026-03-01 18:00:00.000000 CET", "due").isoformat()
    '2026-03-01T17:00:00+00:00'
    >>> parse_time("2026-03-01T17:00", "due").isoformat()
    '2026-03-01T17:00:00+00:00'
    """
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text.strip()).replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError) as err:
        raise ValueError(f"{what}: expected a date and time such as 2026-03-01 17:00 UTC, got {text!r}") from err


@dataclass(frozen=True)
class Deadline:
    due: datetime | None
    policy: Policy


def read_deadlines(path: Path) -> dict[tuple[str, str], Deadline]:
    """(assignment, student or "") -> its deadline, from a ``deadlines.csv``; a student's row without a
    policy takes the assignment's, and an assignment's row without one takes ``*``'s."""
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"assignment", "due"} - set(reader.fieldnames or [])
        if missing:
            raise ValueError(f"{path}: expected the columns assignment, student, due, policy; missing "
                             f"{', '.join(sorted(missing))}")
        rows = [{k: (v or "").strip() for k, v in row.items() if k} for row in reader]
    out: dict[tuple[str, str], Deadline] = {}
    for row in sorted(rows, key=lambda r: (r["assignment"] != "*", bool(r.get("student")))):
        key = (row["assignment"], row.get("student", ""))
        where = f"{path}, {row['assignment']} {key[1]}".rstrip()
        inherited = out.get((row["assignment"], "")) or out.get(("*", "")) or Deadline(None, parse_policy(""))
        out[key] = Deadline(parse_time(row["due"], f"{where}: due") if row["due"] else inherited.due,
                            parse_policy(row["policy"]) if row.get("policy") else inherited.policy)
    return out


def gradebook_deadlines(db_url: str) -> dict[tuple[str, str], datetime]:
    """(assignment, "") -> the due date nbgrader's gradebook holds, and (assignment, student) -> the
    student's own (with an extension), read in one session."""
    from nbgrader.api import Gradebook

    out = {}
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for assignment in gb.assignments:
            if assignment.duedate is not None:
                out[(assignment.name, "")] = assignment.duedate.replace(tzinfo=timezone.utc)
                for submission in assignment.submissions:
                    out[(assignment.name, submission.student_id)] = submission.duedate.replace(tzinfo=timezone.utc)
    return out


def submitted_at(folder: Path) -> datetime | None:
    """When the submission in ``folder`` was handed in: its ``timestamp.txt``, or None."""
    stamp = folder / "timestamp.txt"
    if not stamp.is_file() or not stamp.read_text().strip():
        return None
    return parse_time(stamp.read_text(), str(stamp))


def rule(deadlines: dict[tuple[str, str], Deadline], assignment: str, student: str) -> Deadline:
    """The deadline of ``student``'s ``assignment`` in a deadlines file: theirs, the assignment's or ``*``'s."""
    return (deadlines.get((assignment, student)) or deadlines.get((assignment, "")) or deadlines.get(("*", ""))
            or Deadline(None, parse_policy("")))


def lateness(result: dict, state: Path, deadlines: dict[tuple[str, str], Deadline],
             recorded: dict[tuple[str, str], datetime]) -> dict:
    """``result["late"]``: when it was submitted and due (ISO 8601 or None), hours late, points deducted
    and the policy's words. ``deadlines`` are the file's, ``recorded`` the gradebook's (for an assignment
    the file does not name).

    >>> import tempfile
    >>> state = Path(tempfile.mkdtemp())
    >>> (state / "submitted" / "bo" / "a1").mkdir(parents=True)
    >>> _ = (state / "submitted" / "bo" / "a1" / "timestamp.txt").write_text("2026-03-02 19:00:00.000000 UTC")
    >>> rules = {("a1", ""): Deadline(parse_time("2026-03-01 17:00 UTC", "due"), parse_policy("per-day 10%"))}
    >>> result = {"student": "bo", "assignment": "a1", "parts": {"p": {"score": 15.0, "max_score": 20.0}}}
    >>> lateness(result, state, rules, {})["penalty"]
    4.0
    """
    student, assignment = result["student"], result["assignment"]
    mine = rule(deadlines, assignment, student)
    named = (assignment, student) in deadlines or (assignment, "") in deadlines
    due = mine.due if named or mine.due else recorded.get((assignment, student), recorded.get((assignment, "")))
    when = submitted_at(state / "submitted" / student / assignment)
    hours = max(0.0, (when - due).total_seconds() / 3600) if when and due else 0.0
    score = sum(p["score"] for p in result["parts"].values())
    top = sum(p["max_score"] for p in result["parts"].values())
    return {"submitted": when.isoformat() if when else None, "due": due.isoformat() if due else None,
            "hours_late": round(hours, 2), "penalty": penalty(mine.policy, hours, score, top),
            "policy": mine.policy.text}


def apply(results: list[dict], state: Path, db_url: str) -> dict[str, datetime]:
    """Add ``late`` to every result, from ``state/deadlines.csv`` (when there is one) and the gradebook;
    return the file's due date of each assignment it names (for :func:`record`). A submission whose time
    or deadline cannot be read gets a ``review:`` note and no penalty."""
    path = state / DEADLINES
    deadlines = read_deadlines(path) if path.exists() else {}  # a malformed file stops the run: ValueError
    recorded = gradebook_deadlines(db_url)
    for result in results:
        try:
            result["late"] = lateness(result, state, deadlines, recorded)
        except ValueError as err:
            result["late"] = {"submitted": None, "due": None, "hours_late": 0.0, "penalty": 0.0, "policy": ""}
            note = f"review: {err}"
            result["status"] = note if result["status"] == "ok" else f"{result['status']}; {note}"
    due = {}
    for assignment in {r["assignment"] for r in results}:
        if when := rule(deadlines, assignment, "").due:
            due[assignment] = when
    return due


def record(db_url: str, results: list[dict], notebook: str, due: dict[str, datetime]) -> None:
    """Write each result's timestamp and penalty into nbgrader's gradebook, each assignment's due date
    ``due`` (the deadlines file's), and a student's own due date as nbgrader's extension."""
    from nbgrader.api import Gradebook, MissingEntry

    def naive(iso: str | None) -> datetime | None:
        return datetime.fromisoformat(iso).astimezone(timezone.utc).replace(tzinfo=None) if iso else None

    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for assignment, when in due.items():
            try:
                gb.find_assignment(assignment).duedate = naive(when.isoformat())
            except MissingEntry:
                continue
        for result in results:
            late = result.get("late")
            try:
                submission = gb.find_submission(result["assignment"], result["student"])
                nb = gb.find_submission_notebook(notebook, result["assignment"], result["student"])
            except MissingEntry:  # not recorded: its grading error says why
                continue
            mine, base = naive(late["due"]), submission.assignment.duedate
            submission.extension = mine - base if mine and base and mine != base else None
            submission.timestamp = naive(late["submitted"])
            nb.late_submission_penalty = late["penalty"] or None
        gb.db.commit()


def columns(result: dict) -> dict:
    """grades.csv's late columns of one result.

    >>> columns({"late": {"submitted": "2026-03-02T19:00:00+00:00", "hours_late": 26.0, "penalty": 4.0}})
    {'timestamp': '2026-03-02T19:00:00+00:00', 'late_hours': 26.0, 'penalty': 4.0}
    """
    late = result.get("late") or {}
    return {"timestamp": late.get("submitted") or "", "late_hours": late.get("hours_late", 0.0),
            "penalty": late.get("penalty", 0.0)}


def describe(late: dict | None) -> str | None:
    """One sentence for the student's feedback about a late submission, or None when it was on time.

    >>> describe({"submitted": "2026-03-02T19:00:00+00:00", "due": "2026-03-01T17:00:00+00:00",
    ...           "hours_late": 26.0, "penalty": 4.0, "policy": "per-day 10%"})
    'Submitted 2026-03-02 19:00 UTC, 26 hours after the due date (2026-03-01 17:00 UTC): 4 points deducted \
(late policy: per-day 10%).'
    """
    if not late or not late.get("hours_late"):
        return None

    def show(iso: str) -> str:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M UTC")

    policy = f" (late policy: {late['policy']})" if late.get("policy") else ""
    return (f"Submitted {show(late['submitted'])}, {late['hours_late']:g} hours after the due date "
            f"({show(late['due'])}): {late['penalty']:g} points deducted{policy}.")

