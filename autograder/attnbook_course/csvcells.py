"""Cells of the CSVs the grader writes, safe to open in a spreadsheet (OWASP's "CSV Injection" guidance).

A student id, a roster's display name or section, or a status that quotes a student's file name can begin
with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, which Excel, LibreOffice and Google Sheets read
as a formula: ``=HYPERLINK("http://x","y")`` becomes a live link in the instructor's gradebook. So:

* :func:`neutral` prefixes such a text cell with a single quote, which spreadsheets read as "this is
  text" (OWASP's first rule); so too a cell where such a character follows a separator or a quote inside
  it (``Bob;=1+1``, OWASP's second rule), and a cell that begins with a quote already, so that
  :func:`read_back` can undo exactly what was done. A number (an int or a float: the scores we write) is
  never prefixed; a student's text is text, ``"-2"`` included.
* :data:`QUOTING` quotes every text cell, so that no separator or quote inside one starts a new cell;
  numbers are written bare (the ``csv`` module's ``QUOTE_NONNUMERIC``).
* :func:`read` is how our own code reads back a CSV we wrote: every cell with :func:`read_back` applied,
  so that an id round-trips exactly.

>>> neutral('=HYPERLINK("http://x","y")'), neutral("-Anna"), neutral("Bob;=1+1"), neutral("ada")
('\\'=HYPERLINK("http://x","y")', "'-Anna", "'Bob;=1+1", 'ada')
>>> neutral(-2.5), neutral("-2.5"), neutral("-2+3"), neutral("\\t=1")
(-2.5, "'-2.5", "'-2+3", "'\\t=1")
>>> all(read_back(neutral(s)) == s for s in ["=1", "'=1", "''", "@home", "ada", "", "-2", "O'Neil"])
True
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what a spreadsheet may read as the start of a formula
QUOTING: Final = csv.QUOTE_NONNUMERIC  # text cells quoted, numbers bare
_INSIDE = re.compile(r"[,;\t\r\n\"'][=+\-@\t\r]")  # such a character after a separator or a quote


def neutral(value):
    """``value`` as a cell that no spreadsheet runs: a text cell that could start a formula, with ``'`` before it.

    >>> neutral("@SUM(A1)"), neutral("'quoted"), neutral(None), neutral(7)
    ("'@SUM(A1)", "''quoted", None, 7)
    """
    if isinstance(value, str) and (value.startswith((*FORMULA, "'")) or _INSIDE.search(value)):
        return "'" + value
    return value


def read_back(value: str) -> str:
    """A cell as :func:`neutral` was given it (a CSV we wrote, read back).

    >>> read_back("'=1"), read_back("''quoted"), read_back("ada")
    ('=1', "'quoted", 'ada')
    """
    return value[1:] if value.startswith("'") else value


def row(cells: Iterable) -> list:
    """A row with every cell :func:`neutral`."""
    return [neutral(v) for v in cells]


def record(cells: Mapping) -> dict:
    """A row as ``csv.DictWriter`` takes it, name -> cell, with every cell :func:`neutral`."""
    return {k: neutral(v) for k, v in cells.items()}


def write(path: Path, header: list[str], rows: Iterable[Iterable]) -> None:
    """Write ``header`` and ``rows`` to ``path``, every cell :func:`neutral` and text quoted."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, quoting=QUOTING)
        writer.writerow(row(header))
        writer.writerows(row(r) for r in rows)


def read(path: Path) -> list[dict[str, str]]:
    """The rows of a CSV we wrote, as ``csv.DictReader`` gives them, every name and cell :func:`read_back`."""
    with open(path, newline="") as fh:
        return [{read_back(k): read_back(v or "") for k, v in r.items() if k is not None}
                for r in csv.DictReader(fh)]
