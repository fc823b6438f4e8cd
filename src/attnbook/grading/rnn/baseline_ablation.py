"""Part 9: reading the baseline ablation's figure, a choice per question (``ablation_answers``).

The notebook's locked cell estimates one row's hard-attention gradient with
and without the baseline (:func:`attnbook.hard_attention.baseline_ablation`)
and draws the spread of the estimates against the number of draws; the
questions ask what the figure shows. The effects asked about hold for every
seed (``tests/test_grading_rnn.py``); the key is the instructor's hidden
cases (:mod:`attnbook.grading.reasoning`).

>>> check_baseline_ablation({"spread": "b", "centred": "b", "draws": "b"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

check_baseline_ablation = choices(
    "check_baseline_ablation", __name__, answers="ablation_answers",
    spread=("a", "b", "c"),
    centred=("a", "b", "c"),
    draws=("a", "b", "c"),
)
