"""The pieces of a GPT block: causal self-attention, the MLP, and the pre-norm block.

Each piece has the options of a modern ("Llama-style") decoder beside GPT-2's:
RMSNorm for LayerNorm (:func:`make_norm`), SwiGLU for the GELU MLP
(:class:`SwiGLU`), rotary positions applied to queries and keys
(:mod:`.rope`), fewer key/value heads than query heads (grouped-query
attention, ``n_kv_head``), and a key/value cache for generation
(:class:`KVCache`).

Shape legend: ``B`` batch, ``T`` sequence length, ``C = n_embd``, ``nh``
heads, ``nkv`` key/value heads, ``hs = C / nh`` head size, ``P`` tokens
already cached.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import dropout_rate, positive_int
from attnbook.attention import causal_mask, fused_attention, scaled_dot_product_attention

from .rope import apply_rope

__all__ = ["CausalSelfAttention", "MLP", "SwiGLU", "Block", "KVCache", "cached_attention", "make_norm"]

NORMS = ("layernorm", "rmsnorm")
MLPS = ("gelu", "swiglu")


def make_norm(kind: str, n_embd: int, *, bias: bool = True) -> nn.Module:
    """GPT-2's ``LayerNorm`` (eps 1e-5) or Llama's ``RMSNorm`` (eps 1e-6: no mean removed, no bias).

    RMSNorm (Zhang & Sennrich 2019, https://arxiv.org/abs/1910.07467) divides by
    the root mean square only: ``x / sqrt(mean(x**2) + eps) * g``.

    >>> make_norm("rmsnorm", 4)(torch.tensor([[3.0, -3.0, 3.0, -3.0]]))
    tensor([[ 1.0000, -1.0000,  1.0000, -1.0000]], grad_fn=<MulBackward0>)
    """
    if kind == "layernorm":
        return nn.LayerNorm(n_embd, bias=bias)
    if kind == "rmsnorm":
        return nn.RMSNorm(n_embd, eps=1e-6)
    raise ValueError(f"norm must be one of {NORMS}, got {kind!r}")


class KVCache:
    """The keys and values every block has computed so far, so that a new token costs one position.

    Without a cache, generating token ``t`` runs the model on all ``t``
    tokens again; with one, each block keeps its keys and values (B, nkv, P, hs)
    and a step computes the new token's only. ``nbytes`` is the memory this
    takes: ``2 * n_layer * B * nkv * P * hs`` values.

    >>> cache = KVCache(n_layer=2)
    >>> k, v = cache.update(0, torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
    >>> _ = cache.update(1, torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
    >>> len(cache), cache.nbytes          # 3 tokens; 2 x 2 blocks x 2 heads x 3 x 4 floats x 4 bytes
    (3, 384)
    """

    def __init__(self, n_layer: int) -> None:
        self.keys: list[torch.Tensor | None] = [None] * positive_int("n_layer", n_layer)
        self.values: list[torch.Tensor | None] = [None] * n_layer

    def __len__(self) -> int:
        """Tokens cached (those of the first block: a step updates every block in turn)."""
        return self.cached(0)

    def cached(self, layer: int) -> int:
        """Tokens whose keys and values block ``layer`` holds."""
        k = self.keys[layer]
        return 0 if k is None else k.shape[2]

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new tokens' ``k``, ``v`` (B, nkv, T, hs) to block ``layer``'s; return all (B, nkv, P+T, hs)."""
        old_k, old_v = self.keys[layer], self.values[layer]
        if old_k is not None and old_v is not None:
            k, v = torch.cat([old_k, k], dim=2), torch.cat([old_v, v], dim=2)
        self.keys[layer], self.values[layer] = k, v
        return k, v

    @property
    def nbytes(self) -> int:
        """Bytes held by the cached keys and values."""
        return sum(t.numel() * t.element_size() for t in self.keys + self.values if t is not None)


def cached_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, past_k: torch.Tensor,
                     past_v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Attention of ``T`` new tokens with a cache: ``(out, keys, values)``, the keys and values extended.

    ``q``, ``k``, ``v`` (B, nh, T, hs) belong to the new tokens, ``past_k``,
    ``past_v`` (B, nh, P, hs) to the ``P`` tokens before them (``P`` may be 0).
    The new keys and values go *after* the cached ones along the time axis;
    the query of new token ``t`` (position ``P + t``) attends, scaled by
    ``1 / sqrt(hs)``, to the keys of positions ``0 .. P + t``, itself included.
    Returns ``out`` (B, nh, T, hs) and the keys and values (B, nh, P + T, hs)
    to cache for the next step. What :class:`CausalSelfAttention` does with a
    :class:`KVCache`, written for one head layout and no fused kernel.

    >>> past_k = past_v = torch.zeros(1, 1, 0, 2)            # nothing cached yet
    >>> q = k = v = torch.tensor([[[[1.0, 0.0]]]])           # (B, nh, T, hs) = (1, 1, 1, 2)
    >>> out, keys, values = cached_attention(q, k, v, past_k, past_v)
    >>> out, keys.shape                                     # alone, the token attends to itself
    (tensor([[[[1., 0.]]]]), torch.Size([1, 1, 1, 2]))
    >>> out, keys, _ = cached_attention(q, k, 3 * v, keys, values)
    >>> out, keys.shape                                     # equal scores: the mean of 1 and 3
    (tensor([[[[2., 0.]]]]), torch.Size([1, 1, 2, 2]))
    """
    keys = torch.cat([past_k, k], dim=2)  # (B, nh, P + T, hs)
    values = torch.cat([past_v, v], dim=2)  # (B, nh, P + T, hs)
    P, T = past_k.shape[2], q.shape[2]
    mask = torch.ones(T, P + T, dtype=torch.bool, device=q.device).tril(diagonal=P)  # (T, P + T)
    out, _ = scaled_dot_product_attention(q, keys, values, mask)  # (B, nh, T, hs)
    return out, keys, values


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention: position ``t`` attends to positions ``0..t`` only.

    What it adds over :class:`attnbook.attention.MultiHeadAttention`: it is
    self-attention only and always causal, and one linear layer ``c_attn``
    computes ``Q``, ``K`` and ``V`` of all heads in a single matmul (with
    ``nkv = nh`` its (3C, C) weight is ``W^Q``, ``W^K``, ``W^V`` stacked, the
    layout of ``nn.MultiheadAttention.in_proj_weight``). ``c_proj`` is ``W^O``.
    ``forward(x)`` maps (B, T, C) to (B, T, C); with ``need_weights=True`` the
    detached weights (B, nh, T, T) are kept in ``self.attn_weights``.

    ``n_kv_head`` below ``n_head`` is grouped-query attention (Ainslie et al.
    2023, https://arxiv.org/abs/2305.13245): ``nkv`` key/value heads, each
    shared by ``nh / nkv`` consecutive query heads, so the keys and values --
    and a :class:`KVCache` -- shrink by that factor. ``rope=(cos, sin)`` rotates
    the queries and keys (:mod:`.rope`); ``cache`` appends this call's keys and
    values to those of the tokens before (block ``layer``'s), and the new
    tokens attend to all of them.

    >>> attn = CausalSelfAttention(8, 2)
    >>> y = attn(torch.randn(3, 5, 8), need_weights=True)
    >>> y.shape, attn.attn_weights.shape
    (torch.Size([3, 5, 8]), torch.Size([3, 2, 5, 5]))
    >>> bool((attn.attn_weights.triu(diagonal=1) == 0).all())  # nothing from the future
    True
    >>> CausalSelfAttention(8, 4, n_kv_head=2).c_attn.weight.shape  # C + 2 * nkv * hs rows
    torch.Size([16, 8])
    """

    def __init__(self, n_embd: int, n_head: int, *, n_kv_head: int | None = None, dropout: float = 0.0,
                 bias: bool = True) -> None:
        super().__init__()
        positive_int("n_embd", n_embd)
        positive_int("n_head", n_head)
        if n_embd % n_head != 0:
            raise ValueError(f"n_embd must be divisible by n_head, got n_embd={n_embd} and n_head={n_head}")
        n_kv_head = n_head if n_kv_head is None else positive_int("n_kv_head", n_kv_head)
        if n_head % n_kv_head != 0:
            raise ValueError(f"n_head must be a multiple of n_kv_head, got n_head={n_head} and n_kv_head={n_kv_head}")
        self.n_embd, self.n_head, self.n_kv_head, self.head_size = n_embd, n_head, n_kv_head, n_embd // n_head
        self.dropout = dropout_rate(dropout)
        kv_width = n_kv_head * self.head_size
        self.c_attn = nn.Linear(n_embd, n_embd + 2 * kv_width, bias=bias)  # [W^Q; W^K; W^V] of all heads
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)  # W^O: mixes the concatenated heads
        self.resid_dropout = nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None

    def extra_repr(self) -> str:
        return f"n_embd={self.n_embd}, n_head={self.n_head}, n_kv_head={self.n_kv_head}, dropout={self.dropout}"

    def forward(self, x: torch.Tensor, *, need_weights: bool = False,
                rope: tuple[torch.Tensor, torch.Tensor] | None = None,
                cache: KVCache | None = None, layer: int = 0) -> torch.Tensor:
        B, T, C = x.shape
        nh, nkv, hs = self.n_head, self.n_kv_head, self.head_size
        q, k, v = self.c_attn(x).split([C, nkv * hs, nkv * hs], dim=2)  # (B, T, C), 2 x (B, T, nkv*hs)
        q = q.view(B, T, nh, hs).transpose(1, 2)  # (B, T, C) -> (B, T, nh, hs) -> (B, nh, T, hs)
        k = k.view(B, T, nkv, hs).transpose(1, 2)  # (B, nkv, T, hs)
        v = v.view(B, T, nkv, hs).transpose(1, 2)  # (B, nkv, T, hs)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        past = 0
        if cache is not None:
            past = cache.cached(layer)
            k, v = cache.update(layer, k, v)  # (B, nkv, P + T, hs)
        if nkv != nh:  # each key/value head serves nh / nkv consecutive query heads
            k, v = k.repeat_interleave(nh // nkv, dim=1), v.repeat_interleave(nh // nkv, dim=1)  # (B, nh, P+T, hs)
        # query t (at position P + t) sees keys 0 .. P + t: the causal mask, shifted by what is cached
        mask = causal_mask(T, device=x.device) if past == 0 else \
            torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(diagonal=past)  # (T, P + T)
        if need_weights:
            # The teachable path builds the (B, nh, T, P + T) weights so that they can be plotted.
            y, w = scaled_dot_product_attention(q, k, v, mask)
            self.attn_weights = w.detach()  # (B, nh, T, P + T), rows sum to 1, nothing from the future
        else:
            dropout_p = self.dropout if self.training else 0.0
            y = fused_attention(q, k, v, is_causal=True, dropout_p=dropout_p) if past == 0 else \
                fused_attention(q, k, v, mask, dropout_p=dropout_p)  # (B, nh, T, hs)
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


class SwiGLU(nn.Module):
    """Llama's feed-forward network: ``c_proj(silu(w_gate(x)) * w_up(x))``, C -> n_inner -> C.

    A gated linear unit (Shazeer 2020, https://arxiv.org/abs/2002.05202): one
    projection, through SiLU, gates another, element by element. It has three
    matrices instead of two, so ``n_inner`` defaults to ``8 C / 3`` rounded up to
    a multiple of 8, which keeps the parameters of GPT-2's ``4 C`` MLP.

    >>> mlp = SwiGLU(12)
    >>> mlp.w_up.weight.shape, mlp(torch.randn(2, 5, 12)).shape   # n_inner = 32
    (torch.Size([32, 12]), torch.Size([2, 5, 12]))
    """

    def __init__(
        self, n_embd: int, n_inner: int | None = None, *, dropout: float = 0.0, bias: bool = True
    ) -> None:
        super().__init__()
        positive_int("n_embd", n_embd)
        n_inner = -(-8 * n_embd // 24) * 8 if n_inner is None else positive_int("n_inner", n_inner)
        self.w_gate = nn.Linear(n_embd, n_inner, bias=bias)  # Llama's gate_proj
        self.w_up = nn.Linear(n_embd, n_inner, bias=bias)  # up_proj
        self.c_proj = nn.Linear(n_inner, n_embd, bias=bias)  # down_proj (writes into the residual stream)
        self.dropout = nn.Dropout(dropout_rate(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.silu(self.w_gate(x)) * self.w_up(x)))  # (B, T, n_inner) inside


class Block(nn.Module):
    """One pre-norm GPT block: ``x + attn(ln_1(x))``, then ``x + mlp(ln_2(x))``.

    Pre-norm (GPT-2) keeps a clean residual path from the embeddings to the
    final LayerNorm, which is what lets deep stacks train without warm
    restarts; compare ``norm_first`` in :mod:`attnbook.transformer`.
    ``norm="rmsnorm"``, ``mlp="swiglu"`` and ``n_kv_head`` make Llama's block
    (its ``input_layernorm``, ``mlp`` and grouped ``self_attn``).

    >>> block = Block(8, 2)
    >>> block(torch.randn(2, 5, 8)).shape
    torch.Size([2, 5, 8])
    >>> type(Block(8, 2, norm="rmsnorm", mlp="swiglu").mlp).__name__
    'SwiGLU'
    """

    def __init__(
        self,
        n_embd: int,
        n_head: int,
        *,
        n_inner: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        n_kv_head: int | None = None,
        norm: str = "layernorm",
        mlp: str = "gelu",
    ) -> None:
        super().__init__()
        if mlp not in MLPS:
            raise ValueError(f"mlp must be one of {MLPS}, got {mlp!r}")
        self.ln_1 = make_norm(norm, n_embd, bias=bias)
        self.attn = CausalSelfAttention(n_embd, n_head, n_kv_head=n_kv_head, dropout=dropout, bias=bias)
        self.ln_2 = make_norm(norm, n_embd, bias=bias)
        self.mlp = (MLP if mlp == "gelu" else SwiGLU)(n_embd, n_inner, dropout=dropout, bias=bias)

    def forward(self, x: torch.Tensor, *, need_weights: bool = False,
                rope: tuple[torch.Tensor, torch.Tensor] | None = None,
                cache: KVCache | None = None, layer: int = 0) -> torch.Tensor:
        # only what is set goes on: a subclass's attention (ImageGPT's unmasked one) may take neither
        extra = {} if rope is None and cache is None else dict(rope=rope, cache=cache, layer=layer)
        x = x + self.attn(self.ln_1(x), need_weights=need_weights, **extra)  # tokens talk to each other
        x = x + self.mlp(self.ln_2(x))  # each token thinks on its own
        return x
