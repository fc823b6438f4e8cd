"""A term's grading end to end, with the instructor's own commands, and its grades against a full serial run.

A class of five from the catalogue (``autograder/attnbook_course/fixtures/``), chapter 3 (the
cheapest to grade), arrives as two Canvas downloads:

* the first, after the due date: ada (alternative right answers), bo (ada's
  answers with the variables renamed, in a notebook the browser called
  ``exercises (1).ipynb``), cy (one mistake; an extension in ``deadlines.csv``)
  and di (the solution with one mistake, handed in late);
* the second, days later: the same, but cy resubmitted (Canvas's
  ``exercises-1.ipynb``) and ed, who answered one part, arrived late.

``collect`` the first, ``grade`` (two at a time), ``collect`` the second, then
``grade --student cy`` and ``grade --student ed``, each grading that one alone;
``report`` (the copy flagged, the late work and penalties) and ``export``
(Canvas's totals, less the penalties). A fresh state graded in one serial run
from the final submissions must give the same gradebook, ``grades.csv``,
results, feedback and ``canvas.csv``. The formgrader then shows every
submission autograded and refuses its own Autograde.
"""

import csv
import hashlib
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
import tokenize
import zipfile
from pathlib import Path

import exercise_harness as harness
import pytest

from attnbook_course import feedback_filters
from attnbook_course.fixtures import catalogue

ROOT = Path(__file__).resolve().parent.parent
COURSE, REPORT = ("-m", "attnbook_course"), ("-m", "attnbook_course", "report")  # attnbook-course [report]
book_assets = harness.load(ROOT / "tools" / "book_assets.py", "book_assets")
bert = harness.load(catalogue.FOLDER / "03-bert.py", "bert_answers")  # its CORRECT

pytestmark = pytest.mark.slow
A = "03-bert"
DUE = "2026-03-01 17:00 UTC"
# ada's answers with the names a copier changes: locals only (the functions, their arguments and the
# attributes the checks call stay), spelled token by token.
RENAMED = {"first": "head", "second": "tail", "positions": "where", "embeddings": "out", "flat": "flat_ids",
           "specials": "special_set", "candidates": "cands", "keep": "pick", "action": "choice",
           "ordinary": "normal", "pool": "replacement_pool", "swap": "swapped", "chosen": "sel",
           "log_probs": "lp", "n": "count", "is_next": "nxt", "pairs": "result", "j": "other",
           "trainable_layers": "keep_layers", "total": "trainable", "parts": "bits", "out": "pieces",
           "rest": "remaining", "prefix": "pre", "size": "length"}
# Canvas ids: the LMS's user id, and the course's id (SIS Login ID) that the roster maps it to.
IDS = {"ada": 4001, "bo": 4002, "cy": 4003, "di": 4004, "ed": 4005}


def rename(code: str) -> str:
    tokens, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        text = RENAMED.get(tok.string, tok.string) if tok.type == tokenize.NAME and previous != "." else tok.string
        tokens.append((tok.type, text, tok.start, tok.end, tok.line))
        previous = tok.string
    return tokenize.untokenize(tokens)


def notebook(cells: dict[str, str]) -> bytes:
    import nbformat

    released = nbformat.read(ROOT / "chapters" / A / "exercises.ipynb", as_version=4)
    return nbformat.writes(catalogue.fill(released, cells)).encode()


def canvas_zip(path: Path, entries: dict[str, tuple[bytes, tuple]]) -> Path:
    """Canvas's "Download submissions": ``<name>[_late]_<user id>_<submission id>_<file>``, each entry
    with the time of its submission (UTC here: ``collect`` reads the zip's times in ``ZONE``)."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, (data, when) in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def _children_cpu() -> float:
    """CPU seconds of this process's children that have ended (a command, the judges and workers it waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def course(*args: str, **env) -> subprocess.CompletedProcess:
    start, cpu = time.monotonic(), _children_cpu()
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "ATTNBOOK_GRADING_PART_SECONDS": "30",
                               **harness.trusted_grading_env(), **env})
    print(f"{time.monotonic() - start:6.1f} s, {_children_cpu() - cpu:5.1f} CPU-s: "  # pytest -s shows them
          + " ".join(Path(a).name for a in args))
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def grade(state: Path, *args: str) -> subprocess.CompletedProcess:
    return course(*COURSE, "--state", str(state), "grade", *args)


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def rows(path: Path) -> dict[str, dict]:
    with open(path, newline="") as fh:
        return {row["student"]: row for row in csv.DictReader(fh)}


