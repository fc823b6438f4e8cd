"""ImageGPT: chapter 4's GPT reading an image as a sequence of pixel tokens.

``ImageGPT(config)`` wraps an :class:`attnbook.gpt.GPT` (its blocks, embeddings
and tied head, unchanged) with one extra token: a **start token** whose id is
``vocab_size``. The GPT reads ``[start, x_0, ..., x_{T-2}]`` and its output at
position ``t`` scores pixel ``x_t`` -- so ``forward(seq)`` returns logits
(B, T, V) *aligned with* ``seq``: ``logits[:, t]`` predicts ``seq[:, t]`` from
``seq[:, :t]`` alone, and even the first pixel gets a prediction (from the
start token). The targets are therefore ``seq`` itself, unshifted, and the
last pixel's value is never read. The head's row for the start token is
dropped: a pixel is never the start token.

Training minimises the next-pixel cross-entropy (:func:`next_pixel_loss`);
quality is reported in **bits per dimension** (:func:`bits_per_dim`): the mean
of ``-log2 p(x_t | x_<t)`` over every pixel (every sub-pixel for RGB data
modelled channel by channel) -- 3.0 for a uniform guess over 8 grey levels.

Shape legend: ``B`` images, ``H`` x ``W`` pixels, ``T <= H W`` positions,
``C = n_embd``, ``V`` pixel values. Reference: Chen et al., *Generative
Pretraining from Pixels* (iGPT, ICML 2020).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import dropout_rate, positive_int, token_ids
from attnbook._config import PresetConfig
from attnbook.gpt import GPT, GPTConfig

__all__ = [
    "ImageGPTConfig",
    "IMAGEGPT_PRESETS",
    "PixelTransformer",
    "ImageGPT",
    "uniform_bits",
    "bits_per_dim",
]


IMAGEGPT_PRESETS: dict[str, dict[str, object]] = {
    # the chapter's CPU model: 8x8 digits at 8 grey levels (the calibration run)
    "digits-8x8": dict(vocab_size=8, height=8, width=8, n_layer=4, n_head=4, n_embd=64),
    # the coloured digits through the uniform 9-bit palette
    "colour-9bit": dict(vocab_size=512, height=8, width=8, n_layer=4, n_head=4, n_embd=64),
    # a GPU run: 28x28 MNIST at 8 grey levels
    "mnist-28x28": dict(vocab_size=8, height=28, width=28, n_layer=8, n_head=8, n_embd=256),
    # iGPT's sizes (Chen et al. 2020, table 1: layers and width); 512-colour palette, 32x32
    # input (iGPT-XL: 64x64). n_head = n_embd / 64 here: heads do not change the count.
    "igpt-s": dict(vocab_size=512, height=32, width=32, n_layer=24, n_head=8, n_embd=512),
    "igpt-m": dict(vocab_size=512, height=32, width=32, n_layer=36, n_head=16, n_embd=1024),
    "igpt-l": dict(vocab_size=512, height=32, width=32, n_layer=48, n_head=24, n_embd=1536),
    "igpt-xl": dict(vocab_size=512, height=64, width=64, n_layer=60, n_head=48, n_embd=3072),
}


@dataclass
class ImageGPTConfig(PresetConfig):
    """Sizes of an :class:`ImageGPT`; ``ImageGPTConfig.preset(name, **overrides)`` gives named ones.

    >>> cfg = ImageGPTConfig.preset("digits-8x8")
    >>> cfg.vocab_size, cfg.n_positions, cfg.n_layer, cfg.n_embd
    (8, 64, 4, 64)
    >>> f"{ImageGPTConfig.preset('igpt-s').num_params() / 1e6:.1f} M"  # the paper: 76 M
    '76.4 M'
    """

    presets = IMAGEGPT_PRESETS  # the named sizes that preset(name) reads

    vocab_size: int = 8  # pixel values 0 .. vocab_size - 1 (8 grey levels; 512 for the 9-bit palette)
    height: int = 8  # image rows H
    width: int = 8  # image columns W; the sequence has H * W positions
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # attention heads per block; n_embd must be divisible by it
    n_embd: int = 64  # width C of the residual stream
    n_inner: int | None = None  # hidden width of the MLP; None means 4 * n_embd
    dropout: float = 0.0  # dropout in the GPT (0 for short runs)
    bias: bool = True  # biases in Linear and LayerNorm layers

    def __post_init__(self) -> None:
        for name in ("vocab_size", "height", "width", "n_layer", "n_head", "n_embd"):
            positive_int(name, getattr(self, name))
        if self.n_inner is not None:
            positive_int("n_inner", self.n_inner)
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd must be divisible by n_head, got n_embd={self.n_embd} and n_head={self.n_head}")
        dropout_rate(self.dropout)

    @property
    def n_positions(self) -> int:
        """Sequence length ``H * W``: one position per pixel."""
        return self.height * self.width

    @property
    def start_id(self) -> int:
        """Id of the start token, the one after the pixel values."""
        return self.vocab_size

    def gpt_config(self) -> GPTConfig:
        """The :class:`attnbook.gpt.GPTConfig` of the wrapped GPT (one more token: the start token)."""
        return GPTConfig(
            vocab_size=self.vocab_size + 1,
            block_size=self.n_positions,
            n_layer=self.n_layer,
            n_head=self.n_head,
            n_embd=self.n_embd,
            n_inner=self.n_inner,
            dropout=self.dropout,
            bias=self.bias,
        )

    def num_params(self) -> int:
        """Parameters of the model, counted without building it (the iGPT-XL would need 27 GB).

        Per block: 4 C^2 (attention) + 2 C n_inner (MLP) weights, plus biases and two
        LayerNorms; then the tied (V + 1, C) embedding, the (H W, C) positions and ``ln_f``.
        """
        C, inner, b = self.n_embd, self.n_inner or 4 * self.n_embd, int(self.bias)
        norm = C * (1 + b)  # LayerNorm: gain (+ bias)
        block = 2 * norm + 4 * C * C + 4 * C * b + 2 * C * inner + (inner + C) * b
        return self.n_layer * block + (self.vocab_size + 1 + self.n_positions) * C + norm

class PixelTransformer(nn.Module):
    """What :class:`ImageGPT` and :class:`~attnbook.imagegpt.MaskedPixelModel` share: a GPT over pixel ids.

    A :class:`attnbook.gpt.GPT` with one token more than there are pixel values
    (ImageGPT's start token, the masked model's ``[MASK]``); ``forward(seq)``
    runs it and drops the head's row for that token, which is never a pixel.
    A subclass says, in ``_inputs(seq)``, which token ids (B, T) the GPT reads
    for the pixels ``seq``: ImageGPT shifts them behind the start token, the
    masked model reads them as they are.
    """

    def __init__(self, config: ImageGPTConfig) -> None:
        super().__init__()
        if not isinstance(config, ImageGPTConfig):
            raise TypeError(f"config must be an ImageGPTConfig, got {type(config).__name__}")
        self.config = config
        self.gpt = GPT(config.gpt_config())

    def num_params(self) -> int:
        """Number of parameters (the tied embedding counted once)."""
        return self.gpt.num_params()

    def _inputs(self, seq: object) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must say which ids the GPT reads (_inputs)")

    def hidden_states(self, seq: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream (B, T, C) after the embeddings and after each block: ``n_layer + 1`` tensors."""
        gpt = self.gpt
        assert gpt.wpe is not None  # ImageGPT's GPT has learned positions, never rotary ones
        x = gpt.drop(gpt.wpe(gpt.wte(self._inputs(seq))))  # (B, T, C)
        states = [x]
        for block in gpt.h:
            x = block(x)  # (B, T, C)
            states.append(x)
        return states

    def forward(self, seq: torch.Tensor) -> torch.Tensor:
        x = self.hidden_states(seq)[-1]  # (B, T, C)
        logits = self.gpt.lm_head(self.gpt.ln_f(x))  # (B, T, V + 1)
        return logits[..., : self.config.vocab_size]  # (B, T, V): the extra token is never a pixel


