"""The class report (autograder/attnbook_course/report.py) on a small hand-made graded state folder.

No notebook is graded: the state folder holds the files ``attnbook-course grade``
writes (grades.csv, the results JSONs, a feedback page) and three submitted
notebooks, two of which share an answer (from the similarity catalogue), one of them misnamed.
"""

import csv
import doctest
import html
import json
import re
from pathlib import Path

import nbformat
import pytest

from attnbook_course import course, report
from attnbook_course.fixtures import similar_answers

ROOT = Path(__file__).resolve().parent.parent

A = "02-transformer"
MASK = "the mask is applied the wrong way round"
SCALE = "looks like the scores were not divided by sqrt(d_k)"
TODO = "scaled_dot_product_attention is not implemented yet (it raises NotImplementedError)"
POINTS = {"sdpa_matches_reference": 3.0, "sdpa_respects_masks": 3.0, "masks_causal_and_padding": 2.0}
FULL = {p: (s, "all checks passed") for p, s in POINTS.items()}
# student -> (status, {part: (score, message)}, late or None)
CLASS = {
    "ada": ("ok", FULL, {"submitted": "2026-11-01T09:00:00", "due": "2026-11-01T10:00:00", "hours_late": 0.0,
                         "penalty": 0.0}),
    "bo": ("ok", {"sdpa_matches_reference": (1.5, f"2 of 3 groups failed:\n- {SCALE}\n- rows do not sum to 1"),
                  "sdpa_respects_masks": (0.0, f"- {SCALE}"), "masks_causal_and_padding": (0.0, f"- {MASK}")},
           {"submitted": "2026-11-02T10:00:00", "due": "2026-11-01T10:00:00", "hours_late": 24.0, "penalty": 1.5}),
    "cy": ("review: patches torch", {"sdpa_matches_reference": (1.5, f"- {SCALE}"), "sdpa_respects_masks": (3.0, ""),
                                     "masks_causal_and_padding": (1.0, f"- {MASK}\n- batch 1 fails")}, None),
    "di": ("not graded: notebook missing", {p: (0.0, "not graded") for p in POINTS}, None),
    "ed": ("ok", {"sdpa_matches_reference": (0.0, TODO), "sdpa_respects_masks": (0.0, TODO),
                  "masks_causal_and_padding": (0.0, f"- {MASK}")}, None),
    "fa": ("ok", FULL, None),
}
SDPA = similar_answers.CATALOGUE[(A, "sdpa_solution")]
SUBMITTED = {"ada": SDPA["original"], "bo": SDPA["copied"]["renamed"], "fa": SDPA["independent"]["python_loops"]}


def write_result(state: Path, student: str, assignment: str, status: str, parts: dict, late=None) -> None:
    said = [] if status == "ok" else [{"kind": "limit", "text": status, "detail": ""}]  # shown as it is
    result = {"student": student, "assignment": assignment, "notes": said,
              "parts": {p: {"score": s, "max_score": POINTS.get(p, 2.0), "message": m} for p, (s, m) in parts.items()}}
    if late is not None:
        result["late"] = late
    (state / "results" / student).mkdir(parents=True, exist_ok=True)
    (state / "results" / student / f"{assignment}.json").write_text(json.dumps(result, sort_keys=True))


@pytest.fixture
def state(tmp_path):
    """A state folder with grades.csv, results, ada's feedback page and three submitted notebooks."""
    released = nbformat.read(ROOT / "chapters" / A / "exercises.ipynb", as_version=4)
    with open(tmp_path / "grades.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", *POINTS, "pairs", "score", "max_score", "status"])
        for student, (status, parts, late) in CLASS.items():
            scores = [parts[p][0] for p in POINTS]
            writer.writerow([student, A, *scores, "", sum(scores), 8.0, status])
            write_result(tmp_path, student, A, status, parts, late)
        writer.writerow(["ada", "04-gpt-bpe", "", "", "", 2.0, 2.0, 2.0, "ok"])
        write_result(tmp_path, "ada", "04-gpt-bpe", "ok", {"pairs": (2.0, "")})
    for student, code in SUBMITTED.items():
        nb = nbformat.from_dict(json.loads(json.dumps(released)))
        next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "sdpa_solution").source = code
        (tmp_path / "submitted" / student / A).mkdir(parents=True)
        name = "exercises (1).ipynb" if student == "bo" else "exercises.ipynb"  # misnamed: graded, and compared
        nbformat.write(nb, tmp_path / "submitted" / student / A / name)
    feedback = tmp_path / "feedback" / "ada" / A / "exercises.html"
    feedback.parent.mkdir(parents=True)
    feedback.write_text("<html>ada's feedback</html>")
    return tmp_path


