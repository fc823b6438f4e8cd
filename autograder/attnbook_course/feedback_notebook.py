"""Each submission's files: its results JSON and its autograded notebook, from which its feedback page is made.

The autograded notebook is the student's submission with the judge's words
under each test cell (the test cells as released: never the hidden tests), and
a notice first when something happened to the submission as a whole (late, not
read, a grading error). ``feedback_pages.py`` turns it into HTML.

Nothing of the student's in it can run where it is shown (the feedback page,
the formgrader): every cell goes through :func:`feedback_filters.safe_cell`
here, before nbgrader sees it, so the notebook on disk is inert too (the
formgrader renders it without our preprocessors). Markdown becomes sanitised
HTML, the student's outputs are not kept (the judge's words replace them), and
the notebook's and the graded cells' metadata are the released notebook's:

>>> import nbformat
>>> released = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Task")])
>>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("*mine*<script>x()</script>")])
>>> nb.cells[0].metadata["tags"] = ["a,b", "ok"]
>>> notice, mine = feedback_notebook(nb, {}, released, notice="Named `a`<svg onload=y>`.").cells
>>> notice.source, mine.source, mine.metadata
('<div><p>Named <code>a</code></p></div>', '<div><p><em>mine</em></p></div>', {'tags': ['ok']})
"""

from __future__ import annotations

import json
import shutil
from typing import TYPE_CHECKING

from . import feedback_filters, intake, late, notes, submission
from .nbgrader_run import NOTEBOOK, Nbgrader
from .records import SubmissionRecord
from .submission import CELL_ID, grade_id, nbgrader_meta

if TYPE_CHECKING:
    from nbformat import NotebookNode


def feedback_notebook(nb: NotebookNode, results: dict, released: NotebookNode,
                      notice: str | None = None) -> NotebookNode:
    """The submission as the autograded notebook: ``notice`` (what happened to the submission as a whole)
    first, then the student's cells (sources, ids, tags, attachments, and nbgrader metadata only for
    the ids the gradebook knows, as released), test cells as released, each with the judge's words; a test
    cell the student deleted or renamed comes at the end, with its words. Every cell is made inert
    (:func:`feedback_filters.safe_cell`): nbgrader would refuse a tag with a comma, and run a script."""
    import nbformat  # here: it takes seconds to import, and the CLI's other commands need it not

    stubs = submission.test_cells(released)
    known = {grade_id(c): nbgrader_meta(c) for c in released.cells if grade_id(c)}
    out = nbformat.v4.new_notebook(metadata={k: released.metadata[k] for k in ("kernelspec", "language_info")
                                             if isinstance(released.metadata.get(k), dict)})
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell,
            "raw": nbformat.v4.new_raw_cell}
    if notice:
        out.cells.append(nbformat.v4.new_markdown_cell(notice, id="grading-notice"))  # ids: the same page each run
    for cell in nb.cells:
        gid = grade_id(cell)
        new = make[cell.cell_type](source=cell.source)
        if isinstance(cell.get("id"), str) and CELL_ID.fullmatch(cell["id"]):
            new["id"] = cell["id"]  # the same feedback page for the same submission, every time
        tags = cell.metadata.get("tags") if isinstance(cell.get("metadata"), dict) else None
        if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
            new.metadata["tags"] = tags
        if nbgrader_meta(cell) and gid in known:  # an id the gradebook lacks stops nbgrader's feedback
            new.metadata["nbgrader"] = dict(known[gid])
        if cell.get("attachments") and cell.cell_type != "code":
            new["attachments"] = cell["attachments"]
        if gid is not None and gid in results and cell.cell_type == "code":
            new.source = stubs[gid].source
            new.outputs = [nbformat.v4.new_output("stream", name="stdout", text=results[gid]["message"] + "\n")]
        out.cells.append(new)
    shown = {grade_id(c) for c in out.cells if c.cell_type == "code"}
    for gid in [g for g in stubs if g in results and g not in shown]:
        same_id = {"id": f"missing-{gid}"[:64]} if CELL_ID.fullmatch(gid) else {}
        cell = nbformat.v4.new_code_cell(stubs[gid].source, metadata={"nbgrader": nbgrader_meta(stubs[gid])},
                                         **same_id)
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=results[gid]["message"] + "\n")]
        out.cells.append(cell)
    for cell in out.cells:
        feedback_filters.safe_cell(cell)
    return out


def write_results(result: SubmissionRecord, nbgrader: Nbgrader, regraded: bool = True) -> None:
    """One submission's results JSON and autograded notebook (with the exchange's files beside it).
    A submission graded again replaces what an earlier one left; one kept from an earlier run gets only
    the files it lacks."""
    import nbformat

    student, assignment = result["student"], result["assignment"]
    target = nbgrader.state / "results" / student / f"{assignment}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({k: v for k, v in result.items() if k != "log"}, indent=1, sort_keys=True) + "\n")
    submitted = nbgrader.state / "submitted" / student / assignment
    autograded = nbgrader.state / "autograded" / student / assignment / NOTEBOOK
    if regraded:
        shutil.rmtree(autograded.parent, ignore_errors=True)
    elif autograded.exists():
        return
    nb, _ = intake.read_submission(submitted, submission.read_submission)
    notice = notes.notice(notes.read(result["notes"]), late.describe(result.get("late")))
    # A notebook that could not be read gets a feedback page too: the released one, saying why.
    autograded.parent.mkdir(parents=True, exist_ok=True)
    released = submission.released(assignment)
    nbformat.write(feedback_notebook(released if nb is None else nb, result["parts"], released, notice), autograded)
    if submitted.is_dir():
        for extra in submitted.iterdir():  # timestamp.txt, the exchange's secret
            if extra.is_file() and not extra.is_symlink() and not extra.name.endswith(".ipynb"):
                shutil.copy2(extra, autograded.parent / extra.name)
