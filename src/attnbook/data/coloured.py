"""Coloured digits: scikit-learn's 8x8 digits drawn in random foreground and background colours.

A colour data set small enough to *train* an ImageGPT on a laptop CPU
(chapter 5): every image is one of the 1,797 grey digits of
:func:`attnbook.data.load_digits`, with ink of one random colour on paper of
another. A grey value ``v`` in 0..16 becomes the blend
``background + v / 16 * (foreground - background)``, so the strokes keep their
soft edges and an image holds two main colours and a few in between.

Colour pairs too close to tell apart would hide the digit, so a pair is drawn
again until the two colours differ by at least ``min_contrast`` in luma
(``0.299 R + 0.587 G + 0.114 B``, ITU-R BT.601, the brightness a viewer
sees), on the 0..255 scale.

The digits are taken in a seeded random order without repetition while
``n <= 1797``; a larger ``n`` goes round the set again (the same shapes in new
colours), so split by :attr:`ColouredDigits.index` when shapes must not leak
between a training and a test set.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from attnbook._checks import an_int, number_in

from .images import load_digits

__all__ = ["ColouredDigits", "make_coloured_digits"]

_LUMA = torch.tensor([0.299, 0.587, 0.114])  # ITU-R BT.601 weights of R, G, B


class ColouredDigits(NamedTuple):
    """Coloured digit images with their labels, colours and source digit, aligned by position."""

    images: torch.Tensor  # (N, 3, H, W) uint8, channels R, G, B
    labels: torch.Tensor  # (N,) int64, the digit 0..9
    foreground: torch.Tensor  # (N, 3) uint8, the ink colour
    background: torch.Tensor  # (N, 3) uint8, the paper colour
    # (N,) int64, position of the grey digit in load_digits()
    index: torch.Tensor  # type: ignore[assignment]  # a public field; it hides tuple.index, which nobody calls


def _colour_pairs(n: int, min_contrast: float, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` (foreground, background) pairs of uint8 colours whose luma differs by >= min_contrast."""
    fg = torch.empty(0, 3, dtype=torch.uint8)
    bg = torch.empty(0, 3, dtype=torch.uint8)
    while len(fg) < n:
        draw = torch.randint(0, 256, (2, 2 * n, 3), generator=generator, dtype=torch.uint8)  # (2, 2n, 3)
        luma = draw.float() @ _LUMA  # (2, 2n)
        keep = (luma[0] - luma[1]).abs() >= min_contrast
        fg, bg = torch.cat([fg, draw[0, keep]]), torch.cat([bg, draw[1, keep]])
    return fg[:n], bg[:n]


def make_coloured_digits(n: int, seed: int, *, min_contrast: float = 80.0) -> ColouredDigits:
    """``n`` 8x8 digits in random colours: images (n, 3, 8, 8) uint8, labels (n,) and the colours.

    The same ``n`` and ``seed`` give the same images. ``min_contrast`` (0..255)
    is the least difference in luma between ink and paper.

    >>> data = make_coloured_digits(4, seed=0)
    >>> tuple(data.images.shape), data.images.dtype, tuple(data.labels.shape)
    ((4, 3, 8, 8), torch.uint8, (4,))
    >>> corner = data.images[:, :, 0, 0]          # the top-left pixel is blank in every digit
    >>> bool((corner == data.background).all())
    True
    >>> bool((make_coloured_digits(4, seed=0).images == data.images).all())
    True
    """
    an_int("n", n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    an_int("seed", seed)
    number_in("min_contrast", min_contrast, 0, 200, "[]")
    grey, labels = load_digits()  # (1797, 8, 8) in [0, 1], (1797,)
    g = torch.Generator().manual_seed(seed)
    rounds = -(-n // len(grey))  # ceil(n / 1797) passes over the set
    index = torch.cat([torch.randperm(len(grey), generator=g) for _ in range(rounds)])[:n]  # (n,)
    fg, bg = _colour_pairs(n, float(min_contrast), g)  # (n, 3) each
    alpha = grey[index][:, None]  # (n, 8, 8) -> (n, 1, 8, 8): how much ink covers each pixel
    mix = bg.float()[:, :, None, None] + alpha * (fg.float() - bg.float())[:, :, None, None]  # (n, 3, 8, 8)
    images = mix.round().clamp(0, 255).to(torch.uint8)
    return ColouredDigits(images, labels[index], fg, bg, index)
