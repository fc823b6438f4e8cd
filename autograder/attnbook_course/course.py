"""The instructor's command line: release the student notebooks, grade a class, report on it.

    attnbook-course release            # solutions/ -> chapters/<id>/exercises.ipynb
    attnbook-course release --check    # fail if a committed student notebook is stale
    attnbook-course grade [--jobs N] SUBMISSIONS  # SUBMISSIONS/<student>/<assignment>/*.ipynb
    attnbook-course grade --shard I/N SUBMISSIONS  # machine I of N: its share (shards.py)
    attnbook-course grade --enqueue SUBMISSIONS   # into the grading service's queue, for its workers
    attnbook-course gather                 # grades.csv of the class once all N shards are done
    attnbook-course collect ZIP [--assignment ID] [--roster CSV]  # an LMS download (intake.py)
    attnbook-course export [--roster CSV]  # canvas.csv and totals.csv (export.py)
    attnbook-course deadlines              # check deadlines.csv alone: due dates, policies (late.py)
    attnbook-course report                 # STATE/report/index.html, the class report (report.py)
    attnbook-course settings               # every ATTNBOOK_* setting and its value here
    attnbook-course catalogue DEST         # the catalogue's class of right, wrong and hostile answers
    attnbook-course check GRADES           # GRADES (a grades.csv of that class) against the catalogue
    attnbook-course mutants [CHAPTER...]   # mutation testing of the hidden cases (mutants.py)
    attnbook-course routes                 # the installed functions that do a part's whole job (routes.py)
    attnbook-course serve                  # the grading service, a JupyterHub service (service/serve.py)
    attnbook-course worker [--name NAME]   # grade the service's queue, on any number of machines
    attnbook-course submit --url URL A NB  # a notebook to the service, from outside the hub (service/client.py)

``python -m attnbook_course`` is the same command. Each subcommand has ``--help``.

``grade`` copies the submissions into ``submitted/`` (adding and updating,
never deleting), grades each one with the judge of :mod:`attnbook_course.judge`
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

``--state DIR`` (before the subcommand, or after one that reads it) keeps the runtime state (release,
submitted, autograded, feedback, gradebook.db) in DIR instead of the repository root.

The work is done in the modules beside this one: ``nbgrader_run.py`` (paths,
nbgrader's commands, ``release``), ``classgrade.py`` (``grade``),
``submission.py`` (reading and planning a submission), ``judging.py``,
``recording.py`` (the gradebook), ``feedback_notebook.py``, ``shards.py``, ``intake.py``,
``late.py``, ``export.py``, ``report.py``, ``mutants.py``, ``routes.py`` and ``fixtures/catalogue.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import zipfile
from pathlib import Path

from attnbook import settings

from . import GRADER, export, intake, late, shards
from .classgrade import Request, gather, grade
from .nbgrader_run import MAX_NOTEBOOK, ROOT, SOLUTIONS, assignments, gradebook_url, release
from .submission import grade_id, released


def lms(args: argparse.Namespace) -> int:
    """``collect`` (intake.py) or ``export`` (export.py); a bad zip, roster or zone is a clear error."""
    state = args.state.resolve()
    try:
        if args.command == "collect":
            known = {a: {gid for c in released(a).cells if (gid := grade_id(c))} for a in assignments()}
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


def parser() -> argparse.ArgumentParser:
    """``attnbook-course`` and its subcommands, each with its options and ``--help``."""
    top = argparse.ArgumentParser(prog="attnbook-course", description=__doc__.split("\n\n")[0])
    top.add_argument("--state", type=Path, default=ROOT, help="folder for the runtime state (default: %(default)s)")
    state = argparse.ArgumentParser(add_help=False)  # --state after the subcommands that read it too
    state.add_argument("--state", type=Path, default=argparse.SUPPRESS, help="folder for the runtime state")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, text: str) -> argparse.ArgumentParser:
        stateful = name in ("release", "grade", "gather", "collect", "export", "deadlines", "report", "serve",
                            "worker")
        return sub.add_parser(name, help=text, description=text, parents=[state] if stateful else [])

    rel = add("release", "generate chapters/<id>/exercises.ipynb from solutions/")
    rel.add_argument("--check", action="store_true", help="compare with the committed notebooks")
    gr = add("grade", "autograde, feedback and grades.csv")
    gr.add_argument("submissions", type=Path, nargs="?", help="<student>/<assignment>/*.ipynb (default: submitted/)")
    gr.add_argument("--out", type=Path, default=None, help="CSV path (default: STATE/grades.csv)")
    gr.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded at once")
    gr.add_argument("--require-sandbox", action="store_true",
                    help=f"refuse without bubblewrap even if {settings.GRADING_SANDBOX.name}=none "
                    "(hostile submissions)")
    gr.add_argument("--student", help="grade this student's submissions again, changed or not (and no other)")
    gr.add_argument("--assignment", help="grade this assignment's submissions again (with --student: that one)")
    gr.add_argument("--enqueue", action="store_true",
                    help=f"queue SUBMISSIONS for the service's workers instead ({settings.SERVICE_DB.name})")
    gr.add_argument("--shard", type=_shard, metavar="I/N",
                    help="grade only shard I (0 to N-1) of N machines' (shards.py); `gather` when all are done")
    ga = add("gather", "the class's grades.csv from the shards of `grade --shard`, all done")
    ga.add_argument("--out", type=Path, default=None, help="CSV path (default: STATE/grades.csv)")
    co = add("collect", "import an LMS download (Canvas, Moodle, zip_collect) into submitted/")
    co.add_argument("zip", type=Path, help="the downloaded zip, or the folder it unpacks to")
    co.add_argument("--assignment", choices=assignments(), help="the assignment it holds (default: its notebooks say)")
    co.add_argument("--roster", type=Path, default=None, help="CSV: the LMS's student ids -> the course's")
    co.add_argument("--zone", default="UTC", help="time zone of the times in the zip (default UTC)")
    co.add_argument("--check", action="store_true", help="say what would be collected and skipped; write nothing")
    ex = add("export", "canvas.csv and totals.csv from the gradebook, late penalties applied")
    ex.add_argument("--roster", type=Path, default=None, help="Canvas's gradebook export with a student column")
    add("deadlines", "check deadlines.csv alone: each assignment's due date and late policy")
    add("settings", "every ATTNBOOK_* setting: its unit, default, meaning and value here")
    rep = add("report", "the class report of a graded state folder: STATE/report/index.html")
    rep.add_argument("--out", type=Path, default=None, help="output folder (default: STATE/report)")
    rep.add_argument("--threshold", type=float, default=None,
                     help="share of an answer's code in common that flags a pair (default: similarity.THRESHOLD)")
    cat = add("catalogue", "write the catalogue's class of right, wrong and hostile answers (make grader-check)")
    cat.add_argument("dest", type=Path, help="folder for DEST/<student>/<assignment>/exercises.ipynb")
    ch = add("check", "check a grades.csv of the catalogue's class against the grades the catalogue states")
    ch.add_argument("grades", type=Path, help="the grades.csv of `grade` run on `catalogue`'s folder")
    mu = add("mutants", "mutation testing: the one-edit mutants of each solution cell, graded by its checks")
    mu.add_argument("assignments", nargs="*", help="chapter ids (default: every chapter)")
    mu.add_argument("--cells", nargs="*", help="answer cells' grade ids (default: all)")
    mu.add_argument("--out", type=Path, default=GRADER / "mutation", help="folder of the tables (default: %(default)s)")
    mu.add_argument("--sample", type=int, help="grade at most this many mutants of a cell, evenly spaced")
    mu.add_argument("--rules", action="store_true",
                    help="grade only the rule mutants (autograder/mutation/rules/), not cosmic-ray's")
    mu.add_argument("--messages", action="store_true",
                    help="print, for each rule mutant, what its visible check tells the student")
    ro = add("routes", "the installed functions that do a part's whole job, found and checked as refused")
    ro.add_argument("--packages", nargs="*", default=None, help="packages to search (default: routes.PACKAGES)")
    ro.add_argument("--out", type=Path, default=GRADER / "refused_routes.csv", help="the table (default: %(default)s)")
    add("serve", f"the grading service (JupyterHub starts it; {settings.SERVICE_DB.name}: its database)")
    wo = add("worker", f"grade the service's queue until stopped ({settings.SERVICE_DB.name}: its database)")
    wo.add_argument("--name", help="the worker's name (default: host and process id)")
    su = add("submit", "send a notebook to the grading service, or ask its state or feedback")
    su.add_argument("--url", default=settings.SERVICE_URL.read(),
                    help=f"the service's address, https://HUB/services/grader/ (default: {settings.SERVICE_URL.name})")
    su.add_argument("--token", default=os.environ.get("JUPYTERHUB_API_TOKEN"),
                    help="a hub token with the service's scope (default: $JUPYTERHUB_API_TOKEN)")
    su.add_argument("--status", action="store_true", help="print the newest submission's state")
    su.add_argument("--feedback", type=Path, metavar="OUT", help="write the feedback page to OUT")
    su.add_argument("assignment", help="the assignment's id, such as 03-bert")
    su.add_argument("notebook", type=Path, nargs="?", help="the notebook to send")
    return top


def service(args: argparse.Namespace) -> int:
    """``serve``, ``worker`` and ``submit``: a missing database or token is a clear error."""
    from .service import client

    if args.command == "submit":
        if not args.token or not args.url:
            print(f"submit: pass --url (or set {settings.SERVICE_URL.name}) and --token (or set "
                  "JUPYTERHUB_API_TOKEN)", file=sys.stderr)
            return 2
        talk = client.Client(args.url, args.token)
        try:
            if args.feedback:
                args.feedback.write_text(talk.feedback(args.assignment))
                print(f"wrote {args.feedback}")
            elif args.status or args.notebook is None:
                print(json.dumps(talk.state(args.assignment), indent=1))
            else:
                print(json.dumps(talk.submit(args.assignment, args.notebook.read_bytes()), indent=1))
        except (client.ServiceError, OSError) as err:
            print(f"submit: {err}", file=sys.stderr)
            return 1
        return 0
    conninfo = settings.SERVICE_DB.read()
    if not conninfo or not conninfo.startswith(("postgresql://", "postgres://")):
        print(f"{args.command}: set {settings.SERVICE_DB.name} to the course's PostgreSQL (postgresql://...)",
              file=sys.stderr)
        return 2
    if args.command == "serve":
        from .service import serve

        return serve.main(conninfo, args.state.resolve())
    if args.command == "grade":
        from .service import queue

        if args.submissions is None or not args.submissions.is_dir():
            print("grade --enqueue: name the folder of submissions", file=sys.stderr)
            return 2
        count, lines = queue.enqueue_folder(conninfo, args.submissions, assignments())
        print("\n".join([*lines, f"queued {count} submissions for the workers (low priority)"]))
        return 0
    from .service import worker

    return worker.main(conninfo, args.state.resolve(), args.name, settings.SERVICE_STALLED_SECONDS.read())


def main(argv: list[str] | None = None) -> int:
    """Run ``attnbook-course`` with ``argv`` (default: the command line's); its exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if not SOLUTIONS.is_dir():
        print(f"attnbook-course works on the course's checkout it is installed from (pip install -e autograder): "
              f"{ROOT} has no solutions/", file=sys.stderr)
        return 2
    args = parser().parse_args(argv)
    args.command_line = ["attnbook-course", *argv]  # the tables of mutants and routes record it
    if args.command == "settings":
        print(settings.table())
        return 0
    if args.command == "release":
        return release(args.state, args.check)
    if args.command in ("serve", "worker", "submit") or getattr(args, "enqueue", False):
        return service(args)
    if args.command in ("collect", "export"):
        return lms(args)
    if args.command == "gather":
        return gather(args.state, args.out or args.state / "grades.csv")
    if args.command == "deadlines":
        return late.check(args.state.resolve(), assignments())
    if args.command == "report":
        from . import report  # matplotlib, copydetect: only for the commands that need them

        return report.run(args)
    if args.command in ("catalogue", "check"):
        from .fixtures import catalogue  # reads every answer file

        if args.command == "check":
            return catalogue.check(args.grades)
        print(f"{len(catalogue.build_submissions(args.dest))} submissions in {args.dest}")
        return 0
    if args.command == "mutants":
        from . import mutants  # torch, cosmic-ray

        return mutants.run(args)
    if args.command == "routes":
        from . import routes  # torch, scipy

        return routes.run(args)
    default = args.state / "grades.csv" if args.shard is None else shards.folder(args.state, args.shard) / "grades.csv"
    return grade(Request(args.submissions, args.state, args.out or default, max(1, args.jobs),
                         args.require_sandbox, args.student, args.assignment, args.shard))


def _shard(text: str) -> shards.Shard:
    """``--shard``'s value; argparse prints the reason of a bad one."""
    try:
        return shards.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