class ImageGPT(PixelTransformer):
    """A GPT over pixel tokens: ``forward(seq) -> logits`` (B, T, V), ``logits[:, t]`` scoring ``seq[:, t]``.

    ``seq`` (B, T) holds pixel ids in raster order with ``1 <= T <= H W`` (a
    prefix of an image is fine). See the module docstring for the start token.

    >>> _ = torch.manual_seed(0)
    >>> model = ImageGPT(ImageGPTConfig.preset("digits-8x8"))
    >>> seq = torch.randint(8, (2, 64))
    >>> model(seq).shape
    torch.Size([2, 64, 8])
    >>> changed = seq.clone(); changed[:, 10] = (seq[:, 10] + 1) % 8   # alter pixel 10 only
    >>> torch.allclose(model(seq)[:, :11], model(changed)[:, :11])     # pixels 0..10 cannot see it
    True
    >>> model.num_params() == model.config.num_params()
    True
    """

    def _check_seq(self, seq: object) -> torch.Tensor:
        seq = token_ids("seq", seq)
        T_max = self.config.n_positions
        if seq.dim() != 2 or seq.shape[0] == 0 or not 1 <= seq.shape[1] <= T_max:
            raise ValueError(f"seq must have shape (B, T) with B >= 1 and 1 <= T <= H*W = {T_max}, "
                             f"got {tuple(seq.shape)}")
        return token_ids("seq", seq, self.config.vocab_size)

    def _inputs(self, seq: object) -> torch.Tensor:
        seq = self._check_seq(seq)
        start = torch.full_like(seq[:, :1], self.config.start_id)  # (B, 1)
        return torch.cat([start, seq[:, :-1]], dim=1)  # (B, T): shifted right by one behind the start token


