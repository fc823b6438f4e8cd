"""attnbook.grading.bert, fast: chapter 3's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/fixtures/answers/03-bert.py) is graded end to end
through the sandboxed judge in test_autograder.py.
"""

import importlib.util
from pathlib import Path

import pytest
import torch

from attnbook.grading import bert as checks
from attnbook.grading.bert import masking, nsp

_spec = importlib.util.spec_from_file_location("exercise_harness", Path(__file__).with_name("exercise_harness.py"))
harness = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(harness)
EXERCISE = harness.Exercise("03-bert")
CHAPTER = EXERCISE.answers
PARTS = [checks.check_bert_embeddings, checks.check_mask_tokens, checks.check_mlm_loss, checks.check_nsp_pairs,
         checks.check_cls_classifier, checks.check_freeze_all_but_top, checks.check_wordpiece_encode]


def test_the_catalogue_covers_every_part_and_the_issues_mistakes():
    assert len(CHAPTER) >= 6 and all(name.startswith("bert_") for name in CHAPTER)
    for grade_id in EXERCISE.checks:
        wrong = [a for a in CHAPTER.values() if a["expected"].get(grade_id, 0) != "full"]
        assert len(wrong) >= 2, grade_id  # at least two realistic wrong answers per part
        partial = [a for a in CHAPTER.values() if a["expected"].get(grade_id, 0) == "partial"]
        assert partial, grade_id  # a mistake that only the hidden edge cases reveal
    phrases = [p for a in CHAPTER.values() for p in harness.phrases(a["message"])]
    for named in ("special tokens ([CLS], [SEP], [PAD], ...) were chosen",  # the issue's mistakes
                  "the 80/10/10 replacement applies only to the chosen 15 %",
                  "a random replacement was a special token", "averaged over all positions",
                  "segment ids are off by one", "pooler reads the mean", "head were frozen too",
                  "the shortest match was taken",
                  "draw every random number with the generator", "a squeeze() drops"):  # edges
        assert any(named in p for p in phrases), named
    assert any(set(a["expected"].values()) == {"full"} for a in CHAPTER.values())  # an alternative answer


@pytest.mark.parametrize("name", sorted(CHAPTER))
def test_catalogued_answer_is_graded_as_expected(name, capsys):
    EXERCISE.assert_graded_as_expected(name, capsys)


def test_every_test_cell_calls_a_part_of_this_chapter():
    assert len(EXERCISE.test_cells) >= 6
    EXERCISE.assert_test_cells_well_formed()
    assert sorted(check.name for check, _ in EXERCISE.checks.values()) == sorted(p.name for p in PARTS)
    for cell in EXERCISE.test_cells.values():
        assert "from attnbook.grading.bert import check_" in cell.source


@pytest.mark.parametrize("grade_id", sorted(EXERCISE.checks))
def test_solution_scores_full_and_released_stub_scores_zero(grade_id):
    EXERCISE.assert_solution_full_and_stub_zero(grade_id)


def test_hidden_tests_are_not_in_the_released_notebook():
    EXERCISE.assert_stub_hides_the_answers()


# ------------------------------------------------------------------ the checks themselves


def test_statistical_bounds_pass_the_reference_under_many_seeds():
    """The binomial bounds are wide enough for a right answer whatever the seed (the reference, 10 seeds)."""
    import attnbook.bert as bert

    ids, special, vocab, mask_id, p, _, _ = masking.CHECK.hidden[0].make()
    for seed in range(10):
        inputs, labels = bert.mask_tokens(ids, special, vocab, torch.Generator().manual_seed(seed), p,
                                          mask_id=mask_id)
        chosen = masking._check_rules(ids, special, inputs, labels)
        masking._check_proportions(ids, special, vocab, mask_id, p, inputs, chosen)


def test_nsp_balance_catches_a_biased_coin(capsys):
    def biased(lines, generator=None):  # 70 % consecutive
        pairs = []
        for i in range(len(lines) - 1):
            if torch.rand((), generator=generator) < 0.7:
                pairs.append((lines[i], lines[i + 1], True))
            else:
                pairs.append((lines[i], lines[0 if i + 1 != 0 else 1], False))
        return pairs

    nsp.CHECK(biased)  # 200 pairs cannot tell 70 % from 50 % at six standard deviations...
    assert nsp.CHECK(biased, points=2) < 2  # ...2000 pairs can
    assert "half of the pairs should keep the true next line" in capsys.readouterr().out
