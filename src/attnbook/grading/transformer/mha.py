"""Part 6: the class ``MultiHeadAttention(d_model, num_heads)``, ``forward(query, key=None, value=None, mask=None)``
-> ``(out, weights)``, against :class:`attnbook.attention.MultiHeadAttention` with copied weights.

A wrong output is compared with multi-head attention computed by hand from
the reference's weights with one mistake switched on (:func:`_mha_variant`).

>>> seed, d_model, nh, query, key, value, mask = _mha_case(1, 2, 3, 4, 8, 2, "padding", swap=True)()
>>> tuple(query.shape), query.is_contiguous(), tuple(mask.shape)
((2, 3, 8), False, (2, 1, 4))
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch

from .._compare import close
from .._core import run_student
from .._shared import FORBIDDEN_BLOCKS, build_beside, randn_strided, random_padding
from ..engine import Case, Mistake, Part, diagnose
from ..errors import CheckFailed
from ..steps import require_pair, require_shape
from ._common import ATTENTION_KERNELS, REF


def _mha_case(seed, B, T, S, d_model, nh, mask="none", dtype=torch.float32, swap=False):
    """Arguments for the MHA check: sizes, inputs (query, key, value or None) and a mask.

    ``swap``: the inputs are non-contiguous (B, L, C) views of (L, B, C) tensors.
    """

    def make():
        g = torch.Generator().manual_seed(seed)
        axes = (0, 1) if swap else None
        query = randn_strided((B, T, d_model), g, dtype, axes)  # (B, T, C)
        key = value = None
        if S is not None:
            key = randn_strided((B, S, d_model), g, dtype, axes)  # (B, S, C)
            value = randn_strided((B, S, d_model), g, dtype, axes)
        L = T if S is None else S
        if mask == "causal":
            m = torch.ones(T, L, dtype=torch.bool).tril()  # (T, T)
        elif mask == "padding":
            m = random_padding(g, B, L)  # (B, 1, S)
        elif mask == "arbitrary":
            m = torch.rand(B, T, L, generator=g) < 0.6  # (B, T, S)
            m[..., 0] |= ~m.any(-1)  # every query keeps a key
        else:
            m = None
        return seed, d_model, nh, query, key, value, m

    return make


def _mha_variant(ref, query, key, value, mask, *, split=True, merge=True, scale="hs", out_proj=True,
                 head_axis=True, use_mask=True):
    """Multi-head attention computed by hand from ``ref``'s weights, with a mistake switched on."""
    B, T, C = query.shape
    S, nh = key.shape[1], ref.num_heads
    hs = C // nh

    def lin(layer, x):
        return x @ layer.weight.T + layer.bias

    def heads(x, L):
        if split:
            return x.reshape(B, L, nh, hs).transpose(1, 2)  # (B, L, C) -> (B, nh, L, hs)
        return x.reshape(B, nh, L, hs)  # the mistake: rows of different positions end up in one head

    q, k, v = heads(lin(ref.q_proj, query), T), heads(lin(ref.k_proj, key), S), heads(lin(ref.v_proj, value), S)
    scores = q @ k.transpose(-2, -1) / math.sqrt(hs if scale == "hs" else C)  # (B, nh, T, S)
    if mask is not None and use_mask:
        m = mask.unsqueeze(1) if mask.dim() == 3 and head_axis else mask
        scores = scores.masked_fill(~m, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    out = weights @ v  # (B, nh, T, hs)
    out = out.transpose(1, 2).reshape(B, T, C) if merge else out.reshape(B, T, C)
    return (lin(ref.out_proj, out) if out_proj else out), weights


def _output_of(kwargs, ref, query, key, value, mask):
    """The output of a mistake, or None where the mistake does not even run on these shapes."""
    try:
        return _mha_variant(ref, query, key, value, mask, **kwargs)[0]
    except RuntimeError:
        return None


_MASK_2D = ("a (T, S) mask, such as the causal mask, broadcasts to (B, h, T, S) as it is: only a 3-D mask "
            "needs a head axis")
_SPLIT = ("the heads are split along the wrong axis: reshape (B, T, d_model) to (B, T, h, hs) and then "
          "transpose to (B, h, T, hs); viewing it directly as (B, h, T, hs) mixes positions into heads")
_MISTAKES = tuple(Mistake(message, functools.partial(_output_of, kwargs)) for message, kwargs in (
    (_SPLIT, dict(split=False, merge=False)),
    (_SPLIT, dict(split=False)),
    ("the heads are put back together along the wrong axis: transpose (B, h, T, hs) to (B, T, h, hs) "
     "before reshaping to (B, T, d_model)", dict(merge=False)),
    ("each head's scores must be divided by sqrt(d_k) where d_k = hs = d_model / h is the head's own "
     "key width, not by sqrt(d_model)", dict(scale="C")),
    ("the concatenated heads must go through the output projection out_proj (W^O)", dict(out_proj=False)),
    ("a 3-D mask, (B, T, S) or a (B, 1, S) padding mask, needs a head axis -- (B, 1, T, S) -- so that "
     "every head gets the same mask", dict(head_axis=False)),
    ("the mask is ignored: keys where it is False must get zero weight", dict(use_mask=False)),
))


def _diagnose_mha(out: torch.Tensor, weights: torch.Tensor, ref: Any, query: torch.Tensor, key: torch.Tensor,
                  value: torch.Tensor, mask: torch.Tensor | None
                  ) -> CheckFailed:
    args = (ref.double(), query.double(), (query if key is None else key).double(),
            (query if value is None else value).double(), mask)
    with torch.no_grad():
        _, right_weights = _mha_variant(*args)
        if close(weights.detach().double().nan_to_num(0.0), right_weights, torch.float32):
            fallback = ("the attention weights are right but the output is not: multiply them with each head's "
                        "values, concatenate the heads and apply out_proj")
        else:
            fallback = ("the attention weights differ from the reference: check the projections q_proj, k_proj, "
                        "v_proj (queries from query, keys from key, values from value), the head split and the "
                        "scaling")
        return diagnose(out, _MISTAKES, args, fallback)


def _check(cls: Callable) -> Callable:
    what = "MultiHeadAttention"

    def check_one(seed, d_model, nh, query, key, value, mask):
        module, ref = build_beside(cls, REF.MultiHeadAttention(d_model, nh), (d_model, nh), seed, query.dtype, what)
        args = (query,) if key is None else (query, key, value)
        kwargs = {} if mask is None else {"mask": mask.clone()}
        with torch.no_grad():  # the student gets copies: changing them in place changes nothing here
            try:
                result = run_student(module, *(t.clone() for t in args), what=f"{what}.forward", **kwargs)
            except CheckFailed as err:
                if mask is not None and mask.dim() == 2 and "must match the size of tensor" in str(err):
                    raise err.hinted(f" -- {_MASK_2D}") from None
                raise
            expected_out, expected_w = ref(*args, mask=mask, need_weights=True)
        out, weights = require_pair(result, what, ("out", "weights"))
        require_shape(out, expected_out.shape, "out should have shape (B, T, d_model): one vector per query")
        require_shape(weights, expected_w.shape,
                      "weights should have shape (B, h, T, S): one map of T x S weights per head")
        if out.dtype != query.dtype:
            raise CheckFailed(f"for {query.dtype} inputs the output should be {query.dtype} too")
        if not (close(out, expected_out) and close(weights, expected_w)):
            raise _diagnose_mha(out, weights, ref, query, key, value, mask)

    return check_one


check_multi_head_attention = Part(
    name="check_multi_head_attention",
    visible=(
        Case("self-attention", _mha_case(401, 2, 5, None, 8, 2)),
        Case("cross-attention with a padding mask", _mha_case(402, 2, 3, 6, 8, 2, "padding")),
        Case("self-attention with a causal mask (T, T)", _mha_case(413, 2, 4, None, 8, 2, "causal")),
    ),
    check=_check,
    forbidden=(
        "attnbook.attention.MultiHeadAttention",
        "torch.nn.MultiheadAttention",
        "torch.nn.functional.multi_head_attention_forward",
        *FORBIDDEN_BLOCKS,
    ),
    kernels=ATTENTION_KERNELS,
)
