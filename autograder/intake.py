"""Submissions from the real world: an LMS download into ``submitted/``, misnamed notebooks, what to tell a
student whose notebook could not be graded.

``course.py collect ZIP [--assignment ID] [--roster CSV]`` reads a zip (or its unpacked folder) in any
of these layouts, one entry at a time, and writes ``submitted/<student>/<assignment>/`` with the files
under their own names and a ``timestamp.txt`` (the time nbgrader's exchange would have written); the
assignment, unless named, is the one whose grade ids the notebooks share:

* Canvas's "Download submissions": ``<name>[_late]_<user id>_<submission id>_<file>``;
* Moodle's "Download all submissions": ``<Full Name>_<participant id>_assignsubmission_file_/<file>``
  (or the same prefix on the file's name, without folders);
* nbgrader's ``zip_collect`` example layout (Blackboard's):
  ``<assignment>_<student>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>``;
* nbgrader's own: ``<student>/<assignment>/<file>`` (``timestamp.txt`` kept).

The time of a Canvas or Moodle entry is the zip entry's own time (a zip stores no zone: ``--zone`` says
which, UTC unless told). Canvas and Moodle name students by their own numeric ids; a roster CSV maps
them to the course's ids: its LMS id column is ``ID`` (Canvas's gradebook export), ``Identifier``
(Moodle's grading worksheet: ``Participant 123456``) or ``lms_id``, and its course id column is
``student``, else ``SIS Login ID``. Without a roster, or for a student the roster lacks, the student's
folder is the LMS id itself, with a warning naming the student.

>>> parse_entry("smithbob_late_340934_208490284_exercises (1).ipynb")
Entry(lms='Canvas', lms_id='340934', name='smithbob', file='exercises (1).ipynb', late=True, when=None)
>>> parse_entry("Bob Smith_123456_assignsubmission_file_/Exercises.ipynb").lms_id
'123456'
>>> match_notebook(["notes.pdf", "Exercises (2).ipynb", "exercises (1).ipynb"])
'Exercises (2).ipynb'
"""

from __future__ import annotations

import csv
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path, PurePosixPath

NOTEBOOK = "exercises.ipynb"
_CANVAS = re.compile(r"(?P<name>[^_/]+?)(?P<late>_late)?_(?P<id>\d+)_(?P<sub>\d+)_(?P<file>[^/]+)")
_MOODLE = re.compile(r"(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_file_/?(?P<file>[^/]+)")
_ZIP_COLLECT = re.compile(r"(?P<assignment>[^/]+?)_(?P<student>[^_/]+)_attempt_"
                          r"(?P<when>\d{4}(?:-\d\d){5})_(?P<file>[^/]+)")
_COPY = re.compile(r"(?:\s*\(\d+\)|[-_ ]\d+|\s*-?\s*copy(?:\s*\d+)?)$", re.I)  # " (1)", "-1", " copy"
_STAMP = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's timestamp_format


@dataclass(frozen=True)
class Entry:
    """What an LMS's name for a file says: which LMS, the student's id and name there, the file's own
    name, whether the LMS marked it late (Canvas) and, when the name carries one, the time."""

    lms: str
    lms_id: str
    name: str
    file: str
    late: bool = False
    when: str | None = None


def parse_entry(path: str) -> Entry | None:
    """The Canvas, Moodle or zip_collect name ``path`` (a zip entry, folders with ``/``), or None.

    >>> parse_entry("ps1_bitdiddle_attempt_2016-01-30-15-00-00_exercises.ipynb").when
    '2016-01-30-15-00-00'
    >>> parse_entry("alice/02-transformer/exercises.ipynb") is None
    True
    """
    if m := _MOODLE.fullmatch(path):
        return Entry("Moodle", m["id"], m["name"], m["file"])
    name = PurePosixPath(path).name
    if m := _ZIP_COLLECT.fullmatch(name):
        return Entry("zip_collect", m["student"], m["student"], m["file"], when=m["when"])
    if m := _CANVAS.fullmatch(name):
        return Entry("Canvas", m["id"], m["name"], m["file"], late=bool(m["late"]))
    return None


