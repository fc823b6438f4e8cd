"""A term's commands against a class with attackers in it, end to end: `collect` of a hostile Canvas download and
roster, `grade` (and a regrade from a folder of links), `report` and `export`. Nothing is written outside the
state folder, no link is followed, no page runs a student's script when opened in Chromium, no CSV cell starts
with a formula character, and the control students are graded as the catalogue says, as without the attackers.
The catalogue's mechanisms one by one: test_hostile_intake.py, test_hostile_pages.py, test_hostile_csv.py and
test_hostile_deadlines.py."""

import csv
import json
import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import exercise_harness as harness
import nbformat
import pytest
from browser import CHROMIUM, dom_after_load

from attnbook_course.fixtures import catalogue

ROOT = Path(__file__).resolve().parent.parent
COURSE = [sys.executable, "-m", "attnbook_course"]  # attnbook-course

A2, A3 = "02-transformer", "03-bert"
WRONG = "no_scaling"  # a control with a known partial grade (the catalogue's)
WHEN = (2026, 3, 1, 12, 0, 0)
# Each payload would leave a trace in the DOM Chromium serialises: an element whose id is built at run time.
MARK = "document.title='PWNED';document.body.insertAdjacentHTML('beforeend','<b id='+'pw'+'ned>x</b>')"
PAYLOADS = [f"<script>{MARK}</script>", f'<img src=x onerror="{MARK}">', f'<svg onload="{MARK}"></svg>',
            f'<iframe srcdoc="<script>parent.{MARK}</script>"></iframe>', f'<a href="javascript:{MARK}">click</a>',
            f'<noscript><p title="</noscript><img src=x onerror={MARK}>"></noscript>']
ROSTER = ("Student,ID,SIS User ID,SIS Login ID,Section\n"
          "Sol,340934,S1,solution,A\nBlank,340935,S2,blank,A\nWrong,340936,S3,no_scaling,A\n"
          '"=HYPERLINK(""http://evil.example"",""click"")",340940,S4,eve,@home\n'
          "Ida,340946,S5,ida,A\nIdo,340946,S6,ido,A\n"  # one LMS id twice: both rows left out
          "Dan,340944,S7,dan,-A\nCarol,340945,S8,carol,A\n")


def hostile_notebook(assignment: str) -> str:
    """The released notebook with every payload in a markdown cell, one in an HTML output, a tag with a comma."""
    nb = nbformat.read(ROOT / "chapters" / assignment / "exercises.ipynb", as_version=4)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("\n\n".join(PAYLOADS)))
    nb.cells[1].metadata["tags"] = ["a,b", "[x]"]  # nbformat's schema refuses a comma; a student's file may not
    code = nbformat.v4.new_code_cell("1")
    code.outputs = [nbformat.v4.new_output("display_data", data={"text/html": PAYLOADS[0],
                                                                 "application/javascript": MARK})]
    nb.cells.insert(2, code)
    return json.dumps(nb)  # as the student's file holds it: nbformat would refuse the tag with a comma


def canvas_zip(path: Path, built: Path) -> Path:
    """The class as Canvas's "Download submissions" would give it, with the attackers' members."""
    def add(name: str, data: str | bytes, when: tuple = WHEN, link: bool = False) -> None:
        info = zipfile.ZipInfo(name, date_time=when)
        if link:
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, data)

    with zipfile.ZipFile(path, "w") as archive:
        for lms_id, name in (("340934", "solution"), ("340935", "blank"), ("340936", WRONG)):
            notebook = (built / name / A2 / "exercises.ipynb").read_text()
            add(f"{name.replace('_', '')}_{lms_id}_1_exercises.ipynb", notebook)
        # eve: scripts in her notebook, and a file name that reads as zip_collect's name for the solution student
        add(f"eve_340940_1_{A2}_solution_attempt_2026-03-01-10-00-00_exercises.ipynb", hostile_notebook(A2))
        add("mal_340941_1_exercises.ipynb", str(ROOT / "solutions" / A2 / "exercises.ipynb"), link=True)
        add("trudy_340942_1_..\\..\\exercises.ipynb", hostile_notebook(A2))
        add("dan_340944_1_exercises.ipynb", (built / "solution" / A2 / "exercises.ipynb").read_text(),
            (2026, 3, 1, 9, 0, 0))  # dan's older draft is the solution, his latest the blank
        add("dan_340944_1_exercises-1.ipynb", (built / "blank" / A2 / "exercises.ipynb").read_text())
        add("carol_340945_1_exercises.ipynb", (ROOT / "chapters" / A3 / "exercises.ipynb").read_text())
        add("ida_340946_1_exercises.ipynb", (built / "blank" / A2 / "exercises.ipynb").read_text())
    return path


