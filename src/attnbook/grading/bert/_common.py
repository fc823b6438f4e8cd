"""What chapter 3's parts share: the checks' private copies of the references, a small configuration."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from .._compare import close, require_tensor
from .._core import private_modules, run_method, run_student
from ..errors import CheckFailed

if TYPE_CHECKING:  # the checks build the private copy's class, which has the same fields
    from attnbook.bert import BertConfig

# The checks' own copies: a notebook that patched the public modules changes nothing here.
BERT, WP = private_modules("attnbook.bert", "attnbook.tokenizers.wordpiece")

IGNORE = -100  # the label of a position that carries no loss


def small_config(**overrides: object) -> BertConfig:
    """A small BertConfig for the checks (dropout off, so eval and train agree)."""
    fields = dict(vocab_size=23, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                  max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BERT.BertConfig(**{**fields, **overrides})


DEFAULT_DROPOUT = 0.1  # the dropout rate of BertEmbeddings and ClsClassifier when it is left out


def require_default_dropout(module: torch.nn.Module, args: tuple, expected: torch.Tensor, seed: int,
                            what: str, offset: torch.Tensor | float = 0.0, place: str = "as the last step") -> None:
    """``module``, built without a dropout rate, in training mode: its dropout, the last step but for an added
    ``offset``, must use the default rate 0.1 -- each value of the output less ``offset`` either 0 or the
    eval-mode value ``expected`` less ``offset``, / 0.9. ``place`` says where the statement puts the dropout."""
    run_method(module, "train", what=f"{what}.train")
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        out = require_tensor(run_student(module, *(a.clone() for a in args), what=f"{what}.forward"),
                             f"the output of {what}")
    run_method(module, "eval", what=f"{what}.eval")
    if out.shape != expected.shape:
        raise CheckFailed(f"in training mode the output of {what} should have the shape it has in eval mode")
    if close(out, expected):
        raise CheckFailed(f"built without a dropout rate, {what} drops nothing in training mode: dropout defaults "
                          f"to {DEFAULT_DROPOUT}")
    out, expected = out - offset, expected - offset
    kept = out != 0
    scale: Callable[[torch.Tensor], torch.Tensor] = lambda t: t / (1 - DEFAULT_DROPOUT)  # noqa: E731
    if close(out[kept], scale(expected[kept])):
        return
    ratio = (out[kept] / expected[kept]).median() if bool(kept.any()) else torch.tensor(1.0)
    if float(ratio) > 1 and close(out[kept], ratio * expected[kept]):
        raise CheckFailed(f"built without a dropout rate, {what} drops at rate {1 - 1 / float(ratio):.2f} in "
                          f"training mode: dropout defaults to {DEFAULT_DROPOUT}")
    raise CheckFailed(f"built without a dropout rate, {what} in training mode is not dropout at the default rate "
                      f"{DEFAULT_DROPOUT} {place}")
