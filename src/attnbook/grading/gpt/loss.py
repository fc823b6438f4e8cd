"""Part 4: the shifted next-token loss, ``next_token_loss(logits (B, T, V), ids (B, T)) -> mean cross-entropy``."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import check_loss
from ._common import GPT

__all__ = ["check_next_token_loss"]


def _case(seed: int, B: int, T: int, V: int, dtype: torch.dtype = torch.float32, *, strided: bool = False,
          grad: bool = False) -> Callable[[], tuple]:
    """Random logits (B, T, V) and ids (B, T); ``strided``: both are transposed views (non-contiguous)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        if strided:
            logits = (2.0 * torch.randn(B, V, T, generator=g)).to(dtype).transpose(1, 2)  # (B, T, V)
            ids = torch.randint(V, (T, B), generator=g).t()  # (B, T)
        else:
            logits = (2.0 * torch.randn(B, T, V, generator=g)).to(dtype)  # (B, T, V)
            ids = torch.randint(V, (B, T), generator=g)  # (B, T)
        return (logits, ids, "grad") if grad else (logits, ids)

    return make


VISIBLE = (
    Case("shapes and values", _case(0, 2, 5, 7)),
    Case("the gradient reaches the logits", _case(1, 2, 4, 5, grad=True)),
    Case("float64 logits", _case(2, 2, 3, 4, torch.float64)),
)


def _variants(logits: torch.Tensor, ids: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    V = logits.shape[-1]
    x = logits.detach().double()
    pred, target = x[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1)
    return [
        ("the targets are not shifted: the prediction at position t is scored against the token at t + 1, "
         "so compare logits[:, :-1] with ids[:, 1:]", F.cross_entropy(x.reshape(-1, V), ids.reshape(-1))),
        ("the shift goes the wrong way: the logits at position t predict the *next* token, so compare "
         "logits[:, :-1] with ids[:, 1:]", F.cross_entropy(x[:, 1:].reshape(-1, V), ids[:, :-1].reshape(-1))),
        ("the last position has nothing to predict: drop it (logits[:, :-1]) instead of wrapping around to the "
         "first token", F.cross_entropy(x.reshape(-1, V), ids.roll(-1, dims=1).reshape(-1))),
        ("the logits lost their first position: the prediction at t is made by logits[:, t], so drop the last "
         "position of the logits (logits[:, :-1]), the one that nothing follows",
         F.cross_entropy(x[:, 1:].reshape(-1, V), target)),
        ("the targets lost their last position: the token each prediction is scored against comes next, "
         "ids[:, 1:], so drop the first position of the ids (nothing predicts it)",
         F.cross_entropy(pred, ids[:, :-1].reshape(-1))),
        ("the loss is summed; take the mean over the B * (T - 1) predictions",
         F.cross_entropy(pred, target, reduction="sum")),
        ("the loss is summed over the positions and averaged over the batch only; take the mean over all "
         "B * (T - 1) predictions", F.cross_entropy(pred, target, reduction="sum") / logits.shape[0]),
        ("a softmax was applied before F.cross_entropy, which applies log-softmax itself: pass the raw logits",
         F.cross_entropy(torch.softmax(pred, -1), target)),
        ("F.nll_loss expects log-probabilities: use F.cross_entropy on the logits, or log_softmax first",
         F.nll_loss(torch.softmax(pred, -1), target)),
        ("F.nll_loss expects log-probabilities and a mean over the predictions: the loss is the mean of "
         "-log p(next token)", F.nll_loss(pred, target)),
        ("the loss should be in nats (natural logarithm), not bits", F.cross_entropy(pred, target) / math.log(2)),
        ("the logits and the targets are flattened in different orders: reshape both (B, T - 1, ...) arrays the "
         "same way", F.cross_entropy(pred, ids[:, 1:].t().reshape(-1))),
    ]


def _explain_size_one(fn: Callable, logits: torch.Tensor, ids: torch.Tensor, err: CheckFailed) -> None:
    """If the student's code failed on an axis of size one that it handles once the axis grows, say so."""
    B, T, _ = logits.shape
    if (B != 1 and T != 2) or "not implemented" in str(err) or "reference implementation" in str(err):
        return
    grown = (logits.detach().repeat(2 if B == 1 else 1, 2 if T == 2 else 1, 1),
             ids.repeat(2 if B == 1 else 1, 2 if T == 2 else 1))
    try:
        run_student(fn, *grown, what="next_token_loss")
    except CheckFailed:
        return
    raise CheckFailed("next_token_loss fails when an axis has size 1 (a batch of one sequence, or one prediction "
                      "when T = 2) and works when it is longer: a squeeze() drops every axis of size 1; squeeze "
                      "only the axis you mean, or none") from None


def _check(fn: Callable) -> Callable:
    def check(logits, ids, *mode):
        check_loss(fn, logits, ids, mode == ("grad",), what="next_token_loss", reference=GPT.next_token_loss,
                   variants=_variants, targets_name="ids", hint=": take the mean over every prediction",
                   fallback="the loss differs from the mean cross-entropy of logits[:, :-1] against ids[:, 1:]",
                   explain=_explain_size_one)

    return check


FORBIDDEN = ("attnbook.gpt.next_token_loss", "attnbook.gpt.stream_loss")

check_next_token_loss = Part(name="check_next_token_loss", visible=VISIBLE, check=_check,
                             forbidden=FORBIDDEN)
