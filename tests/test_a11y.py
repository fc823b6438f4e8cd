"""The accessibility check (tools/a11y.mjs, ``make a11y``): axe-core in headless Chromium.

The check fails on one planted violation, naming the page, the rule and the
element, and passes a clean page. It then checks what the grader writes: a
feedback page (nbgrader's ``generate_feedback`` through
``feedback_pages.write_pages``, on a small state folder made as
tests/test_hostile_pages.py makes one) and the class report
(``report.report`` on a state folder like tests/test_report.py's). The book's own
pages are checked by ``make a11y`` after ``make book`` (.ci/run).

The node modules (axe-core and puppeteer-core, pinned by package-lock.json) come
from the Makefile's installer, which ``make test`` runs first; run alone, this
file runs it too.
"""

from __future__ import annotations

import ast
import base64
import csv
import doctest
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import browser
import feedback_state
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

ROOT = Path(__file__).resolve().parent.parent

CHECK = ROOT / "tools" / "a11y.mjs"
NODE = shutil.which("node")
needs_browser = pytest.mark.skipif((browser.CHROMIUM is None or NODE is None) and os.environ.get("CI") != "true",
                                   reason="needs Chromium and Node.js (CI has them)")

CLEAN = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body><main><h1>{title}</h1><p>Attention weights sum to one. <a href="#top">Back to the top</a></p>
{extra}</main></body></html>
"""


@pytest.fixture(scope="module")
def installed():
    """The node modules, installed by the Makefile's target (``npm ci`` against package-lock.json)."""
    done = subprocess.run(["make", "--no-print-directory", "node_modules/.installed"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return ROOT / "node_modules"


def check(*targets: Path) -> tuple[int, str]:
    """Run the check on ``targets``: its exit status and what it printed."""
    done = subprocess.run([NODE or "node", str(CHECK), "--jobs", "1", *map(str, targets)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


@needs_browser
def test_a_planted_violation_fails_naming_page_rule_and_element(installed, tmp_path):
    (tmp_path / "clean.html").write_text(CLEAN.format(title="Clean", extra=""))
    (tmp_path / "pages").mkdir()
    png = tmp_path / "pages" / "dot.png"
    png.write_bytes(base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="))
    (tmp_path / "pages" / "planted.html").write_text(CLEAN.format(title="Planted", extra='<img src="dot.png">'))
    code, out = check(tmp_path)
    assert code == 1, out
    lines = [line for line in out.splitlines() if ": image-alt " in line]
    assert len(lines) == 1 and lines[0].startswith("pages/planted.html: image-alt (critical): "), out
    assert '<img src="dot.png">' in lines[0], out
    assert "clean.html:" not in out  # the clean page beside it is not blamed
    assert "2 pages checked, 1 violations on 1 pages" in out, out


@needs_browser
def test_a_clean_page_passes(installed, tmp_path):
    (tmp_path / "index.html").write_text(CLEAN.format(title="Clean", extra="<p>More text.</p>"))
    (tmp_path / "redirect.html").write_text('<meta http-equiv="Refresh" content="0; url=index.html" />')
    code, out = check(tmp_path)
    assert code == 0, out
    assert "redirect.html: a redirect, not checked" in out
    assert "1 pages checked, 0 violations on 0 pages" in out, out


@needs_browser
def test_no_page_is_an_error(installed, tmp_path):
    code, out = check(tmp_path)
    assert code == 2 and "no HTML pages" in out, out


# ------------------------------------------------------------------ what the grader writes

ASSIGNMENT = "a11y"
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
# A student's notebook with what a feedback page shows: prose with maths, a table, a link and code; code with
# highlighted Python, printed text, an image, an error; the test cell with the judge's words.
PROSE = ("# Scaled dot-product attention\n\nThe weights are $\\mathrm{softmax}(QK^\\top / \\sqrt{d_k})$:\n\n"
         "$$A = \\mathrm{softmax}\\left(\\frac{QK^\\top}{\\sqrt{d_k}}\\right) V$$\n\n"
         "| name | shape |\n|------|-------|\n| `Q` | `(B, T, d_k)` |\n\nSee [the paper](https://arxiv.org/abs/1706.03762)"
         " and `torch.softmax`.")
CODE = '''import math  # the scale
from dataclasses import dataclass


@dataclass
class Attention:
    """Scaled dot-product attention, with a mask."""
    scale: float = 1.0

    def __call__(self, q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) * self.scale
        if mask is not None and not mask.all():
            scores = scores.masked_fill(~mask, float("-inf"))
        print(f"{scores.shape=} {0x1F:d} {1e-9!r}", r"\\d+", b"raw", len([None, True, False]))
        return scores.softmax(-1) @ v


answer = Attention()'''


def student_notebook():
    solution = {"schema_version": 3, "locked": False, "solution": True, "grade": False, "grade_id": "answer"}
    test = {"schema_version": 3, "locked": True, "solution": False, "grade": True, "grade_id": "test_answer",
            "points": 1}
    cells = [new_markdown_cell(PROSE),
             new_code_cell(CODE, metadata={"nbgrader": solution}, execution_count=1, outputs=[
                 new_output("stream", name="stdout", text="weights: tensor([[0.25, 0.75]])\n"),
                 new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure size 640x480>"}),
                 new_output("error", ename="ValueError", evalue="q has 3 dimensions, expected 4",
                            traceback=["ValueError: q has 3 dimensions, expected 4"])]),
             new_code_cell("check(answer)", metadata={"nbgrader": test})]
    return new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python", "pygments_lexer": "ipython3"}})


@pytest.fixture(scope="module")
def feedback_page(tmp_path_factory) -> Path:
    """A feedback page, written as ``attnbook-course grade`` writes it (tests/test_hostile_pages.py's ``pages``)."""
    from attnbook_course import feedback_notebook

    state = tmp_path_factory.mktemp("a11y-state")
    released = student_notebook()
    message = "2 of 3 groups failed:\n- the scores were not divided by sqrt(d_k)\n- rows do not sum to 1"
    parts = {"test_answer": {"score": 0.5, "max_score": 1.0, "message": message}}
    nb = feedback_notebook.feedback_notebook(student_notebook(), parts, released,
                                             "Your notebook was named `exercises (1).ipynb`: graded all the same.")
    written = feedback_state.write_feedback(state, ASSIGNMENT, {"ada": nb}, 0.5)
    assert written.written == [("ada", ASSIGNMENT)], written.log
    return state / "feedback" / "ada" / ASSIGNMENT / "exercises.html"


@pytest.fixture(scope="module")
def class_report(tmp_path_factory) -> Path:
    """The class report of a small graded class (tests/test_report.py's state folder, in brief)."""
    from attnbook_course import report

    state = tmp_path_factory.mktemp("a11y-report")
    points = {"sdpa_matches_reference": 3.0, "masks_causal_and_padding": 2.0}
    people = {"ada": ("ok", {p: (s, "all checks passed") for p, s in points.items()}),
              "bo": ("ok", {"sdpa_matches_reference": (1.5, "- the scores were not scaled"),
                            "masks_causal_and_padding": (0.0, "- the mask is applied the wrong way round")}),
              "<b>cy</b>": ("review: patches torch", {p: (0.0, "not graded") for p in points})}
    rows = io.StringIO()
    writer = csv.writer(rows)
    writer.writerow(["student", "assignment", *points, "score", "max_score", "status"])
    for student, (status, parts) in people.items():
        scores = [parts[p][0] for p in points]
        writer.writerow([student, "02-transformer", *scores, sum(scores), 5.0, status])
        said = [] if status == "ok" else [{"kind": "limit", "text": status, "detail": ""}]  # shown as it is
        result = {"student": student, "assignment": "02-transformer", "notes": said,
                  "parts": {p: {"score": s, "max_score": points[p], "message": m} for p, (s, m) in parts.items()},
                  "late": {"submitted": None, "due": None, "hours_late": 0.0 if student != "bo" else 3.0,
                           "penalty": 0.0}}
        (state / "results" / student).mkdir(parents=True)
        (state / "results" / student / "02-transformer.json").write_text(json.dumps(result))
    (state / "grades.csv").write_text(rows.getvalue())
    feedback = state / "feedback" / "ada" / "02-transformer" / "exercises.html"
    feedback.parent.mkdir(parents=True)
    feedback.write_text(CLEAN.format(title="ada's feedback", extra=""))
    return report.report(state, state / "report")


@pytest.mark.slow
@needs_browser
def test_the_feedback_page_and_the_class_report_pass(installed, feedback_page, class_report):
    page = feedback_page.read_text()
    assert re.search(r'<html lang="en"', page) and "<pre" in page, page[:500]
    code, out = check(feedback_page, class_report)
    assert code == 0, out
    assert "2 pages checked, 0 violations" in out, out
    dom = browser.dom_after_load(feedback_page, 5000)
    assert "<mjx-assistive-mml" in dom  # each equation's MathML, for a screen reader


# ------------------------------------------------------------------ what axe does not check

def test_the_books_fixes_are_in_place():
    """The local extension's examples; the instructor edition loads it too; MathJax's assistive MathML is on."""
    spec = importlib.util.spec_from_file_location("sphinx_a11y", ROOT / "tools" / "sphinx_a11y.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert doctest.testmod(module).failed == 0
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"] == {"sphinx_a11y": "tools"}
    assert config["sphinx"]["config"]["mathjax3_config"]["options"]["enableAssistiveMml"] is True
    spec = importlib.util.spec_from_file_location("instructor_edition", ROOT / "tools" / "instructor_edition.py")
    edition = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(edition)
    folder = Path(edition.instructor_config(config)["sphinx"]["local_extensions"]["sphinx_a11y"])
    assert folder.is_absolute() and (folder / "sphinx_a11y.py").is_file()
    for name in ("search-button-field.html", "theme-switcher.html"):
        assert "aria-label" not in (ROOT / "_templates" / name).read_text().split("#}")[-1], name


CONTROLS = {"IntSlider", "FloatSlider", "FloatLogSlider", "IntRangeSlider", "SelectionSlider", "Dropdown", "Select",
            "Text", "Textarea", "IntText", "FloatText", "BoundedIntText", "BoundedFloatText", "Checkbox",
            "ToggleButton", "ToggleButtons", "RadioButtons", "Button", "Combobox", "Play"}


def test_every_control_of_the_explorers_has_a_label():
    """Each input of an ipywidgets explorer is created with a ``description`` (its visible label, which
    ipywidgets ties to the control for a screen reader)."""
    unlabelled, found = [], 0
    for path in sorted((ROOT / "src" / "attnbook" / "widgets").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CONTROLS
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "widgets"):
                found += 1
                given = {k.arg: k.value for k in node.keywords}
                if not (isinstance(given.get("description"), ast.Constant) and given["description"].value.strip()):
                    unlabelled.append(f"{path.name}:{node.lineno} widgets.{node.func.attr}")
    assert found >= 15 and not unlabelled, unlabelled


@needs_browser
def test_the_grading_services_early_feedback_page_passes(installed, tmp_path):
    """The page a student gets minutes after a submission (service/policy.py): a part the hidden cases
    failed, a passed one, a late penalty, and markup in a message, which is shown as text."""
    from attnbook_course.service import policy

    record = {"assignment": "03-bert", "late": {"penalty": 1.0, "policy": "per-day 10%"}, "parts": {
        "bert_input_and_embeddings": {"score": 0.0, "max_score": 3.0, "message": "<b>x</b>", "hidden": True},
        "nsp_pairs_balanced": {"score": 2.0, "max_score": 2.0, "message": "<script>alert(1)</script> " * 20}}}
    page = policy.page(record, False, "after the due date", 3, "")
    assert "<script>" not in page and "&lt;script&gt;" in page and "&lt;b&gt;" not in page
    (tmp_path / "feedback.html").write_text(page)
    code, out = check(tmp_path)
    assert code == 0 and "1 pages checked, 0 violations" in out, out
