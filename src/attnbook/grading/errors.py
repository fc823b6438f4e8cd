"""The one exception a check raises: its message explains the mistake in words."""

from __future__ import annotations


class CheckFailed(AssertionError):
    """A graded check failed; the message names the concept, never a hidden input or an expected value.

    In a notebook, IPython shows only the message (through ``_render_traceback_``), not the
    grader's frames, which say nothing to a student:

    >>> CheckFailed("rows of the attention weights do not sum to 1")._render_traceback_()
    ['CheckFailed: rows of the attention weights do not sum to 1']
    """

    def __init__(self, message: str = "", *, line: str = "") -> None:
        super().__init__(message + line)
        self.words, self.line = message, line  # line: the student's line that raised, always shown last

    def hinted(self, hint: str) -> CheckFailed:
        """This failure with ``hint`` after its words, the student's line (if any) still last.

        >>> str(CheckFailed("f raised KeyError: 3", line=" (line 2 of your cell)").hinted(" -- keys are ids"))
        'f raised KeyError: 3 -- keys are ids (line 2 of your cell)'
        """
        return CheckFailed(self.words + hint, line=self.line)

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]
