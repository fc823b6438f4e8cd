"""A test cell as the judge reads it: the check calls it makes, parsed once (never executed).

A test cell of the source notebook imports its checks from ``attnbook.grading``
and calls each on the names of the student's objects, the hidden test with its
points. :func:`parse_test_cell` reads those calls; any other statement is an
error of the source notebook.

>>> [(c.check.name, c.names, c.points) for c in parse_test_cell(
...     "from attnbook.grading.transformer import check_masks\\n"
...     "check_masks(causal_mask, padding_mask)\\ncheck_masks(causal_mask, padding_mask, points=2)")]
[('check_masks', ('causal_mask', 'padding_mask'), None), ('check_masks', ('causal_mask', 'padding_mask'), 2)]
"""

from __future__ import annotations

import ast
import functools
import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnbook.grading.engine import Part


@dataclass(frozen=True)
class TestCall:
    """One call in a test cell: ``check(*names, points=points)``."""

    __test__ = False  # not a pytest test class, despite its name

    check: Part
    names: tuple[str, ...]
    points: float | None


@functools.cache
def parse_test_cell(source: str) -> tuple[TestCall, ...]:
    """The check calls of a test cell; :class:`ValueError` for any other kind of statement.

    Cached: a class's submissions share their test cells, and judges forked after a first parse
    inherit it.
    """
    imported, calls = {}, []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("attnbook.grading"):
            for alias in node.names:
                imported[alias.asname or alias.name] = getattr(importlib.import_module(node.module), alias.name)
            continue
        call = node.value if isinstance(node, ast.Expr) else None
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in imported
                and all(isinstance(a, ast.Name) for a in call.args)
                and all(k.arg == "points" and isinstance(k.value, ast.Constant) for k in call.keywords)):
            given = call.keywords[0].value if call.keywords else None
            points: Any = given.value if isinstance(given, ast.Constant) else None  # the number the cell wrote
            names = tuple(a.id for a in call.args if isinstance(a, ast.Name))  # all are (checked above)
            calls.append(TestCall(imported[call.func.id], names, points))
            continue
        raise ValueError(f"a test cell may only import checks and call them (line {node.lineno})")
    from attnbook.grading.engine import Part  # here: the grader's light commands never import torch

    if not calls or not all(isinstance(c.check, Part) for c in calls):
        raise ValueError("a test cell must call a check (an attnbook.grading Part)")
    return tuple(calls)


def checked_names(source: str) -> set[str]:
    """The names a test cell passes to its checks; none for a cell that is not a test cell.

    >>> sorted(checked_names("from attnbook.grading.transformer import check_masks\\ncheck_masks(causal_mask, pad)"))
    ['causal_mask', 'pad']
    """
    try:
        return {name for call in parse_test_cell(source) for name in call.names}
    except (ValueError, SyntaxError):  # judged (and failed) as its part
        return set()
