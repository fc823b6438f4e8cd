"""Judging the submissions: each in a judge process of its own, a failure its own ``grading error``.

:func:`judge_all` runs :func:`grade_one` for every submission, ``jobs`` at
once (:mod:`attnbook_course.pool`), while nbgrader records the assignments'
cells in the gradebook; whatever fails for one submission (reading, planning,
judging, a judge that dies or runs out of time) scores its parts 0 and says why.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, cast

from . import intake, submission
from .nbgrader_run import Nbgrader
from .notes import Note
from .records import SubmissionRecord

if TYPE_CHECKING:
    from .pool import Failure

STATUS_CHARS = 200  # of the message in a grading error's note (the traceback goes to the log)


def grade_one(job: tuple[str, str, str]) -> SubmissionRecord:
    """Grade one submission (in a judge process of its own); returns its results, never raises.

    Whatever fails while grading it (reading, planning, judging) is this submission's ``grading error``:
    its note names the step, the traceback goes to ``log`` for the grading log, and every part that was
    not graded scores 0.
    """
    student, assignment, state = job
    result: SubmissionRecord = {"student": student, "assignment": assignment, "notes": [], "parts": {}}
    step = "reading the notebook"
    try:
        import torch

        from . import judge

        torch.set_num_threads(1)  # the checks' tensors are small: parallel judges, not threads, use the cores
        nb, notes = intake.read_submission(Path(state) / "submitted" / student / assignment,
                                           submission.read_submission)
        log: list[str] = []
        if nb is not None:
            step = "planning"
            plan = submission.plan(submission.source(assignment), submission.released(assignment), nb)
            step = "judging"
            results, judged = judge.grade_cells(plan, hidden=submission.hidden(Path(state)), log=log)
            notes += [*plan.notes, *judged, *(Note("review", f) for f in submission.flags(nb))]
            result["parts"] = {gid: r.record() for gid, r in results.items()}
        result["notes"] = [n.record() for n in notes]
        if log:
            result["log"] = "\n".join(log)
    except Exception as err:  # this submission's failure, not the class's
        grading_error(result, step, err)
    return complete(result)


def complete(result: SubmissionRecord) -> SubmissionRecord:
    """``result`` with a part for every graded cell of its assignment: 0 and "not graded" where none."""
    for gid, cell in submission.test_cells(submission.source(result["assignment"])).items():
        points = float(cell.metadata["nbgrader"]["points"])
        result["parts"].setdefault(gid, {"score": 0.0, "max_score": points, "message": "not graded"})
    return result


def judge_failed(job: tuple[str, str, str], failure: Failure) -> SubmissionRecord:
    """The result of a submission whose judge process died or ran out of time: 0 everywhere, and why."""
    student, assignment, _ = job
    return complete({"student": student, "assignment": assignment, "parts": {}, "log": failure.log,
                     "notes": [Note("grading_error", failure.why).record()]})


def grading_error(result: SubmissionRecord, step: str, err: BaseException) -> None:
    """Note in ``result`` that ``step`` failed for it: a ``grading_error`` note, and the traceback in its log."""
    result["notes"].append(Note("grading_error", f"{step} ({type(err).__name__}: {str(err)[:STATUS_CHARS]})").record())
    result["log"] = result.get("log", "") + f"{step}:\n{traceback.format_exc()}"


def judge_all(jobs_list: list, jobs: int, graded: list[str], nbgrader: Nbgrader,
              lock: Callable[[], AbstractContextManager] = nullcontext) -> list[SubmissionRecord]:
    """Every submission's result, each judged in a process of its own (``jobs`` at once) while nbgrader
    records the assignments' cells (holding ``lock``: the gradebook's, when shards share it); a judge that
    dies or runs past its budget is its submission's error."""
    from . import pool, sandbox

    failed: list[BaseException] = []

    def generate() -> None:
        try:
            with lock():
                nbgrader.generate_each(graded)
        except Exception as err:  # raised again below, in the main thread
            failed.append(err)

    generating = threading.Thread(target=generate)
    generating.start()
    limits = sandbox.limits()
    budget = limits["submission_seconds"] + limits["judge_grace_seconds"]
    outcomes = pool.run_each(grade_one, jobs_list, workers=jobs, budget=budget,
                             memory_bytes=int(limits["judge_memory_gib"] * 2**30))
    generating.join()
    if failed:  # the grader itself is broken: no grades.csv
        raise failed[0]
    return [cast(SubmissionRecord, out) if isinstance(out, dict) else judge_failed(job, out)  # grade_one's, as JSON
            for job, out in zip(jobs_list, outcomes, strict=True)]
