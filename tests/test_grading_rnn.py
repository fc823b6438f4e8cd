"""attnbook.grading.rnn, fast: chapter 1's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/fixtures/answers_01_rnn_attention.py) is graded
end to end through nbgrader in test_autograder.py.
"""

import functools
import importlib.util
import math
from pathlib import Path

import pytest
import torch

import attnbook.attention
import attnbook.hard_attention
from attnbook.grading import rnn as checks
from attnbook.grading._core import CheckFailed

_spec = importlib.util.spec_from_file_location("exercise_harness", Path(__file__).with_name("exercise_harness.py"))
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)
answers = harness.answers
EXERCISE = harness.Exercise("01-rnn-attention", {
    "additive_scores_match_reference": (checks.check_additive_scores, "additive_solution", ("AdditiveAttention",)),
    "luong_scores_match_reference": (checks.check_luong_scores, "luong_solution", ("luong_scores",)),
    "soft_attention_matches_reference": (checks.check_soft_attention, "soft_solution", ("soft_attention",)),
    "decoder_step_matches_reference": (checks.check_decoder_step, "decoder_solution", ("AttentionDecoder",)),
    "hard_attention_samples_from_weights": (
        checks.check_sample_hard_attention, "sample_solution", ("sample_hard_attention",)),
    "score_function_estimate_is_unbiased": (
        checks.check_score_function_gradient, "estimator_solution", ("score_function_gradient",)),
})
CHECKS, ANSWERS = EXERCISE.checks, EXERCISE.answers


def test_the_catalogue_has_a_wrong_answer_with_a_message_for_every_part():
    assert len(ANSWERS) >= 4 and all(name.startswith("rnn_") for name in ANSWERS)
    for grade_id in CHECKS:
        wrong = [a for a in ANSWERS.values() if a["expected"].get(grade_id, 0) != "full" and a["message"]]
        assert wrong, grade_id


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_catalogued_answer_is_graded_as_expected(name, capsys):
    EXERCISE.assert_graded_as_expected(name, capsys)


def test_every_test_cell_has_a_check_and_its_points():
    assert len(EXERCISE.test_cells) >= 5 and sum(EXERCISE.points.values()) >= 10
    EXERCISE.assert_test_cells_well_formed("attnbook.grading.rnn")


@pytest.mark.parametrize("grade_id", sorted(CHECKS))
def test_solution_scores_full_and_released_stub_scores_zero(grade_id):
    EXERCISE.assert_solution_full_and_stub_zero(grade_id)


def test_hidden_tests_are_not_in_the_released_notebook():
    EXERCISE.assert_stub_hides_the_answers()


# ------------------------------------------------------------- the checks themselves


def test_references_themselves_are_trapped():
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        checks.check_soft_attention(attnbook.hard_attention.soft_attention)
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        checks.check_sample_hard_attention(functools.partial(attnbook.hard_attention.sample_hard_attention))

    class Borrows(torch.nn.Module):
        def __init__(self, query_size, key_size, attn_size):
            super().__init__()
            self.W = torch.nn.Linear(query_size, attn_size, bias=False)
            self.U = torch.nn.Linear(key_size, attn_size)
            self.v = torch.nn.Linear(attn_size, 1, bias=False)

        _score = attnbook.attention.AdditiveAttention._score  # borrowed as a class attribute

        def scores(self, query, keys, mask=None):
            return self._score(query, self.U(keys))

    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        checks.check_additive_scores(Borrows)
    assert attnbook.attention.AdditiveAttention._score is Borrows._score  # restored afterwards


def test_patching_the_public_module_does_not_fool_the_checker(monkeypatch):
    def uniform(scores, values):
        w = torch.isfinite(scores).to(scores.dtype)
        w = w / w.sum(-1, keepdim=True)
        return (w.unsqueeze(1) @ values).squeeze(1), w

    # The checker computes with its private copy, so the patched public function changes nothing.
    monkeypatch.setattr(attnbook.hard_attention, "soft_attention", lambda scores, values: uniform(scores, values))
    with pytest.raises(CheckFailed, match="weights differ from softmax"):
        checks.check_soft_attention(uniform)


def test_masked_scores_may_be_a_large_negative_number_but_not_zero():
    s = torch.tensor([[1.0, float("-inf")]])
    assert checks.same_scores(torch.tensor([[1.0, -1e9]]), s)
    assert not checks.same_scores(torch.tensor([[1.0, 0.0]]), s)
    assert not checks.same_scores(torch.tensor([[1.1, float("-inf")]]), s)


