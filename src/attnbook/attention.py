"""Attention: the explicit, teachable math beside PyTorch's fused kernel.

``scaled_dot_product_attention`` spells out ``softmax(Q Kᵀ / sqrt(d_k)) V`` and
returns the weights so that they can be plotted; ``fused_attention`` calls
:func:`torch.nn.functional.scaled_dot_product_attention`, which never builds the
``T × S`` weight matrix in memory. Tests prove the two agree.

Masks are boolean and ``True`` means *may attend*, as in the boolean
``attn_mask`` of PyTorch's kernel. A query whose row is entirely masked gets
all-zero weights and a zero output (PyTorch's kernel does the same).

Shape legend: ``B`` batch, ``T`` query length, ``S`` key/value length,
``d_k`` query/key width, ``d_v`` value width.

References: Vaswani et al., *Attention Is All You Need* (2017), section 3.2.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = [
    "scaled_dot_product_attention",
    "fused_attention",
    "causal_mask",
    "padding_mask",
]


def _check_tensor(name: str, x: object) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {x.dtype}")
    if x.dim() < 2:
        raise ValueError(f"{name} must have shape (..., length, width), got {tuple(x.shape)}")
    return x


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> None:
    """Raise a clear error unless q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) and mask fit."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        _check_tensor(name, x)
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"q, k and v must share one dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise ValueError(
            "q, k and v must have the same leading (batch) dimensions, got "
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same width d_k, got q {q.shape[-1]} and k {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same length S, got k {k.shape[-2]} and v {v.shape[-2]}")
    if mask is None:
        return
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
        raise TypeError(f"mask must be a boolean tensor (True = may attend), got {got}")
    scores_shape = (*q.shape[:-1], k.shape[-2])  # (..., T, S)
    try:
        fits = torch.broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{scores_shape} (..., T, S)"
        )


def scaled_dot_product_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention written out: ``softmax(q kᵀ / sqrt(d_k)) v``; returns ``(out, weights)``.

    ``q`` is (..., T, d_k), ``k`` is (..., S, d_k), ``v`` is (..., S, d_v) and the
    optional boolean ``mask`` broadcasts to (..., T, S), ``True`` = may attend.
    ``out`` is (..., T, d_v); ``weights`` is (..., T, S) and each row sums to one.

    >>> q = torch.tensor([[[1.0, 0.0]]])              # one query (B=1, T=1, d_k=2)
    >>> k = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # two keys (S=2)
    >>> v = torch.tensor([[[10.0], [20.0]]])
    >>> out, w = scaled_dot_product_attention(q, k, v)
    >>> w  # softmax([1, 0] / sqrt(2))
    tensor([[[0.6698, 0.3302]]])
    >>> out
    tensor([[[13.3024]]])
    """
    _check_qkv(q, k, v, mask)
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)  # (..., T, S)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (..., T, S), rows sum to 1
    if mask is not None:
        # A fully masked row is softmax(-inf, ..., -inf) = NaN; give it zero weight instead.
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights  # (..., T, d_v), (..., T, S)


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    is_causal: bool = False,
) -> torch.Tensor:
    """PyTorch's fused attention kernel with this package's checks; returns ``out`` only.

    Same arguments and mask convention as :func:`scaled_dot_product_attention`.
    ``is_causal=True`` applies :func:`causal_mask` without materialising it
    (and cannot be combined with ``mask``).

    >>> q = k = v = torch.randn(2, 5, 8)
    >>> out = fused_attention(q, k, v, is_causal=True)
    >>> torch.allclose(out, scaled_dot_product_attention(q, k, v, causal_mask(5))[0], atol=1e-6)
    True
    """
    _check_qkv(q, k, v, mask)
    if is_causal and mask is not None:
        raise ValueError("pass either mask or is_causal=True, not both (combine them into one mask)")
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean (T, T) mask, ``True`` on and below the diagonal: position t sees 0..t.

    >>> causal_mask(3)
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])
    """
    if not isinstance(T, int) or isinstance(T, bool) or T < 1:
        raise ValueError(f"T must be a positive int, got {T!r}")
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


def padding_mask(ids: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Boolean (B, 1, S) mask, ``True`` where a key is a real token, ``False`` at padding.

    ``ids`` is (B, S) integer token ids; the middle axis broadcasts over queries.

    >>> padding_mask(torch.tensor([[5, 6, 0], [7, 0, 0]]), pad_id=0)
    tensor([[[ True,  True, False]],
    <BLANKLINE>
            [[ True, False, False]]])
    """
    if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dtype == torch.bool:
        got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
        raise TypeError(f"ids must be an integer tensor of token ids, got {got}")
    if ids.dim() != 2:
        raise ValueError(f"ids must have shape (B, S), got {tuple(ids.shape)}")
    return (ids != pad_id).unsqueeze(1)  # (B, 1, S)
