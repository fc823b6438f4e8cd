"""autograder/attnbook_course/mutants.py: cosmic-ray's mutants of a solution cell, and the hand-written rule mutants,
graded by the cell's own test cells."""

import contextlib
import csv
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from attnbook_course import course, mutants

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.usefixtures("one_thread")
MUTATION = ROOT / "autograder" / "mutation"
CHAPTERS = sorted(p.parent.name for p in (ROOT / "solutions").glob("*/exercises.ipynb"))
RULED = sorted(p.stem for p in mutants.RULES.glob("*.py"))


@pytest.fixture(scope="module")
def transformer():
    return mutants.Notebook("02-transformer")


def test_the_mask_part_kills_every_mutant(transformer):
    score = transformer.score("masks_solution")
    assert score.tests == ["masks_causal_and_padding"]
    assert score.killed >= 5 and score.survivors == [] and score.score == 1.0


def test_a_mutant_the_checks_cannot_see_survives(transformer, monkeypatch):
    """The machinery reports a survivor: with its test cell graded as always full, every mutant survives."""
    monkeypatch.setattr(mutants, "_grade", lambda namespace, calls, points: points)
    score = transformer.score("masks_solution")
    assert score.killed == 0 and len(score.survivors) >= 5 and score.score == 0.0
    assert all(s.startswith("core/") and "\n-" in s and "\n+" in s for s in score.survivors)
    rules = transformer.score_rules("masks_solution", [("a rule", "tril()", "tril(-1)")])
    assert rules.killed == 0 and rules.total == 1 and rules.survivors[0].startswith("survived: a rule\n")


def test_a_mutant_killed_by_hidden_cases_only_is_told_from_one_the_student_sees(transformer):
    """A rule the visible cases show (the mask's meaning) beside one only the hidden cases show (an axis of size
    one: no visible case has one, so a squeeze() goes unseen): both killed, only the first seen before handing in."""
    rules = transformer.score_rules("sdpa_solution", [
        ("mask: True means may attend", "masked_fill(~mask,", "masked_fill(mask,"),
        ("keep every axis of size one", "return weights @ v, weights", "return (weights @ v).squeeze(), weights")])
    assert (rules.killed, rules.seen, rules.unseen) == (2, 1, ["keep every axis of size one"])
    assert list(rules.said) == ["mask: True means may attend"] and rules.said["mask: True means may attend"]


def test_unknown_cell_and_assignment_are_refused(transformer):
    with pytest.raises(ValueError, match="no answer cell 'nope'"):
        transformer.score("nope")
    with pytest.raises(ValueError, match="no solutions"):
        mutants.Notebook("99-nothing")


def test_a_rule_mutant_must_name_text_found_once(transformer, tmp_path):
    assert "tril(-1)" in transformer.rule_mutant("masks_solution", "tril()", "tril(-1)")
    for old in ("nowhere", "return"):  # absent; twice
        with pytest.raises(ValueError, match="not once"):
            transformer.rule_mutant("masks_solution", old, "x")
    (tmp_path / "99-x.py").write_text('RULES = {"a_solution": [("rule", "old")]}')
    with pytest.raises(ValueError, match=r"is \(rule, old, new\)"):
        mutants.load_rules("99-x", tmp_path)
    assert mutants.load_rules("99-nothing", tmp_path) == {}


def test_a_run_of_one_cell_changes_only_its_row(tmp_path):
    """--cells: the chapter's other rows and survivors stay; a run line is added under the first."""
    for name in ("02-transformer.csv", "02-transformer-survivors.md"):
        shutil.copy(MUTATION / name, tmp_path / name)
    before = mutants.Chapter.read(tmp_path, "02-transformer")
    before.rows["sdpa_solution"]["killed"] = "-7"  # a mark the run must keep
    before.survivors[("mha_solution", "")] = ["core/X\n-a\n+b"]
    before.write(tmp_path, list(before.rows))
    assert course.main(["mutants", "02-transformer", "--cells", "masks_solution", "--out", str(tmp_path)]) == 0
    after = mutants.Chapter.read(tmp_path, "02-transformer")
    assert after.header[:-1] == before.header and after.header[-1].startswith("# then: attnbook-course mutants")
    assert after.rows["sdpa_solution"] == before.rows["sdpa_solution"]
    assert after.survivors[("mha_solution", "")] == ["core/X\n-a\n+b"]
    masks = after.rows["masks_solution"]
    assert masks["survived"] == "0" and int(masks["killed"]) >= 5 and masks["rules"] == "4/4"
    assert list(after.rows) == list(before.rows)  # the notebook's order
    assert sorted(p.name for p in tmp_path.iterdir()) == ["02-transformer-survivors.md", "02-transformer.csv"]


