"""A toy detection set: coloured squares on a dark background, with boxes and labels.

:func:`make_square_scenes` draws ``n`` RGB images, each holding one to
``max_objects`` axis-aligned squares that do not overlap. A square's label is
its colour (an index into :data:`SQUARE_COLOURS`), its box is
``(cx, cy, w, h)`` in fractions of the image side, the format DETR predicts
(Carion et al. 2020, https://arxiv.org/abs/2005.12872). Chapter 6 uses it for
the Hungarian matching figure and the tiny DETR of :mod:`attnbook.vit.detr`.

Everything is generated from ``seed`` with NumPy's ``default_rng``, so the
same call gives the same scenes on every machine; nothing is downloaded.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from attnbook._checks import int_at_least

__all__ = ["SQUARE_COLOURS", "SquareScenes", "make_square_scenes"]

# Label -> (name, RGB in 0..1). Three saturated colours a small CNN separates easily.
SQUARE_COLOURS: tuple[tuple[str, tuple[float, float, float]], ...] = (
    ("red", (0.95, 0.15, 0.1)),
    ("green", (0.1, 0.85, 0.2)),
    ("blue", (0.15, 0.35, 0.95)),
)


class SquareScenes(NamedTuple):
    """Images and, per image, its boxes and labels (lists, since the object count varies)."""

    images: torch.Tensor  # (n, 3, S, S) float32 in 0..1
    boxes: list[torch.Tensor]  # n tensors (k_i, 4): (cx, cy, w, h) in 0..1
    labels: list[torch.Tensor]  # n tensors (k_i,) int64 in 0..len(SQUARE_COLOURS)-1


def _place(rng: np.random.Generator, taken: np.ndarray, side: int) -> tuple[int, int] | None:
    """Top-left corner of a ``side``-pixel square that avoids ``taken`` (with a 1-pixel gap)."""
    size = taken.shape[0]
    for _ in range(50):  # rejection sampling; scenes are sparse, so this almost never fails
        y, x = (int(v) for v in rng.integers(0, size - side + 1, size=2))
        if not taken[max(0, y - 1): y + side + 1, max(0, x - 1): x + side + 1].any():
            return y, x
    return None


def make_square_scenes(
    n: int,
    seed: int = 0,
    *,
    img_size: int = 32,
    max_objects: int = 3,
    min_side: int = 5,
    max_side: int = 12,
    noise: float = 0.05,
) -> SquareScenes:
    """``n`` scenes of one to ``max_objects`` non-overlapping coloured squares.

    Square sides are drawn uniformly from ``min_side..max_side`` pixels, the
    colour uniformly from :data:`SQUARE_COLOURS`, and Gaussian pixel noise of
    standard deviation ``noise`` is added (then clipped to 0..1). Boxes are
    ``(cx, cy, w, h)`` as fractions of ``img_size``.

    >>> scenes = make_square_scenes(4, seed=0, img_size=16, max_side=6)
    >>> tuple(scenes.images.shape), len(scenes.boxes), scenes.boxes[0].shape[1]
    ((4, 3, 16, 16), 4, 4)
    >>> all(1 <= len(b) <= 3 and len(b) == len(l) for b, l in zip(scenes.boxes, scenes.labels))
    True
    """
    int_at_least("n", n, 1)
    int_at_least("seed", seed, 0)
    int_at_least("img_size", img_size, 4)
    int_at_least("max_objects", max_objects, 1)
    int_at_least("min_side", min_side, 1)
    int_at_least("max_side", max_side, min_side)
    if max_side > img_size // 2:
        raise ValueError(f"max_side must be at most img_size // 2 = {img_size // 2}, got {max_side}")
    if not isinstance(noise, (int, float)) or isinstance(noise, bool) or noise < 0:
        raise ValueError(f"noise must be a number >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    palette = np.array([rgb for _, rgb in SQUARE_COLOURS], dtype=np.float32)  # (K, 3)
    images = np.zeros((n, img_size, img_size, 3), dtype=np.float32)  # (n, S, S, 3), dark background
    boxes, labels = [], []
    for i in range(n):
        taken = np.zeros((img_size, img_size), dtype=bool)
        box_i, label_i = [], []
        for _ in range(int(rng.integers(1, max_objects + 1))):
            side = int(rng.integers(min_side, max_side + 1))
            corner = _place(rng, taken, side)
            if corner is None:
                continue
            y, x = corner
            label = int(rng.integers(len(SQUARE_COLOURS)))
            taken[y: y + side, x: x + side] = True
            images[i, y: y + side, x: x + side] = palette[label]
            box_i.append([(x + side / 2) / img_size, (y + side / 2) / img_size,
                          side / img_size, side / img_size])
            label_i.append(label)
        boxes.append(torch.tensor(box_i, dtype=torch.float32).reshape(-1, 4))  # (k_i, 4)
        labels.append(torch.tensor(label_i, dtype=torch.int64))  # (k_i,)
    images += noise * rng.standard_normal(images.shape).astype(np.float32)
    pixels = torch.from_numpy(np.clip(images, 0.0, 1.0)).permute(0, 3, 1, 2)  # (n, 3, S, S)
    return SquareScenes(pixels.contiguous(), boxes, labels)
