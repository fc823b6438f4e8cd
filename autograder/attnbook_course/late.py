"""Deadlines and late work: when each submission was due and handed in, and what lateness costs.

A due date per assignment comes from ``deadlines.csv`` in the state folder
(columns ``assignment,student,due,policy``; a row with an empty ``student`` is
the assignment's, a row with one is that student's extension, ``*`` as the
assignment applies to every assignment without a row of its own), or, for an
assignment the file does not name, from nbgrader's gradebook (the ``duedate``
that ``nbgrader db assignment add ID --duedate=…`` or the formgrader sets, and
the student's ``extension``)::

    assignment,student,due,policy
    *,,,"per-day 10%, zero after 7d"
    02-transformer,,2026-03-01 17:00 Europe/Paris,
    02-transformer,alice,2026-03-04 17:00 +01:00,

The file is read strictly, and before anything is judged (:func:`load`): UTF-8
(a spreadsheet's byte-order mark, a UTF-16 file with one, ``;`` or tab separators
are read), exactly these columns, a real date, a time, and a zone that is an IANA
name, ``UTC``/``Z`` or an offset (:func:`parse_due`; ``PST`` or a time without a
zone is refused, not guessed), a policy of :func:`parse_policy`'s grammar, one row
per assignment and student, and assignments the course has. Every problem of the
file is named at once, by line and column (:class:`DeadlinesError`).

A submission's time is its ``timestamp.txt`` (what nbgrader's exchange writes,
and what ``intake.py`` writes from an LMS download), read by :func:`parse_time`
as nbgrader reads it, but for the zones nbgrader misreads. The policy turns hours
late into points deducted, with the semantics of nbgrader's
``LateSubmissionPlugin``: a penalty per notebook, never below 0 nor above the
score (``zero`` is nbgrader's own method). The penalty goes into the gradebook
(``late_submission_penalty``, and the submission's ``timestamp``), so that
nbgrader's feedback page, formgrader and ``nbgrader export`` show it, and into
each result as ``result["late"]``.

>>> policy = parse_policy("per-day 10%, zero after 7d")
>>> penalty(policy, hours_late=26.0, score=15.0, max_score=20.0)  # two started days: 20 % of 20 points
4.0
"""

from __future__ import annotations

import codecs
import csv
import difflib
import io
import math
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from .notes import Note
from .records import Lateness, SubmissionRecord

DEADLINES = "deadlines.csv"
COLUMNS = ("assignment", "student", "due", "policy")  # student and policy may be left out
_RATE = re.compile(r"per-(hour|day) (\d+(?:\.\d+)?) ?%")
_CUTOFF = re.compile(r"zero after (\d+(?:\.\d+)?) ?([hd])")
POLICIES = "none, zero, per-hour P%, per-day P%, zero after Nh, zero after Nd, or a rate and a cut-off " \
           "('per-day 10%, zero after 7d')"
_NUMBERS = {w: str(n) for n, w in enumerate("one two three four five six seven eight nine ten".split(), 1)} | {
    "fifteen": "15", "twenty": "20", "fifty": "50", "hundred": "100"}
