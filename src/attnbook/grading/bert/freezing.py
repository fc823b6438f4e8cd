"""Part 6: ``freeze_all_but_top(model, k) -> number of trainable parameters``, through the notebook's
helper ``freeze_and_list(model, k) -> (that number, names of the parameters left trainable)``.

The model is an :mod:`attnbook.bert` model with a ``.bert`` encoder; it
crosses to the student's code as its class, config and weights, and the
helper reports what the student's function left trainable.

>>> model, k = check_freeze_all_but_top.visible[0].make()
>>> type(model).__name__, len(model.bert.encoder.layer), k
('BertForSequenceClassification', 3, 1)
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import BERT, small_config


def _case(cls_name: str, layers: int, k: int, frozen: bool = False) -> Callable[[], tuple]:
    """A model of ``layers`` encoder layers and ``k``; ``frozen``: every parameter frozen beforehand (the
    statement's "whatever their state before")."""
    def make():
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(layers * 10 + k)
            model = getattr(BERT, cls_name)(small_config(num_hidden_layers=layers))
        model.requires_grad_(not frozen)
        return model, k

    return make


def _trainable(model: torch.nn.Module, layers: list[int], head: bool = True, embeddings: bool = False) -> set[str]:
    """Names that would be trainable with the encoder ``layers`` (and the head, the embeddings) trainable."""
    names = set()
    for name, _ in model.named_parameters():
        if name.startswith("bert.encoder.layer."):
            if int(name.split(".")[3]) in layers:
                names.add(name)
        elif name.startswith("bert.embeddings."):
            if embeddings:
                names.add(name)
        elif head:
            names.add(name)
    return names


def _count(model: torch.nn.Module, names: set[str]) -> int:
    return sum(p.numel() for n, p in model.named_parameters() if n in names)


def _check(fn: Callable) -> Callable:
    def check_one(model, k):
        result = run_student(fn, model, k, what="freeze_and_list (your freeze_all_but_top)")
        if not isinstance(result, tuple) or len(result) != 2 or not isinstance(result[1], list):
            raise CheckFailed("freeze_and_list should return (count, names): keep the helper cell as it was given")
        count, names = result
        if isinstance(count, torch.Tensor) and count.dim() == 0:
            count = int(count)
        if not isinstance(count, int) or isinstance(count, bool):
            raise CheckFailed(f"freeze_all_but_top should return the number of trainable parameters as an int, got "
                              f"{type(count).__name__}")
        L = len(model.bert.encoder.layer)
        top = list(range(L - k, L))
        want = _trainable(model, top)
        got = set(names)
        if got != want:
            for message, variant in (
                ("the pooler and the classification head were frozen too: they must stay trainable, as they are "
                 "new or task-specific", _trainable(model, top, head=False)),
                ("the embeddings were left trainable: freeze them with the lower layers",
                 _trainable(model, top, embeddings=True)),
                ("the bottom k layers were left trainable: keep the top k (the last k of model.bert.encoder.layer) and "
                 "freeze the others", _trainable(model, list(range(k)))),
                ("one layer too many was left trainable: exactly the top k layers train",
                 _trainable(model, list(range(max(0, L - k - 1), L)))),
                ("one layer too few was left trainable: exactly the top k layers train",
                 _trainable(model, list(range(L - k + 1, L)))),
            ):
                if got == variant:
                    raise CheckFailed(message)
            if not got and not any(p.requires_grad for p in model.parameters()):
                raise CheckFailed("nothing is trainable: a model may arrive with parameters frozen, so set "
                                  "requires_grad=True on the ones that train, whatever their state before")
            if not (got & {n for n in want if not n.startswith("bert.encoder")}):
                raise CheckFailed("the pooler and the classification head must stay trainable")
            raise CheckFailed("the parameters left trainable should be the top k encoder layers, the pooler and the "
                              "head; the embeddings and the lower layers are frozen")
        if count != _count(model, want):
            if count == sum(p.numel() for p in model.parameters()):
                raise CheckFailed("the count includes frozen parameters: count only those with requires_grad=True")
            raise CheckFailed("the returned count is not the number of parameters with requires_grad=True")

    return check_one


check_freeze_all_but_top = Part(
    name="check_freeze_all_but_top",
    visible=(
        Case("three layers, k = 1", _case("BertForSequenceClassification", 3, 1)),
        Case("a model frozen before the call: whatever their state before",
             _case("BertForSequenceClassification", 2, 1, frozen=True)),
    ),
    check=_check,
    forbidden=("attnbook.bert.freezing.freeze_all_but_top",),
)
