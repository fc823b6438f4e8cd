"""The grading queue: procrastinate's jobs in the course's PostgreSQL (no second server).

One job grades one student's *newest* submission of one assignment when it runs, so a burst of
resubmissions makes one job: a job waiting in the queue holds the queueing lock ``student:assignment``
and a second submission meanwhile defers nothing. Students' jobs come before bulk regrades
(:data:`STUDENT` > :data:`REGRADE`); a job that raises is tried again with backoff (:data:`RETRY`), and
after its last attempt stays ``failed`` with its errors kept (:func:`.store.fail`). A job whose worker
died (no heartbeat for ``ATTNBOOK_SERVICE_STALLED_SECONDS``) is put back by any live worker
(:func:`requeue_stalled`).

>>> lock("ada", "03-bert"), STUDENT > REGRADE
('ada:03-bert', True)
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import procrastinate

from . import store

TASK = "attnbook_course.grade"
QUEUE = "grading"
STUDENT, REGRADE = 10, 0  # priorities: higher runs first
RETRY = procrastinate.RetryStrategy(max_attempts=2, exponential_wait=2)  # three tries in all, seconds apart
WINDOW = timedelta(hours=1)  # the submission limit counts the graded submissions of this window

app = procrastinate.App(connector=procrastinate.SyncPsycopgConnector(), import_paths=[])


def lock(student: str, assignment: str) -> str:
    """The queueing lock of a student's assignment: one waiting job each."""
    return f"{student}:{assignment}"


def open_app(conninfo: str, asynchronous: bool = False) -> procrastinate.App:
    """The app on the course's database: asynchronous for a worker, synchronous for the service."""
    connector: Any = (procrastinate.PsycopgConnector(conninfo=conninfo) if asynchronous
                      else procrastinate.SyncPsycopgConnector(conninfo=conninfo))
    return app.with_connector(connector)


def install(conninfo: str) -> None:
    """procrastinate's schema and the service's tables, where they are missing (many processes at once)."""
    with store.connect(conninfo) as db:
        db.execute("SELECT pg_advisory_xact_lock(7306871711)")
        row = db.execute("SELECT to_regclass('procrastinate_jobs') AS t").fetchone()
        if row is None or row["t"] is None:
            for statement in [procrastinate.schema.SchemaManager.get_schema()]:
                db.execute(statement)
    store.create(conninfo)


def submit(conninfo: str, student: str, assignment: str, notebook: bytes, limit: int | None,
           now: datetime | None = None, priority: int = STUDENT) -> tuple[store.Submission, datetime | None]:
    """Keep the notebook and queue its grading, in one transaction: (the submission, when it will be graded
    if the limit of ``limit`` graded submissions an hour holds it back, else None; no limit: None)."""
    with store.connect(conninfo) as db, db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (lock(student, assignment),))
        submission = store.add(db, student, assignment, notebook)
        received = datetime.fromisoformat(submission.received)
        later = None if limit is None else held_until(
            store.received_since(db, student, assignment, (now or received) - WINDOW), limit)
        defer(db, conninfo, student, assignment, priority, later)
    return submission, later


def held_until(received: list[datetime], limit: int) -> datetime | None:
    """When the newest of ``received`` (one window's submissions, oldest first) may be graded: None at
    once, else when the window has room again.

    >>> t = [datetime(2026, 12, 4, 10, m, tzinfo=timezone.utc) for m in (0, 5, 10, 15)]
    >>> held_until(t[:3], 3), held_until(t, 3).time()
    (None, datetime.time(11, 0))
    """
    if len(received) <= limit:
        return None
    return received[len(received) - limit - 1] + WINDOW


def defer(db: store.DB, conninfo: str, student: str, assignment: str, priority: int,
          at: datetime | None = None) -> bool:
    """Queue a grading of the student's newest submission inside ``db``'s transaction; False when one waits
    already (it will grade the newest). A job held back by the limit is moved earlier, never later."""
    try:
        with db.transaction():  # a savepoint: a refused job leaves the caller's transaction whole
            open_app(conninfo).configure_task(
                TASK, connection=db, queueing_lock=lock(student, assignment), priority=priority, queue=QUEUE,
                schedule_at=at).defer(student=student, assignment=assignment)
        return True
    except procrastinate.exceptions.AlreadyEnqueued:
        pass
    if at is None:
        db.execute("UPDATE procrastinate_jobs SET scheduled_at = NULL, priority = greatest(priority, %s) "
                   "WHERE queueing_lock = %s AND status = 'todo'", (priority, lock(student, assignment)))
    return False


def regrade(conninfo: str, pairs: list[tuple[str, str]]) -> int:
    """Queue the pairs (student, assignment) at low priority; the number of jobs added."""
    with store.connect(conninfo) as db, db.transaction():
        return sum(defer(db, conninfo, s, a, REGRADE) for s, a in pairs)


