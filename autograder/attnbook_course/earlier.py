"""Each part graded on its own: a part that runs the student's earlier, wrong parts is graded again with
those parts replaced by the solution's, and keeps the better score.

One mistake is charged once. A student whose scaled dot-product attention
divides by ``d_k`` loses the points of the parts that check that function
(Parts 1 and 2 of chapter 2), not also those of the multi-head attention, the
blocks and the decoding built on it. The judge (:func:`.judge.grade_cells`)
and the fast in-process tests (``tests/exercise_harness.py``) share this rule,
stated on a submission's *plan* (:mod:`.plan`): its cells in order, locked
or the student's own (with the source notebook's answer to each answer cell),
and its test cells.

1. :func:`parts` numbers the test steps (Part k is the notebook's k-th test
   cell, as its headings number them) and reads which names each part's own
   code mentions: the student's cells since the previous test cell (locked
   cells are everyone's, and a stub mentions nothing earlier).
2. :func:`replaced`: for a part below full, the earlier parts below full whose
   checked names its code reaches, directly or through other earlier parts --
   except a part that checks the same object (Part 2 checks Part 1's function
   with masks: that mistake is its own).
3. :func:`rerun_cells`: the cells again, each replaced name bound to the
   solution's object right before the test cell of the part that defines it
   (:func:`reference_cell`). The student's later code looks names up when it
   runs, so it now calls the solution's.
4. The part keeps the better score; :func:`note` says which earlier parts to fix.

>>> plan = [Cell("def f(x):\\n    return x + 2", own=True, solution="def f(x):\\n    return x + 1"),
...         Test("f_ok", "check(f)", 2),
...         Cell("def g(x):\\n    return 2 * f(x)  # uses f", own=True, solution="def g(x):\\n    return 2 * f(x)"),
...         Test("g_ok", "check(g)", 3)]
>>> found = parts(plan, lambda source: {source[6:-1]})
>>> [(p.number, sorted(p.names), sorted(p.mentions)) for p in found]
[(1, ['f'], ['f', 'x']), (2, ['g'], ['f', 'g', 'x'])]
>>> [p.number for p in replaced(found, 1, below={1})]
[1]
>>> cells, numbers = rerun_cells(plan, found, 1, below={1})
>>> namespace = {}
>>> for cell in cells:
...     exec(cell, namespace)
>>> namespace["g"](1), sorted(n for n in namespace if not n.startswith("__")), numbers
(4, ['f', 'g'], [1])
>>> note(2, [1], full=True)
'Part 2 matches when your Part 1 is replaced by the reference: fix Part 1.'
"""

from __future__ import annotations

import ast
import io
import keyword
import re
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .plan import Cell, Step, Test


@dataclass(frozen=True)
class Graded:
    """One part of a plan: its test step, its number, the names its test cell checks, the names its code uses,
    and its test cell's code."""

    step: int  # index of its Test step in the plan
    grade_id: str
    number: int  # k for the notebook's k-th test cell: "Part k"
    names: frozenset[str]
    mentions: frozenset[str]
    source: str


def identifiers(source: str) -> set[str]:
    """The global names a cell's code may use: its names less keywords, attributes (``a.b`` uses ``a``),
    comments and strings (every word, where Python cannot read the cell).

    >>> sorted(identifiers('out = sdpa(q, attnbook.mha)  # not mha\\nif q: print("mha")'))
    ['attnbook', 'out', 'print', 'q', 'sdpa']
    """
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        words = [t.string for before, t in zip([None, *tokens], tokens, strict=False)
                 if t.type == tokenize.NAME and not (before and before.string == ".")]
    except (tokenize.TokenError, SyntaxError):
        words = re.findall(r"[A-Za-z_]\w*", source)
    return {word for word in words if not keyword.iskeyword(word)}


def defined(source: str) -> set[str]:
    """The names a solution's answer defines at its top level (functions, classes, assignments, imports).

    >>> sorted(defined("import math\\nclass A: pass\\ndef f(): pass\\nx = y = 1"))
    ['A', 'f', 'math', 'x', 'y']
    """
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
    return names


def parts(plan: Sequence[Step], checked: Callable[[str], Iterable[str]]) -> list[Graded]:
    """The plan's parts in order; ``checked(test_source)`` gives the names a test cell passes to its check."""
    found: list[Graded] = []
    mentions: set[str] = set()
    for index, step in enumerate(plan):
        if isinstance(step, Test):
            found.append(Graded(index, step.grade_id, len(found) + 1, frozenset(checked(step.source)),
                                frozenset(mentions), step.source))
            mentions = set()
        elif step.own:
            mentions |= identifiers(step.source)
    return found


