"""Part 15: ``beam_step(scores, log_probs, beam_size) -> (scores, parents, tokens)``, one step of beam search.

The ``K`` live beams have total log-probabilities ``scores`` (K,); their next
tokens ``log_probs`` (K, V). Every extension scores
``scores[k] + log_probs[k, v]``; the best ``min(beam_size, K * V)`` survive,
best first, ties broken by the lower beam and then the lower token, each with
its parent beam and its token as integer tensors. The reference is
:func:`attnbook.beam.beam_step`. The named mistakes: the beams' scores
ignored, one token per beam instead of the best over all, the worst first,
parent and token taken from the flat index the wrong way, probabilities
multiplied instead of log-probabilities added, ties broken otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from .._compare import close, require_tensor
from .._core import private_modules, run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_unchanged, snapshot

(BEAM,) = private_modules("attnbook.beam")  # the checker's own copy

WHAT = "beam_step"


def _case(seed: int, K: int, V: int, beam_size: int, dtype: torch.dtype = torch.float32, *,
          ties: bool = False, strided: bool = False) -> Callable[[], tuple]:
    """Scores (K,) and log-probabilities (K, V) from a seed; ``ties``: whole numbers, so that many extensions
    score the same; ``strided``: the log-probabilities are a transposed view."""

    def make():
        g = torch.Generator().manual_seed(seed)
        if ties:
            scores = -torch.randint(0, 2, (K,), generator=g).to(dtype)
            log_probs = -torch.randint(0, 3, (K, V), generator=g).to(dtype)
        else:
            scores = -3 * torch.rand(K, generator=g, dtype=dtype)
            log_probs = F.log_softmax(2 * torch.randn(K, V, generator=g, dtype=dtype), dim=-1)
        if strided:
            log_probs = log_probs.t().contiguous().t()  # (K, V), column-major
        return scores, log_probs, beam_size

    return make


VISIBLE = (
    Case("three beams, five tokens", _case(0, 3, 5, 4)),
    Case("the first step: one beam", _case(1, 1, 6, 3)),
    Case("ties: the lower beam, then the lower token", _case(2, 5, 6, 10, ties=True)),
    Case("a beam wider than the extensions", _case(3, 2, 3, 10)),
    Case("float64", _case(4, 4, 7, 5, torch.float64)),
)


def _mistakes(scores: torch.Tensor, log_probs: torch.Tensor, n: int) -> list[tuple[str, Callable[[], list]]]:
    K, V = log_probs.shape
    total = (scores[:, None] + log_probs).double()

    def keep(values: torch.Tensor) -> list:
        order = torch.sort(values.flatten(), descending=True, stable=True).indices[:n]
        return [values.flatten()[order].tolist(), (order // V).tolist(), (order % V).tolist()]

    def per_beam() -> list:
        best, token = total.max(dim=1)  # (K,): one token per beam
        order = torch.sort(best, descending=True, stable=True).indices[:n]
        return [best[order].tolist(), order.tolist(), token[order].tolist()]

    return [
        ("the beams' own scores are ignored: an extension scores scores[k] + log_probs[k, v], the whole "
         "prefix's log-probability, not the next token's alone", lambda: keep(log_probs.double())),
        ("each beam keeps only its best token: the best extensions are taken over all K x V of them, so one "
         "beam may have several and another none", per_beam),
        ("the extensions come worst first: sort by score, descending", lambda: [
            list(reversed(x)) for x in keep(total)]),
    ]


def _check(fn: Callable) -> Callable:
    def check_one(scores, log_probs, beam_size):
        before = snapshot(scores, log_probs)
        result = run_student(fn, scores, log_probs, beam_size, what=WHAT)
        require_unchanged(before, scores, log_probs, message=f"{WHAT} changed its inputs in place")
        if not isinstance(result, tuple) or len(result) != 3:
            raise CheckFailed(f"{WHAT} should return a tuple (scores, parents, tokens)")
        new, parents, tokens = (require_tensor(x, f"{name} returned by {WHAT}")
                                for x, name in zip(result, ("scores", "parents", "tokens"), strict=True))
        want, want_parents, want_tokens = BEAM.beam_step(scores, log_probs, beam_size)
        n = len(want)
        got = [new.double().flatten().tolist(), parents.flatten().tolist(), tokens.flatten().tolist()]
        shaped = all(tuple(x.shape) == (n,) for x in (new, parents, tokens))
        integer = not (parents.is_floating_point() or tokens.is_floating_point())
        if shaped and integer and got[1:] == [want_parents.tolist(), want_tokens.tolist()] and \
                close(new, want, scores.dtype):
            return
        for message, compute in _mistakes(scores, log_probs, n):
            wrong = compute()
            if got[1:] == wrong[1:] and len(got[0]) == len(wrong[0]) and \
                    torch.allclose(torch.tensor(got[0]), torch.tensor(wrong[0]), atol=1e-5):
                raise CheckFailed(message)
        if not shaped:
            raise CheckFailed(f"{WHAT} should return {n} extensions, (n,) each: min(beam_size, K * V) = "
                              f"min({beam_size}, {log_probs.shape[0]} x {log_probs.shape[1]})")
        if not integer:
            raise CheckFailed("parents and tokens should be integer tensors (torch.long): they index beams "
                              "and tokens")
        K, V = log_probs.shape
        real = all(0 <= k < K and 0 <= v < V for k, v in zip(got[1], got[2], strict=True))
        if real and close(torch.tensor(sorted(got[0], reverse=True)), want.double(), scores.dtype) and close(
                new.double(), (scores[:, None] + log_probs).double()[parents, tokens], scores.dtype):
            raise CheckFailed("the right scores, with equal extensions in another order: best first, and among "
                              "equal scores the lower beam, then the lower token (torch.topk promises neither "
                              "which equal extensions it keeps nor their order)")
        if got[1:] == [want_parents.tolist(), want_tokens.tolist()]:
            raise CheckFailed("the right extensions, but their scores are not scores[k] + log_probs[k, v] "
                              "(log-probabilities add; probabilities would multiply)")
        flat = [p * V + t for p, t in zip(want_parents.tolist(), want_tokens.tolist(), strict=True)]
        if got[1:] == [[f % log_probs.shape[0] for f in flat], [f // log_probs.shape[0] for f in flat]] and \
                log_probs.shape[0] != V:
            raise CheckFailed("parent and token come from the flat index k * V + v the wrong way: the parent "
                              "is index // V, the token index % V")
        raise CheckFailed("these are not the best min(beam_size, K * V) extensions by scores[k] + log_probs[k, v]")

    return check_one


check_beam_step = Part(name="check_beam_step", visible=VISIBLE, check=_check,
                       forbidden=("attnbook.beam.beam_step", "attnbook.beam.beam_search"))