def bits_per_dim(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean negative log2-likelihood per pixel (or sub-pixel): ``mean(-log2 softmax(logits)[target])``.

    ``logits`` (..., V) score the values ``targets`` (...) took, e.g. (B, T, V)
    and (B, T), or (B, H, W, V) and (B, H, W). It is the cross-entropy in nats
    divided by ``ln 2``, averaged over *every* pixel of every image. A 0-d
    tensor, differentiable.

    >>> logits = torch.log(torch.tensor([[[0.5, 0.25, 0.25], [0.5, 0.25, 0.25]]]))
    >>> bits_per_dim(logits, torch.tensor([[0, 1]]))     # (-log2 0.5 - log2 0.25) / 2 = (1 + 2) / 2
    tensor(1.5000)
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError("logits must be a floating-point tensor (..., V)")
    targets = token_ids("targets", targets)
    if logits.dim() < 2 or logits.shape[:-1] != targets.shape:
        raise ValueError(
            f"logits must have shape targets.shape + (V,), got logits {tuple(logits.shape)} "
            f"and targets {tuple(targets.shape)}"
        )
    token_ids("targets", targets, logits.shape[-1])
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))  # bf16/fp16 -> fp32; fp64 stays
    nats = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))  # (N, V), (N,)
    return nats / math.log(2)


def uniform_bits(n_colours: int, height: int, width: int) -> dict[str, float]:
    """The bits of a model that gives each of ``n_colours`` values the same probability at every pixel.

    Every pixel costs ``-log2(1 / K) = log2 K`` bits whatever its value, so the
    bits per dimension are ``log2 K`` (a dimension is a pixel: one token each),
    and an image of ``height`` x ``width`` pixels costs ``height * width * log2 K``
    bits. An untrained ImageGPT, whose logits start near zero, scores about this.

    >>> uniform_bits(8, 8, 8)            # 8 grey levels: 3 bits a pixel, 64 pixels
    {'bits_per_dim': 3.0, 'bits_per_image': 192.0}
    """
    positive_int("n_colours", n_colours)
    positive_int("height", height)
    positive_int("width", width)
    per_dim = math.log2(n_colours)
    return {"bits_per_dim": per_dim, "bits_per_image": height * width * per_dim}