_REWRITES = [  # a common way of writing a policy clause -> this grammar's
    (re.compile(r"(\d+(?:\.\d+)?) ?% ?(?:per|a|an|each|every|/) ?(hour|day)s?"), r"per-\2 \1%"),
    (re.compile(r"per[-_ ]?(hour|day)s?:? ?(\d+(?:\.\d+)?) ?%?"), r"per-\1 \2%"),
    (re.compile(r"zero after (\d+(?:\.\d+)?) ?(h|d)(?:ours?|ays?|rs?)"), r"zero after \1\2"),
]
_WHEN = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T]+(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?\s*(.*)")
_OFFSET = re.compile(r"([+-])(\d{1,2})(?::?(\d{2}))?")
_EXAMPLE = "a date and time such as 2026-03-01 17:00 Europe/Paris or 2026-03-01 17:00 +01:00"
_ABBREVIATIONS = {  # what people mean by a zone's abbreviation: an IANA name, the offset it stands for
    "PST": ("America/Los_Angeles", "-08:00"), "PDT": ("America/Los_Angeles", "-07:00"),
    "MST": ("America/Denver", "-07:00"), "MDT": ("America/Denver", "-06:00"),
    "CST": ("America/Chicago", "-06:00"), "CDT": ("America/Chicago", "-05:00"),
    "EST": ("America/New_York", "-05:00"), "EDT": ("America/New_York", "-04:00"),
    "GMT": ("Europe/London", "+00:00"), "BST": ("Europe/London", "+01:00"), "WET": ("Europe/Lisbon", "+00:00"),
    "CET": ("Europe/Paris", "+01:00"), "CEST": ("Europe/Paris", "+02:00"),
    "EET": ("Europe/Athens", "+02:00"), "EEST": ("Europe/Athens", "+03:00"),
}


@dataclass(frozen=True)
class Policy:
    """What lateness costs: ``rate`` percent of the assignment's points per started ``unit`` (hours) late,
    and the whole score once more than ``cutoff`` hours late (``None``: never)."""

    text: str
    rate: float = 0.0
    unit: float = 1.0
    cutoff: float | None = None


def parse_policy(text: str) -> Policy:
    """A policy from its words: ``none``, ``zero`` (nbgrader's: any lateness costs the whole score),
    ``per-hour P%`` or ``per-day P%`` (P from 0 to 100), ``zero after Nh`` or ``Nd``, or a rate and a cut-off
    together. Anything else is a ValueError that lists these and, for a common slip, suggests the right words.

    >>> parse_policy("per-hour 2%")
    Policy(text='per-hour 2%', rate=2.0, unit=1.0, cutoff=None)
    >>> parse_policy("per-day 10%, zero after 3d").cutoff, parse_policy("zero").cutoff, parse_policy("").rate
    (72.0, 0.0, 0.0)
    >>> parse_policy("10% per day")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: expected none, zero, per-hour P%, ..., got '10% per day' (did you mean 'per-day 10%'?)
    """
    policy = _policy(text)
    if policy is None:
        raise ValueError(f"expected {POLICIES}, got {text!r}{_policy_hint(text)}")
    return policy


def _policy(text: str) -> Policy | None:
    """The policy of ``text``, or None when it is not in the grammar."""
    words = " ".join(text.lower().split())
    if words in ("", "none"):
        return Policy(text)
    if words == "zero":
        return Policy(text, cutoff=0.0)
    clauses = [c.strip() for c in re.split(r",|\s(?=zero after)", words) if c.strip()]
    rates = [m for c in clauses if (m := _RATE.fullmatch(c))]
    cutoffs = [m for c in clauses if (m := _CUTOFF.fullmatch(c))]
    if len(rates) + len(cutoffs) != len(clauses) or len(rates) > 1 or len(cutoffs) > 1 or not clauses:
        return None
    rate, cutoff = rates[0] if rates else None, cutoffs[0] if cutoffs else None
    if rate and float(rate[2]) > 100:
        return None
    return Policy(text, rate=float(rate[2]) if rate else 0.0, unit=24.0 if rate and rate[1] == "day" else 1.0,
                  cutoff=float(cutoff[1]) * (24.0 if cutoff[2] == "d" else 1.0) if cutoff else None)


def _policy_hint(text: str) -> str:
    """Why ``text`` is not a policy, or what it probably means, in parentheses; "" when neither is known."""
    words = " ".join(text.lower().split())
    if re.search(r"(^|\s)-\s?\d", words):
        return " (a rate or a cut-off is never negative)"
    if any(float(m[2]) > 100 for m in _RATE.finditer(words)):
        return " (a rate is at most 100%)"
    if len(_RATE.findall(words)) > 1 or len(_CUTOFF.findall(words)) > 1:
        return " (one rate and one cut-off at most)"
    fixed = []
    for clause in (c.strip() for c in re.split(r",|\s(?=zero after)", words) if c.strip()):
        for word, number in _NUMBERS.items():
            clause = re.sub(rf"\b{word}\b", number, clause)
        for pattern, replacement in _REWRITES:
            if not (_RATE.fullmatch(clause) or _CUTOFF.fullmatch(clause)):
                clause = pattern.sub(replacement, clause)
        fixed.append(clause)
    guess = ", ".join(fixed)
    return f" (did you mean {guess!r}?)" if guess != words and _policy(guess) else ""


def penalty(policy: Policy, hours_late: float, score: float, max_score: float) -> float:
    """Points deducted, clipped to [0, score] as nbgrader clips them. A started hour or day counts whole.

    >>> per_hour = parse_policy("per-hour 1%")
    >>> penalty(per_hour, hours_late=2.5, score=18.0, max_score=20.0)  # 3 started hours: 3 % of 20 points
    0.6
    >>> penalty(per_hour, hours_late=50.0, score=3.0, max_score=20.0)  # 50 % of 20 is 10, but only 3 to lose
    3.0
    >>> penalty(parse_policy("zero"), hours_late=0.01, score=17.5, max_score=20.0)
    17.5
    >>> penalty(parse_policy("per-day 10%, zero after 3d"), hours_late=80.0, score=17.5, max_score=20.0)
    17.5
    >>> penalty(parse_policy("zero after 48h"), hours_late=47.0, score=17.5, max_score=20.0)  # accepted till then
    0.0
    >>> penalty(parse_policy("per-day 10%"), hours_late=0.0, score=17.5, max_score=20.0)
    0.0
    """
    if hours_late <= 0:
        return 0.0
    if policy.cutoff is not None and hours_late > policy.cutoff:
        return round(max(score, 0.0), 2)
    deducted = math.ceil(hours_late / policy.unit - 1e-9) * policy.rate / 100 * max_score
    return round(min(max(deducted, 0.0), max(score, 0.0)), 2)


def parse_due(text: str) -> datetime:
    """A due date as ``deadlines.csv`` must write it: ``YYYY-MM-DD HH:MM[:SS]`` (or ``T`` between) and a zone,
    an IANA name (``Europe/Paris``), ``UTC`` or ``Z``, or an offset in hours and minutes (``+01:00``, ``-0800``,
    ``+0530``); aware, in that zone. Anything else is a ValueError that says what was expected and why: an
    abbreviation (``PST``, ``CET``) is ambiguous, and a time without a zone is not guessed.

    >>> parse_due("2026-03-01 17:00 Europe/Paris").astimezone(timezone.utc).isoformat()
    '2026-03-01T16:00:00+00:00'
    >>> parse_due("2026-03-01T17:00-0800").astimezone(timezone.utc).isoformat()  # eight hours behind UTC
    '2026-03-02T01:00:00+00:00'
    >>> parse_due("2026-02-30 17:00 UTC")
    Traceback (most recent call last):
    ValueError: expected a date and time such as 2026-03-01 17:00 Europe/Paris or 2026-03-01 17:00 +01:00, \
got '2026-02-30 17:00 UTC' (no such day)
    >>> parse_due("2026-03-01 17:00 PST")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: expected ..., got '2026-03-01 17:00 PST' (PST is an abbreviation, ambiguous: write an IANA name \
such as America/Los_Angeles, or the offset meant, such as -08:00)
    """
    try:
        wall, zone = _wall(text)
        return _localize(wall, _due_zone(zone))
    except ValueError as err:
        raise ValueError(f"expected {_EXAMPLE}, got {text!r} ({err})") from None


def _wall(text: str) -> tuple[datetime, str]:
    """The date and time of ``text`` (naive) and what follows it (its zone, or ""); ValueError: why not."""
    match = _WHEN.fullmatch(text.strip())
    if not match:
        slashed = re.match(r"\d{1,2}[/.]\d{1,2}[/.]\d{2,4}", text.strip())
        raise ValueError("write the date year-month-day, as 2026-03-01" if slashed else "not a date and time")
    if match[4] is None:
        raise ValueError("no time of day")
    if match[4] == "24":
        raise ValueError("no such hour: 24:00 is 00:00 of the next day")
    try:
        year, month, day, hour, minute = map(int, match.group(1, 2, 3, 4, 5))
        return datetime(year, month, day, hour, minute, int(match[6] or 0),
                        int((match[7] or "0").ljust(6, "0"))), match[8].strip()
    except ValueError as err:
        raise ValueError(f"no such {str(err).split()[0]}") from None  # "day is out of range for month"


def _offset(match: re.Match) -> timezone:
    """The fixed zone of an offset ``+HH:MM``, ``+HHMM`` or ``+HH``: hours and minutes."""
    hours, minutes = int(match[2]), int(match[3] or 0)
    if hours > 14 or minutes > 59:
        raise ValueError("no such offset: hours from -12 to +14, minutes below 60")
    return timezone((-1 if match[1] == "-" else 1) * timedelta(hours=hours, minutes=minutes))


def _due_zone(zone: str) -> tzinfo:
    """The zone of a due date: UTC, Z, an offset or an IANA name; ValueError for anything else."""
    if not zone:
        raise ValueError("no time zone: add one, such as UTC, Europe/Paris or +01:00; a time without one is "
                         "not guessed")
    if zone.upper() in ("UTC", "Z"):
        return timezone.utc
    if match := _OFFSET.fullmatch(zone):
        return _offset(match)
    if match := re.fullmatch(r"(?:UTC|GMT) ?([+-].*)", zone, re.IGNORECASE):
        offset = _OFFSET.fullmatch(match[1])
        meant = f"{match[1][0]}{int(offset[2]):02d}:{offset[3] or '00'}" if offset else "+01:00"
        raise ValueError(f"write the offset alone, such as {meant}: {zone} reads with the opposite sign in "
                         "some software")
    if re.fullmatch(r"Etc/GMT[+-]\d+", zone, re.IGNORECASE):
        raise ValueError(f"{zone} has the POSIX sign, the opposite of an offset's: Etc/GMT+8 is 8 hours behind "
                         "UTC; write the offset, such as -08:00")
    if "/" in zone:
        try:
            return ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"no time zone {zone}{_zone_hint(zone)}") from None
    if re.fullmatch(r"[A-Za-z]{2,5}", zone) and zone.upper() == zone:
        name, meant = _ABBREVIATIONS.get(zone, ("Europe/Paris", "+01:00"))
        raise ValueError(f"{zone} is an abbreviation, ambiguous: write an IANA name such as {name}, or the "
                         f"offset meant, such as {meant}")
    raise ValueError(f"not a time zone: write an IANA name such as Europe/Paris, UTC or an offset such as "
                     f"+01:00{_zone_hint(zone)}")


