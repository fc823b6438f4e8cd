"""The instructor's side of the course: release the student notebooks, grade a class, report on it.

The distribution ``attnbook-course`` (``autograder/pyproject.toml``), apart from the students' ``attnbook``.
``make install`` installs it editable from the course's checkout, and it works on that checkout: :data:`ROOT`
holds ``solutions/`` and ``chapters/``, and :data:`GRADER` (``autograder/``) the instructor's files that no
wheel carries: the hidden cases, nbgrader's configuration, the mutation tables and the refused routes.
Its command line is ``attnbook-course`` (:mod:`.course`).
"""

from pathlib import Path

GRADER = Path(__file__).resolve().parent.parent  # autograder/ of the checkout
ROOT = GRADER.parent
HIDDEN_CASES = GRADER / "hidden"  # every part's hidden cases, handed to attnbook.grading.hidden_cases.default_to
