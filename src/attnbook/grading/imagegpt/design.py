"""Part 10: ``design_answers`` — three design decisions of the chapter, reasoned (a choice per question).

The student answers a dict of option letters: ``"channels"`` (what three
tokens per pixel, one per channel, would cost attention against the 9-bit
palette), ``"typeb"`` (what a PixelCNN with a type-B mask on its input does
in training and in sampling) and ``"probe"`` (what a probe's accuracy must be
compared with before it says the model learned something). The visible check
tells only the form of the answers; the keys, and a sentence for every
option, are the instructor's hidden cases (:mod:`attnbook.grading.reasoning`).
"""

from __future__ import annotations

from ..reasoning import choices

__all__ = ["check_design_answers"]

check_design_answers = choices("check_design_answers", __name__, answers="design_answers",
                               channels=("a", "b", "c", "d"), typeb=("a", "b", "c"), probe=("a", "b", "c"))
