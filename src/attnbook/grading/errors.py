"""The one exception a check raises: its message explains the mistake in words."""


class CheckFailed(AssertionError):
    """A graded check failed; the message names the concept, never a hidden input or an expected value."""
