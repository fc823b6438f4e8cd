"""Submissions from the real world: an LMS download into ``submitted/``, misnamed notebooks, what to tell a
student whose notebook could not be graded.

``attnbook-course collect ZIP [--assignment ID] [--roster CSV]`` reads a zip (or its unpacked folder) in any
of these layouts, one member at a time (``download.py``), and writes ``submitted/<student>/<assignment>/``
with the files under their own names and a ``timestamp.txt`` (the time nbgrader's exchange would have
written); the assignment, unless named, is the one whose grade ids the notebooks share:

* Canvas's "Download submissions": ``<name>[_late]_<user id>_<submission id>_<file>``;
* Moodle's "Download all submissions": ``<Full Name>_<participant id>_assignsubmission_file_/<file>``
  (or the same prefix on the file's name, without folders);
* nbgrader's ``zip_collect`` example layout (Blackboard's):
  ``<assignment>_<student>_attempt_<YYYY-MM-DD-HH-MM-SS>_<file>``;
* nbgrader's own: ``<student>/<assignment>/<file>`` (``timestamp.txt`` kept).

Only the part of a name the LMS writes is parsed for an id: Canvas and zip_collect names are read at the
top of the download only, Moodle's from its folder's name, so a file name or a folder the student chose
never files a submission under someone else; a name that reads as both Canvas's and zip_collect's goes
with the layout of the rest of the download. A Canvas display name may hold ``_`` and digits of its own
(``eve_340934``), so a Canvas name can read as several user ids: it is filed under the one the roster
holds, and skipped with a line saying why when the roster holds none or several of them, or there is no
roster, never under the first reading's. Canvas and Moodle name students by their own numeric ids; a
roster CSV maps them to the course's: its LMS id column is ``ID`` (Canvas's gradebook export),
``Identifier`` (Moodle's grading worksheet: ``Participant 123456``) or ``lms_id``, and its course id column
is ``student``, else ``SIS Login ID``. Without a roster, or for a student the roster lacks, the student's
folder is the LMS id itself, with a warning naming the student.

One bad member costs one student, never the download: a member whose path would leave its folder, a link,
a file name or student id that breaks :mod:`names`' rule, a file over ``max_bytes`` or a student's files
over ``4 * max_bytes``, a notebook whose cells are another assignment's, is skipped with a line saying
why. Of a student's several notebooks, the latest by the LMS's time is graded and the others are kept in
``.replaced/``. The time of a Canvas or Moodle entry is the zip entry's own time (a zip stores no zone:
``--zone`` says which, UTC unless told).

>>> parse_entry("smithbob_late_340934_208490284_exercises (1).ipynb")
Entry(lms='Canvas', lms_id='340934', name='smithbob', file='exercises (1).ipynb', late=True, when=None)
>>> parse_entry("Bob Smith_123456_assignsubmission_file_/Exercises.ipynb").lms_id
'123456'
>>> parse_entry("Eve_666_assignsubmission_file_/sub/bob_340934_208490284_exercises.ipynb") is None
True
>>> parse_entry("eve_340934_340935_7_exercises.ipynb", known_ids={"340935"}).lms_id
'340935'
>>> match_notebook(["notes.pdf", "Exercises (2).ipynb", "exercises (1).ipynb"])
'Exercises (2).ipynb'
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timezone, tzinfo
from pathlib import Path, PurePosixPath
from typing import TypeVar

from . import download, names
from .notes import Note

N = TypeVar("N")  # a notebook, as the reader given to read_submission reads it

NOTEBOOK = "exercises.ipynb"
MAX_DOWNLOAD = 4 << 30  # bytes written by one `collect` at most: past it, the rest is skipped and listed
# Canvas's <name>[_late]_<user id>_<submission id>_<file>: every place where _<digits>_<digits>_ starts (the
# display name, lowercased without spaces, and the file's name may hold _ and digits too)
_CANVAS_IDS = re.compile(r"(?=_(\d+)_(\d+)_)")
_MOODLE = re.compile(r"(?P<name>[^/]+)_(?P<id>\d+)_assignsubmission_file_")  # greedy: the last such suffix
_MOODLE_FLAT = re.compile(r"(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_file_(?P<file>[^/]+)")
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


def entries(path: str) -> list[Entry]:
    """Every reading of the LMS name ``path`` (a member's path, folders with ``/``): Moodle's from its
    folder, Canvas's and zip_collect's at the top of the download only; more than one when it is ambiguous.

    >>> [e.lms for e in entries("x_1_2_02-transformer_bob_attempt_2026-03-01-12-00-00_exercises.ipynb")]
    ['zip_collect', 'Canvas']
    """
    parts = path.split("/")
    if len(parts) > 1:
        m = _MOODLE.fullmatch(parts[0])
        return [Entry("Moodle", m["id"], m["name"], parts[1])] if m and len(parts) == 2 else []
    found = []
    if m := _MOODLE_FLAT.fullmatch(path):
        return [Entry("Moodle", m["id"], m["name"], m["file"])]
    if m := _ZIP_COLLECT.fullmatch(path):
        found.append(Entry("zip_collect", m["student"], m["student"], m["file"], when=m["when"]))
    if "/" not in path:
        found += _canvas(path)
    return found


def _canvas(path: str) -> list[Entry]:
    """Every reading of the top-level ``path`` as Canvas's name: one for each ``_<user id>_<submission id>_``
    with a name before it and a file after it.

    >>> [(e.name, e.lms_id, e.file) for e in _canvas("eve_340934_340935_7_exercises.ipynb")]
    [('eve', '340934', '7_exercises.ipynb'), ('eve_340934', '340935', 'exercises.ipynb')]
    """
    found = []
    for m in _CANVAS_IDS.finditer(path):
        head, file = path[:m.start()], path[m.start() + len(m[1]) + len(m[2]) + 3:]
        late = head.endswith("_late") and len(head) > len("_late")
        name = head.removesuffix("_late") if late else head
        if name and file:
            found.append(Entry("Canvas", m[1], name, file, late=late))
    return found


def parse_entry(path: str, layout: str | None = None, known_ids: Collection[str] | None = None) -> Entry | None:
    """The Canvas, Moodle or zip_collect name ``path``, read as ``layout`` when it reads as several, or None.

    A Canvas name whose readings name several user ids is read as the one in ``known_ids`` (the roster's LMS
    ids); when none or more than one of them is there, or there is no roster, it raises ``ValueError``
    saying why, since any choice could file the file under another student.

    >>> parse_entry("ps1_bitdiddle_attempt_2016-01-30-15-00-00_exercises.ipynb").when
    '2016-01-30-15-00-00'
    >>> parse_entry("alice/02-transformer/exercises.ipynb") is None
    True
    >>> try:
    ...     parse_entry("eve_340934_340935_7_exercises.ipynb")
    ... except ValueError as err:
    ...     print(str(err).removeprefix("an ambiguous Canvas name: ")[:77])
    a display name may hold _ and digits, and this one reads as user id 340934 or
    """
    found = entries(path)
    if len({e.lms for e in found}) > 1:
        found = [e for e in found if e.lms == layout]
    ids = sorted({e.lms_id for e in found}, key=lambda i: (len(i), i))  # Canvas's are digits: by value
    if len(ids) > 1:  # several Canvas readings: trust only the roster's ids
        mine = [e for e in found if known_ids is not None and e.lms_id in known_ids]
        if len({e.lms_id for e in mine}) == 1:
            return mine[0]
        why = ("with no roster given to tell which" if known_ids is None else
               f"and the roster holds {'none' if not mine else 'more than one'} of them")
        raise ValueError(f"an ambiguous Canvas name: a display name may hold _ and digits, and this one reads as "
                         f"user id {' or '.join(ids)} {why}; filed under neither")
    return found[0] if found else None


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


def locate(folder: Path) -> tuple[Path, Note | None, str]:
    """The notebook to grade in a submission's ``folder``; a note when it is not ``exercises.ipynb`` (a
    misnamed copy) or when the folder holds others; and what the folder holds when it has no notebook."""
    found_in = folder.is_dir() and not folder.is_symlink()
    names_ = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.is_symlink()) if found_in else []
    found = match_notebook(names_)
    others = [n for n in names_ if n.lower().endswith(".ipynb") and n != found]
    if found == NOTEBOOK:
        return folder / NOTEBOOK, (Note("review", f"graded {NOTEBOOK} of {len(others) + 1} notebooks")
                                   if others else None), ""
    if found:
        return folder / found, Note("misnamed", found), ""
    listed = [n for n in names_ if n != "timestamp.txt"]
    return folder / NOTEBOOK, None, f"the folder holds {', '.join(listed)}" if listed else ""


def read_submission(folder: Path, read: Callable[[Path], tuple[N | None, Note | None]]) -> tuple[N | None, list[Note]]:
    """The notebook of the submission in ``folder`` (``read`` reads one file: ``submission.read_submission``)
    and its notes: a misnamed notebook's, or why there is none. A link is never followed: a folder
    or a notebook that is one is not graded."""
    if folder.is_symlink() or folder.parent.is_symlink():
        return None, [Note("not_graded", "the submission's folder is a link (links are never followed)")]
    path, note, holds = locate(folder)
    if path.is_symlink():
        return None, [Note("not_graded", "the notebook is a link (links are never followed)")]
    nb, failed = read(path)
    if failed is not None and holds:
        failed = Note(failed.kind, failed.text, holds)
    return nb, [n for n in (failed, note) if n is not None]


# ------------------------------------------------------------------ rosters


def roster_rows(path: Path, problems: list[str] | None = None) -> tuple[list[str], dict[str, dict[str, str]]]:
    """A roster CSV's header and its rows by course id, with the LMS id (digits only) as ``lms_id``.

    A row whose course id breaks :func:`names.student_id`'s rule, or whose LMS id or course id another row
    has too, is left out, with a line in ``problems``; without ``problems``, any such row is a ValueError.
    """
    lines: list[str] = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        fields = list(reader.fieldnames or [])
        lms = next((c for c in ("ID", "Identifier", "lms_id") if c in fields), None)
        ours = next((c for c in ("student", "SIS Login ID") if c in fields), None)
        if lms is None or ours is None:
            got = names.shown(", ".join(fields)) or "no header"
            raise ValueError(f"roster {path}: expected an LMS id column (ID, Identifier or lms_id) and a course "
                             f"id column (student or SIS Login ID), got {got}")
        rows = []
        for row in reader:
            row = {k: (v or "").strip() for k, v in row.items() if isinstance(k, str)}
            row["lms_id"] = re.sub(r"\D", "", row.get(lms, ""))  # "Participant 123456" -> "123456"
            if row["lms_id"] and row.get(ours):  # Canvas's "Points Possible" row has neither
                rows.append((reader.line_num, row))
    twice = Counter(r["lms_id"] for _, r in rows) + Counter(r[ours] for _, r in rows)
    out = {}
    for line, row in rows:
        where = f"roster {path.name}, line {line}"
        if not names.is_student_id(row[ours]):
            lines.append(f"{where}: left out: {ours} {names.shown(row[ours])!r} is not a student id (1 to 64 of "
                         "A-Z a-z 0-9 . _ @ -, beginning with a letter or a digit)")
        elif twice[row["lms_id"]] > 1 or twice[row[ours]] > 1:
            lines.append(f"{where}: left out: {ours} {row[ours]} or LMS id {row['lms_id']} is on another row too")
        else:
            out[row[ours]] = row
    if lines and problems is None:
        raise ValueError("\n".join(lines))
    (problems if problems is not None else []).extend(lines)
    return fields, out


def read_roster(path: Path, problems: list[str] | None = None) -> dict[str, str]:
    """LMS id -> course id, from a roster CSV (the columns are in the module's docstring)."""
    return {row["lms_id"]: student for student, row in roster_rows(path, problems)[1].items()}


# ------------------------------------------------------------------ the download


@dataclass(frozen=True)
class Collected:
    """One staged file of a download: whose, its name, the LMS's time, where it lies now."""

    student: str
    file: str
    when: datetime | None
    staged: Path
    note: str | None = None
    lms: str = ""
    assignment: str = ""  # the assignment folder of an nbgrader path
    ids: frozenset[str] = frozenset()  # a notebook's grade ids, read once: they say whose notebook it is

    @property
    def time(self) -> datetime:
        """The LMS's time, the earliest possible when it gave none (for ordering)."""
        return self.when or datetime.min.replace(tzinfo=timezone.utc)


def _layout(found: list[download.Member]) -> str | None:
    """The flat layout (Canvas or zip_collect) of most of the download's top-level names that read as one."""
    votes = Counter(e.pop() for m in found if len(e := {r.lms for r in entries(m.path)}) == 1)
    flat = [(n, lms) for lms, n in votes.items() if lms in ("Canvas", "zip_collect")]
    return max(flat)[1] if flat else None


def _read(found: list[download.Member], assignment: str | None, roster: dict[str, str] | None, zone: tzinfo,
          staging: Path, max_bytes: int, max_total: int) -> tuple[list[Collected], list[str]]:
    """Stage every member that names a student's file (of ``assignment`` in nbgrader's layout; of any, when
    it is None: the notebooks say which later); the lines of what was skipped and why."""
    items: list[Collected] = []
    skipped: list[str] = []
    unnamed: dict[str, str] = {}
    used: Counter[str] = Counter()
    layout = _layout(found)
    for number, member in enumerate(found):
        path = member.path
        if path.startswith("__MACOSX/") or PurePosixPath(path).name.startswith("."):
            continue
        shown = names.shown(path)
        why = download.problem(path) or (None if member.regular else "a link or special file: never followed")
        entry = None
        if why is None:
            try:
                entry = parse_entry(path, layout, None if roster is None else roster.keys())
            except ValueError as err:
                why = str(err)
        if why is None and entry is None:
            parts = path.split("/")
            if len(parts) == 3 and (assignment is None or parts[1] == assignment):  # nbgrader's own layout
                entry = Entry("nbgrader", parts[0], parts[0], parts[2], when=parts[1])
            elif len(parts) == 3:
                why = f"another assignment's folder ({names.shown(parts[1])})"
            else:
                why = "not a Canvas, Moodle, zip_collect or nbgrader name"
        if why is None and entry is not None:  # (entry is set wherever why is None)
            if entry.lms in ("Canvas", "Moodle"):
                student = (roster or {}).get(entry.lms_id) or entry.lms_id
                if student == entry.lms_id:
                    unnamed[entry.lms_id] = f"{names.shown(entry.name)} ({entry.lms})"
            else:
                student = entry.lms_id
            try:
                names.student_id(student)
                names.file_name(entry.file)
            except ValueError as err:
                why = str(err)
        if why is None and (member.size > max_bytes or used[student] + member.size > 4 * max_bytes):
            why = f"{member.size} bytes: over the cap of {max_bytes} a file, {4 * max_bytes} a student"
        if why is None and sum(used.values()) + member.size > max_total:
            why = f"the download's cap of {max_total} bytes is reached"
        if why is None:
            size = download.stage(member, staging / str(number), min(max_bytes, 4 * max_bytes - used[student]))
            why = f"more than {max_bytes} bytes once read (its size was misdeclared)" if size is None else None
        if why or entry is None or size is None:  # (entry and size are set wherever why is None)
            skipped.append(f"skipped {shown}: {why}")
            continue
        used[student] += size
        items.append(_collected(entry, student, member, zone, staging / str(number)))
    if unnamed:
        where = "no roster given" if roster is None else "not in the roster"
        skipped.append(f"{where}: {len(unnamed)} students are named by their LMS id: "
                       + ", ".join(f"{i} = {n}" for i, n in sorted(unnamed.items())))
    return items, skipped


def _collected(entry: Entry, student: str, member: download.Member, zone: tzinfo, staged: Path) -> Collected:
    when: datetime | None
    if entry.lms == "zip_collect":
        when = datetime.strptime(entry.when or "", "%Y-%m-%d-%H-%M-%S").replace(tzinfo=zone)
    else:
        when = None if entry.file == "timestamp.txt" else member.when.replace(tzinfo=zone)
    note = "marked late by Canvas" if entry.late else None
    folder = entry.when if entry.lms == "nbgrader" else ""  # nbgrader's path names the assignment
    ids = frozenset(grade_ids(staged)) if entry.file.lower().endswith(".ipynb") else frozenset()
    return Collected(student, entry.file, when, staged, note, entry.lms, folder or "", ids)


def grade_ids(path: Path) -> set[str]:
    """The grade ids of a notebook file's cells, or none when it is not a readable notebook."""
    try:
        cells = json.loads(path.read_bytes())["cells"]
        return {c["metadata"]["nbgrader"]["grade_id"] for c in cells if "nbgrader" in c.get("metadata", {})}
    except (ValueError, KeyError, TypeError, AttributeError):
        return set()


def whose(ids: set[str], known: dict[str, set[str]]) -> str | None:
    """The assignment whose grade ids ``ids`` share most, or None when they share none.

    >>> whose({"a", "b"}, {"x": {"a"}, "y": {"a", "b", "c"}}), whose({"z"}, {"x": {"a"}})
    ('y', None)
    """
    best = max(known, key=lambda a: len(ids & known[a]), default=None)
    return best if best is not None and ids & known[best] else None


def guess_assignment(items: list[Collected], known: dict[str, set[str]]) -> str:
    """The assignment whose cells' grade ids the download's notebooks share most (``known``: assignment ->
    the grade ids of its released notebook)."""
    votes = Counter({a: 0 for a in known})
    for item in items:
        if item.file.lower().endswith(".ipynb"):
            ids = item.ids
            votes.update({a: len(ids & theirs) for a, theirs in known.items()})
    best = max(votes, key=lambda a: votes[a], default=None)
    if best is None or votes[best] == 0:
        raise ValueError("ASSIGNMENT: none of the download's notebooks has the cells of an assignment; name it")
    return best


def collect(source: Path, submitted: Path, assignment: str | dict[str, set[str]], roster_path: Path | None = None,
            zone: str = "UTC", max_bytes: int = 64 << 20,
            due: Callable[[str, str], datetime | None] | None = None, known: dict[str, set[str]] | None = None,
            max_total: int = MAX_DOWNLOAD) -> list[str]:
    """Write an LMS download's submissions of ``assignment`` into ``submitted/``; return what it did and
    its warnings, one line each (a misnamed notebook is graded, and named here). ``assignment`` may be
    each assignment's grade ids instead: the download's notebooks then say which (:func:`guess_assignment`).
    ``known`` (each assignment's grade ids), when given with a named assignment, refuses the notebooks whose
    cells are another assignment's. ``zone`` is the time zone of the zip's times (an IANA name such as
    ``Europe/Paris``). ``due(assignment, student)``, when given, is a student's due date: a Canvas late mark
    that the zip's time contradicts is a warning (the zone is likely wrong)."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not source.exists():
        raise ValueError(f"ZIP: no such file or folder: {source}")
    try:
        tz = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise ValueError(f"zone: expected a time zone name such as UTC or Europe/Paris, got {zone!r}") from err
    lines: list[str] = []
    roster = read_roster(roster_path, lines) if roster_path else None
    named = assignment if isinstance(assignment, str) else None  # else the notebooks say which
    submitted.mkdir(parents=True, exist_ok=True)
    _sweep(submitted.parent)
    staging = Path(tempfile.mkdtemp(prefix=f".collect-{os.getpid()}-", dir=submitted.parent))
    try:
        with download.members(source) as found:
            items, skipped = _read(found, named, roster, tz, staging, max_bytes, max_total)
        lines += skipped
        grades = assignment if isinstance(assignment, dict) else known
        if isinstance(assignment, dict):
            assignment = guess_assignment(items, assignment)
            lines.append(f"the notebooks are {assignment}'s")
        kept, refused = _of_assignment(items, assignment, grades)
        lines += refused
        by_student: dict[str, list[Collected]] = {}
        for item in kept:
            by_student.setdefault(item.student, []).append(item)
        for student, mine in sorted(by_student.items()):
            lines.append(_write(submitted / student / assignment, student, assignment, mine, due))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return lines


def _sweep(state: Path) -> None:
    """Remove the staging folders that a ``collect`` stopped half-way left (its process is gone)."""
    for folder in state.glob(".collect-*-*"):
        try:
            os.kill(int(folder.name.split("-")[2]), 0)
        except (ProcessLookupError, ValueError):
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:  # another user's process: running
            continue


def _of_assignment(items: list[Collected], assignment: str,
                   known: dict[str, set[str]] | None) -> tuple[list[Collected], list[str]]:
    """The items of ``assignment`` (an nbgrader path names its own; a notebook's cells say whose), and lines
    for the students whose notebooks belong to another assignment (all their files are left out)."""
    items = [i for i in items if i.lms != "nbgrader" or i.assignment == assignment]
    wrong: dict[str, str] = {}
    for item in items:
        if known and item.file.lower().endswith(".ipynb"):
            theirs = whose(set(item.ids), known)
            if theirs not in (None, assignment):
                wrong[item.student] = f"skipped {item.student}'s files: {names.shown(item.file)!r} is " \
                                      f"{theirs}'s notebook, not {assignment}'s (collect it with ASSIGNMENT={theirs})"
    return [i for i in items if i.student not in wrong], sorted(wrong.values())


def _plain_folder(folder: Path) -> Path:
    """``folder``, made, with no link in its place nor in its parent's (what the state holds is ours)."""
    for path in (folder.parent, folder):
        if path.is_symlink():
            path.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write(folder: Path, student: str, assignment: str, items: list[Collected],
           due: Callable[[str, str], datetime | None] | None) -> str:
    """Write one student's files of a download into ``folder``; the line saying what was done."""
    _plain_folder(folder)
    notes = sorted({i.note for i in items if i.note})
    latest: dict[str, Collected] = {}  # a name twice (zip_collect's attempts): the latest
    for item in sorted(items, key=lambda i: (i.time, i.staged.name)):
        latest[item.file] = item
    items = list(latest.values())
    notebooks = [i for i in items if i.file.lower().endswith(".ipynb")]
    kept = _latest(notebooks)
    spare = [i for i in notebooks if i is not kept]  # of several notebooks, the latest by the LMS's time is graded
    if spare and kept:  # (kept is set wherever there is a spare)
        notes.append(f"{len(notebooks)} notebooks: kept the latest, {kept.file!r}; moved "
                     f"{', '.join(repr(i.file) for i in spare)} to .replaced/")
    # An earlier download's notebook would be graded instead of a resubmission that Canvas renamed
    # (exercises.ipynb, then exercises-1.ipynb): it moves to .replaced/, kept but out of the way.
    stale = [p for p in folder.glob("*.ipynb") if p.name not in {i.file for i in items} or p.is_symlink()]
    if stale or spare:
        _plain_folder(folder / ".replaced")
    for old in stale:
        old.replace(folder / ".replaced" / old.name)
    notes += [f"moved the earlier {', '.join(sorted(p.name for p in stale))} to .replaced/"] if stale else []
    for item in items:
        target = folder / ".replaced" / item.file if item in spare else folder / item.file
        target.unlink(missing_ok=True)  # a link in its place is replaced, never written through
        shutil.move(item.staged, target)
    stamped = [kept.when] if kept and kept.when else []
    if stamped and "timestamp.txt" not in latest:  # the time of the notebook graded
        utc = stamped[0].astimezone(timezone.utc)
        (folder / "timestamp.txt").unlink(missing_ok=True)
        (folder / "timestamp.txt").write_text(utc.strftime(_STAMP).replace("+0000", "UTC"))
        deadline = due(assignment, student) if due and any(i.lms == "Canvas" for i in items) else None
        marked = "marked late by Canvas" in notes
        if deadline and marked != (utc > deadline):
            notes.append(f"warning: Canvas {'marks' if marked else 'does not mark'} it late but its time, "
                         f"{utc:%Y-%m-%d %H:%M} UTC, is {'before' if marked else 'after'} the due date: "
                         "is ZONE the zone of the zip's times?")
    notebook = match_notebook([i.file for i in items if i not in spare])
    if notebook is None:
        notes.append(f"warning: no notebook among {', '.join(sorted(names.shown(i.file) for i in items))}")
    elif notebook != NOTEBOOK:
        notes.append(f"warning: {notebook!r} will be graded as {NOTEBOOK}")
    return f"{student}/{assignment}: {len(items)} files" + "".join(f"; {n}" for n in notes)


def _latest(notebooks: list[Collected]) -> Collected | None:
    """The latest of a student's notebooks by the LMS's time; of those at the same time, the one
    :func:`match_notebook` would grade (Canvas's resubmission ``exercises-1.ipynb`` before ``exercises.ipynb``
    only when it is later)."""
    if not notebooks:
        return None
    last = max(i.time for i in notebooks)
    tied = [i for i in notebooks if i.time == last]
    chosen = match_notebook([i.file for i in tied]) or max(i.file for i in tied)
    return next(i for i in tied if i.file == chosen)


# ------------------------------------------------------------------ a folder of submissions


def copy_submissions(source: Path, submitted: Path, wanted: Callable[[str, str], bool],
                     assignments: list[str]) -> list[str]:
    """Copy ``source/<student>/<assignment>/`` into ``submitted/`` (adding and updating, never deleting) for
    the pairs ``wanted(student, assignment)`` accepts; return a line for each thing left out. Only folders
    and regular files are copied: a link (to a folder or a file) is never followed, and a student id or a
    notebook's file name that breaks :mod:`names`' rule is left out."""
    lines = []
    for student_dir in sorted(source.iterdir()):
        student = student_dir.name
        if student_dir.is_symlink() or not student_dir.is_dir():
            lines += [f"skipped {names.shown(student)}: a link, never followed"] if student_dir.is_symlink() else []
            continue
        if not names.is_student_id(student):
            lines.append(f"skipped {names.shown(student)}: not a student id (1 to 64 of A-Z a-z 0-9 . _ @ -, "
                         "beginning with a letter or a digit)")
            continue
        for folder in sorted(student_dir.iterdir()):
            if folder.name not in assignments or not wanted(student, folder.name):
                continue
            if folder.is_symlink() or not folder.is_dir():
                lines.append(f"skipped {student}/{names.shown(folder.name)}: not a folder, or a link")
                continue
            lines += _copy_tree(folder, _plain_folder(submitted / student / folder.name), f"{student}/{folder.name}")
    return lines


def _copy_tree(folder: Path, target: Path, shown: str, top: bool = True) -> list[str]:
    """Copy ``folder``'s folders and regular files into ``target``; a line for each thing left out. The file
    names at the top, where the notebook is read from, must follow :func:`names.file_name`; those below
    (``.replaced/``, a student's data) are kept as they are."""
    lines = []
    for path in sorted(folder.iterdir()):
        where = f"{shown}/{names.shown(path.name)}"
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            lines.append(f"skipped {where}: a link or not a plain file, never followed")
            continue
        if path.is_dir():
            lines += _copy_tree(path, _plain_folder(target / path.name), where, top=False)
            continue
        try:
            names.file_name(path.name) if top else None
        except ValueError as err:
            lines.append(f"skipped {where}: {err}")
            continue
        (target / path.name).unlink(missing_ok=True)  # a link in its place is replaced, never written through
        shutil.copy2(path, target / path.name, follow_symlinks=False)
    return lines
