"""attnbook.grading.rnn, fast: chapter 1's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/attnbook_course/fixtures/answers/01-rnn-attention.py) is graded
end to end through the sandboxed judge in test_autograder.py.
"""

import contextlib
import functools
import math

import exercise_harness as harness
import pytest
import torch

import attnbook.alignment
import attnbook.attention
import attnbook.hard_attention
from attnbook.grading import rnn as checks
from attnbook.grading.engine import Part
from attnbook.grading.errors import CheckFailed
from attnbook.grading.rnn import _common, sample_hard_attention, score_function_gradient
from attnbook_course import judge

EXERCISE = harness.Exercise("01-rnn-attention")
ANSWERS = EXERCISE.answers
PARTS = [checks.check_additive_scores, checks.check_luong_scores, checks.check_soft_attention,
         checks.check_decoder_step, checks.check_sample_hard_attention, checks.check_score_function_gradient]


# ------------------------------------------------------------- the cases


def _tensors(args):
    return [a for a in args if isinstance(a, torch.Tensor)]


@pytest.mark.parametrize("part", PARTS, ids=lambda p: p.name)
def test_hidden_cases_cover_the_edges(part):
    """Every part has a case with a batch of one, non-contiguous inputs, float64 and padding in every row."""
    assert isinstance(part, Part) and part.forbidden
    made = [case.make() for case in part.hidden]
    floats = [[t for t in _tensors(args) if t.is_floating_point()] for args in made]
    assert any(ts[0].shape[0] == 1 for ts in floats), "batch of one"
    assert any(not t.is_contiguous() for ts in floats for t in ts), "non-contiguous"
    assert any(ts[0].dtype == torch.float64 for ts in floats), "float64"

    def every_row_padded(args):
        masks = [t for t in _tensors(args) if t.dtype == torch.bool]
        scores = [t for t in _tensors(args) if t.is_floating_point() and torch.isinf(t).any()]
        padded = [~m for m in masks] + [torch.isinf(s) for s in scores]
        return any(p.shape[0] > 1 and bool(p.any(-1).all()) for p in padded)

    assert any(every_row_padded(args) for args in made), "padding in every row"


def test_the_same_case_gives_the_same_inputs():
    for part in PARTS:
        for case in part.visible + part.hidden:
            first, second = case.make(), case.make()
            assert all(torch.equal(a, b) for a, b in zip(_tensors(first), _tensors(second), strict=True)), case.group


def test_strided_copies_keep_their_layout_when_cloned():
    x = _common.strided(torch.randn(3, 4, 5))
    assert not x.is_contiguous() and not x.clone().is_contiguous()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(12, 5)


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


def test_the_references_are_private_copies_of_their_home_modules():
    """The alignment models live in attnbook.alignment (attnbook.attention re-exports them): the checker's
    copy is of that module, and its copy of attnbook.rnn builds its decoders from the same copy."""
    assert _common.ATT.__name__ == "attnbook.alignment" and _common.ATT is not attnbook.alignment
    decoder = _common.RNN.AttentionDecoder(7, 4, 5, 6)
    assert type(decoder.attention) is _common.ATT.AdditiveAttention
    assert _common.ATT.AdditiveAttention is not attnbook.attention.AdditiveAttention


