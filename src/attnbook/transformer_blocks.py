"""The Transformer's layers: the feed-forward network, the encoder block and the decoder block.

``FeedForward`` -> ``EncoderBlock`` -> ``DecoderBlock``, which
:class:`attnbook.transformer.Transformer` stacks (and from where they are
importable too). The blocks have the same parameters, in the same places, as
``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` (tests copy
weights across and compare outputs); what they add is readable code built on
:class:`attnbook.attention.MultiHeadAttention` and a way to get the attention
weights out.

**Norm placement.** ``norm_first=False`` is the paper's *post-norm*,
``x = LN(x + Sublayer(x))``; ``norm_first=True`` is the *pre-norm* of GPT-2 and
ViT, ``x = x + Sublayer(LN(x))``, which keeps an un-normalised residual path
from input to output and trains more stably when deep. A pre-norm stack ends
with one more LayerNorm (``Transformer`` adds it to encoder and decoder).

**Attention weights for plots.** Every block's ``forward`` takes
``need_weights`` (default ``False``). When it is ``True`` the block keeps the
detached weights of each of its attention sublayers as attributes --
``EncoderBlock.attn_weights`` and ``DecoderBlock.self_attn_weights`` /
``DecoderBlock.cross_attn_weights``, each (B, nh, T, S) -- and otherwise sets
them to ``None``, so they never hold stale maps. The return value is always the
block's output alone.

**Options for BERT and ViT.** Besides ``dropout``, ``norm_first`` and
``activation``, both blocks take, as keywords, what the later chapters' models
set differently from the paper: ``layer_norm_eps`` (PyTorch's ``1e-5`` by
default; BERT uses ``1e-12``, timm's ViT ``1e-6``), ``attn_dropout`` on the
attention weights and ``ffn_dropout`` on the feed-forward network's hidden
layer (both default to ``dropout``; BERT drops the weights at
``attention_probs_dropout_prob`` and not the hidden layer at all), and
``qkv_bias`` (``False`` removes the query/key/value biases, timm's
``qkv_bias``; the output projection keeps its bias). ``dropout`` itself acts on
each sublayer's output before the residual sum (timm's ``proj_drop``, BERT's
``hidden_dropout_prob``). The defaults give the paper's block, so the
parameter names never change with the options.

Masks are boolean, ``True`` = may attend (see :mod:`attnbook.attention`).
Shape legend: ``B`` batch, ``S`` source length, ``T`` target length,
``C = d_model``, ``nh`` heads.

References: Vaswani et al. (2017), sections 3.1-3.3; Xiong et al., *On Layer
Normalization in the Transformer Architecture* (2020) for pre-norm.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import dropout_rate, float_tensor, positive_int
from attnbook.attention import MultiHeadAttention

__all__ = ["FeedForward", "EncoderBlock", "DecoderBlock", "encoder_block_parameters"]

def _or(value: float | None, default: float) -> float:
    return default if value is None else value


_ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """The position-wise feed-forward network ``W_2 act(W_1 x + b_1) + b_2``.

    The same two-layer MLP is applied to every position on its own
    (d_model -> d_ff -> d_model); ``dropout`` acts on the hidden layer, as in
    ``nn.TransformerEncoderLayer``. ``activation`` is ``"relu"`` (the paper),
    ``"gelu"`` (BERT, GPT) or any callable.

    >>> ffn = FeedForward(8, 32)
    >>> ffn(torch.randn(2, 5, 8)).shape  # (B, T, d_model) -> (B, T, d_model)
    torch.Size([2, 5, 8])
    """

    def __init__(self, d_model: int, d_ff: int, *, dropout: float = 0.0,
                 activation: str | Callable[[torch.Tensor], torch.Tensor] = "relu") -> None:
        super().__init__()
        if isinstance(activation, str):
            if activation not in _ACTIVATIONS:
                raise ValueError(
                    f"activation must be one of {sorted(_ACTIVATIONS)} or a callable, got {activation!r}"
                )
            activation = _ACTIVATIONS[activation]
        elif not callable(activation):
            raise TypeError(f"activation must be a name or a callable, got {type(activation).__name__}")
        self.fc1 = nn.Linear(d_model, d_ff)  # W_1, b_1
        self.fc2 = nn.Linear(d_ff, d_model)  # W_2, b_2
        self.activation = activation
        self.dropout = nn.Dropout(dropout_rate(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.dropout(self.activation(self.fc1(x))))  # (B, T, d_ff) inside


class EncoderBlock(nn.Module):
    """One encoder layer: multi-head self-attention, then a feed-forward network.

    Each sublayer sits in a residual connection with LayerNorm, after it
    (``norm_first=False``, the paper) or before it (``norm_first=True``); see
    the module docstring. ``forward(x, mask)`` takes ``x`` (B, S, d_model) and an
    optional boolean ``mask`` broadcastable to (B, S, S) -- usually a (B, 1, S)
    source padding mask. With ``need_weights=True`` the self-attention weights
    (B, nh, S, S) are kept in ``self.attn_weights``. The keyword options
    (``layer_norm_eps``, ``attn_dropout``, ``ffn_dropout``, ``qkv_bias``) are
    described in the module docstring.

    >>> block = EncoderBlock(8, 2, 32)
    >>> x = torch.randn(2, 5, 8)
    >>> block(x, need_weights=True).shape, block.attn_weights.shape
    (torch.Size([2, 5, 8]), torch.Size([2, 2, 5, 5]))
    >>> vit_like = EncoderBlock(8, 2, 32, norm_first=True, activation="gelu", layer_norm_eps=1e-6, qkv_bias=False)
    >>> vit_like.norm1.eps, vit_like.self_attn.q_proj.bias, vit_like.self_attn.out_proj.bias.shape
    (1e-06, None, torch.Size([8]))
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str | Callable[[torch.Tensor], torch.Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        attn_dropout: float | None = None,
        ffn_dropout: float | None = None,
        qkv_bias: bool = True,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.norm_first = norm_first
        attn_dropout, ffn_dropout = _or(attn_dropout, dropout), _or(ffn_dropout, dropout)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=attn_dropout, qkv_bias=qkv_bias)
        self.ffn = FeedForward(d_model, d_ff, dropout=ffn_dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout_rate(dropout))  # on each sublayer's output, before the sum
        self.dropout2 = nn.Dropout(dropout)
        self.attn_weights: torch.Tensor | None = None

    def _sa(self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool) -> torch.Tensor:
        out, w = self.self_attn(x, mask=mask, need_weights=need_weights)
        self.attn_weights = None if w is None else w.detach()
        return self.dropout1(out)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, *, need_weights: bool = False
    ) -> torch.Tensor:
        float_tensor("x", x, (None, None, self.d_model), f"(B, length, d_model={self.d_model})")
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask, need_weights)
            x = x + self.dropout2(self.ffn(self.norm2(x)))
        else:
            x = self.norm1(x + self._sa(x, mask, need_weights))
            x = self.norm2(x + self.dropout2(self.ffn(x)))
        return x


