"""The grading pipeline end to end: release, the sandboxed judge, feedback, grades.csv.

A class drawn from the catalogue (autograder/attnbook_course/fixtures/answers/) is graded with
the instructor's own command, in parallel, and its grades are checked against
the catalogue: every hostile and broken student (the attacks on the class's run
itself are tests/test_containment.py's), and per chapter the one-mistake
student (every part graded, one answer wrong) and one answer only the hidden
cases reveal. No blank notebook or solution: the one-mistake students score
full on every other part, and tests/test_exercises.py grades the solutions and
the blanks. The hostile students must be contained: 0 on the part they attack,
everyone else graded as if they were not there, no submission lost or changed,
nothing secret in any feedback. Every other catalogued answer is graded
in-process by tests/test_exercises.py with the same checks and hidden cases;
``make grader-check`` puts the whole catalogue through the sandbox.
"""

import csv
import hashlib
import html
import os
import subprocess
import sys
from pathlib import Path

import exercise_harness as harness
import pytest
import reaper

from attnbook_course.fixtures import catalogue

ROOT = Path(__file__).resolve().parent.parent
COURSE = [sys.executable, "-m", "attnbook_course"]  # attnbook-course

pytestmark = pytest.mark.slow
TRUSTED = harness.trusted_grading_env()  # the course's own notebooks; the hostile ones need the sandbox
SANDBOXED = not TRUSTED


def sandboxed_class(answers: dict[str, dict]) -> dict[str, dict]:
    """The students graded here: the hostile and broken ones, and per chapter its one-mistake student and the
    first answer (by name) that only the hidden cases reveal. The attacks on the class's run are graded beside
    control students in tests/test_containment.py."""
    chosen = {name for name, a in answers.items() if a.get("hostile") or "status" in a or a.get("one_mistake")}
    for assignment in sorted({a["assignment"] for a in answers.values()}):
        chosen |= set(sorted(name for name, a in answers.items() if a["assignment"] == assignment
                             and "partial" in a["expected"].values())[:1])
    return {name: answers[name] for name in sorted(chosen) if not answers[name].get("class_level")}


ANSWERS = sandboxed_class(catalogue.ANSWERS)


def course(*args, **env):
    return subprocess.run([*COURSE, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "ATTNBOOK_GRADING_PART_SECONDS": "30", **TRUSTED, **env})


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def read_rows(path):
    with open(path, newline="") as fh:
        return {(row["student"], row["assignment"]): row for row in csv.DictReader(fh)}


