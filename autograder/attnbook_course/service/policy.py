"""What a student sees of a grade, and when: ``feedback.csv`` in the course's state folder, one row per
assignment (an assignment without a row takes the defaults).

    assignment,hidden_messages,limit_per_hour
    03-bert,after-due,3
    06-vit,on-release,2

``hidden_messages``: ``after-due`` (the default: once the due date of ``deadlines.csv`` has passed, or
the instructor released them), ``on-release`` (only once released) or ``at-once``. Minutes after a
submission the student sees each part's points and the visible checks' messages; a part whose points
the hidden cases took says so, and shows their message when the policy allows. ``limit_per_hour``
(default :data:`LIMIT`): graded submissions per student and assignment in any hour; one over it is kept
and graded when the window has room again, so that the grader is no oracle.

>>> rules = parse("assignment,hidden_messages,limit_per_hour\\r\\n03-bert,at-once,5\\r\\n", ["03-bert", "06-vit"])
>>> rules["03-bert"], rule(rules, "06-vit")
(Rule(hidden_messages='at-once', limit_per_hour=5), Rule(hidden_messages='after-due', limit_per_hour=3))
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

LIMIT = 3  # graded submissions per student, assignment and hour
WHEN = ("after-due", "on-release", "at-once")
FILE = "feedback.csv"


@dataclass(frozen=True)
class Rule:
    """One assignment's feedback policy."""

    hidden_messages: str = "after-due"
    limit_per_hour: int = LIMIT

    def shows_hidden(self, due: datetime | None, released: bool, now: datetime) -> bool:
        """Whether the hidden cases' messages show now."""
        if released or self.hidden_messages == "at-once":
            return True
        return self.hidden_messages == "after-due" and due is not None and now >= due


def parse(text: str, assignments: list[str]) -> dict[str, Rule]:
    """The rules of a ``feedback.csv`` (a spreadsheet's: a byte-order mark, CRLF, spaces around cells);
    every problem in one ``ValueError``."""
    rows = list(csv.DictReader(io.StringIO(text.lstrip("\ufeff"))))
    problems, rules = [], {}
    for number, row in enumerate(rows, start=2):
        cells = {(k or "").strip(): (v or "").strip() for k, v in row.items()}
        name, when, limit = cells.get("assignment", ""), cells.get("hidden_messages") or WHEN[0], \
            cells.get("limit_per_hour") or str(LIMIT)
        if name not in assignments:
            problems.append(f"row {number}: assignment {name!r} is not one of {', '.join(assignments)}")
        if when not in WHEN:
            problems.append(f"row {number}: hidden_messages {when!r} should be one of {', '.join(WHEN)}")
        if not limit.isdigit() or int(limit) < 1:
            problems.append(f"row {number}: limit_per_hour {limit!r} should be a whole number, 1 or more")
        elif name in rules:
            problems.append(f"row {number}: a second row for {name}")
        else:
            rules[name] = Rule(when, int(limit))
    if problems:
        raise ValueError(f"{FILE}: " + "; ".join(problems))
    return rules


def load(state: Path, assignments: list[str]) -> dict[str, Rule]:
    """The rules of ``state/feedback.csv``; none (every default) where it is missing."""
    path = state / FILE
    return parse(path.read_text(encoding="utf-8"), assignments) if path.is_file() else {}


def rule(rules: dict[str, Rule], assignment: str) -> Rule:
    """``assignment``'s rule, or the defaults."""
    return rules.get(assignment, Rule())


STYLE = ("body{font-family:sans-serif;max-width:60rem;margin:1rem auto;padding:0 1rem;color:#111}"
         "pre{white-space:pre-wrap;overflow-wrap:anywhere;margin:0}th,td{text-align:left;vertical-align:top;"
         "padding:.4rem;border-bottom:1px solid #767676}table{border-collapse:collapse}")
HIDDEN_LATER = ("The visible checks pass; the hidden cases found a problem. Their message shows {when}.")


def page(record: dict[str, Any], shows_hidden: bool, when: str, limit: int, full: str) -> str:
    """The feedback page a student gets: nbgrader's page (``full``, sanitised when it was written) once the
    hidden cases' messages show; before that, each part's points and the visible checks' messages, every
    text escaped. Both say the submission limit.

    >>> rec = {"parts": {"p1": {"score": 0.0, "max_score": 2.0, "message": "x<1", "hidden": True}}}
    >>> "x&lt;1" in page(rec, False, "after the due date", 3, ""), "x&lt;1" in page(rec, True, "", 3, "")
    (False, True)
    """
    limit_line = (f"<p>This assignment grades up to {limit} submissions an hour; a later one is kept and graded "
                  f"when the hour has room again.</p>")
    if shows_hidden and full:
        return full.replace("<body>", f"<body>{limit_line}", 1) if "<body>" in full else limit_line + full
    rows = []
    for name, part in record.get("parts", {}).items():
        words = HIDDEN_LATER.format(when=when) if part.get("hidden") and not shows_hidden else part["message"]
        rows.append(f"<tr><th scope=\"row\">{html.escape(name)}</th><td>{part['score']:g} / {part['max_score']:g}"
                    f"</td><td><pre>{html.escape(words or 'All checks passed.')}</pre></td></tr>")
    late = record.get("late") or {}
    penalty = f"<p>Late: {late['penalty']:g} points deducted ({html.escape(late['policy'])}).</p>" \
        if late.get("penalty") else ""
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Feedback</title>"
            f"<style>{STYLE}</style></head><body>"
            f"<main><h1>Feedback: {html.escape(record.get('assignment', ''))}</h1>{limit_line}{penalty}"
            "<table><caption>Each graded part</caption><thead><tr><th scope=\"col\">Part</th>"
            "<th scope=\"col\">Points</th><th scope=\"col\">Message</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></main></body></html>")