def match_notebook(names: list[str]) -> str | None:
    """Which of the file names in a submission's folder is its exercise notebook: ``exercises.ipynb``,
    else the last copy of it that a browser or an LMS renamed (``exercises (1).ipynb``, ``Exercises.ipynb``,
    ``exercises-2.ipynb``), else the folder's only notebook, else None.

    >>> match_notebook(["exercises-1.ipynb"]), match_notebook(["mine.ipynb"]), match_notebook(["a.ipynb", "b.ipynb"])
    ('exercises-1.ipynb', 'mine.ipynb', None)
    """
    if NOTEBOOK in names:
        return NOTEBOOK
    notebooks = sorted(n for n in names if n.lower().endswith(".ipynb") and not n.startswith("."))
    stem = NOTEBOOK.removesuffix(".ipynb")
    copies = [n for n in notebooks if _COPY.sub("", n[:-6].strip()).lower() == stem]
    if copies:
        return max(copies, key=lambda n: (int(m[0]) if (m := re.search(r"\d+", n[len(stem):])) else 0, n))
    return notebooks[0] if len(notebooks) == 1 else None


def locate(folder: Path) -> tuple[Path, str | None]:
    """The notebook to grade in a submission's ``folder``, and a note when it is not ``exercises.ipynb``
    (a misnamed copy, or what the folder holds instead of a notebook)."""
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.is_symlink()) if folder.is_dir() else []
    found = match_notebook(names)
    if found == NOTEBOOK:
        return folder / NOTEBOOK, None
    if found:
        return folder / found, f"review: graded {found!r} as {NOTEBOOK} (misnamed)"
    others = [n for n in names if n != "timestamp.txt"]
    return folder / NOTEBOOK, f"the folder holds {', '.join(others)}" if others else None


def read_submission(folder: Path, read: Callable[[Path], tuple[object, str | None]]) -> tuple[object, list[str]]:
    """The notebook of the submission in ``folder`` (``read`` reads one file: ``submission.read_submission``)
    and its status notes: a misnamed notebook's, or why there is none."""
    path, note = locate(folder)
    nb, status = read(path)
    if status and note and not note.startswith("review"):
        return nb, [f"{status} ({note})"]
    return nb, [s for s in (status, note) if s]


def notice(status: str, late_sentence: str | None) -> str | None:
    """What the top of a student's feedback says about their submission as a whole (Markdown), or None.

    >>> print(notice("not graded: notebook is not valid JSON", None))
    **Your notebook could not be graded (notebook is not valid JSON).** Every part scores 0. Open it in \
Jupyter to see what is wrong (a file cut short, or one that is not a notebook), and ask your instructor.
    >>> print(notice("not graded: notebook missing (the folder holds notes.pdf)", None))
    **No notebook named `exercises.ipynb` was found in your submission (the folder holds notes.pdf).** Every \
part scores 0.
    >>> print(notice("review: graded 'exercises (1).ipynb' as exercises.ipynb (misnamed)", None))
    Your notebook was named `exercises (1).ipynb`; it was graded as `exercises.ipynb`. Keep the name \
`exercises.ipynb` when you submit.
    """
    lines = []
    for part in status.split("; "):
        if part.startswith("not graded: notebook missing"):
            lines.append(f"**No notebook named `{NOTEBOOK}` was found in your submission"
                         f"{part.removeprefix('not graded: notebook missing')}.** Every part scores 0.")
        elif part.startswith("not graded: "):
            lines.append(f"**Your notebook could not be graded ({part.removeprefix('not graded: ')}).** Every part "
                         "scores 0. Open it in Jupyter to see what is wrong (a file cut short, or one that is not "
                         "a notebook), and ask your instructor.")
        elif m := re.fullmatch(r"review: graded '(.+)' as .+ \(misnamed\)", part):
            lines.append(f"Your notebook was named `{m[1]}`; it was graded as `{NOTEBOOK}`. Keep the name "
                         f"`{NOTEBOOK}` when you submit.")
        elif part.startswith("review: test cell edited or deleted"):
            lines.append("A test cell of your notebook was edited, renamed or deleted: it was graded with the "
                         "original test cell, shown at its place or at the end.")
    lines += [late_sentence] if late_sentence else []
    return "\n\n".join(lines) or None


# ------------------------------------------------------------------ rosters and zips


