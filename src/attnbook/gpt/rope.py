"""Rotary position embeddings (RoPE): positions as rotations of each query and key.

RoPE (Su et al. 2021, https://arxiv.org/abs/2104.09864) adds no vector to the
tokens. Instead it rotates each pair of coordinates of a head's queries and
keys by an angle proportional to the token's position ``m``: pair ``i`` turns
by ``m * theta**(-2i / hs)``. A rotation by ``m`` on the query and by ``n`` on
the key leaves their dot product depending on ``m - n`` only, so attention
sees *relative* positions, and nothing is learned.

Which coordinates form a pair is a convention: the paper pairs ``(2i, 2i+1)``;
GPT-NeoX and Hugging Face's Llama pair ``(i, i + hs/2)`` ("rotate half"), which
is the same model with the query and key weights' rows permuted. This module
follows Llama's, so that its weights load unchanged.

Shape legend: ``B`` batch, ``nh`` heads, ``T`` sequence length, ``hs`` head size.

>>> cos, sin = rope_tables(4, torch.arange(3))
>>> cos.shape                                          # (T, hs)
torch.Size([3, 4])
>>> q = torch.randn(1, 1, 3, 4)
>>> bool(torch.allclose(apply_rope(q, cos, sin).norm(dim=-1), q.norm(dim=-1)))  # a rotation
True
"""

from __future__ import annotations

import torch

from attnbook._checks import positive_int

__all__ = ["rope_tables", "apply_rope"]


def rope_tables(head_size: int, positions: torch.Tensor, theta: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """The cosines and sines (T, hs) of the angles ``positions[t] * theta**(-2i / hs)``, each repeated for
    both halves of the head (Llama's layout).

    >>> cos, sin = rope_tables(2, torch.tensor([0, 1]))
    >>> cos[1], sin[1]                                 # one pair, turned by 1 radian at position 1
    (tensor([0.5403, 0.5403]), tensor([0.8415, 0.8415]))
    """
    positive_int("head_size", head_size)
    if head_size % 2:
        raise ValueError(f"RoPE rotates pairs of coordinates: head_size must be even, got {head_size}")
    inv_freq = 1.0 / theta ** (torch.arange(0, head_size, 2, dtype=torch.float32) / head_size)  # (hs/2,)
    angles = positions.float()[:, None] * inv_freq.to(positions.device)[None, :]  # (T, hs/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, hs): pair i is (i, i + hs/2)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """``x`` (B, nh, T, hs) with each pair ``(i, i + hs/2)`` of token ``t`` rotated by its angle.

    >>> x = torch.tensor([[[[1.0, 0.0]]]])                 # one token, one pair: the vector (1, 0)
    >>> cos, sin = rope_tables(2, torch.tensor([1]))
    >>> apply_rope(x, cos, sin)                           # turned by 1 radian: (cos 1, sin 1)
    tensor([[[[0.5403, 0.8415]]]])
    """
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)  # (B, nh, T, hs): (-x2, x1)
    return (x * cos.to(x.dtype) + rotated * sin.to(x.dtype)).to(x.dtype)
