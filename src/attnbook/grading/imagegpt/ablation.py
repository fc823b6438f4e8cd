"""Part 11: ``palette_reading`` — what the palette-size ablation's figure shows (a choice per question).

A locked cell of the notebook fits k-means palettes of 2 to 32 colours to a
photo, three seeds each (:func:`attnbook.imagegpt.palette_size_errors`), and
draws the quantisation error against the palette size beside what the model
pays for it. The student reads the figure: ``"error"`` (which way the error
moves as K doubles), ``"gain"`` (which doubling buys the most) and ``"cost"``
(what a larger K costs an ImageGPT). The effects hold for every seed, so the
grade depends on the reading, not on the run. The visible check tells only
the form; the keys are the instructor's hidden cases.
"""

from __future__ import annotations

from ..reasoning import choices

__all__ = ["check_palette_reading"]

check_palette_reading = choices("check_palette_reading", __name__, answers="palette_reading",
                                error=("a", "b", "c", "d"), gain=("a", "b", "c"), cost=("a", "b", "c", "d"))
