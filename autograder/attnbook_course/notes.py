"""What a submission's grading says about it as a whole: notes as data, rendered once for each reader.

Every step of the route adds :class:`Note` values to a submission's record
(``records.py``), never sentences: the intake (a misnamed notebook, one that
cannot be read), the plan (an edited test cell), the judge (the worker's
limits, flags for review, the grader's own failures) and the deadlines (a
time that cannot be read). Two renderers read them: :func:`status` gives the
``status`` column of ``grades.csv`` and the grading log, :func:`notice` the
top of a student's feedback page. Nothing parses a rendered note back.

>>> notes = [Note("misnamed", "my; work.ipynb"), Note("review", "runs code built from strings")]
>>> status(notes)
"review: graded 'my; work.ipynb' as exercises.ipynb (misnamed); review: runs code built from strings"
>>> print(notice(notes, None))
Your notebook was named `my; work.ipynb`; it was graded as `exercises.ipynb`. Keep the name \
`exercises.ipynb` when you submit.
>>> errors([Note("grading_error", "judging (KeyError: 'x')")]), errors(notes)
(True, False)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, TypedDict, cast, get_args

NOTEBOOK = "exercises.ipynb"  # nbgrader_run.NOTEBOOK (that module imports nbgrader's settings)

Kind = Literal["not_graded", "missing", "misnamed", "test_cell_edited", "grading_error", "limit", "review"]
KINDS: tuple[Kind, ...] = get_args(Kind)
KEPT = 20  # of a submission's notes (each is short): a notebook cannot flood the status column


class NoteRecord(TypedDict):
    """A note as a submission's results JSON holds it."""

    kind: str
    text: str
    detail: str


@dataclass(frozen=True)
class Note:
    """One fact about a submission; ``text`` and ``detail`` are its fields, by ``kind``:

    * ``not_graded``: why the notebook could not be read (``detail``: what its folder holds instead);
    * ``missing``: no notebook (``detail``: what the folder holds, or nothing);
    * ``misnamed``: the file name graded as ``exercises.ipynb``;
    * ``test_cell_edited``: the grade id of a test cell the student edited or deleted;
    * ``grading_error``: the step the grader failed on, and its error (the grader's fault);
    * ``limit``: a limit the student's code ran into, or how the worker ended;
    * ``review``: what deserves the instructor's look (never penalised).
    """

    kind: Kind
    text: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"a note's kind is one of {', '.join(KINDS)}, not {self.kind!r}")

    def status(self) -> str:
        """This note as the ``status`` column says it.

        >>> Note("test_cell_edited", "masks").status()
        'review: test cell edited or deleted (masks); graded with the original'
        """
        detail = f" ({self.detail})" if self.detail else ""
        return {"not_graded": f"not graded: {self.text}{detail}",
                "missing": f"not graded: notebook missing{detail}",
                "misnamed": f"review: graded {self.text!r} as {NOTEBOOK} (misnamed)",
                "test_cell_edited": f"review: test cell edited or deleted ({self.text}); graded with the original",
                "grading_error": f"grading error: {self.text}",
                "limit": self.text,
                "review": f"review: {self.text}"}[self.kind]

    def record(self) -> NoteRecord:
        """As the results JSON keeps it."""
        return {"kind": self.kind, "text": self.text, "detail": self.detail}

    @classmethod
    def read(cls, record: NoteRecord) -> Note:
        """A note from its JSON (:meth:`record`'s).

        >>> Note.read(Note("review", "x").record())
        Note(kind='review', text='x', detail='')
        """
        return cls(cast(Kind, record["kind"]), record["text"], record.get("detail", ""))


def unique(notes: Iterable[Note]) -> list[Note]:
    """``notes`` in order, each once, at most :data:`KEPT`."""
    return list(dict.fromkeys(notes))[:KEPT]


def read(records: Sequence[NoteRecord]) -> list[Note]:
    """The notes of a submission's record."""
    return [Note.read(r) for r in records]


def status(notes: Iterable[Note]) -> str:
    """The ``status`` column: each note's words, ``"; "``-joined, or ``ok`` without any."""
    return "; ".join(n.status() for n in unique(notes)) or "ok"


def errors(notes: Iterable[Note]) -> bool:
    """Whether the grader itself failed on the submission (grade it again on the next run)."""
    return any(n.kind == "grading_error" for n in notes)


def notice(notes: Iterable[Note], late_sentence: str | None) -> str | None:
    """What the top of a student's feedback says about their submission as a whole (Markdown), or None.
    A file name is shown in a code span that it cannot close.

    >>> print(notice([Note("not_graded", "notebook is not valid JSON")], None))
    **Your notebook could not be graded (notebook is not valid JSON).** Every part scores 0. Open it in \
Jupyter to see what is wrong (a file cut short, or one that is not a notebook), and ask your instructor.
    >>> print(notice([Note("missing", "", "the folder holds notes.pdf")], None))
    **No notebook named `exercises.ipynb` was found in your submission (the folder holds notes.pdf).** Every \
part scores 0.
    """
    lines = []
    for note in unique(notes):
        detail = f" ({_plain(note.detail)})" if note.detail else ""
        if note.kind == "missing":
            lines.append(f"**No notebook named `{NOTEBOOK}` was found in your submission{detail}.** "
                         "Every part scores 0.")
        elif note.kind == "not_graded":
            lines.append(f"**Your notebook could not be graded ({_plain(note.text)}{detail}).** "
                         "Every part scores 0. Open it in Jupyter to see what is wrong (a file cut short, or one "
                         "that is not a notebook), and ask your instructor.")
        elif note.kind == "misnamed":
            lines.append(f"Your notebook was named {_code(note.text)}; it was graded as `{NOTEBOOK}`. Keep the name "
                         f"`{NOTEBOOK}` when you submit.")
        elif note.kind == "test_cell_edited":
            lines.append("A test cell of your notebook was edited, renamed or deleted: it was graded with the "
                         "original test cell, shown at its place or at the end.")
    lines += [late_sentence] if late_sentence else []
    return "\n\n".join(lines) or None


def _code(text: str) -> str:
    """``text`` as a Markdown code span that nothing in it can close (CommonMark: a longer fence).

    >>> _code("a`b")
    '`` a`b ``'
    """
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if len(fence) > 1 else f"`{text}`"


def _plain(text: str) -> str:
    """``text`` with Markdown's and HTML's special characters escaped.

    >>> _plain("<img src=x> *a*")
    '&lt;img src=x&gt; \\\\*a\\\\*'
    """
    return re.sub(r"([\\`*_\[\]~])", r"\\\1", text).replace("<", "&lt;").replace(">", "&gt;")
