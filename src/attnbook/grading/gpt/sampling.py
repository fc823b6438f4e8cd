"""Part 5: ``sample_next(logits (B, V), temperature, top_k, generator) -> ids (B,)``, checked by counting draws.

Each case repeats a few rows of logits thousands of times in one batch and
counts the draws of every token. A token whose probability is zero must never
be drawn; for the others the count ``c`` of ``N`` draws must satisfy
``|c - N p| <= 6 sqrt(N p (1 - p)) + 2``, a per-token binomial bound that a
correct sampler breaks with probability below ``1e-8`` per token, while the
named mistakes miss it by tens of standard deviations. The grader seeds every
draw, so a grade never changes between runs. The generator is checked apart:
generators seeded alike must repeat a draw, generators seeded differently
must not. A case in mode ``"defaults"`` calls ``sample_next(logits)`` alone:
the signature's defaults, ``temperature=1.0, top_k=None``, are part of the task.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from .._compare import require_tensor
from .._core import run_student
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import GPT

__all__ = ["check_sample_next"]

DRAWS = 8000  # draws per row of logits in one case
Z = 6.0  # per-token bound in standard deviations
OUTSIDE_TOP_K = "tokens outside the top k were drawn: only the top_k most likely tokens may be drawn"


def _case(seed: int, rows: int, V: int, temperature: float, top_k: int | None, *mode: str,
          dtype: torch.dtype = torch.float32) -> Callable[[], tuple]:
    """``rows`` distinct rows of logits (rows, V), each to be repeated ``DRAWS`` times."""

    def make():
        g = torch.Generator().manual_seed(seed)
        distinct = (1.5 * torch.randn(rows, V, generator=g)).to(dtype)  # (rows, V), no ties
        return (distinct, temperature, top_k, seed, *mode)

    return make


VISIBLE = (
    Case("temperature 1", _case(11, 2, 8, 1.0, None)),
    Case("temperature 0.5", _case(12, 1, 8, 0.5, None)),
    Case("top-k", _case(13, 2, 10, 1.0, 3)),
    Case("top_k >= vocabulary keeps every token", _case(14, 1, 5, 1.0, 7)),
    Case("a seeded generator repeats the draw", _case(15, 1, 6, 1.0, None, "repeat")),
    Case("the defaults: temperature 1, every token", _case(16, 2, 6, 1.0, None, "defaults")),
)
EVERY_TOKEN = ("top_k >= vocabulary keeps every token: with a top_k of V or more, draw from all V tokens, as "
               "top_k=None does")


def probs(logits: torch.Tensor, temperature: float, top_k: int | None) -> torch.Tensor:
    return GPT.next_token_probs(logits.double(), temperature, top_k).double()


def variants(distinct: torch.Tensor, temperature: float, top_k: int | None) -> list[tuple[str, torch.Tensor]]:
    """(message, probabilities (rows, V)) of the mistakes; multinomial renormalises, so do they."""
    V = distinct.shape[-1]
    x = distinct.double()
    k = top_k if top_k is not None and top_k < V else None

    def normalise(p):
        return p / p.sum(-1, keepdim=True)

    out = [("every draw is the most likely token: that is greedy decoding; draw with "
            "torch.multinomial(probs, 1) instead of taking the argmax", F.one_hot(x.argmax(-1), V).double())]
    if temperature != 1.0:
        out += [
            ("the distribution does not change with the temperature: divide the logits by the temperature "
             "*before* the softmax (dividing the probabilities after it changes nothing once they are "
             "renormalised)", probs(x, 1.0, top_k)),
            ("the logits were multiplied by the temperature: divide them, so that a temperature below 1 sharpens "
             "the distribution and one above 1 flattens it", probs(x * temperature, 1.0, top_k)),
        ]
    if k is not None:
        p = torch.softmax(x / temperature, -1)
        kept = p >= p.topk(k, -1).values[..., -1:]
        smallest = p <= (-p).topk(k, -1).values.neg()[..., -1:]
        out += [
            ("top_k is ignored: only the top_k most likely tokens may be drawn", probs(x, temperature, None)),
            ("after keeping the top k, the probabilities were renormalised with a second softmax, which gives the "
             "dropped tokens weight again: divide the kept probabilities by their sum, or set the other logits to "
             "-inf before a single softmax", torch.softmax(p * kept, -1)),
            ("top_k kept the k *least* likely tokens: keep the k largest logits", normalise(p * smallest)),
            ("all kept tokens are drawn equally often: draw them in proportion to their probabilities",
             normalise(kept.double())),
        ]
        if k > 1:
            out.append(("top_k keeps the wrong number of tokens: exactly top_k tokens may be drawn, here one fewer",
                        probs(x, temperature, k - 1)))
        out.append(("top_k keeps the wrong number of tokens: exactly top_k tokens may be drawn, here one more",
                    probs(x, temperature, k + 1)))
    out.append(("all tokens are drawn equally often: draw them in proportion to softmax(logits / temperature)",
                torch.full_like(x, 1.0 / V)))
    return out


def fits(counts: torch.Tensor, p: torch.Tensor, n: int) -> bool:
    """Whether draws ``counts`` (rows, V) of ``n`` each are consistent with probabilities ``p`` (rows, V)."""
    if bool(((p == 0) & (counts > 0)).any()):
        return False
    mean = n * p
    sd = (n * p * (1 - p)).sqrt()
    return bool(((counts - mean).abs() <= Z * sd + 2).all())


def _draw(fn: Callable, logits: torch.Tensor, temperature: float, top_k: int | None, seed: int, global_seed: int,
          defaults: bool = False) -> torch.Tensor:
    """One call of the student's sampler with a seeded generator (``defaults``: ``fn(logits)`` alone, drawing
    from the seeded global generator); the notebook's random state is kept."""
    before = snapshot(logits)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(global_seed)
        args = () if defaults else (temperature, top_k, torch.Generator().manual_seed(seed))
        try:
            result = run_student(fn, logits, *args, what="sample_next")
        except CheckFailed as err:
            if top_k is not None and top_k >= logits.shape[-1] and str(err).startswith("sample_next raised"):
                raise err.hinted(f" ({EVERY_TOKEN})") from None
            raise
    require_unchanged(before, logits, message="sample_next changed the logits in place (for example with div_); "
                                              "compute on new tensors")
    ids = require_tensor(result, "the result of sample_next")
    if ids.dim() == 2 and ids.shape[-1] == 1:
        ids = ids[:, 0]  # (B, 1), as torch.multinomial returns it, is fine too
    require_shape(ids, (logits.shape[0],), f"sample_next should return one id per row of logits, shape (B,), "
                                           f"got {tuple(ids.shape)}")
    if ids.is_floating_point() or ids.dtype == torch.bool:
        raise CheckFailed(f"sample_next should return integer token ids (torch.long), got {ids.dtype}")
    if bool(((ids < 0) | (ids >= logits.shape[-1])).any()):
        raise CheckFailed("sample_next returned ids outside 0 .. V - 1")
    return ids.long()


