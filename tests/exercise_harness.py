"""Grade an exercise notebook in-process, as nbgrader would, for the fast grader tests.

Each chapter's ``test_grading*.py`` describes its notebook with an
:class:`Exercise` (grade_id of each test cell -> its check, the solution cell
that defines what it grades, and those objects' names) and uses it to grade the
solution, the released stub and every catalogued answer of
``autograder/fixtures/answers*.py`` without starting a kernel. The same
catalogue goes through nbgrader itself in ``test_autograder.py``.

Load it with :func:`load` (the tests run with ``--import-mode=importlib``, so
``tests/`` is not on ``sys.path``).
"""

from __future__ import annotations

import functools
import importlib.util
import warnings
from collections.abc import Callable
from pathlib import Path

import nbformat

from attnbook.grading._core import CheckFailed

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "exercises.ipynb"


def load(path: Path, name: str):
    """Import the Python file ``path`` as a module called ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


answers = load(ROOT / "autograder" / "fixtures" / "answers.py", "answers")


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def phrases(message) -> list[str]:
    """A catalogue entry's ``message``: None, one phrase or a list of them -> a list."""
    return [] if not message else [message] if isinstance(message, str) else list(message)


def grade(objects: tuple, check: Callable, points: float) -> tuple[float, str]:
    """(points, message) as nbgrader sees them: the visible check first, then the hidden one."""
    try:
        check(*objects)
        return check(*objects, points=points), ""
    except CheckFailed as err:
        return 0, str(err)


class Exercise:
    """One chapter's exercise notebook and its checks.

    ``checks`` maps the grade_id of each test cell to ``(check, solution
    cell's grade_id, names of the objects the check takes)``.
    """

    def __init__(self, assignment: str, checks: dict[str, tuple[Callable, str, tuple[str, ...]]]):
        self.assignment = assignment
        self.checks = checks
        self.solution = ROOT / "solutions" / assignment / NOTEBOOK
        self.released = ROOT / "chapters" / assignment / NOTEBOOK
        self.test_cells = {grade_id(c): c for c in read(self.solution).cells
                           if c.metadata.get("nbgrader", {}).get("grade")}
        self.points = {g: c.metadata["nbgrader"]["points"] for g, c in self.test_cells.items()}
        self.answers = {name: a for name, a in answers.ANSWERS.items()
                        if a["assignment"] == assignment and name != "kills_kernel"}

    def run(self, nb: nbformat.NotebookNode, capsys=None) -> dict[str, tuple[float, str]]:
        """Run ``nb``'s code cells in order and grade each test cell with its check.

        A cell that raises does not stop the run (nbgrader carries on too); a
        test cell is graded by calling its check on the objects the notebook
        defined by then. Returns grade_id -> (points, message and what the
        check printed).
        """
        namespace = {"__name__": "__main__"}
        results = {}
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            gid = grade_id(cell)
            if gid in self.checks:
                check, _, names = self.checks[gid]
                if capsys:
                    capsys.readouterr()  # what the notebook's own cells printed is not the check's message
                points, message = grade(tuple(namespace.get(n) for n in names), check, self.points[gid])
                results[gid] = (points, message + (capsys.readouterr().out if capsys else ""))
                continue
            try:
                with warnings.catch_warnings():  # a cell's own warnings are no test cell's business
                    warnings.simplefilter("ignore")
                    exec(compile(cell.source, f"<cell {gid}>", "exec"), namespace)
            except Exception:  # noqa: BLE001 - a broken or blank answer; its test cell reports it
                pass
        return results

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

    def solution_cell(self, solution_id: str) -> str:
        return next(c.source for c in read(self.solution).cells if grade_id(c) == solution_id)

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

    def assert_test_cells_well_formed(self, module: str) -> None:
        """Every test cell says what it checks, imports its check from ``module`` and runs it twice."""
        assert set(self.test_cells) == set(self.checks)
        for gid, cell in self.test_cells.items():
            check, solution_id, _ = self.checks[gid]
            visible, hidden = cell.source.split("### BEGIN HIDDEN TESTS")
            assert cell.source.startswith(f'"""{gid}: '), gid  # the first line says what it checks
            assert f"from {module} import {check.__name__}" in visible, gid
            assert f"{check.__name__}(" in visible and f"points={self.points[gid]})" in hidden, gid
            assert self.points[gid] >= 2
            assert self.solution_cell(solution_id)  # the solution cell exists

    def assert_stub_hides_the_answers(self) -> None:
        released = "\n".join(c.source for c in read(self.released).cells)
        assert "BEGIN HIDDEN TESTS" not in released and "points=" not in released
        assert "BEGIN SOLUTION" not in released
