"""What incremental grading keys on, and the course's settings for nbgrader's own tools (fast: no grading).

``autograder/attnbook_course/gradecache.py`` decides which submissions ``make grade`` grades
again: a change of the submission, of the assignment's source or released
notebook, of the grader's code or of its settings must change the key, and
nothing else may. ``tests/test_term.py`` grades a class incrementally
and compares every output with a full run's.
"""

import doctest
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from attnbook_course import feedback_filters, gradecache, nbgrader_run, no_autograde, recording, shards, submission
from attnbook_course.notes import Note

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "03-bert"


@pytest.mark.parametrize("module", [gradecache, no_autograde, feedback_filters, nbgrader_run, submission, recording,
                                    shards],
                         ids=lambda m: m.__name__)
def test_docstring_examples(module):
    assert doctest.testmod(module).failed == 0


@pytest.fixture
def course_copy(tmp_path, monkeypatch):
    """A copy of what the grader's key reads besides the package, for gradecache to read instead."""
    for part in ("autograder", f"solutions/{ASSIGNMENT}", f"chapters/{ASSIGNMENT}"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "answers"))
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(gradecache, "ROOT", tmp_path)
    monkeypatch.setattr(gradecache, "GRADER", tmp_path / "autograder")
    gradecache._grader.cache_clear()
    yield tmp_path
    gradecache._grader.cache_clear()


def key_after(change) -> str:
    change()
    gradecache._grader.cache_clear()
    return gradecache.grader_key(ASSIGNMENT)


def test_the_key_changes_with_the_grader_the_notebooks_and_the_settings(course_copy, monkeypatch):
    import attnbook

    package = course_copy / "attnbook"
    shutil.copytree(Path(attnbook.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    key = gradecache.grader_key(ASSIGNMENT)

    def append(path: str, text: str = "\n# changed\n"):
        return lambda: (course_copy / path).write_text((course_copy / path).read_text() + text)

    # neither the class report nor the grader's own fixtures change a grade
    assert key_after(append("autograder/attnbook_course/report.py")) == key
    assert key_after(append("autograder/attnbook_course/fixtures/catalogue.py")) == key
    assert key_after(lambda: (course_copy / "autograder" / ".nbgrader.log").write_text("log")) == key
    changes = [append("autograder/attnbook_course/course.py"), append("autograder/nbgrader_config.py"),
               lambda: (course_copy / "autograder" / "deadlines.yml").write_text("03-bert: 2026-12-01\n"),
               append(f"solutions/{ASSIGNMENT}/exercises.ipynb", " "),
               append(f"chapters/{ASSIGNMENT}/exercises.ipynb", " "), append("tools/book_assets.py"),
               lambda: monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "7"),
               lambda: monkeypatch.setattr(attnbook, "__file__", str(package / "__init__.py")),  # the same files
               append("attnbook/grading/engine.py")]
    keys = [key] + [key_after(change) for change in changes]
    assert keys[-2] == keys[-3]  # the package's files, wherever it is installed, make the same key
    del keys[-2]
    assert len(set(keys)) == len(keys)  # each change made a key of its own


def test_a_submission_key_reads_every_file_of_the_submission(tmp_path):
    folder = tmp_path / "ada" / ASSIGNMENT
    folder.mkdir(parents=True)
    keys = [gradecache.submission_key("grader", "ada", folder)]  # no notebook: graded as missing
    (folder / "exercises.ipynb").write_text("{}")
    keys.append(gradecache.submission_key("grader", "ada", folder))
    (folder / "timestamp.txt").write_text("2026-11-20 10:00:00 UTC")
    keys.append(gradecache.submission_key("grader", "ada", folder))
    keys += [gradecache.submission_key("grader", "bob", folder), gradecache.submission_key("other", "ada", folder)]
    assert len(set(keys)) == len(keys)
    assert gradecache.submission_key("grader", "ada", folder) == keys[2]  # the same files, the same key


def test_select_grades_what_changed_or_failed_and_keeps_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr(gradecache, "grader_key", lambda assignment: f"grader of {assignment}")
    pairs = [(s, ASSIGNMENT) for s in ("ada", "bob", "cy", "dee")]
    for student, assignment in pairs:
        folder = tmp_path / "submitted" / student / assignment
        folder.mkdir(parents=True)
        (folder / "exercises.ipynb").write_text(student)
    _, _, keys, _ = gradecache.select(tmp_path, pairs)
    for student, said in [("ada", []), ("bob", []), ("cy", [Note("grading_error", "judging (OSError)").record()])]:
        gradecache.store(tmp_path, {"student": student, "assignment": ASSIGNMENT, "notes": said},
                         keys[student, ASSIGNMENT])
    (tmp_path / "submitted" / "bob" / ASSIGNMENT / "exercises.ipynb").write_text("bob, resubmitted")
    todo, kept, _, notes = gradecache.select(tmp_path, pairs)
    assert todo == [("bob", ASSIGNMENT), ("cy", ASSIGNMENT), ("dee", ASSIGNMENT)] and list(kept) == [pairs[0]]
    assert notes == []
    todo, kept, _, notes = gradecache.select(tmp_path, pairs, chosen=[pairs[0]])  # make grade STUDENT=ada
    assert todo == [pairs[0]] and sorted(kept) == [pairs[1], pairs[2]]
    assert notes == [f"2 kept results are out of date (run `make grade` to grade them again): bob/{ASSIGNMENT}, "
                     f"cy/{ASSIGNMENT}",
                     f"1 submissions not graded yet, not in grades.csv (run `make grade`): dee/{ASSIGNMENT}"]


def test_nbgrader_autograde_is_refused_and_export_stays_out_of_the_source_tree():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "autograder")).load_config()
    assert config.Autograde.exporter_class == "attnbook_course.no_autograde.UseMakeGrade"
    assert Path(config.ExportPlugin.to) == ROOT / "nbgrader-grades.csv"
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "nbgrader-grades.csv" in ignored and "/grading-cache/" in ignored


def test_a_new_gradebook_is_stamped_with_the_head_nbgrader_finds(tmp_path):
    """nbgrader's own stamp runs ``alembic heads`` in a subprocess; the course reads the head from the
    migration files instead: the same revision, in the gradebook a grading run creates."""
    import sqlalchemy

    own = subprocess.run([sys.executable, "-c", "import nbgrader.api; print(nbgrader.api.get_alembic_version())"],
                         capture_output=True, text=True, check=True, env={**os.environ, "PATH": os.pathsep.join(
                             [str(Path(sys.executable).parent), os.environ["PATH"]])}).stdout.strip()
    assert nbgrader_run.alembic_head() == own
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with nbgrader_run.gradebook(url) as gb:
        assert gb.students == []
    with sqlalchemy.create_engine(url).connect() as db:
        assert db.execute(sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar_one() == own
