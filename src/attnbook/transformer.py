"""The encoder-decoder Transformer of *Attention Is All You Need*, small to large.

``FeedForward`` -> ``EncoderBlock`` -> ``DecoderBlock`` -> ``TransformerConfig``
-> ``Transformer`` -> ``greedy_decode``. The three blocks live in
:mod:`attnbook.transformer_blocks` (importable from here too), with what they
share: post-norm or pre-norm, and the attention weights they keep for plots.
``Transformer.forward(..., need_weights=True)`` passes that flag to every block
and ``Transformer.attention_weights()`` collects the weights.

**Masks** are boolean, ``True`` = may attend (see :mod:`attnbook.attention`).
The ``Transformer`` builds them from the token ids: a source padding mask
(B, 1, S) for encoder self-attention and decoder cross-attention, and a
target padding mask combined with the causal mask for decoder self-attention.

Shape legend: ``B`` batch, ``S`` source length, ``T`` target length,
``C = d_model``, ``nh`` heads, ``V`` vocabulary size.

References: Vaswani et al. (2017), sections 3.1-3.4; Rush, *The Annotated
Transformer* (2018).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from attnbook._checks import dropout_rate, float_tensor
from attnbook._config import PresetConfig
from attnbook.attention import MultiHeadAttention as MultiHeadAttention  # the blocks' attention, as before
from attnbook.attention import padding_mask
from attnbook.positional import LearnedPositions, SinusoidalPositions

# the blocks lived here first: ``from attnbook.transformer import EncoderBlock`` still works
from attnbook.transformer_blocks import _ACTIVATIONS
from attnbook.transformer_blocks import DecoderBlock as DecoderBlock
from attnbook.transformer_blocks import EncoderBlock as EncoderBlock
from attnbook.transformer_blocks import FeedForward as FeedForward
from attnbook.transformer_blocks import encoder_block_parameters as encoder_block_parameters

__all__ = [
    "TransformerConfig",
    "TRANSFORMER_PRESETS",
    "Transformer",
    "greedy_decode",
]

TRANSFORMER_PRESETS: dict[str, dict[str, object]] = {
    # tests and doctests: trains in seconds
    "tiny": dict(d_model=32, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=64),
    # the chapter's translators on a 2-core laptop CPU
    "cpu-fast": dict(d_model=64, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=256),
    # a bigger model for a GPU
    "gpu": dict(d_model=256, num_heads=8, num_encoder_layers=4, num_decoder_layers=4, d_ff=1024, dropout=0.1),
    # the paper's base model sizes (section 3; Table 3, row 'base')
    "paper-base": dict(
        d_model=512,
        num_heads=8,
        num_encoder_layers=6,
        num_decoder_layers=6,
        d_ff=2048,
        dropout=0.1,
        tie_weights=True,
    ),
}


@dataclass
class TransformerConfig(PresetConfig):
    """Sizes and switches of a :class:`Transformer`; ``preset(name, ...)`` gives named sizes.

    >>> cfg = TransformerConfig.preset("tiny", src_vocab_size=12, tgt_vocab_size=14)
    >>> cfg.d_model, cfg.num_heads, cfg.norm_first
    (32, 2, False)
    """

    presets = TRANSFORMER_PRESETS  # the named sizes that preset(name) reads

    src_vocab_size: int  # source token ids are 0 .. src_vocab_size - 1 (pad, bos, eos included)
    tgt_vocab_size: int  # target token ids are 0 .. tgt_vocab_size - 1
    d_model: int = 64  # width C of every token vector in the residual stream
    num_heads: int = 4  # attention heads per layer; d_model must be divisible by it
    num_encoder_layers: int = 2  # encoder blocks (the paper: 6)
    num_decoder_layers: int = 2  # decoder blocks (the paper: 6)
    d_ff: int = 256  # hidden width of the feed-forward network (the paper: 4 * d_model)
    dropout: float = 0.0  # on attention weights, sublayer outputs and embeddings (the paper: 0.1)
    max_len: int = 128  # longest source or target sequence (size of the position tables)
    positions: str = "sinusoidal"  # "sinusoidal" (fixed, the paper) or "learned" (BERT/GPT)
    norm_first: bool = False  # False: post-norm LN(x + f(x)) (the paper); True: pre-norm x + f(LN(x))
    activation: str = "relu"  # of the feed-forward network: "relu" (the paper) or "gelu"
    pad_id: int = 0  # padding token id, the same in both vocabularies; masked out of attention
    tie_weights: bool = False  # share the target embedding with the output projection (the paper does)

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        for name in ("num_encoder_layers", "num_decoder_layers"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.d_model % self.num_heads != 0:
            raise ValueError(
                "d_model must be divisible by num_heads, got "
                f"d_model={self.d_model} and num_heads={self.num_heads}"
            )
        if self.positions not in ("sinusoidal", "learned"):
            raise ValueError(f"positions must be 'sinusoidal' or 'learned', got {self.positions!r}")
        if self.positions == "sinusoidal" and self.d_model % 2 != 0:
            raise ValueError(f"sinusoidal positions need an even d_model, got {self.d_model}")
        if self.activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be one of {sorted(_ACTIVATIONS)}, got {self.activation!r}")
        dropout_rate(self.dropout)
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        if not 0 <= self.pad_id < smallest:
            raise ValueError(
                f"pad_id must be a valid id in both vocabularies (0 .. {smallest - 1}), got {self.pad_id}"
            )

class Transformer(nn.Module):
    """The encoder-decoder Transformer: ``forward(src, tgt_in) -> logits`` (B, T, tgt_vocab_size).

    ``src`` (B, S) and ``tgt_in`` (B, T) are token ids; ``tgt_in`` is the target
    shifted right (starting with BOS), so that ``logits[:, t]`` predicts target
    token ``t`` from the source and targets ``0 .. t-1`` (teacher forcing).
    Token embeddings are multiplied by ``sqrt(d_model)`` (section 3.4 of the
    paper) and start as ``N(0, 1/d_model)``, so the scaled vectors have unit
    size like the position vectors added to them; linear layers start
    Xavier-uniform with zero biases. Padding (``config.pad_id``) is masked out
    of every attention as a key; use ``ignore_index=pad_id`` in the loss.

    ``encode(src)`` -> memory (B, S, C) and ``decode(tgt_in, memory,
    memory_mask)`` -> logits are the two halves, used by :func:`greedy_decode`.

    >>> _ = torch.manual_seed(0)
    >>> cfg = TransformerConfig.preset("tiny", src_vocab_size=10, tgt_vocab_size=12)
    >>> model = Transformer(cfg)
    >>> src, tgt_in = torch.tensor([[3, 4, 5, 0]]), torch.tensor([[1, 6, 7]])  # pad_id 0
    >>> model(src, tgt_in, need_weights=True).shape  # (B, T, tgt_vocab_size)
    torch.Size([1, 3, 12])
    >>> model.attention_weights()["cross"][0][0, 0, :, -1]  # nobody attends to the padding
    tensor([0., 0., 0.])
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config = cfg = config
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.d_model)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.d_model)
        if cfg.positions == "sinusoidal":
            self.src_pos: nn.Module = SinusoidalPositions(cfg.max_len, cfg.d_model)
            self.tgt_pos: nn.Module = SinusoidalPositions(cfg.max_len, cfg.d_model)
        else:
            self.src_pos = LearnedPositions(cfg.max_len, cfg.d_model)
            self.tgt_pos = LearnedPositions(cfg.max_len, cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)  # on embeddings + positions
        self.encoder_layers = nn.ModuleList(
            EncoderBlock(
                cfg.d_model, cfg.num_heads, cfg.d_ff,
                dropout=cfg.dropout, norm_first=cfg.norm_first, activation=cfg.activation,
            )
            for _ in range(cfg.num_encoder_layers)
        )
        self.decoder_layers = nn.ModuleList(
            DecoderBlock(
                cfg.d_model, cfg.num_heads, cfg.d_ff,
                dropout=cfg.dropout, norm_first=cfg.norm_first, activation=cfg.activation,
            )
            for _ in range(cfg.num_decoder_layers)
        )
        # Pre-norm leaves the residual stream un-normalised: normalise it once at the end.
        self.encoder_norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()
        self.decoder_norm = nn.LayerNorm(cfg.d_model) if cfg.norm_first else nn.Identity()
        self.head = nn.Linear(cfg.d_model, cfg.tgt_vocab_size)  # scores over the target vocabulary
        self.reset_parameters()
        if cfg.tie_weights:
            self.head.weight = self.tgt_embed.weight  # (V, C) used both ways

    def reset_parameters(self) -> None:
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=self.config.d_model**-0.5)

    def _check_ids(self, name: str, ids: object, vocab_size: int) -> torch.Tensor:
        if not isinstance(ids, torch.Tensor) or ids.dtype.is_floating_point or ids.dtype == torch.bool:
            got = ids.dtype if isinstance(ids, torch.Tensor) else type(ids).__name__
            raise TypeError(f"{name} must be an integer tensor of token ids, got {got}")
        if ids.dim() != 2 or ids.numel() == 0:
            raise ValueError(
                f"{name} must have shape (B, length) with B, length >= 1, got {tuple(ids.shape)}"
            )
        if ids.shape[1] > self.config.max_len:
            raise ValueError(
                f"{name} has length {ids.shape[1]}, more than config.max_len={self.config.max_len}"
            )
        lo, hi = int(ids.min()), int(ids.max())
        if lo < 0 or hi >= vocab_size:
            raise ValueError(
                f"{name} holds ids in [{lo}, {hi}], outside the vocabulary 0 .. {vocab_size - 1}"
            )
        return ids

    def _embed(self, ids: torch.Tensor, embed: nn.Embedding, pos: nn.Module) -> torch.Tensor:
        x = embed(ids) * math.sqrt(self.config.d_model)  # (B, L, C)
        return self.dropout(pos(x))

    def encode(self, src: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        """Source ids (B, S) -> memory (B, S, C); padding is masked as a key."""
        self._check_ids("src", src, self.config.src_vocab_size)
        src_mask = padding_mask(src, self.config.pad_id)  # (B, 1, S)
        x = self._embed(src, self.src_embed, self.src_pos)  # (B, S, C)
        for layer in self.encoder_layers:
            x = layer(x, src_mask, need_weights=need_weights)
        return self.encoder_norm(x)

    def decode(
        self,
        tgt_in: torch.Tensor,
        memory: torch.Tensor,
        memory_mask: torch.Tensor | None,
        *,
        need_weights: bool = False,
    ) -> torch.Tensor:
        """Shifted targets (B, T) and memory (B, S, C) -> logits (B, T, V).

        ``memory_mask`` is the source padding mask ``padding_mask(src, pad_id)``
        (B, 1, S), or ``None`` when the source has no padding; it is required so
        that forgetting it cannot silently let the decoder attend to padding.
        """
        self._check_ids("tgt_in", tgt_in, self.config.tgt_vocab_size)
        float_tensor("memory", memory, (None, None, self.config.d_model), f"(B, length, d_model={self.config.d_model})")
        if memory.shape[0] != tgt_in.shape[0]:
            raise ValueError(f"memory has batch size {memory.shape[0]} but tgt_in has {tgt_in.shape[0]}")
        tgt_mask = padding_mask(tgt_in, self.config.pad_id)  # (B, 1, T); the blocks add the causal mask
        y = self._embed(tgt_in, self.tgt_embed, self.tgt_pos)  # (B, T, C)
        for layer in self.decoder_layers:
            y = layer(y, memory, tgt_mask, memory_mask, causal=True, need_weights=need_weights)
        return self.head(self.decoder_norm(y))  # (B, T, V)

    def forward(self, src: torch.Tensor, tgt_in: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        self._check_ids("src", src, self.config.src_vocab_size)
        self._check_ids("tgt_in", tgt_in, self.config.tgt_vocab_size)
        if src.shape[0] != tgt_in.shape[0]:
            raise ValueError(
                f"src and tgt_in must have the same batch size, got {src.shape[0]} and {tgt_in.shape[0]}"
            )
        memory = self.encode(src, need_weights=need_weights)
        return self.decode(tgt_in, memory, padding_mask(src, self.config.pad_id), need_weights=need_weights)

    def attention_weights(self) -> dict[str, list[torch.Tensor | None]]:
        """The weights kept by the last call with ``need_weights=True``, one (B, nh, T, S) per layer.

        Keys: ``"encoder"`` (self-attention over the source), ``"decoder"``
        (masked self-attention over the target) and ``"cross"`` (target
        queries over source keys).
        """
        return {
            "encoder": [cast(EncoderBlock, layer).attn_weights for layer in self.encoder_layers],
            "decoder": [cast(DecoderBlock, layer).self_attn_weights for layer in self.decoder_layers],
            "cross": [cast(DecoderBlock, layer).cross_attn_weights for layer in self.decoder_layers],
        }


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int,
) -> torch.Tensor:
    """Translate ``src`` (B, S) by picking the most likely next token, one step at a time.

    Starts every target with ``bos_id`` and feeds each prediction back in. A
    sequence is finished once it emits ``eos_id``; after that it gets
    ``model.config.pad_id``, and decoding stops when all are finished or after
    ``max_len`` tokens. Returns the generated ids (B, L), ``L <= max_len``,
    without the BOS and with the EOS. Runs in eval mode (no dropout) and
    restores the model's mode afterwards.

    >>> _ = torch.manual_seed(0)
    >>> model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=8, tgt_vocab_size=8))
    >>> out = greedy_decode(model, torch.tensor([[3, 4, 5], [6, 0, 0]]), bos_id=1, eos_id=2, max_len=5)
    >>> out.shape[0], out.shape[1] <= 5
    (2, True)
    """
    if not isinstance(model, nn.Module) or not all(hasattr(model, a) for a in ("encode", "decode", "config")):
        raise TypeError(
            f"model must be an attnbook Transformer (with encode/decode/config), got {type(model).__name__}"
        )
    pad_id = model.config.pad_id
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id), ("max_len", max_len)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if max_len < 1:
        raise ValueError(f"max_len must be at least 1, got {max_len}")
    if max_len > model.config.max_len:
        raise ValueError(f"max_len={max_len} is more than the model's config.max_len={model.config.max_len}")
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        if not 0 <= value < model.config.tgt_vocab_size:
            raise ValueError(
                f"{name}={value} is outside the target vocabulary 0 .. {model.config.tgt_vocab_size - 1}"
            )
    if bos_id == pad_id:
        raise ValueError(f"bos_id must differ from the padding id {pad_id}, or BOS would be masked out")

    was_training = model.training
    model.eval()
    try:
        memory = model.encode(src)  # (B, S, C)
        memory_mask = padding_mask(src, pad_id)  # (B, 1, S)
        B = src.shape[0]
        ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1): BOS
        done = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
        for _ in range(max_len):
            logits = model.decode(ys, memory, memory_mask)  # (B, t, V); recomputed, no cache: simple
            next_id = logits[:, -1].argmax(dim=-1)  # (B,)
            next_id = next_id.masked_fill(done, pad_id)  # finished sequences only pad
            ys = torch.cat([ys, next_id[:, None]], dim=1)  # (B, t + 1)
            done |= next_id == eos_id
            if bool(done.all()):
                break
        return ys[:, 1:]  # drop BOS: (B, L)
    finally:
        model.train(was_training)
