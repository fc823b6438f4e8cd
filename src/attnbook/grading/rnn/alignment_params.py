"""Part 7: the number of learned parameters of an alignment model, predicted from its formula.

The student's ``alignment_params(query_size, key_size, attn_size, method)``
returns a count, compared with the real module's
``sum(p.numel() for p in module.parameters())``: the additive score has
``W`` (``query_size x attn_size``, no bias), ``U`` with its bias ``b``
(``key_size x attn_size + attn_size``) and ``v`` (``attn_size``, no bias);
Luong's ``general`` score one matrix ``W_a`` (``query_size x key_size``, no
bias), and ``dot`` nothing. A wrong count is explained by the mistake that
gives it. A transposed matrix has the same count, so no count can tell it.

>>> try:
...     check_alignment_params(lambda q, k, a, method="additive": 0)
... except CheckFailed as err:
...     for line in str(err).split(" -- "):
...         print(line)
additive, query_size=3, key_size=5, attn_size=4: the count is 0, not the module's 40
the additive score has parameters: W, U with its bias b, and v
"""

from __future__ import annotations

import numbers
from collections.abc import Callable

from .._core import run_student
from ..engine import Case, Part
from ..errors import CheckFailed
from ._common import ATT

# LuongAttention only: AdditiveAttention cannot be refused here. Part 4's decoder builds it, and the worker runs
# every cell before this part's test cell (the decoder's try cell too): refusing it would flag every submission.
FORBIDDEN = ("attnbook.attention.LuongAttention",)

WHAT = "alignment_params"


def _case(query_size, key_size, attn_size, method="additive"):
    """(query_size, key_size, attn_size, method): the sizes of one alignment model."""

    def make():
        # a new string, as the judge's worker gets it: an answer that compares with `is` fails here too
        return query_size, key_size, attn_size, (method + " ")[:-1]

    return make


def module_params(query_size: int, key_size: int, attn_size: int | None, method: str) -> int:
    """The learned parameters of the checker's copy of the module: ``AdditiveAttention`` or ``LuongAttention``."""
    if method == "additive":
        module = ATT.AdditiveAttention(query_size, key_size, attn_size)
    else:
        module = ATT.LuongAttention(query_size, key_size, method=method)
    return sum(p.numel() for p in module.parameters())


def _mistakes(q: int, k: int, a: int | None, method: str) -> list[tuple[str, int]]:
    """(explanation, the count it gives) for the known mistakes, the most telling first."""
    if method == "dot":
        return [("the dot score s^T h_j has no parameter at all: it compares the state with the key directly, "
                 "which is why it needs query_size == key_size", q * k),
                ("the dot score s^T h_j has no parameter at all", q)]
    if method == "general":
        return [("W_a has no bias: the general score s^T W_a h_j is bilinear (a bias would add a term that "
                 "does not depend on the state)", q * k + q),
                ("W_a has no bias: the general score s^T W_a h_j is bilinear", q * k + k),
                ("this is the additive score's count: the general score has no hidden layer, only W_a "
                 "(query_size x key_size), and attn_size plays no part", (q + k) * a + 2 * a if a else -1)]
    assert a is not None
    right = q * a + k * a + a + a
    return [
        ("attn_size parameters are missing: v (v^T tanh(...) turns each hidden vector into one score) "
         "or U's bias b (nn.Linear(key_size, attn_size) has a bias of attn_size numbers)", right - a),
        ("the bias is counted twice: the formula has one bias b, in U; W has none (two biases added before "
         "the tanh act as one, so a second one learns nothing new)", right + a),
        ("v has no bias: a constant added to every score of a row does not change the softmax, so it "
         "could not be learned", right + 1),
        ("each bias was counted with the layer's input size: nn.Linear(n_in, n_out)'s bias has n_out "
         "numbers (here attn_size, and 1 for v)", q * a + k * a + k + a),
        ("attn_size was taken for the layers' width in place of the inputs' sizes: W is "
         "query_size x attn_size and U is key_size x attn_size", 2 * a * a + a + a),
    ]


def _count(result: object) -> int:
    if isinstance(result, bool) or not isinstance(result, numbers.Real) or float(result) != int(float(result)):
        raise CheckFailed(f"{WHAT} should return a whole number (an int), got {result!r}")
    return int(float(result))


def _check(fn: Callable) -> Callable:
    def check_one(query_size, key_size, attn_size, method):
        got = _count(run_student(fn, query_size, key_size, attn_size, method=method, what=WHAT))
        right = module_params(query_size, key_size, attn_size, method)
        if got == right:
            return
        sizes = f"{method}, query_size={query_size}, key_size={key_size}, attn_size={attn_size}"
        known = [message for message, count in _mistakes(query_size, key_size, attn_size, method) if count == got]
        if got == 0 and method != "dot":
            known = [f"the {method} score has parameters: "
                     + ("W, U with its bias b, and v" if method == "additive" else "the matrix W_a")]
        hint = known[0] if known else ("count each nn.Linear: in_features x out_features weights, plus "
                                       "out_features if it has a bias")
        raise CheckFailed(f"{sizes}: the count is {got}, not the module's {right} -- {hint}")

    return check_one


check_alignment_params = Part(
    name="check_alignment_params",
    visible=(
        Case("additive", _case(3, 5, 4)),
        Case("general", _case(3, 5, 4, "general")),
        Case("dot, attn_size unused", _case(6, 6, None, "dot")),
    ),
    check=_check,
    forbidden=FORBIDDEN,
)
