"""Every setting the course reads from the environment, declared once: its variable, type, default, unit, meaning.

A student's install reads two (:data:`DEVICE`, :data:`DATA`) and the visible
checks one (:data:`VISIBLE_SECONDS`); the rest are the instructor's, for
grading. Each is a :class:`Setting`, a module constant named after its variable
without ``ATTNBOOK_``; code reads it with :meth:`Setting.read`, never from
``os.environ`` itself, and a program that sets one for a process it starts names
it as ``settings.X.name`` (``tests/test_settings.py`` holds the source to both).
A variable that is unset or empty gives the default; a malformed one raises a
``ValueError`` that names it, its value and what is expected.
``attnbook-course settings`` (or ``python -m attnbook.settings``)
prints them all with the values in force.

These are the instructor's knobs only, never a channel between the grader's
processes: what the judge and the sandboxed worker agree on (how much of a
message crosses, the worker's process cap) is in the contract section of
:mod:`attnbook_course._wire`, which the worker can import.

>>> GRADING_PART_SECONDS.name, GRADING_PART_SECONDS.default, GRADING_PART_SECONDS.unit
('ATTNBOOK_GRADING_PART_SECONDS', 120.0, 'seconds')
>>> GRADING_PART_SECONDS.read({}), GRADING_PART_SECONDS.read({"ATTNBOOK_GRADING_PART_SECONDS": " 30 "})
(120.0, 30.0)
>>> GRADING_PART_SECONDS.read({"ATTNBOOK_GRADING_PART_SECONDS": "abc"})
Traceback (most recent call last):
ValueError: ATTNBOOK_GRADING_PART_SECONDS should be a number (seconds), not 'abc'
>>> GRADING_PROCESSES.read({"ATTNBOOK_GRADING_PROCESSES": "6.5"})
Traceback (most recent call last):
ValueError: ATTNBOOK_GRADING_PROCESSES should be a whole number (processes), not '6.5'
>>> DATA.read({}), DEVICE.read({})
(PosixPath('~/.cache/attnbook'), None)
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar, cast

T = TypeVar("T")

_KINDS = {int: "int", float: "float", str: "text", Path: "path"}  # what a variable's text is read as


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One environment variable: its name, what its text is read as, its default, unit and meaning."""

    name: str  # the environment variable, ATTNBOOK_...
    kind: type  # int, float, str or Path
    default: T  # in force where the variable is unset or empty; None: the code decides (the description says how)
    unit: str  # of a number ("seconds", "GiB"); "" for text and paths
    description: str  # one line

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise TypeError(f"{self.name}: kind should be one of int, float, str, Path, not {self.kind!r}")

    @property
    def type_name(self) -> str:
        """``"int"``, ``"float"``, ``"text"`` or ``"path"``."""
        return _KINDS[self.kind]

    def read(self, environ: Mapping[str, str] | None = None) -> T:
        """The value in ``environ`` (default: this process's environment), or the default where it is unset or
        empty. A number must be finite and not negative; anything else raises ``ValueError`` naming the
        variable, its value and what is expected."""
        given = (os.environ if environ is None else environ).get(self.name, "").strip()
        if not given:
            return self.default
        if self.kind in (int, float):
            expected = f"a {'whole ' if self.kind is int else ''}number ({self.unit})"
            try:
                number = self.kind(given)
            except ValueError:
                raise ValueError(f"{self.name} should be {expected}, not {given!r}") from None
            if not math.isfinite(number) or number < 0:
                raise ValueError(f"{self.name} should be {expected}, 0 or more, not {given!r}")
            return cast(T, number)
        return cast(T, self.kind(given))

    def shown(self, value: object) -> str:
        """``value`` as the table prints it: a number without a needless ``.0``, ``unset`` for ``None``."""
        if value is None:
            return "unset"
        return f"{value:g}" if isinstance(value, float) else str(value)


# --------------------------------------------------------------------------- the package's, a student's too
DEVICE: Setting[str | None] = Setting(
    "ATTNBOOK_DEVICE", str, None, "",
    "the device to run on (cpu, cuda, cuda:1, mps); unset: cuda, then mps, then cpu, the first there is")
DATA: Setting[Path] = Setting(
    "ATTNBOOK_DATA", Path, Path("~/.cache/attnbook"), "", "the folder of the cached data sets")