def encoder_block_parameters(d_model: int, num_heads: int, d_ff: int) -> int:
    """The number of learned parameters of ``EncoderBlock(d_model, num_heads, d_ff)``, from the sizes alone.

    Every ``nn.Linear(n_in, n_out)`` has ``n_in * n_out`` weights and ``n_out``
    biases, every ``nn.LayerNorm(d)`` a gain and a bias of ``d`` entries each:

    * the attention's four projections ``W^Q, W^K, W^V, W^O``, each ``d_model -> d_model``:
      ``4 (d_model² + d_model)``. The count does not depend on ``num_heads``:
      the heads split ``d_model`` into ``num_heads`` slices of width
      ``d_k = d_model / num_heads``, so the projection of all heads is one
      ``d_model × d_model`` matrix however many heads share it;
    * the feed-forward network, ``d_model -> d_ff -> d_model``:
      ``(d_model d_ff + d_ff) + (d_ff d_model + d_model)``;
    * the two LayerNorms: ``2 · 2 d_model``.

    The block's options (``norm_first``, dropout) add no parameters; ``qkv_bias=False``
    would remove three biases and is not counted here.

    >>> encoder_block_parameters(512, 8, 2048)  # the paper's base model: 3.15 million per block
    3152384
    >>> block = EncoderBlock(8, 2, 16)
    >>> encoder_block_parameters(8, 2, 16) == sum(p.numel() for p in block.parameters())
    True
    """
    for name, value in (("d_model", d_model), ("num_heads", num_heads), ("d_ff", d_ff)):
        positive_int(name, value)
    if d_model % num_heads:
        raise ValueError(f"d_model={d_model} must be divisible by num_heads={num_heads}")
    attention = 4 * (d_model * d_model + d_model)  # q_proj, k_proj, v_proj, out_proj, with biases
    ffn = (d_model * d_ff + d_ff) + (d_ff * d_model + d_model)  # fc1, fc2
    norms = 2 * (2 * d_model)  # norm1, norm2: gain and bias
    return attention + ffn + norms