def test_committed_student_notebooks_match_release():
    done = course("release", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade the class once, two submissions at a time; return (submissions, state)."""
    if not SANDBOXED:
        pytest.skip("bubblewrap does not run here: the catalogue's hostile answers would attack this checkout")
    base = tmp_path_factory.mktemp("class")
    submissions, state = base / "submissions", base / "state"
    catalogue.build_submissions(submissions, ANSWERS, references=False)
    (base / "tmp").mkdir()  # the run's sandbox folders: this test's own
    done, strays = reaper.run(
        [*COURSE, "--state", str(state), "grade", "--jobs", "2", "--require-sandbox",
         str(submissions)], capture_output=True, text=True, cwd=ROOT,
        env={**os.environ, "ATTNBOOK_GRADING_PART_SECONDS": "30", **TRUSTED, "TMPDIR": str(base / "tmp")})
    assert done.returncode == 0, done.stdout + done.stderr
    (base / "strays.txt").write_text("".join(f"{line}\n" for line in strays))
    return submissions, state


def test_every_grade_and_status_is_as_the_catalogue_states(graded):
    _, state = graded
    assert catalogue.problems(state / "grades.csv", ANSWERS, references=False) == []


def test_submissions_are_kept_unchanged(graded):
    submissions, state = graded
    assert digests(state / "submitted") == digests(submissions)


def test_the_gradebook_holds_the_judges_scores(graded):
    from nbgrader.api import Gradebook

    _, state = graded
    rows = read_rows(state / "grades.csv")
    with Gradebook(f"sqlite:///{state / 'gradebook.db'}") as gb:
        for (student, assignment), row in rows.items():
            submission = gb.find_submission(assignment, student)
            assert submission.score == pytest.approx(float(row["score"])), (student, assignment)


def test_feedback_names_the_mistake_and_keeps_every_secret(graded):
    _, state = graded
    secrets = ["BEGIN HIDDEN TESTS", "points=", "BEGIN SOLUTION", "scores.masked_fill(~mask, float(\"-inf\"))"]
    for name, answer in ANSWERS.items():
        path = state / "feedback" / name / answer["assignment"] / "exercises.html"
        if "raw" in answer:
            continue
        text = html.unescape(path.read_text())  # as the student reads it: `>=`, not `&gt;=`
        for secret in secrets:
            assert secret not in text, (name, secret)
        message = answer.get("message")
        for phrase in [message] if isinstance(message, str) else message or []:
            assert phrase in text, (name, phrase)


def test_no_process_outlives_its_submission(graded):
    """Found as what the grading run left running (tests/reaper.py), not by name across the machine."""
    _, state = graded
    assert (state.parent / "strays.txt").read_text() == ""
    assert [p.name for p in (state.parent / "tmp").rglob("*")] in ([], ["attnbook-sandboxes"])


def test_without_bubblewrap_grading_refuses_before_touching_anything(tmp_path):
    submissions, state = tmp_path / "submissions", tmp_path / "state"
    catalogue.build_submissions(submissions, {"hostile_source_file": catalogue.ANSWERS["hostile_source_file"]})
    no_bwrap = {"PATH": str(tmp_path / "bin"), "ATTNBOOK_GRADING_SANDBOX": ""}  # bwrap cannot be found
    done = course("--state", str(state), "grade", str(submissions), **no_bwrap)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "apt install bubblewrap" in done.stderr and "ATTNBOOK_GRADING_SANDBOX=none" in done.stderr
    assert not state.exists() and not (tmp_path / "grades.csv").exists()  # nothing copied, nothing graded
    # make grader-check's strict mode refuses even when the instructor turns the sandbox off
    done = course("--state", str(state), "grade", "--require-sandbox", str(submissions),
                  ATTNBOOK_GRADING_SANDBOX="none")
    assert done.returncode == 2 and "hostile" in done.stderr and not state.exists()


def test_trusted_notebooks_may_be_graded_without_the_sandbox_when_asked(tmp_path):
    submissions, state = tmp_path / "submissions", tmp_path / "state"
    trusted = {"vit_alternative_answers": catalogue.ANSWERS["vit_alternative_answers"]}
    catalogue.build_submissions(submissions, trusted)  # with the solution and a blank notebook
    done = course("--state", str(state), "grade", "--jobs", "2", str(submissions), ATTNBOOK_GRADING_SANDBOX="none")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(sandbox: none;" in done.stdout
    assert catalogue.problems(state / "grades.csv", trusted) == []


def test_grading_without_the_hidden_cases_refuses(tmp_path):
    submissions, state, nowhere = tmp_path / "submissions", tmp_path / "state", tmp_path / "no-hidden-cases"
    catalogue.build_submissions(submissions, {"vit_alternative_answers": catalogue.ANSWERS["vit_alternative_answers"]})
    nowhere.mkdir()  # a folder of hidden cases without the chapter's file
    done = course("--state", str(state), "grade", str(submissions), ATTNBOOK_GRADING_SANDBOX="none",
                  ATTNBOOK_HIDDEN_CASES=str(nowhere))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "not grading: the hidden cases of check_" in done.stderr and "vit.py" in done.stderr
    assert not (state / "grades.csv").exists()


def test_missing_submissions_folder_is_a_clear_error(tmp_path):
    done = course("--state", str(tmp_path), "grade", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no such folder" in done.stderr
