"""The instructor's commands: release the student notebooks, grade a class.

    python autograder/course.py release            # solutions/ -> chapters/<id>/exercises.ipynb
    python autograder/course.py release --check    # fail if a committed student notebook is stale
    python autograder/course.py grade [--jobs N] SUBMISSIONS  # SUBMISSIONS/<student>/<assignment>/*.ipynb
    python autograder/course.py collect ZIP [--assignment ID] [--roster CSV]  # an LMS download (intake.py)
    python autograder/course.py export [--roster CSV]  # canvas.csv and totals.csv (export.py)

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
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # intake.py, late.py and export.py, imported where they are used
ROOT = HERE.parent
SOLUTIONS = ROOT / "solutions"
CHAPTERS = ROOT / "chapters"
HIDDEN_CASES = HERE / "hidden"  # the hidden cases of every part (instructor-only: attnbook.grading.hidden_cases)
NOTEBOOK = "exercises.ipynb"
MAX_NOTEBOOK = 64 << 20  # bytes: a submission larger than this is not graded



def assignments() -> list[str]:
    """Assignment ids: the chapter folders of ``solutions/`` that hold a notebook."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if (p / NOTEBOOK).exists())


def gradebook_url(state: Path) -> str:
    """The gradebook's database URL: ``ATTNBOOK_GRADEBOOK`` (a class on a server database sets it), else a
    SQLite file in the state folder. The one home of this default: ``nbgrader_config.py`` uses it too.

    >>> gradebook_url(Path("/s")) == (os.environ.get("ATTNBOOK_GRADEBOOK") or "sqlite:////s/gradebook.db")
    True
    """
    return os.environ.get("ATTNBOOK_GRADEBOOK") or f"sqlite:///{state / 'gradebook.db'}"


def _path() -> str:
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
        done = subprocess.run(cmd, cwd=HERE, capture_output=True, text=True, env={**os.environ, "PATH": _path()})
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


# ------------------------------------------------------------------ release


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


# -------------------------------------------------------------------- grade


def _flags(nb) -> list[str]:
    """What deserves a human look in the code cells the student could edit (``review.py``; never penalised)."""
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import review

    return review.flags([c.source for c in nb.cells  # the cells plan() takes from the submission
                         if c.cell_type == "code" and (_nbgrader(c).get("solution") or not _grade_id(c))])


def _nbgrader(cell) -> dict:
    """A cell's nbgrader metadata when it has the types nbgrader gives it, else ``{}`` (a submission's
    metadata is the student's to break: a list, a number or a grade_id that is not a string reads as none).

    >>> _nbgrader({"metadata": {"nbgrader": {"grade_id": "a", "points": 2}}})
    {'grade_id': 'a', 'points': 2}
    >>> _nbgrader({"metadata": {"nbgrader": ["grade_id"]}}), _nbgrader({"metadata": {"nbgrader": {"grade_id": [1]}}})
    ({}, {})
    """
    metadata = cell.get("metadata") if isinstance(cell, dict) else None
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return meta if isinstance(meta, dict) and isinstance(meta.get("grade_id"), (str, type(None))) else {}


def _grade_id(cell) -> str | None:
    return _nbgrader(cell).get("grade_id")


def _test_cells(nb) -> dict[str, object]:
    return {_grade_id(c): c for c in nb.cells if _nbgrader(c).get("grade")}


