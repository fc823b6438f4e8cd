"""Part 14: ``scaling_answers``, three questions on the figure of the ablation of the 1 / sqrt(d_k) scale.

The notebook's locked cell plots :func:`attnbook.attention.scaling_ablation`
(the softmax of random scores with and without the scale, for d_k from 1 to
1024); the questions ask what the figure shows and why. A reasoning part
(:mod:`attnbook.grading.reasoning`): the keys are the instructor's. The
effects asked about hold for every seed (``tests/test_grading_transformer.py``).

>>> check_scaling_ablation({"weights": "b", "gradient": "a", "flat": "c"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

check_scaling_ablation = choices(
    "check_scaling_ablation", __name__, answers="scaling_answers",
    weights=("a", "b", "c"), gradient=("a", "b", "c"), flat=("a", "b", "c"),
)
