"""Part 1: the 9-bit palette, ``quantize_9bit(images) -> ids`` and ``dequantize_9bit(ids) -> images``.

Images are uint8 (B, 3, H, W); ids (B, H, W) in 0..511 pack the top three
bits of red, green and blue, red highest; decoding gives each bin's centre.
The named mistakes: channels packed in another order, rounding to the nearest
bin instead of flooring, decoding to the bin's start or to floats.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import require_tensor
from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import IG, require_ids

__all__ = ["check_quantize_9bit"]


def _case(seed: int, B: int, H: int, W: int, *, strided: bool = False, every_value: bool = False) -> Callable[[],
          tuple]:
    def make():
        g = torch.Generator().manual_seed(seed)
        if every_value:  # each channel runs through 0..255 at every position of a 16 x 16 image
            v = torch.arange(256, dtype=torch.uint8).view(16, 16)
            images = torch.stack([v, v.flip(0), v.t()])[None].repeat(B, 1, 1, 1)  # (B, 3, 16, 16)
        else:
            images = torch.randint(0, 256, (B, 3, H, W), dtype=torch.uint8, generator=g)
        if strided:  # the same values, stored channels-last (B, H, W, 3) and viewed as (B, 3, H, W)
            images = images.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
        return (images,)

    return make


VISIBLE = (Case("random colours", _case(0, 2, 4, 5)),)


def _pack(r: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (r << 6) | (g << 3) | b


def _id_variants(images: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    x = images.long()
    r, g, b = x[:, 0] >> 5, x[:, 1] >> 5, x[:, 2] >> 5
    rounded = ((x + 16) >> 5).clamp(max=7)  # the nearest of the bins 0, 32, ..., 224
    return [
        ("the channels are packed in the wrong order: red goes in the high bits, "
         "id = (r >> 5) << 6 | (g >> 5) << 3 | (b >> 5)", _pack(b, g, r)),
        ("the channels are packed in the wrong order: red goes in the high bits, "
         "id = (r >> 5) << 6 | (g >> 5) << 3 | (b >> 5)", _pack(g, r, b)),
        ("the values were rounded to the nearest bin: floor them instead (v >> 5, or v // 32), so that bin i "
         "holds the values 32 i .. 32 i + 31", _pack(rounded[:, 0], rounded[:, 1], rounded[:, 2])),
        ("the ids overflowed: packed in uint8 they wrap around at 256; convert to torch.long before packing "
         "(ids go up to 511)", _pack(r, g, b) & 255),
        ("each channel needs 3 bits: shift by 5 (keep the top 3 of 8 bits), and pack with shifts of 6 and 3",
         _pack(x[:, 0] >> 6, x[:, 1] >> 6, x[:, 2] >> 6)),
    ]


def _image_variants(ids: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    bins = torch.stack([ids >> 6, (ids >> 3) & 7, ids & 7], dim=1)  # (B, 3, H, W)
    return [
        ("dequantize_9bit returned the start of each bin; return its centre, (v << 5) + 16, so that no value "
         "is off by more than 16", bins << 5),
        ("dequantize_9bit unpacked the channels in the wrong order: red is in the high bits",
         (bins.flip(1) << 5) + 16),
    ]


def _check(quantize: Callable, dequantize: Callable) -> Callable:
    def check(images):
        B, _, H, W = images.shape
        before = snapshot(images)
        ids = require_ids(run_student(quantize, images, what="quantize_9bit"), "the result of quantize_9bit",
                          (B, H, W), "(B, H, W): one id per pixel")
        require_unchanged(before, images, message="quantize_9bit changed the images in place")
        expected = IG.quantize_9bit(images)
        if not torch.equal(ids, expected):
            if bool(((ids < 0) | (ids > 511)).any()):
                raise CheckFailed("quantize_9bit returned ids outside 0..511: use 3 bits per channel")
            raise first_match(ids, _id_variants(images), "the ids differ from (r >> 5) << 6 | (g >> 5) << 3 | (b >> 5)",
                              matches=torch.equal)
        tokens = expected.clone()
        back = require_tensor(run_student(dequantize, tokens, what="dequantize_9bit"), "the result of dequantize_9bit")
        require_unchanged([expected], tokens, message="dequantize_9bit changed the ids in place")
        require_shape(back, (B, 3, H, W), f"dequantize_9bit should return images (B, 3, H, W), got {tuple(back.shape)}")
        if back.dtype != torch.uint8:
            raise CheckFailed(f"dequantize_9bit should return uint8 images (values 0..255), got {back.dtype}")
        if not torch.equal(back, IG.dequantize_9bit(expected)):
            raise first_match(back.long(), _image_variants(expected),
                              "dequantize_9bit should give each channel the centre of its bin, (v << 5) + 16",
                              matches=torch.equal)

    return check


FORBIDDEN = ("attnbook.imagegpt.palette.quantize_9bit", "attnbook.imagegpt.palette.dequantize_9bit")

check_quantize_9bit = Part(name="check_quantize_9bit", visible=VISIBLE, check=_check,
                           forbidden=FORBIDDEN)
