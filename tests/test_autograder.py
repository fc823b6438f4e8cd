"""The grading pipeline end to end: release, nbgrader autograde, feedback, grades.csv.

The catalogue of answers in autograder/fixtures/answers.py is turned into a
class of submissions and graded with the instructor's own command.
"""

import csv
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "autograder" / "course.py"
EXPECTED = ROOT / "autograder" / "fixtures" / "expected_grades.csv"
_spec = importlib.util.spec_from_file_location("answers", ROOT / "autograder" / "fixtures" / "answers.py")
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)

pytestmark = pytest.mark.slow


def _points(assignment: str) -> dict[str, float]:
    """grade_id -> points of every graded cell of an assignment's solution notebook."""
    import nbformat

    nb = nbformat.read(ROOT / "solutions" / assignment / "exercises.ipynb", as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: float(c.metadata["nbgrader"]["points"])
        for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
    }


def _phrases(message) -> list[str]:
    return [] if not message else [message] if isinstance(message, str) else list(message)


def course(*args):
    return subprocess.run([sys.executable, str(COURSE), *args], capture_output=True, text=True, cwd=ROOT)


def test_committed_student_notebooks_match_release():
    done = course("release", "--check")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade the whole catalogue once; return the state folder."""
    base = tmp_path_factory.mktemp("class")
    submissions, state = base / "submissions", base / "state"
    answers.build_submissions(submissions)
    done = course("--state", str(state), "grade", str(submissions))
    assert done.returncode == 0, done.stdout + done.stderr
    return submissions, state


def read_rows(path):
    """(student, assignment) -> the row of grades.csv."""
    with open(path, newline="") as fh:
        return {(row["student"], row["assignment"]): row for row in csv.DictReader(fh)}


ASSIGNMENTS = sorted({answer["assignment"] for answer in answers.ANSWERS.values()})


def test_grades_are_as_expected(graded):
    _, state = graded
    assert (state / "grades.csv").read_text() == EXPECTED.read_text()
    rows = read_rows(state / "grades.csv")
    for assignment in ASSIGNMENTS:
        solution, blank = rows["solution", assignment], rows["blank", assignment]
        assert float(solution["score"]) == float(solution["max_score"]) > 0
        assert float(blank["score"]) == 0
        assert float(solution["max_score"]) == sum(_points(assignment).values())
    for name, answer in answers.ANSWERS.items():
        row = rows[name, answer["assignment"]]
        for grade_id, full in _points(answer["assignment"]).items():
            expected = answer["expected"].get(grade_id, 0)  # a part the answer leaves blank scores 0
            got = float(row[grade_id])
            assert {"full": got == full, "partial": 0 < got < full, 0: got == 0}[expected], (name, grade_id, got)
    assert rows["kills_kernel", "02-transformer"]["status"].startswith("not graded")
    assert rows["patches_torch", "02-transformer"]["status"] == "review: patches torch"


def test_feedback_names_the_mistake_and_hides_the_hidden_tests(graded):
    _, state = graded
    for name, answer in answers.ANSWERS.items():
        if name == "kills_kernel":
            continue
        html = (state / "feedback" / name / answer["assignment"] / "exercises.html").read_text()
        assert "HIDDEN TESTS" not in html and "points=" not in html, name
        for phrase in _phrases(answer["message"]):
            assert phrase in html, (name, phrase)


def test_regrading_loses_nothing_and_gives_the_same_csv(graded, tmp_path):
    submissions, state = graded
    first = (state / "grades.csv").read_text()
    # A second batch with one student only: the others stay submitted and graded.
    partial = tmp_path / "late"
    shutil.copytree(submissions / "solution", partial / "solution")
    done = course("--state", str(state), "grade", str(partial))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (state / "grades.csv").read_text() == first
    for student, assignment in read_rows(state / "grades.csv"):
        assert (state / "submitted" / student / assignment / "exercises.ipynb").exists()


def test_missing_submissions_folder_is_a_clear_error(tmp_path):
    done = course("--state", str(tmp_path), "grade", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and "no such folder" in done.stderr
