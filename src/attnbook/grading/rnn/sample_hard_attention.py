"""Part 5: sampling hard attention, one position ``j ~ softmax(scores)`` per row and its value ``h_j``.

A statistical check with fixed seeds: each base row is repeated ``copies``
times, and the frequencies of the positions drawn must be within six standard
errors of the weights. The checker seeds both the generator it passes and
torch's global one, so a grade never changes between runs; where a case says
so, it calls again with the generator in the same state and the global one in
another, and the draws must not change.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_pair, require_shape, require_unchanged, snapshot
from ._common import FORBIDDEN_HARD, GENERATOR_IGNORED, HARD, Z, hard_inputs, seeded, tile

WHAT = "sample_hard_attention"


def _case(seed, rows, S, d_v, copies, *, masked=False, dtype=torch.float32, noncontiguous=False, reseeded=False):
    """(seed, scores (rows * copies, S), values, rows, copies, reseeded): row ``i`` repeats base row ``i % rows``."""

    def make():
        scores, values = hard_inputs(seed, rows, S, d_v, masked=masked, dtype=dtype)
        return (seed, *tile(scores, values, copies, noncontiguous=noncontiguous), rows, copies, reseeded)

    return make


def _draw(fn, seed, scores, values, global_seed=None):
    before = snapshot(scores, values)
    result = seeded(seed, run_student, fn, scores, values, global_seed=global_seed, what=WHAT)
    context, index = require_pair(result, WHAT, ("context", "index"))
    require_unchanged(before, scores, values, message=f"{WHAT} changed scores or values in place")
    return context, index


def _require_picks(context, index, scores, values):
    """The draws are positions, one per row, and the context is the value at each."""
    B, S = scores.shape
    if index.is_floating_point() or index.dtype == torch.bool:
        raise CheckFailed(f"index should hold integer positions (torch.long), got {index.dtype}")
    require_shape(index, (B,), "index should have shape (B,): one sampled position per sequence")
    require_shape(context, (B, values.shape[-1]), "context should have shape (B, d_v): one value vector per sequence")
    if int(index.min()) < 0 or int(index.max()) >= S:
        raise CheckFailed("index holds positions outside 0 .. S - 1")
    index = index.long()
    if not torch.equal(context, values[torch.arange(B), index]):
        if close(context, HARD.soft_attention(scores, values)[0]):
            raise CheckFailed("the context is the weighted average Σ α_j h_j (soft attention); hard attention "
                              "returns the one value h_j at the sampled position j")
        raise CheckFailed("the context must be the value at the sampled position, values[b, index[b]]")
    if bool(torch.isinf(scores[torch.arange(B), index]).any()):
        raise CheckFailed("a position with score -inf (padding) was sampled; its probability is 0")


def _require_frequencies(index, base_scores, copies):
    """Over the copies of each base row, each position is drawn about α_j of the time."""
    rows, S = base_scores.shape
    B = len(index)
    counts = torch.zeros(rows, S, dtype=torch.float64)
    counts.index_put_((torch.arange(B) % rows, index.long()), torch.ones(B, dtype=torch.float64), accumulate=True)
    freq = counts / copies  # (rows, S)
    p = torch.softmax(base_scores.double(), dim=-1)  # (rows, S)
    if bool(((freq - p).abs() <= Z * (p * (1 - p) / copies).sqrt() + 1.0 / copies).all()):
        return
    picks = index.reshape(copies, rows)  # (copies, rows)
    if bool((picks == p.argmax(-1)).all()):
        raise CheckFailed("every draw picks the most likely position (argmax); hard attention samples "
                          "position j with probability α_j = softmax(scores)_j")
    if bool((picks == picks[:1]).all()) or bool((index == index[0]).all()):
        raise CheckFailed("every sequence gets the same draw: each row needs its own sample")
    real = torch.isfinite(base_scores)
    uniform = real / real.sum(-1, keepdim=True)
    if bool(((freq - uniform).abs() <= Z * (uniform * (1 - uniform) / copies).sqrt() + 1.0 / copies).all()):
        raise CheckFailed("positions are drawn uniformly; they must be drawn with probabilities softmax(scores)")
    raise CheckFailed("the positions are not drawn with probabilities softmax(scores): over many draws, "
                      "their frequencies differ from the weights")


def _check(fn: Callable) -> Callable:
    def check_one(seed, scores, values, rows, copies, reseeded):
        context, index = _draw(fn, seed, scores, values)
        _require_picks(context, index, scores, values)
        _require_frequencies(index, scores[:rows].detach(), copies)
        if reseeded and not torch.equal(_draw(fn, seed, scores, values, global_seed=seed + 7919)[1], index):
            raise CheckFailed(GENERATOR_IGNORED)

    return check_one


check_sample_hard_attention = Part(
    name="check_sample_hard_attention",
    visible=(
        Case("two rows, one padded", _case(6, 2, 4, 3, 2000, masked=True)),
        Case("the generator it is given", _case(8, 2, 5, 2, 400, reseeded=True)),
    ),
    check=_check,
    forbidden=FORBIDDEN_HARD,
)