def test_doctests():
    assert doctest.testmod(report).failed == 0


def test_not_attempted_is_what_the_judge_says_of_a_stub():
    from attnbook.grading._core import student_error

    assert report.NOT_ATTEMPTED in str(student_error("f", "", "", not_implemented=True))
    assert report.NOT_ATTEMPTED not in str(student_error("f", "ValueError", "shapes"))


def test_mistakes_are_the_dash_lines_or_the_whole_message():
    assert report.mistakes(f"2 of 3 groups failed:\n- {MASK}\n- batch 1 fails") == [MASK, "batch 1 fails"]
    assert report.mistakes("  rows do not sum to 1\n") == ["rows do not sum to 1"]
    assert report.mistakes("") == []


def cells(*texts) -> str:
    """A regular expression for consecutive table cells holding exactly ``texts``."""
    return "".join(re.escape(f"<td>{html.escape(str(t))}</td>") for t in texts)


def test_report_page(state):
    assert course.main(["--state", str(state), "report"]) == 0
    out = state / "report"
    page = (out / "index.html").read_text()
    start = page.index(f'<h2 id="{A}">')
    section = page[start:page.index("<h2", start + 1)]
    # Parts in notebook order (the results list them alphabetically), each with its outcomes counted:
    # full marks, mistake, not attempted (the stub's NotImplementedError), not graded.
    table = section[section.index("<h3>Parts"):section.index("<h3>Mistakes")]
    assert [table.index(p) for p in POINTS] == sorted(table.index(p) for p in POINTS)
    assert re.search(cells("sdpa_matches_reference", "50%", 2, 2, 1, 1), table)
    assert re.search(cells("sdpa_respects_masks", "50%", 3, 1, 1, 1), table)
    assert re.search(cells("masks_causal_and_padding", "42%", 2, 3, 0, 1), table)
    # Each mistake once, with the students who made it and the parts where it was diagnosed.
    mistakes = section[section.index("<h3>Mistakes"):section.index("<h3>Students")]
    assert re.search(cells(SCALE, 2, "sdpa_matches_reference, sdpa_respects_masks"), mistakes)
    assert re.search(cells(MASK, 3, "masks_causal_and_padding"), mistakes)
    assert mistakes.count(html.escape(SCALE)) == 1
    assert "not implemented" not in mistakes and "not graded" not in mistakes and "all checks" not in mistakes
    # Per student: total, late work (absent: nothing), similar answers, status, the feedback page.
    students = section[section.index("<h3>Students"):section.index("<h3>Similar")]
    assert re.search(cells("bo", "1.5 / 8", "24 h late, penalty 1.5"), students)
    assert re.search(cells("ada", "8 / 8", "on time"), students)
    assert re.search(cells("cy", "5.5 / 8", ""), students)
    assert '<a href="../feedback/ada/02-transformer/exercises.html">feedback</a>' in students
    assert (out / "../feedback/ada/02-transformer/exercises.html").exists()
    assert students.count("no feedback page") == len(CLASS) - 1
    assert 'href="#sim-02-transformer-sdpa_solution-ada-bo">sdpa_solution: bo 100%' in students
    # Similar answers: ada's and bo's (renamed) side by side with the code in common marked; fa's, written
    # independently, with no one.
    similar = section[section.index("<h3>Similar"):section.index("<h3>Needs")]
    assert "sdpa_solution: ada and bo, 100% in common" in similar and similar.count('<div class="pair">') == 1
    assert "<mark>" in similar and "fa" not in re.sub(r"<pre>.*?</pre>", "", similar, flags=re.S)
    # Exactly the rows whose status is not "ok" need a look.
    look = section[section.index("<h3>Needs"):]
    for student, (status, _, _) in CLASS.items():
        assert (f"<td>{student}</td>" in look) == (status != "ok"), student
    # Totals over the assignments, a distribution of totals and of parts; nothing loaded from elsewhere.
    assert re.search(cells("ada", "8", "2", "10 / 10"), page[:page.index(f'<h2 id="{A}">')])
    images = re.findall(r"<img [^>]*>", section)
    assert len(images) == 2 and all(re.search(r'alt="[^"]{40,}"', img) for img in images)
    assert "Histogram of the totals of 6 students" in images[0]
    assert "sdpa_matches_reference 50%, sdpa_respects_masks 50%, masks_causal_and_padding 42%" in images[1]
    for src in re.findall(r'src="([^"]+)"', page):
        assert (out / src).read_bytes().startswith(b"\x89PNG"), src
    assert "<script" not in page and "<link" not in page and "http" not in page


def test_report_needs_grades(tmp_path, capsys):
    assert course.main(["--state", str(tmp_path), "report"]) == 2
    assert "grades.csv" in capsys.readouterr().err
