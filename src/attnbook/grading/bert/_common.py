"""What chapter 3's parts share: the checks' private copies of the references, small conversions.

>>> as_id_list(torch.tensor([2, 5, 3]), "ids")
[2, 5, 3]
"""

from __future__ import annotations

import importlib.util

import torch

from .._core import private_modules
from ..errors import CheckFailed

# The checks' own copies: a notebook that patched the public modules changes nothing here.
BERT, WP = private_modules("attnbook.bert", "attnbook.tokenizers.wordpiece")

IGNORE = -100  # the label of a position that carries no loss


def small_config(**overrides: object):
    """A small BertConfig for the checks (dropout off, so eval and train agree)."""
    fields = dict(vocab_size=23, hidden_size=8, num_hidden_layers=2, num_attention_heads=2, intermediate_size=16,
                  max_position_embeddings=16, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BERT.BertConfig(**{**fields, **overrides})


def as_id_list(result: object, what: str) -> list[int]:
    """``result`` (a list or a 1-D tensor of ints) as a list of Python ints, or a clear failure."""
    if isinstance(result, torch.Tensor):
        result = result.tolist()
    if not isinstance(result, (list, tuple)) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in result
    ):
        raise CheckFailed(f"{what} should be a list of ints, got {type(result).__name__}")
    return list(result)


def available(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The dotted names in ``paths`` whose top-level package is installed (optional libraries)."""
    return tuple(p for p in paths if importlib.util.find_spec(p.split(".", 1)[0]) is not None)
