"""The instructor's commands: release the student notebooks, grade a class.

    python autograder/course.py release            # solutions/ -> chapters/<id>/exercises.ipynb
    python autograder/course.py release --check    # fail if a committed student notebook is stale
    python autograder/course.py grade SUBMISSIONS  # SUBMISSIONS/<student>/<assignment>/*.ipynb

``grade`` copies the submissions into ``submitted/`` (adding and updating,
never deleting), autogrades each student and assignment in its own nbgrader
process (one broken or hostile notebook cannot cost another student a grade),
writes HTML feedback without the hidden tests, and writes ``grades.csv`` with
one row per student and assignment and one column per graded cell. Running it
again regrades from the same submissions and writes the same files.

``--state DIR`` keeps the runtime state (release, submitted, autograded,
feedback, gradebook.db) in DIR instead of the repository root.
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOLUTIONS = ROOT / "solutions"
CHAPTERS = ROOT / "chapters"
NOTEBOOK = "exercises.ipynb"

# Code in a submission that deserves a human look (reported, never penalised).
_SUSPICIOUS = {
    "patches torch": re.compile(r"^\s*torch(\.\w+)+\s*=(?!=)", re.M),
    "touches the grader": re.compile(r"attnbook\.grading|nbgrader", re.M),
    "edits modules": re.compile(r"sys\.modules|builtins|importlib", re.M),
}


def assignments() -> list[str]:
    """Assignment ids: the chapter folders of ``solutions/`` that hold a notebook."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / NOTEBOOK).exists())


