"""Part 10: the training loss with teacher forcing, ``translation_loss(model, src, tgt, pad_id)``.

The loss is the mean over the non-pad target tokens of ``-ln P(y_t | y_<t, x)``:
the decoder reads ``tgt[:, :-1]`` (BOS first) and predicts ``tgt[:, 1:]``, as
:func:`attnbook.seq2seq.seq2seq_loss` does (forbidden here). The models are
:func:`attnbook.grading.fixtures.greedy_test_model` (ids 0 padding, 1 BOS,
2 EOS; never predicting padding or BOS), float32 as the fixture models are;
a visible case moves the padding to another id (the statement: any id, not
always 0). A wrong loss is compared with the losses students get instead
(:func:`_variants`).

>>> model, src, tgt, pad_id = _case(3, 2, 5, 6, (3, 1), pad_id=7)()
>>> model.config.pad_id, tgt.tolist()
(7, [[1, 4, 9, 10, 2, 7], [1, 8, 2, 7, 7, 7]])
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

from .._compare import close
from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..fixtures import BOS, EOS, PAD, greedy_test_model
from ..steps import require_scalar, require_unchanged, snapshot
from ._common import token_ids

VOCAB = 11


def _case(seed, B, S, T, lengths, *, pad_id=PAD, strided=False):
    """A model, src (B, S) and tgt (B, T) = BOS, ``lengths[b]`` content tokens, EOS, then padding; pad_id."""

    def make():
        model = greedy_test_model(seed, vocab=VOCAB)
        if pad_id != PAD:  # the model pads with pad_id, and never predicts it
            model.config = model.config.replace(pad_id=pad_id)
            with torch.no_grad():
                model.head.bias[pad_id] = -30.0
        src = token_ids(seed, B, S, pad_id, vocab=VOCAB)
        src[(src == BOS) | (src == EOS)] = 3  # the source holds content tokens and padding only
        g = torch.Generator().manual_seed(seed + 1)
        content = torch.tensor([t for t in range(VOCAB) if t not in (pad_id, BOS, EOS)])
        tgt = torch.full((B, T), pad_id, dtype=torch.long)  # (B, T)
        for b, n in enumerate(lengths):
            tgt[b, 0], tgt[b, n + 1] = BOS, EOS
            tgt[b, 1:n + 1] = content[torch.randint(len(content), (n,), generator=g)]
        if strided:  # non-contiguous (B, L) views of (L, B) tensors
            src, tgt = src.t().contiguous().t(), tgt.t().contiguous().t()
        return model, src, tgt, pad_id

    return make


def _ce(logits: torch.Tensor, targets: torch.Tensor, ignore: int | None, **kwargs: Any) -> torch.Tensor:
    """Cross-entropy of logits (B, L, V) against targets (B, L), in float64."""
    return F.cross_entropy(logits.double().reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           ignore_index=-100 if ignore is None else ignore, **kwargs)


def reference(model: torch.nn.Module, src: torch.Tensor, tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    """The mean of -ln P(tgt[:, 1:] | tgt[:, :-1], src) over the non-pad targets, in float64."""
    with torch.no_grad():
        return _ce(model(src, tgt[:, :-1]), tgt[:, 1:], pad_id)


@torch.no_grad()
def _variants(model, src, tgt, pad_id):
    """(message, loss) for the losses students compute instead."""
    logits, targets = model(src, tgt[:, :-1]), tgt[:, 1:]  # (B, T-1, V), (B, T-1)
    real = targets != pad_id
    per_token = _ce(logits, targets, pad_id, reduction="none").view(targets.shape)  # (B, T-1)
    last = real.cumsum(1) == real.sum(1, keepdim=True)  # the last real target of each row: EOS
    no_eos = targets.masked_fill(real & last, pad_id)
    bos_again = torch.cat([tgt[:, :1], tgt[:, :-1]], dim=1)  # BOS, then tgt without its last token
    right = per_token.sum() / real.sum()
    return [
        ("the targets are not shifted: the decoder reads tgt[:, :-1] (from BOS) and the logits at position t are "
         "scored against the next token, tgt[:, 1:]", _ce(model(src, tgt), tgt, pad_id)),
        ("the shift goes the wrong way: the decoder reads tgt[:, :-1] (from BOS) and predicts tgt[:, 1:]",
         _ce(model(src, tgt[:, 1:]), tgt[:, :-1], pad_id)),
        ("BOS is scored as a target: tgt already starts with BOS, so the decoder reads tgt[:, :-1] and the targets "
         "tgt[:, 1:] never include it", _ce(model(src, bos_again), tgt, pad_id)),
        ("padding is scored: the mean is over the target tokens that are not pad_id (ignore_index=pad_id)",
         _ce(logits, targets, None)),
        ("the padding was taken to be id 0: the padding is at the positions equal to pad_id, not 0 "
         "(ignore_index=pad_id; the padding id is the pad_id argument, which need not be 0)",
         _ce(logits, targets, 0)),
        ("the loss is summed; take the mean over the non-pad target tokens", per_token.sum()),
        ("the mean is over all non-pad target tokens of the batch together, not a mean of each sequence's mean",
         (per_token.sum(1) / real.sum(1)).mean()),
        ("EOS is left out of the targets: predicting EOS is how the model learns to stop, so it is scored like "
         "every other token", _ce(logits, no_eos, pad_id)),
        ("a softmax was applied before F.cross_entropy, which applies log-softmax itself: pass the raw logits",
         _ce(torch.softmax(logits.double(), -1), targets, pad_id)),
        ("F.nll_loss expects log-probabilities: use F.cross_entropy on the logits, or log_softmax first",
         F.nll_loss(logits.double().reshape(-1, logits.shape[-1]), targets.reshape(-1), ignore_index=pad_id)),
        ("the loss should be in nats (natural logarithm), not bits", right / math.log(2)),
    ]


def _check(fn: Callable) -> Callable:
    def check_one(model, src, tgt, pad_id):
        before = snapshot(src, tgt)
        result = run_student(fn, model, src, tgt, pad_id, what="translation_loss")
        require_unchanged(before, src, tgt, message="translation_loss changed src or tgt in place")
        loss = require_scalar(result, "translation_loss", ": take the mean over the non-pad target tokens")
        if not loss.is_floating_point():
            raise CheckFailed(f"translation_loss should return a float tensor, got {loss.dtype}")
        if not close(loss.detach().double(), reference(model, src, tgt, pad_id), torch.float32):
            raise first_match(loss, _variants(model, src, tgt, pad_id), "the loss differs from the mean of "
                              "-ln P(tgt[:, 1:] | tgt[:, :-1], src) over the non-pad target tokens", torch.float32)
        if not loss.requires_grad:
            raise CheckFailed("the loss is detached from the model's parameters (torch.no_grad, .detach()): "
                              "loss.backward() must reach them")

    return check_one


check_translation_loss = Part(
    name="check_translation_loss",
    visible=(
        Case("padded targets", _case(21, 3, 5, 7, (5, 2, 3))),
        Case("padded targets, another padding id", _case(40, 2, 4, 6, (4, 1), pad_id=5)),  # 0 is a content token
    ),
    check=_check,
    forbidden=("attnbook.seq2seq.seq2seq_loss",),
)
