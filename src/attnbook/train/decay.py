"""Which parameters weight decay shrinks: :func:`decay_groups`, the one rule every trainer uses.

AdamW's decay pulls each weight towards zero by ``lr * weight_decay * w`` per
step. That is a useful prior for the weight matrices and kernels of linear,
convolution and embedding layers; it only fights what the other parameters
have to learn: biases, the gains and shifts of a norm (whose neutral value is
one, not zero), learned position embeddings and special tokens (a ViT's class
token and registers, an MAE's mask token). nanoGPT, timm (``no_weight_decay``)
and Hugging Face's trainers leave all of these undecayed; so does
:func:`attnbook.train.fit` when it builds its own AdamW, and so do
``GPT.configure_optimizers`` and chapter 6's ``train_classifier``.

The rule: a parameter is decayed when it has two dimensions or more, unless it
is a position table (a :class:`~attnbook.positional.LearnedPositions`, BERT's
``position_embeddings``, a ``*pos_embed``) or a special token (a parameter
named in :data:`SPECIAL_TOKENS`).

>>> import torch
>>> from torch import nn
>>> from attnbook.positional import LearnedPositions
>>> model = nn.Sequential(nn.Linear(3, 2), nn.LayerNorm(2), LearnedPositions(4, 2))
>>> groups = decay_groups(model, 0.05)
>>> [(g["weight_decay"], [tuple(p.shape) for p in g["params"]]) for g in groups]
[(0.05, [(2, 3)]), (0.0, [(2,), (2,), (2,), (4, 2)])]

The positions can have a decay of their own (chapter 6's ``vit-mnist`` uses it
to study what weight decay on them does); they then form a third group:

>>> [(g["weight_decay"], len(g["params"])) for g in decay_groups(model, 0.05, position_decay=0.5)]
[(0.05, 1), (0.0, 3), (0.5, 1)]
"""

from __future__ import annotations

import math

from torch import nn

from attnbook._checks import number_in
from attnbook.positional import LearnedPositions

__all__ = ["SPECIAL_TOKENS", "decay_groups"]

SPECIAL_TOKENS = ("cls_token", "reg_token", "mask_token")  # names of learned token vectors left undecayed


def _is_position(module_name: str, module: nn.Module, param_name: str) -> bool:
    return (isinstance(module, LearnedPositions) or module_name.split(".")[-1] == "position_embeddings"
            or param_name.endswith("pos_embed"))


def decay_groups(model: nn.Module, weight_decay: float, *,
                 position_decay: float = 0.0) -> list[dict[str, object]]:
    """AdamW parameter groups: ``weight_decay`` on weight matrices and kernels, none on the rest.

    Returns ``[decayed, undecayed]`` (each ``{"params": [...], "weight_decay": ...}``),
    and a third group of the position tables when ``position_decay`` is not 0.
    Only parameters with ``requires_grad`` are listed, each once (tied weights
    included), in ``model.named_parameters()`` order within a group.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    number_in("weight_decay", weight_decay, 0, math.inf)
    number_in("position_decay", position_decay, 0, math.inf)
    kind: dict[int, str] = {}
    for module_name, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            if id(p) in kind or not p.requires_grad:
                continue
            if _is_position(module_name, module, name):
                kind[id(p)] = "positions"
            elif p.dim() < 2 or name in SPECIAL_TOKENS:
                kind[id(p)] = "rest"
            else:
                kind[id(p)] = "decay"
    params = [p for p in model.parameters() if id(p) in kind]  # each once, in the model's order
    decay = [p for p in params if kind[id(p)] == "decay"]
    positions = [p for p in params if kind[id(p)] == "positions"]
    rest = [p for p in params if kind[id(p)] == "rest" or (kind[id(p)] == "positions" and not position_decay)]
    groups: list[dict[str, object]] = [{"params": decay, "weight_decay": weight_decay},
                                       {"params": rest, "weight_decay": 0.0}]
    if position_decay:
        groups.append({"params": positions, "weight_decay": position_decay})
    return groups