def plan(source, released, submitted) -> tuple[list, list[str]]:
    """What the judge runs, in order: the source's cells with the student's answers in them.

    Solution cells come from the submission (the released stub if it lost
    one) as ("cell", source, the source's answer), locked cells from the source
    as ("cell", source), cells the student added after the labelled cell they
    follow as ("cell", source, None); each test cell is a ("test", grade_id,
    source, points) step (:mod:`attnbook.grading.earlier` reads the answers).
    Also returns the status notes (an edited or deleted test cell).
    """
    theirs = {_grade_id(c): c for c in submitted.cells if _grade_id(c)}
    stubs = {_grade_id(c): c for c in released.cells if _grade_id(c)}
    added: dict[str | None, list[str]] = {}
    previous = None
    for cell in submitted.cells:
        if _grade_id(cell):
            previous = _grade_id(cell)
        elif cell.cell_type == "code":
            added.setdefault(previous, []).append(cell.source)
    steps = [("cell", s, None) for s in added.get(None, [])]
    notes = []
    for cell in source.cells:
        gid, meta = _grade_id(cell), _nbgrader(cell)
        if cell.cell_type == "code" and meta.get("grade"):
            if gid not in theirs or theirs[gid].source != stubs[gid].source:
                notes.append(f"review: test cell edited or deleted ({gid}); graded with the original")
            steps.append(("test", gid, cell.source, float(meta["points"])))
        elif cell.cell_type == "code" and meta.get("solution"):
            steps.append(("cell", (theirs.get(gid) or stubs[gid]).source, cell.source))
        elif cell.cell_type == "code":
            steps.append(("cell", cell.source))
        steps += [("cell", s, None) for s in added.get(gid, [])] if gid else []
    return steps, notes


def _read_submission(path: Path):
    """(notebook or None, status): a missing, unreadable or malformed notebook is reported, never fatal."""
    import nbformat

    if not path.exists():
        return None, "not graded: notebook missing"
    if path.stat().st_size > MAX_NOTEBOOK:
        return None, f"not graded: notebook of {path.stat().st_size / 2**20:.0f} MiB (at most {MAX_NOTEBOOK >> 20})"
    try:
        nb = nbformat.reads(path.read_text(errors="replace"), as_version=4)
    except Exception:  # any malformed file
        return None, "not graded: notebook is not valid JSON"
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list) or not all(
            isinstance(c, dict) and isinstance(c.get("source"), str) and c.get("cell_type") in _CELL_TYPES
            for c in cells):
        return None, "not graded: the notebook's cells are malformed"
    return nb, None


_CELL_TYPES = ("code", "markdown", "raw")
_CELL_ID = re.compile(r"[a-zA-Z0-9-_]{1,64}")  # nbformat's pattern for a cell's id


def _grade_one(job: tuple[str, str, str]) -> dict:
    """Grade one submission (in a judge process of its own); returns its results, never raises.

    Whatever fails while grading it (reading, planning, judging) is this submission's ``grading error``:
    its status names the step, the traceback goes to ``log`` for the grading log, and every part that was
    not graded scores 0.
    """
    student, assignment, state = job
    result = {"student": student, "assignment": assignment, "status": "ok", "parts": {}}
    step = "reading the notebook"
    try:
        import torch

        from attnbook.grading import judge

        torch.set_num_threads(1)  # the checks' tensors are small: parallel judges, not threads, use the cores
        import intake

        nb, statuses = intake.read_submission(Path(state) / "submitted" / student / assignment, _read_submission)
        log = []
        if nb is not None:
            step = "planning"
            steps, planned = plan(_source(assignment), _released(assignment), nb)
            step = "judging"
            results, notes = judge.grade_cells(steps, hidden=_hidden(Path(state)), log=log)
            statuses += planned + notes + [f"review: {f}" for f in _flags(nb)]
            result["parts"] = {gid: vars(r) for gid, r in results.items()}
        result["status"] = "; ".join(statuses) or "ok"
        if log:
            result["log"] = "\n".join(log)
    except Exception as err:  # this submission's failure, not the class's
        _grading_error(result, step, err)
    return _complete(result)


def _complete(result: dict) -> dict:
    """``result`` with a part for every graded cell of its assignment: 0 and "not graded" where none."""
    for gid, cell in _test_cells(_source(result["assignment"])).items():
        points = float(cell.metadata["nbgrader"]["points"])
        result["parts"].setdefault(gid, {"score": 0.0, "max_score": points, "message": "not graded"})
    return result