def test_the_worker_gets_stubs_where_the_references_are_defined():
    """Forbidden as the notebook names them (attnbook.attention.AdditiveAttention, attnbook.rnn.AttentionDecoder),
    stubbed where they are defined (attnbook.alignment, attnbook.rnn_blocks); the re-exporting modules are as
    written."""
    sources, _ = judge.package_sources(_common.FORBIDDEN_SCORES)
    assert "torch.tanh" not in sources["attnbook.alignment"] and "torch.softmax" not in sources["attnbook.alignment"]
    assert "reference_called('attnbook.attention.AdditiveAttention')" in sources["attnbook.alignment"]
    assert "reference_called('attnbook.alignment._AlignmentAttention')" in sources["attnbook.alignment"]
    assert sources["attnbook.attention"] == (judge.PACKAGE / "attention.py").read_text()
    sources, _ = judge.package_sources(checks.check_decoder_step.forbidden)
    assert "GRUCell" not in sources["attnbook.rnn_blocks"]
    assert "reference_called('attnbook.rnn.AttentionDecoder')" in sources["attnbook.rnn_blocks"]
    assert "Seq2Seq" in sources["attnbook.rnn"] and "bridge" not in sources["attnbook.rnn"]


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
        elif kind == "global":  # ignores the generator: only the draws' reproducibility tells
            index = torch.multinomial(weights, 1).squeeze(1)
        else:
            index = torch.multinomial(weights, 1, generator=generator).squeeze(1)
        return values[torch.arange(scores.shape[0]), index], index

    return sample


@pytest.mark.parametrize("kind", ["multinomial", "gumbel", "global"])
def test_statistical_checks_pass_any_correct_sampler_with_a_wide_margin(kind):
    """Over 30 other seeds, the worst deviation of a right sampler stays well inside the tolerance."""
    sample = _sampler(kind)
    worst = 0.0
    part = checks.check_sample_hard_attention
    for case in part.visible + part.hidden:
        _, scores, values, rows, copies, _ = case.make()
        if copies == 1:
            continue
        base = scores[:rows]
        for seed in range(30):
            _, index = _common.seeded(1000 + seed, sample, scores, values)
            counts = torch.zeros(base.shape, dtype=torch.float64)
            counts.index_put_((torch.arange(len(index)) % rows, index), torch.ones(len(index), dtype=torch.float64),
                              accumulate=True)
            p = torch.softmax(base.double(), -1)
            tol = _common.Z * (p * (1 - p) / copies).sqrt() + 1.0 / copies
            worst = max(worst, ((counts / copies - p).abs() / tol).max().item())
    assert worst < 0.85
    if kind == "global":  # right frequencies, but not reproducible with the generator it is given
        assert 0 < part(sample, points=2) < 2.0
        with pytest.raises(CheckFailed, match="generators in the same state"):
            sample_hard_attention._check(sample)(*sample_hard_attention._case(9, 2, 4, 3, 100, reseeded=True)())
    else:
        assert part(sample, points=2) == 2.0


def _reference_estimator(scores, values, f, n, generator=None):
    return attnbook.hard_attention.score_function_gradient(scores, values, f, n, generator=generator)


def _estimate_stats(estimator, case, seed):
    """Per-row mean and spread of ``estimator``'s estimates on ``case``, and the reference's spread."""
    _, scores, values, f, n, rows, copies, _ = case.make()

    def stats(fn, s):
        return score_function_gradient.per_row_stats(_common.seeded(s, fn, scores, values, f, n), rows, copies)

    mean, sd = stats(estimator, seed)
    return mean, sd, stats(attnbook.hard_attention.score_function_gradient, seed + 7)[1]


def test_estimator_check_margins():
    """A right estimator stays far inside the tolerance; a biased or baseline-free one lands far outside."""
    ref = attnbook.hard_attention.score_function_gradient

    def ratio(estimator, case, seed):
        mean, _, ref_sd = _estimate_stats(estimator, case, seed)
        _, scores, values, f, n, rows, copies, _ = case.make()
        expected = attnbook.hard_attention.exact_gradient(scores[:rows].double(), values[:rows].double(), f)
        tol = 1.25 * _common.Z * ref_sd / math.sqrt(copies) + 1e-5
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

    part = checks.check_score_function_gradient
    cases = {c.group: c for c in part.visible + part.hidden if c.make()[-2] > 1}
    assert max(ratio(ref, case, 500 + s) for case in cases.values() for s in range(5)) < 0.8
    assert min(ratio(shrunk, cases["two samples"], 600 + s) for s in range(5)) > 2.0
    assert min(ratio(no_baseline, cases["a large constant in the loss"], 700 + s) for s in range(5)) > 5.0


