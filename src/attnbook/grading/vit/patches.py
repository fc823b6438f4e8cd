"""Part 1: ``patchify(images (B, C, H, W), patch_size) -> (B, N, P*P*C)``, row-major patches flattened (P, P, C).

A wrong result is compared with the layouts students produce instead
(:data:`._common.LAYOUT_MESSAGES`): patches read column-major, channels first
inside a patch (as ``F.unfold`` gives them), pixels transposed, or a plain
reshape that cuts no patches.

>>> check_patchify.visible[0].make()[0].shape
torch.Size([2, 1, 8, 8])
"""

from __future__ import annotations

from collections.abc import Callable

from .._compare import close, require_tensor
from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import LAYOUT_MESSAGES, VIT, cut, images


def _check(fn: Callable) -> Callable:
    def check_one(x, P):
        before = snapshot(x)
        B, C, H, W = x.shape
        try:
            out = require_tensor(run_student(fn, x, P, what="patchify"), "the result of patchify")
        except CheckFailed as err:
            if H == W:
                raise
            raise CheckFailed(f"patchify failed on a non-square image (H = {H}, W = {W}), which it must accept: the "
                              f"patch rows come from H, the patch columns from W: {err}") from None
        require_unchanged(before, x, message="patchify changed the images in place; compute on new tensors")
        require_shape(out, (B, H * W // P**2, P * P * C),
                      "patchify should return (B, N, P*P*C) with N = HW / P^2 patches of P*P*C values")
        expected = VIT.patchify(x, P)
        if out.dtype != x.dtype:
            raise CheckFailed(f"for {x.dtype} images the patches should be {x.dtype} too")
        if not close(out, expected):
            layouts = [(message, cut(x, P, layout)) for layout, message in LAYOUT_MESSAGES.items()]
            raise first_match(out, layouts, "the patches differ from the image cut into P x P squares, row-major, "
                              "each flattened as (P, P, C)", x.dtype)

    return check_one


check_patchify = Part(
    name="check_patchify",
    visible=(
        Case("one channel", images(601, 2, 1, 8, 8, 4)),
        Case("three channels", images(602, 2, 3, 4, 4, 2)),
        Case("non-square images (H != W)", images(603, 2, 1, 4, 8, 2)),
    ),
    check=_check,
    forbidden=("attnbook.vit.patches.patchify", "attnbook.vit.patches.unpatchify",
               "attnbook.vit.patches.PatchEmbedding"),
)
