"""Part 9: reading an ablation of the vocabulary size, ``vocab_reading = {question: letter}``.

A locked cell of the notebook trains BPE on English number words (seeded,
:func:`attnbook.tokenizers.bytes_per_token`) and draws the bytes per token of
held-out English and German text against the vocabulary size; three questions
ask what the figure shows: which way the English curve moves, what that does
to the text a GPT's fixed window holds and what it costs, and why the German
curve stays flat. The effects are large for every seed (tests/test_grading_gpt.py
runs the cell for several), so the questions grade the reading, not the noise.
The visible check tells only the form (:mod:`attnbook.grading.reasoning`); the
keys are the instructor's hidden cases.

>>> check_vocab_reading({"english": "b", "context": "b", "german": "b"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

__all__ = ["check_vocab_reading"]

check_vocab_reading = choices("check_vocab_reading", __name__, answers="vocab_reading",
                              english=("a", "b", "c"), context=("a", "b", "c", "d"), german=("a", "b", "c"))
