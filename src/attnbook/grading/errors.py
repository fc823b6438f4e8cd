"""The one exception a check raises: its message explains the mistake in words."""


class CheckFailed(AssertionError):
    """A graded check failed; the message names the concept, never a hidden input or an expected value.

    In a notebook, IPython shows only the message (through ``_render_traceback_``), not the
    grader's frames, which say nothing to a student:

    >>> CheckFailed("rows of the attention weights do not sum to 1")._render_traceback_()
    ['CheckFailed: rows of the attention weights do not sum to 1']
    """

    def _render_traceback_(self) -> list[str]:
        return [f"{type(self).__name__}: {self}"]
