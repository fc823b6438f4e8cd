"""Part 3: ``mlm_loss(logits (B, T, V), labels (B, T)) -> mean cross-entropy over the chosen positions``.

>>> logits, labels, *mode = CHECK.visible[0].make()
>>> tuple(logits.shape), bool((labels == -100).any())
((2, 9, 11), True)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from .._compare import close, require_tensor
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot
from ._common import BERT, IGNORE


def _case(seed: int, B: int, T: int, V: int, dtype=torch.float32, *, rate: float = 0.3, strided=False, grad=False):
    def make():
        g = torch.Generator().manual_seed(seed)
        if strided:
            logits = (2.0 * torch.randn(B, V, T, generator=g)).to(dtype).transpose(1, 2)  # (B, T, V) view
            labels = torch.randint(V, (T, B), generator=g).t()
            keep = torch.rand(T, B, generator=g).t() < rate
        else:
            logits = (2.0 * torch.randn(B, T, V, generator=g)).to(dtype)
            labels = torch.randint(V, (B, T), generator=g)
            keep = torch.rand(B, T, generator=g) < rate
        keep[0, 0] = True  # at least one chosen position
        labels = labels.masked_fill(~keep, IGNORE)
        return (logits, labels, "grad") if grad else (logits, labels)

    return make


def _variants(logits: torch.Tensor, labels: torch.Tensor):
    V = logits.shape[-1]
    x, y = logits.detach().double().reshape(-1, V), labels.reshape(-1)
    chosen = y != IGNORE
    per = F.cross_entropy(x, y, ignore_index=IGNORE, reduction="none")  # zero where not chosen
    return [
        ("the loss is averaged over all positions: take the mean over the chosen positions only (label != -100)",
         per.mean()),
        ("the loss is taken at every position (the -100 labels replaced by a token): only the chosen positions "
         "carry a loss", F.cross_entropy(x, y.clamp(min=0))),
        ("the loss is summed: take the mean over the chosen positions", per.sum()),
        ("a softmax was applied before F.cross_entropy, which applies log-softmax itself: pass the raw logits",
         F.cross_entropy(torch.softmax(x[chosen], -1), y[chosen])),
    ]


def _check(fn: Callable) -> Callable:
    def check_one(logits, labels, *mode):
        grad = mode == ("grad",)
        logits = logits.detach().clone().requires_grad_(grad)
        before = snapshot(logits, labels)
        result = run_student(fn, logits, labels, what="mlm_loss")
        if isinstance(result, float):
            raise CheckFailed("mlm_loss should return a tensor (a float from .item() cannot be back-propagated)")
        loss = require_tensor(result, "the result of mlm_loss")
        require_unchanged(before, logits, labels, message="mlm_loss changed logits or labels in place")
        if loss.dim() != 0:
            raise CheckFailed(f"mlm_loss should return one number (a 0-dim tensor), got shape {tuple(loss.shape)}")
        if loss.dtype != logits.dtype:
            raise CheckFailed(f"for {logits.dtype} logits the loss should be {logits.dtype} too")
        reference = BERT.mlm_loss(logits.detach(), labels)
        if not close(loss.detach(), reference):
            for message, variant in _variants(logits, labels):
                if close(loss.detach().double(), variant, torch.float32):
                    raise CheckFailed(message)
            raise CheckFailed("the loss differs from the mean cross-entropy over the positions whose label is not -100")
        if grad:
            if not loss.requires_grad:
                raise CheckFailed("the loss is detached from the logits: loss.backward() must reach them")
            (g,) = torch.autograd.grad(loss, logits)
            ref = logits.detach().clone().requires_grad_(True)
            (g_ref,) = torch.autograd.grad(BERT.mlm_loss(ref, labels), ref)
            if not close(g, g_ref):
                raise CheckFailed("the loss has the right value but the wrong gradient")

    return check_one


CHECK = Part(
    name="check_mlm_loss",
    visible=(Case("shapes and values", _case(0, 2, 9, 11)),),
    hidden=(
        Case("batch of one", _case(401, 1, 13, 7)),
        Case("a single chosen position", _case(402, 2, 6, 9, rate=0.0)),
        Case("float64 logits", _case(403, 3, 8, 12, torch.float64)),
        Case("large vocabulary", _case(404, 4, 10, 300, rate=0.15), weight=2.0),
        Case("the gradient reaches the logits", _case(405, 2, 7, 6, grad=True), weight=2.0),
        Case("non-contiguous logits and labels", _case(406, 3, 6, 9, strided=True)),
    ),
    check=_check,
    forbidden=("attnbook.bert.masking.mlm_loss",),
)
check_mlm_loss = CHECK
