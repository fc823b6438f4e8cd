"""Part 4: ``attention_rollout(maps, add_residual=True) -> (B, T, T)``, the heads averaged, rows renormalised.

``maps`` is a list of per-layer attention weights (B, nh, T, T), first layer first. Each
layer's heads are averaged, the identity added when ``add_residual`` (the residual
connection), the rows renormalised to sum to 1, and the layers multiplied with the first
layer on the right, ``A_L ... A_2 A_1``. A wrong result is compared with the usual mistakes:
no identity, no renormalisation, the product in the wrong order, heads fused by max or
averaged after the product, columns normalised instead of rows, no identity by default.

>>> maps, residual = check_attention_rollout.visible[0].make()
>>> len(maps), tuple(maps[0].shape), residual
(3, (2, 2, 5, 5), True)
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close, require_tensor
from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import VIT


def _maps(seed, L, B, nh, T, residual=True, dtype=torch.float32, swap=False):
    """A maker of ``(maps, add_residual)``: L random row-stochastic (B, nh, T, T) maps; ``residual=None``
    calls ``attention_rollout(maps)``, leaving ``add_residual`` to its default, True."""

    def make():
        g = torch.Generator().manual_seed(seed)
        maps = [(2.0 * torch.randn(B, nh, T, T, generator=g, dtype=dtype)).softmax(-1) for _ in range(L)]
        if swap:  # the same values, column-major in memory
            maps = [m.transpose(-1, -2).contiguous().transpose(-1, -2) for m in maps]
        return maps, residual

    return make


def _rollout(maps, residual, fuse="mean", order="right", normalise="rows", per_head=False):
    """Rollouts as students compute them (the defaults: right)."""
    if per_head:  # roll out each head on its own, then average
        heads = [_rollout([m[:, h:h + 1] for m in maps], residual, fuse, order, normalise)
                 for h in range(maps[0].shape[1])]
        return torch.stack(heads).mean(0)
    eye = torch.eye(maps[0].shape[-1], dtype=torch.float64)
    out = None
    for m in maps:
        a = m.double().mean(1) if fuse == "mean" else m.double().amax(1)  # (B, T, T)
        if residual:
            a = a + eye
        if normalise == "rows":
            a = a / a.sum(-1, keepdim=True)
        elif normalise == "columns":
            a = a / a.sum(-2, keepdim=True)
        out = a if out is None else (a @ out if order == "right" else out @ a)
    return out


def _mistakes(maps, residual):
    out = [
        ("the rows do not sum to 1: after adding the identity, divide each row by its sum (A + I has rows "
         "that sum to 2)", _rollout(maps, residual, normalise="none")),
        ("the layers are multiplied in the wrong order: the first layer acts first, so it goes on the right, "
         "A_L ... A_2 A_1", _rollout(maps, residual, order="left")),
        ("the heads were fused with a max: average them (mean over the head axis)", _rollout(maps, residual, "max")),
        ("each head was rolled out on its own and averaged at the end: average the heads in every layer, "
         "then multiply", _rollout(maps, residual, per_head=True)),
        ("the columns were normalised: renormalise each row, so that it stays a distribution over the tokens "
         "read from", _rollout(maps, residual, normalise="columns")),
        ("only the last layer's map was used: multiply the maps of all layers", _rollout(maps[-1:], residual)),
    ]
    if residual:
        out.insert(0, ("the residual identity is missing: add I to each layer's averaged map before renormalising "
                       "(the residual connection carries half of each token's state)", _rollout(maps, False)))
    else:
        out.insert(0, ("the identity was added although add_residual=False", _rollout(maps, True)))
    return out


def _check(fn: Callable) -> Callable:
    def check_one(maps, residual):
        before = snapshot(*maps)
        default = residual is None  # attention_rollout(maps): add_residual left to its default
        given = {} if default else {"add_residual": residual}
        out = run_student(fn, list(maps), **given, what="attention_rollout")
        residual = True if default else residual
        require_unchanged(before, *maps, message="attention_rollout changed the maps in place; compute on new "
                                                 "tensors (a + eye, not a += eye)")
        out = require_tensor(out, "the result of attention_rollout")
        B, _, T, _ = maps[0].shape
        require_shape(out, (B, T, T), "attention_rollout should return one (T, T) matrix per image, (B, T, T)")
        expected = VIT.attention_rollout(maps, "mean", residual)
        if not close(out, expected):
            if default and close(out, _rollout(maps, False), maps[0].dtype):
                raise CheckFailed("called as attention_rollout(maps), it should add the identity: the default of "
                                  "add_residual is True")
            raise first_match(out, _mistakes(maps, residual), "the rollout differs from the product of the layers' "
                              "head-averaged maps, with the identity added and rows renormalised, A_L ... A_1",
                              maps[0].dtype)

    return check_one


check_attention_rollout = Part(
    name="check_attention_rollout",
    visible=(
        Case("three layers", _maps(661, 3, 2, 2, 5)),
        # attention_rollout(maps) alone: add_residual left to its default, True
        Case("the default adds the identity", _maps(662, 2, 2, 2, 4, residual=None)),
        Case("add_residual=False adds no identity", _maps(663, 2, 2, 2, 4, residual=False)),
    ),
    check=_check,
    forbidden=("attnbook.vit.maps.attention_rollout",),
)
