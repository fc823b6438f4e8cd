"""The alignment models of RNN attention (chapter 1): a score per key, a softmax, a weighted sum.

The recurrent models of :mod:`attnbook.rnn` attend with the alignment models
that came before the Transformer's ``softmax(Q Kᵀ / sqrt(d_k)) V``
(:mod:`attnbook.attention`), with the same ``(context, weights)`` interface:
:class:`AdditiveAttention` (Bahdanau's MLP score, ``vᵀ tanh(W s + U z_j)``)
and :class:`LuongAttention` (``dot`` and ``general`` scores, the ancestors of
``q kᵀ``). Both are importable from :mod:`attnbook.attention` too, where they
lived first.

Masks are boolean and ``True`` means *may attend*, as everywhere in the
package; a query with no key left gets all-zero weights. Shape legend: ``B``
batch, ``T`` queries, ``S`` keys, ``d_q`` query width, ``d_v`` value width.

References: Bahdanau, Cho & Bengio (2015); Luong, Pham & Manning (2015).
"""

from __future__ import annotations

import torch
from torch import nn

from attnbook._checks import float_sequence, positive_int

__all__ = ["AdditiveAttention", "LuongAttention"]


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
        keys = float_sequence("keys", keys)
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
        query = float_sequence("query", query)
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
            values = float_sequence("values", values)
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
                kind = mask.dtype if isinstance(mask, torch.Tensor) else type(mask).__name__
                raise TypeError(f"mask must be a boolean tensor (True = may attend), got {kind}")
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

    def scores(self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor | None = None, *,
               projected_keys: torch.Tensor | None = None) -> torch.Tensor:
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
    :func:`~attnbook.attention.padding_mask`, or (B, T, S). ``forward`` returns ``(context,
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
