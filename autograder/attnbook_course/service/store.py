"""The service's tables in the course's PostgreSQL, beside procrastinate's queue (:mod:`.queue`).

``attnbook_submission`` keeps every notebook a student sent, newest last; ``attnbook_outcome`` one grade
per submission and grader (the grader's content hash: :func:`..gradecache.grader_key`), written once
whatever the number of workers that graded it (an upsert on that key); ``attnbook_release`` the
assignments whose hidden cases' messages the instructor released; ``attnbook_failure`` what a job that
failed raised, for the instructor. A submission and its job are written in one transaction
(:func:`submit`).

>>> Submission(7, "ada", "03-bert", "2026-12-04T10:00:00+00:00", "ab" * 32).received[:10]
'2026-12-04'
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import DictRow, dict_row

DB = psycopg.Connection[DictRow]  # a connection whose rows are dicts

SCHEMA = """
CREATE TABLE IF NOT EXISTS attnbook_submission (
    id bigserial PRIMARY KEY,
    student text NOT NULL,
    assignment text NOT NULL,
    received timestamptz NOT NULL DEFAULT now(),
    notebook bytea NOT NULL,
    sha256 text NOT NULL
);
CREATE INDEX IF NOT EXISTS attnbook_submission_newest ON attnbook_submission (student, assignment, id);
CREATE TABLE IF NOT EXISTS attnbook_outcome (
    submission_id bigint NOT NULL REFERENCES attnbook_submission (id),
    grader text NOT NULL,
    graded timestamptz NOT NULL DEFAULT now(),
    score double precision NOT NULL,
    max_score double precision NOT NULL,
    record jsonb NOT NULL,
    feedback text NOT NULL,
    worker text NOT NULL,
    writes integer NOT NULL DEFAULT 1,
    PRIMARY KEY (submission_id, grader)
);
CREATE TABLE IF NOT EXISTS attnbook_release (
    assignment text PRIMARY KEY,
    released timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS attnbook_failure (
    job_id bigint NOT NULL,
    student text NOT NULL,
    assignment text NOT NULL,
    attempt integer NOT NULL,
    error text NOT NULL,
    at timestamptz NOT NULL DEFAULT now()
);
"""


@dataclass(frozen=True)
class Submission:
    """One notebook a student sent (its bytes stay in the database until a worker asks for them)."""

    id: int
    student: str
    assignment: str
    received: str  # ISO 8601, with its offset
    sha256: str


def connect(conninfo: str) -> DB:
    """A connection to the course's database (rows as dicts); its transactions are the caller's."""
    return psycopg.connect(conninfo, row_factory=dict_row)


def create(conninfo: str) -> None:
    """Make the service's tables, where they are missing (any number of processes at once)."""
    with connect(conninfo) as db:
        db.execute("SELECT pg_advisory_xact_lock(7306871712)")  # CREATE IF NOT EXISTS races with itself
        db.execute(SCHEMA)


def add(db: DB, student: str, assignment: str, notebook: bytes) -> Submission:
    """Keep one notebook (inside the caller's transaction: :func:`.queue.submit` defers its job in it)."""
    row = db.execute(
        "INSERT INTO attnbook_submission (student, assignment, notebook, sha256) VALUES (%s, %s, %s, %s) "
        "RETURNING id, received", (student, assignment, notebook, hashlib.sha256(notebook).hexdigest())).fetchone()
    assert row is not None
    return Submission(row["id"], student, assignment, row["received"].isoformat(),
                      hashlib.sha256(notebook).hexdigest())


def newest(db: DB, student: str, assignment: str) -> tuple[Submission, bytes] | None:
    """The student's newest submission of ``assignment``, and its bytes."""
    row = db.execute(
        "SELECT id, received, sha256, notebook FROM attnbook_submission WHERE student = %s AND assignment = %s "
        "ORDER BY id DESC LIMIT 1", (student, assignment)).fetchone()
    if row is None:
        return None
    found = Submission(row["id"], student, assignment, row["received"].isoformat(), row["sha256"])
    return found, bytes(row["notebook"])


def received_since(db: DB, student: str, assignment: str, since: datetime) -> list[datetime]:
    """When the student's submissions of ``assignment`` came, since ``since``, oldest first."""
    rows = db.execute("SELECT received FROM attnbook_submission WHERE student = %s AND assignment = %s "
                      "AND received >= %s ORDER BY received", (student, assignment, since)).fetchall()
    return [r["received"] for r in rows]


def keep_outcome(db: DB, submission: Submission, grader: str, record: dict[str, Any],
                 feedback: str, worker: str) -> None:
    """The grade of ``submission`` by ``grader``: written once; a second worker's grade of the same pair (a
    job run again after its worker died) replaces nothing and only counts in ``writes``."""
    parts = record.get("parts", {}).values()
    score = sum(p["score"] for p in parts) - (record.get("late") or {}).get("penalty", 0.0)
    db.execute(
        "INSERT INTO attnbook_outcome (submission_id, grader, score, max_score, record, feedback, worker) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (submission_id, grader) "
        "DO UPDATE SET writes = attnbook_outcome.writes + 1",
        (submission.id, grader, max(score, 0.0), sum(p["max_score"] for p in parts), json.dumps(record),
         feedback, worker))


def outcome(db: DB, submission_id: int) -> dict[str, Any] | None:
    """The newest grade of one submission (any grader), or None."""
    return db.execute("SELECT * FROM attnbook_outcome WHERE submission_id = %s ORDER BY graded DESC LIMIT 1",
                      (submission_id,)).fetchone()


def graded(db: DB, submission_id: int, grader: str) -> bool:
    """Whether this grader graded this submission already."""
    return db.execute("SELECT 1 FROM attnbook_outcome WHERE submission_id = %s AND grader = %s",
                      (submission_id, grader)).fetchone() is not None


def fail(db: DB, job_id: int, student: str, assignment: str, attempt: int, error: str) -> None:
    """What a job raised (kept for the instructor, every attempt)."""
    db.execute("INSERT INTO attnbook_failure (job_id, student, assignment, attempt, error) VALUES (%s, %s, %s, %s, %s)",
               (job_id, student, assignment, attempt, error[-4000:]))


def release(db: DB, assignment: str) -> None:
    """Show the hidden cases' messages of ``assignment`` from now on."""
    db.execute("INSERT INTO attnbook_release (assignment) VALUES (%s) ON CONFLICT DO NOTHING", (assignment,))


def released(db: DB, assignment: str) -> bool:
    """Whether the instructor released ``assignment``'s hidden cases' messages."""
    return db.execute("SELECT 1 FROM attnbook_release WHERE assignment = %s", (assignment,)).fetchone() is not None
