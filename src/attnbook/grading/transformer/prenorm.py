"""Part 8: the class ``PreNormEncoderBlock(d_model, num_heads, d_ff, dropout=0.0)``, ``forward(x, mask=None)``,
against :class:`attnbook.transformer.EncoderBlock` with ``norm_first=True`` and copied weights.

Pre-norm is ``x + Sublayer(LayerNorm(x))`` for both sublayers. A wrong
output is compared with the block built from the reference's own sublayers in
the ways students get it wrong (:func:`_variant`: post-norm, a norm after the
add as well, one norm shared, the residual path normalised, a norm over the
wrong axis), and an output that changes between two calls in eval mode is
dropout left on. Two cases run in training mode: a block built without a
rate must drop nothing (the default is 0.0), and one built with
``dropout=1.0`` must drop both sublayers' outputs and return ``x`` itself
(each dropout uses the rate given).

>>> seed, sizes, x, _, mask, _ = _case(3, 2, 5, 8, 2, 16, 0.1, mask=True)()
>>> sizes, tuple(x.shape), tuple(mask.shape)
((8, 2, 16, 0.1), (2, 5, 8), (2, 1, 5))
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close
from .._core import run_method
from .._shared import FORBIDDEN_BLOCKS, block_case, build_beside, run_block
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ._common import TR, encoder_sublayer_problem


def _case(seed, B, T, d_model, nh, d_ff, dropout=0.0, *, mask=False, dtype=torch.float32, swap=False,
          train=False):
    """An encoder case of :func:`attnbook.grading._shared.block_case` whose sizes end with the dropout rate
    (``None``: the block is built without one, and compared in training mode, where its default, 0.0, shows);
    ``train``: the block runs in training mode, where a rate of 1.0 drops every sublayer's output."""
    if train and dropout != 1.0:
        raise ValueError("a training-mode case needs dropout=1.0, which drops the same values every time")
    make_block = block_case(seed, B, T, None, d_model, nh, d_ff, tgt_mask=mask, dtype=dtype, swap=swap)

    def make():
        seed_, sizes, x, memory, m1, _ = make_block()
        return seed_, (*sizes, dropout), x, memory, m1, train

    return make


def _axis_norm(norm: torch.nn.LayerNorm, dim: int) -> Callable:
    """``norm``'s gain and bias, but the statistics taken over axis ``dim`` (time or batch) instead of features."""
    def apply(h):
        mean, var = h.mean(dim, keepdim=True), h.var(dim, keepdim=True, unbiased=False)
        return (h - mean) / torch.sqrt(var + norm.eps) * norm.weight + norm.bias
    return apply


def _variant(x, subs, norms, mode):
    """Pre-norm blocks as students get them wrong, built from the reference's sublayers and norms."""
    for f, norm in zip(subs, norms, strict=True):
        if mode == "post":
            x = norm(x + f(x))  # the paper's post-norm
        elif mode == "norm_after_add":
            x = norm(x + f(norm(x)))  # normalised before and after
        elif mode == "residual_normalised":
            x = norm(x)
            x = x + f(x)  # the residual path carries LN(x), not x
        elif mode == "no_residual":
            x = f(norm(x))
        else:  # "pre"
            x = x + f(norm(x))
    return x


_MODES = (
    ("post", "looks like post-norm, LayerNorm(x + Sublayer(x)): this block is pre-norm, x + Sublayer(LayerNorm(x)), "
             "the norm inside the residual branch, before the sublayer"),
    ("norm_after_add", "LayerNorm is applied after the residual add as well: pre-norm normalises only the "
                       "sublayer's input, x + Sublayer(LayerNorm(x)), and leaves the sum as it is"),
    ("residual_normalised", "the residual path is normalised too (x = LayerNorm(x), then x + Sublayer(x)): pre-norm "
                            "adds the sublayer's output to the un-normalised x, x + Sublayer(LayerNorm(x))"),
    ("no_residual", "the residual connection is missing: add the sublayer's output to its input, "
                    "x + Sublayer(LayerNorm(x))"),
)


