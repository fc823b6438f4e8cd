"""The pieces of a GPT block: causal self-attention, the MLP, and the pre-norm block.

Shape legend: ``B`` batch, ``T`` sequence length, ``C = n_embd``, ``nh``
heads, ``hs = C / nh`` head size.
"""

from __future__ import annotations

import torch
from torch import nn

from attnbook._checks import dropout_rate, positive_int
from attnbook.attention import causal_mask, fused_attention, scaled_dot_product_attention

__all__ = ["CausalSelfAttention", "MLP", "Block"]


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention: position ``t`` attends to positions ``0..t`` only.

    What it adds over :class:`attnbook.attention.MultiHeadAttention`: it is
    self-attention only and always causal, and one linear layer ``c_attn``
    computes ``Q``, ``K`` and ``V`` of all heads in a single matmul (its
    (3C, C) weight is ``W^Q``, ``W^K``, ``W^V`` stacked, the layout of
    ``nn.MultiheadAttention.in_proj_weight``). ``c_proj`` is ``W^O``.
    ``forward(x)`` maps (B, T, C) to (B, T, C); with ``need_weights=True`` the
    detached weights (B, nh, T, T) are kept in ``self.attn_weights``.

    >>> attn = CausalSelfAttention(8, 2)
    >>> y = attn(torch.randn(3, 5, 8), need_weights=True)
    >>> y.shape, attn.attn_weights.shape
    (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
    >>> bool((attn.attn_weights.triu(diagonal=1) == 0).all())  # nothing from the future
    True
    """

    def __init__(self, n_embd: int, n_head: int, *, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        positive_int("n_embd", n_embd)
        positive_int("n_head", n_head)
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd must be divisible by n_head, got n_embd={n_embd} and n_head={n_head}")
        self.n_embd, self.n_head, self.head_size = n_embd, n_head, n_embd // n_head
        self.dropout = dropout_rate(dropout)
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)  # [W^Q; W^K; W^V] of all heads
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)  # W^O: mixes the concatenated heads
        self.resid_dropout = nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None

    def extra_repr(self) -> str:
        return f"n_embd={self.n_embd}, n_head={self.n_head}, dropout={self.dropout}"

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        B, T, C = x.shape
        nh, hs = self.n_head, self.head_size
        q, k, v = self.c_attn(x).split(C, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        q = q.view(B, T, nh, hs).transpose(1, 2)  # (B, T, C) -> (B, T, nh, hs) -> (B, nh, T, hs)
        k = k.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        if need_weights:
            # The teachable path builds the (B, nh, T, T) weights so that they can be plotted.
            y, w = scaled_dot_product_attention(q, k, v, causal_mask(T, device=x.device))
            self.attn_weights = w.detach()  # (B, nh, T, T), rows sum to 1, zero above the diagonal
        else:
            dropout_p = self.dropout if self.training else 0.0
            y = fused_attention(q, k, v, is_causal=True, dropout_p=dropout_p)  # (B, nh, T, hs)
            self.attn_weights = None
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, nh, hs) -> (B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """The feed-forward network of a GPT block: ``c_proj(GELU(c_fc(x)))``, C -> n_inner -> C.

    What it differs in from :class:`attnbook.transformer.FeedForward`: GELU
    always, and dropout on the *output* (the residual branch), not on the
    hidden layer. The GELU is the exact one, ``x * Phi(x)``, as in nanoGPT;
    GPT-2 used a tanh approximation (``approximate="tanh"``), which differs by
    less than 1e-3 and is several times slower on a CPU today.

    >>> MLP(8)(torch.randn(2, 5, 8)).shape  # hidden width 4 * 8 = 32
    torch.Size([2, 5, 8])
    """

    def __init__(
        self, n_embd: int, n_inner: int | None = None, *, dropout: float = 0.0, bias: bool = True
    ) -> None:
        super().__init__()
        positive_int("n_embd", n_embd)
        n_inner = 4 * n_embd if n_inner is None else positive_int("n_inner", n_inner)
        self.c_fc = nn.Linear(n_embd, n_inner, bias=bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(n_inner, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout_rate(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))  # (B, T, n_inner) inside


class Block(nn.Module):
    """One pre-norm GPT block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``.

    Pre-norm (GPT-2) keeps a clean residual path from the embeddings to the
    final LayerNorm, which is what lets deep stacks train without warm
    restarts; compare ``norm_first`` in :mod:`attnbook.transformer`.

    >>> block = Block(8, 2)
    >>> block(torch.randn(2, 5, 8)).shape
    torch.Size([2, 5, 8])
    """

    def __init__(
        self,
        n_embd: int,
        n_head: int,
        *,
        n_inner: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd, bias=bias)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout=dropout, bias=bias)
        self.ln_2 = nn.LayerNorm(n_embd, bias=bias)
        self.mlp = MLP(n_embd, n_inner, dropout=dropout, bias=bias)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), need_weights=need_weights)  # tokens talk to each other
        x = x + self.mlp(self.ln_2(x))  # each token thinks on its own
        return x