def _judge_failed(job: tuple[str, str, str], failure) -> dict:
    """The result of a submission whose judge process died or ran out of time: 0 everywhere, and why."""
    student, assignment, _ = job
    return _complete({"student": student, "assignment": assignment, "parts": {}, "log": failure.log,
                      "status": f"grading error: {failure.why}"})


@functools.cache
def _read(folder: Path, assignment: str):
    """The notebook of ``assignment`` in ``folder``, read once per process (callers never change it)."""
    import nbformat

    return nbformat.read(folder / assignment / NOTEBOOK, as_version=4)


def _source(assignment: str):
    return _read(SOLUTIONS, assignment)


def _released(assignment: str):
    return _read(CHAPTERS, assignment)


def _hidden(state: Path) -> list[Path]:
    """Folders the sandbox hides: the course, the grading state, attnbook's source, nbgrader's exchange."""
    import attnbook

    return [ROOT, state.resolve(), Path(attnbook.__file__).resolve().parent, Path("/srv/nbgrader")]


def _feedback_notebook(nb, results: dict, released, notice: str | None = None):
    """The submission as the autograded notebook: ``notice`` (what happened to the submission as a whole)
    first, then the student's cells (sources, ids, tags, attachments, and nbgrader metadata only for
    the ids the gradebook knows), test cells as released, each with the judge's words; a test cell the
    student deleted or renamed comes at the end, with its words."""
    import nbformat

    stubs = _test_cells(released)
    known = {_grade_id(c) for c in released.cells if _grade_id(c)}
    out = nbformat.v4.new_notebook(metadata={k: nb.metadata[k] for k in ("kernelspec", "language_info")
                                             if isinstance(nb.metadata.get(k), dict)})
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell}
    if notice:
        out.cells.append(nbformat.v4.new_markdown_cell(notice, id="grading-notice"))  # ids: the same page each run
    for cell in nb.cells:
        gid = _grade_id(cell)
        new = make[cell.cell_type](source=cell.source)
        if isinstance(cell.get("id"), str) and _CELL_ID.fullmatch(cell["id"]):
            new["id"] = cell["id"]  # the same feedback page for the same submission, every time
        tags = cell.metadata.get("tags") if isinstance(cell.get("metadata"), dict) else None
        if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
            new.metadata["tags"] = tags
        if _nbgrader(cell) and gid in known:  # an id the gradebook lacks stops nbgrader's feedback (NoResultFound)
            new.metadata["nbgrader"] = _nbgrader(cell)
        if cell.get("attachments") and cell.cell_type != "code":
            new["attachments"] = cell["attachments"]
        if gid in results and cell.cell_type == "code":
            new.source = stubs[gid].source
            new.outputs = [nbformat.v4.new_output("stream", name="stdout", text=results[gid]["message"] + "\n")]
        out.cells.append(new)
    shown = {_grade_id(c) for c in out.cells if c.cell_type == "code"}
    for gid in [g for g in stubs if g in results and g not in shown]:
        same_id = {"id": f"missing-{gid}"[:64]} if _CELL_ID.fullmatch(gid) else {}
        cell = nbformat.v4.new_code_cell(stubs[gid].source, metadata={"nbgrader": _nbgrader(stubs[gid])}, **same_id)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=results[gid]["message"] + "\n")]
        out.cells.append(cell)
    return out


def _record(db_url: str, results: list[dict], submitted: Path) -> None:
    """Write the submissions' scores into the gradebook (the judge's numbers only), in one session.

    Each grade is marked autograded (``needs_manual_grade`` false: the formgrader shows the score, not
    "needs manual grading") and each submission gets the time of its ``timestamp.txt``, as nbgrader's
    own autograde records them (the formgrader counts a submission autograded when the two times agree).
    A submission that cannot be recorded is rolled back and gets a ``grading error`` status."""
    from nbgrader.api import Gradebook

    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")  # SQLAlchemy's notes on nbgrader's sessions
        for result in results:
            student, assignment = result["student"], result["assignment"]
            try:
                gb.update_or_create_student(student)
                gb.update_or_create_submission(assignment, student,
                                               timestamp=_timestamp(submitted / student / assignment))
                for gid, part in result["parts"].items():
                    grade = gb.find_grade(gid, Path(NOTEBOOK).stem, assignment, student)
                    grade.auto_score, grade.manual_score, grade.needs_manual_grade = part["score"], None, False
                gb.db.commit()
            except Exception as err:  # this submission's row only
                gb.db.rollback()
                _grading_error(result, "recording the grades", err)


