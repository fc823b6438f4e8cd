"""The similarity check (autograder/attnbook_course/similarity.py) on a catalogue of copied and independent answers.

The catalogue (``autograder/attnbook_course/fixtures/similar_answers.py``) has, for three
parts, one student's answer, four copies of it or of the reference (names
changed, lines reordered, reformatted, pasted from the package) and three or
four right answers written independently. The threshold was chosen on it:
with runs of 20 filtered characters (the widest gap of 15, 20, 25, 30 and 35)
every copy shares at least 55% of its code with its source and no two
independent answers more than 41% (``test_threshold_sits_in_the_gap``), so
``THRESHOLD`` = 50% sits in the gap.
"""

import doctest
import itertools
from pathlib import Path

import nbformat
import pytest

from attnbook_course import similarity
from attnbook_course.fixtures import similar_answers

ROOT = Path(__file__).resolve().parent.parent

CATALOGUE = similar_answers.CATALOGUE


def test_doctests():
    assert doctest.testmod(similarity).failed == 0


def flagged(assignment: str, part: str, by_student: dict[str, str]) -> set[frozenset]:
    stub = similarity._stubs(assignment)[part]
    found = similarity.similar(part, by_student, stub, similarity.reference(assignment, part))
    return {frozenset((m.left, m.right)) for m in found}


@pytest.mark.parametrize(("assignment", "part"), list(CATALOGUE))
def test_copies_are_flagged_and_independent_answers_are_not(assignment, part):
    entry = CATALOGUE[(assignment, part)]
    own = {"original": entry["original"], **entry["independent"]}
    copies = {f"copy_{name}": code for name, code in entry["copied"].items()}
    found = flagged(assignment, part, {**own, **copies})
    for name in copies:
        source = similarity.REFERENCE if name == "copy_from_reference" else "original"
        assert frozenset((name, source)) in found, name
    # No two answers written independently, nor one of them and the reference; a copy of "original"
    # is no more like an independent answer than "original" is.
    for pair in found:
        assert len(pair & set(entry["independent"])) == 0, sorted(pair)
    assert not any(frozenset((name, similarity.REFERENCE)) in found for name in own)


def test_threshold_sits_in_the_gap():
    """Every copy shares more than THRESHOLD + 4 points with its source; no independent pair shares
    more than THRESHOLD - 8 points (the margins measured when the threshold was chosen)."""
    copies, independent = [], []
    for (assignment, part), entry in CATALOGUE.items():
        stub = similarity._stubs(assignment)[part]
        boilerplate = similarity.np.array(sorted(similarity.fingerprint(stub).hashes))
        prints = {name: similarity.fingerprint(code, boilerplate)
                  for name, code in {"original": entry["original"], **entry["independent"]}.items()}
        ref = similarity.fingerprint(similarity.reference(assignment, part), boilerplate)
        for name, code in entry["copied"].items():
            copy = similarity.fingerprint(code, boilerplate)
            shares = similarity.compare(copy, ref if name == "from_reference" else prints["original"])
            copies.append(shares[0] if name == "from_reference" else max(shares[:2]))
        independent += [max(similarity.compare(prints[a], prints[b])[:2]) for a, b in itertools.combinations(prints, 2)]
        independent += [similarity.compare(p, ref)[0] for p in prints.values()]
    assert min(copies) > similarity.THRESHOLD + 0.04 and max(independent) < similarity.THRESHOLD - 0.08


def _namespace(assignment: str, part: str) -> dict:
    """What the source notebook's code cells before ``part``'s solution cell define (the earlier answers
    included, as a student who solved them has them)."""
    namespace: dict = {"__name__": "__main__"}
    for cell in nbformat.read(ROOT / "solutions" / assignment / "exercises.ipynb", as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id") == part:
            return namespace
        if cell.cell_type == "code" and not meta.get("grade"):
            exec(compile(cell.source, meta.get("grade_id", "cell"), "exec"), namespace)
    raise KeyError(part)


@pytest.mark.parametrize(("assignment", "part"), list(CATALOGUE))
def test_catalogue_answers_are_right(assignment, part, capsys):
    """Every answer passes its part's visible checks: the catalogue is of right answers, copied or not."""
    from attnbook_course import judge

    entry = CATALOGUE[(assignment, part)]
    tests = {c.metadata["nbgrader"]["grade_id"]: c for c in
             nbformat.read(ROOT / "solutions" / assignment / "exercises.ipynb", as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("grade")}
    base = _namespace(assignment, part)
    for code in [entry["original"], *entry["copied"].values(), *entry["independent"].values()]:
        namespace = dict(base)
        exec(compile(code, part, "exec"), namespace)
        for gid in similarity.parts(assignment)[part]:
            for call in judge.parse_test_cell(tests[gid].source):
                call.check(*(namespace[n] for n in call.names))


def test_the_bound_that_skips_a_pair_is_never_below_its_share():
    """``similar`` skips a pair whose bound is under the threshold: the bound must hold for every pair."""
    for (assignment, part), entry in CATALOGUE.items():
        codes = [entry["original"], *entry["copied"].values(), *entry["independent"].values(),
                 similarity.reference(assignment, part)]
        prints = [similarity.fingerprint(code) for code in codes]
        for a, b in itertools.permutations(prints, 2):
            assert similarity._most(a, a.hashes & b.hashes) >= similarity.compare(a, b)[0] - 1e-9