def replaced(found: Sequence[Graded], k: int, below: set[int]) -> list[Graded]:
    """The earlier parts (numbers in ``below``: scored below full) that ``found[k]``'s code runs, to replace."""
    part = found[k]
    reach = part.mentions - part.names  # a part's own names are its definitions, not uses of earlier parts
    for earlier in reversed(found[:k]):  # through the earlier parts that the reached ones use
        if earlier.names & reach:
            reach |= earlier.mentions - earlier.names
    return [e for e in found[:k] if e.number in below and e.names & reach and not e.names & part.names]


def reference_cell(solution: str, names: Iterable[str]) -> str:
    """A cell that binds ``names`` to the objects that ``solution`` defines, and changes no other name.

    The solution runs in a copy of the notebook's names, so its own helpers do
    not overwrite the student's; it sees the student's earlier objects (or the
    reference's, where those were replaced before).

    >>> namespace = {"helper": "the student's"}
    >>> exec(reference_cell("helper = 1\\ndef f():\\n    return helper", ["f"]), namespace)
    >>> namespace["f"](), namespace["helper"]
    (1, "the student's")
    """
    return (f"def _attnbook_reference(namespace=dict(globals())):\n"
            f"    exec({solution!r}, namespace)\n"
            f"    return {{name: namespace[name] for name in {sorted(names)!r}}}\n\n\n"
            f"globals().update(_attnbook_reference())\n"
            f"del _attnbook_reference\n")


def _answers(plan: Sequence[Step], part: Graded) -> dict[int, set[str]]:
    """Plan index of an answer -> the names of ``part`` it binds: for each name, the latest solution before
    the part's test cell that defines it (a name that no answer defines, a locked cell's, is not bound)."""
    wanted: dict[int, set[str]] = {}
    for name in part.names:
        for index in range(part.step - 1, -1, -1):
            step = plan[index]
            if isinstance(step, Cell) and step.solution is not None and name in defined(step.solution):
                wanted.setdefault(index, set()).add(name)
                break
    return wanted


def rerun_cells(plan: Sequence[Step], found: Sequence[Graded], k: int, below: set[int]) -> tuple[list[str], list[int]]:
    """The cells to judge ``found[k]`` again with, and the numbers of the earlier parts they replace.

    The replaced parts are :func:`replaced`'s (``below``: the numbers of the
    parts that scored below full); each one's names are bound to the solution's
    objects just before the test cell that follows the answer defining them.
    ``([], [])`` when nothing is replaced.
    """
    wanted: dict[int, set[str]] = {}
    numbers = []
    for part in replaced(found, k, below):
        answers = _answers(plan, part)
        numbers += [part.number] if answers else []
        for index, names in answers.items():
            wanted.setdefault(index, set()).update(names)
    if not wanted:
        return [], []
    cells: list[str] = []
    pending: list[str] = []
    for index, step in enumerate(plan[:found[k].step]):
        if isinstance(step, Test):
            cells += pending
            pending = []
        else:
            cells.append(step.source)
        if index in wanted and isinstance(step, Cell) and step.solution is not None:  # as _answers chose it
            pending.append(reference_cell(step.solution, wanted[index]))
    return cells + pending, numbers


def _parts(numbers: Sequence[int]) -> str:
    """``[1]`` -> 'Part 1', ``[1, 2, 6]`` -> 'Parts 1, 2 and 6'."""
    if len(numbers) == 1:
        return f"Part {numbers[0]}"
    return f"Parts {', '.join(map(str, numbers[:-1]))} and {numbers[-1]}"


def note(number: int, replaced_numbers: Sequence[int], *, full: bool) -> str:
    """What a part graded with earlier parts replaced says first.

    >>> note(7, [1, 2], full=False)
    'Part 7 scores more when your Parts 1 and 2 are replaced by the reference: fix Parts 1 and 2. With them replaced:'
    """
    which = _parts(sorted(replaced_numbers))
    verb = "is" if len(replaced_numbers) == 1 else "are"
    if full:
        return f"Part {number} matches when your {which} {verb} replaced by the reference: fix {which}."
    them = "it" if len(replaced_numbers) == 1 else "them"
    return (f"Part {number} scores more when your {which} {verb} replaced by the reference: fix {which}. "
            f"With {them} replaced:")
