"""Part 2: Luong's scores ``e_j = sᵀ h_j`` (dot) or ``sᵀ W h_j`` (general), unscaled, -inf at the padding."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from .._compare import require_tensor
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import ATT, FORBIDDEN_SCORES, apply_mask, lengths_mask, mask_mistakes, same_scores, strided


def _case(seed, B, S, q, k, *, general=True, masked=False, all_padded=False, noncontiguous=False,
          dtype=torch.float32):
    """(query (B, q), keys (B, S, k), W (q, k) or None, mask (B, S) or None)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        query = torch.randn(B, q, generator=g, dtype=dtype)
        keys = torch.randn(B, S, k, generator=g, dtype=dtype)
        W = torch.randn(q, k, generator=g, dtype=dtype) / math.sqrt(k) if general else None
        mask = lengths_mask(g, B, S, None, all_padded=all_padded) if masked else None
        if noncontiguous:
            query, keys = strided(query), strided(keys)
            W, mask = (None if x is None else strided(x) for x in (W, mask))
        return query, keys, W, mask

    return make


def _reference(query, keys, W, mask):
    method = "dot" if W is None else "general"
    ref = ATT.LuongAttention(query.shape[-1], keys.shape[-1], method=method).to(query.dtype)
    if W is not None:
        with torch.no_grad():
            ref.W.weight.copy_(W)  # nn.Linear(key_size, query_size) stores W_a as (query_size, key_size)
    with torch.no_grad():
        return ref.scores(query, keys, mask)


def _diagnosis(e: torch.Tensor, query: torch.Tensor, keys: torch.Tensor, W: torch.Tensor | None,
               mask: torch.Tensor | None) -> str:
    projected = keys if W is None else keys @ W.T  # (B, S, q): W h_j
    raw = (projected @ query.unsqueeze(-1)).squeeze(-1)  # (B, S)
    fill = functools.partial(apply_mask, mask=mask)
    known = [("Luong's score is not scaled: e_j = sᵀ h_j (or sᵀ W h_j) without the Transformer's 1/sqrt(d)",
              fill(raw / math.sqrt(query.shape[-1]))),
             ("the scores went through a softmax: return the scores e, the weights come in Part 3",
              fill(raw).softmax(-1))]
    known += mask_mistakes(raw, mask)
    if W is not None and W.shape[0] == W.shape[1]:
        known.append(("W is transposed: e_j = sᵀ W h_j, so W maps the key h_j into the query's space (W h_j), "
                      "or equivalently s W multiplies the keys", fill(((keys @ W) @ query.unsqueeze(-1)).squeeze(-1))))
    for message, variant in known:
        if same_scores(e, variant):
            return message
    return "the scores differ from e_j = sᵀ h_j (dot) or e_j = sᵀ W h_j (general)"


def _check(fn: Callable) -> Callable:
    def check_one(query, keys, W, mask):
        before = snapshot(query, keys)
        kwargs = {} if mask is None else {"mask": mask.clone()}
        e = require_tensor(run_student(fn, query, keys, None if W is None else W.clone(), what="luong_scores",
                                       **kwargs), "the result of luong_scores")
        require_unchanged(before, query, keys,
                          message="luong_scores changed query or keys in place; compute on new tensors instead")
        expected = _reference(query, keys, W, mask)
        require_shape(e, expected.shape, "luong_scores should return (B, S): one score per sequence and key")
        if e.dtype != query.dtype:
            raise CheckFailed(f"for {query.dtype} inputs the scores should be {query.dtype} too")
        if not same_scores(e, expected):
            raise CheckFailed(_diagnosis(e, query, keys, W, mask))

    return check_one


check_luong_scores = Part(
    name="check_luong_scores",
    visible=(
        Case("dot", _case(2, 2, 5, 4, 4, general=False)),
        Case("general, padding mask", _case(3, 2, 4, 5, 5, masked=True)),
    ),
    check=_check,
    forbidden=FORBIDDEN_SCORES,
)
