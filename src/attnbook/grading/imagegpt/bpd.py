"""Part 4: ``bits_per_dim(logits (..., V), targets (...)) -> mean -log2 p(target)``, a 0-dim tensor.

The mean is over every pixel of every image. The named mistakes: nats (no
division by ln 2), a mean per image (bits per image), a sum, a softmax
applied before the cross-entropy, ``log10``, a loss that cannot be
back-propagated.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

from ..engine import Case, Part
from ..steps import check_loss
from ._common import IG

__all__ = ["check_bits_per_dim"]


def _case(seed: int, shape: tuple[int, ...], V: int, dtype: torch.dtype = torch.float32, *,
          strided: bool = False, grad: bool = False) -> Callable[[], tuple]:
    """Logits (*shape, V) and targets (*shape); ``strided``: the logits (B, T, V) are a transposed view."""

    def make():
        g = torch.Generator().manual_seed(seed)
        if strided:  # stored (T, B, V) and transposed: the first two axes cannot be merged by a view
            logits = (2.0 * torch.randn(shape[1], shape[0], V, generator=g)).to(dtype).transpose(0, 1)  # (B, T, V)
        else:
            logits = (2.0 * torch.randn(*shape, V, generator=g)).to(dtype)
        targets = torch.randint(V, shape, generator=g)
        return (logits, targets, "grad") if grad else (logits, targets)

    return make


VISIBLE = (
    Case("sequences (B, T, V)", _case(0, (2, 16), 8)),
    Case("float64 logits", _case(10, (2, 3), 4, torch.float64)),
    Case("the gradient reaches the logits", _case(11, (2, 3), 4, grad=True)),
)


def _variants(logits: torch.Tensor, targets: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    V = logits.shape[-1]
    x = logits.detach().double()
    nll = F.cross_entropy(x.reshape(-1, V), targets.reshape(-1), reduction="none").view(targets.shape)  # nats
    bits = nll / math.log(2)
    per_image = bits.reshape(bits.shape[0], -1).sum(1).mean() if bits.dim() > 1 else bits.sum()
    return [
        ("the result is in nats: bits per dimension uses log base 2, so divide the cross-entropy by ln 2",
         nll.mean()),
        ("this is a mean per image (bits per image): divide by the number of pixels too, to get bits per "
         "dimension", per_image),
        ("the bits are summed: take the mean over every pixel of every image", bits.sum()),
        ("log base 10 is not bits: divide the cross-entropy by ln 2", nll.mean() / math.log(10)),
        ("a softmax was applied before F.cross_entropy, which applies log-softmax itself: pass the raw logits",
         F.cross_entropy(torch.softmax(x, -1).reshape(-1, V), targets.reshape(-1)) / math.log(2)),
    ]


def _check(fn: Callable) -> Callable:
    def check(logits, targets, *mode):
        check_loss(fn, logits, targets, mode == ("grad",), what="bits_per_dim", reference=IG.bits_per_dim,
                   variants=_variants, targets_name="targets", hint=": take the mean over every pixel",
                   value_name="the result", fallback="the value differs from the mean over all pixels of "
                   "-log2 softmax(logits)[target]")

    return check


FORBIDDEN = ("attnbook.imagegpt.model.bits_per_dim",)

check_bits_per_dim = Part(name="check_bits_per_dim", visible=VISIBLE, check=_check,
                          forbidden=FORBIDDEN)
