"""nbgrader's exchange end to end, as a class on one machine uses it.

The instructor generates and releases an assignment; a student fetches it,
answers it and submits; the instructor collects, grades with ``course.py
grade`` (no SUBMISSIONS: what ``collect`` put in submitted/) and releases the
feedback; the student fetches the feedback. The exchange, the course state and
the student's home are temporary folders; the student's id is given with
``--CourseDirectory.student_id`` (otherwise nbgrader takes the unix user name).
"""

import csv
import os
import subprocess
import sys
from pathlib import Path

import exercise_harness as harness
import nbformat
import pytest

from attnbook_course import nbgrader_run

ROOT = Path(__file__).resolve().parent.parent
COURSE = [sys.executable, "-m", "attnbook_course"]  # attnbook-course

ASSIGNMENT = "02-transformer"
COURSE_ID = "attention-to-transformers"
STUDENT = "alice"

pytestmark = pytest.mark.slow


def student(home: Path, exchange: Path, *args: str) -> subprocess.CompletedProcess:
    """Run an nbgrader command as the student: in their home, which holds no course config."""
    cmd = [
        sys.executable, "-m", "nbgrader", *args, f"--Exchange.root={exchange}",
        f"--Exchange.cache={home / '.nbgrader_cache'}", f"--CourseDirectory.course_id={COURSE_ID}",
        f"--CourseDirectory.student_id={STUDENT}",
    ]
    done = subprocess.run(cmd, cwd=home, env={**os.environ, "HOME": str(home)}, capture_output=True, text=True)
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout}{done.stderr}"
    return done


def answer(notebook: Path) -> None:
    """Fill the student's answer cells with the solution's, leaving every other cell as released."""
    solution = nbformat.read(ROOT / "solutions" / ASSIGNMENT / nbgrader_run.NOTEBOOK, as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in solution.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
    nbformat.write(nb, notebook)


def test_release_submit_collect_grade_feedback(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNBOOK_GRADEBOOK", raising=False)  # the state's own gradebook
    exchange, state, home = tmp_path / "exchange", tmp_path / "state", tmp_path / "home"
    home.mkdir()
    instructor = nbgrader_run.Nbgrader(state)
    on_exchange = f"--Exchange.root={exchange}"

    instructor.generate(ASSIGNMENT)
    instructor("release_assignment", ASSIGNMENT, on_exchange)
    student(home, exchange, "fetch_assignment", ASSIGNMENT)
    answer(home / ASSIGNMENT / nbgrader_run.NOTEBOOK)
    student(home, exchange, "submit", ASSIGNMENT)
    instructor("collect", ASSIGNMENT, on_exchange)
    assert (state / "submitted" / STUDENT / ASSIGNMENT / nbgrader_run.NOTEBOOK).exists()

    done = subprocess.run([*COURSE, "--state", str(state), "grade"], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, **harness.trusted_grading_env()})  # the solution
    assert done.returncode == 0, done.stdout + done.stderr
    with open(state / "grades.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert (row["student"], row["status"]) == (STUDENT, "ok")
    assert float(row["score"]) == float(row["max_score"]) > 0
    assert (state / "feedback" / STUDENT / ASSIGNMENT / "exercises.html").exists()

    instructor("release_feedback", ASSIGNMENT, on_exchange)
    student(home, exchange, "fetch_feedback", ASSIGNMENT)
    fetched = list((home / ASSIGNMENT / "feedback").glob("*/exercises.html"))
    assert len(fetched) == 1, fetched
    assert fetched[0].read_text() == (state / "feedback" / STUDENT / ASSIGNMENT / "exercises.html").read_text()
