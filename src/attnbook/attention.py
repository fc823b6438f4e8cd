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

The recurrent models of chapter 1 use older alignment models with the same
``(context, weights)`` interface, :class:`~attnbook.alignment.AdditiveAttention`
and :class:`~attnbook.alignment.LuongAttention`; they live in
:mod:`attnbook.alignment` and stay importable from here.

Reference: Vaswani et al., *Attention Is All You Need* (2017), section 3.2.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import dropout_rate, float_sequence, number_in, positive_int

# chapter 1's alignment models lived here first: ``from attnbook.attention import AdditiveAttention`` still works
from attnbook.alignment import AdditiveAttention as AdditiveAttention
from attnbook.alignment import LuongAttention as LuongAttention
from attnbook.alignment import _AlignmentAttention as _AlignmentAttention

__all__ = [
    "scaled_dot_product_attention",
    "fused_attention",
    "causal_mask",
    "padding_mask",
    "scaling_ablation",
    "MultiHeadAttention",
]


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> None:
    """Raise a clear error unless q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) and mask fit."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        float_sequence(name, x)
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
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """PyTorch's fused attention kernel with this package's checks; returns ``out`` only.

    Same arguments and mask convention as :func:`scaled_dot_product_attention`.
    ``is_causal=True`` applies :func:`causal_mask` without materialising it
    (and cannot be combined with ``mask``). ``dropout_p`` drops attention
    weights inside the kernel (pass it only while training).

    >>> q = k = v = torch.randn(2, 5, 8)
    >>> out = fused_attention(q, k, v, is_causal=True)
    >>> torch.allclose(out, scaled_dot_product_attention(q, k, v, causal_mask(5))[0], atol=1e-6)
    True
    """
    _check_qkv(q, k, v, mask)
    if is_causal and mask is not None:
        raise ValueError("pass either mask or is_causal=True, not both (combine them into one mask)")
    number_in("dropout_p", dropout_p, 0.0, 1.0)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal)


def causal_mask(T: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Boolean (T, T) mask, ``True`` on and below the diagonal: position t sees 0..t.

    >>> causal_mask(3)
    tensor([[ True, False, False],
            [ True,  True, False],
            [ True,  True,  True]])
    """
    positive_int("T", T)
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


def scaling_ablation(d_ks: Sequence[int], *, keys: int = 16, queries: int = 256,
                     seed: int = 0) -> dict[str, torch.Tensor]:
    """What the ``1 / sqrt(d_k)`` of attention does: the softmax of random scores with and without it.

    For each ``d_k`` in ``d_ks``, ``queries`` random queries and ``keys`` random
    keys (new ones for each ``d_k``, shared by its queries) with independent
    unit-variance entries give the scores ``q · k``,
    whose variance is ``d_k``; attention divides them by ``sqrt(d_k)``, which
    brings the variance back to one. Returns four float64 tensors of
    ``len(d_ks)`` values:

    * ``"max_weight_scaled"``, ``"max_weight_unscaled"``: the softmax's largest
      weight, a mean over the queries (``1 / keys`` for uniform weights, 1 for
      a one-hot row);
    * ``"grad_scaled"``, ``"grad_unscaled"``: the Frobenius norm of the
      softmax's Jacobian ``diag(p) - p pᵀ``, the factor by which a gradient
      reaches the scores through the softmax (0 for a one-hot row), a median
      over the queries (a mean would follow the few queries whose top two
      scores happen to tie).

    The same seed gives the same queries and keys to both, so the two differ
    only by the scale. Chapter 2's exercises plot it (Part 14).

    >>> out = scaling_ablation([1, 256], keys=8, queries=64)
    >>> for name, values in out.items():  # d_k = 1, then 256
    ...     print(name, [round(v, 2) for v in values.tolist()])
    max_weight_scaled [0.3, 0.36]
    max_weight_unscaled [0.3, 0.94]
    grad_scaled [0.39, 0.37]
    grad_unscaled [0.39, 0.0]
    """
    d_ks = [positive_int("d_k", d) for d in d_ks]
    positive_int("keys", keys)
    positive_int("queries", queries)
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {f"{what}_{how}": [] for what in ("max_weight", "grad")
                                   for how in ("scaled", "unscaled")}
    for d_k in d_ks:
        q = torch.randn(queries, d_k, generator=g, dtype=torch.float64)  # unit-variance entries
        k = torch.randn(keys, d_k, generator=g, dtype=torch.float64)  # the same keys for every query
        scores = q @ k.T  # (queries, keys), variance d_k
        for how, s in (("scaled", scores / math.sqrt(d_k)), ("unscaled", scores)):
            p = torch.softmax(s, dim=-1)  # (queries, keys)
            jacobian = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]  # dp_i / ds_j
            out[f"max_weight_{how}"].append(p.max(-1).values.mean().item())
            out[f"grad_{how}"].append(torch.linalg.matrix_norm(jacobian).median().item())
    return {name: torch.tensor(values, dtype=torch.float64) for name, values in out.items()}


