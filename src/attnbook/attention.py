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
``(context, weights)`` interface: :class:`AdditiveAttention` (Bahdanau's MLP
score, ``vᵀ tanh(W s + U z_j)``) and :class:`LuongAttention` (``dot`` and
``general`` scores, the ancestors of ``q kᵀ``).

References: Vaswani et al., *Attention Is All You Need* (2017), section 3.2;
Bahdanau et al. (2015); Luong et al. (2015).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import dropout_rate, number_in, positive_int

__all__ = [
    "scaled_dot_product_attention",
    "fused_attention",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "AdditiveAttention",
    "LuongAttention",
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
    as in the paper and in ``nn.MultiheadAttention``.

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

    def __init__(self, d_model: int, num_heads: int, *, dropout: float = 0.0, bias: bool = True) -> None:
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
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # W^Q for all heads side by side
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)  # W^K
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)  # W^V
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
            _check_tensor(name, x)
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


# ----------------------------------------------------------------------------- alignment models of RNN attention


class _AlignmentAttention(nn.Module):
    """What Bahdanau's and Luong's attention share: scores -> masked softmax -> weighted sum.

    A subclass supplies ``project_keys(keys)`` (the part of the score that
    depends on the keys only, computed once per sequence) and
    ``_score(query, projected_keys)``. Shapes: a single query ``(B, d_q)``
    gives scores/weights ``(B, S)`` and a context ``(B, d_v)``; ``T`` queries
    at once ``(B, T, d_q)`` give ``(B, T, S)`` and ``(B, T, d_v)``.
    """

    query_size: int
    key_size: int

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def _score(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    def _check_keys(self, keys: object) -> torch.Tensor:
        _check_tensor("keys", keys)
        if keys.dim() != 3 or keys.shape[-1] != self.key_size:
            raise ValueError(f"keys must have shape (B, S, key_size={self.key_size}), got {tuple(keys.shape)}")
        if keys.shape[1] == 0:
            raise ValueError("keys must hold at least one position (S >= 1), got S = 0")
        return keys

    def _check_inputs(
        self,
        query: object,
        keys: object,
        values: object,
        mask: object,
        projected_keys: object,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Validate; return ``(values, projected_keys, mask)`` with the mask shaped like the scores."""
        _check_tensor("query", query)
        keys = self._check_keys(keys)
        if query.dim() not in (2, 3) or query.shape[-1] != self.query_size:
            raise ValueError(
                f"query must have shape (B, query_size={self.query_size}) or (B, T, query_size), "
                f"got {tuple(query.shape)}"
            )
        B, S = keys.shape[0], keys.shape[1]
        if query.shape[0] != B:
            raise ValueError(f"query and keys must have the same batch size B, got {query.shape[0]} and {B}")
        if query.dtype != keys.dtype:
            raise TypeError(f"query and keys must share one dtype, got {query.dtype} and {keys.dtype}")
        if values is None:
            values = keys
        else:
            _check_tensor("values", values)
            if values.dim() != 3 or values.shape[:2] != keys.shape[:2]:
                raise ValueError(
                    f"values must have shape (B, S, d_v) with the keys' B={B} and S={S}, got {tuple(values.shape)}"
                )
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        elif not isinstance(projected_keys, torch.Tensor) or projected_keys.shape[:2] != keys.shape[:2]:
            got = (
                tuple(projected_keys.shape)
                if isinstance(projected_keys, torch.Tensor)
                else type(projected_keys).__name__
            )
            raise ValueError(
                f"projected_keys must be project_keys(keys), of shape (B={B}, S={S}, ...), got {got}"
            )
        if mask is not None:
            if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
                got = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
                raise TypeError(f"mask must be a boolean tensor (True = may attend), got {got}")
            T = query.shape[1] if query.dim() == 3 else 1
            shapes = {(B, S), (B, 1, S), (B, T, S)}
            if tuple(mask.shape) not in shapes:
                want = "(B, S) or (B, 1, S)" + (" or (B, T, S)" if query.dim() == 3 else "")
                raise ValueError(
                    f"mask must have shape {want} with B={B}, S={S}, got {tuple(mask.shape)}"
                )
            if query.dim() == 2 and mask.dim() == 3:
                mask = mask.squeeze(1)  # (B, 1, S) -> (B, S), e.g. from padding_mask
            elif query.dim() == 3 and mask.dim() == 2:
                mask = mask.unsqueeze(1)  # (B, S) -> (B, 1, S): the same keys for every query
        return values, projected_keys, mask

    def scores(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        projected_keys: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Alignment scores ``e`` (B, S) or (B, T, S); ``-inf`` where ``mask`` is ``False``."""
        _, projected_keys, mask = self._check_inputs(query, keys, None, mask, projected_keys)
        e = self._score(query, projected_keys)  # (B, S) or (B, T, S)
        if mask is not None:
            e = e.masked_fill(~mask, float("-inf"))
        return e

    def forward(
        self,
        query: torch.Tensor,
        keys: torch.Tensor,
        values: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        projected_keys: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(context, weights)``: ``weights = softmax(scores)`` over S, ``context = weights @ values``."""
        values, projected_keys, mask = self._check_inputs(query, keys, values, mask, projected_keys)
        e = self._score(query, projected_keys)  # (B, S) or (B, T, S)
        if mask is not None:
            e = e.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(e, dim=-1)  # rows sum to 1 over the S keys
        if mask is not None:
            # A row with no real key is softmax(-inf, ..., -inf) = NaN; give it zero weight instead.
            weights = weights.masked_fill(~mask, 0.0)
        if query.dim() == 2:
            context = (weights.unsqueeze(1) @ values).squeeze(1)  # (B, 1, S) @ (B, S, d_v) -> (B, d_v)
        else:
            context = weights @ values  # (B, T, S) @ (B, S, d_v) -> (B, T, d_v)
        return context, weights


class AdditiveAttention(_AlignmentAttention):
    """Bahdanau's additive attention: ``e_j = vᵀ tanh(W s + U z_j)``, ``γ = softmax(e)``, ``c = Σ_j γ_j z_j``.

    The alignment model is a one-hidden-layer MLP of width ``attn_size`` that
    scores how well the decoder state ``s`` (the *query*, ``s_{t-1}`` in the
    paper) matches each encoder annotation ``z_j`` (the *keys*). ``W``, ``U``
    and ``v`` are ``nn.Linear`` layers named after the formula; ``U`` carries
    the MLP's one bias. ``U z_j`` does not depend on the decoder step, so
    :meth:`project_keys` computes it once per sequence and ``forward`` /
    :meth:`scores` accept it as ``projected_keys=``.

    ``query`` is (B, query_size) -- or (B, T, query_size) for T queries at
    once --, ``keys`` (B, S, key_size), ``values`` (B, S, d_v) default to the
    keys, and the boolean ``mask`` (``True`` = may attend) is (B, S), a (B, 1, S)
    :func:`padding_mask`, or (B, T, S). ``forward`` returns ``(context,
    weights)``: (B, d_v) and (B, S) for one query, (B, T, d_v) and (B, T, S)
    for T. Masked keys get weight exactly 0; a row with no key left gets all
    zeros. :meth:`scores` returns the ``e`` before the softmax (``-inf`` where masked).

    A worked example with one-dimensional weights ``W = 1``, ``U = 1``, ``b = 0``,
    ``v = 1`` (so ``e_j = tanh(s + z_j)``): ``s = 0`` and keys ``z = (0, 1, 5)``
    with the last key masked give ``e = (tanh 0, tanh 1) = (0, 0.7616)``,
    ``γ = softmax(e) = (0.3183, 0.6817)`` and ``c = 0.6817``:

    >>> att = AdditiveAttention(query_size=1, key_size=1, attn_size=1)
    >>> with torch.no_grad():
    ...     for p in (att.W.weight, att.U.weight, att.v.weight): _ = p.fill_(1.0)
    ...     _ = att.U.bias.zero_()
    >>> _ = att.requires_grad_(False)                   # frozen: printed tensors carry no grad_fn
    >>> s = torch.tensor([[0.0]])                       # (B=1, query_size=1)
    >>> z = torch.tensor([[[0.0], [1.0], [5.0]]])       # (B=1, S=3, key_size=1)
    >>> mask = torch.tensor([[True, True, False]])      # the third key is padding
    >>> att.scores(s, z, mask)
    tensor([[0.0000, 0.7616,   -inf]])
    >>> context, weights = att(s, z, mask=mask)
    >>> weights
    tensor([[0.3183, 0.6817, 0.0000]])
    >>> context
    tensor([[0.6817]])

    Reference: Bahdanau, Cho & Bengio, *Neural Machine Translation by Jointly
    Learning to Align and Translate* (2015), section 3.1 and appendix A.1.2.
    """

    def __init__(self, query_size: int, key_size: int, attn_size: int | None = None) -> None:
        super().__init__()
        attn_size = query_size if attn_size is None else attn_size
        for name, value in (("query_size", query_size), ("key_size", key_size), ("attn_size", attn_size)):
            positive_int(name, value)
        self.query_size, self.key_size, self.attn_size = query_size, key_size, attn_size
        self.W = nn.Linear(query_size, attn_size, bias=False)  # W s: the decoder state's part
        self.U = nn.Linear(key_size, attn_size, bias=True)  # U z_j + b: the keys' part, once per sequence
        self.v = nn.Linear(attn_size, 1, bias=False)  # vᵀ tanh(...): one score per key

    def extra_repr(self) -> str:
        return f"query_size={self.query_size}, key_size={self.key_size}, attn_size={self.attn_size}"

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """``U z_j + b`` for every key: (B, S, key_size) -> (B, S, attn_size)."""
        return self.U(self._check_keys(keys))

    def _score(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        if projected_keys.shape[-1] != self.attn_size:
            raise ValueError(
                f"projected_keys must have width attn_size={self.attn_size}, got {projected_keys.shape[-1]}"
            )
        q = self.W(query)  # (B, A) or (B, T, A)
        if query.dim() == 2:
            hidden = torch.tanh(q.unsqueeze(1) + projected_keys)  # (B, 1, A) + (B, S, A) -> (B, S, A)
        else:
            hidden = torch.tanh(q.unsqueeze(2) + projected_keys.unsqueeze(1))  # (B, T, 1, A) + (B, 1, S, A)
        return self.v(hidden).squeeze(-1)  # (B, S) or (B, T, S)


class LuongAttention(_AlignmentAttention):
    """Luong's multiplicative scores: ``"dot"`` ``e_j = sᵀ z_j`` or ``"general"`` ``e_j = sᵀ W_a z_j``.

    Same interface as :class:`AdditiveAttention` (``forward`` -> ``(context,
    weights)``, :meth:`scores`, :meth:`project_keys`), but the alignment model is
    a (bilinear) dot product instead of an MLP: cheaper, and the form that the
    Transformer's ``q kᵀ / sqrt(d_k)`` grows out of (Luong does not scale).
    ``"dot"`` has no parameters and needs ``query_size == key_size``;
    ``"general"`` learns ``W_a`` (the ``nn.Linear`` ``W``, key_size -> query_size,
    no bias), applied to the keys once per sequence.

    >>> att = LuongAttention(query_size=2, key_size=2, method="dot")
    >>> s = torch.tensor([[1.0, 0.0]])                          # (B=1, query_size=2)
    >>> z = torch.tensor([[[2.0, 0.0], [0.0, 3.0]]])            # (B=1, S=2, key_size=2)
    >>> att.scores(s, z)                                        # (s·z_1, s·z_2)
    tensor([[2., 0.]])
    >>> context, weights = att(s, z)                            # softmax(2, 0) = (0.8808, 0.1192)
    >>> weights, context
    (tensor([[0.8808, 0.1192]]), tensor([[1.7616, 0.3576]]))

    Reference: Luong, Pham & Manning, *Effective Approaches to Attention-based
    Neural Machine Translation* (2015), section 3.1, equation (8).
    """

    def __init__(self, query_size: int, key_size: int, *, method: str = "general") -> None:
        super().__init__()
        for name, value in (("query_size", query_size), ("key_size", key_size)):
            positive_int(name, value)
        if method not in ("dot", "general"):
            raise ValueError(f"method must be 'dot' or 'general', got {method!r}")
        if method == "dot" and query_size != key_size:
            raise ValueError(
                f"method='dot' needs query_size == key_size, got {query_size} and {key_size} "
                "(use method='general' to learn a map between them)"
            )
        self.query_size, self.key_size, self.method = query_size, key_size, method
        # W_a z_j: maps each key into the query's space, once per sequence
        self.W = nn.Linear(key_size, query_size, bias=False) if method == "general" else None

    def extra_repr(self) -> str:
        return f"query_size={self.query_size}, key_size={self.key_size}, method={self.method!r}"

    def project_keys(self, keys: torch.Tensor) -> torch.Tensor:
        """``W_a z_j`` (``"general"``) or the keys themselves (``"dot"``): (B, S, query_size)."""
        keys = self._check_keys(keys)
        return keys if self.W is None else self.W(keys)

    def _score(self, query: torch.Tensor, projected_keys: torch.Tensor) -> torch.Tensor:
        if projected_keys.shape[-1] != self.query_size:
            raise ValueError(
                f"projected_keys must have width query_size={self.query_size}, got {projected_keys.shape[-1]}"
            )
        if query.dim() == 2:
            return (projected_keys @ query.unsqueeze(-1)).squeeze(-1)  # (B, S, d_q) @ (B, d_q, 1) -> (B, S)
        return query @ projected_keys.transpose(1, 2)  # (B, T, d_q) @ (B, d_q, S) -> (B, T, S)