def _recorded(db_url: str) -> set[tuple[str, str]]:
    """(student, assignment) of every submission the gradebook holds, in one query."""
    from nbgrader.api import Assignment, Gradebook, SubmittedAssignment

    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        return set(gb.db.query(SubmittedAssignment.student_id, Assignment.name).join(Assignment).all())


def _timestamp(folder: Path):
    """The submission time in ``folder/timestamp.txt`` (nbgrader's format, as UTC), or None without one.

    >>> _timestamp(Path("/nowhere")) is None
    True
    """
    from nbgrader.utils import parse_utc

    try:
        return parse_utc((folder / "timestamp.txt").read_text().strip() or None)
    except (OSError, ValueError, OverflowError):  # no file, or not a time
        return None


def _grading_error(result: dict, step: str, err: BaseException) -> None:
    """Note in ``result`` that ``step`` failed for it: in its status, and the traceback in its log."""
    note = f"grading error: {step} ({type(err).__name__}: {str(err)[:200]})"
    result["status"] = note if result["status"] == "ok" else f"{result['status']}; {note}"
    result["log"] = result.get("log", "") + f"{step}:\n{traceback.format_exc()}"


def _write_results(result: dict, nbgrader: Nbgrader, regraded: bool = True) -> None:
    """One submission's results JSON and autograded notebook (with the exchange's files beside it).
    A submission graded again replaces what an earlier one left; one kept from an earlier run gets only
    the files it lacks."""
    import nbformat

    student, assignment = result["student"], result["assignment"]
    target = nbgrader.state / "results" / student / f"{assignment}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({k: v for k, v in result.items() if k != "log"}, indent=1, sort_keys=True) + "\n")
    submitted = nbgrader.state / "submitted" / student / assignment
    import intake
    import late

    autograded = nbgrader.state / "autograded" / student / assignment / NOTEBOOK
    if regraded:
        shutil.rmtree(autograded.parent, ignore_errors=True)
    elif autograded.exists():
        return
    nb, _ = intake.read_submission(submitted, _read_submission)
    notice = intake.notice(result["status"], late.describe(result.get("late")))
    # A notebook that could not be read gets a feedback page too: the released one, saying why.
    autograded.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(_feedback_notebook(_released(assignment) if nb is None else nb, result["parts"],
                                      _released(assignment), notice), autograded)
    if submitted.is_dir():
        for extra in submitted.iterdir():  # timestamp.txt, the exchange's secret
            if extra.is_file() and not extra.is_symlink() and not extra.name.endswith(".ipynb"):
                shutil.copy2(extra, autograded.parent / extra.name)


def _judge_all(jobs_list: list, jobs: int, graded: list[str], nbgrader: Nbgrader) -> list[dict]:
    """Every submission's result, each judged in a process of its own (``jobs`` at once) while nbgrader
    records the assignments' cells; a judge that dies or runs past its budget is its submission's error."""
    import threading

    from attnbook.grading import pool, sandbox

    failed: list[BaseException] = []

    def generate() -> None:
        try:
            nbgrader.generate_each(graded)
        except Exception as err:  # raised again below, in the main thread
            failed.append(err)

    generating = threading.Thread(target=generate)
    generating.start()
    limits = sandbox.limits()
    outcomes = pool.run_each(_grade_one, jobs_list, workers=jobs, budget=limits["submission_seconds"] + 120,
                             memory_bytes=int(limits["judge_memory_gib"] * 2**30))
    generating.join()
    if failed:  # the grader itself is broken: no grades.csv
        raise failed[0]
    return [out if isinstance(out, dict) else _judge_failed(job, out)
            for job, out in zip(jobs_list, outcomes, strict=True)]


