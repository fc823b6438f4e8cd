"""nbgrader configuration of the course. Every path is relative to the repository.

nbgrader reads this file when it runs with ``autograder/`` as its working
directory (``attnbook-course`` and the Makefile do that, and so does an
instructor running ``nbgrader collect``, ``export`` or ``release_feedback``
there). The course root is the repository: ``solutions/`` is nbgrader's source
directory, and the runtime state (``_release/``, and nbgrader's default
``submitted/``, ``autograded/`` and ``feedback/``, ``gradebook.db``) lives
beside it, ignored by git. ``attnbook-course`` passes the state's folders and the
gradebook on the command line (``--state`` moves them); the database URL's
default, ``ATTNBOOK_GRADEBOOK`` or a SQLite file, is ``nbgrader_run.gradebook_url``'s.
The preprocessors and the gradebook's URL come from the installed grader, ``attnbook_course``.

The judge of ``attnbook-course grade`` runs the notebooks, never ``nbgrader
autograde``: ``nbgrader autograde`` and the formgrader's Autograde button are
refused with a message that says to use ``make grade`` (``attnbook_course.no_autograde``).
``nbgrader export`` writes ``nbgrader-grades.csv`` beside the default state (the
repository root, ignored by git), never into ``autograder/``.
"""

from attnbook_course import ROOT
from attnbook_course.nbgrader_run import gradebook_url

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "attention-to-transformers"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "_release"
c.CourseDirectory.db_url = gradebook_url(ROOT)

# Student notebooks: the solution region becomes this stub, hidden tests are removed.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Feedback shows the student's work and the checks' messages, never the hidden tests. The student's work is made
# inert first (before nbconvert validates the notebook: a tag with a comma would stop it); GetGrades is nbgrader's,
# reading the student of feedback_pages' queue folders.
c.GenerateFeedback.preprocessors = [
    "attnbook_course.feedback_filters.SafeStudentWork",
    "attnbook_course.feedback_filters.GetGrades",
    "attnbook_course.feedback_filters.HideHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
# The code's colours: the book's pygments style (accessible-pygments, as pydata-sphinx-theme's), every colour at
# 7:1 or more on white; nbconvert's own has comments and keywords under WCAG AA's 4.5:1 on a cell's grey.
c.CSSHTMLHeaderPreprocessor.style = "a11y-high-contrast-light"

# nbgrader's own autograde would run the students' code outside the sandbox: refused, before it touches anything.
c.Autograde.exporter_class = "attnbook_course.no_autograde.UseMakeGrade"

# `nbgrader export`'s CSV, beside the default state (nbgrader's default, grades.csv in the working directory,
# landed in autograder/); its --to overrides this.
c.ExportPlugin.to = str(ROOT / "nbgrader-grades.csv")
