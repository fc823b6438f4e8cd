"""Every chapter's exercises, graded in-process: what all six share.

For each assignment: every test cell is well formed and calls a check that its
chapter's grading package exports; the solution scores full and the released
stub zero on every part; the released notebook hides the answers; the
catalogue (``autograder/attnbook_course/fixtures/answers/``) holds, per part, two wrong
answers, one that only the hidden cases reveal, and a correct answer written
another way than the solution; and each catalogued answer gets its expected
grade and message; a student with one mistake loses only the parts that
check it, the parts built on it graded with the solution's in its place. What
is particular to a chapter (the mistakes its issue names, statistical bounds,
traps) stays in ``test_grading_<chapter>.py``. ``test_autograder.py`` grades a
class drawn from the catalogue through the sandboxed judge; ``make
grader-check`` the whole of it.
"""

import functools
import importlib
import re
from pathlib import Path

import exercise_harness as harness
import pytest
import torch

from attnbook.grading import reasoning
from attnbook_course import earlier, judge

# assignment -> its grading package, attnbook.grading.<package>
CHAPTERS = {
    "01-rnn-attention": "rnn",
    "02-transformer": "transformer",
    "03-bert": "bert",
    "04-gpt-bpe": "gpt",
    "05-imagegpt": "imagegpt",
    "06-vit": "vit",
}


@functools.cache
def exercise(assignment: str) -> harness.Exercise:
    return harness.Exercise(assignment)


def _answers() -> list[tuple[str, str]]:
    """The catalogued answers but the one-mistake students, whom test_one_mistake_costs_only_its_own_parts grades."""
    return sorted((a["assignment"], name) for name, a in harness.answers.ANSWERS.items()
                  if a["assignment"] in CHAPTERS and not a.get("hostile") and not a.get("one_mistake"))


def _parts() -> list[tuple[str, str]]:
    return [(assignment, gid) for assignment in CHAPTERS for gid in sorted(exercise(assignment).checks)]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(autouse=True)
def _no_visible_cliff(monkeypatch):
    """No catalogued answer here loops forever (those are the sandbox's: hostile), so a visible case's time
    limit (10 s here) is lifted to 10 minutes: on a machine busy with another grading run, a correct answer's
    statistical case once took over 10 s. tests/test_visible_checks.py tests the limit itself."""
    monkeypatch.setenv("ATTNBOOK_VISIBLE_SECONDS", "600")


@pytest.fixture(autouse=True)
def _torch_restored():
    """An answer that patches torch is undone afterwards."""
    allclose = torch.allclose
    yield
    torch.allclose = allclose


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_every_test_cell_calls_an_exported_check_of_its_chapter(assignment):
    ex = exercise(assignment)
    package = CHAPTERS[assignment]
    grading = importlib.import_module(f"attnbook.grading.{package}")
    exported = {name for name in grading.__all__ if name.startswith("check_")}
    assert len(ex.test_cells) >= 6 and sum(ex.points.values()) >= 10
    ex.assert_test_cells_well_formed()
    used = sorted(check.name for check, _ in ex.checks.values())
    assert used == sorted(exported)  # each exported check grades exactly one part
    for gid, (check, _) in ex.checks.items():
        assert getattr(grading, check.name) is check and check.visible and check.hidden, gid
        source = ex.test_cells[gid].source  # imported from the chapter's package
        assert f"from attnbook.grading.{package} import check_" in source, gid


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_each_part_is_declared_once_under_its_own_name(assignment):
    """One way to declare a part, docs/add-a-graded-part.md's: ``check_x = Part(name="check_x", ...)`` (or
    ``check_x = choices("check_x", ...)``, :mod:`attnbook.grading.reasoning`), with no alias beside it."""
    package = importlib.import_module(f"attnbook.grading.{CHAPTERS[assignment]}")
    sources = "\n".join(p.read_text() for p in sorted(Path(package.__file__).parent.glob("*.py")))
    declared = re.findall(r"^(check_\w+) = \w+\(\s*(?:name=)?\"(check_\w+)\"", sources, re.M)
    exported = sorted(n for n in package.__all__ if n.startswith("check_"))
    assert sorted(name for name, _ in declared) == exported
    assert [name for name, said in declared if name != said] == []
    assert re.findall(r"^(?:CHECK\b.*|\w+ = check_\w+|check_\w+ = \w+)$", sources, re.M) == []



@pytest.mark.parametrize("assignment", CHAPTERS)
def test_hidden_tests_are_not_in_the_released_notebook(assignment):
    exercise(assignment).assert_stub_hides_the_answers()


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_the_catalogue_tries_every_part(assignment):
    ex = exercise(assignment)
    assert len(ex.answers) >= 6
    for gid in ex.checks:
        wrong = [a for a in ex.answers.values() if a["cells"] and a["expected"].get(gid, 0) != "full"]
        assert len(wrong) >= 2, gid  # two realistic wrong answers per part
        assert any(a["message"] for a in wrong), gid  # whose feedback is pinned down
        assert any(a["expected"].get(gid) == "partial" for a in wrong), gid  # one only hidden cases reveal
        assert any(a["expected"].get(gid) == "full" for a in ex.answers.values()), gid  # written another way


@pytest.mark.parametrize("assignment, grade_id", _parts())
def test_solution_scores_full_and_released_stub_scores_zero(assignment, grade_id):
    exercise(assignment).assert_solution_full_and_stub_zero(grade_id)


@pytest.mark.parametrize("assignment, name", _answers())
def test_catalogued_answer_is_graded_as_expected(assignment, name, capsys):
    exercise(assignment).assert_graded_as_expected(name, capsys)


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_forbidden_names_are_where_the_worker_can_stub_them(assignment):
    for check, _ in exercise(assignment).checks.values():
        # every part keeps the reference from being called; a reasoning part has none
        assert check.forbidden or reasoning.is_choices(check), check.name
        judge.package_sources(tuple(sorted(check.forbidden)))  # raises for a name not defined where listed


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_one_mistake_costs_only_its_own_parts(assignment, capsys):
    """Each chapter's one-mistake students (the solution with one answer edited, ``answer_kit.one_mistake``)
    are expected to lose exactly the parts whose test cells check that answer's objects, and are graded so:
    the parts that call it keep their points (graded with the solution's answer in its place)."""
    ex = exercise(assignment)
    students = {name: a for name, a in ex.answers.items() if a.get("one_mistake")}
    assert students, f"{assignment}: no one-mistake student in the catalogue"
    solution = {harness.grade_id(c): c.source for c in harness.read(ex.solution).cells}
    for name, answer in students.items():
        broken = earlier.defined(solution[answer["one_mistake"]])
        checking = {gid for gid, (_, names) in ex.checks.items() if broken & set(names)}
        assert checking and {gid for gid, grade in answer["expected"].items() if grade != "full"} == checking, name
        assert set(answer["expected"]) == set(ex.checks), name
        ex.assert_graded_as_expected(name, capsys)


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_part_k_is_the_kth_test_cell(assignment):
    """Feedback names earlier parts by number (attnbook_course.earlier): the k-th test cell is under "Part k"."""
    ex = exercise(assignment)
    headings = []
    for cell in harness.read(ex.solution).cells:
        heading = re.match(r"## Part (\d+) ", cell.source) if cell.cell_type == "markdown" else None
        headings += [int(heading.group(1))] if heading else []
        gid = harness.grade_id(cell)
        if gid in ex.checks:
            assert headings and headings[-1] == list(ex.checks).index(gid) + 1, gid
    assert headings == list(range(1, len(ex.checks) + 1))
