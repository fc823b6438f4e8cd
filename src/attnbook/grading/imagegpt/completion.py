"""Part 5: ``complete(model, tokens, rows_kept, temperature, generator)``, checked by counting draws.

A case completes ``DRAWS`` copies of one image of a small random ImageGPT
(sharp predictions, so that mistakes show) with the first ``rows_kept`` rows
given. The kept rows must come back unchanged, exactly. The first sampled
pixel must follow ``softmax(logits / temperature)``; the second must follow
the model's prediction *given the first pixel as drawn*, so its counts are
compared with the sum over the copies of those probabilities; a pixel that
holds the input's value in every copy, against the odds, was never drawn. Each count
must be within ``6`` standard deviations (plus 2) of its expectation, which
a right answer breaks with probability below ``1e-8``. The generator is
checked apart: generators seeded alike must repeat a completion, generators
seeded differently must not.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from attnbook.imagegpt import ImageGPT, ImageGPTConfig

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..fixtures import far_from_uniform
from ..steps import require_unchanged, snapshot
from ._common import require_ids

__all__ = ["check_complete", "completion_test_model"]

DRAWS = 2000  # copies of the image completed in one call
Z = 6.0  # bound in standard deviations
LOG_NEVER = -20.0  # log-probability below which B identical draws of a pixel mean it was not drawn at all


def completion_test_model(seed: int = 0, *, height: int = 3, width: int = 4, vocab_size: int = 6) -> ImageGPT:
    """A small random ImageGPT whose predictions are far from uniform, in eval mode."""
    cfg = ImageGPTConfig(vocab_size=vocab_size, height=height, width=width, n_layer=1, n_head=2, n_embd=16)
    return far_from_uniform(lambda: ImageGPT(cfg), seed, 0.7)


def _case(seed: int, rows_kept: int, temperature: float, *mode: str, H: int = 3, W: int = 4,
          B: int = DRAWS) -> Callable[[], tuple]:
    def make():
        model = completion_test_model(seed, height=H, width=W)
        g = torch.Generator().manual_seed(seed)
        image = torch.randint(0, 6, (1, H, W), generator=g)
        tokens = image.expand(B, H, W).clone()  # (B, H, W): the same image B times
        if mode == ("strided",):
            tokens = tokens.transpose(1, 2).contiguous().transpose(1, 2)  # the same values, not contiguous
        return (model, tokens, rows_kept, temperature, seed, *mode)

    return make


VISIBLE = (
    Case("keep 2 rows, temperature 1", _case(11, 2, 1.0)),
    Case("temperature 0.4", _case(12, 2, 0.4, W=2)),
    Case("a seeded generator repeats the completion", _case(13, 2, 1.0, "repeat", W=2, B=100)),
    # complete(model, tokens, rows_kept) alone: temperature left to its default, 1.0
    Case("the default temperature", _case(14, 2, 1.0, "defaults", W=2)),
)


@torch.no_grad()
def _probs(model: ImageGPT, seq: torch.Tensor, t: int, temperature: float) -> torch.Tensor:
    """p(pixel t | pixels before it) of each row of ``seq`` (n, >= t + 1): (n, V), float64."""
    return torch.softmax(model(seq[:, : t + 1])[:, t].double() / temperature, dim=-1)


def fits(counts: torch.Tensor, expected: torch.Tensor, variance: torch.Tensor) -> bool:
    return bool(((counts - expected).abs() <= Z * variance.sqrt() + 2).all())


def _follows(values: torch.Tensor, p: torch.Tensor) -> bool:
    """Whether draws ``values`` (n,), value i drawn from ``p[i]`` (n, V), are consistent with those probabilities."""
    counts = F.one_hot(values, p.shape[1]).sum(0).double()  # (V,)
    return fits(counts, p.sum(0), (p * (1 - p)).sum(0))


def _run(fn: Callable, model: ImageGPT, tokens: torch.Tensor, rows_kept: int, temperature: float, seed: int,
         global_seed: int, defaults: bool = False) -> torch.Tensor:
    """One call of the student's complete with a seeded generator (``defaults``: ``complete(model, tokens,
    rows_kept)`` alone, drawing from the seeded global generator); the notebook's random state is kept."""
    before = snapshot(tokens)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(global_seed)
        args = () if defaults else (temperature, torch.Generator().manual_seed(seed))
        result = run_student(fn, model, tokens, rows_kept, *args, what="complete")
    require_unchanged(before, tokens, message="complete changed its input tokens in place: fill a copy")
    out = require_ids(result, "the result of complete", tuple(tokens.shape), "(B, H, W), like tokens")
    if bool(((out < 0) | (out >= model.config.vocab_size)).any()):
        raise CheckFailed("complete returned pixel values outside 0 .. V - 1")
    return out


