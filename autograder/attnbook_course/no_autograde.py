"""nbgrader's own autograde, refused: this course grades with ``make grade`` (the judge, in the sandbox).

``nbgrader autograde`` and the formgrader's Autograde button would run each
student's notebook in a plain kernel, as the instructor, outside the sandbox,
and score it by nbgrader's rules instead of the judge's. ``nbgrader_config.py``
makes :class:`UseMakeGrade` the exporter of nbgrader's ``Autograde`` converter;
nbgrader creates the exporter after finding the submissions and before it
touches anything (the gradebook, ``autograded/``), so the refusal changes
nothing. The command exits 1 and the formgrader shows the message:

>>> try:
...     UseMakeGrade()
... except NbGraderException as refused:
...     print(str(refused) == MESSAGE, "`make grade`" in MESSAGE)
True True
"""

from nbconvert.exporters import NotebookExporter
from nbgrader.converters.base import NbGraderException

MESSAGE = ("nbgrader's autograde is turned off for this course: it would run the students' code outside the "
           "sandbox. Grade with `make grade` (one student: `make grade STUDENT=<id> ASSIGNMENT=<assignment>`); "
           "the formgrader then shows its scores.")


class UseMakeGrade(NotebookExporter):
    """An exporter that refuses to be made, with :data:`MESSAGE` in nbgrader's log and in its error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log.error(MESSAGE)
        raise NbGraderException(MESSAGE)
