"""The gradebook side of grading: record the judge's scores, read what it holds, and one writer at a time.

Shards of a class (``attnbook-course grade --shard i/N``) share one gradebook: every
write of a grading run (nbgrader's ``generate_assignment``, the scores, the
late penalties) and its first read (which may create the tables) hold
:func:`lock`, so two shards never create the same student, assignment or
notebook row at once (their unique constraints would fail one of them).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from .judging import grading_error
from .nbgrader_run import NOTEBOOK, gradebook
from .records import SubmissionRecord

LOCK_KEY = 0x6174746E626F6F6B  # "attnbook": the PostgreSQL advisory lock of the class's grading runs


@contextlib.contextmanager
def lock(db_url: str) -> Iterator[None]:
    """Hold the gradebook's writer lock: a PostgreSQL advisory lock (for the machines that share the
    server), else an exclusive ``flock`` on the SQLite file's ``.lock`` beside it."""
    if db_url.startswith("postgresql"):
        import sqlalchemy
        from sqlalchemy.pool import NullPool

        engine = sqlalchemy.create_engine(db_url, poolclass=NullPool)
        try:
            with engine.connect() as connection:  # the lock ends with the session, whatever happens
                connection.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": LOCK_KEY})
                yield
        finally:
            engine.dispose()
        return
    path = Path(db_url.removeprefix("sqlite:///") + ".lock") if db_url.startswith("sqlite:///") else None
    if path is None or str(path) == ":memory:.lock":
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def record(db_url: str, results: list[SubmissionRecord], submitted: Path) -> None:
    """Write the submissions' scores into the gradebook (the judge's numbers only), in one session.

    Each grade is marked autograded (``needs_manual_grade`` false: the formgrader shows the score, not
    "needs manual grading") and each submission gets the time of its ``timestamp.txt``, as nbgrader's
    own autograde records them (the formgrader counts a submission autograded when the two times agree).
    A submission that cannot be recorded is rolled back and gets a ``grading error`` status."""

    with gradebook(db_url) as gb:
        for result in results:
            student, assignment = result["student"], result["assignment"]
            try:
                gb.update_or_create_student(student)
                gb.update_or_create_submission(assignment, student,
                                               timestamp=timestamp(submitted / student / assignment))
                for gid, part in result["parts"].items():
                    grade = gb.find_grade(gid, Path(NOTEBOOK).stem, assignment, student)
                    grade.auto_score, grade.manual_score, grade.needs_manual_grade = part["score"], None, False
                gb.db.commit()
            except Exception as err:  # this submission's row only
                gb.db.rollback()
                grading_error(result, "recording the grades", err)


def recorded(db_url: str) -> set[tuple[str, str]]:
    """(student, assignment) of every submission the gradebook holds, in one query."""
    from nbgrader.api import Assignment, SubmittedAssignment

    with gradebook(db_url) as gb:
        return set(gb.db.query(SubmittedAssignment.student_id, Assignment.name).join(Assignment).all())


def timestamp(folder: Path) -> datetime | None:
    """The submission time in ``folder/timestamp.txt`` (nbgrader's format, as UTC), or None without one.

    >>> timestamp(Path("/nowhere")) is None
    True
    """
    from nbgrader.utils import parse_utc

    try:
        return parse_utc((folder / "timestamp.txt").read_text().strip() or None)
    except (OSError, ValueError, OverflowError):  # no file, or not a time
        return None
