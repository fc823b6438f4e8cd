"""Part 7: the class ``EncoderBlock(d_model, num_heads, d_ff)``, ``forward(x, mask=None)``, against the post-norm
:class:`attnbook.transformer.EncoderBlock` with copied weights.

A wrong output is compared with the block built from the reference's own
sublayers in the ways students get it wrong (pre-norm, no residual, ...).

>>> seed, sizes, x, memory, mask, _ = block_case(0, 2, 4, None, 8, 2, 16, tgt_mask=True, swap=True)()
>>> sizes, x.is_contiguous(), memory is None, tuple(mask.shape)
((8, 2, 16), False, True, (2, 1, 4))
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close
from .._shared import FORBIDDEN_BLOCKS, block_case, build_beside, run_block
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ._common import MODE_MESSAGES, TR, encoder_sublayer_problem, sublayers


def _check(cls: Callable) -> Callable:
    what = "EncoderBlock"

    def check_one(seed, sizes, x, _memory, mask, _unused):
        module, ref = build_beside(cls, TR.EncoderBlock(*sizes, norm_first=False), sizes, seed, x.dtype, what)
        out, expected = run_block(module, ref, x, (), {"mask": mask}, what)
        if close(out, expected):
            return
        problem = encoder_sublayer_problem(module, ref, x, mask)
        if problem:
            raise CheckFailed(problem)
        sa = lambda h, m=mask: ref.self_attn(h, mask=m)[0]  # noqa: E731
        norms = (ref.norm1, ref.norm2)
        variants: list[tuple[str, Callable[..., torch.Tensor]]] = [
            (MODE_MESSAGES[mode], lambda mode=mode: sublayers(x, (sa, ref.ffn), norms, mode))
            for mode in ("pre", "no_residual", "norm_inside")
        ]
        variants += [
            ("the mask is not passed to the self-attention: padding keys must stay hidden",
             lambda: sublayers(x, (lambda h: ref.self_attn(h)[0], ref.ffn), norms)),
            ("the norms are swapped: norm1 follows the attention sublayer and norm2 the feed-forward one",
             lambda: sublayers(x, (sa, ref.ffn), norms[::-1])),
        ]
        raise first_match(out, variants, "the output differs from the paper's block: x = LayerNorm1(x + "
                          "SelfAttention(x)), then x = LayerNorm2(x + FeedForward(x))")

    return check_one


check_encoder_block = Part(
    name="check_encoder_block",
    visible=(
        Case("no mask", block_case(501, 2, 5, None, 8, 2, 16)),
        Case("padding mask", block_case(508, 2, 4, None, 8, 2, 16, tgt_mask=True)),
    ),
    check=_check,
    forbidden=FORBIDDEN_BLOCKS,
)
