"""Tokenising an image: cut it into P x P patches and embed each one linearly.

``patchify`` -> ``unpatchify`` -> ``PatchEmbedding``, and ``vit_tokens``: how
long the sequence is and how large each attention map. An image (C, H, W) becomes
``N = HW / P^2`` tokens, read row by row (left to right, then top to bottom);
each patch is flattened as (P, P, C) -- pixel rows, then pixel columns, then
channels -- the order of timm's and MAE's ``patchify``, so that reconstruction
targets line up with theirs. ``PatchEmbedding`` is one ``nn.Linear`` on those
flattened patches; it computes exactly what timm's ``PatchEmbed`` computes with
``nn.Conv2d(kernel_size=P, stride=P)`` (``to_conv``/``from_conv`` convert).

Shape legend: ``B`` batch, ``C`` channels, ``H``/``W`` image size, ``P``
patch size, ``N`` patches, ``D = embed_dim``.

References: Dosovitskiy et al., *An Image is Worth 16x16 Words* (2020),
section 3.1; He et al., *Masked Autoencoders Are Scalable Vision Learners* (2021).
"""

from __future__ import annotations

import torch
from torch import nn

from attnbook._checks import positive_int

__all__ = ["patchify", "unpatchify", "PatchEmbedding", "vit_tokens"]


def _check_images(images: object, patch_size: int, in_chans: int | None = None) -> torch.Tensor:
    if not isinstance(images, torch.Tensor) or not images.is_floating_point():
        got = images.dtype if isinstance(images, torch.Tensor) else type(images).__name__
        raise TypeError(f"images must be a floating-point tensor, got {got}")
    if images.dim() != 4:
        raise ValueError(f"images must have shape (B, C, H, W), got {tuple(images.shape)}")
    if in_chans is not None and images.shape[1] != in_chans:
        raise ValueError(f"images must have in_chans={in_chans} channels (axis 1), got {images.shape[1]}")
    H, W = images.shape[-2:]
    if H % patch_size or W % patch_size:
        raise ValueError(
            f"image size {H}x{W} is not divisible by patch_size={patch_size}: "
            f"the patches must tile the image exactly"
        )
    return images


