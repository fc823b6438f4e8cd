"""Intake from an LMS (autograder/attnbook_course/intake.py), deadlines (late.py) and grades out (export.py), on small
synthetic downloads built here; one cheap grading run of broken, misnamed and late notebooks at the end."""

import csv
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import exercise_harness as harness
import pytest

from attnbook_course import export, intake, late
from attnbook_course.notes import Note

ROOT = Path(__file__).resolve().parent.parent
COURSE = [sys.executable, "-m", "attnbook_course"]  # attnbook-course

ASSIGNMENT = "02-transformer"
NB = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def make_zip(path: Path, entries: dict[str, tuple[bytes, tuple]]) -> Path:
    """A zip whose entries have the given bytes and times (year, month, day, hour, minute, second)."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, when) in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def course(*args, **env):
    return subprocess.run([*COURSE, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env})


def stamp(submitted: Path, student: str) -> str:
    return (submitted / student / ASSIGNMENT / "timestamp.txt").read_text()


def test_canvas_download_with_a_roster(tmp_path):
    source = make_zip(tmp_path / "submissions.zip", {
        "smithbob_340934_208490284_exercises.ipynb": (NB, (2026, 3, 1, 16, 59, 0)),
        "leeann_late_340935_208490290_exercises (1).ipynb": (NB, (2026, 3, 2, 19, 0, 0)),
        "doejo_340936_208490291_Exercises.ipynb": (NB, (2026, 3, 1, 12, 0, 0)),
    })
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Section\n"
                      "    Points Possible,,,,\n\"Smith, Bob\",340934,S1,bsmith,A\n\"Lee, Ann\",340935,S2,alee,A\n")
    # a comma inside a quoted name, Canvas's "Points Possible" row: read as Canvas writes them
    due = late.parse_time("2026-03-01 16:30 UTC", "due")  # 17:30 in Paris
    lines = intake.collect(source, tmp_path / "submitted", ASSIGNMENT, roster, "Europe/Paris",
                           due=lambda assignment, student: due)
    submitted = tmp_path / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["340936", "alee", "bsmith"]
    assert (submitted / "bsmith" / ASSIGNMENT / "exercises.ipynb").read_bytes() == NB
    assert stamp(submitted, "bsmith") == "2026-03-01 15:59:00.000000 UTC"  # Paris is UTC+1 in March
    assert stamp(submitted, "alee") == "2026-03-02 18:00:00.000000 UTC"
    text = "\n".join(lines)
    assert "not in the roster: 1 students are named by their LMS id: 340936 = doejo (Canvas)" in text
    assert "alee/02-transformer: 1 files; marked late by Canvas; warning: 'exercises (1).ipynb' will be graded" in text
    assert "340936/02-transformer: 1 files; warning: 'Exercises.ipynb' will be graded as exercises.ipynb" in text
    assert "warning: Canvas" not in text  # its late mark agrees with the times read in Paris's zone
    lines = intake.collect(source, tmp_path / "utc", ASSIGNMENT, roster, "UTC", due=lambda assignment, student: due)
    assert [line for line in lines if "warning: Canvas" in line] == [  # 16:59 read as UTC is late
        "bsmith/02-transformer: 1 files; warning: Canvas does not mark it late but its time, 2026-03-01 16:59 UTC, "
        "is after the due date: is ZONE the zone of the zip's times?"]


def test_a_resubmission_replaces_the_earlier_notebook(tmp_path):
    first = make_zip(tmp_path / "first.zip", {"smithbob_340934_1_exercises.ipynb": (NB, (2026, 3, 1, 10, 0, 0))})
    again = make_zip(tmp_path / "again.zip", {"smithbob_340934_2_exercises-1.ipynb": (b"{}", (2026, 3, 2, 10, 0, 0))})
    intake.collect(first, tmp_path / "submitted", ASSIGNMENT)
    lines = intake.collect(again, tmp_path / "submitted", ASSIGNMENT)
    folder = tmp_path / "submitted" / "340934" / ASSIGNMENT
    assert "moved the earlier exercises.ipynb to .replaced/" in "\n".join(lines)
    assert intake.locate(folder)[0].read_bytes() == b"{}" and (folder / ".replaced" / "exercises.ipynb").exists()
    assert stamp(tmp_path / "submitted", "340934") == "2026-03-02 10:00:00.000000 UTC"


def test_moodle_download_without_a_roster(tmp_path):
    source = make_zip(tmp_path / "moodle.zip", {
        "Bob Smith_70001_assignsubmission_file_/exercises.ipynb": (NB, (2026, 3, 1, 10, 0, 0)),
        "Ann Lee_70002_assignsubmission_file_/exercises-1.ipynb": (NB, (2026, 3, 1, 11, 30, 0)),
        "Ann Lee_70002_assignsubmission_file_/notes.pdf": (b"%PDF", (2026, 3, 1, 11, 31, 0)),
        "Jo Doe_70003_assignsubmission_onlinetext_onlinetext.html": (b"<p>hi</p>", (2026, 3, 1, 9, 0, 0)),
    })
    lines = intake.collect(source, tmp_path / "submitted", ASSIGNMENT)
    submitted = tmp_path / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["70001", "70002"]
    assert sorted(p.name for p in (submitted / "70002" / ASSIGNMENT).iterdir()) == [
        "exercises-1.ipynb", "notes.pdf", "timestamp.txt"]
    assert stamp(submitted, "70002") == "2026-03-01 11:30:00.000000 UTC"  # the notebook's time, not the pdf's
    text = "\n".join(lines)
    assert "no roster given: 2 students are named by their LMS id: 70001 = Bob Smith (Moodle), 70002 = Ann Lee" in text
    assert "skipped Jo Doe_70003_assignsubmission_onlinetext_onlinetext.html" in text


def test_moodle_grading_worksheet_is_a_roster(tmp_path):
    roster = tmp_path / "worksheet.csv"
    roster.write_text("Identifier,Full name,Email address,student\nParticipant 70001,Bob Smith,b@x.org,bsmith\n")
    assert intake.read_roster(roster) == {"70001": "bsmith"}
    bad = tmp_path / "bad.csv"
    bad.write_text("name,email\nBob,b@x.org\n")
    with pytest.raises(ValueError, match="expected an LMS id column"):
        intake.read_roster(bad)


def test_zip_collect_and_nbgrader_layouts(tmp_path):
    source = make_zip(tmp_path / "blackboard.zip", {
        f"{ASSIGNMENT}_bitdiddle_attempt_2026-03-01-15-00-00_exercises.ipynb": (NB, (2026, 1, 1, 0, 0, 0)),
        f"hacker/{ASSIGNMENT}/exercises.ipynb": (NB, (2026, 3, 1, 8, 0, 0)),
        f"hacker/{ASSIGNMENT}/timestamp.txt": (b"2026-03-01 07:59:00.000000 UTC", (2026, 3, 1, 8, 0, 0)),
        "hacker/01-rnn-attention/exercises.ipynb": (NB, (2026, 3, 1, 8, 0, 0)),  # another assignment
        "__MACOSX/._junk": (b"", (2026, 1, 1, 0, 0, 0)),
    })
    lines = intake.collect(source, tmp_path / "submitted", ASSIGNMENT)
    submitted = tmp_path / "submitted"
    assert stamp(submitted, "bitdiddle") == "2026-03-01 15:00:00.000000 UTC"  # the name's time, not the entry's
    assert stamp(submitted, "hacker") == "2026-03-01 07:59:00.000000 UTC"  # the exchange's own timestamp.txt
    assert not (submitted / "hacker" / "01-rnn-attention").exists()
    assert any(line.startswith("skipped hacker/01-rnn-attention/exercises.ipynb") for line in lines)


def test_the_notebooks_say_which_assignment_a_download_holds(tmp_path):
    import nbformat

    known = {a: {c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(ROOT / "chapters" / a / "exercises.ipynb",
                                                                         as_version=4).cells
                 if "nbgrader" in c.metadata} for a in ("01-rnn-attention", ASSIGNMENT)}
    released = (ROOT / "chapters" / ASSIGNMENT / "exercises.ipynb").read_bytes()
    source = make_zip(tmp_path / "submissions.zip", {"smithbob_340934_208490284_exercises.ipynb": (
        released, (2026, 3, 1, 16, 59, 0)), "leeann_340935_208490290_exercises.ipynb": (b"{", (2026, 3, 1, 0, 0, 0))})
    lines = intake.collect(source, tmp_path / "submitted", known)
    assert f"the notebooks are {ASSIGNMENT}'s" in lines
    assert (tmp_path / "submitted" / "340935" / ASSIGNMENT / "exercises.ipynb").read_bytes() == b"{"
    with pytest.raises(ValueError, match="ASSIGNMENT: none of"):
        intake.collect(make_zip(tmp_path / "other.zip", {"a_1_2_x.ipynb": (NB, (2026, 1, 1, 0, 0, 0))}),
                       tmp_path / "submitted", known)


def test_names_that_would_escape_are_skipped_and_the_rest_collected(tmp_path):
    source = make_zip(tmp_path / "evil.zip", {f"../{ASSIGNMENT}/exercises.ipynb": (NB, (2026, 1, 1, 0, 0, 0)),
                                              f"bob/{ASSIGNMENT}/exercises.ipynb": (NB, (2026, 1, 1, 0, 0, 0))})
    lines = intake.collect(source, tmp_path / "submitted", ASSIGNMENT)
    assert f"skipped ../{ASSIGNMENT}/exercises.ipynb: a folder named .." in lines
    assert not (tmp_path / ASSIGNMENT).exists()
    assert (tmp_path / "submitted" / "bob" / ASSIGNMENT / "exercises.ipynb").read_bytes() == NB


def test_misnamed_notebooks_are_found_with_a_note(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    for name in ("exercises (1).ipynb", "exercises (2).ipynb", "timestamp.txt"):
        (folder / name).write_bytes(NB)
    path, note, _ = intake.locate(folder)
    assert path.name == "exercises (2).ipynb"  # the latest copy
    assert note == Note("misnamed", "exercises (2).ipynb")
    (folder / "exercises.ipynb").write_bytes(NB)  # graded first, never silently: the others are named
    others = Note("review", "graded exercises.ipynb of 3 notebooks")
    assert intake.locate(folder) == (folder / "exercises.ipynb", others, "")
    for name in ("exercises (1).ipynb", "exercises (2).ipynb"):
        (folder / name).unlink()
    assert intake.locate(folder) == (folder / "exercises.ipynb", None, "")
    empty = tmp_path / "e"
    empty.mkdir()
    (empty / "answers.pdf").write_bytes(b"%PDF")
    assert intake.locate(empty) == (empty / "exercises.ipynb", None, "the folder holds answers.pdf")


@pytest.mark.parametrize("policy, hours, expected", [
    ("none", 100.0, 0.0),
    ("zero", 0.5, 15.0),               # nbgrader's "zero": any lateness costs the score
    ("per-hour 2%", 3.2, 1.6),         # 4 started hours x 2 % x 20 points
    ("per-day 10%", 24.0, 2.0),        # exactly one day
    ("per-day 10%", 24.5, 4.0),        # a second day started
    ("per-day 25%, zero after 2d", 47.0, 10.0),
    ("per-day 25%, zero after 2d", 49.0, 15.0),
    ("per-hour 50%", 5.0, 15.0),       # never more than the score
])
def test_penalty_of_each_policy(policy, hours, expected):
    assert late.penalty(late.parse_policy(policy), hours, score=15.0, max_score=20.0) == expected


def test_deadlines_file_with_a_default_and_an_extension(tmp_path):
    path = tmp_path / "deadlines.csv"
    path.write_text('assignment,student,due,policy\n*,,,"per-day 10%"\n'
                    f"{ASSIGNMENT},,2026-03-01 17:00 UTC,\n{ASSIGNMENT},alee,2026-03-03 17:00 UTC,zero\n")
    rules = late.read_deadlines(path)
    assert rules[(ASSIGNMENT, "")].policy.text == "per-day 10%"  # the default's
    assert rules[(ASSIGNMENT, "alee")].due.isoformat() == "2026-03-03T17:00:00+00:00"
    assert rules[(ASSIGNMENT, "alee")].policy.cutoff == 0.0
    for student, penalty in (("bsmith", 4.0), ("alee", 0.0)):  # 25 hours late, and on time with the extension
        when = "2026-03-02 18:00:00 UTC"
        (tmp_path / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        (tmp_path / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text(when)
        result = {"student": student, "assignment": ASSIGNMENT, "parts": {"p": {"score": 15.0, "max_score": 20.0}}}
        assert late.lateness(result, tmp_path, rules, {})["penalty"] == penalty, student
    path.write_text("assignment,due\n02-transformer,next friday\n")
    with pytest.raises(ValueError, match="due: expected a date and time"):
        late.read_deadlines(path)


@pytest.mark.filterwarnings("ignore:Object of type")  # SQLAlchemy's note on nbgrader's add_submission
def test_canvas_csv_from_the_gradebook(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))  # alembic

    db = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with Gradebook(db) as gb:
        for name in ("01-rnn-attention", ASSIGNMENT):
            gb.add_assignment(name)
            gb.add_notebook("exercises", name)
            gb.add_grade_cell("part", "exercises", name, max_score=10.0, cell_type="code")
        for student in ("bsmith", "alee", "340936"):
            gb.add_student(student)
        for student, name, score in (("bsmith", ASSIGNMENT, 8.0), ("alee", ASSIGNMENT, 9.0),
                                     ("alee", "01-rnn-attention", 1.0)):
            gb.add_submission(name, student)
            gb.find_grade("part", "exercises", name, student).auto_score = score
        gb.db.commit()
    results = [{"student": student, "assignment": name, "late": {
        "submitted": "2026-03-02T18:00:00+00:00", "due": due, "hours_late": 1.0, "penalty": penalty}}
        for student, name, due, penalty in (("bsmith", ASSIGNMENT, "2026-03-02T17:00:00+00:00", 2.5),
                                            ("alee", ASSIGNMENT, "2026-03-02T18:00:00+00:00", 0.0),
                                            ("alee", "01-rnn-attention", "2026-03-02T17:00:00+00:00", 4.0))]
    due = late.parse_time("2026-03-02 17:00 UTC", "due")
    late.record(db, results, "exercises", {ASSIGNMENT: due, "01-rnn-attention": due})
    with Gradebook(db) as gb:  # what nbgrader's export, formgrader and feedback read
        submission = gb.find_submission(ASSIGNMENT, "bsmith")
        assert (submission.timestamp.isoformat(), submission.late_submission_penalty) == ("2026-03-02T18:00:00", 2.5)
        assert submission.total_seconds_late == 3600
        assert gb.find_submission(ASSIGNMENT, "alee").extension.total_seconds() == 3600  # its own due date
    roster = tmp_path / "roster.csv"
    roster.write_text(f"Student,ID,SIS User ID,SIS Login ID,Section,{ASSIGNMENT} (70412),student\n"
                      "\"Smith, Bob\",340934,S1,bsmith,A,,bsmith\n")
    canvas, totals = export.export(db, tmp_path, roster)
    rows = list(csv.reader(canvas.open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "01-rnn-attention",
                       f"{ASSIGNMENT} (70412)"]
    assert rows[1] == ["Points Possible", "", "", "", "", "10", "10"]
    assert rows[2:] == [["340936", "340936", "", "", "", "", ""],        # no submission: left ungraded
                        ["alee", "", "", "alee", "", "0", "9"],          # a penalty above the score: 0
                        ["Smith, Bob", "340934", "S1", "bsmith", "A", "", "5.5"]]
    assert list(csv.reader(totals.open()))[1:] == [["340936", "", "", "0", "20"], ["alee", "0", "9", "9", "20"],
                                                   ["bsmith", "", "5.5", "5.5", "20"]]


@pytest.mark.slow
def test_broken_misnamed_and_late_notebooks_get_feedback_and_penalties(tmp_path):
    """One cheap grading run (one notebook is judged): a missing and a corrupt notebook, and a late blank
    notebook named ``my; work.ipynb`` whose test cell was renamed (nbgrader's feedback step used to stop at
    it; the name's "; " once cut its sentence from the feedback); then the export."""
    import nbformat

    state = tmp_path / "state"
    renamed = nbformat.read(ROOT / "chapters" / ASSIGNMENT / "exercises.ipynb", as_version=4)
    test_cell = next(c for c in renamed.cells if c.metadata.get("nbgrader", {}).get("grade"))
    original, test_cell.metadata["nbgrader"]["grade_id"] = test_cell.metadata["nbgrader"]["grade_id"], "my_own_name"
    files = {"missing": ("answers.pdf", "%PDF"), "corrupt": ("exercises.ipynb", "{not a notebook"),
             "renamed": ("my; work.ipynb", nbformat.writes(renamed))}  # "; " once split the status
    for student, (name, text) in files.items():
        folder = state / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        (folder / name).write_text(text)
    for student in ("corrupt", "renamed"):
        (state / "submitted" / student / ASSIGNMENT / "timestamp.txt").write_text("2026-03-02 18:00:00.000000 UTC")
    (state / "deadlines.csv").write_text(f'assignment,due,policy\n{ASSIGNMENT},2026-03-01 17:00 UTC,"zero"\n')
    done = course("--state", str(state), "grade", "--jobs", "2", **harness.trusted_grading_env())
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["student"]: r for r in csv.DictReader((state / "grades.csv").open())}
    assert rows["missing"]["status"] == "not graded: notebook missing (the folder holds answers.pdf)"
    assert rows["renamed"]["status"].startswith("review: graded 'my; work.ipynb' as exercises.ipynb (misnamed)")
    assert f"test cell edited or deleted ({original})" in rows["renamed"]["status"]
    assert (rows["renamed"]["timestamp"], rows["renamed"]["late_hours"]) == ("2026-03-02T18:00:00+00:00", "25.0")
    assert (rows["missing"]["timestamp"], rows["missing"]["late_hours"]) == ("", "0.0")
    assert json.loads((state / "results" / "corrupt" / f"{ASSIGNMENT}.json").read_text())["late"] == {
        "submitted": "2026-03-02T18:00:00+00:00", "due": "2026-03-01T17:00:00+00:00", "hours_late": 25.0,
        "penalty": 0.0, "policy": "zero"}  # the interface of report.py
    pages = {s: (state / "feedback" / s / ASSIGNMENT / "exercises.html") for s in files}
    assert all(p.exists() for p in pages.values()), [s for s, p in pages.items() if not p.exists()]
    assert "No notebook named" in pages["missing"].read_text()
    assert "could not be graded (notebook is not valid JSON)" in pages["corrupt"].read_text()
    renamed_page = pages["renamed"].read_text()
    assert "named <code>my; work.ipynb</code>; it was graded as" in renamed_page, renamed_page
    assert "25 hours after the due date" in renamed_page
    assert "test cell of your notebook was edited, renamed or deleted" in renamed_page
    done = course("--state", str(state), "export")
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(list(csv.reader((state / "canvas.csv").open()))) == 2 + len(files)
