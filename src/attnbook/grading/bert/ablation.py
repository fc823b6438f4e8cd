"""Part 10: what the position embeddings do, read from an ablation's figure (a reasoning part).

The notebook's locked cell shuffles the words of a sentence and measures, with
:func:`attnbook.bert.shuffle_changes`, how far the outputs of a tiny BERT move,
with its position embeddings and with them zeroed. The student reads the
figure and answers by letter: ``ablation_answers = {"words": ..., "cls": ...,
"tell_apart": ...}``. The visible check tells the form only; the keys, and a
sentence for every option, are the instructor's (:mod:`attnbook.grading.reasoning`).

>>> check_positions_ablation({"words": "b", "cls": "b", "tell_apart": "b"})
Each answer is one of its options; it is graded at hand-in, and the feedback explains every option.
The visible check passed.
"""

from __future__ import annotations

from ..reasoning import choices

check_positions_ablation = choices("check_positions_ablation", __name__, answers="ablation_answers",
                                   words=("a", "b", "c"), cls=("a", "b", "c"), tell_apart=("a", "b", "c"))
