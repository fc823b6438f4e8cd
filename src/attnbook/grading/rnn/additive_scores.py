"""Part 1: Bahdanau's additive alignment scores ``e_j = vᵀ tanh(W s + U h_j)``, -inf at the padding.

The checker builds the student's ``AdditiveAttention(query_size, key_size,
attn_size)``, copies the parameters of a randomized reference into it by name
and compares ``scores(query, keys, mask)`` with the reference's.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable

import torch

from .._compare import require_tensor
from .._core import build_module, load_reference_parameters, run_method
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape
from ._common import (
    ATT,
    FORBIDDEN_SCORES,
    apply_mask,
    hinted,
    lengths_mask,
    mask_mistakes,
    masked,
    randomize,
    same_scores,
    strided,
)

WHAT = "AdditiveAttention"
NO_MASK = "mask may be None (no padding): then no score is masked"  # a failure on mask=None gets this


def _case(seed, B, S, sizes, *, masked=False, lengths=None, all_padded=False, noncontiguous=False,
          dtype=torch.float32):
    """(seed, (query_size, key_size, attn_size), s (B, q), z (B, S, k), mask (B, S) or None)."""

    def make():
        g = torch.Generator().manual_seed(seed)
        q, k, _ = sizes
        s = torch.randn(B, q, generator=g, dtype=dtype)  # (B, query_size): the decoder state
        z = torch.randn(B, S, k, generator=g, dtype=dtype)  # (B, S, key_size): the annotations
        mask = lengths_mask(g, B, S, lengths, all_padded=all_padded) if masked else None
        if noncontiguous:
            s, z, mask = strided(s), strided(z), None if mask is None else strided(mask)
        return seed, sizes, s, z, mask

    return make


def _variants(ref, s, z, mask):
    """(message, scores) for the mistakes students make, computed from the reference's pieces."""
    W, U, v = ref.W, ref.U, ref.v
    Ws, Uz = W(s), U(z)  # (B, A), (B, S, A)
    fill = functools.partial(apply_mask, mask=mask)
    variants = mask_mistakes(v(torch.tanh(Ws.unsqueeze(1) + Uz)).squeeze(-1), mask)
    variants += [
        ("tanh is missing: the alignment model is vᵀ tanh(W s + U h_j), a small MLP, not a linear map",
         fill(v(Ws.unsqueeze(1) + Uz).squeeze(-1))),
        ("tanh is applied after v: the alignment model is vᵀ tanh(W s + U h_j), with tanh inside",
         fill(torch.tanh(v(Ws.unsqueeze(1) + Uz)).squeeze(-1))),
    ]
    if s.shape[0] == z.shape[1]:  # (B, d_a) + (B, S, d_a) broadcasts when B == S, pairing the wrong rows
        variants.append((
            "W s was added to U h_j without a key axis: (B, d_a) + (B, S, d_a) pairs the state of one sequence "
            "with the keys of another; give W s the shape (B, 1, A) (unsqueeze(1)) first",
            fill(v(torch.tanh(Ws.unsqueeze(0) + Uz)).squeeze(-1)),
        ))
    if W.weight.shape == U.weight.shape:
        variants.append((
            "W and U are swapped: W multiplies the decoder state s, U (with the bias) the keys h_j",
            fill(v(torch.tanh(U(s).unsqueeze(1) + W(z))).squeeze(-1)),
        ))
    return variants


def _check(cls: Callable) -> Callable:
    def check_one(seed, sizes, s, z, mask):
        module = build_module(cls, *sizes, what=f"{WHAT}(query_size, key_size, attn_size)")
        run_method(module, "to", s.dtype, what=f"{WHAT}.to")
        ref = randomize(ATT.AdditiveAttention(*sizes), seed).to(s.dtype)
        load_reference_parameters(module, ref, WHAT)
        args = (s.clone(), z.clone()) + (() if mask is None else (mask.clone(),))
        no_mask = hinted("NoneType", NO_MASK) if mask is None else contextlib.nullcontext()
        with torch.no_grad():
            with no_mask, hinted("must match the size of tensor",  # (B, d_a) + (B, S, d_a) without a key axis
                                 "W s is (B, d_a) and U h is (B, S, d_a): give W s the shape (B, 1, d_a) "
                                 "(unsqueeze(1)) so that it broadcasts over the keys"):
                result = run_method(module, "scores", *args, what=f"{WHAT}.scores")
            e = require_tensor(result, f"the result of {WHAT}.scores")
            expected = ref.scores(s, z, mask)
        require_shape(e, expected.shape, f"{WHAT}.scores should return (B, S): one score per sequence and key")
        if e.dtype != s.dtype:
            raise CheckFailed(f"for {s.dtype} inputs the scores should be {s.dtype} too")
        if same_scores(e, expected):
            return
        if torch.isnan(e).any():
            raise CheckFailed("the scores contain NaN")
        fallback = ("the scores must be -inf exactly where the mask is False (the padding)"
                    if mask is not None and not torch.equal(masked(e), ~mask) else
                    "the scores differ from e_j = vᵀ tanh(W s + U h_j)")
        with torch.no_grad():
            variants = _variants(ref, s, z, mask)
        raise first_match(e, variants, fallback, matches=same_scores)

    return check_one


check_additive_scores = Part(
    name="check_additive_scores",
    visible=(
        Case("padding mask", _case(1, 2, 4, (3, 5, 6), masked=True, lengths=(4, 2))),
        Case("no mask (mask=None)", _case(2, 2, 3, (3, 4, 5))),
        Case("float64 inputs", _case(3, 2, 3, (2, 3, 4), masked=True, lengths=(3, 1), dtype=torch.float64)),
    ),
    check=_check,
    forbidden=FORBIDDEN_SCORES,
)