def roster_rows(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    """A roster CSV's header and its rows by course id, with the LMS id (digits only) as ``lms_id``."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or [])
        lms = next((c for c in ("ID", "Identifier", "lms_id") if c in fields), None)
        ours = next((c for c in ("student", "SIS Login ID") if c in fields), None)
        if lms is None or ours is None:
            raise ValueError(f"roster {path}: expected an LMS id column (ID, Identifier or lms_id) and a course "
                             f"id column (student or SIS Login ID), got {', '.join(fields) or 'no header'}")
        rows = {}
        for row in reader:
            row = {k: (v or "").strip() for k, v in row.items() if k}
            row["lms_id"] = re.sub(r"\D", "", row[lms])  # "Participant 123456" -> "123456"
            if row["lms_id"] and row[ours]:  # Canvas's "Points Possible" row has neither
                rows[row[ours]] = row
    return fields, rows


def read_roster(path: Path) -> dict[str, str]:
    """LMS id -> course id, from a roster CSV (the columns are in the module's docstring)."""
    return {row["lms_id"]: student for student, row in roster_rows(path)[1].items()}


def _safe(name: str, what: str) -> str:
    """A file or folder name that stays where it is written."""
    if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"{what}: expected a plain file or folder name, got {name!r}")
    return name


@dataclass(frozen=True)
class Collected:
    student: str
    file: str
    when: datetime | None
    data: bytes
    note: str | None = None
    lms: str = ""


def _entries(source: Path, max_bytes: int):
    """(path, bytes, time as naive datetime) of every file in a zip or a folder, largest refused."""
    if source.is_dir():
        for p in sorted(source.rglob("*")):
            if p.is_file() and not p.is_symlink():
                if p.stat().st_size > max_bytes:
                    raise ValueError(f"{p}: {p.stat().st_size} bytes, more than {max_bytes}")
                yield p.relative_to(source).as_posix(), p.read_bytes(), datetime.fromtimestamp(p.stat().st_mtime)
        return
    with zipfile.ZipFile(source) as archive:
        for info in sorted(archive.infolist(), key=lambda i: i.filename):
            if info.is_dir():
                continue
            if info.file_size > max_bytes:
                raise ValueError(f"{source}: {info.filename} is {info.file_size} bytes, more than {max_bytes}")
            yield info.filename, archive.read(info), datetime(*info.date_time)


def read_download(source: Path, assignment: str, roster: dict[str, str] | None, zone: tzinfo,
                  max_bytes: int) -> tuple[list[Collected], list[str]]:
    """Every submitted file of ``assignment`` in an LMS download, and the warnings to print."""
    found, warnings, unnamed = [], [], {}
    for path, data, stamp in _entries(source, max_bytes):
        if path.startswith("__MACOSX/") or PurePosixPath(path).name.startswith("."):
            continue
        entry = parse_entry(path)
        if entry is None:
            parts = PurePosixPath(path).parts
            if len(parts) == 3 and parts[1] == assignment:  # nbgrader's own layout
                when = None if parts[2] == "timestamp.txt" else stamp.replace(tzinfo=zone)
                found.append(Collected(_safe(parts[0], path), _safe(parts[2], path), when, data))
            else:
                warnings.append(f"skipped {path}: not a Canvas, Moodle, zip_collect or nbgrader name")
            continue
        if entry.lms == "zip_collect":
            student = entry.lms_id
            when = datetime.strptime(entry.when, "%Y-%m-%d-%H-%M-%S").replace(tzinfo=zone)
        else:
            student = (roster or {}).get(entry.lms_id) or entry.lms_id
            if student == entry.lms_id:
                unnamed[entry.lms_id] = f"{entry.name} ({entry.lms})"
            when = stamp.replace(tzinfo=zone)
        note = "marked late by Canvas" if entry.late else None
        found.append(Collected(_safe(student, path), _safe(entry.file, path), when, data, note, entry.lms))
    if unnamed:
        where = "no roster given" if roster is None else "not in the roster"
        warnings.append(f"{where}: {len(unnamed)} students are named by their LMS id: "
                        + ", ".join(f"{i} = {n}" for i, n in sorted(unnamed.items())))
    return found, warnings


def guess_assignment(source: Path, known: dict[str, set[str]], max_bytes: int) -> str:
    """The assignment whose cells' grade ids the download's notebooks share most (``known``: assignment ->
    the grade ids of its released notebook)."""
    import json

    votes = dict.fromkeys(known, 0)
    for path, data, _ in _entries(source, max_bytes):
        if path.lower().endswith(".ipynb"):
            try:
                cells = json.loads(data)["cells"]
                ids = {c["metadata"]["nbgrader"]["grade_id"] for c in cells if "nbgrader" in c.get("metadata", {})}
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            for assignment, theirs in known.items():
                votes[assignment] += len(ids & theirs)
    best = max(votes, key=votes.get, default=None)
    if best is None or votes[best] == 0:
        raise ValueError(f"ASSIGNMENT: none of {source}'s notebooks has the cells of an assignment; name it")
    return best


def collect(source: Path, submitted: Path, assignment: str | dict[str, set[str]], roster_path: Path | None = None,
            zone: str = "UTC", max_bytes: int = 64 << 20,
            due: Callable[[str, str], datetime | None] | None = None) -> list[str]:
    """Write an LMS download's submissions of ``assignment`` into ``submitted/``; return what it did and
    its warnings, one line each (a misnamed notebook is graded, and named here). ``assignment`` may be
    each assignment's grade ids instead: the download's notebooks then say which (:func:`guess_assignment`).
    ``zone`` is the time zone of the zip's times (an IANA name such as ``Europe/Paris``). ``due(assignment,
    student)``, when given, is a student's due date: a Canvas late mark that the zip's time contradicts is
    a warning (the zone is likely wrong)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not source.exists():
        raise ValueError(f"ZIP: no such file or folder: {source}")
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(f"zone: expected a time zone name such as UTC or Europe/Paris, got {zone!r}") from err
    roster = read_roster(roster_path) if roster_path else None
    guessed = not isinstance(assignment, str)
    assignment = guess_assignment(source, assignment, max_bytes) if guessed else assignment
    files, lines = read_download(source, assignment, roster, tz, max_bytes)
    lines += [f"the notebooks are {assignment}'s"] if guessed else []
    by_student: dict[str, list[Collected]] = {}
    for item in files:
        by_student.setdefault(item.student, []).append(item)
    for student, items in sorted(by_student.items()):
        folder = submitted / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        notes = [n for n in (i.note for i in items) if n]
        # An earlier download's notebook would be graded instead of a resubmission that Canvas renamed
        # (exercises.ipynb, then exercises-1.ipynb): it moves to .replaced/, kept but out of the way.
        stale = [p for p in folder.glob("*.ipynb") if p.name not in {i.file for i in items}]
        for old in stale:
            (folder / ".replaced").mkdir(exist_ok=True)
            old.replace(folder / ".replaced" / old.name)
        notes += [f"moved the earlier {', '.join(sorted(p.name for p in stale))} to .replaced/"] if stale else []
        for item in items:
            (folder / item.file).write_bytes(item.data)
        stamped = [i.when for i in items if i.when and i.file.lower().endswith(".ipynb")]
        if stamped and "timestamp.txt" not in [i.file for i in items]:  # the time of its latest notebook
            utc = max(stamped).astimezone(timezone.utc)
            (folder / "timestamp.txt").write_text(utc.strftime(_STAMP).replace("+0000", "UTC"))
            deadline = due(assignment, student) if due and any(i.lms == "Canvas" for i in items) else None
            marked = any(i.note == "marked late by Canvas" for i in items)
            if deadline and marked != (utc > deadline):
                notes.append(f"warning: Canvas {'marks' if marked else 'does not mark'} it late but its time, "
                             f"{utc:%Y-%m-%d %H:%M} UTC, is {'before' if marked else 'after'} the due date: "
                             "is ZONE the zone of the zip's times?")
        notebook = match_notebook([i.file for i in items])
        if notebook is None:
            notes.append(f"warning: no notebook among {', '.join(sorted(i.file for i in items))}")
        elif notebook != NOTEBOOK:
            notes.append(f"warning: {notebook!r} will be graded as {NOTEBOOK}")
        lines.append(f"{student}/{assignment}: {len(items)} files" + "".join(f"; {n}" for n in sorted(set(notes))))
    return lines
