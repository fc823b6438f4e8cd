"""Checks for chapter 2's exercises (``solutions/02-transformer``), one module per graded part.

Each check is a :class:`~attnbook.grading.engine.Part` that compares the
student's object with a private copy of the reference in
:mod:`attnbook.attention`, :mod:`attnbook.positional` or
:mod:`attnbook.transformer` (or with the formula itself) and explains a
failure in words, naming the mistake students make most where the output
matches it. Modules are compared by parameter name: the checker builds the
student's class and the reference with the same sizes, copies the reference's
(random) parameters into the student's module and compares the outputs in
eval mode.

The parts, in the notebook's order: :mod:`.sdpa` (scaled dot-product
attention), :mod:`.sdpa_masks` (the same with masks), :mod:`.masks`,
:mod:`.embeddings` (one-hot times E, tied logits), :mod:`.positions`,
:mod:`.mha`, :mod:`.encoder` (post-norm), :mod:`.prenorm` (the pre-norm
encoder block), :mod:`.decoder`, :mod:`.loss` (the teacher-forced training
loss), :mod:`.greedy`, then three parts that ask the student to reason:
:mod:`.params` (the encoder block's parameter count), :mod:`.reasoning_attention`
(choices: positions, the causal mask, padding) and :mod:`.ablation` (choices
on the figure of the 1/sqrt(d_k) ablation), :mod:`.beam` (one step of beam
search) and last :mod:`.noam` (the paper's warm-up learning-rate schedule);
:mod:`._common` holds what several of them share.
"""

from ..fixtures import greedy_test_model
from .ablation import check_scaling_ablation
from .beam import check_beam_step
from .decoder import check_decoder_block
from .embeddings import check_embeddings
from .encoder import check_encoder_block
from .greedy import check_greedy_decode
from .loss import check_translation_loss
from .masks import check_masks
from .mha import check_multi_head_attention
from .noam import check_noam_lr
from .params import check_encoder_block_params
from .positions import check_sinusoidal_positions
from .prenorm import check_prenorm_encoder_block
from .reasoning_attention import check_attention_reason
from .sdpa import check_scaled_dot_product_attention
from .sdpa_masks import check_attention_masks

__all__ = [
    "check_scaled_dot_product_attention", "check_attention_masks", "check_masks", "check_embeddings",
    "check_sinusoidal_positions", "check_multi_head_attention", "check_encoder_block",
    "check_prenorm_encoder_block", "check_decoder_block", "check_translation_loss", "check_greedy_decode",
    "check_encoder_block_params", "check_attention_reason", "check_scaling_ablation", "check_beam_step",
    "check_noam_lr", "greedy_test_model",
]
