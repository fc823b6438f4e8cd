"""Part 9: ``uniform_bits(n_colours, height, width) -> dict`` — predict what a model that knows nothing scores.

A model that gives each of K values the same probability pays ``log2 K`` bits
for every pixel, whatever its value: that is its bits per dimension, and an
image of ``height`` x ``width`` pixels costs ``height * width * log2 K`` bits.
The notebook measures an untrained ImageGPT beside the prediction. The named
mistakes: nats (``ln K``), K itself instead of ``log2 K``, whole bits (the
bits needed to write an id, ``ceil(log2 K)``), the image's bits given as bits
per dimension, an image of ``height`` pixels only, three channels per pixel.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

from .._compare import same_number
from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import IG

__all__ = ["check_uniform_bits"]

_KEYS = ("bits_per_dim", "bits_per_image")


def _case(n_colours: int, height: int, width: int) -> Callable[[], tuple]:
    return lambda: (n_colours, height, width)


VISIBLE = (
    Case("8 grey levels, an 8 x 8 digit", _case(8, 8, 8)),
    Case("the 9-bit palette, a 32 x 32 image", _case(512, 32, 32)),
    Case("two values, a 4 x 6 image", _case(2, 4, 6)),
)


def _number(got: dict, key: str) -> float:
    value = got[key]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise CheckFailed(f"{key} should be a number (a Python float), got {type(value).__name__}")
    return float(value)


def _same(a: float, b: float) -> bool:
    return same_number(a, b)


def _check(uniform_bits: Callable) -> Callable:
    def check(n_colours: int, height: int, width: int) -> None:
        got = run_student(uniform_bits, n_colours, height, width, what="uniform_bits")
        if not isinstance(got, dict) or set(_KEYS) - set(got):
            raise CheckFailed(f"uniform_bits should return a dict with the keys {', '.join(_KEYS)}")
        want = IG.uniform_bits(n_colours, height, width)
        pixels, per_dim = height * width, want["bits_per_dim"]
        dim, image = _number(got, "bits_per_dim"), _number(got, "bits_per_image")
        if not _same(dim, per_dim):
            for wrong, why in [
                (math.log(n_colours), "bits_per_dim is in nats (ln K): bits are log base 2, log2 K"),
                (pixels * per_dim, "bits_per_dim is the cost of the whole image: per dimension means per pixel, "
                 "log2 K, the same for an image of any size"),
                (float(n_colours), "bits_per_dim is the number of values K: each pixel costs -log2(1/K) = log2 K "
                 "bits, the bits it takes to tell K equally likely values apart"),
                (1.0 / n_colours, "bits_per_dim is the probability 1/K: the cost is its negative log2, log2 K"),
                (float(math.ceil(per_dim)), "bits_per_dim is rounded up to whole bits (the bits that write an "
                 "id): a model's average cost need not be a whole number, it is log2 K exactly"),
                (float(math.floor(per_dim)), "bits_per_dim is rounded down to whole bits: it is log2 K exactly, "
                 "not a whole number when K is not a power of two"),
            ]:
                if not _same(wrong, per_dim) and _same(dim, wrong):
                    raise CheckFailed(why)
            raise CheckFailed("bits_per_dim is not the cost of one pixel under K equally likely values, log2 K")
        if not _same(image, want["bits_per_image"]):
            for wrong, why in [
                (per_dim, "bits_per_image is the cost of one pixel: an image of height x width pixels pays log2 K "
                 "for each of them"),
                (height * per_dim, "bits_per_image counts height pixels only: the image has height x width"),
                (width * per_dim, "bits_per_image counts width pixels only: the image has height x width"),
                (3 * pixels * per_dim, "bits_per_image counts three values per pixel: with a palette a pixel is "
                 "one token, one dimension"),
                (pixels * math.log(n_colours), "bits_per_image is in nats: bits are log base 2"),
            ]:
                if not _same(wrong, want["bits_per_image"]) and _same(image, wrong):
                    raise CheckFailed(why)
            raise CheckFailed("bits_per_image is not height x width pixels at log2 K bits each")

    return check


FORBIDDEN = ("attnbook.imagegpt.model.uniform_bits",)

check_uniform_bits = Part(name="check_uniform_bits", visible=VISIBLE, check=_check, forbidden=FORBIDDEN)
