"""autograder/mutants.py: cosmic-ray's mutants of a solution cell, graded by the cell's own test cells."""

import csv
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "autograder"))
import mutants  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


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


def test_unknown_cell_and_assignment_are_refused(transformer):
    with pytest.raises(ValueError, match="no answer cell 'nope'"):
        transformer.score("nope")
    with pytest.raises(ValueError, match="no solutions"):
        mutants.Notebook("99-nothing")


def test_the_committed_scores_cover_every_answer_cell():
    """autograder/mutation/mutation_scores.csv has a row for each answer cell of every solution notebook."""
    with open(ROOT / "autograder" / "mutation" / "mutation_scores.csv") as f:
        lines = f.read().splitlines()
    assert lines[0].startswith("# python autograder/mutants.py")  # how the table was made
    rows = {(r["assignment"], r["cell"]) for r in csv.DictReader(line for line in lines if line[:1] != "#")}
    cells = {(p.parent.name, c.metadata["nbgrader"]["grade_id"])
             for p in (ROOT / "solutions").glob("*/exercises.ipynb")
             for c in nbformat.read(p, as_version=4).cells if c.metadata.get("nbgrader", {}).get("solution")}
    assert cells <= rows, sorted(cells - rows)
