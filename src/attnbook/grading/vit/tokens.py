"""Part 7 (reasoning, computed): ``vit_tokens(height, width, patch_size) -> (T, T * T)``, predicted before it is run.

``T = 1 + (H / P)(W / P)``: the patches and the class token; one head's
attention map scores every token against every token, ``T^2`` scores. A side
that is not a multiple of ``P`` raises ``ValueError``. The answer is compared
with :func:`attnbook.vit.vit_tokens` (itself tested against a real
:class:`~attnbook.vit.ViT`'s sequence and attention maps) and a wrong one with
the mistakes students make: the class token forgotten (in the sequence or in
the scores only), the patches counted along one side, the image taken as
square, ``P`` not squared, ``T`` scores instead of ``T^2``, a count rounded
where it should raise, a divisibility test on ``H * W`` alone, floats.

>>> check_vit_tokens.visible[0].make()
(28, 28, 7)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ._common import VIT


def _case(height: int, width: int, patch_size: int) -> Callable[[], tuple[int, int, int]]:
    """A maker of the arguments ``(height, width, patch_size)``."""
    return lambda: (height, width, patch_size)


def _pair(result: object) -> tuple[int, int]:
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise CheckFailed("vit_tokens should return a pair (T, scores): the sequence length and the number of "
                          "scores in one head's attention map")
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in result):
        raise CheckFailed("the counts should be whole numbers (int): H / P is a float in Python 3; once P divides "
                          "the side, H // P is exact")
    return int(result[0]), int(result[1])


def _mistakes(H: int, W: int, P: int) -> list[tuple[str, tuple[int | None, int | None]]]:
    """The known wrong answers for a tiled image, as ``(message, (T or None, scores or None))``; None: any value."""
    h, w = H // P, W // P
    N, T = h * w, 1 + h * w
    out: list[tuple[str, tuple[int | None, int | None]]] = [
        ("the class token is missing: the encoder reads the N patches and the class token, T = 1 + N, and "
         "attends over all of them", (N, N * N)),
        ("the scores leave out the class token: it attends and is attended like every other token, so one map "
         "is T x T with T = 1 + N", (T, N * N)),
        ("one attention map scores every token against every token: T x T scores, not T", (T, T)),
        ("the patches are counted along one side only: there are H/P rows of W/P patches, N = (H/P)(W/P)",
         (1 + h, None)),
        ("the patches are counted along one side only: there are H/P rows of W/P patches, N = (H/P)(W/P)",
         (1 + w, None)),
        ("a patch covers P x P pixels: N = HW / P^2, not HW / P", (1 + H * W // P, None)),
    ]
    if H != W:
        out += [("the image was taken as square: a non-square image has H/P rows of W/P patches, "
                 "N = (H/P)(W/P)", (1 + t * t, None)) for t in (h, w)]
    return out


def _same(got: tuple[int, int], variant: tuple[int | None, int | None]) -> bool:
    return all(v is None or g == v for g, v in zip(got, variant, strict=True))


def _check(fn: Callable) -> Callable:
    def check_one(H, W, P):
        tiles = H % P == 0 and W % P == 0
        try:
            result = run_student(fn, H, W, P, what="vit_tokens")
        except CheckFailed as err:
            if tiles or "not implemented yet" in str(err) or "reference implementation" in str(err):
                raise
            if "raised ValueError" in str(err):
                return  # the side that does not tile the image is refused, as it should be
            raise err.hinted(": a side that is not a multiple of the patch size should raise ValueError") from None
        got = _pair(result)
        if not tiles:
            rounded = [1 + math.ceil(H / P) * math.ceil(W / P), 1 + (H // P) * (W // P)]
            if H * W % (P * P) == 0:  # the sides do not tile, their product would: a test of H * W alone
                raise CheckFailed("each side must be a multiple of the patch size: H x W a multiple of P^2 is not "
                                  "enough, the patches would not tile the image; raise ValueError")
            raise CheckFailed("a side that is not a multiple of the patch size should raise ValueError: the patches "
                              "would not tile the image" + (", and a rounded count hides that" if got[0] in rounded
                                                            else ""))
        expected = VIT.vit_tokens(H, W, P)
        if got != expected:
            raise first_match(got, _mistakes(H, W, P),
                              "the sequence length T counts the (H/P)(W/P) patches and the class token"
                              if got[0] != expected[0] else
                              "one head's attention map holds a score for every pair of the T tokens: T^2",
                              matches=_same)

    return check_one


check_vit_tokens = Part(
    name="check_vit_tokens",
    visible=(
        Case("28 x 28 digits, patch 7", _case(28, 28, 7)),
        Case("non-square images (H != W)", _case(32, 48, 16)),
        Case("a height that is not a multiple of P", _case(30, 28, 7)),
        Case("a width that is not a multiple of P", _case(28, 30, 7)),
    ),
    check=_check,
    forbidden=("attnbook.vit.patches.vit_tokens", "attnbook.vit.model.ViT", "attnbook.vit.model.ViTConfig",
               "attnbook.vit.patches.PatchEmbedding", "attnbook.vit.patches.patchify"),
)
