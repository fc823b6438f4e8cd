"""A class report from a graded state folder: how each part and each student went, and what needs a look.

    attnbook-course [--state DIR] report [--out DIR/report] [--threshold 0.5]

Reads what ``attnbook-course grade`` wrote in DIR: ``grades.csv``,
``results/<student>/<assignment>.json``, the feedback pages and the submitted
notebooks. Writes OUT/index.html (no external scripts or styles) and, beside
it, two PNGs per assignment. For every assignment, parts in notebook order:

* the distribution of the students' totals and of each part's fraction of points;
* per part: how many students got full marks, lost points to a mistake, did
  not attempt it (their function still raises ``NotImplementedError``) or were
  not graded (no notebook, a grading error);
* the diagnosed mistakes (the lines of a judge's message that start with
  "- ", or the whole message), each once, with how many students made it and on which parts;
* per student: the total after any late penalty, late work (when the results carry a ``late`` entry),
  similar answers, the status and a link to the feedback page;
* the similar answers found by :mod:`.similarity`, the two code blocks side by side;
* the rows whose status is not "ok".

With more than one assignment, a first table gives each student's totals. Every name shown is escaped and
every link made from a student id URL-quoted; the last line printed counts the students with a row in the
page against those in grades.csv (exit status 1 when one is missing).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import quote

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the backend
import numpy as np

from . import csvcells, nbgrader_run, similarity, submission

ROOT = nbgrader_run.ROOT
TOP = 5  # mistakes kept per part (the most frequent)
# What a judge says of a function that still raises NotImplementedError (attnbook.grading.seam.student_error).
NOT_ATTEMPTED = "is not implemented yet"
NOT_GRADED = "not graded"  # a part's message when its submission was not graded (judging.complete)
OUTCOMES = ("full marks", "mistake", "not attempted", "not graded")

STYLE = """
body { font-family: sans-serif; max-width: 80em; margin: 2em auto; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; white-space: pre-wrap; }
img { max-width: 100%; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; margin-bottom: 2em; }
.pair pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; font-size: 85%; margin: 0; }
mark { background: #ffd36b; }
"""


class Html(str):
    """A table cell that is HTML already (not escaped again)."""


def load(state: Path) -> tuple[list[dict], list[dict]]:
    """The rows of ``grades.csv`` (its cells as the grader was given them, :mod:`csvcells`) and the parsed
    ``results/**/*.json`` files of a state folder (a student's folder named ``eve.json`` is a folder)."""
    rows = csvcells.read(state / "grades.csv")
    results = [json.loads(p.read_text()) for p in sorted((state / "results").glob("**/*.json")) if p.is_file()]
    return rows, results


def mistakes(message: str) -> list[str]:
    """The diagnosed mistakes in a judge's message: its "- " lines, else the whole message."""
    lines = [line[2:].strip() for line in message.splitlines() if line.startswith("- ")]
    return lines or ([message.strip()] if message.strip() else [])


def outcome(part: dict) -> str:
    """One of :data:`OUTCOMES` for a part of a result.

    >>> outcome({"score": 1.0, "max_score": 2.0, "message": "sum_k is not implemented yet (it raises ...)"})
    'not attempted'
    >>> outcome({"score": 0.0, "max_score": 2.0, "message": "- rows do not sum to 1"})
    'mistake'
    """
    message = part.get("message") or ""
    if (part["score"] or 0) >= part["max_score"]:
        return "full marks"
    if message.strip() == NOT_GRADED:
        return "not graded"
    return "not attempted" if NOT_ATTEMPTED in message else "mistake"


def order(assignment: str, results: list[dict]) -> list[str]:
    """The graded parts of ``assignment``: in the source notebook's order, then any other in the order seen."""
    seen = list(dict.fromkeys(name for r in results for name in r["parts"]))
    if assignment not in nbgrader_run.assignments():
        return seen
    known = list(submission.test_cells(submission.source(assignment)))
    return [n for n in known if n in seen] + [n for n in seen if n not in known]


def fractions(results: list[dict], names: list[str]) -> dict[str, list[float]]:
    """part -> the fraction of the part's points each student got, parts in the order of ``names``."""
    out: dict[str, list[float]] = {name: [] for name in names}
    for result in results:
        for name, part in result["parts"].items():
            out[name].append((part["score"] or 0) / part["max_score"] if part["max_score"] else 0.0)
    return out


def frequent_mistakes(results: list[dict], names: list[str]) -> list[tuple[str, int, list[str]]]:
    """(mistake, students who made it, parts where it was diagnosed), each mistake once: those among
    the TOP most frequent of some part, most frequent first, parts in the order of ``names``."""
    per_part: dict[str, Counter] = defaultdict(Counter)
    students: dict[str, set[str]] = defaultdict(set)
    for result in results:
        for name, part in result["parts"].items():
            if outcome(part) == "mistake":
                found = set(mistakes(part.get("message") or ""))
                per_part[name].update(found)
                for text in found:
                    students[text].add(result["student"])
    kept = {text for c in per_part.values() for text, _ in c.most_common(TOP)}
    rows = [(text, len(students[text]), [n for n in names if per_part[n][text]]) for text in kept]
    return sorted(rows, key=lambda r: (-r[1], names.index(r[2][0]), r[0]))


def plot_parts(assignment: str, fracs: dict[str, list[float]], path: Path) -> str:
    """Draw a strip plot of the fractions per part into ``path``; return its alt text."""
    names = list(fracs)
    fig, ax = plt.subplots(figsize=(max(5.0, 1.2 * len(names) + 1.5), 3.5))
    rng = np.random.default_rng(0)  # the same jitter every run
    for i, name in enumerate(names):
        y = np.asarray(fracs[name])
        ax.scatter(i + rng.uniform(-0.15, 0.15, y.size), y, s=18, alpha=0.6, color="tab:blue")
        ax.hlines(y.mean(), i - 0.3, i + 0.3, color="black", linewidth=2)
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("fraction of the part's points")
    ax.set_title(f"{assignment} (dot: a student, bar: the mean)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    means = ", ".join(f"{name} {100 * np.mean(fracs[name]):.0f}%" for name in names)
    students = max(len(v) for v in fracs.values())
    return (f"Strip plot of the fraction of points each of {students} students got on each part of "
            f"{assignment}, in notebook order; mean per part: {means}.")


def plot_totals(assignment: str, totals: list[float], max_score: float, path: Path) -> str:
    """Draw a histogram of the totals into ``path``; return its alt text."""
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    ax.hist(totals, bins=int(min(20, max(1, np.ceil(max_score)))), range=(0, max_score), color="tab:blue",
            edgecolor="white")
    ax.set_xlabel(f"total (of {max_score:g})")
    ax.set_ylabel("students")
    ax.set_title(f"{assignment}: totals", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    q1, median, q3 = np.percentile(totals, [25, 50, 75])
    return (f"Histogram of the totals of {len(totals)} students on {assignment} (out of {max_score:g}): "
            f"lowest {min(totals):g}, quartiles {q1:g}, {median:g} and {q3:g}, highest {max(totals):g}.")


def table(header: list[str], rows: list[list]) -> str:
    """An HTML table with escaped cells (but :class:`Html` ones)."""
    def tr(tag: str, row: list) -> str:
        return "<tr>" + "".join(
            f"<{tag}>{c if isinstance(c, Html) else html.escape(str(c))}</{tag}>" for c in row) + "</tr>"

    return "<table>" + tr("th", header) + "".join(tr("td", r) for r in rows) + "</table>"


def late(result: dict | None) -> str:
    """A result's late work in words, ``""`` when it has no ``late`` entry.

    >>> late({"late": {"submitted": "2026-11-02T10:00:00", "due": "2026-11-01T10:00:00",
    ...                "hours_late": 24.0, "penalty": 1.5}})
    '24 h late, penalty 1.5'
    >>> late({"late": {"submitted": None, "due": None, "hours_late": 0.0, "penalty": 0.0}}), late({})
    ('on time', '')
    """
    info = (result or {}).get("late")
    if not isinstance(info, dict):
        return ""
    hours, penalty = float(info.get("hours_late") or 0), float(info.get("penalty") or 0)
    if hours <= 0:
        return "on time"
    return f"{hours:.3g} h late" + (f", penalty {penalty:g}" if penalty else "")


def _anchor(assignment: str, m: similarity.Match) -> str:
    """The id of a similar pair's heading, the same in its ``href``: each name URL-quoted (``[ab]``: ``%5Bab%5D``).

    >>> _anchor("a1", similarity.Match("p", "<b>", "x y", 1.0, "", ""))
    'sim-a1-p-%3Cb%3E-x%20y'
    """
    return "sim-" + "-".join(quote(name, safe="") for name in (assignment, m.part, m.left, m.right))


def similar_section(assignment: str, matches: list[similarity.Match]) -> str:
    """Each similar pair: who, the part, the share in common, and the two answers side by side."""
    out = []
    for m in matches:
        right = "the package's reference" if m.right == similarity.REFERENCE else m.right
        out.append(f'<h4 id="{html.escape(_anchor(assignment, m))}">{html.escape(m.part)}: '
                   f"{html.escape(m.left)} and {html.escape(right)}, {100 * m.similarity:.0f}% in common</h4>"
                   f'<div class="pair"><div><b>{html.escape(m.left)}</b><pre>{m.left_html}</pre></div>'
                   f"<div><b>{html.escape(right)}</b><pre>{m.right_html}</pre></div></div>")
    return "\n".join(out)


def net(row: dict) -> float:
    """A grades.csv row's score after its late penalty (``grades.csv`` keeps the score before it).

    >>> net({"score": "7", "penalty": "1.5"}), net({"score": "7"})
    (5.5, 7.0)
    """
    return float(row["score"]) - float(row.get("penalty") or 0)


def student_rows(assignment: str, rows: list[dict], results: list[dict], matches: list[similarity.Match],
                 state: Path, out: Path) -> list[list]:
    """One row per student: total, late, similar answers (linked to the pair), status, feedback link."""
    by_student = {r["student"]: r for r in results}
    table_rows = []
    for row in sorted(rows, key=lambda r: r["student"]):
        student = row["student"]
        links = [f'<a href="#{html.escape(_anchor(assignment, m))}">{html.escape(m.part)}: '
                 f"{html.escape(m.right if m.left == student else m.left)} {100 * m.similarity:.0f}%</a>"
                 for m in matches if student in (m.left, m.right)]
        page = state / "feedback" / student / assignment / nbgrader_run.NOTEBOOK.replace(".ipynb", ".html")
        href = quote(Path(os.path.relpath(page, out)).as_posix())  # a student id is a path, not markup
        feedback = (Html(f'<a href="{html.escape(href)}">feedback</a>') if page.exists()
                    else "no feedback page")
        table_rows.append([student, f"{net(row):g} / {float(row['max_score']):g}",
                           late(by_student.get(student)), Html("\n".join(links)), row["status"], feedback])
    return table_rows


def section(assignment: str, rows: list[dict], results: list[dict], matches: list[similarity.Match],
            state: Path, out: Path) -> str:
    """The HTML of one assignment (see the module's docstring)."""
    parts = [f'<h2 id="{html.escape(assignment)}">{html.escape(assignment)}</h2>']
    names = order(assignment, results)
    if rows:
        totals = [net(r) for r in rows]
        max_score = float(rows[0]["max_score"])
        n_late = sum(late(r) not in ("", "on time") for r in results)
        flagged = {s for m in matches for s in (m.left, m.right) if s != similarity.REFERENCE}
        parts.append(f"<p>{len(rows)} submission{'' if len(rows) == 1 else 's'}, "
                     f"mean total {np.mean(totals):.1f} / {max_score:g} (median {np.median(totals):g}); "
                     f"{n_late} late; {len(flagged)} with similar answers.</p>")
        png = f"{assignment}-totals.png"
        alt = plot_totals(assignment, totals, max_score, out / png)
        parts.append(f'<img src="{html.escape(png)}" alt="{html.escape(alt)}">')
    if names:
        fracs = fractions(results, names)
        png = f"{assignment}.png"
        alt = plot_parts(assignment, fracs, out / png)
        parts.append(f'<img src="{html.escape(png)}" alt="{html.escape(alt)}">')
        counts = {n: Counter(outcome(r["parts"][n]) for r in results if n in r["parts"]) for n in names}
        parts.append("<h3>Parts, in notebook order</h3>")
        parts.append(table(["part", "mean", *OUTCOMES], [
            [n, f"{100 * np.mean(fracs[n]):.0f}%", *(counts[n][o] for o in OUTCOMES)] for n in names]))
    parts.append("<h3>Mistakes</h3>")
    found = [[text, n, ", ".join(where)] for text, n, where in frequent_mistakes(results, names)]
    parts.append(table(["mistake", "students", "parts"], found) if found else "<p>None diagnosed.</p>")
    parts.append("<h3>Students</h3>")
    parts.append(table(["student", "total", "late", "similar answers", "status", "feedback"],
                       student_rows(assignment, rows, results, matches, state, out)))
    parts.append("<h3>Similar answers</h3>")
    parts.append(similar_section(assignment, matches) if matches else "<p>No two answers, nor an answer and the "
                 "package's reference, share the threshold's share of their code.</p>")
    parts.append("<h3>Needs a human look</h3>")
    flagged_rows = [[r["student"], f"{r['score']} / {r['max_score']}", r["status"]] for r in rows
                    if r["status"] != "ok"]
    parts.append(table(["student", "score", "status"], flagged_rows) if flagged_rows else "<p>Every row is ok.</p>")
    return "\n".join(parts)


def totals(rows: list[dict], assignments: list[str]) -> str:
    """Each student's total per assignment and over all of them."""
    scores: defaultdict[str, dict[str, float]] = defaultdict(dict)
    for r in rows:
        scores[r["student"]][r["assignment"]] = net(r)
    most = sum(float(next(r["max_score"] for r in rows if r["assignment"] == a)) for a in assignments)
    body = [[s, *(f"{scores[s][a]:g}" if a in scores[s] else "" for a in assignments),
             f"{sum(scores[s].values()):g} / {most:g}"] for s in sorted(scores)]
    return "<h2>Totals</h2>" + table(["student", *assignments, "total"], body)


def report(state: Path, out: Path, threshold: float = similarity.THRESHOLD) -> Path:
    """Write ``out/index.html`` and its plots from the state folder; return the page's path."""
    rows, results = load(state)
    out.mkdir(parents=True, exist_ok=True)
    assignments = sorted({r["assignment"] for r in rows} | {r["assignment"] for r in results})
    sections = []
    for a in assignments:
        matches = similarity.class_matches(state, a, threshold) if a in nbgrader_run.assignments() else []
        sections.append(section(a, [r for r in rows if r["assignment"] == a],
                                [r for r in results if r["assignment"] == a], matches, state, out))
    body = (totals(rows, assignments) if len(assignments) > 1 else "") + "\n".join(sections)
    page = out / "index.html"
    page.write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Grading report</title>'
        f"<style>{STYLE}</style></head>\n<body><h1>Grading report</h1>\n"
        f"<p>From {html.escape(str(state.resolve()))}; similar answers: at least {100 * threshold:.0f}% of "
        f"one answer's code in common (attnbook_course.similarity).</p>\n{body}\n</body></html>\n"
    )
    return page


def listed(page: str) -> set[str]:
    """The students with a row in a report page's "Students" tables.

    >>> sorted(listed("<h3>Students</h3>\\n<table><tr><th>student</th></tr><tr><td>&lt;b&gt;</td><td>1</td></tr>"
    ...               "<tr><td>ada</td></tr></table>"))
    ['<b>', 'ada']
    """
    tables = re.findall(r"<h3>Students</h3>\n<table>(.*?)</table>", page, flags=re.S)
    return {html.unescape(cell) for t in tables for cell in re.findall(r"<tr><td>(.*?)</td>", t, flags=re.S)}


def run(args: argparse.Namespace) -> int:
    """``attnbook-course report``: write the report of ``args.state``; 1 when a student of its grades.csv
    has no row in it, 2 when there is no grades.csv or the threshold is out of range."""
    if not (args.state / "grades.csv").exists():
        print(f"no {args.state / 'grades.csv'}: run `attnbook-course grade` first", file=sys.stderr)
        return 2
    threshold = similarity.THRESHOLD if args.threshold is None else args.threshold
    if not 0 < threshold <= 1:
        print(f"--threshold must be in (0, 1], got {threshold}", file=sys.stderr)
        return 2
    page = report(args.state, args.out or args.state / "report", threshold)
    print(f"wrote {page}")
    graded, shown = {r["student"] for r in csvcells.read(args.state / "grades.csv")}, listed(page.read_text())
    lost = sorted(graded - shown)
    print(f"{len(graded & shown)} of the {len(graded)} students in grades.csv have a row in the report"
          + (f"; missing: {', '.join(lost)}" if lost else ""))
    return 1 if lost else 0
