"""Part 11: ``greedy_decode(model, src, bos_id, eos_id, max_len)`` -> the generated ids (B, L), on small random models.

The models come from :func:`attnbook.grading.fixtures.greedy_test_model`
(ids 0 padding, 1 BOS, 2 EOS); a visible case moves the padding to another id (``model.config.pad_id``).

>>> model, src, bos_id, eos_id, max_len = _greedy_case(5, 2.0, 2, 4, 3, lengths=(4, 1), pad_id=7)()
>>> model.config.pad_id, src[1].tolist()
(7, [6, 7, 7, 7])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from .._compare import require_tensor
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..fixtures import BOS, EOS, PAD, greedy_test_model
from ..steps import require_unchanged, snapshot
from ._common import REF, TR, token_ids

if TYPE_CHECKING:
    from attnbook.transformer import Transformer


def _greedy_case(seed, eos_bias, B, S, max_len, lengths=None, pad_id=PAD, strided=False, eos_id=EOS, bos_id=BOS):
    """A model, a source (B, S) of content tokens and padding, BOS, EOS and max_len (``eos_id``: the model's
    output rows of EOS and ``eos_id`` swapped, so that ``eos_id`` ends its sequences; ``bos_id``: the
    decoder starts from another token)."""

    def make():
        model = greedy_test_model(seed, eos_bias)
        if eos_id != EOS:
            with torch.no_grad():
                for p in (model.head.weight, model.head.bias):
                    p[[EOS, eos_id]] = p[[eos_id, EOS]].clone()
        if pad_id != PAD:  # the model pads with pad_id, and never predicts it
            model.config = model.config.replace(pad_id=pad_id)
            with torch.no_grad():
                model.head.bias[pad_id] = -30.0
        ids = token_ids(seed, B, S, pad_id, vocab=11, lengths=lengths)
        ids[ids == BOS] = 3  # the source holds content tokens and padding only
        ids[ids == EOS] = 4
        return model, ids.t().contiguous().t() if strided else ids, bos_id, eos_id, max_len

    return make


@torch.no_grad()
def _greedy_variant(model, src, bos_id, eos_id, max_len, *, memory_mask=True, after_eos="pad", stop="all",
                    position=-1, prefix=True, pad_id=None):
    """Greedy decoding as students get it wrong (the default arguments: right)."""
    pad_id = model.config.pad_id if pad_id is None else pad_id
    memory = model.encode(src)
    mask = REF.padding_mask(src, pad_id) if memory_mask else None
    ys = torch.full((src.shape[0], 1), bos_id, dtype=torch.long)
    done = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(ys if prefix else ys[:, -1:], memory, mask)  # (B, t, V)
        next_id = logits[:, position].argmax(dim=-1)  # (B,)
        if after_eos == "pad":
            next_id = next_id.masked_fill(done, pad_id)
        ys = torch.cat([ys, next_id[:, None]], dim=1)
        done |= next_id == eos_id
        if (stop == "all" and bool(done.all())) or (stop == "first" and bool(done.any())):
            break
    return ys[:, 1:]


_AFTER_EOS = ("a sequence goes on after its EOS: once a sequence has emitted EOS it must only get padding "
              "(model.config.pad_id)")
_KNOWN = (
    (_AFTER_EOS, dict(after_eos="keep", stop="never")),
    (_AFTER_EOS, dict(after_eos="keep")),
    ("decoding goes on after every sequence has finished: stop as soon as all of them have emitted EOS",
     dict(stop="never")),
    ("decoding stopped when the first sequence finished: each sequence stops at its own EOS, and "
     "decoding goes on until all have finished (or max_len)", dict(stop="first")),
    ("the next token must come from the logits of the last position, logits[:, -1]", dict(position=0)),
    ("the decoder must see the whole prefix generated so far (BOS and every token after it), not only "
     "the last token: a Transformer decoder keeps no hidden state between steps", dict(prefix=False)),
    ("the source padding must stay hidden from cross-attention: pass padding_mask(src, pad_id) as "
     "memory_mask", dict(memory_mask=False)),
    ("the padding id is model.config.pad_id, which need not be 0: use it for the source's padding mask and "
     "after EOS", dict(pad_id=0)),
)


def _diagnose_greedy(ids: torch.Tensor, model: Transformer, src: torch.Tensor, bos_id: int, eos_id: int,
                     max_len: int) -> str:
    args = (model, src, bos_id, eos_id, max_len)
    expected = _greedy_variant(*args)
    with_bos = ids.shape[1] == expected.shape[1] + 1 and bool((ids[:, 0] == bos_id).all())
    if with_bos and torch.equal(ids[:, 1:], expected):
        return "the returned ids should not include BOS: return the generated tokens only (EOS included)"
    for message, kwargs in _KNOWN:
        if torch.equal(ids, _greedy_variant(*args, **kwargs)):
            return message
    if bos_id != BOS and torch.equal(ids, _greedy_variant(model, src, BOS, eos_id, max_len)):
        return f"the target must start from the bos_id given (here {bos_id}), not from a fixed id"
    if eos_id != EOS and torch.equal(ids, _greedy_variant(model, src, bos_id, EOS, max_len)):
        return f"a sequence finishes at the eos_id given (here {eos_id}), not at a fixed id"
    if ids.shape[1] > max_len:
        return "more than max_len tokens were generated"
    return ("the generated ids differ from greedy decoding: start from BOS and at each step append the most "
            "likely next token (the argmax of the last position's logits)")


def _check(fn: Callable) -> Callable:
    def check_one(model, src, bos_id, eos_id, max_len):
        expected = TR.greedy_decode(model, src, bos_id, eos_id, max_len)
        before = snapshot(src)
        ids = require_tensor(run_student(fn, model, src, bos_id, eos_id, max_len, what="greedy_decode"),
                             "the result of greedy_decode")
        require_unchanged(before, src, message="greedy_decode changed src in place")
        if ids.is_floating_point() or ids.dtype == torch.bool:
            raise CheckFailed(f"greedy_decode should return integer token ids (torch.long), got {ids.dtype}")
        if ids.dim() != 2 or ids.shape[0] != src.shape[0]:
            raise CheckFailed("greedy_decode should return a (B, L) tensor: one row of generated ids per source")
        if not torch.equal(ids.long(), expected):
            raise CheckFailed(_diagnose_greedy(ids.long(), model, src, bos_id, eos_id, max_len))

    return check_one


# Seeds and EOS biases chosen so that sequences finish at different steps (and, where the case says so,
# some never do), and so that each mistake that _diagnose_greedy names changes the result of some case.
check_greedy_decode = Part(
    name="check_greedy_decode",
    visible=(
        Case("three sources", _greedy_case(14, 1.5, 3, 6, 8, lengths=(6, 6, 6))),
        Case("padded sources, another padding id", _greedy_case(37, 2.0, 3, 6, 8, lengths=(4, 6, 2), pad_id=9)),
        Case("another BOS id", _greedy_case(61, 1.5, 2, 5, 8, lengths=(5, 3), bos_id=6)),
        Case("another EOS id", _greedy_case(83, 1.5, 3, 5, 8, lengths=(5, 4, 2), eos_id=8)),
        Case("max_len reached before every sequence ends", _greedy_case(75, 1.5, 3, 5, 3, lengths=(5, 5, 2))),
    ),
    check=_check,
    forbidden=("attnbook.transformer.greedy_decode",),
)
