"""attnbook.grading.vit, fast: chapter 6's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/attnbook_course/fixtures/answers/06-vit.py) is graded end to end
through the sandboxed judge in test_autograder.py.
"""

import re

import exercise_harness as harness
import matplotlib
import pytest
import torch

import attnbook.vit
from attnbook.grading import reasoning
from attnbook.grading import vit as checks
from attnbook.grading.errors import CheckFailed
from attnbook.grading.vit import _common, masking, rollout, tokens

EXERCISE = harness.Exercise("06-vit")
SOLUTION = {harness.grade_id(c): c.source for c in harness.read(EXERCISE.solution).cells}
CHAPTER = EXERCISE.answers


pytestmark = pytest.mark.usefixtures("one_thread")


def test_the_catalogue_names_the_issues_mistakes():
    phrases = [p for a in CHAPTER.values() for p in harness.phrases(a["message"])]
    for named in ("read column by column", "flattened as (C, P, P)",  # patches
                  "class token was appended", "class token has none",  # class token and positions
                  "looks like post-norm",  # pre-norm
                  "residual identity is missing", "rows do not sum to 1",  # rollout
                  "kept the share mask_ratio", "restore order is lost",  # MAE masking
                  "a row-wise argmin is not a matching",  # matching
                  "calls the reference implementation"):
        assert any(named in p for p in phrases), named


# ------------------------------------------------------------------ the checks themselves


def test_the_private_reference_agrees_with_the_package():
    x = torch.randn(2, 3, 8, 12)
    assert torch.equal(_common.VIT.patchify(x, 4), attnbook.vit.patchify(x, 4))
    assert _common.VIT.patchify is not attnbook.vit.patchify


@pytest.mark.parametrize("check, args", [
    (checks.check_patchify, (attnbook.vit.patchify,)),
    (checks.check_attention_rollout, (attnbook.vit.attention_rollout,)),
    (checks.check_random_masking, (attnbook.vit.random_masking,)),
    (checks.check_matching, (attnbook.vit.matching_cost, attnbook.vit.hungarian_match)),
    (checks.check_vit_tokens, (attnbook.vit.vit_tokens,)),
])
def test_the_reference_itself_is_trapped(check, args):
    with pytest.raises(CheckFailed, match="calls the reference implementation"):
        check(*args)


def test_rollout_mistakes_differ_from_the_right_answer():
    """Every named rollout mistake is told apart from the right answer on the visible case."""
    maps, residual = checks.check_attention_rollout.visible[0].make()
    right = rollout._rollout(maps, residual)
    for message, variant in rollout._mistakes(maps, residual):
        assert not torch.allclose(variant, right, atol=1e-4), message


