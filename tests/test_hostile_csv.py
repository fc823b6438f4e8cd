"""Hostile ids and names against every CSV the grader writes, and against the class report.

Student ids that start a formula (``=HYPERLINK(...)``) or hold glob characters or markup are refused at
intake (``names.py``); these tests put them straight into the writers and the state folder, as a gradebook
or a state folder from before that rule would, because a roster's display names and sections pass
intake and can start with ``-`` or ``@``. No cell of grades.csv, canvas.csv or totals.csv may start with
a formula character (:mod:`csvcells`), our own readers must give back the exact ids, and the report must
list every student, escape what it shows and URL-quote the links it builds from an id.
"""

import csv
import html
import json
import re
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest

from attnbook_course import classgrade, course, csvcells, export, notes, report, submission
from attnbook_course.fixtures import similar_answers
from attnbook_course.notes import Note

ROOT = Path(__file__).resolve().parent.parent

A = "02-transformer"
FORMULA = ("=", "+", "-", "@", "\t", "\r")
IDS = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1", '=1"', "'=1", "ada"]
NAMES = ['=HYPERLINK("http://x","y")', 'Smith, "Bob" =x', "-Anna", "Bob;=1+1", "@SUM(A1)", "Ann Lee"]
SECTIONS = ["@home", "-A", "+1", "=1+1", "A", ""]
CELLS = [f"part_{i}" for i in range(3)]


def formula_cells(path: Path) -> int:
    """Cells of a CSV, read as Python's csv module reads it, that start with a formula character."""
    with open(path, newline="") as fh:
        return sum(cell.startswith(FORMULA) for row in csv.reader(fh) for cell in row)


def test_neutral_cells_round_trip():
    for value in [*IDS, *NAMES, *SECTIONS, "''", "O'Neil", "-", "@"]:
        cell = csvcells.neutral(value)
        assert not cell.startswith(FORMULA), value
        assert csvcells.read_back(cell) == value
    assert [csvcells.neutral(n) for n in (-2.5, 16, None, "16", "-2")] == [-2.5, 16, None, "16", "'-2"]  # text is text


def test_grades_csv(tmp_path):
    cells = list(submission.test_cells(submission.source(A)))
    said = [[], [Note("misnamed", "=cmd|' /C calc'!A0.ipynb")], [Note("limit", "-x")], [Note("limit", "@y")]]
    results = [{"student": s, "assignment": A, "notes": [n.record() for n in said[i % len(said)]],
                "parts": {c: {"score": 1.0, "max_score": 2.0} for c in cells},
                "late": {"submitted": "2026-03-02T18:00:00+00:00", "hours_late": 1.0, "penalty": 0.5}}
               for i, s in enumerate(IDS)]
    out = tmp_path / "grades.csv"
    classgrade.write_csv(results, out)
    assert formula_cells(out) == 0
    rows = csvcells.read(out)
    assert [(r["student"], r["status"]) for r in rows] == [(r["student"], notes.status(said[i % len(said)]))
                                                          for i, r in enumerate(results)]
    assert [r["student"] for r in report.load(tmp_path)[0]] == IDS  # the report reads grades.csv back exactly
    assert {r["score"] for r in rows} == {str(float(len(cells)))}  # numbers bare, as before


@pytest.fixture
def roster(tmp_path):
    """A Canvas roster whose display names, LMS ids, SIS ids and sections are hostile (course ids are not:
    intake refuses those)."""
    path = tmp_path / "roster.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{A} (70412)", "student"])
        for i, (name, section) in enumerate(zip(NAMES, SECTIONS, strict=True)):
            writer.writerow([name, f"=1+{i} 34093{i}", f"-S{i}", f"@login{i}", section, "", f"u{i}"])
    return path