class DecoderBlock(nn.Module):
    """One decoder layer: masked self-attention, cross-attention to the encoder, feed-forward.

    What it adds over :class:`EncoderBlock`: its self-attention is causal --
    position t sees targets 0..t only -- and a second attention lets every
    target position query the encoder's output ``memory``. ``forward(x, memory)``
    takes ``x`` (B, T, d_model) and ``memory`` (B, S, d_model); ``tgt_mask``
    (broadcastable to (B, T, T), e.g. a (B, 1, T) target padding mask) is
    combined with the causal mask unless ``causal=False``; ``memory_mask``
    (broadcastable to (B, T, S), e.g. a (B, 1, S) source padding mask) limits
    cross-attention. With ``need_weights=True`` the weights are kept in
    ``self.self_attn_weights`` (B, nh, T, T) and ``self.cross_attn_weights``
    (B, nh, T, S).

    >>> block = DecoderBlock(8, 2, 32)
    >>> y, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    >>> block(y, memory, need_weights=True).shape, block.cross_attn_weights.shape
    (torch.Size([2, 4, 8]), torch.Size([2, 2, 4, 6]))
    >>> bool((block.self_attn_weights.triu(diagonal=1) == 0).all())  # no peeking ahead
    True
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str | Callable[[torch.Tensor], torch.Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        attn_dropout: float | None = None,
        ffn_dropout: float | None = None,
        qkv_bias: bool = True,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.norm_first = norm_first
        attn_dropout, ffn_dropout = _or(attn_dropout, dropout), _or(ffn_dropout, dropout)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=attn_dropout, qkv_bias=qkv_bias)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=attn_dropout, qkv_bias=qkv_bias)
        self.ffn = FeedForward(d_model, d_ff, dropout=ffn_dropout, activation=activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1 = nn.Dropout(dropout_rate(dropout))
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.self_attn_weights: torch.Tensor | None = None
        self.cross_attn_weights: torch.Tensor | None = None

    def _sa(
        self, x: torch.Tensor, mask: torch.Tensor | None, causal: bool, need_weights: bool
    ) -> torch.Tensor:
        out, w = self.self_attn(x, mask=mask, need_weights=need_weights, is_causal=causal)
        self.self_attn_weights = None if w is None else w.detach()
        return self.dropout1(out)

    def _ca(
        self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None, need_weights: bool
    ) -> torch.Tensor:
        out, w = self.cross_attn(x, memory, memory, mask=mask, need_weights=need_weights)
        self.cross_attn_weights = None if w is None else w.detach()
        return self.dropout2(out)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, tgt_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, *, causal: bool = True,
                need_weights: bool = False) -> torch.Tensor:
        float_tensor("x", x, (None, None, self.d_model), f"(B, length, d_model={self.d_model})")
        float_tensor("memory", memory, (None, None, self.d_model), f"(B, length, d_model={self.d_model})")
        if self.norm_first:
            x = x + self._sa(self.norm1(x), tgt_mask, causal, need_weights)
            x = x + self._ca(self.norm2(x), memory, memory_mask, need_weights)
            x = x + self.dropout3(self.ffn(self.norm3(x)))
        else:
            x = self.norm1(x + self._sa(x, tgt_mask, causal, need_weights))
            x = self.norm2(x + self._ca(x, memory, memory_mask, need_weights))
            x = self.norm3(x + self.dropout3(self.ffn(x)))
        return x