def _zone_hint(zone: str) -> str:
    """``; did you mean 'Europe/Paris'?`` for a zone name close to one, or ""."""
    names = sorted(available_timezones())
    same = [n for n in names if n.lower() == zone.lower() or n.lower().endswith("/" + zone.lower())]
    close = same or difflib.get_close_matches(zone, names, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def _localize(wall: datetime, tz: tzinfo) -> datetime:
    """``wall`` in ``tz``; ValueError for a time the clocks skip or show twice there (daylight saving)."""
    when = wall.replace(tzinfo=tz)
    if when.astimezone(timezone.utc).astimezone(tz).replace(tzinfo=None) != wall:
        raise ValueError(f"no such time in {tz}: the clocks skip it, for daylight saving")
    if when.utcoffset() != when.replace(fold=1).utcoffset():
        raise ValueError(f"{wall:%H:%M} happens twice in {tz}, as the clocks go back: write the offset meant, "
                         f"such as {when.isoformat()[-6:]}")
    return when


def parse_time(text: str, what: str) -> datetime:
    """A submission's time as nbgrader writes one (``timestamp.txt``: ``2026-03-02 18:00:00.000000 UTC``), as
    an aware UTC datetime, read as nbgrader's ``parse_utc`` reads it but for the zones that it misreads: an
    offset (``-0800``) is hours and minutes, not seconds, and a zone the time zone database lacks (``PST``,
    ``CEST``: nbgrader takes it for UTC) is a ValueError, where one it holds (``CET``, ``EST``,
    ``Europe/Paris``) is read as nbgrader reads it. A time without a zone is UTC, as nbgrader has it.

    >>> parse_time("2026-03-01 18:00:00.000000 CET", "t").isoformat()
    '2026-03-01T17:00:00+00:00'
    >>> parse_time("2026-03-01T17:00", "t").isoformat(), parse_time("2026-03-01 09:00 -0800", "t").isoformat()
    ('2026-03-01T17:00:00+00:00', '2026-03-01T17:00:00+00:00')
    >>> parse_time("2026-03-01 09:00:00.000000 PST", "t")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: t: ... (no zone PST in the time zone database: nbgrader would read it as UTC)
    """
    try:
        wall, zone = _wall(text)
        if zone.upper() in ("", "UTC", "GMT", "Z"):
            return wall.replace(tzinfo=timezone.utc)
        if match := _OFFSET.fullmatch(zone):
            return wall.replace(tzinfo=_offset(match)).astimezone(timezone.utc)
        try:
            return wall.replace(tzinfo=ZoneInfo(zone)).astimezone(timezone.utc)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"no zone {zone} in the time zone database: nbgrader would read it as UTC") from None
    except ValueError as err:
        raise ValueError(f"{what}: expected a date and time such as 2026-03-01 17:00:00.000000 UTC, got "
                         f"{text.strip()!r} ({err})") from None


