"""Write the feedback pages of a grading run: only those that are new, each with MathJax inline and a CSP.

``attnbook-course grade`` calls :func:`write_pages` once per run. The pages of the
submissions graded now are written again (an earlier submission's page goes
first, even when the new one gets none: a notebook that is missing now); a
submission kept from an earlier run gets its page only if it has none. One
``nbgrader generate_feedback`` process writes them all (its start-up, a few
seconds, is most of the cost), from a queue folder that holds just those
submissions; then :func:`feedback_filters.finish_page` puts the book's MathJax
(``tools/book_assets.py``) inline in each page, with its Content-Security-Policy.

nbgrader reads a student id as a glob pattern (``[ab]`` matches ``a``, not
itself) and a path as a regular expression, so the queue names each student's
folder ``student-00001``…, and ``students.json`` beside them says whose it is
(``feedback_filters.GetGrades`` reads it to find the grades); the pages come
back to ``feedback/<student>/``. A page nbgrader did not write is counted, with
the reason from its log, and :func:`report` says so at the end of the run:

>>> pages = Pages("", wanted=[("[ab]", "01")], missing={("[ab]", "01"): "a reason"})
>>> report(Path("/nowhere"), [{"student": "[ab]", "assignment": "01"}], pages)
('feedback pages: 0 for 1 submissions graded (0 of 1 written now)', ['no feedback page for [ab]/01: a reason'])
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from . import ROOT, feedback_filters
from .records import SubmissionRecord

if TYPE_CHECKING:
    from .nbgrader_run import Nbgrader

NOTEBOOK = "exercises.ipynb"
PAGE = "exercises.html"


@dataclass(frozen=True)
class Pages:
    """:func:`write_pages`'s answer: nbgrader's ``log`` (for ``grading.log``), the (student, assignment) pairs
    whose page was ``wanted``, those ``written``, and why each of the others is ``missing``."""

    log: str
    wanted: list[tuple[str, str]] = field(default_factory=list)
    written: list[tuple[str, str]] = field(default_factory=list)
    missing: dict[tuple[str, str], str] = field(default_factory=dict)


def write_pages(nbgrader: Nbgrader, regraded: list[tuple[str, str]], kept: list[tuple[str, str]]) -> Pages:
    """Write the pages of the (student, assignment) pairs ``regraded`` now and of those ``kept`` that lack
    one, with ``nbgrader`` (``nbgrader_run.Nbgrader``, which knows the state folder)."""
    state = nbgrader.state
    for student, assignment in regraded:
        shutil.rmtree(state / "feedback" / student / assignment, ignore_errors=True)
    wanted = [(s, a) for s, a in regraded + kept if (state / "autograded" / s / a / NOTEBOOK).exists()
              and not (state / "feedback" / s / a / PAGE).exists()]
    if not wanted:
        return Pages("nbgrader generate_feedback: no page to write\n")
    folders = {s: f"student-{i:05d}" for i, s in enumerate(dict.fromkeys(s for s, _ in wanted), 1)}
    written, missing = [], {}
    with tempfile.TemporaryDirectory(dir=state) as tmp:  # autograded/ for the wanted pages only, and their pages
        queue, out = Path(tmp) / "autograded", Path(tmp) / "feedback"
        for student, assignment in wanted:
            shutil.copytree(state / "autograded" / student / assignment, queue / folders[student] / assignment)
        (queue / feedback_filters.QUEUE_NAMES).write_text(json.dumps({f: s for s, f in folders.items()}))
        done = nbgrader("generate_feedback", "*", "--force", f"--CourseDirectory.autograded_directory={queue}",
                        f"--CourseDirectory.feedback_directory={out}", check=False)
        log = done.stdout + done.stderr
        script = _book_assets().mathjax()
        for student, assignment in wanted:
            made = out / folders[student] / assignment
            try:
                if not (made / PAGE).exists():
                    raise ValueError(_reason(log, str(queue / folders[student] / assignment)))
                (made / PAGE).write_text(feedback_filters.finish_page((made / PAGE).read_text(), script))
            except ValueError as err:  # nbgrader failed on this one, or its page is not the one expected
                missing[student, assignment] = str(err)
                continue
            target = state / "feedback" / student / assignment
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(made, target)
            written.append((student, assignment))
        for student, folder in folders.items():  # the log names the students, not the queue's folders
            log = log.replace(f"{queue}/{folder}/", f"{student}/").replace(f"'{folder}'", repr(student))
    lines = "".join(f"no page for {s}/{a}: {why}\n" for (s, a), why in missing.items())
    return Pages(f"$ nbgrader generate_feedback '*' ({len(wanted)} pages wanted, {len(written)} written)\n"
                 f"{log}{lines}\n", wanted, written, missing)


def _reason(log: str, folder: str) -> str:
    """Why nbgrader wrote no page from ``folder`` (of its queue): the error its log gives after naming it."""
    at = log.find(f"error processing assignment: {folder}")
    lines = log[at:].splitlines()[1:] if at >= 0 else []
    end = next((i for i, line in enumerate(lines) if "error processing assignment" in line), len(lines))
    frames = [i for i, line in enumerate(lines[:end]) if line.strip().startswith('File "')]
    after = [line.strip() for line in lines[frames[-1] + 2:end] if line.strip().strip("^~ ")] if frames else []
    return f"nbgrader: {after[0]}" if after else "nbgrader wrote no page (its log is in grading.log)"


def report(state: Path, results: list[SubmissionRecord], pages: Pages) -> tuple[str, list[str]]:
    """The line that ends ``attnbook-course grade``'s output (the pages there are for the submissions of
    ``results``), and a line for each submission without one, with the reason ``pages`` gives."""
    pairs = [(r["student"], r["assignment"]) for r in results]
    lacking = [p for p in pairs if not (state / "feedback" / p[0] / p[1] / PAGE).exists()]
    problems = [f"no feedback page for {s}/{a}: " + pages.missing.get((s, a), "not written" if (s, a) in pages.wanted
                                                                       else "no autograded notebook to make it from")
                for s, a in lacking]
    line = (f"feedback pages: {len(pairs) - len(lacking)} for {len(pairs)} submissions graded "
            f"({len(pages.written)} of {len(pages.wanted)} written now)")
    return line, problems


def _book_assets() -> ModuleType:
    """``tools/book_assets.py`` as a module (``tools/`` is not a package)."""
    spec = importlib.util.spec_from_file_location("book_assets", ROOT / "tools" / "book_assets.py")
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {ROOT / 'tools' / 'book_assets.py'}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
