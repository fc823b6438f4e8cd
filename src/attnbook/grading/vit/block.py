"""Part 3: the class ``PreNormBlock(d_model, num_heads, d_ff)``: a ViT encoder block, pre-norm, GELU.

``forward(x (B, T, d_model)) -> (B, T, d_model)``: ``x = x + self_attn(norm1(x))``, then
``x = x + ffn(norm2(x))`` with ``ffn = fc2(GELU(fc1(.)))``. The reference is
:class:`attnbook.transformer.EncoderBlock` with ``norm_first=True`` and GELU, whose parameters
(``norm1``, ``self_attn.{q,k,v,out}_proj``, ``norm2``, ``ffn.fc1``, ``ffn.fc2``) are copied into
the student's block. LayerNorm's epsilon may be PyTorch's default (1e-5) or timm's (1e-6).

>>> seed, sizes, x, *_ = check_pre_norm_block.visible[-1].make()
>>> sizes, x.is_contiguous()
((8, 2, 16), True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from .._compare import close
from .._shared import FORBIDDEN_BLOCKS, MHA_PROBLEM, block_case, build_beside, run_block, sublayer_problem
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ._common import TR


def _variants(x: torch.Tensor, ref: Any) -> list:
    """(message, compute) for the blocks students build instead of the pre-norm one."""
    sa = lambda h: ref.self_attn(h)[0]  # noqa: E731
    ffn, n1, n2 = ref.ffn, ref.norm1, ref.norm2

    def relu_ffn(h):
        return ffn.fc2(F.relu(ffn.fc1(h)))

    def block(kind):
        if kind == "post":
            h = n1(x + sa(x))
            return n2(h + ffn(h))
        if kind == "no_residual":
            h = sa(n1(x))
            return ffn(n2(h))
        if kind == "normalised_residual":
            h = n1(x)
            h = h + sa(h)
            h2 = n2(h)
            return h2 + ffn(h2)
        if kind == "swapped":
            h = x + sa(n2(x))
            return h + ffn(n1(h))
        h = x + sa(n1(x))  # "relu"
        return h + relu_ffn(n2(h))

    return [
        ("looks like post-norm, LayerNorm(x + Sublayer(x)): a ViT block is pre-norm, x = x + Sublayer(LayerNorm(x)), "
         "so that the residual path from input to output is never normalised", lambda: block("post")),
        ("the residual connections are missing: add each sublayer's input back, x = x + Sublayer(LayerNorm(x))",
         lambda: block("no_residual")),
        ("the residual carries the normalised input: keep x itself on the residual path, "
         "x = x + Sublayer(LayerNorm(x)), not LayerNorm(x) + Sublayer(LayerNorm(x))",
         lambda: block("normalised_residual")),
        ("the norms are swapped: norm1 comes before the attention and norm2 before the feed-forward network",
         lambda: block("swapped")),
        ("the feed-forward network uses ReLU: a ViT's MLP uses GELU, fc2(GELU(fc1(x)))", lambda: block("relu")),
    ]


VISIBLE = (Case("a small block", block_case(641, 2, 5, None, 8, 2, 16)),)


def _check(cls: Callable) -> Callable:
    what = "PreNormBlock"

    def check_one(seed, sizes, x, _memory, _mask, _unused):
        ref_module = TR.EncoderBlock(*sizes, norm_first=True, activation="gelu")
        module, ref = build_beside(cls, ref_module, sizes, seed, x.dtype, what)
        out, expected = run_block(module, ref, x, (), {}, what)
        if close(out, expected):
            return
        timm_ref = TR.EncoderBlock(*sizes, norm_first=True, activation="gelu", layer_norm_eps=1e-6)
        timm_ref = timm_ref.to(x.dtype).eval()  # timm's LayerNorm epsilon is right too
        timm_ref.load_state_dict(ref.state_dict())
        with torch.no_grad():
            if close(out, timm_ref(x)):
                return
        problem = sublayer_problem(module, (
            ("self_attn", ref.self_attn, (x,), {}, MHA_PROBLEM.format(name="self_attn")),
            ("ffn", ref.ffn, (x,), {}, "ffn does not match the feed-forward network fc2(GELU(fc1(x)))"),
        ))
        if problem and "GELU" not in problem:
            raise CheckFailed(problem)
        raise first_match(out, _variants(x, ref), problem or "the output differs from the pre-norm block "
                          "x = x + SelfAttention(LayerNorm1(x)), then x = x + FeedForward(LayerNorm2(x))")

    return check_one


check_pre_norm_block = Part(
    name="check_pre_norm_block",
    visible=VISIBLE,
    check=_check,
    forbidden=(*FORBIDDEN_BLOCKS, "attnbook.vit.model.ViT", "attnbook.gpt.Block"),
)
