"""The course's paths, its gradebook's URL, nbgrader's commands and ``attnbook-course release``.

:class:`Nbgrader` runs nbgrader in ``autograder/`` (where its config lives)
with the runtime state (release, submitted, autograded, feedback, the
gradebook) in a state folder; :func:`release` generates the student notebooks.
"""

from __future__ import annotations

import contextlib
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

from attnbook import settings

from . import GRADER, ROOT

SOLUTIONS = ROOT / "solutions"
CHAPTERS = ROOT / "chapters"
NOTEBOOK = "exercises.ipynb"
MAX_NOTEBOOK = 64 << 20  # bytes: a submission larger than this is not graded


def assignments() -> list[str]:
    """Assignment ids: the chapter folders of ``solutions/`` that hold a notebook."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / NOTEBOOK).exists())


def alembic_head() -> str:
    """The newest revision of nbgrader's gradebook schema, read from its migration files.

    nbgrader stamps a new gradebook with the output of ``alembic heads``, run as a subprocess that imports
    every migration: seconds a grading run, tens of seconds on a busy machine. The head is the one
    revision no other revision names as its ``down_revision``.

    >>> len(alembic_head()) == 12 and alembic_head().isalnum()
    True
    """
    import nbgrader

    versions = Path(nbgrader.__file__).parent / "alembic" / "versions"
    revisions, parents = set(), set()
    for path in versions.glob("*.py"):
        text = path.read_text()
        revisions.update(re.findall(r"^revision\s*=\s*['\"](\w+)['\"]", text, re.M))
        parents.update(re.findall(r"^down_revision\s*=\s*['\"](\w+)['\"]", text, re.M))
    heads = revisions - parents
    if len(heads) != 1:
        raise RuntimeError(f"nbgrader's migrations in {versions} have {len(heads)} heads, not one")
    return heads.pop()


@contextlib.contextmanager
def gradebook(db_url: str) -> Iterator:
    """nbgrader's ``Gradebook(db_url)``, its SQLAlchemy notes silenced, a new one stamped with
    :func:`alembic_head` rather than by a subprocess."""
    import nbgrader.api

    nbgrader.api.get_alembic_version = alembic_head  # nbgrader calls it only to stamp a new gradebook
    with warnings.catch_warnings(), nbgrader.api.Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's sessions
        yield gb


def gradebook_url(state: Path) -> str:
    """The gradebook's database URL: ``ATTNBOOK_GRADEBOOK`` (a class on a server database sets it), else a
    SQLite file in the state folder. The one home of this default: ``nbgrader_config.py`` uses it too.

    >>> gradebook_url(Path("/s")) == (settings.GRADEBOOK.read() or "sqlite:////s/gradebook.db")
    True
    """
    return settings.GRADEBOOK.read() or f"sqlite:///{state / 'gradebook.db'}"


def scripts_path() -> str:
    """``PATH`` with this Python's scripts first: nbgrader runs the ``alembic`` script of its own
    environment when it makes a gradebook (in its commands, and in ours: ``grade`` puts it in ours)."""
    return os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


class Nbgrader:
    """Runs nbgrader commands in ``autograder/`` (where its config lives), with the state in ``state``."""

    def __init__(self, state: Path):
        self.state = state.resolve()
        self.state.mkdir(parents=True, exist_ok=True)
        self.db_url = gradebook_url(self.state)
        self.options = [
            f"--CourseDirectory.release_directory={self.state / '_release'}",
            f"--CourseDirectory.submitted_directory={self.state / 'submitted'}",
            f"--CourseDirectory.autograded_directory={self.state / 'autograded'}",
            f"--CourseDirectory.feedback_directory={self.state / 'feedback'}",
            f"--CourseDirectory.db_url={self.db_url}",
        ]

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        given = {a.split("=")[0] for a in args if a.startswith("--")}  # an option in args replaces the state's
        cmd = [sys.executable, "-m", "nbgrader", *args, *(o for o in self.options if o.split("=")[0] not in given),
               "--log-level=WARN"]
        done = subprocess.run(cmd, cwd=GRADER, capture_output=True, text=True,
                              env={**os.environ, "PATH": scripts_path()})
        if check and done.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done

    def released(self, assignment: str) -> Path:
        """Where ``generate`` writes the student notebook of ``assignment``."""
        return self.state / "_release" / assignment / NOTEBOOK

    def generate(self, assignment: str) -> Path:
        self("generate_assignment", assignment, "--force")
        return self.released(assignment)

    def generate_each(self, wanted: list[str]) -> None:
        """``generate`` for each of ``wanted``: one nbgrader process for all of them when they are all
        the assignments (its start-up, about 3 s, is most of the cost), else one each."""
        if sorted(wanted) == assignments():
            self("generate_assignment", "*", "--force")
        else:
            for assignment in wanted:
                self.generate(assignment)


def release(state: Path, check: bool) -> int:
    """Generate every student notebook; with ``check``, compare instead of writing."""
    if check:
        state = Path(tempfile.mkdtemp(prefix="attnbook-release-"))
    nbgrader = Nbgrader(state)
    stale = []
    nbgrader.generate_each(assignments())
    for assignment in assignments():
        generated = nbgrader.released(assignment)
        target = CHAPTERS / assignment / NOTEBOOK
        if check:
            if not target.exists() or not filecmp.cmp(generated, target, shallow=False):
                stale.append(str(target.relative_to(ROOT)))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(generated, target)
            print(f"released {target.relative_to(ROOT)}")
    if check:
        shutil.rmtree(state, ignore_errors=True)
        if stale:
            print("stale student notebooks (run `make release`):\n  " + "\n  ".join(stale))
            return 1
        print("all student notebooks match solutions/")
    return 0