def _check(cls: Callable) -> Callable:
    what = "PreNormEncoderBlock"

    def check_one(seed, sizes, x, _memory, mask, train):
        *dims, dropout = sizes
        if train or dropout is None:  # training mode, where a rate of 1.0 drops everything and 0.0 nothing
            # (the reference, which refuses a rate of 1, only lends its weights: built with 0.0); built without
            # a rate, the block's default is 0.0: the output is the reference's; built with 1.0, it is x itself
            module, ref = build_beside(cls, TR.EncoderBlock(*dims, dropout=0.0, norm_first=True),
                                       sizes if train else tuple(dims), seed, x.dtype, what)
            run_method(module, "train", what=f"{what}.train")
            out, expected = run_block(module, ref, x, (), {"mask": mask}, what)
            if not close(out, x if train else expected):
                raise CheckFailed("built with dropout=1.0, in training mode the block should drop every sublayer's "
                                  "output and return x: each dropout uses the rate given" if train else
                                  "built without a dropout rate, the block drops values in training mode: the "
                                  "default rate is dropout=0.0")
            return
        module, ref = build_beside(cls, TR.EncoderBlock(*dims, dropout=dropout, norm_first=True), sizes, seed,
                                   x.dtype, what)
        out, expected = run_block(module, ref, x, (), {"mask": mask}, what)
        if close(out, expected):
            return
        again, _ = run_block(module, ref, x, (), {"mask": mask}, what)
        if not torch.equal(out, again):
            raise CheckFailed("the output changes from one call to the next in eval mode: dropout must be off "
                              "after model.eval() (use nn.Dropout modules, or F.dropout(x, p, self.training))")
        problem = encoder_sublayer_problem(module, ref, x, mask)
        if problem:
            raise CheckFailed(problem)
        sa = lambda h, m=mask: ref.self_attn(h, mask=m)[0]  # noqa: E731
        subs, norms = (sa, ref.ffn), (ref.norm1, ref.norm2)
        variants: list[tuple[str, Callable[..., torch.Tensor]]] = [
            (message, lambda mode=mode: _variant(x, subs, norms, mode)) for mode, message in _MODES
        ]
        variants += [
            ("one LayerNorm serves both sublayers: each has its own, norm1 before the self-attention and norm2 "
             "before the feed-forward network", lambda: _variant(x, subs, (ref.norm1, ref.norm1), "pre")),
            ("the norms are swapped: norm1 goes before the self-attention and norm2 before the feed-forward network",
             lambda: _variant(x, subs, norms[::-1], "pre")),
            ("the mask is not passed to the self-attention: padding keys must stay hidden",
             lambda: _variant(x, (lambda h: ref.self_attn(h)[0], ref.ffn), norms, "pre")),
        ]
        variants += [
            ("LayerNorm normalises each position's features (the last axis, d_model), not across "
             f"{axis}: use nn.LayerNorm(d_model)",
             lambda dim=dim: _variant(x, subs, [_axis_norm(n, dim) for n in norms], "pre"))
            for axis, dim in (("the positions", 1), ("the batch", 0))
        ]
        raise first_match(out, variants, "the output differs from the pre-norm block: x = x + SelfAttention("
                          "LayerNorm1(x)), then x = x + FeedForward(LayerNorm2(x))")

    return check_one


check_prenorm_encoder_block = Part(
    name="check_prenorm_encoder_block",
    visible=(
        Case("no mask", _case(801, 2, 5, 8, 2, 16)),
        Case("padding mask, dropout 0.25 (eval mode)", _case(802, 3, 4, 8, 2, 16, 0.25, mask=True)),
        Case("dropout 1.0 in training mode", _case(810, 2, 3, 8, 2, 16, 1.0, train=True)),
        Case("built without a dropout rate (training mode)", _case(811, 2, 3, 8, 2, 16, None)),
    ),
    check=_check,
    forbidden=FORBIDDEN_BLOCKS,
)