VISIBLE_SECONDS: Setting[float | None] = Setting(
    "ATTNBOOK_VISIBLE_SECONDS", float, None, "seconds",
    "a visible case's time limit (0: none); unset: 2,000 times a small workload, at least 10 s")

# --------------------------------------------------------------------------- the instructor's: grading
HIDDEN_CASES: Setting[Path | None] = Setting(
    "ATTNBOOK_HIDDEN_CASES", Path, None, "",
    "the folder of the hidden cases; unset: the grader's own (attnbook-course: autograder/hidden)")
GRADEBOOK: Setting[str | None] = Setting(
    "ATTNBOOK_GRADEBOOK", str, None, "",
    "the gradebook's database URL (postgresql://...); unset: STATE/gradebook.db (SQLite)")
GRADING_SANDBOX: Setting[str | None] = Setting(
    "ATTNBOOK_GRADING_SANDBOX", str, None, "",
    "none: grade trusted notebooks without bubblewrap; unset: refuse to grade without it")
GRADING_MEMORY_GIB: Setting[float] = Setting(
    "ATTNBOOK_GRADING_MEMORY_GIB", float, 4.0, "GiB", "a submission's memory: its processes and files")
GRADING_FILES_MIB: Setting[float] = Setting(
    "ATTNBOOK_GRADING_FILES_MIB", float, 256.0, "MiB", "what a submission may write (memory, counted in the above)")
GRADING_PROCESSES: Setting[int] = Setting(
    "ATTNBOOK_GRADING_PROCESSES", int, 64, "processes", "a submission's processes at once (a cgroup's pids.max)")
GRADING_CPU_SECONDS: Setting[float] = Setting(
    "ATTNBOOK_GRADING_CPU_SECONDS", float, 300.0, "seconds", "CPU time per graded part")
GRADING_PART_SECONDS: Setting[float] = Setting(
    "ATTNBOOK_GRADING_PART_SECONDS", float, 120.0, "seconds", "wall clock per graded part, on the judge's clock")
GRADING_SUBMISSION_SECONDS: Setting[float] = Setting(
    "ATTNBOOK_GRADING_SUBMISSION_SECONDS", float, 900.0, "seconds", "wall clock for a whole submission")
GRADING_JUDGE_GRACE_SECONDS: Setting[float] = Setting(
    "ATTNBOOK_GRADING_JUDGE_GRACE_SECONDS", float, 120.0, "seconds",
    "the judge's time past a submission's wall clock (to end its worker and clean up) before it is killed")
GRADING_JUDGE_MEMORY_GIB: Setting[float] = Setting(
    "ATTNBOOK_GRADING_JUDGE_MEMORY_GIB", float, 4.0, "GiB", "the judge's address space")
GRADING_FRAME_MIB: Setting[float] = Setting(
    "ATTNBOOK_GRADING_FRAME_MIB", float, 16.0, "MiB", "the largest reply the judge reads from a worker")
GRADING_OUTPUT_CHARS: Setting[int] = Setting(
    "ATTNBOOK_GRADING_OUTPUT_CHARS", int, 20000, "characters", "a part's feedback (the rest is counted, not kept)")
# --------------------------------------------------------------------------- the instructor's: the service
SERVICE_DB: Setting[str | None] = Setting(
    "ATTNBOOK_SERVICE_DB", str, None, "",
    "the grading service's queue and outcomes: a PostgreSQL URL (attnbook-course serve, worker)")
SERVICE_URL: Setting[str | None] = Setting(
    "ATTNBOOK_SERVICE_URL", str, None, "",
    "the grading service's address (https://HUB/services/grader/), for nbgrader's exchange and submit")
SERVICE_SUBMIT_MIB: Setting[float] = Setting(
    "ATTNBOOK_SERVICE_SUBMIT_MIB", float, 64.0, "MiB", "the largest notebook the grading service takes")
SERVICE_STALLED_SECONDS: Setting[float] = Setting(
    "ATTNBOOK_SERVICE_STALLED_SECONDS", float, 30.0, "seconds",
    "a worker silent this long is dead: its job runs again on another")

