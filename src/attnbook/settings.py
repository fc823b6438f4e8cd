"""Every setting the course reads from the environment, in one place: its default, unit and meaning.

A student's install reads two (``ATTNBOOK_DEVICE``, ``ATTNBOOK_DATA``) and the
visible checks one (``ATTNBOOK_VISIBLE_SECONDS``); the rest are the
instructor's, for grading. Code reads a setting with :func:`value`, never from
``os.environ`` itself (``tests/test_settings.py`` holds the source to that).
``python -m attnbook.settings``, or ``course.py settings``, prints the table
with the values in force.

One value crosses a boundary: the sandboxed worker (``grading/_worker.py``)
sees only its own two files, so the judge hands it the process cap as
``ATTNBOOK_GRADING_PROCESSES`` (bubblewrap's ``--setenv``), and the worker
reads it there.

>>> value("ATTNBOOK_GRADING_PART_SECONDS", {})
120.0
>>> value("ATTNBOOK_GRADING_PART_SECONDS", {"ATTNBOOK_GRADING_PART_SECONDS": "30"})
30.0
>>> value("ATTNBOOK_GRADING_PART_SECONDS", {"ATTNBOOK_GRADING_PART_SECONDS": "soon"})
Traceback (most recent call last):
ValueError: ATTNBOOK_GRADING_PART_SECONDS should be a number (seconds), not 'soon'
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """An environment variable: its default (``None``: unset, the code chooses), unit ("" for text), meaning."""

    name: str
    default: float | str | None
    unit: str
    meaning: str


_GRADING = "ATTNBOOK_GRADING_"
SETTINGS: tuple[Setting, ...] = (
    Setting("ATTNBOOK_DEVICE", None, "", "the device to run on (cpu, cuda, cuda:1, mps); unset: the best there is"),
    Setting("ATTNBOOK_DATA", "~/.cache/attnbook", "", "the folder of the cached data sets"),
    Setting("ATTNBOOK_VISIBLE_SECONDS", None, "seconds",
            "a visible case's time limit (0: none); unset: 2,000 times a small workload, at least 10 s"),
    Setting("ATTNBOOK_HIDDEN_CASES", None, "",
            "the folder of the hidden cases; unset: autograder/hidden of the course's checkout"),
    Setting("ATTNBOOK_GRADEBOOK", None, "",
            "the gradebook's database URL (postgresql://...); unset: STATE/gradebook.db (SQLite)"),
    Setting("ATTNBOOK_GRADING_SANDBOX", None, "",
            "none: grade trusted notebooks without bubblewrap; unset: refuse to grade without it"),
    Setting(f"{_GRADING}MEMORY_GIB", 4, "GiB", "a submission's memory: its processes and files"),
    Setting(f"{_GRADING}FILES_MIB", 256, "MiB", "what a submission may write (memory, counted in the above)"),
    Setting(f"{_GRADING}PROCESSES", 64, "processes", "a submission's processes at once (a cgroup's pids.max)"),
    Setting(f"{_GRADING}CPU_SECONDS", 300, "seconds", "CPU time per graded part"),
    Setting(f"{_GRADING}PART_SECONDS", 120, "seconds", "wall clock per graded part, on the judge's clock"),
    Setting(f"{_GRADING}SUBMISSION_SECONDS", 900, "seconds", "wall clock for a whole submission"),
    Setting(f"{_GRADING}JUDGE_MEMORY_GIB", 4, "GiB", "the judge's address space"),
    Setting(f"{_GRADING}FRAME_MIB", 16, "MiB", "the largest reply the judge reads from a worker"),
    Setting(f"{_GRADING}OUTPUT_CHARS", 20000, "characters", "a part's feedback (the rest is counted, not kept)"),
)
_BY_NAME = {s.name: s for s in SETTINGS}


def value(name: str, environ: Mapping[str, str] | None = None) -> float | str | None:
    """``name``'s value in ``environ`` (default: the process's), as a float where it has a unit, else text;
    its default where it is unset or empty. A value that is not a number where one is due raises, naming it."""
    setting = _BY_NAME[name]
    given = (os.environ if environ is None else environ).get(name, "").strip()
    if not given:
        return float(setting.default) if setting.unit and setting.default is not None else setting.default
    if not setting.unit:
        return given
    try:
        return float(given)
    except ValueError:
        raise ValueError(f"{name} should be a number ({setting.unit}), not {given!r}") from None


def text(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """A setting without a unit: its text, or its default (``None``: unset).

    >>> text("ATTNBOOK_DATA", {}), text("ATTNBOOK_DEVICE", {"ATTNBOOK_DEVICE": " cpu "})
    ('~/.cache/attnbook', 'cpu')
    """
    given = value(name, environ)
    return None if given is None else str(given)


def grading(environ: Mapping[str, str] | None = None) -> dict[str, float]:
    """Every ``ATTNBOOK_GRADING_*`` limit in force, by its short name (``part_seconds``).

    >>> grading({})["files_mib"], grading({"ATTNBOOK_GRADING_FILES_MIB": "64"})["files_mib"]
    (256.0, 64.0)
    """
    return {s.name.removeprefix(_GRADING).lower(): float(value(s.name, environ))  # type: ignore[arg-type]
            for s in SETTINGS if s.name.startswith(_GRADING) and s.unit}


def table(environ: Mapping[str, str] | None = None) -> str:
    """Each setting on two lines: its name, default and unit (and the value the environment gives), then
    what it means.

    >>> print(table({"ATTNBOOK_GRADING_PART_SECONDS": "30"}).split("\\n\\n")[10])
    ATTNBOOK_GRADING_PART_SECONDS = 120 seconds (set here: 30)
        wall clock per graded part, on the judge's clock
    """
    env = os.environ if environ is None else environ
    blocks = []
    for s in SETTINGS:
        default = "unset" if s.default is None else f"{s.default} {s.unit}".strip()
        here = f" (set here: {env[s.name].strip()})" if env.get(s.name, "").strip() else ""
        blocks.append(f"{s.name} = {default}{here}\n    {s.meaning}")
    return "\n\n".join(blocks)


if __name__ == "__main__":
    print(table())