@dataclass(frozen=True)
class Deadline:
    """When it is due (aware, UTC; None: the gradebook says), the late policy, and the zone the file wrote."""

    due: datetime | None
    policy: Policy
    zone: tzinfo | None = None


class DeadlinesError(ValueError):
    """Every problem of a deadlines file, one a line, each naming the file, the line and the column."""

    def __init__(self, path: Path, problems: list[str]):
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem{'s' if len(problems) > 1 else ''} (`make deadlines` "
                         "checks the file alone):\n" + "\n".join(f"  {p}" for p in problems))


def read_deadlines(path: Path, assignments: Iterable[str] | None = None, students: Iterable[str] | None = None,
                   notes: list[str] | None = None) -> dict[tuple[str, str], Deadline]:
    """(assignment, student or "") -> its deadline, from a ``deadlines.csv``; a student's row without a due
    date or a policy takes the assignment's, and an assignment's row the ``*`` row's. Every problem of the
    file at once is a :class:`DeadlinesError`; a student id that ``students`` lacks, a warning in ``notes``.

    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "deadlines.csv"
    >>> _ = path.write_text("assignment,due,policy\\n02-transfomer,2026-02-30 17:00,10% per day\\n")
    >>> try:
    ...     read_deadlines(path, assignments=["02-transformer"])
    ... except DeadlinesError as err:
    ...     print("\\n".join(err.problems))  # doctest: +ELLIPSIS
    deadlines.csv, line 2, column assignment: expected * or one of the course's assignments (02-transformer), \
got '02-transfomer' (did you mean '02-transformer'?)
    deadlines.csv, line 2, column due: expected a date and time such as ..., got '2026-02-30 17:00' (no such day)
    deadlines.csv, line 2, column policy: expected none, ..., got '10% per day' (did you mean 'per-day 10%'?)
    """
    text, problems = _decode(path)
    rows: list[tuple[tuple[str, str], datetime | None, Policy | None]] = []
    if text is not None:
        rows = _rows(path.name, text, problems, None if assignments is None else set(assignments),
                     None if students is None else set(students), notes if notes is not None else [])
    if problems:
        raise DeadlinesError(path, problems)
    out: dict[tuple[str, str], Deadline] = {}
    for (assignment, student), due, policy in sorted(rows, key=lambda r: (r[0][0] != "*", bool(r[0][1]))):
        inherited = out.get((assignment, "")) or out.get(("*", "")) or Deadline(None, parse_policy(""))
        out[(assignment, student)] = Deadline(due.astimezone(timezone.utc) if due else inherited.due,
                                              policy or inherited.policy, due.tzinfo if due else inherited.zone)
    return out


