"""The checks that the test cells of the exercise notebooks call.

A test cell runs a check twice: ``check_x(student_fn)`` runs the visible cases
and raises :class:`CheckFailed` with an explanation at the first failure; the
hidden part, ``check_x(student_fn, points=N)``, runs every case and returns the
points earned, which nbgrader reads as partial credit. See ``_core`` for how
stderr, references and tampering are handled.

Each chapter's checks live in their own module, named after the package
module they grade; the notebook's test cells import them from there:

* chapter 1 (``solutions/01-rnn-attention``): :mod:`attnbook.grading.rnn`;
* chapter 2 (``solutions/02-transformer``): :mod:`attnbook.grading.transformer`,
  re-exported here, in the notebook's order:
  :func:`check_scaled_dot_product_attention`, :func:`check_attention_masks`,
  :func:`check_masks`, :func:`check_sinusoidal_positions`,
  :func:`check_multi_head_attention`, :func:`check_encoder_block`,
  :func:`check_decoder_block`, :func:`check_greedy_decode` (with
  :func:`greedy_test_model`, the random model it decodes with);
* chapter 4 (``solutions/04-gpt-bpe``): :mod:`attnbook.grading.gpt`.

>>> from attnbook.attention import scaled_dot_product_attention as ref
>>> def mine(q, k, v, mask=None):
...     return ref(q, k, v, mask)
>>> check_scaled_dot_product_attention(mine)
Traceback (most recent call last):
...
attnbook.grading._core.CheckFailed: scaled_dot_product_attention calls the reference implementation `attnbook.attention.scaled_dot_product_attention`; write the computation yourself

A class is trapped too: building the reference, or inheriting from it, fails.

>>> import attnbook.attention
>>> class Mine(attnbook.attention.MultiHeadAttention):
...     def forward(self, query, key=None, value=None, mask=None):
...         return super().forward(query, key, value, mask, need_weights=True)
>>> check_multi_head_attention(Mine)
Traceback (most recent call last):
...
attnbook.grading._core.CheckFailed: MultiHeadAttention(d_model, num_heads) calls the reference implementation `attnbook.attention.MultiHeadAttention`; write the computation yourself
"""

from ._core import CheckFailed
from .transformer import (
    check_attention_masks,
    check_decoder_block,
    check_encoder_block,
    check_greedy_decode,
    check_masks,
    check_multi_head_attention,
    check_scaled_dot_product_attention,
    check_sinusoidal_positions,
    greedy_test_model,
)

__all__ = [
    "CheckFailed",
    "check_scaled_dot_product_attention",
    "check_attention_masks",
    "check_masks",
    "check_sinusoidal_positions",
    "check_multi_head_attention",
    "check_encoder_block",
    "check_decoder_block",
    "check_greedy_decode",
    "greedy_test_model",
]
