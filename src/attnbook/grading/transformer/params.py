"""Part 12: ``encoder_block_params(d_model, num_heads, d_ff)``, the encoder block's parameter count, reasoned out.

The student counts the learned parameters of Part 7's block from the sizes
alone; the check compares the count with
:func:`attnbook.transformer_blocks.encoder_block_parameters` (which the tests
hold equal to ``sum(p.numel() for p in EncoderBlock(...).parameters())``) and
names the count each known mistake gives: biases forgotten, one LayerNorm, a
projection missing, a count that grows with the heads, d_ff and d_model
swapped in a bias.

>>> _case(512, 8, 2048)()
(512, 8, 2048)
>>> REF.encoder_block_parameters(*_case(8, 2, 16)())
600
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import torch

from .._core import private_modules, run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed

(REF,) = private_modules("attnbook.transformer_blocks")  # the checker's own copy

WHAT = "encoder_block_params"


def _case(d_model: int, num_heads: int, d_ff: int) -> Callable[[], tuple[int, int, int]]:
    return lambda: (d_model, num_heads, d_ff)


def _mistakes(d: int, h: int, f: int) -> list[tuple[str, int]]:
    """(the mistake in words, the count it gives) for the block of sizes d_model = d, num_heads = h, d_ff = f."""
    right = REF.encoder_block_parameters(d, h, f)
    projection = d * d + d
    d_k = d // h
    return [
        ("every bias is missing: an nn.Linear(n_in, n_out) has n_out biases beside its n_in × n_out weights "
         "(the four projections d_model each, fc1 d_ff, fc2 d_model)", right - 5 * d - f),
        ("4·d_model parameters are missing: the biases of the four projections (d_model each), or the two "
         "LayerNorms (a gain γ and a bias β of d_model entries each)", right - 4 * d),
        ("the feed-forward network's biases are missing: fc1 = nn.Linear(d_model, d_ff) has d_ff of them, "
         "fc2 = nn.Linear(d_ff, d_model) d_model", right - d - f),
        ("2·d_model parameters are missing: one LayerNorm instead of two, or LayerNorms without their bias β; "
         "the block has norm1 and norm2, each with a gain γ and a bias β of d_model entries", right - 2 * d),
        ("one projection is missing: the attention has four, W^Q, W^K, W^V and the output projection W^O, "
         "each d_model × d_model with a bias of d_model", right - projection),
        ("the count grows with num_heads, and it should not: the heads split d_model into num_heads slices of "
         "width d_k = d_model / num_heads, so W^Q of all heads together is one d_model × d_model matrix "
         "(num_heads · d_model · d_k = d_model²), whatever num_heads is", right + (h - 1) * 4 * projection),
        ("the count grows with num_heads, and it should not: W^Q, W^K and W^V of all heads together are one "
         "d_model × d_model matrix each (num_heads slices of width d_k = d_model / num_heads), not one per head, "
         "whatever num_heads is",
         right + (h - 1) * 3 * projection),
        ("each head's projection is d_model × d_k (it reads the whole d_model-wide input), not d_k × d_k: "
         "W^Q of all heads together is d_model × d_model", right - 4 * projection + 4 * h * (d_k * d_k + d_k)),
        ("d_ff and d_model are swapped in a bias: fc1 = nn.Linear(d_model, d_ff) has d_ff biases, "
         "fc2 = nn.Linear(d_ff, d_model) has d_model", right - f + d),
        ("d_ff and d_model are swapped in a bias: fc1 = nn.Linear(d_model, d_ff) has d_ff biases, "
         "fc2 = nn.Linear(d_ff, d_model) has d_model", right - d + f),
        ("one layer of the feed-forward network is missing: it has two, fc1 (d_model -> d_ff) and fc2 "
         "(d_ff -> d_model)", right - d * f - d),
        ("one layer of the feed-forward network is missing: it has two, fc1 (d_model -> d_ff) and fc2 "
         "(d_ff -> d_model)", right - d * f - f),
    ]


def _check(fn: Callable) -> Callable[..., None]:
    def check_one(d_model: int, num_heads: int, d_ff: int) -> None:
        got = run_student(fn, d_model, num_heads, d_ff, what=WHAT)
        sizes = f"d_model={d_model}, num_heads={num_heads}, d_ff={d_ff}"
        if isinstance(got, torch.Tensor) or isinstance(got, bool) or not isinstance(got, int):
            kind = "a tensor" if isinstance(got, torch.Tensor) else type(got).__name__
            raise CheckFailed(f"{WHAT} should return the count as a Python int, got {kind} (for {sizes}); "
                              "a count is a whole number: use // rather than / and no float")
        right = REF.encoder_block_parameters(d_model, num_heads, d_ff)
        if got == right:
            return
        named = [(f"for {sizes}: {message}", count) for message, count in _mistakes(d_model, num_heads, d_ff)]
        raise first_match(got, named,
                          f"for {sizes} the count is off by {got - right:+d}: count, layer by layer, the weights "
                          "and biases of the four projections, of fc1 and fc2, and the gain and bias of the two "
                          "LayerNorms", matches=operator.eq)

    return check_one


check_encoder_block_params = Part(
    name="check_encoder_block_params",
    visible=(
        Case("a small block", _case(8, 2, 16)),
        Case("d_ff below d_model", _case(12, 3, 6)),
        Case("the paper's base model", _case(512, 8, 2048)),
        Case("sizes too large to build", _case(2**20, 16, 2**22)),
    ),
    check=_check,
    forbidden=("attnbook.transformer_blocks.encoder_block_parameters",),
    # "not by building a module": no block (the package's, the student's or torch's) is built while it runs
    refused_in_calls=("attnbook.transformer_blocks.EncoderBlock", "torch.nn.Linear", "torch.nn.LayerNorm"),
)