def _check_generator(fn: Callable, logits: torch.Tensor, temperature: float, top_k: int | None, seed: int,
                     ids: torch.Tensor, mode: str) -> None:
    if mode == "repeat":
        if not torch.equal(ids, _draw(fn, logits, temperature, top_k, seed, seed + 2)):
            raise CheckFailed("two calls with generators seeded alike gave different draws: pass generator "
                              "to torch.multinomial (..., generator=generator)")
    elif torch.equal(ids, _draw(fn, logits, temperature, top_k, seed + 1000, seed + 1)):
        raise CheckFailed("the draws do not depend on the generator: generators seeded differently gave the same "
                          "draws; draw with torch.multinomial(..., generator=generator), and do not reseed")


def _check(fn: Callable) -> Callable:
    def check(distinct, temperature, top_k, seed, *mode):
        rows, V = distinct.shape
        if mode == ("one",):  # a single row, a few times: the shape and the tokens allowed
            allowed = probs(distinct, temperature, top_k)[0] > 0
            for k in range(3):
                (i,) = _draw(fn, distinct, temperature, top_k, seed + k, seed + k).tolist()
                if not allowed[i]:
                    raise CheckFailed(OUTSIDE_TOP_K)
            return
        logits = distinct.repeat_interleave(DRAWS, dim=0)  # (rows * N, V): row r repeated N times
        if mode == ("strided",):
            logits = logits.t().contiguous().t()  # the same values, column-major
        defaults = mode == ("defaults",)
        if defaults:  # sample_next(logits): the defaults temperature=1.0, top_k=None
            temperature, top_k = 1.0, None
        ids = _draw(fn, logits, temperature, top_k, seed, seed + 1, defaults)
        if mode and mode[0] in ("repeat", "seeds"):
            _check_generator(fn, logits, temperature, top_k, seed, ids, mode[0])
        counts = F.one_hot(ids.view(rows, DRAWS), V).sum(1).double()  # (rows, V)
        expected = probs(distinct, temperature, top_k)
        if not fits(counts, expected, DRAWS):
            outside = top_k is not None and bool(((expected == 0) & (counts > 0)).any())
            fallback = OUTSIDE_TOP_K if outside else ("the draws do not follow softmax(logits / temperature) "
                                                      "restricted to the top_k largest logits")
            if defaults:
                fallback = ("called as sample_next(logits), the draws do not follow softmax(logits): keep the "
                            "defaults of the signature, temperature=1.0 and top_k=None")
            raise first_match(counts, variants(distinct, temperature, top_k), fallback,
                              matches=lambda got, variant: fits(got, variant, DRAWS))

    return check


check_sample_next = Part(name="check_sample_next", visible=VISIBLE, check=_check,
                         forbidden=("attnbook.gpt.next_token_probs", "attnbook.gpt.generate"))
