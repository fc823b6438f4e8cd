"""Part 6: PixelCNN's kernel mask, ``pixelcnn_mask(kernel_size, mask_type) -> (k, k)``, 1 = weight kept.

Kept: every row above the centre, and the pixels left of the centre in its
row; type ``"B"`` keeps the centre too, type ``"A"`` hides it. Booleans or
0/1 numbers are both fine. The named mistakes: a type-B mask where type A is
needed (and the other way round), the centre row kept right of the centre,
a lower-triangular mask, rows and columns swapped.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import require_tensor
from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape
from ._common import IG

__all__ = ["check_pixelcnn_mask"]


def _case(kernel_size: int, mask_type: str) -> Callable[[], tuple]:
    def make():
        return (kernel_size, mask_type)

    return make


VISIBLE = (Case("3 x 3, type A", _case(3, "A")), Case("3 x 3, type B", _case(3, "B")),
           Case("5 x 5, type A", _case(5, "A")))


def _variants(k: int, mask_type: str) -> list[tuple[str, torch.Tensor]]:
    other = "B" if mask_type == "A" else "A"
    centre = k // 2
    rows = torch.zeros(k, k, dtype=torch.bool)
    rows[: centre + 1] = True  # every row down to the centre's, whole
    rows[centre, centre] = mask_type == "B"
    out = [
        ("type A must hide the centre pixel (the one being predicted); this is a type-B mask"
         if mask_type == "A" else "type B keeps the centre (it holds only earlier pixels after the first layer); "
         "this is a type-A mask", IG.pixelcnn_mask(k, other)),
        ("the pixels right of the centre in its row come later in raster order: keep only those left of it",
         rows),
        ("rows and columns are swapped: keep the rows *above* the centre and the pixels *left* of it",
         IG.pixelcnn_mask(k, mask_type).t()),
        ("a lower-triangular mask is the causal mask of a sequence; a kernel mask keeps the rows above the "
         "centre and the pixels left of it", torch.ones(k, k, dtype=torch.bool).tril(-1 if mask_type == "A" else 0)),
    ]
    for c in range(k):  # a mask centred elsewhere than (k // 2, k // 2), e.g. at a fixed (1, 1)
        if c != centre:
            off = torch.zeros(k, k, dtype=torch.bool)
            off[:c] = True
            off[c, :c] = True
            off[c, c] = mask_type == "B"
            out.append((f"the centre of a {k} x {k} kernel is pixel ({centre}, {centre}), kernel_size // 2: this mask "
                        f"is centred at ({c}, {c})", off))
    return out


FUTURE = ("the mask keeps weights on pixels that come at or after the centre in raster order "
          "(type A) or after it (type B): the prediction would see the future")
HIDDEN_PAST = ("the mask hides weights on earlier pixels: keep every row above the centre and the "
               "pixels left of it")


def _check(fn: Callable) -> Callable:
    def check(kernel_size, mask_type):
        mask = require_tensor(run_student(fn, kernel_size, mask_type, what="pixelcnn_mask"),
                              "the result of pixelcnn_mask")
        require_shape(mask, (kernel_size, kernel_size), f"pixelcnn_mask should return a (kernel_size, kernel_size) "
                                                        f"mask, got {tuple(mask.shape)}")
        if mask.is_complex() or not bool(((mask == 0) | (mask == 1)).all()):
            raise CheckFailed("the mask should hold only 0 and 1 (or False and True)")
        kept = mask != 0
        expected = IG.pixelcnn_mask(kernel_size, mask_type)
        if not torch.equal(kept, expected):
            future = bool((kept & ~expected).any())
            raise first_match(kept, _variants(kernel_size, mask_type), FUTURE if future else HIDDEN_PAST,
                              matches=torch.equal)

    return check


check_pixelcnn_mask = Part(name="check_pixelcnn_mask", visible=VISIBLE, check=_check,
                           forbidden=("attnbook.imagegpt.pixelcnn.pixelcnn_mask",
                                      "attnbook.imagegpt.pixelcnn.MaskedConv2d"))
