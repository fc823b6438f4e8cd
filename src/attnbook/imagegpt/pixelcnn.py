"""PixelCNN: next-pixel prediction with masked convolutions, ImageGPT's predecessor.

A convolution sees a square around each pixel; a **masked** one zeroes the
kernel weights on the pixels that come later in raster order, so the output at
``(r, c)`` depends only on pixels before it: the rows above, and the pixels to
its left in its own row. Type **A** also hides the centre (the pixel being
predicted) and is used once, on the input; type **B** keeps the centre and is
used in every later layer, where the centre position already holds only
information about earlier pixels. A type-B mask on the input would let each
pixel see itself -- a loss that drops to zero and a model that cannot sample.

Here a pixel is one token (a grey level or a palette colour), so the masks need
no split between the R, G and B channels that van den Oord et al. had to make.
Stacked masked 3 x 3 layers grow the receptive field upwards and to the left
but leave a **blind spot** up and to the right (Gated PixelCNN, 2016, fixes it
with separate vertical and horizontal stacks).

References: van den Oord, Kalchbrenner & Kavukcuoglu, *Pixel Recurrent Neural
Networks* (ICML 2016); van den Oord et al., *Conditional Image Generation with
PixelCNN Decoders* (NeurIPS 2016).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from attnbook._checks import int_at_least, positive_int, token_ids

__all__ = ["pixelcnn_mask", "MaskedConv2d", "PixelCNN"]


def pixelcnn_mask(kernel_size: int, mask_type: str = "A") -> torch.Tensor:
    """Boolean (k, k) kernel mask, ``True`` = weight kept: the rows above the centre and the
    pixels left of it; the centre too for type ``"B"``.

    >>> pixelcnn_mask(3, "A").int()
    tensor([[1, 1, 1],
            [1, 0, 0],
            [0, 0, 0]], dtype=torch.int32)
    >>> pixelcnn_mask(3, "B").int()[1]
    tensor([1, 1, 0], dtype=torch.int32)
    """
    positive_int("kernel_size", kernel_size)
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd (the kernel has a centre), got {kernel_size}")
    if mask_type not in ("A", "B"):
        raise ValueError(f"mask_type must be 'A' or 'B', got {mask_type!r}")
    k, centre = kernel_size, kernel_size // 2
    mask = torch.zeros(k, k, dtype=torch.bool)
    mask[:centre, :] = True  # every row above the centre
    mask[centre, : centre + (mask_type == "B")] = True  # left of the centre (and the centre for B)
    return mask


class MaskedConv2d(nn.Conv2d):
    """A 2-D convolution whose kernel is multiplied by :func:`pixelcnn_mask` on every forward.

    Padding keeps the size ``(B, in_ch, H, W) -> (B, out_ch, H, W)``. The mask is
    a buffer (it moves with the module), applied to the weight in ``forward`` so
    that gradients never reach the hidden weights' effect.

    >>> conv = MaskedConv2d(1, 1, 3, mask_type="A")
    >>> x = torch.zeros(1, 1, 4, 4, requires_grad=True)
    >>> conv(x)[0, 0, 1, 1].backward()          # which inputs does output (1, 1) depend on?
    >>> (x.grad[0, 0] != 0).int()
    tensor([[1, 1, 1, 0],
            [1, 0, 0, 0],
            [0, 0, 0, 0],
            [0, 0, 0, 0]], dtype=torch.int32)
    """

    mask: torch.Tensor  # the buffer registered below, (1, 1, k, k)

    def __init__(self, in_ch: int, out_ch: int, kernel_size: int, mask_type: str = "A", *, bias: bool = True) -> None:
        mask = pixelcnn_mask(kernel_size, mask_type)  # validates before the layer is built
        super().__init__(in_ch, out_ch, kernel_size, padding=kernel_size // 2, bias=bias)
        self.mask_type = mask_type
        self.register_buffer("mask", mask[None, None].to(self.weight.dtype), persistent=False)  # (1, 1, k, k)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", mask_type={self.mask_type!r}"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._conv_forward(x, self.weight * self.mask, self.bias)


class PixelCNN(nn.Module):
    """A small PixelCNN over pixel tokens: ``forward(tokens (B, H, W)) -> logits (B, H, W, V)``.

    Token embedding -> one type-A ``first_kernel`` x ``first_kernel`` masked
    convolution -> ``n_layers`` residual blocks (ReLU, type-B 3 x 3 masked conv)
    -> ReLU, 1 x 1 convolutions to ``V`` logits. ``logits[:, r, c]`` depends on
    the pixels before ``(r, c)`` in raster order only (minus the blind spot).
    Any image size works: the layers are convolutions.

    >>> _ = torch.manual_seed(0)
    >>> model = PixelCNN(vocab_size=8, channels=16, n_layers=2)
    >>> model(torch.randint(8, (2, 5, 5))).shape
    torch.Size([2, 5, 5, 8])
    """

    def __init__(self, vocab_size: int, channels: int = 64, n_layers: int = 4, first_kernel: int = 7) -> None:
        super().__init__()
        self.vocab_size = positive_int("vocab_size", vocab_size)
        positive_int("channels", channels)
        int_at_least("n_layers", n_layers, 0)
        self.embed = nn.Embedding(vocab_size, channels)
        self.first = MaskedConv2d(channels, channels, first_kernel, "A")
        self.layers = nn.ModuleList(MaskedConv2d(channels, channels, 3, "B") for _ in range(n_layers))
        self.head = nn.Sequential(nn.ReLU(), nn.Conv2d(channels, channels, 1),
                                  nn.ReLU(), nn.Conv2d(channels, vocab_size, 1))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        tokens = token_ids("tokens", tokens)
        if tokens.dim() != 3 or tokens.numel() == 0:
            raise ValueError(f"tokens must have shape (B, H, W) and not be empty, got {tuple(tokens.shape)}")
        token_ids("tokens", tokens, self.vocab_size)
        x = self.embed(tokens).permute(0, 3, 1, 2)  # (B, H, W, C) -> (B, C, H, W)
        x = self.first(x)  # type A: the centre pixel is hidden
        for layer in self.layers:
            x = x + layer(F.relu(x))  # type B: the centre holds only earlier pixels by now
        return self.head(x).permute(0, 2, 3, 1)  # (B, V, H, W) -> (B, H, W, V)
