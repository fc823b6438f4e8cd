"""Where a part's hidden cases come from: the instructor's files, never this package.

A student installs ``attnbook`` and could read every case it holds, so a part's
module keeps its visible cases and its case makers (neither is secret) and the
hidden cases' parameters live in ``autograder/hidden/<chapter>.py``, one
dictionary ``HIDDEN`` per chapter package from part name to cases. They are
found in ``$ATTNBOOK_HIDDEN_CASES`` (a folder), else in the folder the grader
named with :func:`default_to` (``attnbook-course``: ``autograder/hidden`` of its
checkout; the tests: the root ``conftest.py``). This package never looks for
them itself: where neither names a folder (a student's installed package, a
notebook run outside the grader), :func:`find` answers ``None`` and
``check_x(f, points=N)`` grades the visible cases only. Where the folder is
named, a part missing from it is an error: grading never falls back to the
visible cases by accident.

>>> from attnbook.grading.engine import Case, Part
>>> find(Part("check_nothing", (Case("one", lambda: ()),), lambda: None)) is None  # not a chapter's part
True
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from .. import settings

if TYPE_CHECKING:
    from .engine import Case, Part

_LOADED: dict[Path, ModuleType] = {}
_DEFAULT: list[Path] = []  # the grader's own folder (default_to), read where ATTNBOOK_HIDDEN_CASES is unset


def default_to(path: Path) -> None:
    """Read the hidden cases from ``path`` where ``ATTNBOOK_HIDDEN_CASES`` is unset, in this process and the
    judges it forks: ``attnbook-course`` names its own ``autograder/hidden``, wherever the package is from."""
    _DEFAULT[:] = [path]


def folder() -> Path | None:
    """The folder of the instructor's hidden cases, or ``None`` where none is named (a student's install)."""
    given = settings.HIDDEN_CASES.read()
    path = given if given is not None else _DEFAULT[0] if _DEFAULT else None
    if path is None:
        return None
    if not path.is_dir():
        named = f"{settings.HIDDEN_CASES.name}={str(path)!r}" if given is not None else f"the grader's {str(path)!r}"
        raise FileNotFoundError(f"{named} should name the folder of the hidden cases (autograder/hidden in the "
                                "course's repository); there is no such folder")
    return path.resolve()


def chapter_of(part: Part) -> str | None:
    """The chapter package whose module defines ``part``'s check (``"bert"``), or ``None`` for another part."""
    module = getattr(part.check, "__module__", "") or ""
    prefix = __name__.rpartition(".")[0] + "."
    if not module.startswith(prefix) or module.count(".") < 3:
        return None
    return module.removeprefix(prefix).split(".")[0]


def _load(path: Path) -> ModuleType:
    if path not in _LOADED:
        spec = importlib.util.spec_from_file_location(f"_attnbook_hidden_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load the hidden cases in {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        _LOADED[path] = module
    return _LOADED[path]


def find(part: Part) -> tuple[Case, ...] | None:
    """``part``'s hidden cases from the instructor's files; ``None`` where those files are not here.

    Raises ``LookupError`` when the files are here but do not hold the part.
    """
    chapter, where = chapter_of(part), folder()
    if chapter is None or where is None:
        return None
    path = where / f"{chapter}.py"
    if not path.is_file():
        raise LookupError(f"the hidden cases of {part.name} should be in {path}; there is no such file")
    cases = getattr(_load(path), "HIDDEN", {}).get(part.name)
    if not cases:
        raise LookupError(f"{path} holds no hidden cases for {part.name}: add them to its HIDDEN")
    return tuple(cases)