def _decode(path: Path) -> tuple[str | None, list[str]]:
    """The text of ``path`` (UTF-8, with or without a byte-order mark, or UTF-16 with one), or the problem."""
    data = path.read_bytes()
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16"), []
    if b"\x00" in data:
        return None, [f"{path.name}: not UTF-8 (NUL bytes: UTF-16 without a byte-order mark?): save it as "
                      "'CSV UTF-8 (comma delimited)'"]
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        return None, [f"{path.name}, line {line}: not UTF-8 (byte "
                      f"{data[err.start]:#04x}: Windows-1252 or Latin-1?): save it as 'CSV UTF-8 (comma delimited)'"]


def _rows(name: str, text: str, problems: list[str], assignments: set[str] | None, students: set[str] | None,
          notes: list[str]) -> list[tuple[tuple[str, str], datetime | None, Policy | None]]:
    """The rows of the file's ``text``, read and checked: ((assignment, student), due, policy) each; what is
    wrong goes into ``problems``, a student with no submission into ``notes``."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    if not first:
        problems.append(f"{name}: empty: expected a first line {','.join(COLUMNS)} (or no file at all)")
        return []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=next((d for d in ",;\t" if d in first), ","))
    header: list[str] = []
    rows: list[tuple[tuple[str, str], datetime | None, Policy | None]] = []
    seen: dict[tuple[str, str], int] = {}
    expected = f"expected the columns {', '.join(COLUMNS)} (student and policy may be left out)"
    for fields in reader:
        line, values = reader.line_num, [f.strip() for f in fields]
        if not any(values):
            continue
        if not header:
            header, top = values, line
            if not {v.lower() for v in values} & set(COLUMNS):
                problems.append(f"{name}, line {line}: not a header: {expected}, got {first.strip()!r}")
                return []
            problems += [f"{name}, line {line}: unknown column {c!r}{_did_you_mean(c.lower(), COLUMNS)}; {expected}"
                         for c in values if c and c not in COLUMNS]
            problems += [f"{name}, line {line}: column {c} twice; {expected}" for c in COLUMNS if values.count(c) > 1]
            problems += [f"{name}, line {line}: no column {c}; {expected}" for c in ("assignment", "due")
                         if c not in values]
            continue
        where = f"{name}, line {line}"
        if any(v for i, v in enumerate(values) if i >= len(header) or not header[i]):
            problems.append(f"{where}: more values than the columns of line {top}; a policy with a comma goes in "
                            "quotes: \"per-day 10%, zero after 7d\"")
            continue
        row = {c: values[i] for i, c in enumerate(header) if c in COLUMNS and i < len(values)}
        assignment, student, due, policy = (row.get(c, "") for c in COLUMNS)
        if "assignment" in header and (not assignment or assignments is not None and assignment != "*"
                                       and assignment not in assignments):
            known = f"one of the course's assignments ({', '.join(sorted(assignments))})" if assignments else "an id"
            problems.append(f"{where}, column assignment: expected * or {known}, got {assignment!r}"
                            f"{_did_you_mean(assignment, assignments or ())}")
        if assignment == "*" and student:
            problems.append(f"{where}, column student: expected no student on the * row (an extension names its "
                            f"assignment), got {student!r}")
        if student and students is not None and student not in students:
            notes.append(f"{where}: warning: no submission of {student!r} in submitted/ "
                         f"(yet){_did_you_mean(student, students)}")
        parsed: list = [None, None]
        for i, (column, value, parse) in enumerate((("due", due, parse_due), ("policy", policy, parse_policy))):
            try:
                parsed[i] = parse(value) if value else None
            except ValueError as err:
                problems.append(f"{where}, column {column}: {err}")
        if not due and not policy and "due" in header:
            problems.append(f"{where}: expected a due date, a policy or both; the row has neither")
        if (assignment, student) in seen:
            problems.append(f"{where}: a second row for {assignment}{' and ' + student if student else ''} (the "
                            f"first is line {seen[assignment, student]})")
        seen.setdefault((assignment, student), line)
        rows.append(((assignment, student), parsed[0], parsed[1]))
    return rows


def _did_you_mean(word: str, options: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the option closest to ``word``, or ""."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close and close[0] != word else ""


def load(state: Path, assignments: Iterable[str], students: Iterable[str] | None = None
         ) -> dict[tuple[str, str], Deadline]:
    """``state/deadlines.csv`` read and checked before anything is judged (``grade``, ``collect``,
    ``deadlines``): {} without one, a :class:`DeadlinesError` naming every problem, and on stderr a warning
    for each student id that no submission has (``students``; default: the folders of ``state/submitted``)."""
    path = state / DEADLINES
    if not path.exists():
        return {}
    if students is None:
        students = [p.name for p in (state / "submitted").glob("*") if p.is_dir()]
    notes: list[str] = []
    try:
        return read_deadlines(path, assignments, students, notes)
    finally:
        for note in notes:
            print(note, file=sys.stderr)


def check(state: Path, assignments: list[str]) -> int:
    """``attnbook-course deadlines``: read ``state/deadlines.csv`` as ``grade`` does, and print each assignment's
    due date (in UTC and in the zone the file wrote), its policy and its extensions; 2 if the file is wrong."""
    path = state / DEADLINES
    try:
        deadlines = load(state, assignments)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    for assignment in assignments:
        extensions = [(f"  {s}", d) for (a, s), d in sorted(deadlines.items()) if a == assignment and s]
        for label, deadline in [(assignment, rule(deadlines, assignment, "")), *extensions]:
            print(f"{label}: {_shown(deadline)}")
    print(f"{path}: read, no problem" if path.exists() else f"no {path}: the gradebook's due dates, no penalty")
    return 0


def _shown(deadline: Deadline) -> str:
    """A deadline in words: ``due 2026-03-01 16:00 UTC = 2026-03-01 17:00 Europe/Paris (+01:00); late policy: …``.

    >>> _shown(Deadline(parse_due("2026-03-01 17:00 -08:00").astimezone(timezone.utc), parse_policy("zero"),
    ...                 parse_due("2026-03-01 17:00 -08:00").tzinfo))
    'due 2026-03-02 01:00 UTC = 2026-03-01 17:00 (-08:00); late policy: zero'
    """
    when = "no due date in the file (the gradebook's, if it has one)"
    if deadline.due is not None:
        when = f"due {deadline.due:%Y-%m-%d %H:%M} UTC"
        if deadline.zone not in (None, timezone.utc):
            local = deadline.due.astimezone(deadline.zone)
            name = f"{deadline.zone.key} " if isinstance(deadline.zone, ZoneInfo) else ""
            when += f" = {local:%Y-%m-%d %H:%M} {name}({local.isoformat()[-6:]})"
    return f"{when}; late policy: {deadline.policy.text or 'none'}"


def gradebook_deadlines(db_url: str) -> dict[tuple[str, str], datetime]:
    """(assignment, "") -> the due date nbgrader's gradebook holds, and (assignment, student) -> the
    student's own (with an extension), read in one session."""
    from .nbgrader_run import gradebook

    out = {}
    with gradebook(db_url) as gb:
        for assignment in gb.assignments:
            if assignment.duedate is not None:
                out[(assignment.name, "")] = assignment.duedate.replace(tzinfo=timezone.utc)
                for submission in assignment.submissions:
                    out[(assignment.name, submission.student_id)] = submission.duedate.replace(tzinfo=timezone.utc)
    return out


