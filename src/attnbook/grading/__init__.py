"""The checks that the test cells of the exercise notebooks call.

A test cell runs a check twice: ``check_x(student_fn)`` runs the visible cases
and raises :class:`CheckFailed` with an explanation at the first failure; the
hidden part, ``check_x(student_fn, points=N)``, runs every case and returns the
points earned, which nbgrader reads as partial credit. See ``_core`` for how
stderr, references and tampering are handled.

>>> from attnbook.attention import scaled_dot_product_attention as ref
>>> def mine(q, k, v, mask=None):
...     return ref(q, k, v, mask)
>>> check_scaled_dot_product_attention(mine)
Traceback (most recent call last):
...
attnbook.grading._core.CheckFailed: scaled_dot_product_attention calls the reference implementation `attnbook.attention.scaled_dot_product_attention`; write the computation yourself
"""

from ._core import CheckFailed
from .transformer import check_attention_masks, check_scaled_dot_product_attention

__all__ = ["CheckFailed", "check_scaled_dot_product_attention", "check_attention_masks"]