def grade(submissions: Path | None, state: Path, out: Path, jobs: int, require_sandbox: bool = False,
          student: str | None = None, assignment: str | None = None) -> int:
    """Grade the submissions that are new or changed since the last run (all of ``student``'s, or of
    ``assignment``, when either is given), keep the others' results, and write every output for all."""
    from attnbook.grading import sandbox

    if why := sandbox.refusal(strict=require_sandbox):
        print(f"not grading: {why}", file=sys.stderr)
        return 2
    if assignment is not None and assignment not in assignments():
        print(f"--assignment: expected one of {', '.join(assignments())}, got {assignment!r}", file=sys.stderr)
        return 2
    os.environ["PATH"] = _path()
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
    chosen = None
    if student is not None or assignment is not None:
        chosen = [p for p in pairs if student in (None, p[0]) and assignment in (None, p[1])]
        if not chosen:
            print(f"nothing to grade: no submission of {student or 'any student'} for {assignment or 'any assignment'}"
                  f" in {submitted}", file=sys.stderr)
            return 2
    out.unlink(missing_ok=True)  # a run that is stopped half-way leaves no grades.csv to trust
    import feedback_pages
    import gradecache
    import late

    from attnbook.grading import hidden_cases, judge

    todo, kept, keys, notes = gradecache.select(nbgrader.state, pairs, chosen)
    swept = sandbox.sweep()  # what killed runs left: sandbox folders, empty cgroups
    if swept:
        print(f"removed what an earlier run left: {', '.join(swept)}")
    recorded = _recorded(nbgrader.db_url)
    unrecorded = [p for p in kept if p not in recorded]  # a gradebook made afresh keeps no earlier grade
    graded = sorted({a for _, a in todo + unrecorded})
    # The hidden cases are read from here (or $ATTNBOOK_HIDDEN_CASES), never from the installed package, and once,
    # with every check, before the judges fork; a part without its hidden cases stops the run.
    os.environ.setdefault(hidden_cases.ENV, str(HIDDEN_CASES))
    try:
        for name in sorted({a for _, a in todo}):
            for cell in _test_cells(_source(name)).values():
                for call in judge.parse_test_cell(cell.source):
                    judge.package_sources(tuple(sorted(call.check.forbidden)))
                    call.check.hidden  # noqa: B018 (loads the part's hidden cases)
    except (LookupError, FileNotFoundError) as err:
        print(f"not grading: {err}", file=sys.stderr)
        return 2
    fresh = _judge_all([(s, a, str(nbgrader.state)) for s, a in todo], jobs, graded, nbgrader)
    results = sorted(fresh + list(kept.values()), key=lambda r: (r["student"], r["assignment"]))
    due = late.apply(results, nbgrader.state, nbgrader.db_url)  # every result: a changed deadline counts too
    _record(nbgrader.db_url, fresh + [kept[p] for p in unrecorded], submitted)
    late.record(nbgrader.db_url, results, Path(NOTEBOOK).stem, due)
    for result, regraded in [(r, True) for r in fresh] + [(r, False) for r in kept.values()]:
        try:
            _write_results(result, nbgrader, regraded)
        except Exception as err:  # this submission's files only
            _grading_error(result, "writing the results", err)
    log = [feedback_pages.write_pages(nbgrader, [(r["student"], r["assignment"]) for r in fresh], list(kept))]
    log += [f"--- {r['student']} / {r['assignment']}: {r['status']}\n{r['log']}\n" for r in results if r.get("log")]
    (nbgrader.state / "grading.log").write_text("".join(log))
    write_csv(results, out)
    for result in fresh:
        gradecache.store(nbgrader.state, result, keys[result["student"], result["assignment"]])
    sandbox.sweep()
    print(f"graded {len(fresh)} submissions, kept the results of {len(kept)} graded before; wrote {out} and "
          f"feedback in {nbgrader.state / 'feedback'} (sandbox: {sandbox.isolation()}; "
          f"processes: {sandbox.describe()['processes']})")
    for note in notes:
        print(note, file=sys.stderr)
    broken = [f"{r['student']}/{r['assignment']}" for r in results if "grading error" in r["status"]]
    if broken:
        print(f"{len(broken)} submissions need a look (grading error; tracebacks in "
              f"{nbgrader.state / 'grading.log'}): {', '.join(broken)}", file=sys.stderr)
    return 0


