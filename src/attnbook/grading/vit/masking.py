"""Part 5: MAE's ``random_masking(x (B, N, D), mask_ratio, generator) -> (x_kept, mask, ids_restore)``.

The answer is random, so it is checked by what must hold for every draw and by statistics:

* bookkeeping, on every case: ``x_kept`` (B, N_keep, D) with ``N_keep = int(N * (1 -
  mask_ratio))`` holds tokens of ``x``; ``mask`` (B, N) is 1 at the removed positions and 0 at
  the kept ones, in image order; ``ids_restore`` (B, N) is a permutation that puts every kept
  token back, ``x_kept[b, ids_restore[b, n]] == x[b, n]`` where ``mask[b, n] == 0``, and points
  past the kept tokens (``>= N_keep``) where a mask token goes;
* statistics, over 3,000 rows of 8 positions: each position is removed with probability
  ``mask_ratio`` and each pair of positions together as often as a uniformly random subset
  gives, within six standard errors (a correct answer fails with probability below 1e-7);
* the generator: generators seeded alike repeat the draw, differently seeded ones do not.

>>> x, ratio, seed, mode = check_random_masking.visible[0].make()
>>> tuple(x.shape), ratio, mode
((2, 16, 4), 0.75, 'bookkeeping')
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .._compare import require_tensor
from .._core import run_student
from .._shared import randn_strided
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot

Z = 6.0  # standard errors allowed for chance
STATS_ROWS, STATS_N = 3000, 8


def _case(seed, B, N, D, ratio, mode="bookkeeping", dtype=torch.float32, swap=False):
    def make():
        g = torch.Generator().manual_seed(seed)
        if mode == "statistics":  # token n of every row holds the value n: positions can be read off x_kept
            x = torch.arange(N, dtype=dtype)[None, :, None].expand(B, N, D).clone()
        else:
            x = randn_strided((B, N, D), g, dtype, (0, 1) if swap else None)
        return x, ratio, seed, mode

    return make


def _draw(fn: Callable, x: torch.Tensor, ratio: float, seed: int, global_seed: int
          ) -> tuple[torch.Tensor, ...]:
    """One call with a generator seeded ``seed`` and the global generator seeded ``global_seed``."""
    before = snapshot(x)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(global_seed)
        result = run_student(fn, x, ratio, torch.Generator().manual_seed(seed), what="random_masking")
    require_unchanged(before, x, message="random_masking changed x in place; compute on new tensors")
    if not isinstance(result, tuple) or len(result) != 3:
        raise CheckFailed("random_masking should return three values (x_kept, mask, ids_restore)")
    names = ("x_kept (the first value returned)", "mask (the second value returned)",
             "ids_restore (the third value returned)")
    return tuple(require_tensor(r, n) for r, n in zip(result, names, strict=True))


def _kept_positions(x: torch.Tensor, x_kept: torch.Tensor) -> torch.Tensor:
    """(B, N_keep): the position in x of each kept token (x's tokens are distinct); -1 where none matches."""
    same = (x_kept.detach()[:, :, None, :] == x[:, None, :, :]).all(-1)  # (B, N_keep, N)
    found = same.any(-1)
    return torch.where(found, same.float().argmax(-1), torch.full_like(found, -1, dtype=torch.long))


def _bookkeeping(x: torch.Tensor, ratio: float, x_kept: torch.Tensor, mask: torch.Tensor,
                 ids_restore: torch.Tensor) -> torch.Tensor:
    """Check everything that must hold for any draw; returns the (B, N) mask as 0/1 longs."""
    B, N, D = x.shape
    n_keep = int(N * (1 - ratio))
    if x_kept.dim() == 3 and x_kept.shape[0] == B and x_kept.shape[-1] == D and x_kept.shape[1] != n_keep:
        got = x_kept.shape[1]
        if got == int(N * ratio):
            raise CheckFailed("kept the share mask_ratio of the tokens: mask_ratio is the share *removed*, so keep "
                              "N_keep = int(N * (1 - mask_ratio))")
        if got == math.ceil(N * (1 - ratio)):
            raise CheckFailed(f"N_keep is rounded down, int(N * (1 - mask_ratio)), not to the nearest or up: with "
                              f"N = {N} and mask_ratio = {ratio}, N_keep is {n_keep}, not {got}")
        raise CheckFailed("kept the wrong number of tokens: keep N_keep = int(N * (1 - mask_ratio))")
    require_shape(x_kept, (B, n_keep, D), "x_kept should have shape (B, N_keep, D)")
    if x_kept.dtype != x.dtype:
        raise CheckFailed(f"for {x.dtype} tokens x_kept should be {x.dtype} too")
    require_shape(mask, (B, N), "mask should have shape (B, N), one entry per position")
    require_shape(ids_restore, (B, N), "ids_restore should have shape (B, N)")
    if mask.dtype == torch.bool:
        mask = mask.long()
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise CheckFailed("mask should hold 0 (kept) and 1 (removed) only")
    mask = mask.long()
    if ids_restore.is_floating_point() or ids_restore.dtype == torch.bool:
        raise CheckFailed(f"ids_restore should hold integer indices (torch.long), got {ids_restore.dtype}")
    ids = ids_restore.long()
    if not torch.equal(ids.sort(1).values, torch.arange(N).expand(B, N)):
        raise CheckFailed("each row of ids_restore should be a permutation of 0 .. N - 1")
    if not bool((mask.sum(1) == N - n_keep).all()):
        raise CheckFailed("mask should have a 1 at each of the N - N_keep removed positions of every row")
    pos = _kept_positions(x, x_kept)  # (B, N_keep)
    if bool((pos < 0).any()):
        raise CheckFailed("x_kept holds values that are not tokens of x: gather whole tokens, "
                          "x.gather(1, ids_keep[..., None].expand(-1, -1, D))")
    if any(len(set(row)) != n_keep for row in pos.tolist()):
        raise CheckFailed("x_kept holds the same token twice: keep distinct positions (the first N_keep of a "
                          "random permutation)")
    back = ids.gather(1, pos)  # (B, N_keep): where ids_restore sends each kept position
    restores = torch.equal(back, torch.arange(n_keep).expand(B, -1))
    if not restores and torch.equal(ids[:, :n_keep], pos):
        raise CheckFailed("ids_restore is the shuffle itself, so the restore order is lost: it must be the inverse "
                          "permutation, ids_restore = argsort(ids_shuffle)")
    kept = torch.zeros(B, N, dtype=torch.long).scatter_(1, pos, 1)  # (B, N): 1 where kept
    if not torch.equal(kept, 1 - mask):
        if torch.equal(mask, torch.ones(B, N, dtype=torch.long).scatter_(1, torch.arange(n_keep).expand(B, -1), 0)):
            raise CheckFailed("the mask is in shuffled order (zeros first): put it back in image order with "
                              "mask.gather(1, ids_restore)")
        raise CheckFailed("mask does not mark the tokens that were removed: 0 where a token of x_kept came from, "
                          "1 elsewhere")
    if not restores:
        raise CheckFailed("ids_restore does not put the kept tokens back: x_kept[b, ids_restore[b, n]] must be "
                          "x[b, n] at every kept position n (ids_restore = argsort(ids_shuffle))")
    return mask


def _statistics(mask: torch.Tensor, ratio: float) -> None:
    B, N = mask.shape
    removed = N - int(N * (1 - ratio))
    if bool((mask == mask[:1]).all()):
        raise CheckFailed("every row got the same mask: draw the noise per row, shape (B, N), so that each image "
                          "hides its own patches")
    p = removed / N
    freq = mask.double().mean(0)  # (N,)
    if bool(((freq - p).abs() > Z * math.sqrt(p * (1 - p) / B) + 1e-12).any()):
        raise CheckFailed("some positions are removed more often than others: every position must be removed with "
                          "probability mask_ratio (sort uniform noise, torch.rand, to choose the kept tokens)")
    q = removed * (removed - 1) / (N * (N - 1))  # P(positions i and j both removed)
    pairs = (mask.double().T @ mask.double()) / B  # (N, N)
    off = ~torch.eye(N, dtype=torch.bool)
    if bool(((pairs - q).abs()[off] > Z * math.sqrt(q * (1 - q) / B) + 1e-12).any()):
        raise CheckFailed("the removed positions are not a uniformly random subset (some positions go together "
                          "too often): take the first N_keep of a random permutation, argsort(torch.rand(B, N))")


def _check(fn: Callable) -> Callable:
    def check_one(x, ratio, seed, mode):
        x_kept, mask, ids_restore = _draw(fn, x, ratio, seed, seed + 1)
        mask = _bookkeeping(x, ratio, x_kept, mask, ids_restore)
        if mode == "statistics":
            _statistics(mask, ratio)
        elif mode == "generator":
            again = _draw(fn, x, ratio, seed, seed + 2)  # the global generator must not matter
            if not all(torch.equal(a, b) for a, b in zip((x_kept, ids_restore), (again[0], again[2]), strict=True)):
                raise CheckFailed("two calls with generators seeded alike gave different masks, so the draws do not "
                                  "follow the generator: draw the noise with torch.rand(..., generator=generator)")
            other = _draw(fn, x, ratio, seed + 1000, seed + 1)
            if torch.equal(other[2], ids_restore):
                raise CheckFailed("the mask does not depend on the generator: draw the noise with "
                                  "torch.rand(..., generator=generator), and do not reseed")

    return check_one


check_random_masking = Part(
    name="check_random_masking",
    visible=(
        Case("bookkeeping, 75 % removed", _case(681, 2, 16, 4, 0.75)),
        Case("statistics, 75 % removed", _case(682, STATS_ROWS, STATS_N, 1, 0.75, "statistics")),
        Case("N = 6, 75 % removed: N_keep = int(1.5) rounds down", _case(683, 2, 6, 3, 0.75)),
        Case("the draw follows the generator", _case(684, 2, 8, 2, 0.5, "generator")),
    ),
    check=_check,
    forbidden=("attnbook.vit.mae.random_masking", "attnbook.vit.mae.MAE"),
)
