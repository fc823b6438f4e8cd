"""Part 3: ``mlm_loss(logits (B, T, V), labels (B, T)) -> mean cross-entropy over the chosen positions``.

>>> logits, labels, *mode = check_mlm_loss.visible[0].make()
>>> tuple(logits.shape), bool((labels == -100).any())
((2, 9, 11), True)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from ..engine import Case, Part
from ..steps import check_loss
from ._common import BERT, IGNORE


def _case(seed: int, B: int, T: int, V: int, dtype: torch.dtype = torch.float32, *, rate: float = 0.3,
          strided: bool = False, grad: bool = False) -> Callable[[], tuple]:
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


def _variants(logits: torch.Tensor, labels: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
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
        check_loss(fn, logits, labels, mode == ("grad",), what="mlm_loss", reference=BERT.mlm_loss,
                   variants=_variants, targets_name="labels", fallback="the loss differs from the mean "
                   "cross-entropy over the positions whose label is not -100")

    return check_one


check_mlm_loss = Part(
    name="check_mlm_loss",
    visible=(
        Case("shapes and values", _case(0, 2, 9, 11)),
        Case("a 0-dim loss that backward() goes through", _case(1, 2, 5, 7, grad=True)),
    ),
    check=_check,
    forbidden=("attnbook.bert.masking.mlm_loss",),
)
