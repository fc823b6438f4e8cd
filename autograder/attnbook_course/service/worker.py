"""``attnbook-course worker``: claim grading jobs from the queue and grade them, on any number of machines.

A job (:mod:`.queue`) names a student and an assignment; the worker takes that student's newest
submission from the database, grades it as ``attnbook-course grade --student S --assignment A`` does
(the same judge, the bubblewrap sandbox, which never sees the database's address), in a child of the
worker's grading process (:mod:`.forkserver`: the grader imported once) in the worker's state folder,
and writes the outcome and the feedback page in one transaction. A submission the current grader graded
already (a job run again after its worker died) is not graded twice. The worker sends procrastinate's
heartbeat while it grades, and puts back the jobs of workers whose heartbeat stopped.

    attnbook-course --state COURSE worker [--name NAME]   # ATTNBOOK_SERVICE_DB: the course's PostgreSQL

``COURSE`` holds the course's ``deadlines.csv`` and ``feedback.csv``; the worker grades in
``COURSE/workers/NAME/``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import procrastinate

from .. import gradecache
from ..nbgrader_run import NOTEBOOK
from . import queue, store

STAMP = "%Y-%m-%d %H:%M:%S.%f UTC"  # nbgrader's timestamp.txt, as the batch path reads it


class Grading:
    """The worker's grading process (:mod:`.forkserver`), started on first use and again if it died."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None

    async def run(self, argv: list[str], log: Path) -> int:
        """``attnbook-course ARGV`` in a child of the grading process, its output in ``log``: its status."""
        if self.process is None or self.process.returncode is not None:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "attnbook_course.service.forkserver", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, preexec_fn=_die_with_parent)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"argv": argv, "log": str(log)}).encode() + b"\n")
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if not line:
            raise GradingFailed("the grading process ended before it answered")
        return int(json.loads(line)["rc"])


@dataclass(frozen=True)
class Grader:
    """One worker's setting: the database, the course's state folder, its own folder and name, and its
    grading process."""

    conninfo: str
    course: Path
    folder: Path
    name: str
    stalled_seconds: float
    grading: Grading


class GradingFailed(RuntimeError):
    """``grade`` ended without a result for the submission (its output's end is the message)."""


def _die_with_parent() -> None:
    """In the grading process before it starts: killed when this worker dies, whatever killed it."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


async def grade_newest(grader: Grader, student: str, assignment: str) -> str:
    """Grade the student's newest submission of ``assignment`` into the database; what was done, in words."""
    found = await asyncio.to_thread(_newest, grader.conninfo, student, assignment)
    if found is None:
        return "no submission"
    submission, notebook = found
    key = gradecache.grader_key(assignment)
    if await asyncio.to_thread(_graded, grader.conninfo, submission.id, key):
        return f"submission {submission.id} graded already"
    submitted = grader.folder / "incoming" / student / assignment
    shutil.rmtree(submitted.parent.parent, ignore_errors=True)
    submitted.mkdir(parents=True)
    (submitted / NOTEBOOK).write_bytes(notebook)
    received = datetime.fromisoformat(submission.received).astimezone(timezone.utc)
    (submitted / "timestamp.txt").write_text(received.strftime(STAMP))
    state = grader.folder / "state"
    state.mkdir(parents=True, exist_ok=True)
    for name in ("deadlines.csv",):  # the course's, as it is now
        if (grader.course / name).is_file():
            shutil.copy(grader.course / name, state / name)
        else:
            (state / name).unlink(missing_ok=True)
    log = grader.folder / "grade.log"
    result = state / "results" / student / f"{assignment}.json"
    result.unlink(missing_ok=True)
    rc = await grader.grading.run(["--state", str(state), "grade", "--jobs", "1", "--student", student,
                                   "--assignment", assignment, str(grader.folder / "incoming")], log)
    page = state / "feedback" / student / assignment / NOTEBOOK.replace(".ipynb", ".html")
    if rc != 0 or not result.is_file():
        said = log.read_text(errors="replace") if log.is_file() else ""
        raise GradingFailed(f"grade exited with status {rc}:\n{said[-3000:]}")
    record = json.loads(result.read_text())
    feedback = page.read_text() if page.is_file() else ""
    await asyncio.to_thread(_keep, grader.conninfo, submission, key, record, feedback, grader.name)
    return f"submission {submission.id}: {sum(p['score'] for p in record['parts'].values())} points"


def _newest(conninfo: str, student: str, assignment: str) -> tuple[store.Submission, bytes] | None:
    with store.connect(conninfo) as db:
        return store.newest(db, student, assignment)


def _graded(conninfo: str, submission_id: int, key: str) -> bool:
    with store.connect(conninfo) as db:
        return store.graded(db, submission_id, key)


def _keep(conninfo: str, submission: store.Submission, key: str, record: dict, feedback: str, name: str) -> None:
    with store.connect(conninfo) as db, db.transaction():
        store.keep_outcome(db, submission, key, record, feedback, name)


def _fail(conninfo: str, job_id: int, student: str, assignment: str, attempt: int, error: str) -> None:
    with store.connect(conninfo) as db, db.transaction():
        store.fail(db, job_id, student, assignment, attempt, error)


@queue.app.task(name=queue.TASK, queue=queue.QUEUE, retry=queue.RETRY, pass_context=True)
async def grade(context: procrastinate.JobContext, student: str, assignment: str) -> str:
    """The queue's task: :func:`grade_newest`, its error kept for the instructor before it is retried."""
    grader: Grader = context.additional_context["grader"]
    try:
        return await grade_newest(grader, student, assignment)
    except Exception as err:
        job = context.job
        await asyncio.to_thread(_fail, grader.conninfo, job.id or 0, student, assignment, job.attempts + 1,
                                f"{type(err).__name__}: {err}")
        raise


async def _watch_stalled(worker_app: procrastinate.App, seconds: float) -> None:
    """Every few seconds, put back the jobs of dead workers."""
    while True:
        await asyncio.sleep(max(1.0, seconds / 3))
        if count := await queue.requeue_stalled(worker_app, seconds):
            print(f"put back {count} jobs of workers without a heartbeat for {seconds:g} s", flush=True)


async def run(grader: Grader) -> None:
    """Work until SIGINT or SIGTERM: one job at a time (grading takes a core), heartbeats meanwhile."""
    queue.install(grader.conninfo)
    worker_app = queue.open_app(grader.conninfo, asynchronous=True)
    async with worker_app.open_async():
        watcher = asyncio.create_task(_watch_stalled(worker_app, grader.stalled_seconds))
        try:
            heartbeat = max(0.5, grader.stalled_seconds / 4)
            await worker_app.run_worker_async(
                queues=[queue.QUEUE], name=grader.name, concurrency=1, wait=True,
                additional_context={"grader": grader}, update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=grader.stalled_seconds, fetch_job_polling_interval=1.0)
        finally:
            watcher.cancel()


def main(conninfo: str, course: Path, name: str | None, stalled_seconds: float) -> int:
    """``attnbook-course worker``."""
    name = name or f"{socket.gethostname()}-{os.getpid()}"
    grader = Grader(conninfo, course.resolve(), course.resolve() / "workers" / name, name, stalled_seconds,
                    Grading())
    print(f"worker {name}: grading in {grader.folder}", flush=True)
    asyncio.run(run(grader))
    return 0