@pytest.mark.parametrize("assignment", CHAPTERS)
def test_the_committed_scores_cover_every_answer_cell(assignment):
    """autograder/mutation/<assignment>.csv has a row, and a rule count, for each answer cell of its notebook."""
    with open(MUTATION / f"{assignment}.csv") as f:
        lines = f.read().splitlines()
    assert lines[0].startswith("# attnbook-course mutants")  # how the table was made
    rows = {r["cell"]: r for r in csv.DictReader(line for line in lines if line[:1] != "#")}
    path = ROOT / "solutions" / assignment / "exercises.ipynb"
    cells = {c.metadata["nbgrader"]["grade_id"] for c in nbformat.read(path, as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("solution")}
    assert cells <= set(rows), sorted(cells - set(rows))
    assert (MUTATION / f"{assignment}-survivors.md").exists()
    if assignment in RULED:
        ruled = mutants.load_rules(assignment)
        assert set(ruled) <= cells, sorted(set(ruled) - cells)
        for cell in ruled:
            every = f"{len(ruled[cell])}/{len(ruled[cell])}"
            assert (rows[cell]["rules"], rows[cell]["rules_seen"]) == (every, every), (cell, rows[cell])


@pytest.mark.parametrize("assignment", RULED)
def test_every_rule_mutant_fails_a_visible_check(assignment):
    """Each hand-written mutant of autograder/mutation/rules/<assignment>.py breaks a rule the part's
    statement states; the part's checks must give it less than full marks, and its visible cases must
    already fail it, so that the student learns of the broken rule before handing in."""
    notebook = mutants.Notebook(assignment)
    survivors, unseen = [], []
    for cell, rules in mutants.load_rules(assignment).items():
        score = notebook.score_rules(cell, rules)
        survivors += score.survivors
        unseen += [f"{cell}: {rule}" for rule in score.unseen]
    assert survivors == [], "\n\n".join(survivors)
    assert unseen == [], "killed by hidden cases only (each needs a visible case):\n" + "\n".join(unseen)


def test_the_clock_rings_again_for_a_check_that_swallowed_it():
    """A check that records the first TimeoutError and goes on to a case where the mutant loops again
    is stopped again: three looping cases in a row all end, in about 1 + 2 x 0.2 s."""
    ended, start = 0, time.monotonic()
    with contextlib.suppress(TimeoutError), mutants._clock(1):
        for _ in range(3):
            with contextlib.suppress(TimeoutError):  # the check turns the ring into a failed case
                while True:
                    pass
            ended += 1
    assert ended == 3 and time.monotonic() - start < 10


def test_a_mutant_only_hidden_cases_kill_is_named_with_the_cases(transformer, tmp_path):
    """A killed mutant the visible checks pass goes to the survivors file's 'hidden cases only' section, its
    last line the hidden cases that fail it; the file reads back the same."""
    code = transformer.rule_mutant("sdpa_solution", "return weights @ v, weights",
                                   "return (weights @ v).squeeze(), weights")
    assert transformer.grade("sdpa_solution", code) == "killed"
    assert "batch of one" in transformer.said  # the hidden case with an axis of size one
    score = mutants.CellScore("02-transformer", "sdpa_solution", ["sdpa_matches_reference"], mutants=1, killed=1,
                              hidden_only=["core/X\n-a\n+b\n# killed by: " + transformer.said])
    chapter = mutants.Chapter("02-transformer")
    chapter.update(score)
    chapter.write(tmp_path, ["sdpa_solution"])
    assert "## 02-transformer · sdpa_solution · hidden cases only (1)" in (
        tmp_path / "02-transformer-survivors.md").read_text()
    again = mutants.Chapter.read(tmp_path, "02-transformer")
    assert again.survivors[("sdpa_solution", "hidden cases only")] == score.hidden_only
