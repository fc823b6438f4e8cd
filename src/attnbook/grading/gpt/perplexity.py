"""Part 6: ``perplexity(model, data) -> float``, on small random GPTs, against ``attnbook.gpt.perplexity``."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ..fixtures import perplexity_test_model
from ..steps import require_unchanged, snapshot
from ._common import GPT

if TYPE_CHECKING:  # GPT above is the checks' private copy of attnbook.gpt
    from attnbook.gpt import GPT as GPTModel

__all__ = ["check_perplexity"]


def _case(seed: int, n_tokens: int, block_size: int = 8, vocab_size: int = 12, *,
          strided: bool = False) -> Callable[[], tuple]:
    def make():
        g = torch.Generator().manual_seed(seed)
        data = torch.randint(vocab_size, (2 * n_tokens if strided else n_tokens,), generator=g)
        return perplexity_test_model(seed, vocab_size=vocab_size, block_size=block_size), data[::2 if strided else 1]

    return make


VISIBLE = (
    Case("a stream of whole windows", _case(21, 8 * 5 + 1)),
    Case("a last, shorter window", _case(22, 8 * 2 + 5)),  # windows of 8, 8 and 4 predictions
)


@torch.no_grad()
def token_nll(model: torch.nn.Module, data: torch.Tensor, block_size: int, *, stride: int | None = None,
              shift: bool = True) -> list[torch.Tensor]:
    """Negative log-likelihood of each predicted token, and each window's, as the windows are cut."""
    stride = block_size if stride is None else stride
    per_window = []
    for start in range(0, data.numel() - 1, stride):
        x = data[start:start + block_size]
        y = data[start + 1:start + block_size + 1]
        x = x[: y.numel()]
        if shift is False:
            y = x
        if x.numel() == 0:
            break
        logits, _ = model(x[None])
        per_window.append(F.cross_entropy(logits[0].double(), y, reduction="none"))
    return per_window


def _reference(model: GPTModel, data: torch.Tensor) -> float:
    """The reference's perplexity, on a copy of ``model`` made of the private reference's classes."""
    copy = GPT.GPT(GPT.GPTConfig(**asdict(model.config)))
    copy.load_state_dict(model.state_dict())
    return GPT.perplexity(copy.eval(), data.contiguous())


def diagnose(value: float, model: GPTModel, data: torch.Tensor) -> str:
    T = model.config.block_size
    windows = token_nll(model, data, T)
    nll = torch.cat(windows)
    mean = nll.mean().item()
    full = [w for w in windows if w.numel() == T] or windows
    known = [
        ("returned the mean loss; perplexity is its exponential, exp(mean negative log-likelihood)", mean),
        ("perplexity is exp(mean loss) with the loss in nats; 2 ** loss needs the loss in bits", 2 ** mean),
        ("each predicted token must count once: averaging the mean loss of each window gives the short last "
         "window too much weight", math.exp(torch.stack([w.mean() for w in windows]).mean().item())),
        ("the tokens of the last, shorter window are missing: every token after the first is predicted exactly "
         "once", math.exp(torch.cat(full).mean().item())),
        ("the targets must be the next tokens: the model's prediction at position t is scored against the token "
         "at t + 1", math.exp(torch.cat(token_nll(model, data, T, shift=False)).mean().item())),
        ("perplexity is the exponential of the mean negative log-likelihood (a geometric mean), not one over the "
         "mean probability", 1.0 / nll.neg().exp().mean().item()),
        ("the windows skip tokens: window j reads data[j*T : (j+1)*T] and predicts data[j*T+1 : (j+1)*T+1], so "
         "that every token after the first is predicted exactly once",
         math.exp(torch.cat(token_nll(model, data, T, stride=T + 1)).mean().item())),
    ]
    for message, variant in known:
        if math.isfinite(variant) and abs(value - variant) <= 1e-4 * max(1.0, abs(variant)):
            return message
    return ("the perplexity differs from exp(mean negative log-likelihood of every token after the first, each "
            "predicted from the tokens before it in its window)")


def _check(fn: Callable) -> Callable:
    def check(model, data):
        before = snapshot(data)
        try:
            result = run_student(fn, model, data, what="perplexity")
        except CheckFailed as err:
            if "more than the context block_size" in str(err):  # the model's own error, which names the size
                raise CheckFailed("perplexity fed the model windows longer than its context: cut windows of "
                                  "model.config.block_size tokens (the context differs between models)") from None
            raise
        require_unchanged(before, data, message="perplexity changed data in place")
        if isinstance(result, torch.Tensor) and result.numel() == 1:
            result = result.item()
        if isinstance(result, bool) or not isinstance(result, (int, float)):
            raise CheckFailed(f"perplexity should return a number (a Python float), got {type(result).__name__}")
        value, expected = float(result), _reference(model, data)
        if not math.isfinite(value) or abs(value - expected) > 1e-4 * max(1.0, expected):
            raise CheckFailed(diagnose(value, model, data))

    return check


FORBIDDEN = ("attnbook.gpt.perplexity", "attnbook.gpt.stream_loss", "attnbook.gpt.next_token_loss")

check_perplexity = Part(name="check_perplexity", visible=VISIBLE, check=_check, forbidden=FORBIDDEN)
