"""A class report from a graded state folder: how each part went, the usual mistakes, what needs a look.

    python autograder/report.py [--state DIR] [--out DIR/report]

Reads what ``course.py grade`` wrote in DIR: ``grades.csv`` and
``results/<student>/<assignment>.json``. Writes OUT/index.html (no external
scripts or styles) and, beside it, one PNG per assignment with the fraction of
points each student got on each part. For every assignment the page lists the
most frequent diagnosed mistakes per part (the lines of a judge's message that
start with "- ", or the whole message when it has none, counted over the
students who lost points on that part) and the rows whose status is not "ok".
"""

from __future__ import annotations

import argparse
import csv
import html
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the backend
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TOP = 5  # mistakes shown per part

STYLE = """
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; white-space: pre-wrap; }
img { max-width: 100%; }
"""


def load(state: Path) -> tuple[list[dict], list[dict]]:
    """The rows of ``grades.csv`` and the parsed ``results/**/*.json`` files of a state folder."""
    with open(state / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    results = [json.loads(p.read_text()) for p in sorted((state / "results").glob("**/*.json"))]
    return rows, results


def mistakes(message: str) -> list[str]:
    """The diagnosed mistakes in a judge's message: its "- " lines, else the whole message."""
    lines = [line[2:].strip() for line in message.splitlines() if line.startswith("- ")]
    return lines or ([message.strip()] if message.strip() else [])


def fractions(results: list[dict]) -> dict[str, list[float]]:
    """grade_id -> the fraction of the part's points each student got (parts in the order first seen)."""
    out: dict[str, list[float]] = defaultdict(list)
    for result in results:
        for name, part in result["parts"].items():
            out[name].append((part["score"] or 0) / part["max_score"] if part["max_score"] else 0.0)
    return out


def frequent_mistakes(results: list[dict]) -> dict[str, list[tuple[str, int]]]:
    """grade_id -> its TOP most frequent mistakes with counts, over the students who lost points."""
    counts: dict[str, Counter] = defaultdict(Counter)
    for result in results:
        for name, part in result["parts"].items():
            if (part["score"] or 0) < part["max_score"]:
                counts[name].update(mistakes(part.get("message") or ""))
    return {name: c.most_common(TOP) for name, c in counts.items() if c}


def plot(assignment: str, fracs: dict[str, list[float]], path: Path) -> str:
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
            f"{assignment}; mean per part: {means}.")


def table(header: list[str], rows: list[list]) -> str:
    """An HTML table with escaped cells."""
    def tr(tag: str, row: list) -> str:
        return "<tr>" + "".join(f"<{tag}>{html.escape(str(c))}</{tag}>" for c in row) + "</tr>"

    return "<table>" + tr("th", header) + "".join(tr("td", r) for r in rows) + "</table>"


def section(assignment: str, rows: list[dict], results: list[dict], out: Path) -> str:
    """The HTML of one assignment: summary line, plot, frequent mistakes, rows to review."""
    parts = [f"<h2>{html.escape(assignment)}</h2>"]
    if rows:
        mean = sum(float(r["score"]) for r in rows) / len(rows)
        parts.append(f"<p>{len(rows)} submissions, mean score {mean:.1f} / {rows[0]['max_score']}.</p>")
    fracs = fractions(results)
    if fracs:
        png = f"{assignment}.png"
        alt = plot(assignment, fracs, out / png)
        parts.append(f'<img src="{html.escape(png)}" alt="{html.escape(alt)}">')
    parts.append("<h3>Most frequent mistakes per part</h3>")
    found = frequent_mistakes(results)
    mistake_rows = [[name, text, n] for name in fracs for text, n in found.get(name, [])]
    parts.append(table(["part", "mistake", "students"], mistake_rows) if mistake_rows else "<p>None diagnosed.</p>")
    parts.append("<h3>Needs a human look</h3>")
    flagged = [[r["student"], f"{r['score']} / {r['max_score']}", r["status"]] for r in rows if r["status"] != "ok"]
    parts.append(table(["student", "score", "status"], flagged) if flagged else "<p>Every row is ok.</p>")
    return "\n".join(parts)


def report(state: Path, out: Path) -> Path:
    """Write ``out/index.html`` and its plots from the state folder; return the page's path."""
    rows, results = load(state)
    out.mkdir(parents=True, exist_ok=True)
    assignments = sorted({r["assignment"] for r in rows} | {r["assignment"] for r in results})
    body = "\n".join(
        section(a, [r for r in rows if r["assignment"] == a], [r for r in results if r["assignment"] == a], out)
        for a in assignments
    )
    page = out / "index.html"
    page.write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Grading report</title>'
        f"<style>{STYLE}</style></head>\n<body><h1>Grading report</h1>\n"
        f"<p>From {html.escape(str(state.resolve()))}.</p>\n{body}\n</body></html>\n"
    )
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, default=ROOT, help="graded state folder (default: the repository)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: STATE/report)")
    args = parser.parse_args(argv)
    if not (args.state / "grades.csv").exists():
        print(f"no {args.state / 'grades.csv'}: run `course.py grade` first", file=sys.stderr)
        return 2
    print(f"wrote {report(args.state, args.out or args.state / 'report')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
