"""attnbook.grading.bert, fast: chapter 3's catalogued answers are graded as they should be, in-process.

The same catalogue (autograder/fixtures/answers/03-bert.py) is graded end to end
through the sandboxed judge in test_autograder.py.
"""


import exercise_harness as harness
import pytest
import torch

from attnbook.grading.bert import masking, nsp
from attnbook.grading.errors import CheckFailed

EXERCISE = harness.Exercise("03-bert")
CHAPTER = EXERCISE.answers


def test_the_catalogue_names_the_issues_mistakes():
    phrases = [p for a in CHAPTER.values() for p in harness.phrases(a["message"])]
    for named in ("special tokens ([CLS], [SEP], [PAD], ...) were chosen",  # the issue's mistakes
                  "the 80/10/10 replacement applies only to the chosen 15 %",
                  "a random replacement was a special token", "averaged over all positions",
                  "segment ids are off by one", "pooler reads the mean", "head were frozen too",
                  "the shortest match was taken",
                  "draw every random number with the generator", "a squeeze() drops"):  # edges
        assert any(named in p for p in phrases), named


# ------------------------------------------------------------------ the checks themselves


def test_statistical_bounds_pass_the_reference_under_many_seeds():
    """The binomial bounds are wide enough for a right answer whatever the seed (the reference, 10 seeds), in the
    first hidden case and the visible cases that count (mlm_probability left out, 0.4)."""
    from attnbook import bert

    for case in (masking.CHECK.hidden[0], *masking.CHECK.visible[:2]):
        ids, special, vocab, mask_id, p, _, _ = case.make()
        stated = sorted(set(special) | {mask_id})
        for seed in range(10):
            inputs, labels = bert.mask_tokens(ids, special, vocab, torch.Generator().manual_seed(seed),
                                              *(() if p is None else (p,)), mask_id=mask_id)
            chosen = masking._check_rules(ids, stated, inputs, labels, mask_id)
            masking._check_proportions(ids, stated, vocab, mask_id, p, inputs, chosen)


def test_nsp_balance_catches_a_biased_coin():
    def biased(lines, generator=None):  # 70 % consecutive; the random lines drawn as they should be
        pairs = []
        for i in range(len(lines) - 1):
            if torch.rand((), generator=generator) < 0.7:
                pairs.append((lines[i], lines[i + 1], True))
            else:
                j = int(torch.randint(len(lines) - 1, (), generator=generator))
                pairs.append((lines[i], lines[j + 1 if j >= i + 1 else j], False))
        return pairs

    with pytest.raises(CheckFailed, match="half of the pairs should keep the true next line"):
        nsp.CHECK(biased)  # the visible 800 pairs tell 70 % from 50 % at six standard deviations...
    assert nsp.CHECK(biased, points=2) < 2  # ...and so do the hidden 2000 pairs
