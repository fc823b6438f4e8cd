"""attnbook.grading.vit, fast: chapter 6's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/fixtures/answers/06-vit.py) is graded end to end
through the sandboxed judge in test_autograder.py.
"""


import exercise_harness as harness
import pytest
import torch

import attnbook.vit
from attnbook.grading import vit as checks
from attnbook.grading.errors import CheckFailed
from attnbook.grading.vit import _common, masking, rollout

EXERCISE = harness.Exercise("06-vit")
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
