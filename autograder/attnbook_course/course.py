"""The instructor's commands: release the student notebooks, grade a class.

    python autograder/course.py release            # solutions/ -> chapters/<id>/exercises.ipynb
    python autograder/course.py release --check    # fail if a committed student notebook is stale
    python autograder/course.py grade [--jobs N] SUBMISSIONS  # SUBMISSIONS/<student>/<assignment>/*.ipynb
    python autograder/course.py grade --shard I/N SUBMISSIONS  # machine I of N: its share (shards.py)
    python autograder/course.py gather                 # grades.csv of the class once all N shards are done
    python autograder/course.py collect ZIP [--assignment ID] [--roster CSV]  # an LMS download (intake.py)
    python autograder/course.py export [--roster CSV]  # canvas.csv and totals.csv (export.py)
    python autograder/course.py deadlines              # check deadlines.csv alone: due dates, policies (late.py)

``grade`` copies the submissions into ``submitted/`` (adding and updating,
never deleting), grades each one with the judge of :mod:`attnbook.grading.judge`
(the student's code in a sandboxed worker, the comparisons and the scores in a
clean judge process), ``--jobs`` submissions at once, writes the scores into
the gradebook, ``results/<student>/<assignment>.json``, HTML feedback without
the hidden tests, and ``grades.csv`` with one row per student and assignment
and one column per graded cell. Running it again regrades from the same
submissions and writes the same files, whatever ``--jobs`` is.

Without bubblewrap ``grade`` refuses to start (the students' code would run
as you, with no file isolation) unless ``ATTNBOOK_GRADING_SANDBOX=none`` says
the notebooks are trusted; ``--require-sandbox`` refuses even then.

Due dates and the late policy come from ``deadlines.csv`` or the gradebook (late.py): the penalty goes
into the gradebook, the results, ``grades.csv`` and the feedback. A submission that could not be read
gets a feedback page that says why.

``--state DIR`` keeps the runtime state (release, submitted, autograded,
feedback, gradebook.db) in DIR instead of the repository root.

The work is done in the modules beside this one: ``nbgrader_run.py`` (paths,
nbgrader's commands, ``release``), ``classgrade.py`` (``grade``),
``submission.py`` (reading and planning a submission), ``judging.py``,
``recording.py`` (the gradebook), ``feedback_notebook.py``, ``shards.py``, ``intake.py``,
``late.py`` and ``export.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the modules beside this one, wherever this file is loaded from
    sys.path.insert(0, str(HERE))

import export  # noqa: E402
import intake  # noqa: E402
import late  # noqa: E402
import shards  # noqa: E402
from classgrade import gather, grade  # noqa: E402
from nbgrader_run import MAX_NOTEBOOK, ROOT, assignments, gradebook_url, release  # noqa: E402
from submission import grade_id, released  # noqa: E402

from attnbook import settings  # noqa: E402


def lms(args: argparse.Namespace) -> int:
    """``collect`` (intake.py) or ``export`` (export.py); a bad zip, roster or zone is a clear error."""
    state = args.state.resolve()
    try:
        if args.command == "collect":
            known = {a: {grade_id(c) for c in released(a).cells} - {None} for a in assignments()}
            rules = late.load(state, assignments())  # a wrong deadlines.csv: every problem, nothing collected
            with tempfile.TemporaryDirectory(prefix="attnbook-collect-check-") as scratch:  # --check: kept nowhere
                target = Path(scratch) / "submitted" if args.check else state / "submitted"
                lines = intake.collect(args.zip, target, args.assignment or known, args.roster, args.zone,
                                       MAX_NOTEBOOK, lambda a, s: late.rule(rules, a, s).due, known)
        else:
            lines = []  # the roster's rows left out, then what was written
            lines += [f"wrote {p}" for p in export.export(gradebook_url(state), state, args.roster, lines)]
    except (ValueError, OSError, zipfile.BadZipFile) as err:
        print(f"not done: {err}", file=sys.stderr)
        return 2
    print("\n".join(lines))
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
    gr.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded at once")
    gr.add_argument("--require-sandbox", action="store_true",
                    help=f"refuse without bubblewrap even if {settings.GRADING_SANDBOX.name}=none "
                    "(hostile submissions)")
    gr.add_argument("--student", help="grade this student's submissions again, changed or not (and no other)")
    gr.add_argument("--assignment", help="grade this assignment's submissions again (with --student: that one)")
    gr.add_argument("--shard", type=_shard, metavar="I/N",
                    help="grade only shard I (0 to N-1) of N machines' (shards.py); `gather` when all are done")
    ga = sub.add_parser("gather", help="the class's grades.csv from the shards of `grade --shard`, all done")
    ga.add_argument("--out", type=Path, default=None, help="CSV path (default: STATE/grades.csv)")
    co = sub.add_parser("collect", help="import an LMS download (Canvas, Moodle, zip_collect) into submitted/")
    co.add_argument("zip", type=Path, help="the downloaded zip, or the folder it unpacks to")
    co.add_argument("--assignment", choices=assignments(), help="the assignment it holds (default: its notebooks say)")
    co.add_argument("--roster", type=Path, default=None, help="CSV: the LMS's student ids -> the course's")
    co.add_argument("--zone", default="UTC", help="time zone of the times in the zip (default UTC)")
    co.add_argument("--check", action="store_true", help="say what would be collected and skipped; write nothing")
    ex = sub.add_parser("export", help="canvas.csv and totals.csv from the gradebook, late penalties applied")
    ex.add_argument("--roster", type=Path, default=None, help="Canvas's gradebook export with a student column")
    sub.add_parser("deadlines", help="check deadlines.csv alone: each assignment's due date and late policy")
    sub.add_parser("settings", help="every ATTNBOOK_* setting: its unit, default, meaning and value here")
    args = parser.parse_args(argv)
    if args.command == "settings":
        print(settings.table())
        return 0
    if args.command == "release":
        return release(args.state, args.check)
    if args.command in ("collect", "export"):
        return lms(args)
    if args.command == "gather":
        return gather(args.state, args.out or args.state / "grades.csv")
    if args.command == "deadlines":
        return late.check(args.state.resolve(), assignments())
    default = args.state / "grades.csv" if args.shard is None else shards.folder(args.state, args.shard) / "grades.csv"
    return grade(args.submissions, args.state, args.out or default, max(1, args.jobs),
                 args.require_sandbox, args.student, args.assignment, args.shard)


def _shard(text: str) -> shards.Shard:
    """``--shard``'s value; argparse prints the reason of a bad one."""
    try:
        return shards.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


if __name__ == "__main__":
    sys.exit(main())
