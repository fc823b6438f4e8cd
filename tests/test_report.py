"""The class report (autograder/report.py) on a small hand-made graded state folder."""

import csv
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("report", ROOT / "autograder" / "report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)

MASK = "the mask is applied the wrong way round"
SCALE = "looks like the scores were not divided by sqrt(d_k)"
# student -> (status, {part: (score, message)}); both parts are worth 3 points.
CLASS = {
    "ada": ("ok", {"sdpa": (3.0, "all checks passed"), "masks": (3.0, "")}),
    "bo": ("ok", {"sdpa": (1.5, f"- {SCALE}\n- rows do not sum to 1"), "masks": (0.0, f"- {MASK}")}),
    "cy": ("review: patches torch", {"sdpa": (1.5, f"- {SCALE}"), "masks": (1.0, f"- {MASK}\n- batch 1 fails")}),
    "di": ("not graded: the notebook could not be run to the end", {}),
    "ed": ("ok", {"sdpa": (0.0, "NotImplementedError: the function is not written yet"), "masks": (0.0, f"- {MASK}")}),
}


@pytest.fixture
def state(tmp_path):
    """A state folder with grades.csv and results/<student>/<assignment>.json for CLASS."""
    with open(tmp_path / "grades.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["student", "assignment", "sdpa", "masks", "score", "max_score", "status"])
        for student, (status, parts) in CLASS.items():
            scores = [parts.get(p, (0.0, ""))[0] for p in ("sdpa", "masks")]
            writer.writerow([student, "02-transformer", *scores, sum(scores), 6.0, status])
            result = {
                "student": student, "assignment": "02-transformer", "status": status,
                "parts": {p: {"score": s, "max_score": 3.0, "message": m} for p, (s, m) in parts.items()},
            }
            (tmp_path / "results" / student).mkdir(parents=True)
            (tmp_path / "results" / student / "02-transformer.json").write_text(json.dumps(result))
    return tmp_path


def test_mistakes_are_the_dash_lines_or_the_whole_message():
    assert report.mistakes(f"2 of 3 groups failed:\n- {MASK}\n- batch 1 fails") == [MASK, "batch 1 fails"]
    assert report.mistakes("  rows do not sum to 1\n") == ["rows do not sum to 1"]
    assert report.mistakes("") == []


def cell(text) -> str:
    """A regular expression for one table cell holding exactly ``text``."""
    return re.escape(f"<td>{text}</td>")


def test_report_page(state):
    assert report.main(["--state", str(state)]) == 0
    out = state / "report"
    page = (out / "index.html").read_text()
    # Mistakes are counted over the students who lost points on the part, one row per mistake.
    assert re.search(cell("masks") + cell(MASK) + cell(3), page)
    assert re.search(cell("sdpa") + cell(SCALE) + cell(2), page)
    assert re.search(cell("sdpa") + cell("NotImplementedError: the function is not written yet") + cell(1), page)
    assert "all checks passed" not in page  # a full-score part's message is no mistake
    # Exactly the rows whose status is not "ok" are flagged.
    for student, (status, _) in CLASS.items():
        assert (f"<td>{student}</td>" in page) == (status != "ok"), student
    assert "review: patches torch" in page and "not graded: the notebook could not be run" in page
    # Plots exist, and every image says in words what it shows; nothing is loaded from elsewhere.
    images = re.findall(r"<img [^>]*>", page)
    assert images and all(re.search(r'alt="[^"]{40,}"', img) for img in images)
    assert "sdpa 50%, masks 33%" in images[0] and "4 students" in images[0]
    for src in re.findall(r'src="([^"]+)"', page):
        assert (out / src).read_bytes().startswith(b"\x89PNG"), src
    assert "<script" not in page and "<link" not in page and "http" not in page


def test_report_needs_grades(tmp_path, capsys):
    assert report.main(["--state", str(tmp_path)]) == 2
    assert "grades.csv" in capsys.readouterr().err
