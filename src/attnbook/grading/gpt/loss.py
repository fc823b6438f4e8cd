"""Part 4: the shifted next-token loss, ``next_token_loss(logits (B, T, V), ids (B, T)) -> mean cross-entropy``."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .._compare import close, require_tensor
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot
from ._common import GPT

__all__ = ["check_next_token_loss"]


def _case(seed: int, B: int, T: int, V: int, dtype=torch.float32, *, strided: bool = False, grad: bool = False):
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


VISIBLE = (Case("shapes and values", _case(0, 2, 5, 7)),)
HIDDEN = (
    Case("batch of one", _case(501, 1, 9, 11)),
    Case("two tokens: one prediction", _case(502, 3, 2, 5)),
    Case("batch of one", _case(506, 1, 2, 4)),  # one sequence of two tokens: a single prediction
    Case("float64 logits", _case(503, 2, 6, 13, torch.float64)),
    Case("large vocabulary", _case(504, 4, 8, 300), weight=2.0),
    Case("the gradient reaches the logits", _case(505, 2, 7, 6, grad=True), weight=2.0),
    Case("non-contiguous logits and ids", _case(507, 3, 6, 9, strided=True)),
    Case("non-contiguous logits and ids", _case(508, 2, 5, 7, torch.float64, strided=True, grad=True)),
)


def _variants(logits: torch.Tensor, ids: torch.Tensor):
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
        ("the loss is summed; take the mean over the B * (T - 1) predictions",
         F.cross_entropy(pred, target, reduction="sum")),
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
        grad = mode == ("grad",)
        logits = logits.detach().clone().requires_grad_(grad)  # clone keeps the strides of a transposed view
        before = snapshot(logits, ids)
        try:
            result = run_student(fn, logits, ids, what="next_token_loss")
        except CheckFailed as err:
            _explain_size_one(fn, logits, ids, err)
            raise
        if isinstance(result, float):
            raise CheckFailed("next_token_loss should return a tensor (a float from .item() cannot be "
                              "back-propagated)")
        loss = require_tensor(result, "the result of next_token_loss")
        require_unchanged(before, logits, ids, message="next_token_loss changed logits or ids in place")
        if loss.dim() != 0:
            raise CheckFailed(f"next_token_loss should return one number (a 0-dim tensor), got shape "
                              f"{tuple(loss.shape)}: take the mean over every prediction")
        if loss.dtype != logits.dtype:
            raise CheckFailed(f"for {logits.dtype} logits the loss should be {logits.dtype} too")
        if not close(loss.detach(), GPT.next_token_loss(logits.detach(), ids)):
            for message, variant in _variants(logits, ids):
                if close(loss.detach().double(), variant, torch.float32):
                    raise CheckFailed(message)
            raise CheckFailed("the loss differs from the mean cross-entropy of logits[:, :-1] against ids[:, 1:]")
        if grad:
            if not loss.requires_grad:
                raise CheckFailed("the loss is detached from the logits: loss.backward() must reach them")
            (g,) = torch.autograd.grad(loss, logits)
            ref = logits.detach().clone().requires_grad_(True)
            (g_ref,) = torch.autograd.grad(GPT.next_token_loss(ref, ids), ref)
            if not close(g, g_ref):
                raise CheckFailed("the loss has the right value but the wrong gradient")

    return check


FORBIDDEN = ("attnbook.gpt.next_token_loss", "attnbook.gpt.stream_loss")

check_next_token_loss = Part(name="check_next_token_loss", visible=VISIBLE, hidden=HIDDEN, check=_check,
                             forbidden=FORBIDDEN)
