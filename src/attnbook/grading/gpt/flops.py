"""Part 12: ``forward_flops(vocab_size, n_embd, n_layer, n_head, n_kv_head, T) -> int``, a forward pass's FLOPs.

A reasoning part: the student counts, from the architecture alone, the
floating-point operations of one forward pass of :class:`attnbook.gpt.GPT`
over a window of ``T`` tokens (a batch of one), as PyTorch's
``FlopCounterMode`` counts them: matrix products only, ``2 m n p`` for an
``(m, n) @ (n, p)``. The reference is :func:`attnbook.gpt.forward_flops`, which
the tests hold to ``FlopCounterMode`` over a real forward pass for every case.
A wrong count is matched against the mistakes students make: one token's
count instead of the window's, multiply-adds instead of FLOPs, a training
step's three passes, grouped-query attention ignored or taken to shrink the
queries' work, the causal mask taken to halve the scores, attention's own
products or the tied output layer left out, the embedding counted as a
product, a feed-forward width of ``C``, the blocks counted once.

>>> _reference(50, 8, 1, 2, 1, 3)  # a visible case: 2*3*8*(8+8+8+64) + 4*9*8 + 2*3*8*50
6912
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable

from .._core import run_student
from ..engine import Case, Part, first_match
from ..steps import require_count
from ._common import GPT

__all__ = ["check_forward_flops"]


def _case(vocab_size: int, n_embd: int, n_layer: int, n_head: int, n_kv_head: int,
          T: int) -> Callable[[], tuple[int, int, int, int, int, int]]:
    """The arguments of one case: the sizes of a GPT and the length of the window."""
    return lambda: (vocab_size, n_embd, n_layer, n_head, n_kv_head, T)


# The first case has sizes whose known mistakes all give different counts, so that its message names the mistake
VISIBLE = (
    Case("grouped-query attention, several blocks", _case(100, 16, 2, 4, 2, 12)),
    Case("GPT-2's attention (n_kv_head = n_head)", _case(65, 48, 3, 3, 3, 64)),  # gpt-nano, a full window
    Case("one block, multi-query attention", _case(50, 8, 1, 2, 1, 3)),
)


def _reference(vocab_size: int, n_embd: int, n_layer: int, n_head: int, n_kv_head: int, T: int) -> int:
    """The reference's count for a GPT of these sizes and a window of T tokens."""
    config = GPT.GPTConfig(vocab_size=vocab_size, block_size=T, n_embd=n_embd, n_layer=n_layer, n_head=n_head,
                           n_kv_head=n_kv_head)
    return GPT.forward_flops(config, T)


def _mistakes(V: int, C: int, L: int, nh: int, nkv: int, T: int) -> list[tuple[str, int | float]]:
    """The counts that known mistakes give, each with its explanation."""
    right = _reference(V, C, L, nh, nkv, T)
    hs = C // nh
    attention = 4 * T * T * C  # per block: Q K^T and the weights times V of every query head
    block = 2 * T * C * (C + 2 * nkv * hs) + 2 * T * C * C + 16 * T * C * C + attention
    return [
        ("that is the count of one token: the window has T tokens, each through every matrix, and each of the T "
         "queries meets T keys", right / T),
        ("a product of an (m, n) by an (n, p) matrix costs 2 m n p FLOPs, a multiply and an add for each term: "
         "this counts multiply-adds", right / 2),
        ("that is a training step (the backward pass costs about twice the forward): count one forward pass",
         3 * right),
        ("with grouped-query attention c_attn makes C + 2 n_kv_head hs outputs (hs = n_embd / n_head): the "
         "queries of every head, the keys and values of n_kv_head heads only", right + L * 4 * T * C * (C - nkv * hs)),
        ("grouped-query attention shares keys and values between query heads, it removes no query head: each of "
         "the n_head query heads computes its own T x T scores and mixes the values with them",
         right - L * 4 * T * T * hs * (nh - nkv)),
        ("the causal mask saves nothing in this count: all T x T scores are computed, then the masked ones are "
         "set to -inf before the softmax", right - L * 2 * C * T * (T - 1)),
        ("attention's own products count too: Q K^T and the weights times V, 2 T^2 hs FLOPs each for every query "
         "head of every block", right - L * attention),
        ("attention's products grow as T^2 over the window: each of the T queries is compared with T keys (4 T C "
         "per token is already per token)", right - L * attention + L * 4 * T * C),
        ("the output layer is tied to the token embedding, which saves parameters, not work: lm_head still "
         "multiplies (T, C) by (C, V), 2 T C V FLOPs", right - 2 * T * C * V),
        ("the token embedding is a look-up of rows, not a product: only the output layer multiplies by the (C, V) "
         "matrix", right + 2 * T * C * V),
        ("the feed-forward layer widens to 4C: c_fc multiplies by (C, 4C) and c_proj by (4C, C)",
         right - L * 12 * T * C * C),
        ("the attention's output projection c_proj, (T, C) by (C, C), is a product too", right - L * 2 * T * C * C),
        ("every block has its own matrices and does the same work: n_layer blocks count n_layer times",
         right - (L - 1) * block),
    ]


def _check(fn: Callable) -> Callable:
    def check(vocab_size, n_embd, n_layer, n_head, n_kv_head, T):
        result = run_student(fn, vocab_size, n_embd, n_layer, n_head, n_kv_head, T, what="forward_flops")
        got = require_count(result, "forward_flops", "FLOPs")
        right = _reference(vocab_size, n_embd, n_layer, n_head, n_kv_head, T)
        if got == right:
            return
        share = got / right if right else math.inf
        raise first_match(got, _mistakes(vocab_size, n_embd, n_layer, n_head, n_kv_head, T),
                          "the count differs from the forward pass's FLOPs "
                          f"({'more' if share > 1 else 'fewer'} than it does): per block c_attn, c_proj, c_fc and "
                          "mlp.c_proj, and attention's two T x T products per query head, then the output layer; "
                          "2 m n p for each (m, n) by (n, p) product", matches=operator.eq)

    return check


# The reference, and torch's counter, which would measure a GPT built with these sizes. The statement asks for a
# count by reasoning: while the student's function runs, no model is built either (the package's GPT, on the meta
# device or anywhere, with its estimate_flops_per_token, or any model made of layers), though Parts 6 and 7's
# provided cells build one before it.
FORBIDDEN = ("attnbook.gpt.model.forward_flops", "torch.utils.flop_counter.FlopCounterMode")
BUILT = ("attnbook.gpt.model.GPT", "torch.nn.Linear", "torch.nn.Embedding", "torch.nn.LayerNorm")

check_forward_flops = Part(name="check_forward_flops", visible=VISIBLE, check=_check, forbidden=FORBIDDEN,
                           refused_in_calls=BUILT)
