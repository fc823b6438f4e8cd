"""``attnbook-course grade``: grade a class's submissions incrementally and write every output.

The submissions are copied into ``STATE/submitted/`` (adding and updating,
never deleting); those new or changed since the last run (``gradecache.py``)
are judged (``judging.py``), the others keep their results; the scores and the
late penalties go into the gradebook (``recording.py``, ``late.py``), each
submission gets its results JSON and feedback (``feedback_notebook.py``,
``feedback_pages.py``), and the class gets ``grades.csv`` and ``grading.log``.
"""

from __future__ import annotations

import csv
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

from . import (
    HIDDEN_CASES,
    csvcells,
    feedback_pages,
    gradecache,
    intake,
    judging,
    late,
    names,
    notes,
    recording,
    shards,
    submission,
)
from .feedback_notebook import write_results
from .nbgrader_run import NOTEBOOK, Nbgrader, assignments, gradebook_url
from .records import SubmissionRecord


@dataclass(frozen=True)
class Request:
    """What ``attnbook-course grade`` is asked to do.

    ``submissions`` (or None: only what ``STATE/submitted/`` holds) are graded into ``state``, the grades
    written to ``out``, ``jobs`` at once; ``student`` and ``assignment`` grade those submissions again
    (and no other); ``shard`` grades only that shard's (``shards.py``).

    >>> Request(None, Path("s"), Path("s/grades.csv"), student="ada").named("ada", "02-transformer")
    True
    """

    submissions: Path | None
    state: Path
    out: Path
    jobs: int = 1
    require_sandbox: bool = False
    student: str | None = None
    assignment: str | None = None
    shard: shards.Shard | None = None

    def named(self, student: str, assignment: str) -> bool:
        """Whether --student and --assignment (when given) name this submission."""
        return self.student in (None, student) and self.assignment in (None, assignment)


class NotGrading(Exception):
    """Why a run stops before anyone is judged (exit status 2)."""


def grade(request: Request) -> int:
    """Grade the submissions that are new or changed since the last run (all of ``request.student``'s, or of
    its ``assignment``, when either is given), keep the others' results, and write every output for all;
    with a shard, only for the submissions of that shard."""
    from . import sandbox

    try:
        deadlines = _checked(request)
        nbgrader = Nbgrader(request.state)
        pairs, chosen = _submissions(request, nbgrader.state / "submitted")
        if request.shard is not None and not pairs:  # a small class, or many shards: none falls to this one
            shards.start(nbgrader.state, request.shard)
            shards.finish(nbgrader.state, request.shard, {})
            print(f"shard {request.shard[0]}/{request.shard[1]}: no submission of the class falls to it; done")
            return 0
        request.out.unlink(missing_ok=True)  # a run that is stopped half-way leaves no grades.csv to trust
        shards.start(nbgrader.state, request.shard)
        todo, kept, keys, said = gradecache.select(nbgrader.state, pairs, chosen)
        _load_checks(sorted({a for _, a in todo}))
    except NotGrading as err:
        print(err, file=sys.stderr)
        return 2
    if swept := sandbox.sweep():  # what killed runs left: sandbox folders, empty cgroups
        print(f"removed what an earlier run left: {', '.join(swept)}")
    lock = functools.partial(recording.lock, nbgrader.db_url)  # the gradebook's writers, one at a time
    with lock():  # the first to open an empty gradebook makes its tables
        done = recording.recorded(nbgrader.db_url)
    unrecorded = [p for p in kept if p not in done]  # a gradebook made afresh keeps no earlier grade
    graded = sorted({a for _, a in todo + unrecorded})
    fresh = judging.judge_all([(s, a, str(nbgrader.state)) for s, a in todo], request.jobs, graded, nbgrader, lock)
    results = sorted(fresh + list(kept.values()), key=lambda r: (r["student"], r["assignment"]))
    with lock():
        due = late.apply(results, nbgrader.state, nbgrader.db_url, deadlines)  # all: a changed deadline counts too
        recording.record(nbgrader.db_url, fresh + [kept[p] for p in unrecorded], nbgrader.state / "submitted")
        late.record(nbgrader.db_url, results, Path(NOTEBOOK).stem, due)
    pages, logfile = _write(request, nbgrader, fresh, kept, results)
    for result in fresh:
        gradecache.store(nbgrader.state, result, keys[result["student"], result["assignment"]])
    if request.shard is not None:
        shards.finish(nbgrader.state, request.shard, keys)
    sandbox.sweep()
    _summary(request, nbgrader, fresh, kept, results, said, logfile)
    counted, missing = feedback_pages.report(nbgrader.state, results, pages)
    for line in missing:  # each with nbgrader's reason; the grades stand, so the run still succeeds
        print(line, file=sys.stderr)
    print(counted)
    return 0


