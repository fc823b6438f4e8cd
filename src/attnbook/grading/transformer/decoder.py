"""Part 9: the class ``DecoderBlock(d_model, num_heads, d_ff)``, ``forward(x, memory, tgt_mask=None,
memory_mask=None)``, against the post-norm :class:`attnbook.transformer.DecoderBlock` with copied weights.

>>> seed, sizes, x, memory, tgt_mask, memory_mask = block_case(0, 2, 4, 5, 8, 2, 16, True, True, swap=True)()
>>> x.is_contiguous(), memory.is_contiguous(), tuple(tgt_mask.shape), tuple(memory_mask.shape)
(False, False, (2, 1, 4), (2, 1, 5))
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close
from .._shared import FORBIDDEN_BLOCKS, MHA_PROBLEM, block_case, build_beside, run_block, sublayer_problem
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ._common import FFN_PROBLEM, MODE_MESSAGES, TR, sublayers

_FROM_MEMORY = ("cross-attention must take its keys and values from the encoder output memory, and only its "
                "queries from the decoder")


def _causal(x: torch.Tensor) -> torch.Tensor:
    """The (T, T) causal mask of the target ``x`` (B, T, d_model)."""
    return torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).tril()


def _variants(ref, x, memory, tgt_mask, memory_mask):
    """(message, compute) for the mistakes students make in the decoder block."""
    norms = (ref.norm1, ref.norm2, ref.norm3)
    sa = lambda h: ref.self_attn(h, mask=tgt_mask, is_causal=True)[0]  # noqa: E731
    ca = lambda h: ref.cross_attn(h, memory, memory, mask=memory_mask)[0]  # noqa: E731

    def post(self_attention, cross_attention):
        return lambda: sublayers(x, (self_attention, cross_attention, ref.ffn), norms)

    variants = [(MODE_MESSAGES[mode], lambda mode=mode: sublayers(x, (sa, ca, ref.ffn), norms, mode))
                for mode in ("pre", "no_residual", "norm_inside")]
    return variants + [
        ("the self-attention is not causal: target position t must not attend to the positions after it (use "
         "causal_mask(T), combined with tgt_mask when there is one)",
         post(lambda h: ref.self_attn(h, mask=tgt_mask)[0], ca)),
        ("tgt_mask is ignored: combine the target padding mask with the causal mask, tgt_mask & causal_mask(T)",
         post(lambda h: ref.self_attn(h, is_causal=True)[0], ca)),
        ("a key must be allowed by both masks, tgt_mask and the causal mask (a logical and), not by either one",
         None if tgt_mask is None else post(lambda h: ref.self_attn(h, mask=tgt_mask | _causal(x))[0], ca)),
        ("cross-attention ignores memory_mask: the source padding must stay hidden from every target position",
         post(sa, lambda h: ref.cross_attn(h, memory, memory)[0])),
        (_FROM_MEMORY, post(sa, lambda h: ref.cross_attn(h, mask=memory_mask)[0])),
        (_FROM_MEMORY, post(sa, lambda h: ref.cross_attn(h)[0])),
        ("cross-attention must use its own projections, cross_attn, not those of self_attn",
         post(sa, lambda h: ref.self_attn(h, memory, memory, mask=memory_mask)[0])),
    ]


def _check(cls: Callable) -> Callable:
    what = "DecoderBlock"

    def check_one(seed, sizes, x, memory, tgt_mask, memory_mask):
        module, ref = build_beside(cls, TR.DecoderBlock(*sizes, norm_first=False), sizes, seed, x.dtype, what)
        out, expected = run_block(module, ref, x, (memory,), {"tgt_mask": tgt_mask, "memory_mask": memory_mask},
                                  what, causal=True)
        if close(out, expected):
            return
        causal = _causal(x)
        problem = sublayer_problem(module, (
            ("self_attn", ref.self_attn, (x,), {"mask": causal}, MHA_PROBLEM.format(name="self_attn")),
            ("cross_attn", ref.cross_attn, (x, memory, memory), {}, MHA_PROBLEM.format(name="cross_attn")),
            ("ffn", ref.ffn, (x,), {}, FFN_PROBLEM),
        ))
        if problem:
            raise CheckFailed(problem)
        raise first_match(out, _variants(ref, x, memory, tgt_mask, memory_mask),
                          "the output differs from the paper's block: x = LayerNorm1(x + MaskedSelfAttention(x)), "
                          "x = LayerNorm2(x + CrossAttention(x, memory)), x = LayerNorm3(x + FeedForward(x))")

    return check_one


check_decoder_block = Part(
    name="check_decoder_block",
    visible=(
        Case("no masks", block_case(601, 2, 4, 5, 8, 2, 16)),
        Case("target and source padding", block_case(609, 2, 4, 3, 8, 2, 16, True, True)),
    ),
    check=_check,
    forbidden=FORBIDDEN_BLOCKS,
)