def enqueue_folder(conninfo: str, folder: Path, assignments: list[str]) -> tuple[int, list[str]]:
    """``make grade``'s folder (``<student>/<assignment>/exercises.ipynb``) into the queue at low priority,
    for the workers: (the number queued, a line for each folder left out: a link, a bad name, no notebook)."""
    from .. import intake
    from ..nbgrader_run import NOTEBOOK

    install(conninfo)
    with tempfile.TemporaryDirectory(prefix="attnbook-enqueue-") as scratch:
        copied = Path(scratch)
        lines = intake.copy_submissions(folder, copied, lambda s, a: True, assignments)
        count = 0
        for student_dir in sorted(p for p in copied.iterdir() if p.is_dir()):
            for work in sorted(p for p in student_dir.iterdir() if p.is_dir()):
                notebook = work / NOTEBOOK
                if not notebook.is_file():
                    lines.append(f"skipped {student_dir.name}/{work.name}: no {NOTEBOOK}")
                    continue
                submit(conninfo, student_dir.name, work.name, notebook.read_bytes(), None, priority=REGRADE)
                count += 1
    return count, lines


def state(db: store.DB, student: str, assignment: str) -> dict[str, Any]:
    """Where the student's newest submission of ``assignment`` is: ``none``, ``queued`` (with its place,
    from 1, and when it is held back to), ``running``, ``graded`` or ``failed`` (with the error)."""
    found = store.newest(db, student, assignment)
    if found is None:
        return {"state": "none"}
    submission, _ = found
    job = db.execute("SELECT id, status, priority, scheduled_at FROM procrastinate_jobs WHERE queueing_lock = %s "
                     "ORDER BY id DESC LIMIT 1", (lock(student, assignment),)).fetchone()
    said = {"submission": submission.id, "received": submission.received}
    if job is not None and job["status"] == "todo":
        ahead = db.execute(
            "SELECT count(*) AS n FROM procrastinate_jobs WHERE status = 'todo' AND queue_name = %s AND "
            "(scheduled_at IS NULL OR scheduled_at <= now()) AND (priority > %s OR (priority = %s AND id < %s))",
            (QUEUE, job["priority"], job["priority"], job["id"])).fetchone()
        at = job["scheduled_at"]
        return {**said, "state": "queued", "place": (ahead["n"] if ahead else 0) + 1,
                "held_until": at.isoformat() if at and at > datetime.now(timezone.utc) else None}
    if job is not None and job["status"] == "doing":
        return {**said, "state": "running"}
    if (graded := store.outcome(db, submission.id)) is not None:
        return {**said, "state": "graded", "score": graded["score"], "max_score": graded["max_score"]}
    if job is not None and job["status"] == "failed":
        error = db.execute("SELECT error FROM attnbook_failure WHERE job_id = %s ORDER BY at DESC LIMIT 1",
                           (job["id"],)).fetchone()
        return {**said, "state": "failed", "error": error["error"] if error else ""}
    return {**said, "state": "queued", "place": None, "held_until": None}  # a worker is about to take it


def overview(db: store.DB) -> dict[str, Any]:
    """The instructor's view of the queue: depth, the oldest wait, running jobs and failed ones with their errors."""
    counts = {r["status"]: r["n"] for r in db.execute(
        "SELECT status::text AS status, count(*) AS n FROM procrastinate_jobs WHERE queue_name = %s GROUP BY status",
        (QUEUE,)).fetchall()}
    oldest = db.execute(
        "SELECT extract(epoch FROM now() - min(e.at)) AS s FROM procrastinate_jobs j JOIN procrastinate_events e "
        "ON e.job_id = j.id AND e.type = 'deferred' WHERE j.status = 'todo' AND j.queue_name = %s",
        (QUEUE,)).fetchone()
    running = db.execute("SELECT args FROM procrastinate_jobs WHERE status = 'doing' AND queue_name = %s",
                         (QUEUE,)).fetchall()
    failed = db.execute(
        "SELECT j.id, j.args, (SELECT f.error FROM attnbook_failure f WHERE f.job_id = j.id ORDER BY f.at DESC "
        "LIMIT 1) AS error FROM procrastinate_jobs j WHERE j.status = 'failed' AND j.queue_name = %s ORDER BY j.id",
        (QUEUE,)).fetchall()
    return {"depth": counts.get("todo", 0), "oldest_wait_s": float(oldest["s"]) if oldest and oldest["s"] else 0.0,
            "running": [r["args"] for r in running], "succeeded": counts.get("succeeded", 0),
            "failed": [{"job": r["id"], **r["args"], "error": r["error"] or ""} for r in failed]}


async def requeue_stalled(worker_app: procrastinate.App, seconds: float) -> int:
    """Put back the jobs of workers without a heartbeat for ``seconds`` (killed, or their machine gone)."""
    stalled = list(await worker_app.job_manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=seconds))
    for job in stalled:
        await worker_app.job_manager.retry_job(job)
    return len(stalled)
