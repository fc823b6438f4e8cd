"""What several of chapter 6's parts share: the private references, random images, patch layouts, choices.

The checks compare the student's objects with private copies of
:mod:`attnbook.vit` and :mod:`attnbook.transformer` (:data:`VIT`, :data:`TR`),
so that a notebook that patches the public packages changes nothing here.

>>> x = images(0, 2, 3, 4, 8)()[0]
>>> tuple(x.shape), torch.equal(cut(x, 2), VIT.patchify(x, 2))
((2, 3, 4, 8), True)
>>> VIT.model.EncoderBlock is TR.EncoderBlock
True
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import private_modules
from .._shared import randn_strided

# imported together, so that VIT's blocks are TR's EncoderBlock
VIT, TR = private_modules("attnbook.vit", "attnbook.transformer")


def images(seed: int, B: int, C: int, H: int, W: int, P: int | None = None, dtype: torch.dtype = torch.float32,
           swap: bool = False) -> Callable[[], tuple[torch.Tensor, int | None]]:
    """A maker of ``(images (B, C, H, W), P)``; ``swap``: a channels-last (non-contiguous) view."""

    def make():
        g = torch.Generator().manual_seed(seed)
        x = randn_strided((B, C, H, W), g, dtype, (1, 3) if swap else None)
        return x, P

    return make


def cut(x: torch.Tensor, P: int, layout: str = "right") -> torch.Tensor:
    """Patches of ``x`` (B, C, H, W) as (B, N, P*P*C) in a ``layout``: ``"right"`` (row-major patches, each
    (P, P, C)) or one of the ways students get it wrong."""
    B, C, H, W = x.shape
    h, w = H // P, W // P
    grid = x.double().reshape(B, C, h, P, w, P)  # (B, C, h, P, w, P)
    order = {
        "right": (0, 2, 4, 3, 5, 1),  # (B, h, w, P, P, C)
        "column_major": (0, 4, 2, 3, 5, 1),  # (B, w, h, P, P, C): patches down the columns first
        "channels_first": (0, 2, 4, 1, 3, 5),  # (B, h, w, C, P, P): what unfold gives
        "pixels_transposed": (0, 2, 4, 5, 3, 1),  # (B, h, w, P_w, P_h, C)
    }
    if layout == "reshape_only":
        return x.double().reshape(B, h * w, P * P * C)  # no permutation: rows of pixels, not patches
    return grid.permute(*order[layout]).reshape(B, h * w, P * P * C)


LAYOUT_MESSAGES = {
    "column_major": "the patches are read column by column: number them row-major, left to right along the "
                    "top row of patches first, then the next row down",
    "channels_first": "each patch is flattened as (C, P, P), channels first (what F.unfold gives): flatten it "
                      "as (P, P, C), pixel rows, then pixel columns, then channels",
    "pixels_transposed": "inside each patch the pixels are read column by column: flatten a patch as (P, P, C), "
                         "its pixel rows first",
    "reshape_only": "a reshape alone does not cut patches: it takes runs of consecutive pixels along the rows; "
                    "split H and W into (h, P) and (w, P) and permute the axes before flattening",
}
