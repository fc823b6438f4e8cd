"""attnbook.grading, fast: every catalogued answer is graded as it should be, in-process.

The same catalogue (autograder/fixtures/answers.py) is graded end to end through
nbgrader in test_autograder.py.
"""

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import pytest
import torch

import attnbook.attention
from attnbook import grading
from attnbook.grading._core import Case, CheckFailed, references_trapped, run_student, score_cases

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("answers", ROOT / "autograder" / "fixtures" / "answers.py")
answers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(answers)

CHECKS = {
    "sdpa_matches_reference": grading.check_scaled_dot_product_attention,
    "sdpa_respects_masks": grading.check_attention_masks,
}
POINTS = 3


def student_function(source: str):
    namespace = {"math": math, "torch": torch, "__name__": "__main__"}
    exec(compile(source, "<student>", "exec"), namespace)
    return namespace["scaled_dot_product_attention"]


def grade(fn, check):
    """(points, message) as nbgrader would see them: visible check first, then hidden."""
    try:
        check(fn)
        return check(fn, points=POINTS), ""
    except CheckFailed as err:
        return 0, str(err)


@pytest.fixture
def restore_torch():
    saved = torch.allclose
    yield
    torch.allclose = saved


GRADABLE = {name: a for name, a in answers.ANSWERS.items() if name != "kills_kernel"}


@pytest.mark.parametrize("name", sorted(GRADABLE))
def test_catalogued_answer_is_graded_as_expected(name, restore_torch, capsys):
    answer = GRADABLE[name]
    fn = student_function(answer["cells"]["sdpa_solution"])
    messages = []
    for grade_id, expected in answer["expected"].items():
        points, message = grade(fn, CHECKS[grade_id])
        messages.append(message + capsys.readouterr().out)
        if expected == "full":
            assert points == POINTS, f"{grade_id}: {message}"
        elif expected == "partial":
            assert 0 < points < POINTS, f"{grade_id}: {points}"
        else:
            assert points == 0
    if answer["message"]:
        assert any(answer["message"] in m for m in messages), messages
    for m in messages:  # concept-level words only: no tensors, no expected values
        assert "tensor(" not in m and "expected" not in m.lower()


def notebook_cell(path: Path, grade_id: str) -> str:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


@pytest.mark.parametrize("grade_id", sorted(CHECKS))
def test_solution_scores_full_and_released_stub_scores_zero(grade_id):
    solution = notebook_cell(ROOT / "solutions/02-transformer/exercises.ipynb", "sdpa_solution")
    assert grade(student_function(solution), CHECKS[grade_id])[0] == POINTS
    stub = notebook_cell(ROOT / "chapters/02-transformer/exercises.ipynb", "sdpa_solution")
    points, message = grade(student_function(stub), CHECKS[grade_id])
    assert points == 0 and "not implemented yet" in message


def test_student_warning_goes_to_stdout_not_stderr(capfd):
    def noisy(q, k, v, mask=None):
        warnings.warn("deprecated thing", UserWarning)
        print("debug print", file=sys.stderr)
        return attnbook.attention.fused_attention(q, k, v, mask), None

    result = run_student(noisy, *torch.randn(3, 1, 2, 4))
    assert result[1] is None
    out, err = capfd.readouterr()
    assert err == ""
    assert "deprecated thing" in out and "debug print" in out


def test_traps_cover_aliases_and_are_removed_afterwards():
    from attnbook.attention import scaled_dot_product_attention as alias

    original = attnbook.attention.scaled_dot_product_attention

    def sneaky(q, k, v, mask=None):
        return alias(q, k, v, mask)

    path = "attnbook.attention.scaled_dot_product_attention"
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        run_student(sneaky, *torch.randn(3, 1, 2, 4), forbidden=[path])
    assert attnbook.attention.scaled_dot_product_attention is original
    assert alias is original
    with references_trapped(sneaky, [path]):
        assert attnbook.attention.scaled_dot_product_attention is not original
    assert attnbook.attention.scaled_dot_product_attention is original


def test_patching_the_public_reference_does_not_fool_the_checker(monkeypatch):
    def wrong(q, k, v, mask=None):
        w = torch.full((*q.shape[:-1], k.shape[-2]), 1.0 / k.shape[-2], dtype=q.dtype)
        return w @ v, w

    monkeypatch.setattr(attnbook.attention, "scaled_dot_product_attention", wrong)
    with pytest.raises(CheckFailed):
        grading.check_scaled_dot_product_attention(wrong)


def test_partial_credit_is_the_passed_share_of_weights(capsys):
    def check(ok):
        if not ok:
            raise CheckFailed("nope")

    cases = [Case("a", lambda: (True,), 1.0), Case("b", lambda: (False,), 1.0), Case("c", lambda: (True,), 2.0)]
    assert score_cases(cases, check, points=4) == 3.0
    assert "- b: nope" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="no check passed"):
        score_cases([Case("b", lambda: (False,))], check, points=4)
    with pytest.raises(CheckFailed, match="nope"):  # visible mode raises at the first failure
        score_cases(cases, check, points=None)


def test_non_tensor_and_wrong_arity_results_are_explained():
    with pytest.raises(CheckFailed, match=r"pair \(out, weights\)"):
        grading.check_scaled_dot_product_attention(lambda q, k, v, mask=None: q)
    with pytest.raises(CheckFailed, match="should be a torch.Tensor"):
        grading.check_scaled_dot_product_attention(lambda q, k, v, mask=None: (q.tolist(), q))
    with pytest.raises(CheckFailed, match="not callable"):
        grading.check_scaled_dot_product_attention(None)
