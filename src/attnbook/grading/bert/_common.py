"""What chapter 3's parts share: the checks' private copies of the references, a small configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._core import private_modules

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
