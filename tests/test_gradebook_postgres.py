"""Grading into a PostgreSQL gradebook: ATTNBOOK_GRADEBOOK names the database, and it wins over sqlite;
a class graded by two shards at once into one gradebook equals a one-process run, row for row.

A throwaway PostgreSQL cluster is started in a temporary folder (``pgserver.py``).
"""

import csv
import hashlib
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import exercise_harness as harness
import pgserver
import pytest

from attnbook_course import course, shards

ROOT = Path(__file__).resolve().parent.parent
COURSE = [sys.executable, "-m", "attnbook_course"]  # attnbook-course
ASSIGNMENT = "02-transformer"
NOTEBOOK = "exercises.ipynb"
catalogue = harness.answers


@pytest.fixture
def postgres():
    """A fresh cluster, stopped and removed afterwards: a function that makes an empty database in it
    and returns its SQLAlchemy URL."""
    if pgserver.bindir() is None:
        pytest.skip("PostgreSQL server binaries not installed (Debian package postgresql)")
    with pgserver.cluster() as server:
        yield server.database


@pytest.fixture
def postgres_url(postgres):
    """The SQLAlchemy URL of an empty database in a fresh cluster."""
    return postgres("gradebook")


@pytest.mark.slow
def test_grades_go_to_the_postgres_gradebook(postgres_url, tmp_path):
    import sqlalchemy
    from nbgrader.api import Gradebook

    submissions, state = tmp_path / "submissions", tmp_path / "state"
    for student, source in {"solution": ROOT / "solutions", "blank": ROOT / "chapters"}.items():
        (submissions / student / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(source / ASSIGNMENT / NOTEBOOK, submissions / student / ASSIGNMENT / NOTEBOOK)
    root_db_existed = (ROOT / "gradebook.db").exists()

    env = {**os.environ, "ATTNBOOK_GRADEBOOK": postgres_url, **harness.trusted_grading_env()}
    pgserver.run(*COURSE, "--state", state, "grade", submissions, env=env, cwd=ROOT)

    engine = sqlalchemy.create_engine(postgres_url)
    tables = sqlalchemy.inspect(engine).get_table_names()
    engine.dispose()
    assert "submitted_assignment" in tables, "course.py wrote nothing to the PostgreSQL gradebook"
    with Gradebook(postgres_url) as gb:
        max_score = gb.find_assignment(ASSIGNMENT).max_score
        assert max_score > 0
        assert gb.find_submission(ASSIGNMENT, "solution").score == max_score
        assert gb.find_submission(ASSIGNMENT, "blank").score == 0
    with open(state / "grades.csv", newline="") as fh:
        rows = {row["student"]: row for row in csv.DictReader(fh)}
    assert float(rows["solution"]["score"]) == float(rows["solution"]["max_score"]) == max_score
    assert float(rows["blank"]["score"]) == 0
    # No sqlite gradebook on the side: not in the state folder, nor nbgrader_config's fallback.
    assert not (state / "gradebook.db").exists()
    assert (ROOT / "gradebook.db").exists() == root_db_existed


def test_a_bad_shard_is_refused_with_the_reason(capsys):
    for text in ("3/2", "0/0", "2/2", "x", "1/", "/2", "-1/2", "1/2/3", ""):
        with pytest.raises(ValueError, match="I/N|must be"):
            shards.parse(text)
    for text, why in [("3/2", "3/2: I must be below N"), ("0/0", "0/0: N, the number of shards, must be at least 1"),
                      ("x", "expected I/N, shard I (from 0) of N machines, such as 0/4; got 'x'")]:
        with pytest.raises(SystemExit) as exit_:
            course.main(["grade", "--shard", text])
        assert exit_.value.code == 2 and f"argument --shard: {why}" in capsys.readouterr().err


def test_every_submission_falls_to_exactly_one_shard_the_same_everywhere():
    pairs = [(f"student{k:03}", a) for k in range(300) for a in ("01-rnn-attention", "03-bert", "06-vit")]
    for n in (1, 2, 3, 4, 7, 16):
        parts = [shards.mine(pairs, (i, n)) for i in range(n)]
        assert sorted(p for part in parts for p in part) == sorted(pairs), n  # none lost, none twice
        assert all(len(part) > len(pairs) / n / 2 for part in parts), n  # and near even
        assert shards.mine(list(reversed(pairs)), (0, n)) == list(reversed(parts[0]))  # whatever the order
    # A pair's shard is its ids' hash alone: these values are the same on every machine and Python.
    assert [shards.owner(("ada", "03-bert"), n) for n in (2, 3, 4, 7)] == [
        int.from_bytes(hashlib.sha256(b"ada\x0003-bert").digest()[:8], "big") % n for n in (2, 3, 4, 7)]
    assert shards.parse("3/4") == (3, 4) and shards.mine(pairs, None) == pairs


def _gradebook_rows(url: str) -> tuple[list[tuple], dict[str, int]]:
    """Every grade of the gradebook: (student, assignment, cell, auto score, manual score, submitted at,
    late penalty); and the number of rows of each of nbgrader's tables."""
    import sqlalchemy
    from nbgrader.api import Base, Gradebook

    with Gradebook(url) as gb:
        rows = sorted((sub.student.id, assignment.name, grade.name, grade.auto_score, grade.manual_score,
                       str(sub.timestamp), nb.late_submission_penalty)
                      for assignment in gb.assignments for sub in gb.assignment_submissions(assignment.name)
                      for nb in sub.notebooks for grade in nb.grades)
    engine = sqlalchemy.create_engine(url)
    with engine.connect() as db:
        counts = {table: db.execute(sqlalchemy.text(f"SELECT count(*) FROM {table}")).scalar()
                  for table in sorted(Base.metadata.tables)}
    engine.dispose()
    return rows, counts


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_two_shards_at_once_into_one_gradebook_equal_a_serial_run(postgres, tmp_path):
    """Four submissions of the cheapest chapter, two to a shard; the shards run at once, each a process
    with one judge, into one PostgreSQL gradebook and one state folder, then ``gather``. The gradebook's
    rows, grades.csv and every submission's files equal those of one serial run into a gradebook of its own."""
    assignment = "03-bert"  # the cheapest chapter to grade
    built, submissions = tmp_path / "built", tmp_path / "submissions"
    mistakes = ("bert_issue_mistakes", "bert_issue_mistakes_2")
    catalogue.build_submissions(built, {name: catalogue.ANSWERS[name] for name in mistakes})
    class_ = {"blank": "blank", "solution": "solution", "mistakes": mistakes[0], "di": mistakes[1]}
    for student, answer in class_.items():
        shutil.copytree(built / answer, submissions / student)
    (submissions / "solution" / assignment / "timestamp.txt").write_text("2026-11-21 10:00:00.000000 UTC\n")
    owners = {student: shards.owner((student, assignment), 2) for student in class_}
    assert sorted(owners.values()) == [0, 0, 1, 1], owners  # two each: both shards grade at once
    deadlines = "assignment,student,due,policy\n03-bert,,2026-11-20 17:00 UTC,per-day 10%\n"

    def course(state: Path, url: str, *args: str) -> subprocess.Popen:
        state.mkdir(exist_ok=True)
        (state / "deadlines.csv").write_text(deadlines)
        env = {**os.environ, "ATTNBOOK_GRADEBOOK": url, **harness.trusted_grading_env()}
        return subprocess.Popen([*COURSE, "--state", state, *args], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def finished(*runs: subprocess.Popen) -> tuple[float, float]:
        """Wait for ``runs``: the wall-clock seconds, and the CPU seconds of the runs and their children."""
        start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        for run in runs:
            out, _ = run.communicate(timeout=600)
            assert run.returncode == 0, out
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.perf_counter() - start, after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime

    serial, sharded = tmp_path / "serial", tmp_path / "sharded"
    serial_url, sharded_url = postgres("serial"), postgres("sharded")
    serial_s = finished(course(serial, serial_url, "grade", "--jobs", "1", str(submissions)))
    sharded_s = finished(*[course(sharded, sharded_url, "grade", "--jobs", "1", "--shard", f"{i}/2",
                                  str(submissions)) for i in (0, 1)])
    assert not (sharded / "grades.csv").exists()  # each shard wrote its own, not the class's
    gather_s = finished(course(sharded, sharded_url, "gather"))
    print("wall and CPU seconds: serial {:.1f}, {:.1f}; two shards at once {:.1f}, {:.1f}; gather {:.1f}, {:.1f}"
          .format(*serial_s, *sharded_s, *gather_s))

    rows, counts = _gradebook_rows(sharded_url)
    assert (rows, counts) == _gradebook_rows(serial_url)
    parts = len(catalogue.points(assignment))
    assert counts["student"] == counts["submitted_assignment"] == counts["submitted_notebook"] == 4
    assert counts["assignment"] == counts["notebook"] == 1 and counts["grade_cells"] == parts
    assert len({row[:3] for row in rows}) == len(rows) == counts["grade"] == 4 * parts  # none lost, none twice
    assert {row[0]: row[6] for row in rows}["solution"] > 0  # its late penalty, recorded by its shard
    assert (sharded / "grades.csv").read_text() == (serial / "grades.csv").read_text()
    for folder in ("results", "autograded", "feedback", "grading-cache"):
        assert _digests(sharded / folder) == _digests(serial / folder), folder
    for i in (0, 1):
        with open(sharded / "shards" / f"{i}-of-2" / "grades.csv", newline="") as fh:
            assert sorted(row["student"] for row in csv.DictReader(fh)) == sorted(
                s for s, owner in owners.items() if owner == i)

    (submissions / "late").mkdir()  # submitted after the shards ran: gather refuses until it is graded
    shutil.copytree(built / "blank" / assignment, sharded / "submitted" / "late" / assignment)
    refused = course(sharded, sharded_url, "gather")
    out, _ = refused.communicate(timeout=120)
    assert refused.returncode == 2 and "late/03-bert" in out, out
