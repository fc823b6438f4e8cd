"""Every test grades as ``attnbook-course`` does: with the hidden cases of this checkout's ``autograder/hidden``.

The package never looks for them itself (:mod:`attnbook.grading.hidden_cases`); the in-process grading of
the tests (``tests/exercise_harness.py``, the judges a test forks) reads this folder, named here for every
test file and doctest, unless ``ATTNBOOK_HIDDEN_CASES`` names another.
"""

from pathlib import Path

from attnbook.grading import hidden_cases

hidden_cases.default_to(Path(__file__).resolve().parent / "autograder" / "hidden")
