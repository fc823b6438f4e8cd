"""Part 9 (ablation, choices): what the figure of a patch shuffle, with and without positions, shows.

A locked cell of the notebook shuffles the 16 patches of 28 x 28 images and
measures how far a random-weight ViT's class token moves after each block
(:func:`attnbook.vit.class_token_shift`), once as built and once with its
position embeddings zeroed, and draws both on a log scale. The student reads
the figure and answers ``ablation_answers = {"zeroed": ..., "rounding": ...,
"positions": ...}``; the key and a sentence per option are the instructor's
hidden cases. The reading does not depend on the run: the shift is at float
rounding (below 1e-5) without positions and above 1e-3 with them for every
seed (``tests/test_grading_vit.py`` runs the cell for ten).

>>> sorted(check_position_ablation.visible[0].make())
['form']
"""

from __future__ import annotations

from ..reasoning import choices

check_position_ablation = choices("check_position_ablation", __name__, answers="ablation_answers",
                                  zeroed=("a", "b", "c"), rounding=("a", "b", "c"), positions=("a", "b", "c"))
