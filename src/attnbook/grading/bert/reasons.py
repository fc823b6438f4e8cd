"""Part 9: why BERT's recipe is what it is, in three questions answered by letter (a reasoning part).

``masking_answers = {"mask_only": ..., "random_tokens": ..., "nsp_balance": ...}``:
what would go wrong with 100 % ``[MASK]``, what the 10 % random tokens force
the model to do, and what next-sentence prediction's 50/50 split of the
pairs buys. The visible check tells the form only; the keys, and a sentence
for every option, are the instructor's (:mod:`attnbook.grading.reasoning`).

>>> check_masking_reasons({"mask_only": "a", "random_tokens": "a", "nsp_balance": "a"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

check_masking_reasons = choices("check_masking_reasons", __name__, answers="masking_answers",
                                mask_only=("a", "b", "c", "d"), random_tokens=("a", "b", "c"),
                                nsp_balance=("a", "b", "c"))
