"""Everything of the students' package that the instructor's grader (``attnbook_course``) uses, in one place.

The grader imports from ``attnbook`` only public names, and of the checks'
machinery only this module's (a test reads every import of ``attnbook_course``
to hold it so). What crosses:

* the **proxy protocol**: the judge's stand-in for a student object in the
  worker routes ``run_student`` here (:class:`Proxy`), and turns the worker's
  reports into the student's error (:func:`student_error`) and warnings
  (:func:`note_warnings`), as in the student's kernel;
* the **source stripper** (:func:`stripped`): a part's references become stubs
  that raise, in the copy of ``attnbook`` the worker imports;
* the **worker's files** (:data:`WORKER_FILES`): the two modules copied beside
  the sandboxed worker, which therefore import nothing of their package (a
  test holds that too), and :data:`WORKER_KEEPS`: what of ``attnbook.grading``
  the worker's copy keeps (no check, no reference).

>>> sorted(path.name for path in WORKER_FILES)
['_cells.py', '_refuse.py']
>>> print(stripped("def f():\\n    return 1\\n", "attnbook.m", {"f": "attnbook.m.f"}))
def f():
    import _refuse
    _refuse.reference_called('attnbook.m.f')
"""

from __future__ import annotations

from pathlib import Path

from . import _cells as cells
from . import _refuse as refusal
from ._core import Proxy, note_warnings, student_error
from ._refuse import ReferenceCalled, stripped

WORKER_FILES = (Path(refusal.__file__), Path(cells.__file__))  # copied beside the worker, standing alone
WORKER_KEEPS = frozenset({"__init__.py", "errors.py", "fixtures.py"})  # of attnbook/grading, in the worker's copy

__all__ = ["WORKER_FILES", "WORKER_KEEPS", "Proxy", "ReferenceCalled", "cells", "note_warnings", "refusal",
           "student_error", "stripped"]