def write_csv(results: list[dict], out: Path) -> None:
    """grades.csv: a row per submission, a column per graded cell (assignments in order, cells in notebook
    order), the score before any late penalty, and the late columns of :func:`late.columns`."""
    import late

    columns = {a: list(_test_cells(_source(a))) for a in sorted({r["assignment"] for r in results})}
    rows = []
    for result in results:
        cells = columns[result["assignment"]]
        row = {"student": result["student"], "assignment": result["assignment"]}
        row.update({gid: round(result["parts"][gid]["score"], 2) for gid in cells})
        row["score"] = round(sum(row[gid] for gid in cells), 2)
        row["max_score"] = sum(result["parts"][gid]["max_score"] for gid in cells)
        row.update(late.columns(result))
        row["status"] = result["status"]
        rows.append(row)
        print(f"{row['student']:>20} {row['assignment']}: {row['score']:g}/{row['max_score']:g}  {row['status']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    graded = [gid for cells in columns.values() for gid in cells]
    fields = ["student", "assignment", *graded, "score", "max_score", "timestamp", "late_hours", "penalty", "status"]
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, restval="")
        writer.writeheader()
        writer.writerows(rows)
    tmp.replace(out)


def lms(args: argparse.Namespace) -> int:
    """``collect`` (intake.py) or ``export`` (export.py); a bad zip, roster or zone is a clear error."""
    import zipfile

    import export
    import intake
    import late

    state = args.state.resolve()
    try:
        if args.command == "collect":
            known = {a: {_grade_id(c) for c in _released(a).cells} - {None} for a in assignments()}
            rules = late.read_deadlines(state / late.DEADLINES) if (state / late.DEADLINES).exists() else {}
            lines = intake.collect(args.zip, state / "submitted", args.assignment or known, args.roster, args.zone,
                                   MAX_NOTEBOOK, lambda a, s: late.rule(rules, a, s).due)
        else:
            lines = [f"wrote {p}" for p in export.export(gradebook_url(state), state, args.roster)]
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
                    help="refuse without bubblewrap even if ATTNBOOK_GRADING_SANDBOX=none (hostile submissions)")
    gr.add_argument("--student", help="grade this student's submissions again, changed or not (and no other)")
    gr.add_argument("--assignment", help="grade this assignment's submissions again (with --student: that one)")
    co = sub.add_parser("collect", help="import an LMS download (Canvas, Moodle, zip_collect) into submitted/")
    co.add_argument("zip", type=Path, help="the downloaded zip, or the folder it unpacks to")
    co.add_argument("--assignment", choices=assignments(), help="the assignment it holds (default: its notebooks say)")
    co.add_argument("--roster", type=Path, default=None, help="CSV: the LMS's student ids -> the course's")
    co.add_argument("--zone", default="UTC", help="time zone of the times in the zip (default UTC)")
    ex = sub.add_parser("export", help="canvas.csv and totals.csv from the gradebook, late penalties applied")
    ex.add_argument("--roster", type=Path, default=None, help="Canvas's gradebook export with a student column")
    args = parser.parse_args(argv)
    if args.command == "release":
        return release(args.state, args.check)
    if args.command in ("collect", "export"):
        return lms(args)
    return grade(args.submissions, args.state, args.out or args.state / "grades.csv", max(1, args.jobs),
                 args.require_sandbox, args.student, args.assignment)


if __name__ == "__main__":
    sys.exit(main())