def test_masking_statistics_reject_a_biased_draw_and_accept_a_fair_one():
    g = torch.Generator().manual_seed(0)
    B, N, removed = masking.STATS_ROWS, masking.STATS_N, 6
    fair = torch.zeros(B, N, dtype=torch.long)
    fair.scatter_(1, torch.rand(B, N, generator=g).argsort(1)[:, :removed], 1)
    masking._statistics(fair, 0.75)
    biased = fair.clone()
    biased[: B // 10] = torch.tensor([1, 1, 1, 1, 1, 1, 0, 0])  # a tenth of the rows always keep the last two
    with pytest.raises(CheckFailed, match="more often than others"):
        masking._statistics(biased, 0.75)


@pytest.mark.parametrize("pos, cls, phrase", [
    ((1, 4, 16), (1, 1, 16), "the class token needs one too: make it (1, 1 + N, embed_dim)"),
    ((4 + 1, 16), (1, 1, 16), "pos_embed should have shape (1, 1 + N, embed_dim)"),
    ((1, 4 + 1, 16), (1, 16), "cls_token should have shape (1, 1, embed_dim)"),
])
def test_a_class_token_or_position_table_of_another_shape_is_named(pos, cls, phrase):
    """Shapes of the tokens' parameters are named before any weight is copied (not nn.Linear's hint)."""

    class Embedding(torch.nn.Module):
        def __init__(self, img_size, patch_size, in_chans, embed_dim):
            super().__init__()
            self.proj = torch.nn.Linear(patch_size * patch_size * in_chans, embed_dim)
            self.cls_token = torch.nn.Parameter(torch.zeros(*cls))
            self.pos_embed = torch.nn.Parameter(torch.zeros(*pos))

    with pytest.raises(CheckFailed) as failed:
        checks.check_vit_embedding(Embedding)  # the visible case: 8 x 8 digits, patch 4 (N = 4), D = 16
    assert phrase in str(failed.value) and "nn.Linear" not in str(failed.value)


# ------------------------------------------------------------------ the reasoning parts (7-9)


def test_vit_tokens_mistakes_differ_from_the_right_answer():
    """Every named counting mistake is told apart from the right count on the visible tiled cases."""
    for case in checks.check_vit_tokens.visible[:2]:
        H, W, P = case.make()
        right = attnbook.vit.vit_tokens(H, W, P)
        for message, variant in tokens._mistakes(H, W, P):
            assert not tokens._same(right, variant), message


@pytest.mark.parametrize("answer, phrase", [
    (lambda H, W, P: (1 + (H // P) * (W // P), (H // P) ** 2 * (W // P) ** 2), "the scores leave out the class token"),
    (lambda H, W, P: (H * W // P**2, (H * W // P**2) ** 2), "the class token is missing"),
    (lambda H, W, P: (1 + H // P, (1 + H // P) ** 2), "counted along one side only"),
    (lambda H, W, P: (1 + H * W // P, 1), "not HW / P"),
    (lambda H, W, P: (1 + (H // P) * (W // P), 2 * (1 + (H // P) * (W // P))), "every pair of the T tokens: T^2"),
    (lambda H, W, P: 1 + (H // P) * (W // P), "should return a pair"),
])
def test_a_counting_mistake_is_named(answer, phrase):
    with pytest.raises(CheckFailed, match=re.escape(phrase)):
        checks.check_vit_tokens(answer)


@pytest.mark.parametrize("check, cell", [(checks.check_vit_concepts, "concepts_solution"),
                                         (checks.check_position_ablation, "ablation_solution")])
def test_a_choice_is_keyed_per_question_and_unanswered_is_not_implemented_yet(check, cell, capsys):
    """One hidden key per question the solution answers, and the solution earns them all; the released cell
    raises NotImplementedError, so its dict is never defined and the judge passes None."""
    assert reasoning.is_choices(check) and check.forbidden == ()
    namespace = {}
    exec(SOLUTION[cell], namespace)
    (answers,) = [v for k, v in namespace.items() if k.endswith("_answers")]
    assert sorted(case.make()[1] for case in check.hidden) == sorted(answers)
    assert check(answers, points=2) == 2
    with pytest.raises(CheckFailed, match="is not implemented yet"):
        check(None)


def _ablation(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The notebook's ablation cell run with another seed: the class token's shift with and without positions."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    namespace = {"torch": torch}
    source = SOLUTION["position_ablation_run"]
    assert "torch.manual_seed(0)" in source
    exec(source.replace("torch.manual_seed(0)", f"torch.manual_seed({seed})"), namespace)
    plt.close("all")
    return namespace["with_positions"], namespace["without_positions"]


def test_the_ablation_shows_its_effect_for_every_seed():
    """What Part 9's key says of the figure holds for every seed, not only the notebook's: without positions
    the class token moves by float rounding only (below 1e-5), with them by more than 1e-3 after every block,
    at least a thousand times more."""
    for seed in range(10):
        with_positions, without_positions = _ablation(seed)
        assert with_positions.shape == without_positions.shape == (4,)
        assert without_positions.max() < 1e-5, (seed, without_positions)
        assert with_positions.min() > 1e-3, (seed, with_positions)
        assert (with_positions / without_positions).min() > 1e3, seed