class Nbgrader:
    """Runs nbgrader commands in ``autograder/`` (where its config lives), with the state in ``state``."""

    def __init__(self, state: Path):
        self.state = state.resolve()
        self.state.mkdir(parents=True, exist_ok=True)
        self.options = [
            f"--CourseDirectory.release_directory={self.state / '_release'}",
            f"--CourseDirectory.submitted_directory={self.state / 'submitted'}",
            f"--CourseDirectory.autograded_directory={self.state / 'autograded'}",
            f"--CourseDirectory.feedback_directory={self.state / 'feedback'}",
            f"--CourseDirectory.db_url=sqlite:///{self.state / 'gradebook.db'}",
        ]

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "nbgrader", *args, *self.options, "--log-level=WARN"]
        # nbgrader runs the `alembic` script of its own environment: put that on PATH.
        env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
        done = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, env=env)
        if check and done.returncode != 0:
            raise RuntimeError(f"nbgrader {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        return done

    def generate(self, assignment: str) -> Path:
        self("generate_assignment", assignment, "--force")
        return self.state / "_release" / assignment / NOTEBOOK


# ------------------------------------------------------------------ release


def release(state: Path, check: bool) -> int:
    """Generate every student notebook; with ``check``, compare instead of writing."""
    if check:
        state = Path(tempfile.mkdtemp(prefix="attnbook-release-"))
    nbgrader = Nbgrader(state)
    stale = []
    for assignment in assignments():
        generated = nbgrader.generate(assignment)
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


# -------------------------------------------------------------------- grade


def _flags(notebook: Path) -> list[str]:
    """Names of suspicious patterns in the code cells the student could edit."""
    import nbformat

    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception:  # unreadable: autograde will report it
        return []
    code = "\n".join(
        c.source for c in nb.cells
        if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("solution", False)
    )
    return [name for name, pattern in _SUSPICIOUS.items() if pattern.search(code)]


def _cell_scores(db_url: str, assignment: str, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook, MissingEntry

    with Gradebook(db_url) as gb:
        try:
            nb = gb.find_submission_notebook(Path(NOTEBOOK).stem, assignment, student)
        except MissingEntry:
            return {}
        return {g.name: g.score for g in nb.grades}


def _grade_cells(db_url: str, assignment: str) -> dict[str, float]:
    """grade_id -> points of the assignment's graded cells, in the order of the notebook."""
    import nbformat
    from nbgrader.api import Gradebook

    source = nbformat.read(SOLUTIONS / assignment / NOTEBOOK, as_version=4)
    order = [c.metadata.get("nbgrader", {}).get("grade_id") for c in source.cells]
    with Gradebook(db_url) as gb:
        nb = gb.find_notebook(Path(NOTEBOOK).stem, assignment)
        cells = sorted(nb.grade_cells, key=lambda c: order.index(c.name))
        return {cell.name: cell.max_score for cell in cells}


def grade(submissions: Path | None, state: Path, out: Path) -> int:
    nbgrader = Nbgrader(state)
    submitted = nbgrader.state / "submitted"
    if submissions is not None:
        if not submissions.is_dir():
            print(f"no such folder of submissions: {submissions}", file=sys.stderr)
            return 2
        for student_dir in sorted(p for p in submissions.iterdir() if p.is_dir()):
            shutil.copytree(student_dir, submitted / student_dir.name, dirs_exist_ok=True)
    pairs = sorted(
        (s.name, a.name) for s in submitted.glob("*") if s.is_dir()
        for a in s.iterdir() if a.is_dir() and a.name in assignments()
    )
    if not pairs:
        print(f"nothing to grade: expected {submitted}/<student>/<assignment>/{NOTEBOOK}", file=sys.stderr)
        return 2
    db_url = f"sqlite:///{nbgrader.state / 'gradebook.db'}"
    log = nbgrader.state / "grading.log"
    failed: dict[str, set[str]] = {}
    with open(log, "w") as fh:
        for assignment in sorted({a for _, a in pairs}):
            nbgrader.generate(assignment)  # records the grade cells in the gradebook
            # One process per step; nbgrader runs each student's notebook in its own kernel
            # and carries on past a student whose notebook fails.
            for step in ("autograde", "generate_feedback"):
                done = nbgrader(step, assignment, "--force", check=False)
                fh.write(f"$ nbgrader {step} {assignment}\n{done.stdout}{done.stderr}\n")
            failed[assignment] = {
                s for s, a in pairs if a == assignment
                and not (nbgrader.state / "autograded" / s / a / NOTEBOOK).exists()
            }
    # One column per graded cell: the assignments in order, each one's cells in the notebook's order.
    cells_of = {a: _grade_cells(db_url, a) for a in sorted({a for _, a in pairs})}
    columns = [name for cells in cells_of.values() for name in cells]
    rows = []
    for student, assignment in pairs:
        cells = cells_of[assignment]
        status = []
        if student in failed[assignment]:
            status.append(f"not graded: the notebook could not be run to the end (see {log.name})")
            scores = {}
        else:
            scores = _cell_scores(db_url, assignment, student)
        status += [f"review: {f}" for f in _flags(submitted / student / assignment / NOTEBOOK)]
        row = {"student": student, "assignment": assignment}
        row.update({name: round(scores.get(name) or 0.0, 2) for name in cells})
        row["score"] = round(sum(row[name] for name in cells), 2)
        row["max_score"] = sum(cells.values())
        row["status"] = "; ".join(status) or "ok"
        rows.append(row)
        print(f"{student:>20} {assignment}: {row['score']:g}/{row['max_score']:g}  {row['status']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    fields = ["student", "assignment", *columns, "score", "max_score", "status"]
    with open(out, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out} and feedback in {nbgrader.state / 'feedback'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, default=ROOT, help="folder for the runtime state")
    sub = parser.add_subparsers(dest="command", required=True)
    rel = sub.add_parser("release", help="generate chapters/<id>/exercises.ipynb from solutions/")
    rel.add_argument("--check", action="store_true", help="compare with the committed notebooks")
    gr = sub.add_parser("grade", help="autograde, feedback and grades.csv")
    gr.add_argument("submissions", type=Path, nargs="?", help="<student>/<assignment>/*.ipynb (default: submitted/)")
    gr.add_argument("--out", type=Path, default=None, help="CSV path (default: STATE/grades.csv)")
    args = parser.parse_args(argv)
    if args.command == "release":
        return release(args.state, args.check)
    return grade(args.submissions, args.state, args.out or args.state / "grades.csv")


if __name__ == "__main__":
    sys.exit(main())
