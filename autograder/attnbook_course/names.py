"""The one rule for every name a class sends: student ids, file names, and display names shown to the instructor.

A student id and a file name become folders and files in the state folder, cells of CSV files, parts of
URLs and of nbgrader's own glob patterns, so each is checked once, at intake (``collect``, ``grade``'s
copy of a folder, the ``submitted/`` folder nbgrader's exchange fills), against a rule that leaves no
room for a path, a pattern, markup or a formula:

* a **student id** is 1 to 64 of the characters ``A-Z a-z 0-9 . _ @ -``, beginning with a letter or a digit
  (university logins, LMS numbers and e-mail-like SIS logins pass; ``..``, ``[ab]``, ``=1+1``, ``<b>``
  do not);
* a **file name** is 1 to 128 printable characters, none of ``/ \\ : * ? " < > | ` $`` nor a control
  character, not beginning with ``.`` or a space (``exercises (1).ipynb`` passes; ``..``, ``a\\b``,
  ``x`<img>`.ipynb`` do not);
* a **display name** (an LMS's name for a student) is never a path nor parsed for an id: it is only
  printed, through :func:`shown`, which writes control characters (terminal escapes) as ``\\x1b``.

>>> student_id("alee"), student_id("s.j@uni.edu")
('alee', 's.j@uni.edu')
>>> student_id("[ab]")
Traceback (most recent call last):
ValueError: student id '[ab]': expected 1 to 64 of A-Z a-z 0-9 . _ @ -, beginning with a letter or a digit
>>> file_name("exercises (1).ipynb")
'exercises (1).ipynb'
>>> shown("Eve\\x1b[2J")
'Eve\\\\x1b[2J'
"""

from __future__ import annotations

import re

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_FILE_FORBIDDEN = re.compile(r'[/\\:*?"<>|`$\x00-\x1f\x7f]')
MAX_FILE_NAME = 128


def student_id(text: str, what: str = "student id") -> str:
    """``text`` if it is a student id by the module's rule, else ValueError naming ``what``."""
    if not _ID.fullmatch(text):
        raise ValueError(f"{what} {shown(text)!r}: expected 1 to 64 of A-Z a-z 0-9 . _ @ -, beginning with "
                         "a letter or a digit")
    return text


def file_name(text: str, what: str = "file name") -> str:
    """``text`` if it is a plain file name by the module's rule, else ValueError naming ``what``.

    >>> file_name("../x.ipynb")
    Traceback (most recent call last):
    ValueError: file name '../x.ipynb': expected a plain name (no / \\ : * ? " < > | ` $, no control \
character, not beginning with . or a space, at most 128 characters)
    """
    if (not text or len(text) > MAX_FILE_NAME or text[0] in ". " or _FILE_FORBIDDEN.search(text)
            or not text.isprintable()):
        raise ValueError(f"{what} {shown(text)!r}: expected a plain name (no / \\ : * ? \" < > | ` $, no control "
                         f"character, not beginning with . or a space, at most {MAX_FILE_NAME} characters)")
    return text


def is_student_id(text: str) -> bool:
    return bool(_ID.fullmatch(text))


def shown(text: str, limit: int = 80) -> str:
    """``text`` safe to print on a terminal: control and other unprintable characters escaped, cut to
    ``limit`` characters.

    >>> shown("Bob\\rAlice"), shown("x" * 100)[-4:]
    ('Bob\\\\rAlice', 'x...')
    """
    out = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return out if len(out) <= limit else out[: limit - 3] + "..."