def submitted_at(folder: Path) -> datetime | None:
    """When the submission in ``folder`` was handed in: its ``timestamp.txt``, or None."""
    stamp = folder / "timestamp.txt"
    if not stamp.is_file() or not stamp.read_text().strip():
        return None
    return parse_time(stamp.read_text(), str(stamp))


def rule(deadlines: dict[tuple[str, str], Deadline], assignment: str, student: str) -> Deadline:
    """The deadline of ``student``'s ``assignment`` in a deadlines file: theirs, the assignment's or ``*``'s."""
    return (deadlines.get((assignment, student)) or deadlines.get((assignment, "")) or deadlines.get(("*", ""))
            or Deadline(None, parse_policy("")))


def lateness(result: SubmissionRecord, state: Path, deadlines: dict[tuple[str, str], Deadline],
             recorded: dict[tuple[str, str], datetime]) -> Lateness:
    """``result["late"]``: when it was submitted and due (ISO 8601 or None), hours late, points deducted
    and the policy's words. ``deadlines`` are the file's, ``recorded`` the gradebook's (for an assignment
    the file does not name).

    >>> import tempfile
    >>> state = Path(tempfile.mkdtemp())
    >>> (state / "submitted" / "bo" / "a1").mkdir(parents=True)
    >>> _ = (state / "submitted" / "bo" / "a1" / "timestamp.txt").write_text("2026-03-02 19:00:00.000000 UTC")
    >>> rules = {("a1", ""): Deadline(parse_time("2026-03-01 17:00 UTC", "due"), parse_policy("per-day 10%"))}
    >>> result = {"student": "bo", "assignment": "a1", "parts": {"p": {"score": 15.0, "max_score": 20.0}}}
    >>> lateness(result, state, rules, {})["penalty"]
    4.0
    """
    student, assignment = result["student"], result["assignment"]
    mine = rule(deadlines, assignment, student)
    named = (assignment, student) in deadlines or (assignment, "") in deadlines
    due = mine.due if named or mine.due else recorded.get((assignment, student), recorded.get((assignment, "")))
    when = submitted_at(state / "submitted" / student / assignment)
    hours = max(0.0, (when - due).total_seconds() / 3600) if when and due else 0.0
    score = sum(p["score"] for p in result["parts"].values())
    top = sum(p["max_score"] for p in result["parts"].values())
    return {"submitted": when.isoformat() if when else None, "due": due.isoformat() if due else None,
            "hours_late": round(hours, 2), "penalty": penalty(mine.policy, hours, score, top),
            "policy": mine.policy.text}


