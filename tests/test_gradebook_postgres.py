"""Grading into a PostgreSQL gradebook: ATTNBOOK_GRADEBOOK names the database, and it wins over sqlite.

A throwaway PostgreSQL cluster is started in a temporary folder. It listens on
a unix socket in that private folder only (no TCP), so it cannot collide with
another server on the machine.
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import exercise_harness as harness
import pytest

ROOT = Path(__file__).resolve().parent.parent
COURSE = ROOT / "autograder" / "course.py"
ASSIGNMENT = "02-transformer"
NOTEBOOK = "exercises.ipynb"

pytestmark = pytest.mark.slow


def _bindir() -> Path | None:
    """The newest Debian PostgreSQL server binaries, or None."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    return max(found, key=lambda p: float(p.parent.name), default=None)


def _run(*cmd, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout}{done.stderr}"
    return done


@pytest.fixture
def postgres_url():
    """The SQLAlchemy URL of an empty database in a fresh cluster, stopped and removed afterwards."""
    bindir = _bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not installed (Debian package postgresql)")
    # Not under pytest's tmp_path, which only root may enter: the server's own user must reach it.
    base = Path(tempfile.mkdtemp(prefix="attnbook-pg-"))
    owner = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(base, "nobody")
        owner = ["runuser", "-u", "nobody", "--"]
    data, port = base / "data", 5432
    try:
        _run(*owner, bindir / "initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
             "--locale=C", "--no-sync", cwd=base)
        _run(*owner, bindir / "pg_ctl", "-D", data, "-l", base / "server.log", "-w",
             "-o", f"-k {base} -p {port} -c listen_addresses=''", "start", cwd=base)
        _run(*owner, bindir / "createdb", "-h", base, "-p", port, "-U", "postgres", "gradebook", cwd=base)
        yield f"postgresql+psycopg2://postgres@/gradebook?host={base}&port={port}"
    finally:
        subprocess.run([*owner, bindir / "pg_ctl", "-D", data, "-m", "immediate", "stop"],
                       capture_output=True, cwd=base)
        shutil.rmtree(base, ignore_errors=True)


def test_grades_go_to_the_postgres_gradebook(postgres_url, tmp_path):
    import sqlalchemy
    from nbgrader.api import Gradebook

    submissions, state = tmp_path / "submissions", tmp_path / "state"
    for student, source in {"solution": ROOT / "solutions", "blank": ROOT / "chapters"}.items():
        (submissions / student / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(source / ASSIGNMENT / NOTEBOOK, submissions / student / ASSIGNMENT / NOTEBOOK)
    root_db_existed = (ROOT / "gradebook.db").exists()

    env = {**os.environ, "ATTNBOOK_GRADEBOOK": postgres_url, **harness.trusted_grading_env()}
    _run(sys.executable, COURSE, "--state", state, "grade", submissions, env=env, cwd=ROOT)

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