def _checked(request: Request) -> dict:
    """The settings, the sandbox, --assignment and the deadlines, checked before anything is read or
    written: a wrong deadlines.csv stops the run here, not after it. The deadlines (:func:`late.load`)."""
    from attnbook import settings

    from . import sandbox

    if malformed := settings.problems(settings.GRADING):
        raise NotGrading(f"not grading: {'; '.join(malformed)}")
    if why := sandbox.refusal(strict=request.require_sandbox):
        raise NotGrading(f"not grading: {why}")
    if request.assignment is not None and request.assignment not in assignments():
        raise NotGrading(f"--assignment: expected one of {', '.join(assignments())}, got {request.assignment!r}")
    if request.submissions is not None and not request.submissions.is_dir():
        raise NotGrading(f"no such folder of submissions: {request.submissions}")
    folders = (request.state / "submitted", request.submissions)
    try:
        return late.load(request.state, assignments(),
                         [p.name for d in folders if d and d.is_dir() for p in d.iterdir() if p.is_dir()])
    except ValueError as err:
        raise NotGrading(f"not grading: {err}") from None


def _submissions(request: Request, submitted: Path) -> tuple[list[tuple[str, str]], list[tuple[str, str]] | None]:
    """Copy the request's submissions into ``submitted/``; (the pairs of this run's shard, those named by
    --student and --assignment or None when neither is given). Only the named students' and assignments'
    folders are copied (a regrade touches no one else's), only a shard's own (shards share submitted/ and
    copy at once); never a link (:func:`intake.copy_submissions`)."""
    if request.submissions is not None:
        def wanted(s: str, a: str) -> bool:
            return request.named(s, a) and bool(shards.mine([(s, a)], request.shard))

        for line in intake.copy_submissions(request.submissions, submitted, wanted, assignments()):
            print(line, file=sys.stderr)
    for line in refused_folders(submitted):
        print(line, file=sys.stderr)
    pairs = shards.mine(class_pairs(submitted), request.shard)
    if not pairs and request.shard is None:
        raise NotGrading(f"nothing to grade: expected {submitted}/<student>/<assignment>/{NOTEBOOK}")
    if not pairs or (request.student is None and request.assignment is None):
        return pairs, None
    chosen = [p for p in pairs if request.named(*p)]
    if not chosen:
        raise NotGrading(f"nothing to grade: no submission of {request.student or 'any student'} for "
                         f"{request.assignment or 'any assignment'} in {submitted}")
    return pairs, chosen


def _load_checks(graded: list[str]) -> None:
    """Read every part's hidden cases (from ``autograder/hidden`` or ``$ATTNBOOK_HIDDEN_CASES``, never from
    the installed package) and the worker's copy of attnbook once, before the judges fork; a part without
    its hidden cases stops the run (:class:`NotGrading`)."""
    from attnbook.grading import hidden_cases

    from . import judge

    hidden_cases.default_to(HIDDEN_CASES)
    try:
        for name in graded:
            for cell in submission.test_cells(submission.source(name)).values():
                for call in judge.parse_test_cell(cell.source):
                    judge.package_sources(tuple(sorted(call.check.forbidden)))
                    call.check.hidden  # noqa: B018 (loads the part's hidden cases)
    except (LookupError, FileNotFoundError) as err:
        raise NotGrading(f"not grading: {err}") from None


def _write(request: Request, nbgrader: Nbgrader, fresh: list[SubmissionRecord],
           kept: dict[tuple[str, str], SubmissionRecord],
           results: list[SubmissionRecord]) -> tuple[feedback_pages.Pages, Path]:
    """Each submission's results JSON and feedback, the run's grading.log and grades.csv; (the feedback
    pages written, the log's path). A submission whose files fail costs only its own."""
    for result, regraded in [(r, True) for r in fresh] + [(r, False) for r in kept.values()]:
        try:
            write_results(result, nbgrader, regraded)
        except Exception as err:  # this submission's files only
            judging.grading_error(result, "writing the results", err)
    pages = feedback_pages.write_pages(nbgrader, [(r["student"], r["assignment"]) for r in fresh], list(kept))
    log = [pages.log] + [f"--- {r['student']} / {r['assignment']}: {notes.status(notes.read(r['notes']))}\n{r['log']}\n"
                         for r in results if r.get("log")]
    shard = request.shard
    logfile = (nbgrader.state if shard is None else shards.folder(nbgrader.state, shard)) / "grading.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    logfile.write_text("".join(log))
    write_csv(results, request.out)
    return pages, logfile