def apply(results: list[SubmissionRecord], state: Path, db_url: str,
          deadlines: dict[tuple[str, str], Deadline] | None = None) -> dict[str, datetime]:
    """Add ``late`` to every result, from ``deadlines`` (:func:`load`'s, read before judging; None: read
    ``state/deadlines.csv`` now, when there is one) and the gradebook; return the file's due date of each
    assignment it names (for :func:`record`). A submission whose time cannot be read gets a ``review:`` note
    and no penalty."""
    path = state / DEADLINES
    if deadlines is None:
        deadlines = read_deadlines(path) if path.exists() else {}
    recorded = gradebook_deadlines(db_url)
    for result in results:
        try:
            result["late"] = lateness(result, state, deadlines, recorded)
        except ValueError as err:
            result["late"] = {"submitted": None, "due": None, "hours_late": 0.0, "penalty": 0.0, "policy": ""}
            result["notes"].append(Note("review", str(err)).record())
    due = {}
    for assignment in {r["assignment"] for r in results}:
        if when := rule(deadlines, assignment, "").due:
            due[assignment] = when
    return due


def record(db_url: str, results: list[SubmissionRecord], notebook: str, due: dict[str, datetime]) -> None:
    """Write each result's timestamp and penalty into nbgrader's gradebook, each assignment's due date
    ``due`` (the deadlines file's), and a student's own due date as nbgrader's extension."""
    from nbgrader.api import MissingEntry

    from .nbgrader_run import gradebook

    def naive(iso: str | None) -> datetime | None:
        return datetime.fromisoformat(iso).astimezone(timezone.utc).replace(tzinfo=None) if iso else None

    with gradebook(db_url) as gb:
        for assignment, when in due.items():
            try:
                gb.find_assignment(assignment).duedate = naive(when.isoformat())
            except MissingEntry:
                continue
        for result in results:
            try:
                submission = gb.find_submission(result["assignment"], result["student"])
                nb = gb.find_submission_notebook(notebook, result["assignment"], result["student"])
            except MissingEntry:  # not recorded: its grading error says why
                continue
            late = result["late"]  # apply gave every result its own
            mine, base = naive(late["due"]), submission.assignment.duedate
            submission.extension = mine - base if mine and base and mine != base else None
            submission.timestamp = naive(late["submitted"])
            nb.late_submission_penalty = late["penalty"] or None
        gb.db.commit()


