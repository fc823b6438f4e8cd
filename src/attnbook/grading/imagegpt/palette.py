"""Part 2: a palette of any colours, ``nearest_colour(pixels, palette)`` and ``kmeans_step(pixels, palette)``.

``nearest_colour`` maps pixels (..., 3) to the id of the nearest palette
colour (squared Euclidean distance, ties to the lower id); ``kmeans_step``
moves each colour to the mean of its pixels, a colour without pixels staying
put. The named mistakes: another distance (per channel, Manhattan), the
farthest colour, the colours returned instead of their ids, a mean that
becomes NaN for an empty colour, a mean over the wrong axis.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from .._compare import close, require_tensor
from .._core import run_student
from .._shared import available
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import IG, require_ids

__all__ = ["check_palette"]


def _case(seed: int, lead: tuple[int, ...], k: int, dtype: torch.dtype = torch.float32, *,
          strided: bool = False, ties: bool = False, empty: bool = False) -> Callable[[], tuple]:
    """Pixels (*lead, 3) and a palette (k, 3) in 0..255, and the pixels (N, 3) that k-means steps on."""

    def make():
        g = torch.Generator().manual_seed(seed)
        palette = (torch.rand(k, 3, generator=g, dtype=torch.float64) * 255).round()
        pixels = (torch.rand(*lead, 3, generator=g, dtype=torch.float64) * 255).round()
        if ties:  # every pixel halfway between colours 0 and 1 (which tie); colour 2 far away
            palette = torch.tensor([[0.0, 0, 0], [100, 0, 0], [255, 255, 255]] + palette[3:].tolist())
            pixels = torch.tensor([50.0, 0, 0]).repeat(*lead, 1) + torch.zeros(*lead, 3)
            pixels[..., 1:] = torch.randint(0, 3, (*lead, 2), generator=g).double()
        if empty:  # the last colour is far from every pixel: no pixel is nearest to it
            pixels = (pixels * 0.5).round()
            palette[-1] = torch.tensor([255.0, 255, 255])
        if strided:
            palette = palette.t().contiguous().t()  # (k, 3) stored column-major
        return pixels.to(dtype), palette.to(dtype)

    return make


VISIBLE = (
    Case("random colours", _case(0, (40,), 6)),
    Case("ties go to the lower id", _case(10, (6,), 4, ties=True)),
    Case("a colour no pixel is nearest to", _case(11, (20,), 4, empty=True)),
)


def _id_variants(pixels: torch.Tensor, palette: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    x, p = pixels.double().reshape(-1, 3), palette.double()
    d2 = ((x[:, None, :] - p[None, :, :]) ** 2).sum(-1)  # (N, k)
    l1 = (x[:, None, :] - p[None, :, :]).abs().sum(-1)  # (N, k)
    return [
        ("each pixel got the *farthest* colour: take the argmin of the distances, not the argmax", d2.argmax(1)),
        ("the distance should be Euclidean (the sum of squared differences over R, G, B), not the sum of "
         "absolute differences", l1.argmin(1)),
    ]


def _check_nearest(fn: Callable, pixels: torch.Tensor, palette: torch.Tensor) -> None:
    before = snapshot(pixels, palette)
    result = run_student(fn, pixels, palette, what="nearest_colour")
    require_unchanged(before, pixels, palette, message="nearest_colour changed pixels or palette in place")
    got = require_tensor(result, "the result of nearest_colour")
    if tuple(got.shape) == tuple(pixels.shape):
        raise CheckFailed("nearest_colour should return the *ids* of the nearest colours, shape (...), not the "
                          "colours themselves")
    lead = tuple(pixels.shape[:-1])
    if got.numel() == pixels.shape[:-1].numel() and tuple(got.shape) != lead and got.dim() == 1:
        raise CheckFailed("nearest_colour should keep the leading axes: pixels (B, H, W, 3) give ids (B, H, W); "
                          "reshape the flat ids back")
    ids = require_ids(got, "the result of nearest_colour", lead, "pixels.shape[:-1]")
    expected = IG.nearest_colour(pixels, palette)
    if torch.equal(ids, expected):
        return
    d2 = ((pixels.double()[..., None, :] - palette.double()) ** 2).sum(-1)  # (..., k)
    if bool((ids >= 0).all() and (ids < palette.shape[0]).all()) and torch.equal(
            d2.gather(-1, ids[..., None]), d2.gather(-1, expected[..., None])):
        raise CheckFailed("when two colours are equally near, take the lower id (torch.argmin does)")
    raise first_match(ids.reshape(-1), _id_variants(pixels, palette),
                      "the ids are not those of the nearest colours (smallest squared distance)", matches=torch.equal)


def _check_step(fn: Callable, pixels: torch.Tensor, palette: torch.Tensor) -> None:
    flat = pixels.reshape(-1, 3)  # (N, 3): k-means takes a list of pixels
    before = snapshot(flat, palette)
    result = run_student(fn, flat, palette, what="kmeans_step")
    require_unchanged(before, flat, palette, message="kmeans_step changed pixels or palette in place; "
                                                     "return a new palette")
    got = require_tensor(result, "the result of kmeans_step")
    require_shape(got, tuple(palette.shape), f"kmeans_step should return a palette (k, 3), got {tuple(got.shape)}")
    expected = IG.kmeans_step(flat, palette)
    if close(got, expected, palette.dtype) and got.dtype == palette.dtype:
        return
    if close(got, expected, torch.float32):
        raise CheckFailed(f"for a {palette.dtype} palette, return a {palette.dtype} palette")
    if bool(torch.isnan(got).any()):
        raise CheckFailed("a colour that no pixel is nearest to became NaN (a mean of nothing): leave such a "
                          "colour where it was")
    ids = IG.nearest_colour(flat, palette)
    counts = torch.bincount(ids, minlength=palette.shape[0])
    if bool((counts == 0).any()):
        zeroed = torch.where(counts[:, None] > 0, expected, torch.zeros_like(expected))
        if close(got, zeroed, torch.float32):
            raise CheckFailed("a colour that no pixel is nearest to moved to (0, 0, 0): leave such a colour "
                              "where it was")
    if close(got, flat.mean(0, keepdim=True).expand_as(palette), torch.float32):
        raise CheckFailed("every colour moved to the mean of *all* pixels: average only the pixels nearest to it")
    raise CheckFailed("each colour should move to the mean of the pixels nearest to it")


def _check(nearest: Callable, step: Callable) -> Callable:
    def check(pixels, palette):
        _check_nearest(nearest, pixels, palette)
        _check_step(step, pixels, palette)

    return check


FORBIDDEN = ("attnbook.imagegpt.palette.nearest_colour", "attnbook.imagegpt.palette.kmeans_step",
             "attnbook.imagegpt.palette.kmeans_palette", "attnbook.imagegpt.palette.palette_quantize",
             # library routines that assign each pixel its nearest colour in one call (attnbook-course routes)
             *available(("scipy.cluster.vq.vq", "scipy.cluster.vq.py_vq", "scipy.cluster._vq.vq",
                         "sklearn.metrics.pairwise_distances_argmin", "sklearn.metrics.pairwise_distances_argmin_min",
                         "sklearn.metrics.pairwise.pairwise_distances_argmin",
                         "sklearn.metrics.pairwise.pairwise_distances_argmin_min")))

check_palette = Part(name="check_palette", visible=VISIBLE, check=_check, forbidden=FORBIDDEN)
