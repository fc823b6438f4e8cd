"""Checks for chapter 1's exercises (``solutions/01-rnn-attention``), one module per graded part.

Each ``check_*`` is a :class:`~attnbook.grading.engine.Part` that compares the
student's object with a private copy of the reference in
:mod:`attnbook.attention`, :mod:`attnbook.rnn` or
:mod:`attnbook.hard_attention` and explains a failure in words. Called without
``points`` it runs the visible cases and raises on the first failure; with
``points`` it runs every case and returns the points earned.

The parts, in the notebook's order: :mod:`.additive_scores` (Bahdanau's
alignment scores with a padding mask), :mod:`.luong_scores`,
:mod:`.soft_attention` (the weights and the context vector),
:mod:`.decoder_step` (one step of a GRU decoder with attention),
:mod:`.sample_hard_attention`, :mod:`.score_function_gradient`,
:mod:`.alignment_params` (a parameter count predicted from the formulas),
:mod:`.attention_reason` (a choice per question: why hard attention needs the
score function, what v = 0 and a padding mask do) and
:mod:`.baseline_ablation` (reading the figure of the estimate with and
without its baseline); what they share is in :mod:`._common`. The last two
are reasoning parts (:mod:`attnbook.grading.reasoning`): their keys are the
instructor's hidden cases.

Modules are compared by parameter name, as in chapter 2: the checker builds
the student's class, copies the reference's (random) parameters into it and
compares outputs. The two random parts are checked statistically with fixed
seeds: the checker seeds both the generator it passes and torch's global one,
so a grade never changes between runs, and every tolerance is six standard
errors of the sample it judges, so that a right answer drawing its samples in
any other correct way fails with a probability below 1e-7 per case.
"""

from ..fixtures import HardAttentionLoss
from ._common import same_scores
from .additive_scores import check_additive_scores
from .alignment_params import check_alignment_params
from .attention_reason import check_attention_reason
from .baseline_ablation import check_baseline_ablation
from .decoder_step import check_decoder_step
from .luong_scores import check_luong_scores
from .sample_hard_attention import check_sample_hard_attention
from .score_function_gradient import check_score_function_gradient
from .soft_attention import check_soft_attention

__all__ = [
    "check_additive_scores",
    "check_luong_scores",
    "check_soft_attention",
    "check_decoder_step",
    "check_sample_hard_attention",
    "check_score_function_gradient",
    "check_alignment_params",
    "check_attention_reason",
    "check_baseline_ablation",
    "HardAttentionLoss",
    "same_scores",
]