def test_canvas_and_totals(tmp_path, roster, monkeypatch):
    students = [*IDS, *(f"u{i}" for i in range(len(NAMES)))]
    scores = {s: {A: 5.5, "01-rnn-attention": 2.0} for s in students}
    maxima = {"01-rnn-attention": 10.0, A: 10.0}
    monkeypatch.setattr(export, "net_scores", lambda db_url: (maxima, scores))
    canvas, totals = export.export("sqlite:///unused", tmp_path, roster)
    # Before: the same rows through a plain csv.writer, as export wrote them.
    fields, rows = export.intake.roster_rows(roster)
    plain = tmp_path / "plain.csv"
    with open(plain, "w", newline="") as fh:
        csv.writer(fh).writerows([*export.canvas_rows(maxima, scores, rows, fields)[1]])
    assert formula_cells(plain) > len(NAMES) * 4
    assert formula_cells(canvas) == formula_cells(totals) == 0
    got = csvcells.read(canvas)
    assert got[0]["Student"] == "Points Possible" and got[0][f"{A} (70412)"] == "10"
    by_login = {r["SIS Login ID"]: r for r in got[1:]}
    for i, (name, section) in enumerate(zip(NAMES, SECTIONS, strict=True)):
        assert (by_login[f"@login{i}"]["Student"], by_login[f"@login{i}"]["Section"]) == (name, section)
        assert by_login[f"@login{i}"]["ID"] == f"=1+{i} 34093{i}"
    assert {r["Student"] for r in got[1:]} >= set(IDS)  # an id not in the roster, its own name
    assert [r["student"] for r in csvcells.read(totals)] == students
    with open(canvas, newline="") as fh:  # what Canvas reads: the prefix, and scores as plain numbers
        raw = list(csv.reader(fh))
    assert raw[2][0] == "'" + IDS[0] and raw[2][-2:] == ["2", "5.5"]


HOSTILE_REPORT = ["eve.json", "[ab]", "a*", "<b>x</b>", "<img src=x onerror=alert(1)>", "q\"'", "=HYPERLINK(\"x\")"]


@pytest.fixture
def state(tmp_path):
    """A graded state folder: grades.csv (by classgrade.write_csv), a result, a feedback page per student,
    and two submitted notebooks with the same answer, by ``[ab]`` and ``a*``."""
    cells = list(submission.test_cells(submission.source(A)))
    script = [Note("review", "<script>x</script>").record()]
    results = [{"student": s, "assignment": A, "notes": [] if i % 2 else script,
                "parts": {c: {"score": float(i % 3), "max_score": 2.0, "message": f"- {s} broke it"}
                          for c in cells}} for i, s in enumerate(HOSTILE_REPORT)]
    classgrade.write_csv(results, tmp_path / "grades.csv")
    for result in results:
        folder = tmp_path / "results" / result["student"]
        folder.mkdir(parents=True)
        (folder / f"{A}.json").write_text(json.dumps(result))
        page = tmp_path / "feedback" / result["student"] / A / "exercises.html"
        page.parent.mkdir(parents=True)
        page.write_text("<html>feedback</html>")
    released = nbformat.read(ROOT / "chapters" / A / "exercises.ipynb", as_version=4)
    answer = similar_answers.CATALOGUE[(A, "sdpa_solution")]["original"]
    next(c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "sdpa_solution").source = answer
    for student in ("[ab]", "a*"):
        (tmp_path / "submitted" / student / A).mkdir(parents=True)
        nbformat.write(released, tmp_path / "submitted" / student / A / "exercises.ipynb")
    return tmp_path


def test_report_of_hostile_ids(state, capsys):
    assert course.main(["--state", str(state), "report"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == f"{len(HOSTILE_REPORT)} of the {len(HOSTILE_REPORT)} students in grades.csv have a row in the report"
    out = state / "report"
    page = (out / "index.html").read_text()
    assert report.listed(page) == set(HOSTILE_REPORT)
    students = page[page.index("<h3>Students"):page.index("<h3>Similar")]
    for student in HOSTILE_REPORT:
        assert f"<tr><td>{html.escape(student)}</td>" in students, student
    for markup in ("<b>x", "<img src=x", "<script", "onerror=alert(1)>"):
        assert markup not in page, markup
    hrefs = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page)]
    feedback = [h for h in hrefs if not h.startswith("#")]
    assert len(feedback) == len(HOSTILE_REPORT)
    for href in hrefs:
        assert re.fullmatch(r"[A-Za-z0-9%/._~#-]+", href), href  # URL-quoted: no [ ] * < > " ' nor space
    assert all((out / unquote(h)).read_text() == "<html>feedback</html>" for h in feedback)
    # The pair [ab] ~ a* is found (similarity.py globs */02-transformer, never a pattern made of an id),
    # and its link names the heading's id exactly.
    anchor = f"sim-{A}-sdpa_solution-%5Bab%5D-a%2A"
    assert f'href="#{anchor}"' in students and f'<h4 id="{anchor}">' in page