def _sampler(kind):
    def sample(scores, values, generator=None):
        weights = torch.softmax(scores, dim=-1)
        if kind == "gumbel":
            u = torch.rand(scores.shape, generator=generator, dtype=scores.dtype).clamp_min(1e-12)
            index = (scores - torch.log(-torch.log(u))).argmax(-1)
        elif kind == "global":  # ignores the generator: the checker seeds torch's global one too
            index = torch.multinomial(weights, 1).squeeze(1)
        else:
            index = torch.multinomial(weights, 1, generator=generator).squeeze(1)
        return values[torch.arange(scores.shape[0]), index], index

    return sample


@pytest.mark.parametrize("kind", ["multinomial", "gumbel", "global"])
def test_statistical_checks_pass_any_correct_sampler_with_a_wide_margin(kind, monkeypatch):
    """Over 30 other seeds, the worst deviation of a right sampler stays well inside the tolerance."""
    sample = _sampler(kind)
    worst = 0.0
    for case in checks._SAMPLE_VISIBLE + checks._SAMPLE_HIDDEN:
        _, base, values, copies = case.make()
        scores, values = checks._tile(base, values, copies)
        for seed in range(30):
            _, index = checks._seeded(1000 + seed, sample, scores, values)
            rows = base.shape[0]
            counts = torch.zeros(base.shape, dtype=torch.float64)
            counts.index_put_((torch.arange(len(index)) % rows, index), torch.ones(len(index), dtype=torch.float64),
                              accumulate=True)
            p = torch.softmax(base.double(), -1)
            tol = checks._Z * (p * (1 - p) / copies).sqrt() + 1.0 / copies
            worst = max(worst, ((counts / copies - p).abs() / tol).max().item())
    assert worst < 0.85
    assert checks.check_sample_hard_attention(sample, points=2) == 2.0


def test_estimator_check_margins():
    """A right estimator stays far inside the tolerance; a biased or baseline-free one lands far outside."""
    ref = attnbook.hard_attention.score_function_gradient

    def ratio(estimator, case, seed):
        _, base, values, f, n, copies = case.make()
        scores, tiled = checks._tile(base, values, copies)
        mean, _ = checks._per_row_stats(checks._seeded(seed, estimator, scores, tiled, f, n), base.shape[0], copies)
        _, ref_sd = checks._per_row_stats(checks._seeded(seed + 7, ref, scores, tiled, f, n), base.shape[0], copies)
        expected = attnbook.hard_attention.exact_gradient(base.double(), values.double(), f)
        tol = 1.25 * checks._Z * ref_sd / math.sqrt(copies) + 1e-5
        return ((mean - expected).abs() / tol).max().item()

    def shrunk(scores, values, f, n, generator=None):  # divides by N instead of N - 1
        return ref(scores, values, f, n, generator=generator) * (n - 1) / n

    def no_baseline(scores, values, f, n, generator=None):
        w = torch.softmax(scores, -1)
        index = torch.multinomial(w, n, replacement=True, generator=generator)  # (B, N)
        rows = torch.arange(scores.shape[0])[:, None]
        losses = f(values[rows, index])  # (B, N)
        onehot = torch.nn.functional.one_hot(index, scores.shape[1]).to(scores.dtype)
        return (losses.unsqueeze(-1) * (onehot - w.unsqueeze(1))).mean(1)

    cases = {c.group: c for c in checks._EST_VISIBLE + checks._EST_HIDDEN}
    assert max(ratio(ref, case, 500 + s) for case in cases.values() for s in range(5)) < 0.8
    assert min(ratio(shrunk, cases["two samples"], 600 + s) for s in range(5)) > 2.0
    assert min(ratio(no_baseline, cases["a large constant in the loss"], 700 + s) for s in range(5)) > 5.0


def test_grades_do_not_change_between_runs():
    sample = _sampler("multinomial")
    first = [checks.check_sample_hard_attention(sample, points=2) for _ in range(2)]
    state = torch.random.get_rng_state()
    assert checks.check_score_function_gradient(_copy_of_reference(), points=3) == 3.0
    assert torch.equal(state, torch.random.get_rng_state())  # the global generator is left as it was
    assert first == [2.0, 2.0]


def _copy_of_reference():
    """A student-side copy of the reference estimator (the reference itself is trapped)."""
    namespace = {"torch": torch, "math": math}
    exec(answers.ANSWERS["rnn_alternative_answers"]["cells"]["estimator_solution"], namespace)
    namespace["sample_hard_attention"] = _sampler("multinomial")
    return namespace["score_function_gradient"]


def test_each_solution_cell_defines_what_its_check_grades():
    namespace = {"__name__": "__main__", "math": math, "torch": torch, "nn": torch.nn, "attnbook": attnbook}
    for _, solution_id, (name,) in CHECKS.values():
        exec(compile(EXERCISE.solution_cell(solution_id), "<solution>", "exec"), namespace)
        assert callable(namespace.get(name))
