"""Part 8: reasoning about soft and hard attention, a choice per question (``attention_answers``).

The questions and their options are the notebook's; the form is checked here,
the key and the explanation of every option are the instructor's hidden cases
(:mod:`attnbook.grading.reasoning`).

>>> check_attention_reason({"gradient": "a", "init": "a", "init_gradient": "a", "padding": "a"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

check_attention_reason = choices(
    "check_attention_reason", __name__, answers="attention_answers",
    gradient=("a", "b", "c"),
    init=("a", "b", "c", "d"),
    init_gradient=("a", "b", "c"),
    padding=("a", "b", "c"),
)
