"""Part 8: reasoning about decoding and training, ``decoding_reason = {question: letter}``.

Three questions on what Parts 4 and 5 built: which setting of ``sample_next``
is greedy decoding, what a very high temperature does to the distribution,
and what removing the causal mask at generation only does to a one-block GPT. The visible check
tells only the form of the answers (:mod:`attnbook.grading.reasoning`); the
keys, with a sentence for every option, are the instructor's hidden cases.

>>> check_decoding_reason({"greedy": "a", "hot": "a", "no_mask": "a"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

__all__ = ["check_decoding_reason"]

check_decoding_reason = choices("check_decoding_reason", __name__, answers="decoding_reason",
                                greedy=("a", "b", "c", "d"), hot=("a", "b", "c"), no_mask=("a", "b", "c"))
