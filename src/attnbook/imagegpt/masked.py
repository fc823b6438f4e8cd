"""Masked-pixel (BERT-style) training: the same transformer, bidirectional, predicting hidden pixels.

Chen et al. trained every iGPT twice, once on the next pixel (:class:`ImageGPT`)
and once like BERT: replace 15 % of the pixels by a ``[MASK]`` token, let the
transformer see *all* the other pixels (no causal mask) and predict the hidden
ones. :class:`MaskedPixelModel` is :class:`ImageGPT` with that one change: the
same :class:`attnbook.gpt.GPT` (same sizes, same initial weights for the same
seed), its attention made bidirectional, and the extra token id
``vocab_size`` meaning ``[MASK]`` instead of "start". It reads the pixels
unshifted: ``logits[:, t]`` scores pixel ``t`` from every *other* visible pixel.

Two ways to compare it with the autoregressive model (section 3 of the
chapter): bits on the *same* masked test pixels (:func:`masked_pixel_bits`;
the masked model sees both sides, ImageGPT only the past), and linear probes on
the same layer (:func:`attnbook.imagegpt.layer_features` takes either model).

Reference: Chen et al., *Generative Pretraining from Pixels* (ICML 2020),
sections 2.2 and 4.6 (BERT objective, figure 4).
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import token_ids
from attnbook.attention import fused_attention, scaled_dot_product_attention
from attnbook.gpt.layers import Block, CausalSelfAttention

from .model import ImageGPTConfig, PixelTransformer, bits_per_dim
from .sequence import to_sequence

__all__ = ["BidirectionalSelfAttention", "MaskedPixelModel", "mask_pixels", "masked_pixel_loss",
           "masked_pixel_bits"]


class BidirectionalSelfAttention(CausalSelfAttention):
    """:class:`~attnbook.gpt.layers.CausalSelfAttention` without the causal mask: every
    position attends to every position (BERT's encoder attention, GPT's parameter layout).

    >>> _ = torch.manual_seed(0)
    >>> attn = BidirectionalSelfAttention(8, 2)
    >>> _ = attn(torch.randn(1, 4, 8), need_weights=True)
    >>> bool((attn.attn_weights > 0).all())   # every position, the future included
    True
    """

    def forward(self, x: torch.Tensor, *, need_weights: bool = False, rope: object = None, cache: object = None,
                layer: int = 0) -> torch.Tensor:
        if rope is not None or cache is not None:
            raise ValueError("bidirectional attention takes neither rotary positions nor a key/value cache")
        B, T, C = x.shape
        nh, hs = self.n_head, self.head_size
        q, k, v = self.c_attn(x).split(C, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        q = q.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        if need_weights:
            y, w = scaled_dot_product_attention(q, k, v)  # (B, nh, T, hs), (B, nh, T, T)
            self.attn_weights = w.detach()
        else:
            dropout_p = self.dropout if self.training else 0.0
            y = fused_attention(q, k, v, dropout_p=dropout_p)  # (B, nh, T, hs)
            self.attn_weights = None
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MaskedPixelModel(PixelTransformer):
    """ImageGPT's transformer made bidirectional: ``forward(seq) -> logits`` (B, T, V) for every pixel.

    ``seq`` (B, H*W) holds pixel ids, with ``config.mask_id`` (= ``vocab_size``)
    where a pixel is hidden. It has exactly :class:`ImageGPT`'s parameters
    (the start token's embedding row becomes the ``[MASK]`` row).

    >>> _ = torch.manual_seed(0)
    >>> model = MaskedPixelModel(ImageGPTConfig.preset("digits-8x8"))
    >>> seq = torch.randint(8, (2, 64))
    >>> model(seq).shape
    torch.Size([2, 64, 8])
    >>> changed = seq.clone(); changed[:, 63] = (seq[:, 63] + 1) % 8   # alter the last pixel
    >>> torch.allclose(model(seq)[:, 0], model(changed)[:, 0])         # the first one sees it
    False
    """

    def __init__(self, config: ImageGPTConfig) -> None:
        super().__init__(config)
        for block in self.gpt.h:  # same weights as the causal layer it replaces, mask dropped
            layer = cast(Block, block)
            causal = layer.attn
            layer.attn = BidirectionalSelfAttention(config.n_embd, config.n_head, dropout=config.dropout,
                                                    bias=config.bias)
            layer.attn.load_state_dict(causal.state_dict())

    @property
    def mask_id(self) -> int:
        """Id of the ``[MASK]`` token, the one after the pixel values."""
        return self.config.vocab_size

    def _check_seq(self, seq: object) -> torch.Tensor:
        seq = token_ids("seq", seq)
        T = self.config.n_positions
        if seq.dim() != 2 or seq.shape[0] == 0 or seq.shape[1] != T:
            raise ValueError(f"seq must have shape (B, H*W) = (B, {T}) with B >= 1, got {tuple(seq.shape)}")
        return token_ids("seq", seq, self.config.vocab_size + 1)  # pixel values and [MASK]

    def _inputs(self, seq: object) -> torch.Tensor:
        return self._check_seq(seq)  # unshifted: every pixel (or [MASK]) in its own place


def mask_pixels(tokens: torch.Tensor, mask_id: int, *, rate: float = 0.15,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Hide each pixel with probability ``rate``: ``(inputs, targets, masked)``, each (B, H*W).

    ``targets`` is ``tokens`` in raster order, ``inputs`` the same with
    ``mask_id`` where ``masked`` is True. iGPT masks 15 % and, unlike BERT,
    always uses the ``[MASK]`` token (no 80/10/10 split). A batch for
    :func:`masked_pixel_loss`.

    >>> tokens = torch.tensor([[[1, 2], [3, 4]]])
    >>> inputs, targets, masked = mask_pixels(tokens, 8, rate=1.0)
    >>> inputs, targets, masked.all().item()
    (tensor([[8, 8, 8, 8]]), tensor([[1, 2, 3, 4]]), True)
    """
    if not 0.0 < rate <= 1.0:
        raise ValueError(f"rate must be in (0, 1], got {rate}")
    tokens = token_ids("tokens", tokens, dim=3)
    seq = to_sequence(tokens)  # (B, H*W)
    masked = torch.rand(seq.shape, generator=generator, device=seq.device) < rate  # (B, H*W), True = hidden
    return seq.masked_fill(masked, mask_id), seq, masked


def masked_pixel_loss(model: MaskedPixelModel,
                      batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy (nats) of the masked pixels only; ``batch`` from :func:`mask_pixels`.

    Shaped for :func:`attnbook.train.fit`'s ``loss_fn(model, batch)``.
    """
    inputs, targets, masked = batch
    return F.cross_entropy(model(inputs)[masked].float(), targets[masked])  # (M, V), (M,)


@torch.no_grad()
def masked_pixel_bits(model: nn.Module, tokens: torch.Tensor, masked: torch.Tensor) -> float:
    """Bits per pixel on the pixels where ``masked`` (N, H*W) is True, for either kind of model.

    A :class:`MaskedPixelModel` reads ``tokens`` (N, H, W) with those pixels
    replaced by ``[MASK]``, so it predicts each from all the visible ones; an
    :class:`ImageGPT` reads the image as it is, and by construction predicts
    pixel ``t`` from the pixels before it (masked or not) only. Same pixels,
    different evidence: what each objective can use. Eval mode, no gradients.
    """
    from .model import ImageGPT  # here: model.py does not import this module

    tokens = token_ids("tokens", tokens, dim=3)
    seq = to_sequence(tokens)  # (N, T)
    if masked.shape != seq.shape or masked.dtype != torch.bool:
        raise ValueError(f"masked must be a bool tensor of shape {tuple(seq.shape)}, got "
                         f"{masked.dtype} {tuple(masked.shape)}")
    if not masked.any():
        raise ValueError("masked must mark at least one pixel")
    was_training = model.training
    model.eval()
    try:
        if isinstance(model, MaskedPixelModel):
            logits = model(seq.masked_fill(masked, model.mask_id))  # (N, T, V)
        elif isinstance(model, ImageGPT):
            logits = model(seq)  # (N, T, V): logits[:, t] sees seq[:, :t]
        else:
            raise TypeError(f"model must be a MaskedPixelModel or an ImageGPT, got {type(model).__name__}")
    finally:
        model.train(was_training)
    return float(bits_per_dim(logits[masked], seq[masked]))  # (M, V), (M,)