def columns(result: SubmissionRecord) -> dict:
    """grades.csv's late columns of one result.

    >>> columns({"late": {"submitted": "2026-03-02T19:00:00+00:00", "hours_late": 26.0, "penalty": 4.0}})
    {'timestamp': '2026-03-02T19:00:00+00:00', 'late_hours': 26.0, 'penalty': 4.0}
    """
    late: Lateness | dict = result.get("late") or {}
    return {"timestamp": late.get("submitted") or "", "late_hours": late.get("hours_late", 0.0),
            "penalty": late.get("penalty", 0.0)}


def describe(late: Lateness | None) -> str | None:
    """One sentence for the student's feedback about a late submission, or None when it was on time.

    >>> describe({"submitted": "2026-03-02T19:00:00+00:00", "due": "2026-03-01T17:00:00+00:00",
    ...           "hours_late": 26.0, "penalty": 4.0, "policy": "per-day 10%"})
    'Submitted 2026-03-02 19:00 UTC, 26 hours after the due date (2026-03-01 17:00 UTC): 4 points deducted \
(late policy: per-day 10%).'
    """
    if not late or not late.get("hours_late") or not (submitted := late["submitted"]) or not (due := late["due"]):
        return None

    def show(iso: str) -> str:
        return datetime.fromisoformat(iso).strftime("%Y-%m-%d %H:%M UTC")

    policy = f" (late policy: {late['policy']})" if late.get("policy") else ""
    return (f"Submitted {show(submitted)}, {late['hours_late']:g} hours after the due date "
            f"({show(due)}): {late['penalty']:g} points deducted{policy}.")

