"""Part 13: ``attention_answers``, three questions on what attention needs: positions, the causal mask, padding.

A reasoning part (:mod:`attnbook.grading.reasoning`): the visible check tells
the form of the answers only; the instructor's hidden cases hold the key of
each question and the sentence the feedback prints for every option.

>>> check_attention_reason({"positions": "a", "causal": "b", "padding": "c"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

check_attention_reason = choices(
    "check_attention_reason", __name__, answers="attention_answers",
    positions=("a", "b", "c"), causal=("a", "b", "c", "d"), padding=("a", "b", "c"),
)