def test_estimator_spread_margins():
    """A right estimator spreads like the reference; one drawing twice the samples asked for spreads less."""
    ref = attnbook.hard_attention.score_function_gradient
    part = checks.check_score_function_gradient

    def spread(estimator, case, seed):
        _, sd, ref_sd = _estimate_stats(estimator, case, seed)
        return score_function_gradient.spread_ratio(sd, ref_sd)

    def twice(scores, values, f, n, generator=None):
        return ref(scores, values, f, 2 * n, generator=generator)

    cases = [c for c in part.visible + part.hidden if c.make()[-2] > 1]
    right = torch.cat([spread(ref, case, 800 + s) for case in cases for s in range(5)])
    assert right.min() > score_function_gradient.LEAST_SPREAD + 0.1 and right.max() < 1.1
    assert max(spread(twice, case, 900).max().item() for case in cases) < score_function_gradient.LEAST_SPREAD


def test_the_exact_gradient_is_no_estimate():
    """A deterministic answer is right on average: only its spread (none) fails it, in every case with copies
    (the one-row case checks what holds estimate by estimate, which it passes)."""
    def exact(scores, values, f, num_samples, generator=None):
        p = torch.softmax(scores, -1)
        losses = torch.stack([f(values[:, j]) for j in range(scores.shape[1])], 1)
        mean = (p * losses.masked_fill(p == 0, 0.0)).sum(-1, keepdim=True)
        return p * (losses - mean).masked_fill(p == 0, 0.0)

    with pytest.raises(CheckFailed, match="vary too little"):
        checks.check_score_function_gradient(exact)
    assert checks.check_score_function_gradient(exact, points=3) < 0.5


def test_an_estimator_that_ignores_the_generator_loses_points():
    out = checks.check_score_function_gradient(_copy_of_alternative_estimator("global"), points=3)
    assert 0 < out < 3


def test_every_estimate_row_sums_to_zero():
    def leaky(scores, values, f, num_samples, generator=None):
        return _reference_estimator(scores, values, f, num_samples, generator=generator) + 1e-2

    with pytest.raises(CheckFailed, match="sum to 0"):
        score_function_gradient._check(leaky)(*score_function_gradient._case(5, 1, 4, 2, 3, 1, masked=True)())


def test_grades_do_not_change_between_runs():
    sample = _sampler("multinomial")
    first = [checks.check_sample_hard_attention(sample, points=2) for _ in range(2)]
    state = torch.random.get_rng_state()
    assert checks.check_score_function_gradient(_copy_of_alternative_estimator(), points=3) == 3.0
    assert torch.equal(state, torch.random.get_rng_state())  # the global generator is left as it was
    assert first == [2.0, 2.0]


def _copy_of_alternative_estimator(sampler="multinomial"):
    """A student-side estimator (the reference itself is trapped): the catalogue's alternative answer."""
    namespace = {"torch": torch, "math": math}
    exec(ANSWERS["rnn_alternative_answers"]["cells"]["estimator_solution"], namespace)
    namespace["sample_hard_attention"] = _sampler(sampler)
    return namespace["score_function_gradient"]


# ------------------------------------------------------------- the reasoning parts (Parts 7 to 9)


def _solution_cell(grade_id):
    cell = next(c for c in harness.read(EXERCISE.solution).cells if harness.grade_id(c) == grade_id)
    return cell.source