class MultiHeadAttention(nn.Module):
    """Multi-head attention: ``h`` attentions in parallel, each on its own projections.

    Each head ``i`` attends with ``Q W^Q_i``, ``K W^K_i``, ``V W^V_i`` of width
    ``hs = d_model / num_heads``; the heads' outputs are concatenated and mixed by
    ``W^O`` (``out_proj``). The four projections are separate ``nn.Linear``
    layers (``q_proj``, ``k_proj``, ``v_proj``, ``out_proj``), so that each one
    can be read and copied on its own; ``nn.MultiheadAttention`` stores the first
    three stacked as ``in_proj_weight = cat([W^Q, W^K, W^V])``.

    ``forward(query)`` is self-attention; ``forward(query, key, value)`` is
    cross-attention (``value`` defaults to ``key``). ``query`` is (B, T, d_model),
    ``key``/``value`` are (B, S, d_model). The optional boolean ``mask``
    (``True`` = may attend) broadcasts to (B, T, S) -- for example a (T, S)
    causal mask or a (B, 1, S) :func:`padding_mask`; the module inserts the head
    axis itself. A 4-D mask is taken to have its head axis already and must
    broadcast to (B, nh, T, S). ``is_causal=True`` adds the causal mask (T == S)
    without building it when no other mask is given, and is combined with
    ``mask`` when one is.

    Returns ``(out, weights)``: ``out`` is (B, T, d_model); ``weights`` is
    (B, nh, T, S) when ``need_weights=True`` (computed with the explicit
    :func:`scaled_dot_product_attention`, *before* dropout so that rows sum to
    one) and ``None`` otherwise (then the fused kernel runs and no T x S matrix
    is kept). ``dropout`` is applied to the attention weights while training,
    as in the paper and in ``nn.MultiheadAttention``. ``bias=False`` drops the
    biases of all four projections; ``qkv_bias`` (default: ``bias``) sets those
    of ``q_proj``, ``k_proj`` and ``v_proj`` alone, as timm's ``qkv_bias`` does.

    >>> mha = MultiHeadAttention(d_model=8, num_heads=2)
    >>> x = torch.randn(3, 5, 8)                          # (B, T, d_model)
    >>> out, w = mha(x, mask=causal_mask(5), need_weights=True)
    >>> out.shape, w.shape                                # w is (B, nh, T, S)
    (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
    >>> torch.allclose(out, mha(x, is_causal=True)[0], atol=1e-6)  # fused path agrees
    True
    >>> mha(x, torch.randn(3, 7, 8))[0].shape             # cross-attention to S=7 keys
    torch.Size([3, 5, 8])
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        qkv_bias: bool | None = None,
    ) -> None:
        super().__init__()
        for name, value in (("d_model", d_model), ("num_heads", num_heads)):
            positive_int(name, value)
        if d_model % num_heads != 0:
            raise ValueError(
                f"d_model must be divisible by num_heads (each head gets d_model / num_heads "
                f"features), got d_model={d_model} and num_heads={num_heads}"
            )
        dropout_rate(dropout)
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_size = d_model // num_heads
        self.dropout = dropout
        qkv_bias = bias if qkv_bias is None else qkv_bias
        self.q_proj = nn.Linear(d_model, d_model, bias=qkv_bias)  # W^Q for all heads side by side
        self.k_proj = nn.Linear(d_model, d_model, bias=qkv_bias)  # W^K
        self.v_proj = nn.Linear(d_model, d_model, bias=qkv_bias)  # W^V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Xavier-uniform weights and zero biases, as ``nn.MultiheadAttention`` starts."""
        for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            nn.init.xavier_uniform_(proj.weight)
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}, dropout={self.dropout}"

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, L, _ = x.shape
        x = x.view(B, L, self.num_heads, self.head_size)  # (B, L, C) -> (B, L, nh, hs)
        return x.transpose(1, 2)  # (B, nh, L, hs)

    def _check_inputs(
        self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None
    ) -> None:
        for name, x in (("query", query), ("key", key), ("value", value)):
            float_sequence(name, x)
            if x.dim() != 3 or x.shape[-1] != self.d_model:
                raise ValueError(
                    f"{name} must have shape (B, length, d_model={self.d_model}), got {tuple(x.shape)}"
                )
        if not (query.dtype == key.dtype == value.dtype):
            raise TypeError(
                f"query, key and value must share one dtype, got {query.dtype}, {key.dtype} and {value.dtype}"
            )
        if not (query.shape[0] == key.shape[0] == value.shape[0]):
            raise ValueError(
                f"query, key and value must have the same batch size B, got "
                f"{query.shape[0]}, {key.shape[0]} and {value.shape[0]}"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key and value must have the same length S, got {key.shape[1]} and {value.shape[1]}"
            )
        if mask is None:
            return
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise TypeError(f"mask must be a boolean tensor (True = may attend), got {got}")
        B, T, S = query.shape[0], query.shape[1], key.shape[1]
        target = (B, self.num_heads, T, S) if mask.dim() == 4 else (B, T, S)
        try:
            fits = mask.dim() >= 2 and torch.broadcast_shapes(mask.shape, target) == target
        except RuntimeError:
            fits = False
        if not fits:
            expected = "(B, nh, T, S)" if mask.dim() == 4 else "(B, T, S) or (T, S)"
            raise ValueError(f"mask of shape {tuple(mask.shape)} does not broadcast to {expected} = {target}")

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        *,
        is_causal: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if key is None:
            if value is not None:
                raise ValueError("value was given without key: pass key too (or neither for self-attention)")
            key = value = query  # self-attention
        elif value is None:
            value = key
        self._check_inputs(query, key, value, mask)
        B, T, C = query.shape
        S = key.shape[1]
        if is_causal and T != S:
            raise ValueError(f"is_causal=True needs as many queries as keys, got T={T} and S={S}")

        q = self._split_heads(self.q_proj(query))  # (B, nh, T, hs)
        k = self._split_heads(self.k_proj(key))  # (B, nh, S, hs)
        v = self._split_heads(self.v_proj(value))  # (B, nh, S, hs)

        if mask is not None and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (B, T, S) -> (B, 1, T, S): the same mask for every head
        if is_causal and (mask is not None or need_weights):
            causal = causal_mask(T, device=query.device)  # (T, T)
            mask = causal if mask is None else mask & causal
            is_causal = False
        dropout_p = self.dropout if self.training else 0.0

        if need_weights:
            # The teachable path: builds the (B, nh, T, S) weights so they can be returned.
            out, weights = scaled_dot_product_attention(q, k, v, mask)  # (B, nh, T, hs), (B, nh, T, S)
            if dropout_p > 0.0:
                out = F.dropout(weights, dropout_p, training=True) @ v  # (B, nh, T, hs)
        else:
            out = fused_attention(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p)  # (B, nh, T, hs)
            weights = None
        out = out.transpose(1, 2)  # (B, nh, T, hs) -> (B, T, nh, hs)
        out = out.reshape(B, T, C)  # (B, T, C): the heads side by side (concatenated)
        return self.out_proj(out), weights
