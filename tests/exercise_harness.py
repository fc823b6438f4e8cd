"""Grade an exercise notebook in-process, as the test cells would, for the fast grader tests.

Each chapter's ``test_grading_*.py`` makes an :class:`Exercise` of its
assignment; the grade_id -> check map comes from the solution notebook's test
cells, parsed as the judge parses them. It grades the solution, the released
stub and every catalogued answer of ``autograder/attnbook_course/fixtures/answers/`` without
starting a kernel or a sandbox; the hostile students, and a sample of the
rest, go through the sandboxed judge in ``test_autograder.py``.

The tests import it by name (pytest's ``pythonpath`` puts ``tests/`` on the path);
:func:`load` imports a catalogue's answer file (``answers/<assignment>.py``: data, not a module name).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
from pathlib import Path

import nbformat

from attnbook_course import earlier, inprocess, judge, sandbox, submission
from attnbook_course.fixtures import catalogue as answers

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "exercises.ipynb"


def trusted_grading_env() -> dict[str, str]:
    """What a test adds to ``attnbook-course grade``'s environment to grade the course's own notebooks.

    Nothing where bubblewrap runs; where it cannot, the opt-in without which
    grading refuses to start. Hostile notebooks are never graded unconfined:
    ``test_autograder.py`` skips them instead.

    >>> trusted_grading_env() in ({}, {"ATTNBOOK_GRADING_SANDBOX": "none"})
    True
    """
    return {} if sandbox.isolation() == "bubblewrap" else {"ATTNBOOK_GRADING_SANDBOX": "none"}


def load(path: Path, name: str):
    """Import the Python file ``path`` as a module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module




def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def phrases(message) -> list[str]:
    """A catalogue entry's ``message``: None, one phrase or a list of them -> a list."""
    return [] if not message else [message] if isinstance(message, str) else list(message)


class Exercise:
    """One chapter's exercise notebook and its checks.

    ``checks`` maps the grade_id of each test cell to ``(check, names of the
    objects the check takes)``, read from the solution notebook.
    """

    def __init__(self, assignment: str):
        self.assignment = assignment
        self.solution = ROOT / "solutions" / assignment / NOTEBOOK
        self.released = ROOT / "chapters" / assignment / NOTEBOOK
        self.test_cells = {grade_id(c): c for c in read(self.solution).cells
                           if c.metadata.get("nbgrader", {}).get("grade")}
        self.calls = {gid: judge.parse_test_cell(c.source) for gid, c in self.test_cells.items()}
        self.checks = {gid: (calls[0].check, calls[0].names) for gid, calls in self.calls.items()}
        self.points = {g: c.metadata["nbgrader"]["points"] for g, c in self.test_cells.items()}
        self.answers = {name: a for name, a in answers.ANSWERS.items()
                        if a["assignment"] == assignment and not a.get("hostile")}

    def run(self, nb: nbformat.NotebookNode, capsys=None) -> dict[str, tuple[float, str]]:
        """Run ``nb``'s code cells in order, as the judge plans them, and grade each test cell with its check.

        A cell that raises does not stop the run (nbgrader carries on too); a
        test cell is graded by calling its check on the objects the notebook
        defined by then. A part below full that runs earlier parts below full
        is graded again with those replaced by the solution's, as the judge
        does (:mod:`attnbook_course.earlier`). Returns grade_id -> (points,
        message and what the check printed).
        """
        plan = submission.plan(read(self.solution), read(self.released), nb)
        found, steps = plan.parts, plan.steps
        results, namespace = {}, {"__name__": "__main__"}
        for k, part in enumerate(found):
            cells = [step.source for step in steps[found[k - 1].step + 1 if k else 0:part.step]]  # its cells
            namespace = self._execute(cells, namespace)
            results[part.grade_id] = first = self._grade(part.grade_id, namespace, capsys)
            below = {p.number for p in found[:k] if results[p.grade_id][0] < self.points[p.grade_id]}
            rerun, replaced = earlier.rerun_cells(steps, found, k, below) if first[0] < self.points[part.grade_id] \
                else ([], [])
            if rerun:
                second = self._grade(part.grade_id, self._execute(rerun, {"__name__": "__main__"}), capsys)
                if second[0] > first[0]:
                    note = earlier.note(part.number, replaced, full=second[0] == self.points[part.grade_id])
                    results[part.grade_id] = (second[0], f"{note}\n{second[1]}")
        return results

    @staticmethod
    def _execute(cells: list[str], namespace: dict) -> dict:
        for source in cells:
            with contextlib.suppress(Exception):  # a broken or blank answer; its test cell reports it
                inprocess.run_cell(source, namespace)
        return namespace

    def _grade(self, gid: str, namespace: dict, capsys) -> tuple[float, str]:
        """(points, message and what the checks printed) of test cell ``gid``, as the judge scores it."""
        if capsys:
            capsys.readouterr()  # what the notebook's own cells printed is not the check's message
        points, message = judge.score_test_cell(self.calls[gid], namespace, self.points[gid])
        return points, message + (capsys.readouterr().out if capsys else "")

    @functools.cached_property
    def graded_solution(self) -> dict[str, tuple[float, str]]:
        return self.run(read(self.solution))

    @functools.cached_property
    def graded_stub(self) -> dict[str, tuple[float, str]]:
        return self.run(read(self.released))

    def assert_solution_full_and_stub_zero(self, gid: str) -> None:
        """The solution gets all the points of test cell ``gid``; the released stub gets none."""
        assert self.graded_solution[gid][0] == self.points[gid], self.graded_solution[gid]
        points, message = self.graded_stub[gid]
        assert points == 0 and "not implemented yet" in message

    def assert_graded_as_expected(self, name: str, capsys) -> None:
        """The catalogued answer ``name`` gets its expected points on every part and its message."""
        answer = self.answers[name]
        results = self.run(answers.fill(read(self.released), answer["cells"]), capsys)
        assert set(results) == set(self.checks)
        messages = []
        for gid, (points, message) in results.items():
            expected = answer["expected"].get(gid, 0)  # a part the answer leaves blank scores 0
            full = self.points[gid]
            messages.append(message)
            if expected == "full":
                assert points == full, f"{gid}: {message}"
            elif expected == "partial":
                assert 0 < points < full, f"{gid}: {points} {message}"
            else:
                assert points == 0, f"{gid}: {points}"
        for phrase in phrases(answer["message"]):
            assert any(phrase in m for m in messages), (phrase, messages)
        for m in messages:  # concept-level words only: no tensors, no expected values
            assert "tensor(" not in m and "expected" not in m.lower()

    def assert_test_cells_well_formed(self) -> None:
        """Every test cell says what it checks and runs its check twice: visible, then with its points."""
        for gid, cell in self.test_cells.items():
            calls = self.calls[gid]
            assert cell.source.startswith(f'"""{gid}: '), gid  # the first line says what it checks
            assert "### BEGIN HIDDEN TESTS" in cell.source, gid
            assert [c.points for c in calls] == [None, self.points[gid]], gid
            assert calls[0].check is calls[1].check and calls[0].names == calls[1].names, gid
            assert self.points[gid] >= 2

    def assert_stub_hides_the_answers(self) -> None:
        released = "\n".join(c.source for c in read(self.released).cells)
        assert "BEGIN HIDDEN TESTS" not in released and "points=" not in released
        assert "BEGIN SOLUTION" not in released
