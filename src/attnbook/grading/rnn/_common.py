"""What chapter 1's parts share: private references, input makers, score comparison, seeded runs.

>>> x = strided(torch.arange(6.0).reshape(2, 3))
>>> x.is_contiguous(), x.tolist()
(False, [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import torch

from .._compare import close
from .._core import private_modules
from ..errors import CheckFailed

ModuleT = TypeVar("ModuleT", bound=torch.nn.Module)
ResultT = TypeVar("ResultT")

# ATT: the alignment models (attnbook.alignment, re-exported by attnbook.attention); RNN's decoders use the same copy.
ATT, RNN, HARD = private_modules("attnbook.alignment", "attnbook.rnn", "attnbook.hard_attention")

# The public classes under the names the notebook gives them (attnbook.attention re-exports them), the shared
# base at its home. The traps and the judge's stubs follow the objects to attnbook.alignment, where they live.
FORBIDDEN_SCORES = (
    "attnbook.attention.AdditiveAttention",
    "attnbook.attention.LuongAttention",
    "attnbook.alignment._AlignmentAttention",
)
# exact_gradient stays: the notebook's own cell compares an estimate with it, and an answer that returns it
# fails the estimator's check anyway (an estimate must vary from draw to draw).
FORBIDDEN_HARD = (
    "attnbook.hard_attention.sample_hard_attention",
    "attnbook.hard_attention.score_function_gradient",
    "attnbook.hard_attention.soft_attention",
)
NEG = -1e4  # a masked score may be -inf or any value at most this (e.g. -1e9): its weight is 0 either way
Z = 6.0  # statistical tolerances are Z standard errors: a two-sided normal tail of 2e-9 per number compared

MASK_INVERTED = ("the mask is applied the wrong way round: True marks the real keys, so it is the positions "
                 "where the mask is False that get -inf")
MASK_IGNORED = "the mask is ignored: the scores of padded keys must be -inf"
MASK_ZERO = "masked scores were set to 0 instead of -inf; a score of 0 still gets weight after the softmax"


def apply_mask(e: torch.Tensor, how: str = "-inf", *, mask: torch.Tensor | None) -> torch.Tensor:
    """Scores e (B, S) masked as asked, or as students get it wrong: "-inf", "inverted", "zero" or "none"."""
    if mask is None or how == "none":
        return e
    if how == "inverted":
        return e.masked_fill(mask, float("-inf"))
    return e.masked_fill(~mask, float("-inf") if how == "-inf" else 0.0)


def mask_mistakes(e: torch.Tensor, mask: torch.Tensor | None) -> list[tuple[str, torch.Tensor]]:
    """(message, scores) of the three ways to get the mask wrong, from the unmasked scores ``e``."""
    if mask is None:
        return []
    return [(MASK_INVERTED, apply_mask(e, "inverted", mask=mask)), (MASK_IGNORED, e),
            (MASK_ZERO, apply_mask(e, "zero", mask=mask))]


@contextlib.contextmanager
def hinted(symptom: str, hint: str) -> Iterator[None]:
    """Inside, a failure whose message contains ``symptom`` (a torch error) gets ``hint`` added."""
    try:
        yield
    except CheckFailed as err:
        if symptom not in str(err):
            raise
        raise err.hinted(f" -- {hint}") from None


def masked(x: torch.Tensor) -> torch.Tensor:
    """Where a score counts as masked (-inf, or a large negative stand-in such as -1e9)."""
    return x.detach() <= NEG


def same_scores(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Scores agree: masked in the same places, and close where not masked.

    >>> s = torch.tensor([[1.0, float("-inf")]])
    >>> same_scores(torch.tensor([[1.0, -1e9]]), s), same_scores(torch.tensor([[1.0, 0.0]]), s)
    (True, False)
    """
    if tuple(a.shape) != tuple(b.shape) or not torch.equal(masked(a), masked(b)):
        return False
    keep = ~masked(b)
    return not bool(keep.any()) or close(a.detach()[keep], b.detach()[keep], b.dtype)


def strided(x: torch.Tensor) -> torch.Tensor:
    """``x`` with the same values, laid out with its first axis innermost: not contiguous, and
    ``.clone()`` keeps it so (as an encoder's time-major output seen batch-first)."""
    return x.movedim(0, -1).contiguous().movedim(-1, 0)


def lengths_mask(g: torch.Generator, B: int, S: int, lengths: Sequence[int] | None,
                 *, all_padded: bool = False) -> torch.Tensor:
    """(B, S) boolean mask, True at the first ``lengths[b]`` positions (at least one; fewer than S in
    every row if ``all_padded``)."""
    if lengths is None:
        top = S - 1 if all_padded and S > 1 else S
        lengths = torch.randint(1, top + 1, (B,), generator=g).tolist()
    return torch.arange(S)[None, :] < torch.tensor(lengths)[:, None]  # (B, S)


def randomize(module: ModuleT, seed: int, scale: float = 0.7) -> ModuleT:
    """Fill every parameter with seeded Gaussian noise of std ``scale`` (so that tanh does not saturate)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * scale)
    return module.eval()


# ------------------------------------------------------------- the random parts (hard attention)


def hard_inputs(seed: int, rows: int, S: int, d_v: int, *, masked: bool,
                dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``rows`` distinct score rows (every row padded if ``masked``, two real keys at least) and values."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(rows, S, generator=g, dtype=dtype) * 1.2
    values = torch.randn(rows, S, d_v, generator=g, dtype=dtype)
    if masked:
        lengths = [S - 1 - (r % max(1, S - 2)) for r in range(rows)]
        scores = scores.masked_fill(~lengths_mask(g, rows, S, lengths), float("-inf"))
    return scores, values


def tile(scores: torch.Tensor, values: torch.Tensor, copies: int, *,
         noncontiguous: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Row ``i`` of the result is base row ``i % rows``: (copies * rows, S), (copies * rows, S, d_v)."""
    scores, values = scores.repeat(copies, 1), values.repeat(copies, 1, 1)
    return (strided(scores), strided(values)) if noncontiguous else (scores, values)


def seeded(seed: int, fn: Callable[..., ResultT], *args: object, global_seed: int | None = None,
           **kwargs: object) -> ResultT:
    """Run ``fn`` with a generator seeded ``seed`` passed in and torch's global generator seeded too
    (``global_seed``, by default ``seed``); the global state is restored after."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed if global_seed is None else global_seed)
        return fn(*args, generator=torch.Generator().manual_seed(seed), **kwargs)


GENERATOR_IGNORED = ("two calls with generators in the same state gave different results: draw with the "
                     "generator you are given (e.g. torch.multinomial(..., generator=generator)), not torch's "
                     "global one, so that a seeded generator makes the draws reproducible")
