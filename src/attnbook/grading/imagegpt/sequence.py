"""Part 3: raster order, ``to_sequence(tokens (B, H, W)) -> (B, H*W)`` and ``from_sequence(seq, H, W)``.

Row by row: position ``r * W + c`` holds pixel ``(r, c)``. The named mistakes:
column-major order, H and W swapped on the way back, ``view`` on a
non-contiguous input, a batch of one squeezed away.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot
from ._common import IG, require_ids

__all__ = ["check_raster_order"]


def _case(seed: int, B: int, H: int, W: int, *, strided: bool = False,
          dtype: torch.dtype = torch.long) -> Callable[[], tuple]:
    def make():
        g = torch.Generator().manual_seed(seed)
        if strided:  # (B, H, W) values stored as (B, W, H) and transposed: not contiguous
            tokens = torch.randint(0, 512, (B, W, H), generator=g).to(dtype).transpose(1, 2)
        else:
            tokens = torch.randint(0, 512, (B, H, W), generator=g).to(dtype)
        return (tokens,)

    return make


VISIBLE = (
    Case("a small batch", _case(0, 2, 3, 4)),
    Case("non-contiguous tokens (a transposed view)", _case(10, 2, 2, 3, strided=True)),
)


def _check(to_seq: Callable, from_seq: Callable) -> Callable:
    def check(tokens):
        B, H, W = tokens.shape
        before = snapshot(tokens)
        try:
            result = run_student(to_seq, tokens, what="to_sequence")
        except CheckFailed as err:
            if tokens.is_contiguous():
                raise
            raise CheckFailed(f"to_sequence failed on non-contiguous tokens (a transposed view), which it must "
                              f"accept (view refuses them, reshape copies when it must): {err}") from None
        seq = require_ids(result, "the result of to_sequence", (B, H * W), "(B, H*W)")
        require_unchanged(before, tokens, message="to_sequence changed the tokens in place")
        expected = IG.to_sequence(tokens).long()
        if not torch.equal(seq, expected):
            if torch.equal(seq, tokens.transpose(1, 2).reshape(B, H * W).long()):
                raise CheckFailed("the pixels are read column by column: raster order reads row by row, so that "
                                  "position r * W + c holds pixel (r, c)")
            raise CheckFailed("the sequence is not in raster order: position r * W + c should hold pixel (r, c)")
        ref_seq = IG.to_sequence(tokens)  # (B, H*W), in the tokens' dtype
        images = require_ids(run_student(from_seq, ref_seq, H, W, what="from_sequence"),
                             "the result of from_sequence", (B, H, W), "(B, H, W)")
        if not torch.equal(images, tokens.long()):
            if torch.equal(images, ref_seq.reshape(B, W, H).transpose(1, 2).long()):
                raise CheckFailed("from_sequence fills the image column by column: row r is seq[:, r*W : (r+1)*W]")
            raise CheckFailed("from_sequence(to_sequence(x), H, W) should give x back")

    return check


FORBIDDEN = ("attnbook.imagegpt.sequence.to_sequence", "attnbook.imagegpt.sequence.from_sequence")

check_raster_order = Part(name="check_raster_order", visible=VISIBLE, check=_check,
                          forbidden=FORBIDDEN)
