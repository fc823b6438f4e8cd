"""Part 8: ``initial_mlm_loss(vocab_size, mlm_probability=0.15) -> ln V``, an untrained model's MLM loss.

A prediction, reasoned before it is measured: logits near zero give every id
the probability ``1 / V``, each chosen position costs ``-ln(1 / V) = ln V``
nats, and ``mlm_loss`` is a mean over the chosen positions, so the share
chosen changes nothing. The check compares the number with
:func:`attnbook.bert.uniform_mlm_loss` and names the usual slips (bits instead
of nats, the probability instead of its log, the loss scaled by the share).

>>> check_initial_mlm_loss.visible[0].make(), check_initial_mlm_loss.visible[1].make()
((30522,), (8000, 0.4))
>>> check_initial_mlm_loss(lambda vocab_size, mlm_probability=0.15: math.log2(vocab_size))
Traceback (most recent call last):
...
attnbook.grading.errors.CheckFailed: for V = 30522, 14.9 is in bits (log base 2): the cross-entropy of ...
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch

from .._compare import same_number
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import BERT

WHAT = "initial_mlm_loss"


def _case(vocab_size: int, mlm_probability: float | None = None) -> Callable[[], tuple]:
    """The arguments of one case: ``(vocab_size,)``, or with ``mlm_probability`` when it is given."""
    def make():
        return (vocab_size,) if mlm_probability is None else (vocab_size, mlm_probability)

    return make


def _number(value: object) -> float:
    """The student's answer as a float: an int, a float or a one-element tensor."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.dtype.is_complex:
        return float(value.detach().reshape(()).item())
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise CheckFailed(f"{WHAT} should return a number (a float, the loss in nats), got {type(value).__name__}")


def _close(a: float, b: float) -> bool:
    return same_number(a, b)


def _mistakes(V: int, p: float) -> list[tuple[str, float]]:
    """The usual slips, each with the number it gives, and why it is wrong."""
    ln = math.log(V)
    return [
        ("is in bits (log base 2): the cross-entropy of F.cross_entropy and mlm_loss uses the natural log, in nats",
         math.log2(V)),
        ("uses log base 10: the cross-entropy of F.cross_entropy and mlm_loss uses the natural log, in nats",
         math.log10(V)),
        ("is the probability of the right token, 1/V: the loss at a position is minus its log", 1 / V),
        ("is the number of tokens V: the loss at a position is minus the log of the probability 1/V", float(V)),
        ("has the wrong sign: the loss is -ln p and p = 1/V is below 1, so the loss is positive", -ln),
        ("is scaled by mlm_probability: mlm_loss is a mean over the chosen positions only, so the share of them "
         "chosen does not change it", ln * p),
        ("is divided by mlm_probability: mlm_loss is a mean over the chosen positions only, so the share of them "
         "chosen does not change it", ln / p),
        ("is a perfect model's loss: an untrained model, its logits near zero, spreads its probability evenly "
         "over the vocabulary", 0.0),
    ]


def _check(fn: Callable) -> Callable:
    def check_one(vocab_size: int, *rest: float) -> None:
        value = _number(run_student(fn, vocab_size, *rest, what=WHAT))
        right = BERT.uniform_mlm_loss(vocab_size)
        if _close(value, right):
            return
        p = rest[0] if rest else 0.15
        shown = f"for V = {vocab_size}" + (f" and mlm_probability = {p}" if rest else "")
        for message, wrong in _mistakes(vocab_size, p):
            if _close(value, wrong) and not _close(wrong, right):
                raise CheckFailed(f"{shown}, {value:.3g} {message}")
        raise CheckFailed(f"{shown}, {value:.4g} is not the MLM loss of a model whose logits are all equal: its "
                          "probability for the right token at a chosen position, and minus the log of that")

    return check_one


check_initial_mlm_loss = Part(
    name="check_initial_mlm_loss",
    visible=(
        Case("BERT-base's vocabulary", _case(30522)),
        Case("another vocabulary and share chosen", _case(8000, 0.4)),
        Case("two tokens", _case(2, 0.15)),
    ),
    check=_check,
    forbidden=("attnbook.bert.masking.uniform_mlm_loss",),
)