SETTINGS: tuple[Setting, ...] = (
    DEVICE, DATA, VISIBLE_SECONDS, HIDDEN_CASES, GRADEBOOK, GRADING_SANDBOX, GRADING_MEMORY_GIB, GRADING_FILES_MIB,
    GRADING_PROCESSES, GRADING_CPU_SECONDS, GRADING_PART_SECONDS, GRADING_SUBMISSION_SECONDS,
    GRADING_JUDGE_GRACE_SECONDS, GRADING_JUDGE_MEMORY_GIB, GRADING_FRAME_MIB, GRADING_OUTPUT_CHARS,
    SERVICE_DB, SERVICE_URL, SERVICE_SUBMIT_MIB, SERVICE_STALLED_SECONDS)
_GRADING = "ATTNBOOK_GRADING_"
GRADING: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.name.startswith(_GRADING))  # what a grade depends on
SERVICE: tuple[Setting, ...] = tuple(s for s in SETTINGS if s.name.startswith("ATTNBOOK_SERVICE_"))  # serve, worker


def grading(environ: Mapping[str, str] | None = None) -> dict[str, float]:
    """Every grading limit in force (the ``ATTNBOOK_GRADING_*`` numbers), by its short name (``part_seconds``).

    >>> grading({})["files_mib"], grading({"ATTNBOOK_GRADING_FILES_MIB": "64"})["files_mib"]
    (256.0, 64.0)
    """
    return {s.name.removeprefix(_GRADING).lower(): s.read(environ) for s in GRADING if s.kind in (int, float)}


def problems(among: tuple[Setting, ...] = SETTINGS, environ: Mapping[str, str] | None = None) -> list[str]:
    """The error of each setting of ``among`` whose value is malformed, in order; ``[]`` when every one reads.

    >>> problems(GRADING, {"ATTNBOOK_GRADING_MEMORY_GIB": "-1", "ATTNBOOK_VISIBLE_SECONDS": "soon"})
    ["ATTNBOOK_GRADING_MEMORY_GIB should be a number (GiB), 0 or more, not '-1'"]
    """
    found = []
    for setting in among:
        try:
            setting.read(environ)
        except ValueError as err:
            found.append(str(err))
    return found


def table(environ: Mapping[str, str] | None = None, width: int = 80) -> str:
    """Every setting: its variable, unit (or type), default and the value in force here, aligned, then its
    meaning wrapped below; no line wider than ``width``. The value is ``(default)`` where the variable is unset
    or empty, ``MALFORMED`` (and the error below) where :meth:`Setting.read` refuses it; one too wide for its
    column goes on a line of its own.

    >>> print("\\n".join(table({"ATTNBOOK_GRADING_PART_SECONDS": "30"}).split("\\n")[2:5]))
    variable                              unit        default            value here
    ATTNBOOK_DEVICE                       text        unset              (default)
        the device to run on (cpu, cuda, cuda:1, mps); unset: cuda, then mps, then
    >>> [line for line in table({"ATTNBOOK_GRADING_PART_SECONDS": "30"}).split("\\n") if "PART" in line]
    ['ATTNBOOK_GRADING_PART_SECONDS         seconds     120                30']
    """
    env = os.environ if environ is None else environ
    head = ("variable", "unit", "default", "value here")
    rows, errors = [], {}
    for s in SETTINGS:
        try:
            here = s.shown(s.read(env)) if env.get(s.name, "").strip() else "(default)"
        except ValueError as err:
            here, errors[s.name] = "MALFORMED", str(err)
        rows.append((s.name, s.unit or s.type_name, s.shown(s.default), here))
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(3)]
    indent = " " * 4

    def line(cells: tuple[str, ...]) -> list[str]:
        left = "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=False)) + "  "
        if len(left) + len(cells[3]) <= width:
            return [left + cells[3]]
        return [left.rstrip(), *textwrap.wrap(f"value here: {cells[3]}", width, initial_indent=indent,
                                              subsequent_indent=indent + "  ", break_on_hyphens=False)]

    lines = ["Every ATTNBOOK_* setting (attnbook.settings): unset or empty means the default.", "", *line(head)]
    for setting, row in zip(SETTINGS, rows, strict=True):
        lines += line(row)
        lines += textwrap.wrap(setting.description, width, initial_indent=indent, subsequent_indent=indent)
        if setting.name in errors:
            lines += textwrap.wrap(errors[setting.name], width, initial_indent=indent + "! ",
                                   subsequent_indent=indent + "  ")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
