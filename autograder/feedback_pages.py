"""Write the feedback pages of a grading run: only those that are new, each with MathJax inline.

``course.py grade`` calls :func:`write_pages` once per run. The pages of the
submissions graded now are written again (an earlier submission's page goes
first, even when the new one gets none: a notebook that is missing now); a
submission kept from an earlier run gets its page only if it has none. One
``nbgrader generate_feedback`` process writes them all (its start-up, a few
seconds, is most of the cost), from a copy of ``autograded/`` that holds just
those submissions; then :func:`feedback_filters.offline_mathjax` puts the
book's MathJax (``tools/book_assets.py``) inline in each page.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from pathlib import Path

import feedback_filters

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "exercises.ipynb"
PAGE = "exercises.html"


def write_pages(nbgrader, regraded: list[tuple[str, str]], kept: list[tuple[str, str]]) -> str:
    """Write the pages of the (student, assignment) pairs ``regraded`` now and of those ``kept`` that lack
    one, with ``nbgrader`` (``nbgrader_run.Nbgrader``, which knows the state folder); returns nbgrader's log."""
    state = nbgrader.state
    for student, assignment in regraded:
        shutil.rmtree(state / "feedback" / student / assignment, ignore_errors=True)
    wanted = [(s, a) for s, a in regraded + kept if (state / "autograded" / s / a / NOTEBOOK).exists()
              and not (state / "feedback" / s / a / PAGE).exists()]
    if not wanted:
        return "nbgrader generate_feedback: no page to write\n"
    with tempfile.TemporaryDirectory(dir=state) as queue:  # autograded/, for the wanted pages only
        for student, assignment in wanted:
            shutil.copytree(state / "autograded" / student / assignment, Path(queue) / student / assignment)
        done = nbgrader("generate_feedback", "*", "--force", f"--CourseDirectory.autograded_directory={queue}",
                        check=False)
    script = _book_assets().mathjax()
    for student, assignment in wanted:
        page = state / "feedback" / student / assignment / PAGE
        if page.exists():  # nbgrader may have failed on this one: its log says why
            page.write_text(feedback_filters.offline_mathjax(page.read_text(), script))
    return f"$ nbgrader generate_feedback '*' ({len(wanted)} pages)\n{done.stdout}{done.stderr}\n"


def _book_assets():
    """``tools/book_assets.py`` as a module (``tools/`` is not a package)."""
    spec = importlib.util.spec_from_file_location("book_assets", ROOT / "tools" / "book_assets.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
