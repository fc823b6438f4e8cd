"""Checks for chapter 2's exercises (``solutions/02-transformer``), one module per graded part.

Each check is a :class:`~attnbook.grading.engine.Part` that compares the
student's object with a private copy of the reference in
:mod:`attnbook.attention`, :mod:`attnbook.positional` or
:mod:`attnbook.transformer` and explains a failure in words, naming the
mistake students make most where the output matches it. Modules are compared
by parameter name: the checker builds the student's class and the reference
with the same sizes, copies the reference's (random) parameters into the
student's module and compares the outputs in eval mode.

The parts, in the notebook's order: :mod:`.sdpa` (scaled dot-product
attention), :mod:`.sdpa_masks` (the same with masks), :mod:`.masks`,
:mod:`.positions`, :mod:`.mha`, :mod:`.encoder`, :mod:`.decoder`,
:mod:`.greedy`; :mod:`._common` holds what several of them share.
"""

from ..fixtures import greedy_test_model
from .decoder import check_decoder_block
from .encoder import check_encoder_block
from .greedy import check_greedy_decode
from .masks import check_masks
from .mha import check_multi_head_attention
from .positions import check_sinusoidal_positions
from .sdpa import check_scaled_dot_product_attention
from .sdpa_masks import check_attention_masks

__all__ = [
    "check_scaled_dot_product_attention", "check_attention_masks", "check_masks", "check_sinusoidal_positions",
    "check_multi_head_attention", "check_encoder_block", "check_decoder_block", "check_greedy_decode",
    "greedy_test_model",
]