def patchify(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """Cut (B, C, H, W) images into (B, N, P*P*C) flattened patches, row-major.

    Patch ``n`` covers rows ``(n // (W/P)) * P ...`` and columns
    ``(n % (W/P)) * P ...``; inside a patch the values run over (P, P, C).

    >>> img = torch.arange(16.0).view(1, 1, 4, 4)   # one 4x4 image, pixels 0..15
    >>> patchify(img, 2)[0]                          # 4 patches of 2*2*1 values
    tensor([[ 0.,  1.,  4.,  5.],
            [ 2.,  3.,  6.,  7.],
            [ 8.,  9., 12., 13.],
            [10., 11., 14., 15.]])
    """
    P = positive_int("patch_size", patch_size)
    _check_images(images, P)
    B, C, H, W = images.shape
    h, w = H // P, W // P
    x = images.reshape(B, C, h, P, w, P)  # (B, C, h, P, w, P)
    x = x.permute(0, 2, 4, 3, 5, 1)  # (B, h, w, P, P, C)
    return x.reshape(B, h * w, P * P * C)  # (B, N, P*P*C)


def unpatchify(
    patches: torch.Tensor, patch_size: int, img_size: int | tuple[int, int], in_chans: int = 1
) -> torch.Tensor:
    """The exact inverse of :func:`patchify`: (B, N, P*P*C) -> (B, C, H, W).

    ``img_size`` is ``H`` (square) or ``(H, W)``.

    >>> img = torch.randn(2, 3, 8, 4)
    >>> torch.equal(unpatchify(patchify(img, 2), 2, (8, 4), in_chans=3), img)
    True
    """
    P = positive_int("patch_size", patch_size)
    C = positive_int("in_chans", in_chans)
    H, W = (img_size, img_size) if isinstance(img_size, int) else tuple(img_size)
    if H % P or W % P:
        raise ValueError(f"img_size {H}x{W} is not divisible by patch_size={P}")
    h, w = H // P, W // P
    if not isinstance(patches, torch.Tensor) or patches.dim() != 3 or patches.shape[1:] != (h * w, P * P * C):
        got = tuple(patches.shape) if isinstance(patches, torch.Tensor) else type(patches).__name__
        raise ValueError(f"patches must have shape (B, N={h * w}, P*P*C={P * P * C}), got {got}")
    B = patches.shape[0]
    x = patches.reshape(B, h, w, P, P, C)  # (B, h, w, P, P, C)
    x = x.permute(0, 5, 1, 3, 2, 4)  # (B, C, h, P, w, P)
    return x.reshape(B, C, H, W)  # (B, C, H, W)


def vit_tokens(height: int, width: int, patch_size: int) -> tuple[int, int]:
    """A ViT's sequence for an ``height x width`` image: ``(T, T * T)``, its tokens and one attention map's scores.

    ``T = 1 + (H / P)(W / P)``: ``H / P`` rows of ``W / P`` patches, and the class
    token. Each head of each layer scores every token against every token, ``T^2``
    scores, so halving ``P`` multiplies ``N`` by 4 and the attention by about 16. A
    side that is not a multiple of ``P`` raises ``ValueError``: the patches would not
    tile the image.

    >>> vit_tokens(224, 224, 16)   # ViT-B/16: 14 x 14 patches and the class token
    (197, 38809)
    >>> vit_tokens(8, 16, 4)       # a non-square image: 2 rows of 4 patches
    (9, 81)
    >>> vit_tokens(8, 10, 4)
    Traceback (most recent call last):
    ValueError: width=10 is not a multiple of patch_size=4: the patches would not tile the image
    """
    P = positive_int("patch_size", patch_size)
    for name, side in (("height", height), ("width", width)):
        if positive_int(name, side) % P:
            raise ValueError(f"{name}={side} is not a multiple of patch_size={P}: the patches would not tile the image")
    tokens = 1 + (height // P) * (width // P)  # the class token and the N patches
    return tokens, tokens * tokens


class PatchEmbedding(nn.Module):
    """Flattened patches times a learned matrix: (B, C, H, W) -> (B, N, D).

    ``proj`` is an ``nn.Linear(P*P*C, D)`` acting on :func:`patchify`'s output,
    which is the same map as a ``Conv2d(C, D, kernel_size=P, stride=P)``
    followed by flattening the (h, w) grid: :meth:`to_conv` and
    :meth:`from_conv` move the weights between the two forms.

    >>> embed = PatchEmbedding(img_size=8, patch_size=4, in_chans=1, embed_dim=16)
    >>> x = torch.randn(2, 1, 8, 8)
    >>> embed(x).shape                          # N = 8*8 / 4^2 = 4 tokens
    torch.Size([2, 4, 16])
    >>> conv = embed.to_conv()
    >>> torch.allclose(embed(x), conv(x).flatten(2).transpose(1, 2), atol=1e-6)
    True
    """

    def __init__(self, img_size: int = 224, patch_size: int = 16, in_chans: int = 3, embed_dim: int = 768) -> None:
        super().__init__()
        self.img_size = positive_int("img_size", img_size)
        self.patch_size = positive_int("patch_size", patch_size)
        self.in_chans = positive_int("in_chans", in_chans)
        self.embed_dim = positive_int("embed_dim", embed_dim)
        if img_size % patch_size:
            raise ValueError(f"img_size={img_size} is not divisible by patch_size={patch_size}")
        self.grid_size = img_size // patch_size  # patches per side
        self.num_patches = self.grid_size**2  # N = HW / P^2
        self.proj = nn.Linear(patch_size * patch_size * in_chans, embed_dim)

    def extra_repr(self) -> str:
        return f"img_size={self.img_size}, patch_size={self.patch_size}, num_patches={self.num_patches}"

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        _check_images(images, self.patch_size, self.in_chans)
        if images.shape[-2:] != (self.img_size, self.img_size):
            raise ValueError(
                f"images must be {self.img_size}x{self.img_size} (the position table's size), "
                f"got {images.shape[-2]}x{images.shape[-1]}"
            )
        return self.proj(patchify(images, self.patch_size))  # (B, N, D)

    def to_conv(self) -> nn.Conv2d:
        """A strided ``nn.Conv2d`` computing the same embedding (weights copied)."""
        P, C, D = self.patch_size, self.in_chans, self.embed_dim
        conv = nn.Conv2d(C, D, P, stride=P).to(self.proj.weight)
        with torch.no_grad():
            w = self.proj.weight.view(D, P, P, C)  # (D, P*P*C) -> (D, P, P, C)
            conv.weight.copy_(w.permute(0, 3, 1, 2))  # (D, C, P, P)
            assert conv.bias is not None  # nn.Conv2d makes one by default
            conv.bias.copy_(self.proj.bias)
        return conv

    @torch.no_grad()
    def from_conv(self, conv: nn.Conv2d) -> PatchEmbedding:
        """Copy a ``Conv2d(C, D, P, stride=P)``'s weights into ``proj``; returns ``self``."""
        P, C, D = self.patch_size, self.in_chans, self.embed_dim
        if tuple(conv.weight.shape) != (D, C, P, P) or conv.stride != (P, P):
            raise ValueError(
                f"conv must be Conv2d({C}, {D}, kernel_size={P}, stride={P}), "
                f"got weight {tuple(conv.weight.shape)} and stride {conv.stride}"
            )
        w = conv.weight.permute(0, 2, 3, 1)  # (D, C, P, P) -> (D, P, P, C)
        self.proj.weight.copy_(w.reshape(D, P * P * C))  # (D, P*P*C)
        if conv.bias is not None:
            self.proj.bias.copy_(conv.bias)
        else:
            self.proj.bias.zero_()
        return self