def gradebook_rows(state: Path) -> list[tuple]:
    """Every grade in the state's gradebook, with its submission's time, late penalty and extension."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{state / 'gradebook.db'}") as gb:
        return sorted((sub.student.id, assignment.name, grade.name, grade.auto_score, grade.manual_score,
                       grade.needs_manual_grade, str(sub.timestamp), str(sub.extension),
                       nb.late_submission_penalty)
                      for assignment in gb.assignments for sub in gb.assignment_submissions(assignment.name)
                      for nb in sub.notebooks for grade in nb.grades)


def formgrader_api(state: Path):
    """nbgrader's API as the formgrader makes it: the course's nbgrader_config.py, with the state's folders."""
    from nbgrader.apps.api import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "autograder")).load_config()
    for folder in ("submitted", "autograded", "feedback"):
        config.CourseDirectory[f"{folder}_directory"] = str(state / folder)
    config.CourseDirectory.db_url = f"sqlite:///{state / 'gradebook.db'}"
    return NbGraderAPI(config=config)


def test_a_term_graded_incrementally_equals_a_full_serial_run(tmp_path):
    answers = catalogue.ANSWERS
    reasoning = answers["bert_reasoning_alternatives"]["cells"]  # the three reasoning parts, right
    ada = {**answers["bert_alternatives"]["cells"], **reasoning}
    submitted_as = {
        "ada": notebook(ada),
        "bo": notebook({part: rename(code) for part, code in ada.items()}),
        # one mistake: freezes, never unfreezes
        "cy": notebook({**answers["bert_freeze_never_unfreezes"]["cells"], **reasoning}),
        "di": notebook(answers["bert_one_mistake"]["cells"]),  # one mistake: the [SEP] of segment B
        "ed": notebook({"loss_solution": bert.CORRECT["loss_solution"]}),  # one part, a short one
    }
    resubmitted = notebook({**bert.CORRECT, **reasoning})  # cy's mistake fixed
    first = {
        f"lovelaceada_{IDS['ada']}_9001_exercises.ipynb": (submitted_as["ada"], (2026, 3, 1, 12, 0, 0)),
        f"boolebo_{IDS['bo']}_9002_exercises (1).ipynb": (submitted_as["bo"], (2026, 3, 1, 16, 30, 0)),
        f"chency_{IDS['cy']}_9003_exercises.ipynb": (submitted_as["cy"], (2026, 3, 1, 15, 0, 0)),
        f"dijkstradi_late_{IDS['di']}_9004_exercises.ipynb": (submitted_as["di"], (2026, 3, 1, 19, 30, 0)),
    }
    second = {**first, f"chency_{IDS['cy']}_9013_exercises-1.ipynb": (resubmitted, (2026, 3, 3, 10, 0, 0)),
              f"eulered_late_{IDS['ed']}_9005_exercises.ipynb": (submitted_as["ed"], (2026, 3, 2, 9, 0, 0))}
    del second[f"chency_{IDS['cy']}_9003_exercises.ipynb"]  # Canvas keeps the latest submission only
    state, fresh = tmp_path / "state", tmp_path / "fresh"
    state.mkdir()
    roster = tmp_path / "roster.csv"  # Canvas's gradebook export, as downloaded
    roster.write_text(f"Student,ID,SIS User ID,SIS Login ID,Section,{A} (70412)\n"
                      "    Points Possible,,,,,22\n"
                      + "".join(f'"{s.title()}, {s[0].upper()}",{i},S{i},{s},A,\n' for s, i in IDS.items()))
    # per-day 10 % of 22 points; cy has until Wednesday
    (state / "deadlines.csv").write_text(f'assignment,student,due,policy\n{A},,{DUE},"per-day 10%"\n'
                                         f"{A},cy,2026-03-04 17:00 UTC,\n")

    # 1. The first download: collected, then graded two at a time.
    done = course(*COURSE, "--state", str(state), "collect", str(canvas_zip(tmp_path / "first.zip", first)),
                  "--roster", str(roster))
    assert f"the notebooks are {A}'s" in done.stdout
    assert f"bo/{A}: 1 files; warning: 'exercises (1).ipynb' will be graded as exercises.ipynb" in done.stdout
    assert f"di/{A}: 1 files; marked late by Canvas\n" in done.stdout  # and the times agree: no warning
    assert "warning: Canvas" not in done.stdout and "LMS id" not in done.stdout  # the roster named everyone
    done = grade(state, "--jobs", "2")
    assert "graded 4 submissions, kept the results of 0 graded before" in done.stdout, done.stdout
    graded = rows(state / "grades.csv")
    assert sorted(graded) == ["ada", "bo", "cy", "di"]
    assert graded["bo"]["status"] == "review: graded 'exercises (1).ipynb' as exercises.ipynb (misnamed)"
    assert [graded[s]["score"] for s in ("ada", "bo", "di")] == ["22.0", "22.0", "19.0"]
    assert graded["cy"]["score"] == "20.0"  # the visible case of a frozen model fails its freeze part
    assert (graded["di"]["late_hours"], graded["di"]["penalty"]) == ("2.5", "2.2")  # one started day: 10 % of 22

    # 2. The second download: cy resubmitted (before the extension ends), ed arrived late; each graded alone.
    cache = state / "grading-cache"
    kept = {s: (cache / s / f"{A}.json").read_bytes() for s in ("ada", "bo", "di")}
    done = course(*COURSE, "--state", str(state), "collect", str(canvas_zip(tmp_path / "second.zip", second)),
                  "--roster", str(roster))
    assert f"cy/{A}: 1 files; moved the earlier exercises.ipynb to .replaced/" in done.stdout
    assert f"ed/{A}: 1 files; marked late by Canvas" in done.stdout
    done = grade(state, "--jobs", "2", "--student", "cy")
    assert "graded 1 submissions, kept the results of 3 graded before" in done.stdout, done.stdout
    assert f"1 submissions not graded yet, not in grades.csv (run `make grade`): ed/{A}" in done.stderr
    assert "ed" not in rows(state / "grades.csv")
    done = grade(state, "--jobs", "2", "--student", "ed")
    assert "graded 1 submissions, kept the results of 4 graded before" in done.stdout, done.stdout
    assert {s: (cache / s / f"{A}.json").read_bytes() for s in kept} == kept  # the others never judged again
    graded = rows(state / "grades.csv")
    assert graded["cy"]["score"] == "22.0" and graded["cy"]["late_hours"] == "0.0"  # on time: the extension
    assert graded["cy"]["status"] == "review: graded 'exercises-1.ipynb' as exercises.ipynb (misnamed)"
    # 10 % of 22 is 2.2, but ed has only 2 to lose
    assert (graded["ed"]["score"], graded["ed"]["late_hours"], graded["ed"]["penalty"]) == ("2.0", "16.0", "2.0")

    # 3. The report: the copy flagged part by part, late work and penalties; Canvas's CSV, penalties off.
    course(*REPORT, "--state", str(state))
    page = (state / "report" / "index.html").read_text()
    pairs = set(re.findall(r'<h4 id="[^"]*">(\w+): (\w+) and ([^,]+), (\d+)% in common</h4>', page))
    copied = {part for part, left, right, share in pairs if (left, right, share) == ("ada", "bo", "100")}
    assert copied >= {"embeddings_solution", "mask_solution", "nsp_solution", "freeze_solution",
                      "wordpiece_solution"}, pairs
    # cy's, di's and ed's answers to the long parts are their own: not flagged
    assert {p for p in pairs if p[0] in ("mask_solution", "nsp_solution")} == {
        ("mask_solution", "ada", "bo", "100"), ("nsp_solution", "ada", "bo", "100")}
    assert "5 submissions, mean total 16.6 / 22 (median 22); 2 late; " in page
    students = page[page.index("<h3>Students"):page.index("<h3>Similar")]
    for student, total, late in [("ada", "22", "on time"), ("cy", "22", "on time"),
                                 ("di", "16.8", "2.5 h late, penalty 2.2"), ("ed", "0", "16 h late, penalty 2")]:
        assert f"<td>{student}</td><td>{total} / 22</td><td>{late}</td>" in students, student
    course(*COURSE, "--state", str(state), "export", "--roster", str(roster))
    canvas = list(csv.reader((state / "canvas.csv").open()))
    assert canvas[:2] == [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", f"{A} (70412)"],
                          ["Points Possible", "", "", "", "", "22"]]
    assert {row[3]: row[5] for row in canvas[2:]} == {"ada": "22", "bo": "22", "cy": "22", "di": "16.8",
                                                     "ed": "0"}
    assert canvas[2][:5] == ["Ada, A", str(IDS["ada"]), f"S{IDS['ada']}", "ada", "A"]

    # 4. The same final submissions graded from scratch, in one serial run: the same grades everywhere.
    fresh.mkdir()
    shutil.copy(state / "deadlines.csv", fresh / "deadlines.csv")
    done = grade(fresh, "--jobs", "1", str(state / "submitted"))
    assert "graded 5 submissions, kept the results of 0 graded before" in done.stdout, done.stdout
    course(*COURSE, "--state", str(fresh), "export", "--roster", str(roster))
    for name in ("grades.csv", "canvas.csv", "totals.csv"):
        assert (state / name).read_text() == (fresh / name).read_text(), name
    for folder in ("submitted", "results", "autograded", "feedback"):
        assert digests(state / folder) == digests(fresh / folder), folder
    gradebook = gradebook_rows(state)
    assert gradebook == gradebook_rows(fresh) and len({row[:2] for row in gradebook}) == 5
    assert not any(row[5] for row in gradebook)  # no grade needs manual grading
    results = {s: json.loads((state / "results" / s / f"{A}.json").read_text())["late"] for s in IDS}
    assert results["cy"]["due"] == "2026-03-04T17:00:00+00:00" and results["ada"]["due"] == "2026-03-01T17:00:00+00:00"

    mathjax = book_assets.mathjax().decode()
    for page in sorted((state / "feedback").rglob("*.html")):  # MathJax inline: the maths shows offline
        text = page.read_text()
        assert "cdnjs" not in text and not re.search(r"<(script|link)[^>]+(src|href)=.https?:", text), page
        assert mathjax in text and feedback_filters._MATHJAX_CONFIG in text, page
    for student, words in [("di", "2.5 hours after the due date (2026-03-01 17:00 UTC): 2.2 points deducted"),
                           ("ed", "16 hours after the due date (2026-03-01 17:00 UTC): 2 points deducted"),
                           ("cy", "Your notebook was named <code>exercises-1.ipynb</code>; it was graded as")]:
        assert words in (state / "feedback" / student / A / "exercises.html").read_text(), student

    # The formgrader shows every submission autograded; its Autograde button and nbgrader's command refuse.
    api = formgrader_api(state)
    for student in IDS:
        shown = api.get_submission(A, student)
        assert shown["autograded"] and not shown["needs_manual_grade"], shown
    before = digests(state / "autograded")
    refused = api.autograde(A, "ada")
    assert not refused["success"] and "`make grade`" in refused["log"], refused
    on_the_command_line = subprocess.run(
        [sys.executable, "-m", "nbgrader", "autograde", A, "--student", "di",
         *[f"--CourseDirectory.{f}_directory={state / f}" for f in ("submitted", "autograded")],
         f"--CourseDirectory.db_url=sqlite:///{state / 'gradebook.db'}"],
        capture_output=True, text=True, cwd=ROOT / "autograder")
    assert on_the_command_line.returncode != 0 and "`make grade`" in on_the_command_line.stderr
    assert (digests(state / "autograded"), gradebook_rows(state)) == (before, gradebook)  # nothing touched
