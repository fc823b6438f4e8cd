"""Part 8 (reasoning, choices): what the class token is for, what a smaller patch costs, why MAE's encoder is cheap.

Answered as ``vit_answers = {"class_token": ..., "patch_size": ..., "mae_cost": ...}``,
one letter per question. The visible check tells only the form; the key and a
sentence for every option are the instructor's hidden cases
(:func:`attnbook.grading.reasoning.key`), printed in the feedback.

>>> check_vit_concepts.visible[0].weight   # the form earns nothing
0.0
"""

from __future__ import annotations

from ..reasoning import choices

check_vit_concepts = choices("check_vit_concepts", __name__, answers="vit_answers",
                             class_token=("a", "b", "c"), patch_size=("a", "b", "c", "d"), mae_cost=("a", "b", "c"))