def _summary(request: Request, nbgrader: Nbgrader, fresh: list[SubmissionRecord],
             kept: dict[tuple[str, str], SubmissionRecord], results: list[SubmissionRecord], said: list[str],
             logfile: Path) -> None:
    """What the run did, and what needs the instructor's look."""
    from . import sandbox

    print(f"graded {len(fresh)} submissions, kept the results of {len(kept)} graded before; wrote {request.out} "
          f"and feedback in {nbgrader.state / 'feedback'} (sandbox: {sandbox.isolation()}; "
          f"processes: {sandbox.describe()['processes']})")
    for line in said:
        print(line, file=sys.stderr)
    broken = [f"{r['student']}/{r['assignment']}" for r in results if notes.errors(notes.read(r["notes"]))]
    if broken:
        print(f"{len(broken)} submissions need a look (grading error; tracebacks in "
              f"{logfile}): {', '.join(broken)}", file=sys.stderr)
    if request.shard is not None:
        print(f"shard {request.shard[0]}/{request.shard[1]} done: `attnbook-course gather` writes the class's "
              f"grades.csv once all are")


def class_pairs(submitted: Path) -> list[tuple[str, str]]:
    """(student, assignment) of every submission in ``submitted/``, sorted: folders, not links, whose names
    are a student id (``names.py``) and an assignment id (:func:`refused_folders` lists the others)."""
    if not submitted.is_dir():
        return []
    return sorted((s.name, a.name) for s in submitted.iterdir() if _plain_dir(s) and names.is_student_id(s.name)
                  for a in s.iterdir() if _plain_dir(a) and a.name in assignments())


def refused_folders(submitted: Path) -> list[str]:
    """A line for each folder of ``submitted/`` (nbgrader's exchange fills it too) that is not graded: a link,
    or a name that is not a student id."""
    if not submitted.is_dir():
        return []
    return [f"not graded: submitted/{names.shown(s.name)}: "
            + ("a link, never followed" if s.is_symlink() else "not a student id (1 to 64 of A-Z a-z 0-9 . _ @ -)")
            for s in sorted(submitted.iterdir()) if not s.name.startswith(".")
            and (s.is_symlink() or (s.is_dir() and not names.is_student_id(s.name)))]


def _plain_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def gather(state: Path, out: Path) -> int:
    """``attnbook-course gather``: the class's grades.csv and grading.log from its shards, once all are done."""
    state = state.resolve()
    try:
        results, log = shards.gather(state, class_pairs(state / "submitted"), gradebook_url(state))
    except (ValueError, OSError) as err:
        print(f"not gathered: {err}", file=sys.stderr)
        return 2
    results.sort(key=lambda r: (r["student"], r["assignment"]))
    (state / "grading.log").write_text(log)  # the shards' logs: each holds its submissions' tracebacks
    write_csv(results, out)
    print(f"gathered {len(results)} submissions from the shards; wrote {out}")
    return 0


def write_csv(results: list[SubmissionRecord], out: Path) -> None:
    """grades.csv: a row per submission, a column per graded cell (assignments in order, cells in notebook
    order), the score before any late penalty, and the late columns of :func:`late.columns`."""
    columns = {a: list(submission.test_cells(submission.source(a))) for a in sorted({r["assignment"] for r in results})}
    rows = []
    for result in results:
        cells = columns[result["assignment"]]
        scores = {gid: round(result["parts"][gid]["score"], 2) for gid in cells}
        row: dict[str, str | float] = {"student": result["student"], "assignment": result["assignment"], **scores,
                                       "score": round(sum(scores.values()), 2),
                                       "max_score": sum(result["parts"][gid]["max_score"] for gid in cells)}
        row.update(late.columns(result))
        row["status"] = notes.status(notes.read(result["notes"]))
        rows.append(row)
        print(f"{row['student']:>20} {row['assignment']}: {row['score']:g}/{row['max_score']:g}  {row['status']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    graded = [gid for cells in columns.values() for gid in cells]
    fields = ["student", "assignment", *graded, "score", "max_score", "timestamp", "late_hours", "penalty", "status"]
    tmp = out.with_suffix(".tmp")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields, restval="", quoting=csvcells.QUOTING)
        writer.writeheader()
        writer.writerows(csvcells.record(r) for r in rows)  # a student's id or file name never opens as a formula
    tmp.replace(out)
