"""The judge: grade one submitted notebook with its code in a sandboxed worker and the checks here.

The judge is a clean process: it never imports or runs the student's code. It
reads what to grade from the *source* notebook (``solutions/``): each test
cell is parsed (never executed) into the calls it makes — its check, the
names of the student's objects, its points. For every graded part it

1. sends the worker the notebook's cells up to that test cell (the
   student's cells and added cells as submitted, locked cells as released)
   and a copy of attnbook in which the part's ``forbidden`` references are
   stubs that raise (:func:`package_sources`);
2. runs the check here on proxies of the student's objects, exactly as the
   test cell would (the visible call, then the hidden one), capturing what the
   check prints as the part's feedback;
3. takes the score from the check's return value only: the points when the
   check passes, its partial credit, 0 when it raises — capped at the cell's
   points; a crash of the worker or of the check costs that part only.

Cells that run out of time, or end the worker, before their part begins would
do so again for every later part, so those parts score 0 without being run
(one time limit per hanging notebook, one worker per notebook that kills it,
not one per part).

A part below full whose code runs the student's earlier parts that scored
below full is judged a second time with those replaced by the solution's
(:mod:`.earlier`); it keeps the better score, and its feedback says which
earlier part to fix. The second run costs one more part's time limit at most,
and never happens for a part that scored full.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attnbook.grading.errors import CheckFailed
from attnbook.grading.seam import WORKER_KEEPS, stripped

from . import _cgroups, earlier, sandbox
from ._remote import CellsFailed, Report, Worker, WorkerGone
from .notes import Note, unique
from .plan import Cell, Plan, Test
from .records import PartRecord
from .testcells import TestCall, checked_names, parse_test_cell  # noqa: F401 (the judge's, for its users)

PACKAGE = Path(importlib.import_module("attnbook").__path__[0])  # the folder of its __init__.py


# ---------------------------------------------------------- worker's attnbook


def defining_path(path: str) -> str:
    """Where the function or class ``path`` names is defined, when a package only re-exports it.

    >>> defining_path("attnbook.gpt.generate"), defining_path("attnbook.gpt.sampling.generate")
    ('attnbook.gpt.sampling.generate', 'attnbook.gpt.sampling.generate')
    """
    module, _, name = path.rpartition(".")
    obj: Any = getattr(importlib.import_module(module), name, None)
    home = getattr(obj, "__module__", None)
    return f"{home}.{obj.__name__}" if isinstance(home, str) and home.startswith("attnbook.") else path


@functools.cache
def package_sources(forbidden: tuple[str, ...]) -> tuple[dict, list]:
    """attnbook as the worker gets it for a part: (module name -> source, package names).

    The attnbook names in ``forbidden`` are stubs where they are defined (:func:`.seam.stripped`);
    the worker refuses the others at run time.
    """
    by_module: dict[str, dict[str, str]] = {}
    for path in forbidden:
        if path.startswith("attnbook."):
            module, _, name = defining_path(path).rpartition(".")
            by_module.setdefault(module, {})[name] = path
    sources, packages = {}, []
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(PACKAGE.parent).with_suffix("")
        if rel.parts[1:2] == ("grading",) and (len(rel.parts) > 3 or file.name not in WORKER_KEEPS):
            continue
        name = ".".join(rel.parts[:-1] if file.name == "__init__.py" else rel.parts)
        if file.name == "__init__.py":
            packages.append(name)
        source = file.read_text()
        sources[name] = stripped(source, name, by_module.pop(name)) if name in by_module else source
    if by_module:
        raise ValueError(f"forbidden names in unknown modules: {sorted(by_module)}")
    return sources, packages


# ----------------------------------------------------------------- grading


@dataclass
class Result:
    """One graded part: its score, its maximum and the check's words; ``hidden``: the visible checks passed
    and the points were lost to the hidden cases (whose words a service shows only once they are released)."""

    score: float
    max_score: float
    message: str
    hidden: bool = False

    def record(self) -> PartRecord:
        """As a submission's record holds it (JSON).

        >>> Result(1.0, 2.0, "half").record(), Result(1.0, 2.0, "a hidden case", hidden=True).record()["hidden"]
        ({'score': 1.0, 'max_score': 2.0, 'message': 'half'}, True)
        """
        kept: PartRecord = {"score": self.score, "max_score": self.max_score, "message": self.message}
        if self.hidden:
            kept["hidden"] = True
        return kept


class Capped(io.TextIOBase):
    """A text sink that keeps the first ``limit`` characters written to it and counts the rest.

    >>> out = Capped(5); _ = out.write("abc"); _ = out.write("defgh")
    >>> out.getvalue()
    'abcde\\n… (3 more characters not shown)'
    """

    def __init__(self, limit: int):
        self.kept: list[str] = []
        self.limit, self.size, self.dropped = limit, 0, 0  # size: characters kept

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self.limit - self.size
        self.kept.append(text[:max(room, 0)])
        self.size += len(self.kept[-1])
        self.dropped += len(text) - len(self.kept[-1])
        return len(text)

    def getvalue(self) -> str:
        note = f"\n… ({self.dropped} more characters not shown)" if self.dropped else ""
        return "".join(self.kept) + note


def score_test_cell(calls: Iterable[TestCall], objects: Mapping[str, object], max_score: float) -> tuple[float, str]:
    """(score, the failure's words) of a test cell whose checks take the student's ``objects`` by name.

    The calls run in order, as the cell writes them (the visible check, then
    the hidden one with its points); the score is the last one's value, capped
    at ``max_score`` (``None``: full marks), or 0 with the words of the first
    :class:`CheckFailed`. The judge scores a part so, on proxies; the
    in-process graders (``tests/exercise_harness.py``, ``autograder/attnbook_course/mutants.py``)
    on the objects themselves. A name the objects lack is passed as ``None``.

    >>> from attnbook.grading.engine import Case, Part
    >>> def check(inc):
    ...     def one(x):
    ...         if inc(x) != x + 1:
    ...             raise CheckFailed("inc is off by one")
    ...     return one
    >>> part = Part("check_inc", (Case("one", lambda: (1,)),), check, own_hidden=(Case("two", lambda: (2,)),))
    >>> cell = (TestCall(part, ("inc",), None), TestCall(part, ("inc",), 2))  # check_inc(inc); ..., points=2)
    >>> score_test_cell(cell, {"inc": lambda x: x + 1}, 2)
    The visible check passed.
    All 2 checks passed.
    (2.0, '')
    >>> score_test_cell(cell, {"inc": lambda x: x}, 2)
    (0.0, 'inc is off by one')
    """
    score, failure, _ = scored(calls, objects, max_score)
    return score, failure


def scored(calls: Iterable[TestCall], objects: Mapping[str, object], max_score: float) -> tuple[float, str, bool]:
    """:func:`score_test_cell`, and whether the points were lost past the visible calls (a hidden call's).

    >>> from attnbook.grading.engine import Case, Part
    >>> def check(inc):
    ...     def one(x):
    ...         if inc(x) != x + 1:
    ...             raise CheckFailed("inc is off by one")
    ...     return one
    >>> part = Part("check_inc", (Case("one", lambda: (1,)),), check, own_hidden=(Case("two", lambda: (7,)),))
    >>> cell = (TestCall(part, ("inc",), None), TestCall(part, ("inc",), 2))
    >>> scored(cell, {"inc": lambda x: x + 1 if x < 5 else x}, 2)
    The visible check passed.
    Some checks failed:
    - two: inc is off by one
    (1.0, '', True)
    """
    value, visible = None, True
    try:
        for call in calls:
            visible = call.points is None
            value = call.check(*(objects.get(n) for n in call.names), points=call.points)
    except CheckFailed as err:
        return 0.0, str(err), not visible
    score = max_score if value is None else min(max(float(value), 0.0), max_score)
    return score, "", score < max_score


def open_worker(workdir: Path, hidden: list[Path], group: _cgroups.Cgroup | None = None) -> Worker:
    """A worker (not yet started) for the sandbox folder ``workdir``, with ``hidden`` out of its sight,
    in the control group ``group`` (see :func:`sandbox.new_cgroup`) when there is one."""
    sandbox.prepare(workdir)
    command, cwd = sandbox.worker_command(workdir, hidden)
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OMP_NUM_THREADS": "1", "HOME": str(workdir),
           "IPYTHONDIR": f"{workdir}/.ipython"}
    limits = sandbox.limits()
    return Worker(command, cwd=cwd, env=env, part_timeout=limits["part_seconds"],
                  preexec=functools.partial(sandbox.apply_limits, group), max_frame=int(limits["frame_mib"] * 2**20),
                  start_timeout=limits["submission_seconds"])


FAILED_CELLS = ("This part could not be graded: the notebook's cells before it {} for an earlier part, "
                "so they were not run again.")
OUT_OF_TIME = "This part could not be graded: the submission ran past its time budget ({:g} s) before it began."
GRADING_ERROR = "This part could not be graded: the grader failed on it. Your instructor has been told."


class Judgement:
    """One submission's judging in one worker: its deadline, its notes, the forbidden references its code
    reached, and the cells that failed before a part began (ran out of time, or ended the worker).

    The worker is its process only: each part's :class:`._remote.Report` comes back from
    :meth:`Worker.end_part` and is kept here. A quiet run (a part judged again with earlier parts
    replaced, :meth:`regrade`) keeps its report only when its grade is kept.

    >>> judgement = Judgement(Worker(["python"], cwd=".", env={}, part_timeout=120.0), budget=600)  # not started
    >>> judgement.failed = (["x = 1", "while True: pass"], "ran past the time limit (120 s)")
    >>> print(judgement.failed_before(["x = 1", "while True: pass", "y = x"]))  # doctest: +NORMALIZE_WHITESPACE
    This part could not be graded: the notebook's cells before it ran past the time limit (120 s)
    for an earlier part, so they were not run again.
    >>> print(judgement.failed_before(["x = 1"]))
    None
    """

    def __init__(self, worker: Worker, budget: float):
        self.worker, self.budget = worker, budget
        self.end_by = time.monotonic() + budget  # no part runs past it
        self.notes: list[Note] = []
        self.called: set[str] = set()
        self.failed: tuple[list[str], str] | None = None

    def keep(self, report: Report) -> None:
        """Add what a part (or a close of the worker) reached to the submission's."""
        self.notes += report.notes
        self.called |= report.called

    def failed_before(self, cells: list[str]) -> str | None:
        """The feedback of a part whose ``cells`` begin with the cells that already failed before a part
        began; None for any other part. Those cells would fail again: a notebook that hangs, or kills the
        worker, in its third cell costs one part's time, not one per later part."""
        if self.failed is None:
            return None
        failed, how = self.failed
        return FAILED_CELLS.format(how) if cells[:len(failed)] == failed else None

    def part(self, cells: list[str], calls: tuple[TestCall, ...], max_score: float, *,
             quiet: bool = False) -> tuple[Result, Report]:
        """Grade one test cell: start its part in the worker, run its calls here on proxies; the result and
        what the part reached (not yet kept: :meth:`keep`).

        What the checks print is the part's feedback, up to ``ATTNBOOK_GRADING_OUTPUT_CHARS`` characters.
        """
        forbidden = tuple(sorted({name for c in calls for name in c.check.forbidden}))
        kernels = sorted({k for c in calls for k in c.check.kernels})
        in_calls = sorted({n for c in calls for n in c.check.refused_in_calls})
        names = sorted({n for c in calls for n in c.names})
        out = Capped(int(sandbox.limits()["output_chars"]))
        score, notes, hidden = 0.0, [], False
        with contextlib.redirect_stdout(out):
            try:
                students = self.worker.start_part(package_sources(forbidden), cells, names, kernels,
                                                  [f for f in forbidden if not f.startswith("attnbook.")],
                                                  in_calls=in_calls, end_by=self.end_by, quiet=quiet)
                score, failure, hidden = scored(calls, students, max_score)
                if failure:
                    print(failure)
            except WorkerGone as gone:
                if isinstance(gone, CellsFailed) and not quiet:
                    self.failed = (list(cells), gone.how)
                notes.append(Note("limit", str(gone)))
                print(f"This part could not be graded: {gone}.")
            except Exception as err:  # a check that cannot handle what came back: this part only
                notes.append(Note("review", "the checker failed on a part"))
                print(f"The checker could not handle what your code returned ({type(err).__name__}).")
            finally:
                report = self.worker.end_part()
        report.notes[:0] = notes
        return Result(round(score, 2), float(max_score), out.getvalue().strip(), hidden), report

    def regrade(self, plan: Plan, k: int, results: dict[str, Result], cells: list[str]) -> Result:
        """Part ``found[k]`` judged again with the earlier parts below full that its code runs replaced by
        the solution's (:mod:`.earlier`), when that scores more than ``results``' first grade; else the
        first grade.

        Not tried for a part that scored full, whose ``cells`` ran out of time, or once the submission's
        time is spent. What the student's code raises or warns in the second run is not shown (the
        solution's code is in it); its notes are kept only when its grade is.
        """
        part, first = plan.parts[k], results[plan.parts[k].grade_id]
        below = {p.number for p in plan.parts[:k] if results[p.grade_id].score < results[p.grade_id].max_score}
        rerun, swapped = (earlier.rerun_cells(plan.steps, plan.parts, k, below) if first.score < first.max_score
                          else ([], []))
        if not rerun or self.failed_before(cells) or time.monotonic() >= self.end_by:
            return first
        second, report = self.part(rerun, plan.calls[part.grade_id], first.max_score, quiet=True)
        self.called |= report.called  # whatever the grade: the student's code reached them
        if second.score <= first.score:
            return first
        self.notes += report.notes
        note = earlier.note(part.number, swapped, full=second.score == second.max_score)
        return Result(second.score, second.max_score, f"{note}\n{second.message}", second.hidden)

    def step(self, test: Test, cells: list[str], plan: Plan, k: int, results: dict[str, Result],
             log: list[str] | None) -> Result:
        """The grade of the test cell ``test`` (the ``k``-th part of ``plan``), whose ``cells`` come before
        it: not run once the submission's time is spent or when its cells failed before; the grader's own
        failure costs this part only (its traceback appended to ``log``)."""
        if time.monotonic() >= self.end_by:
            self.notes.append(Note("limit", f"time limit exceeded (the whole submission, {self.budget:g} s)"))
            return Result(0.0, float(test.points), OUT_OF_TIME.format(self.budget))
        if failed := self.failed_before(cells):
            return Result(0.0, float(test.points), failed)
        try:
            results[test.grade_id], report = self.part(list(cells), plan.calls[test.grade_id], test.points)
            self.keep(report)
            return self.regrade(plan, k, results, cells)
        except Exception as err:  # the grader's own failure: this part only
            self.worker.close()
            self.keep(self.worker.take_report())
            self.notes.append(Note("grading_error", f"part {test.grade_id} ({type(err).__name__})"))
            if log is not None:
                log.append(f"part {test.grade_id}:\n{traceback.format_exc()}")
            return Result(0.0, float(test.points), GRADING_ERROR)

    def outcome(self) -> list[Note]:
        """The submission's notes: each once, and the forbidden references its code reached."""
        reached = sorted(self.called)[:5]
        return unique(self.notes) + ([Note("review", f"calls a forbidden reference ({', '.join(reached)})")]
                                     if reached else [])


def grade_cells(plan: Plan, hidden: list[Path],
                log: list[str] | None = None) -> tuple[dict[str, Result], list[Note]]:
    """Grade a submission given as ``plan`` (:class:`.plan.Plan`: its cells and test cells, in order, each
    test cell parsed and each part numbered once).

    Returns grade_id -> :class:`Result` and the notes. A part whose cells begin with cells that ran out of
    time or ended the worker for an earlier part is not run: it scores 0 and says why
    (:meth:`Judgement.failed_before`); so do the parts left when the submission's time budget
    (``ATTNBOOK_GRADING_SUBMISSION_SECONDS``) is spent, and no part runs past it. A part the grader itself
    fails on scores 0 with a ``grading_error`` note (its traceback appended to ``log``), and the others are
    graded. A part below full that runs the student's earlier parts below full may be judged again with
    those replaced (:meth:`Judgement.regrade`). The sandbox's folder and cgroup are removed whatever happens.
    """
    number = {part.grade_id: k for k, part in enumerate(plan.parts)}
    workdir, group = sandbox.workdir(), sandbox.new_cgroup()
    judgement = Judgement(open_worker(workdir, hidden, group), sandbox.limits()["submission_seconds"])
    results: dict[str, Result] = {}
    cells: list[str] = []
    try:
        for step in plan.steps:
            if isinstance(step, Cell):
                cells.append(step.source)
            else:
                results[step.grade_id] = judgement.step(step, cells, plan, number[step.grade_id], results, log)
    finally:
        judgement.worker.close()
        judgement.keep(judgement.worker.take_report())
        if group is not None and not group.remove():
            judgement.notes.append(Note("review", "the sandbox's cgroup could not be removed"))
        if not sandbox.remove_tree(workdir):
            judgement.notes.append(Note("review", f"the sandbox folder {workdir} could not be removed"))
    return results, judgement.outcome()