def test_alignment_params_is_the_modules_count_and_names_the_mistakes():
    namespace = {}
    exec(_solution_cell("params_solution"), namespace)
    right = namespace["alignment_params"]
    assert checks.check_alignment_params(right, points=2) == 2
    for case in checks.check_alignment_params.visible + checks.check_alignment_params.hidden:
        q, k, a, method = case.make()
        module = (attnbook.attention.AdditiveAttention(q, k, a) if method == "additive"
                  else attnbook.attention.LuongAttention(q, k, method=method))
        assert right(q, k, a, method=method) == sum(p.numel() for p in module.parameters()), case.group
    def counting(additive=0, general=0, dot=None, whole=True):
        """A count off by ``additive`` or ``general``, or ``dot`` for the dot score."""
        def count(q, k, a, method="additive"):
            if method == "dot":
                return q * k if dot else 0
            n = q * k + general if method == "general" else (q + k) * a + 2 * a + additive
            return n if whole else n + 0.5
        return count

    for wrong, words in [(counting(additive=4), "the bias is counted twice"), (counting(additive=1), "v has no bias"),
                         (counting(additive=-4), "attn_size parameters are missing"),
                         (counting(dot=True), "no parameter at all"), (counting(general=3), "W_a has no bias"),
                         (counting(whole=False), "a whole number")]:
        with pytest.raises(CheckFailed, match=words):
            checks.check_alignment_params(wrong)


def test_a_count_cannot_tell_a_matrix_from_its_transpose():
    """W stored as (query_size, attn_size) or (attn_size, query_size): the same count, so the same grade."""
    def transposed(q, k, a, method="additive"):
        if method == "dot":
            return 0
        return k * q if method == "general" else a * q + a * k + a + a

    assert checks.check_alignment_params(transposed, points=2) == 2


@pytest.mark.parametrize("part", [checks.check_attention_reason, checks.check_baseline_ablation],
                         ids=lambda p: p.name)
def test_every_question_is_keyed_and_every_option_explained(part, capsys):
    """The hidden keys cover each question the visible form asks, each option has its sentence, and the
    solution's letters are the keys."""
    from attnbook.grading import reasoning

    assert reasoning.is_choices(part)
    keys = {case.make()[1]: case.make() for case in part.hidden}
    answers = {}
    exec(_solution_cell({"check_attention_reason": "reason_solution",
                         "check_baseline_ablation": "ablation_solution"}[part.name]), answers)
    (given,) = [v for k, v in answers.items() if k.endswith("_answers")]
    assert set(keys) == set(given)
    for question, (_, _, right, why) in keys.items():
        assert given[question] == right and len(why) >= 2, question
        accepted = set()
        for letter in "abcdefgh":  # the options the form accepts are the options explained
            with contextlib.suppress(CheckFailed):
                part({**{q: "a" for q in keys}, question: letter})
                accepted.add(letter)
        assert accepted == set(why), question
        assert all(len(sentence) > 40 for sentence in why.values()), question
    assert part(given, points=2) == 2
    capsys.readouterr()


def _ablation(seed):
    """The notebook's experiment (its locked cell) with another seed: name -> (spreads, means), and the exact
    gradient."""
    source = _solution_cell("ablation_experiment")
    setup = source[source.index("# One row"):source.index("spread_with, mean_with")]
    assert "manual_seed(0)" in setup
    namespace = {"torch": torch, "baseline_ablation": attnbook.hard_attention.baseline_ablation}
    exec(setup.replace("manual_seed(0)", f"manual_seed({seed})"), namespace)
    f = namespace["f"]
    return namespace["results"], attnbook.hard_attention.exact_gradient(namespace["scores"], namespace["values"], f)


@pytest.mark.parametrize("seed", range(8))
def test_the_ablation_shows_what_its_key_says_for_every_seed(seed):
    """The three readings the key holds: the baseline's spread is ten times smaller or more at every n; both
    averages lie within 5 standard errors of the exact gradient (400 estimates each); and without the
    baseline, 64 draws spread more than 4 draws with it (n = 2, 4, ..., 64)."""
    results, exact = _ablation(seed)
    spread_with, mean_with = results["with baseline"]
    spread_without, mean_without = results["without baseline"]
    assert all(w > 10 * b for w, b in zip(spread_without, spread_with, strict=True))
    for spread, mean in (results["with baseline"], results["without baseline"]):
        assert ((mean - exact).abs() <= 5 * torch.tensor(spread)[:, None] / 400 ** 0.5).all()
    assert spread_without[-1] > 2.5 * spread_with[1]
