"""nbgrader configuration of the course. Every path is relative to the repository.

nbgrader reads this file when it runs with ``autograder/`` as its working
directory (``autograder/course.py`` and the Makefile do that). The course root
is the repository: ``solutions/`` is nbgrader's source directory, and the
runtime state (``_release/``, ``submitted/``, ``autograded/``, ``feedback/``,
``gradebook.db``) lives beside it, ignored by git. A class on JupyterHub
points ``db_url`` at a server database instead (see the instructor guide).
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # for feedback_filters

c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "attention-to-transformers"
c.CourseDirectory.root = str(HERE.parent)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "_release"
c.CourseDirectory.submitted_directory = "submitted"
c.CourseDirectory.autograded_directory = "autograded"
c.CourseDirectory.feedback_directory = "feedback"
c.CourseDirectory.db_url = os.environ.get("ATTNBOOK_GRADEBOOK", f"sqlite:///{HERE.parent / 'gradebook.db'}")

# Student notebooks: the solution region becomes this stub, hidden tests are removed.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograding: every cell gets a time limit, so an endless loop costs that cell, not the class.
c.Execute.timeout = 120
c.Execute.interrupt_on_timeout = True
c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:"]

# Feedback shows the student's work and the checks' messages, never the hidden tests.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "feedback_filters.HideHiddenTests",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]
