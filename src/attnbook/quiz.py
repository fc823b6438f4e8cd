"""Check-your-understanding questions at the end of a section, answered on the page.

A section's last cell (tagged ``remove-input``) makes a :class:`Quiz` of
:class:`Choice` and :class:`Number` questions; its HTML is a numbered list in
which each answer, with the reason for every option, sits in a ``<details>``
element. That needs no script: it opens by mouse or keyboard (Enter or Space on
its summary) in the published book, offline, in JupyterLab and in a
screen reader, which reads the summary as a button.

In a question, ```code``` becomes ``<code>`` and ``$...$`` becomes MathJax's
``\\(...\\)`` (the quiz is marked for MathJax to typeset); everything else
is text (escaped, never markup).

>>> quiz = Quiz([
...     Choice("Which score grows with `d_k`?", ["additive", "dot-product"], answer=1,
...            why=["It has no dot product to grow with `d_k`.", "Its variance grows with `d_k`."]),
...     Number("Softmax of two equal scores: the first weight?", answer=0.5, why="Equal scores, equal weights."),
... ])
>>> html = quiz._repr_html_()
>>> html.count("<details>"), "<code>d_k</code>" in html
(2, True)
>>> print(repr(quiz).splitlines()[1])
1. Which score grows with `d_k`?
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

LETTERS = "abcdefgh"


def _text(source: str) -> str:
    """``source`` as HTML: escaped, `code` spans marked up, ``$`` maths as MathJax's inline ``\\(...\\)``."""
    marked = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(source, quote=False))
    return re.sub(r"\$([^$]+)\$", r"\\(\1\\)", marked)


def _number(x: float) -> str:
    """``x`` as a reader writes it: ``589,824``, ``0.5``, ``2.079``."""
    return f"{int(x):,}" if float(x).is_integer() else f"{x:.4g}"


@dataclass(frozen=True)
class Choice:
    """A question with options, one of them right; ``why[i]`` says why option ``i`` is right or wrong."""

    question: str
    options: Sequence[str]
    answer: int
    why: Sequence[str]

    def __post_init__(self) -> None:
        if not 2 <= len(self.options) <= len(LETTERS):
            raise ValueError(f"a Choice has 2 to {len(LETTERS)} options, got {len(self.options)}")
        if len(self.why) != len(self.options):
            raise ValueError(f"a Choice explains every option: {len(self.options)} options, {len(self.why)} whys")
        if not 0 <= self.answer < len(self.options):
            raise ValueError(f"answer is an option's index, 0 to {len(self.options) - 1}, got {self.answer}")

    def body(self) -> tuple[str, str]:
        """The HTML shown (the options) and the HTML folded away (the answer, and why for each option)."""
        options = "".join(f"<li>{_text(o)}</li>" for o in self.options)
        reasons = "".join(f"<li>({LETTERS[i]}) {'right' if i == self.answer else 'wrong'}: {_text(w)}</li>"
                          for i, w in enumerate(self.why))
        return (f'<ol type="a">{options}</ol>',
                f"<p>Answer: ({LETTERS[self.answer]}) {_text(self.options[self.answer])}</p><ul>{reasons}</ul>")

    def plain(self) -> list[str]:
        return [f"   ({LETTERS[i]}) {o}" for i, o in enumerate(self.options)]


@dataclass(frozen=True)
class Number:
    """A question whose answer is a number (within ``tolerance``, in ``unit``), and how to get it."""

    question: str
    answer: float
    why: str
    tolerance: float = 0.0
    unit: str = ""

    def body(self) -> tuple[str, str]:
        """Nothing shown; folded away, the answer and how to get it."""
        within = f" (anything within {_number(self.tolerance)} counts)" if self.tolerance else ""
        unit = f" {_text(self.unit)}" if self.unit else ""
        return "", f"<p>Answer: {_number(self.answer)}{unit}{within}</p><p>{_text(self.why)}</p>"

    def plain(self) -> list[str]:
        return [f"   (a number{f', in {self.unit}' if self.unit else ''})"]


class Quiz:
    """Questions shown as HTML in a notebook or the book (``_repr_html_``; the page's heading titles them),
    as text elsewhere (titled ``title``)."""

    def __init__(self, questions: Sequence[Choice | Number], title: str = "Check your understanding") -> None:
        if not questions:
            raise ValueError("a Quiz needs at least one question")
        self.questions, self.title = list(questions), title

    def _repr_html_(self) -> str:
        items = []
        for k, q in enumerate(self.questions, 1):
            shown, folded = q.body()
            items.append(f"<li><p>{_text(q.question)}</p>{shown}<details>"
                         f"<summary>Answer to question {k}</summary>{folded}</details></li>")
        return f'<div class="attnbook-quiz mathjax_process"><ol>{"".join(items)}</ol></div>'

    def __repr__(self) -> str:
        lines = [self.title]
        for k, q in enumerate(self.questions, 1):
            lines += [f"{k}. {q.question}", *q.plain()]
        return "\n".join(lines)
