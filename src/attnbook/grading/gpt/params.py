"""Part 7: ``gpt_params(vocab_size, block_size, n_embd, n_layer) -> int``, the parameter count of the course's GPT.

A reasoning part: the student counts, from the architecture alone, the
parameters of :class:`attnbook.gpt.GPT` with those sizes, and the count is
compared with ``sum(p.numel() for p in GPT(...).parameters())`` of the checks'
private copy of the model (the cases are small enough to build in
milliseconds). A wrong count is matched against the
mistakes students make: the tied output layer counted again, the position
table, the LayerNorms or their biases forgotten, a feed-forward width of
``C`` instead of ``4 C``, the blocks counted once.

>>> _reference(10, 8, 4, 1)  # a visible case: 10*4 + 8*4 + (12*16 + 13*4) + 2*4
324
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

import torch

from .._core import run_student
from ..engine import Case, Part, first_match
from ..steps import require_count
from ._common import GPT

__all__ = ["check_gpt_params"]


def _case(vocab_size: int, block_size: int, n_embd: int, n_layer: int) -> Callable[[], tuple[int, int, int, int]]:
    """The arguments of one case: the sizes of a GPT."""
    return lambda: (vocab_size, block_size, n_embd, n_layer)


# The first case has sizes whose known mistakes all give different counts, so that its message names the mistake
VISIBLE = (
    Case("several blocks", _case(1000, 32, 16, 2)),
    Case("several blocks", _case(65, 64, 48, 3)),  # the gpt-nano preset, the cell below the part measures it
    Case("one block", _case(10, 8, 4, 1)),
)


def _reference(vocab_size: int, block_size: int, n_embd: int, n_layer: int) -> int:
    """The number of parameters of the reference GPT with those sizes (the tied matrix counted once)."""
    config = GPT.GPTConfig(vocab_size=vocab_size, block_size=block_size, n_embd=n_embd, n_layer=n_layer, n_head=1)
    # a real model on the CPU (the cases keep it to a few million parameters); the "meta" device would cost no
    # memory, but its first random initialisation imports torch._dynamo, seconds of every grading run
    with torch.random.fork_rng(devices=[]):  # its initialisation leaves the student's random state alone
        model = GPT.GPT(config)
    return sum(p.numel() for p in model.parameters())


def _mistakes(V: int, T: int, C: int, L: int) -> list[tuple[str, int]]:
    """The counts that known mistakes give, each with its explanation."""
    right = _reference(V, T, C, L)
    block = 12 * C * C + 13 * C
    return [
        ("the output layer is tied to the token embedding (lm_head.weight is wte.weight): the (V, C) matrix "
         "counts once", right + V * C),
        ("the output layer is tied to the token embedding and has no bias: count neither its weight nor a bias",
         right + V * C + V),
        ("the output layer has no bias (bias=False)", right + V),
        ("the learned position table (block_size, C) is missing: a GPT learns one vector per position",
         right - T * C),
        ("the LayerNorms are missing: ln_1 and ln_2 in every block and the final ln_f, each a gain and a bias "
         "of C values", right - (2 * L + 1) * 2 * C),
        ("the final LayerNorm ln_f (a gain and a bias of C values) is missing", right - 2 * C),
        ("every block has two LayerNorms, ln_1 before the attention and ln_2 before the feed-forward layer, "
         "each a gain and a bias of C values", right - L * 2 * C),
        ("a LayerNorm has two vectors of C values, a gain and a bias: one of them was counted",
         right - (2 * L + 1) * C),
        ("the feed-forward layer widens to 4 C (c_fc: C -> 4C, c_proj: 4C -> C), not C",
         right - L * (6 * C * C + 3 * C)),
        ("the biases of the Linear layers are missing (c_attn, attn.c_proj, c_fc and mlp.c_proj have one each)",
         right - 9 * L * C),
        ("c_attn's bias is missing: a Linear layer has one bias value per output, 3 C for the queries, keys and "
         "values", right - 3 * L * C),
        ("the attention's output projection c_proj (a C x C weight and a bias) is missing", right - L * (C * C + C)),
        ("every block has its own weights: n_layer blocks count n_layer times", right - (L - 1) * block),
    ]


def _check(fn: Callable) -> Callable:
    def check(vocab_size, block_size, n_embd, n_layer):
        result = run_student(fn, vocab_size, block_size, n_embd, n_layer, what="gpt_params")
        got = require_count(result, "gpt_params", "parameters")
        right = _reference(vocab_size, block_size, n_embd, n_layer)
        if got == right:
            return
        share = got / right if right else math.inf
        raise first_match(got, _mistakes(vocab_size, block_size, n_embd, n_layer),
                          "the count differs from the GPT's parameters "
                          f"({'more' if share > 1 else 'fewer'} than there are): count each piece, the token and "
                          "position tables, per block two LayerNorms, c_attn, c_proj, c_fc and c_proj with their "
                          "biases, and the final LayerNorm; the output layer is tied", matches=operator.eq)

    return check


# The counters of attnbook.runtime would do the whole job on a built model. The statement asks for a count by
# reasoning: while the student's function runs, no model is built either (the package's GPT, on the meta device
# or anywhere, or any model made of layers), though Part 6's provided cell builds one before it.
FORBIDDEN = ("attnbook.runtime.count_parameters", "attnbook.runtime.count_parameters_on_meta")
BUILT = ("attnbook.gpt.model.GPT", "torch.nn.Linear", "torch.nn.Embedding", "torch.nn.LayerNorm")

check_gpt_params = Part(name="check_gpt_params", visible=VISIBLE, check=_check, forbidden=FORBIDDEN,
                        refused_in_calls=BUILT)
