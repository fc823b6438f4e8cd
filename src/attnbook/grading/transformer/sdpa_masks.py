"""Part 2: ``scaled_dot_product_attention(q, k, v, mask)`` with causal, padding and arbitrary boolean masks.

The visible cases hold one mask of each kind, so that the common mistakes
(a mask the wrong way round, ignored, filled with 0, applied after the
softmax) show before the hidden cases run.

>>> q, k, v, mask = _padded(0, 2, 3, 5, 4, 2, heads=3)()
>>> tuple(q.shape), tuple(mask.shape), q.is_contiguous()
((2, 3, 3, 4), (2, 1, 1, 5), False)
"""

from __future__ import annotations

import torch

from ..engine import Case, Part
from .sdpa import ATTENTION_KERNELS, FORBIDDEN, check_sdpa, qkv


def _causal(seed, lead, T, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, _ = qkv(seed, lead, T, T, d_k, d_v, dtype)
        return q, k, v, torch.ones(T, T, dtype=torch.bool).tril()  # (T, T)

    return make


def _padded(seed, B, T, S, d_k, d_v, dtype=torch.float32, heads=None):
    """A (B, 1, S) padding mask; with ``heads``, (B, heads, T, d) inputs split by a transpose, a (B, 1, 1, S) mask."""

    def make():
        lead, swap = ((B,), None) if heads is None else ((B, heads), (1, 2))
        q, k, v, g = qkv(seed, lead, T, S, d_k, d_v, dtype, swap)
        lengths = torch.randint(1, S + 1, (B,), generator=g)  # at least one real key
        mask = (torch.arange(S) < lengths[:, None]).unsqueeze(1)  # (B, 1, S)
        return q, k, v, mask if heads is None else mask.unsqueeze(1)

    return make


def _random_mask(seed, B, T, S, d_k, d_v, dtype=torch.float32):
    def make():
        q, k, v, g = qkv(seed, (B,), T, S, d_k, d_v, dtype)
        mask = torch.rand(B, T, S, generator=g) < 0.6  # (B, T, S)
        mask[..., 0] |= ~mask.any(-1)  # every query keeps at least one key
        return q, k, v, mask

    return make


check_attention_masks = Part(
    name="check_attention_masks",
    visible=(
        Case("causal mask", _causal(1, (2,), 4, 8, 3)),
        Case("padding mask (B, 1, S)", _padded(2, 2, 3, 5, 8, 3)),
        Case("arbitrary mask (B, T, S)", _random_mask(3, 2, 4, 5, 8, 3)),
    ),
    check=check_sdpa,
    forbidden=FORBIDDEN,
    kernels=ATTENTION_KERNELS,
)