def _require_drawn(model: ImageGPT, seq: torch.Tensor, got: torch.Tensor, t: int, W: int,
                   temperature: float) -> None:
    """Fail if a pixel from ``t`` on holds the input's value in all B copies, which drawing makes all but
    impossible: that pixel was never drawn. ``seq`` and ``got`` are the input and the result, (B, H*W)."""
    for i in range(t, seq.shape[1]):
        if bool((got[:, i] == seq[:, i]).all()):
            p = _probs(model, got, i, temperature).gather(1, seq[:, i : i + 1])  # (B, 1): p(that value)
            if float(p.log().sum()) < LOG_NEVER:
                raise CheckFailed(f"pixel {i} (row {i // W}, column {i % W}) was not drawn: it holds the input's "
                                  "value in every completion; draw every pixel after the kept rows, up to the last "
                                  "one of the image")


def _check_distribution(model: ImageGPT, tokens: torch.Tensor, out: torch.Tensor, rows_kept: int,
                        temperature: float) -> None:
    B, H, W = tokens.shape
    seq, got = tokens.reshape(B, -1), out.reshape(B, -1)  # (B, H*W) in raster order
    t = rows_kept * W  # the first pixel to sample
    row_kept_too = bool((out[:, rows_kept] == tokens[:, rows_kept]).all())
    if row_kept_too and not _follows(got[:, t], _probs(model, seq, t, temperature)):
        raise CheckFailed(f"the row after the kept ones was not sampled: with rows_kept = {rows_kept}, sampling "
                          f"starts at row {rows_kept} (pixel rows_kept * W in raster order)")
    p_first = _probs(model, seq, t, temperature)  # (B, V)
    if not _follows(got[:, t], p_first):
        logits = model(seq[:, : t + 1])[:, t].double()
        if torch.equal(got[:, t], logits.argmax(-1)):
            raise CheckFailed("every completion takes the most likely value: that is greedy decoding; draw each "
                              "pixel with torch.multinomial(probs, 1, generator=generator)")
        if temperature != 1.0 and _follows(got[:, t], torch.softmax(logits, -1)):
            raise CheckFailed("the draws do not change with the temperature: divide the logits by the "
                              "temperature before the softmax")
        if temperature != 1.0 and _follows(got[:, t], torch.softmax(logits * temperature, -1)):
            raise CheckFailed("the logits were multiplied by the temperature: divide them")
        _require_drawn(model, seq, got, t, W, temperature)
        raise CheckFailed("the first sampled pixel does not follow the model's prediction "
                          "softmax(logits[:, t] / temperature), where logits = model(seq)")
    if t + 1 < H * W:
        canvas = seq.clone()
        canvas[:, t] = got[:, t]  # the first pixel as drawn
        if not _follows(got[:, t + 1], _probs(model, canvas, t + 1, temperature)):
            if _follows(got[:, t + 1], _probs(model, seq, t + 1, temperature)):
                raise CheckFailed("each pixel must be predicted from the pixels sampled before it: write every "
                                  "sampled pixel into the sequence before predicting the next one")
            _require_drawn(model, seq, got, t + 1, W, temperature)
            raise CheckFailed("the second sampled pixel does not follow the model's prediction given the "
                              "pixels before it")
    _require_drawn(model, seq, got, t, W, temperature)


def _check(fn: Callable) -> Callable:
    def check(model, tokens, rows_kept, temperature, seed, *mode):
        if mode == ("defaults",):  # complete(model, tokens, rows_kept): the default temperature, 1.0
            temperature = 1.0
        out = _run(fn, model, tokens, rows_kept, temperature, seed, seed + 1, mode == ("defaults",))
        if not torch.equal(out[:, :rows_kept], tokens[:, :rows_kept]):
            raise CheckFailed("the kept rows changed: the first rows_kept rows are given and must come back "
                              "unchanged; sample only the pixels after them")
        if rows_kept == tokens.shape[1] or mode == ("one",):
            return
        if mode in (("repeat",), ("seeds",)):
            again = _run(fn, model, tokens, rows_kept, temperature, seed if mode == ("repeat",) else seed + 1000,
                         seed + 2 if mode == ("repeat",) else seed + 1)
            if mode == ("repeat",) and not torch.equal(out, again):
                raise CheckFailed("two calls with generators seeded alike gave different completions: pass "
                                  "generator to torch.multinomial(..., generator=generator)")
            if mode == ("seeds",) and torch.equal(out, again):
                raise CheckFailed("the completions do not depend on the generator: draw with "
                                  "torch.multinomial(..., generator=generator), and do not reseed")
            return
        try:
            _check_distribution(model, tokens, out, rows_kept, temperature)
        except CheckFailed as err:
            if mode != ("defaults",):
                raise
            raise CheckFailed(f"called as complete(model, tokens, rows_kept), without a temperature, it should "
                              f"sample at the default temperature 1.0: {err}") from None

    return check


FORBIDDEN = ("attnbook.imagegpt.sampling.complete", "attnbook.imagegpt.sampling.sample_images",
             "attnbook.gpt.generate", "attnbook.gpt.next_token_probs")

check_complete = Part(name="check_complete", visible=VISIBLE, check=_check, forbidden=FORBIDDEN)
