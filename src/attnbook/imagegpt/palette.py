"""Pixels as tokens: colour palettes that turn an RGB pixel into one of a few hundred ids.

A 24-bit pixel takes one of 256^3 = 16,777,216 values -- far too many classes
for a softmax. ImageGPT's answer is a *palette*: a small list of colours, and
each pixel becomes the id of the nearest one.

* The **uniform 9-bit palette** keeps the top 3 bits of each channel:
  ``id = (r >> 5) << 6 | (g >> 5) << 3 | (b >> 5)``, 8 x 8 x 8 = 512 ids with red
  in the high bits. Decoding returns the *centre* of each bin, ``(v << 5) + 16``,
  so no channel is off by more than 16 (:func:`quantize_9bit`,
  :func:`dequantize_9bit`).
* A **k-means palette** puts its 512 colours where the image's pixels are
  (:func:`kmeans_palette`, Lloyd's algorithm with k-means++ seeding, written in
  torch); :func:`nearest_colour` maps pixels to its ids. iGPT used one.
* :func:`grey_levels` is the greyscale case: ``levels`` equal bins.
* :func:`psnr` measures what a palette loses, in decibels.

Shape legend: ``B`` images, ``H`` x ``W`` pixels, ``N`` pixels in a list, ``k``
palette colours. Reference: Chen et al., *Generative Pretraining from Pixels*
(iGPT, ICML 2020); Arthur & Vassilvitskii, *k-means++* (2007).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from attnbook._checks import positive_int, token_ids

__all__ = ["quantize_9bit", "dequantize_9bit", "grey_levels", "kmeans_step", "kmeans_palette", "kmeans_inertia",
           "nearest_colour", "palette_quantize", "palette_dequantize", "psnr",
           "palette_size_errors"]

_BITS = 3  # bits kept per channel
_SHIFT = 8 - _BITS  # 5 low bits dropped
_CHUNK = 16384  # pixels per block when measuring distances to a palette (memory: CHUNK x k floats)


def _rgb_images(name: str, images: object) -> torch.Tensor:
    """``images`` if it is a uint8 tensor (B, 3, H, W)."""
    if not isinstance(images, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of dtype uint8, got {type(images).__name__}")
    if images.dtype != torch.uint8:
        raise TypeError(
            f"{name} must have dtype torch.uint8 (values 0..255), got {images.dtype}; "
            "convert floats in [0, 1] with (x * 255).round().to(torch.uint8)"
        )
    if images.dim() != 4 or images.shape[1] != 3:
        raise ValueError(f"{name} must have shape (B, 3, H, W), got {tuple(images.shape)}")
    return images


def quantize_9bit(images: torch.Tensor) -> torch.Tensor:
    """Token ids (B, H, W) in 0..511 of uint8 RGB images (B, 3, H, W): 3 bits per channel.

    Each channel is *floored* into one of 8 bins of width 32 (``v >> 5``) and the
    three bin numbers are packed red-green-blue, red in the high bits.

    >>> img = torch.tensor([255, 0, 40], dtype=torch.uint8).view(1, 3, 1, 1)  # one pixel
    >>> quantize_9bit(img)               # (7 << 6) | (0 << 3) | 1
    tensor([[[449]]])
    """
    images = _rgb_images("images", images)
    bins = (images >> _SHIFT).long()  # (B, 3, H, W) in 0..7
    return (bins[:, 0] << (2 * _BITS)) | (bins[:, 1] << _BITS) | bins[:, 2]  # (B, H, W)


def dequantize_9bit(tokens: torch.Tensor) -> torch.Tensor:
    """uint8 RGB images (B, 3, H, W) from 9-bit ids (B, H, W): the centre of each colour bin.

    >>> dequantize_9bit(torch.tensor([[[449]]])).flatten().tolist()   # bins (7, 0, 1)
    [240, 16, 48]
    """
    tokens = token_ids("tokens", tokens, vocab_size=512)
    if tokens.dim() != 3:
        raise ValueError(f"tokens must have shape (B, H, W), got {tuple(tokens.shape)}")
    mask = (1 << _BITS) - 1
    bins = torch.stack([tokens >> (2 * _BITS), (tokens >> _BITS) & mask, tokens & mask], dim=1)  # (B, 3, H, W)
    return ((bins << _SHIFT) + (1 << (_SHIFT - 1))).to(torch.uint8)  # bin start + half a bin


def grey_levels(images: torch.Tensor, levels: int = 8, max_value: float = 16.0) -> torch.Tensor:
    """Ids in ``0 .. levels - 1`` of greyscale values in ``[0, max_value]``: ``levels`` equal bins.

    Bin ``i`` holds the values in ``[i, i + 1) * (max_value / levels)``; ``max_value``
    itself goes to the top bin. The 8 x 8 digits (values 0..16) at 8 levels:

    >>> grey_levels(torch.tensor([0, 1, 2, 8, 15, 16]), levels=8, max_value=16)
    tensor([0, 0, 1, 4, 7, 7])
    """
    if not isinstance(images, torch.Tensor) or images.dtype == torch.bool or images.is_complex():
        raise TypeError(f"images must be a real tensor, got {type(images).__name__}")
    positive_int("levels", levels)
    if not max_value > 0:
        raise ValueError(f"max_value must be > 0, got {max_value!r}")
    lo, hi = images.min().item(), images.max().item()
    if lo < 0 or hi > max_value:
        raise ValueError(f"images hold values in [{lo}, {hi}], outside [0, max_value={max_value}]")
    ids = torch.floor(images.double() * levels / max_value).long()
    return ids.clamp_(max=levels - 1)


def _pixels(name: str, pixels: object) -> torch.Tensor:
    """``pixels`` as a floating (..., 3) tensor."""
    if not isinstance(pixels, torch.Tensor) or not pixels.is_floating_point():
        got = pixels.dtype if isinstance(pixels, torch.Tensor) else type(pixels).__name__
        raise TypeError(f"{name} must be a floating-point tensor (..., 3), got {got}")
    if pixels.dim() < 1 or pixels.shape[-1] != 3:
        raise ValueError(f"{name} must have shape (..., 3) (one RGB triple per row), got {tuple(pixels.shape)}")
    return pixels


def nearest_colour(pixels: torch.Tensor, palette: torch.Tensor) -> torch.Tensor:
    """Id (...) of the palette colour nearest (squared Euclidean) to each pixel (..., 3).

    Ties go to the lower id. Works in blocks of pixels, so a whole photo fits in memory.

    >>> palette = torch.tensor([[0.0, 0, 0], [255, 255, 255], [255, 0, 0]])
    >>> nearest_colour(torch.tensor([[10.0, 20, 5], [200, 30, 40], [250, 240, 255]]), palette)
    tensor([0, 2, 1])
    """
    pixels = _pixels("pixels", pixels)
    palette = _pixels("palette", palette)
    if palette.dim() != 2 or palette.shape[0] == 0:
        raise ValueError(f"palette must have shape (k, 3) with k >= 1, got {tuple(palette.shape)}")
    flat = pixels.reshape(-1, 3)  # (N, 3)
    palette = palette.to(flat)
    p_sq = (palette**2).sum(dim=1)  # (k,)
    ids = [
        # |x - c|^2 = |x|^2 - 2 x.c + |c|^2; |x|^2 is the same for every c, so it is left out
        (p_sq[None, :] - 2.0 * block @ palette.T).argmin(dim=1)  # (n, k) -> (n,)
        for block in flat.split(_CHUNK)
    ]
    out = torch.cat(ids) if ids else flat.new_zeros(0, dtype=torch.long)
    return out.view(pixels.shape[:-1])  # (N,) -> (...)


def kmeans_inertia(pixels: torch.Tensor, palette: torch.Tensor) -> float:
    """Sum over pixels (N, 3) of the squared distance to the nearest palette colour (sklearn's ``inertia_``).

    >>> kmeans_inertia(torch.tensor([[0.0, 0, 0], [3, 4, 0]]), torch.zeros(1, 3))
    25.0
    """
    pixels = _pixels("pixels", pixels).reshape(-1, 3).double()  # (N, 3)
    centres = palette.double()[nearest_colour(pixels, palette.double())]  # (N, 3)
    return float(((pixels - centres) ** 2).sum())


def kmeans_palette(
    pixels: torch.Tensor,
    k: int,
    iters: int = 30,
    *,
    n_init: int = 1,
    generator: torch.Generator | None = None,
    seed: int | None = None,
) -> torch.Tensor:
    """A palette (k, 3) of the pixels (N, 3): k-means++ seeding, then ``iters`` rounds of Lloyd.

    Lloyd's round: give every pixel to its nearest centre, move each centre to
    the mean of its pixels (a centre with none keeps its place). It stops early
    when no centre moves. Seeding is *greedy* k-means++ (scikit-learn's): for
    each new centre, ``2 + ln k`` candidates are drawn with probability
    proportional to their squared distance to the nearest centre so far, and
    the one that lowers the total most is kept. Draws use ``generator`` (or a
    new one from ``seed``; both ``None`` means seed 0).
    ``n_init > 1`` runs that many seedings and keeps the palette of lowest
    inertia (:func:`kmeans_inertia`), as scikit-learn's ``n_init`` does.
    Computes in float64 on the pixels' device and returns the pixels' dtype.

    >>> pts = torch.tensor([[0.0, 0, 0], [1, 0, 0], [100, 100, 100], [101, 100, 100]])
    >>> kmeans_palette(pts, 2, seed=0).sort(dim=0).values
    tensor([[  0.5000,   0.0000,   0.0000],
            [100.5000, 100.0000, 100.0000]])
    """
    pixels = _pixels("pixels", pixels)
    if pixels.dim() != 2:
        raise ValueError(f"pixels must have shape (N, 3), got {tuple(pixels.shape)}")
    positive_int("k", k)
    positive_int("iters", iters)
    positive_int("n_init", n_init)
    if k > pixels.shape[0]:
        raise ValueError(f"k={k} colours need at least k pixels, got N={pixels.shape[0]}")
    if generator is None:
        generator = torch.Generator(device=pixels.device).manual_seed(0 if seed is None else seed)
    x = pixels.double()  # (N, 3)
    runs = [_kmeans_once(x, k, iters, generator) for _ in range(n_init)]
    palette = min(runs, key=lambda p: kmeans_inertia(x, p))
    return palette.to(pixels.dtype)


def kmeans_step(pixels: torch.Tensor, palette: torch.Tensor) -> torch.Tensor:
    """One round of Lloyd's algorithm: each colour (k, 3) moves to the mean of the pixels (N, 3) nearest it.

    A colour that no pixel is nearest to stays where it was (a mean of nothing
    would be NaN). Returns a new palette of the palette's dtype.

    >>> pixels = torch.tensor([[0.0, 0, 0], [2, 0, 0], [10, 10, 10]])
    >>> kmeans_step(pixels, torch.tensor([[1.0, 1, 1], [9, 9, 9], [100, 100, 100]]))
    tensor([[  1.,   0.,   0.],
            [ 10.,  10.,  10.],
            [100., 100., 100.]])
    """
    pixels = _pixels("pixels", pixels)
    palette = _pixels("palette", palette)
    if pixels.dim() != 2 or palette.dim() != 2:
        raise ValueError(f"pixels must be (N, 3) and palette (k, 3), "
                         f"got {tuple(pixels.shape)} and {tuple(palette.shape)}")
    x = pixels.to(palette.dtype)
    ids = nearest_colour(x, palette)  # (N,)
    sums = torch.zeros_like(palette).index_add_(0, ids, x)  # (k, 3): sum of each colour's pixels
    counts = torch.bincount(ids, minlength=palette.shape[0]).to(palette.dtype)  # (k,)
    return torch.where(counts[:, None] > 0, sums / counts.clamp(min=1)[:, None], palette)  # (k, 3)


def _kmeans_once(x: torch.Tensor, k: int, iters: int, generator: torch.Generator) -> torch.Tensor:
    """One seeding and up to ``iters`` Lloyd rounds on float64 pixels (N, 3): a palette (k, 3)."""
    # greedy k-means++: the first centre uniformly; then draw a few candidates, each in proportion
    # to its squared distance to the nearest centre so far, and keep the one that lowers the sum most
    n_trials = 2 + int(math.log(k))
    first = torch.randint(x.shape[0], (1,), generator=generator, device=x.device)
    centres = [x[first[0]]]
    d2 = ((x - centres[0]) ** 2).sum(dim=1)  # (N,): squared distance to the nearest centre so far
    for _ in range(1, k):
        weights = d2 if d2.sum() > 0 else torch.ones_like(d2)  # all pixels covered: any will do
        cand = torch.multinomial(weights, n_trials, replacement=True, generator=generator)  # (n_trials,)
        d2_cand = torch.minimum(d2[None, :], torch.cdist(x[cand], x) ** 2)  # (n_trials, N)
        best = d2_cand.sum(dim=1).argmin()
        centres.append(x[cand[best]])
        d2 = d2_cand[best]
    palette = torch.stack(centres)  # (k, 3)
    for _ in range(iters):
        moved = kmeans_step(x, palette)
        if torch.equal(moved, palette):
            break
        palette = moved
    return palette


def palette_size_errors(pixels: torch.Tensor, sizes: Sequence[int], seeds: Sequence[int],
                        iters: int = 8) -> torch.Tensor:
    """The quantisation error of k-means palettes of each size, once per seed: a tensor (len(seeds), len(sizes)).

    For every seed and every palette size ``k`` in ``sizes``, fits
    :func:`kmeans_palette` (``iters`` Lloyd rounds, seeded by ``seed``) to the
    pixels (N, 3) and measures the root mean squared error of one channel value
    when each pixel is replaced by its nearest palette colour, on the pixels'
    scale (0..255 for bytes). The ablation of chapter 5's exercises draws it
    against ``k``: more colours, a smaller error.

    >>> pts = torch.tensor([[0.0, 0, 0], [2, 0, 0], [100, 100, 100], [102, 100, 100]])
    >>> palette_size_errors(pts, sizes=(1, 2, 4), seeds=(0,)).round(decimals=2)  # 4 colours: no error
    tensor([[50.0000,  0.5800,  0.0000]], dtype=torch.float64)
    """
    pixels = _pixels("pixels", pixels)
    if pixels.dim() != 2:
        raise ValueError(f"pixels must have shape (N, 3), got {tuple(pixels.shape)}")
    if not sizes or not seeds:
        raise ValueError("sizes and seeds must each hold at least one value")
    x = pixels.double()  # (N, 3)
    errors = torch.empty(len(seeds), len(sizes), dtype=torch.float64)
    for i, seed in enumerate(seeds):
        for j, k in enumerate(sizes):
            palette = kmeans_palette(x, k, iters, seed=seed)  # (k, 3)
            errors[i, j] = math.sqrt(kmeans_inertia(x, palette) / x.numel())  # per channel value
    return errors


def palette_quantize(images: torch.Tensor, palette: torch.Tensor) -> torch.Tensor:
    """Ids (B, H, W) of uint8 RGB images (B, 3, H, W) under a palette (k, 3) of 0..255 colours.

    >>> img = torch.tensor([250, 5, 5], dtype=torch.uint8).view(1, 3, 1, 1)
    >>> palette_quantize(img, torch.tensor([[0.0, 0, 0], [255, 0, 0]]))
    tensor([[[1]]])
    """
    images = _rgb_images("images", images)
    pixels = images.permute(0, 2, 3, 1).float()  # (B, 3, H, W) -> (B, H, W, 3)
    return nearest_colour(pixels, palette.float())  # (B, H, W)


def palette_dequantize(tokens: torch.Tensor, palette: torch.Tensor) -> torch.Tensor:
    """uint8 RGB images (B, 3, H, W) from ids (B, H, W): each pixel becomes its palette colour.

    >>> palette_dequantize(torch.tensor([[[1]]]), torch.tensor([[0.0, 0, 0], [254.6, 0, 0]])).flatten()
    tensor([255,   0,   0], dtype=torch.uint8)
    """
    palette = _pixels("palette", palette)
    tokens = token_ids("tokens", tokens, vocab_size=palette.shape[0])
    if tokens.dim() != 3:
        raise ValueError(f"tokens must have shape (B, H, W), got {tuple(tokens.shape)}")
    colours = palette.round().clamp(0, 255).to(torch.uint8)  # (k, 3)
    return colours[tokens].permute(0, 3, 1, 2).contiguous()  # (B, H, W, 3) -> (B, 3, H, W)


def psnr(original: torch.Tensor, approx: torch.Tensor, max_value: float = 255.0) -> float:
    """Peak signal-to-noise ratio in dB: ``10 log10(max_value^2 / MSE)`` (``inf`` if equal).

    Every pixel off by 16 (the uniform 9-bit palette's worst case) gives 24.05 dB:

    >>> a = torch.full((1, 3, 2, 2), 100, dtype=torch.uint8)
    >>> round(psnr(a, a + 16), 2)
    24.05
    """
    for name, x in (("original", original), ("approx", approx)):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if original.shape != approx.shape:
        raise ValueError(f"original and approx must have one shape, "
                         f"got {tuple(original.shape)} and {tuple(approx.shape)}")
    mse = ((original.double() - approx.double()) ** 2).mean().item()
    return math.inf if mse == 0 else 10.0 * math.log10(max_value**2 / mse)