def course(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **harness.trusted_grading_env(), "ATTNBOOK_GRADING_PART_SECONDS": "30"}
    return subprocess.run([*COURSE, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=1200)


def rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def repository_state() -> list[str]:
    """What git sees changed or added in the course's folders, Python's bytecode caches aside (the tests that
    run beside this one, under pytest-xdist, import modules for the first time)."""
    lines = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all", "--", "solutions",
                            "chapters", "autograder", "src"], capture_output=True, text=True, cwd=ROOT).stdout
    return [line for line in lines.splitlines() if "/__pycache__/" not in line]


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None and os.environ.get("CI") != "true", reason="no Chromium here (CI has it)")
def test_a_hostile_class_is_contained_and_the_controls_graded_as_without_it(tmp_path):
    before = repository_state()
    solution_bytes = (ROOT / "solutions" / A2 / "exercises.ipynb").read_bytes()
    catalogue.build_submissions(tmp_path / "built", {WRONG: catalogue.ANSWERS[WRONG]})
    state, roster = tmp_path / "state", tmp_path / "roster.csv"
    roster.write_text(ROSTER)

    done = course("--state", str(state), "collect", str(canvas_zip(tmp_path / "canvas.zip", tmp_path / "built")),
                  "--assignment", A2, "--roster", str(roster))
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "skipped mal_340941_1_exercises.ipynb: a link or special file: never followed" in out
    assert "skipped trudy_340942_1_..\\..\\exercises.ipynb: a backslash in its name" in out
    assert f"skipped carol's files: 'exercises.ipynb' is {A3}'s notebook" in out
    assert "line 6: left out" in out and "line 7: left out" in out
    assert sorted(p.name for p in (state / "submitted").iterdir()) == ["340946", "blank", "dan", "eve", "no_scaling",
                                                                      "solution"]

    # A folder of submissions that links to the solutions and to a classmate: nothing of it is copied.
    links = tmp_path / "links"
    links.mkdir()
    (links / "zed").symlink_to(ROOT / "solutions", target_is_directory=True)
    (links / "yan" / A2).mkdir(parents=True)
    (links / "yan" / A2 / "exercises.ipynb").symlink_to(state / "submitted" / "solution" / A2 / "exercises.ipynb")
    done = course("--state", str(state), "grade", "--jobs", "2", str(links))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped zed: a link, never followed" in done.stderr
    assert not (state / "submitted" / "zed").exists() and not (state / "submitted" / "yan" / A2 / "exercises.ipynb"
                                                                ).exists()
    graded = {r["student"]: r for r in csv.DictReader((state / "grades.csv").open())}
    assert catalogue.problems(state / "grades.csv", {WRONG: catalogue.ANSWERS[WRONG]}) == []  # the controls
    assert float(graded["dan"]["score"]) == 0  # his latest notebook, the blank one
    assert float(graded["eve"]["score"]) == 0
    assert done.stdout.splitlines()[-1] == "feedback pages: 7 for 7 submissions graded (7 of 7 written now)"

    # A regrade of one student from a folder holding everyone's: only that student's files change.
    again = tmp_path / "again"
    for student in ("solution", "blank"):
        (again / student / A2).mkdir(parents=True)
        (again / student / A2 / "exercises.ipynb").write_text((tmp_path / "built" / "blank" / A2 /
                                                               "exercises.ipynb").read_text())
    kept = (state / "submitted" / "solution" / A2 / "exercises.ipynb").read_bytes()
    done = course("--state", str(state), "grade", "--student", "blank", "--jobs", "2", str(again))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (state / "submitted" / "solution" / A2 / "exercises.ipynb").read_bytes() == kept
    assert catalogue.problems(state / "grades.csv", {WRONG: catalogue.ANSWERS[WRONG]}) == []

    for command in (["report", "--state", str(state)], ["--state", str(state), "export", "--roster", str(roster)]):
        done = subprocess.run([*COURSE, *command], capture_output=True,
                              text=True, cwd=ROOT, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr

    for table in ("grades.csv", "totals.csv", "canvas.csv"):
        cells = [cell for row in rows(state / table) for cell in row]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], table
    assert any(c.startswith("'=HYPERLINK") for row in rows(state / "canvas.csv") for c in row)

    pages = sorted((state / "feedback").rglob("*.html")) + [state / "report" / "index.html"]
    assert len(pages) == 8
    for page in pages:
        dom = dom_after_load(page)
        assert 'id="pwned"' not in dom and "<title>PWNED" not in dom, page

    assert repository_state() == before  # nothing written in the course's own folders
    assert (ROOT / "solutions" / A2 / "exercises.ipynb").read_bytes() == solution_bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "built", "canvas.zip", "links", "roster.csv",
                                                          "state"]
    results = json.loads((state / "results" / "eve" / f"{A2}.json").read_text())
    assert results["student"] == "eve"
