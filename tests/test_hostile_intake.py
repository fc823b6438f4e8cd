"""The intake's catalogue of hostile and mistaken inputs (attnbook_course.intake, download, names): one case
per mechanism, each beside a control student who must be collected as if the attacker were not there."""

import os
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from attnbook_course import intake, names

ROOT = Path(__file__).resolve().parent.parent

A2, A3 = "02-transformer", "03-bert"
NB = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'
WHEN = (2026, 3, 1, 12, 0, 0)
CONTROL = "ctlbob_340934_208490284_exercises.ipynb"  # a Canvas control: course id bob through the roster


def make_zip(path: Path, entries: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    """A zip of ``entries`` (name -> bytes, all at WHEN) and of ``links`` (name -> target), stored as Unix
    symbolic links the way `zip --symlinks` stores them."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=WHEN), data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name, date_time=WHEN)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return path


def released(assignment: str) -> bytes:
    return (ROOT / "chapters" / assignment / "exercises.ipynb").read_bytes()


def known() -> dict[str, set[str]]:
    return {a: intake.grade_ids(ROOT / "chapters" / a / "exercises.ipynb") for a in (A2, A3)}


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (links as their target's text), by relative path."""
    return {p.relative_to(folder).as_posix(): os.readlink(p).encode() if p.is_symlink() else p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() or p.is_symlink()}


def control_collected(submitted: Path, student: str = "340934") -> bool:
    return (submitted / student / A2 / "exercises.ipynb").read_bytes() == NB


def test_a_link_in_a_zip_is_skipped_never_written_as_one(tmp_path):
    source = make_zip(tmp_path / "d.zip", {CONTROL: NB},
                      {"eve_340935_1_exercises.ipynb": str(ROOT / "solutions" / A2 / "exercises.ipynb")})
    lines = intake.collect(source, tmp_path / "submitted", A2)
    assert "skipped eve_340935_1_exercises.ipynb: a link or special file: never followed" in lines
    assert not (tmp_path / "submitted" / "340935").exists() and control_collected(tmp_path / "submitted")


def test_links_in_an_unpacked_download_are_never_followed(tmp_path):
    folder = tmp_path / "download"
    folder.mkdir()
    (folder / CONTROL).write_bytes(NB)
    (folder / "eve_340935_1_exercises.ipynb").symlink_to(ROOT / "solutions" / A2 / "exercises.ipynb")
    (folder / "mallory_340936_1_x").symlink_to(ROOT / "solutions", target_is_directory=True)
    lines = intake.collect(folder, tmp_path / "submitted", A2)
    assert sorted(p.name for p in (tmp_path / "submitted").iterdir()) == ["340934"]
    assert sum(line.endswith("a link or special file: never followed") for line in lines) == 2


def test_links_in_a_folder_of_submissions_are_never_copied(tmp_path):
    """``make grade SUBMISSIONS=folder``: a student folder that is a link, a notebook that is one."""
    source, submitted = tmp_path / "in", tmp_path / "submitted"
    (source / "bob" / A2).mkdir(parents=True)
    (source / "bob" / A2 / "exercises.ipynb").write_bytes(NB)
    (source / "eve" / A2).mkdir(parents=True)
    (source / "eve" / A2 / "exercises.ipynb").symlink_to(source / "bob" / A2 / "exercises.ipynb")
    (source / "mallory").symlink_to(ROOT / "solutions", target_is_directory=True)
    (source / "trudy").mkdir()
    (source / "trudy" / A2).symlink_to(ROOT / "solutions" / A2, target_is_directory=True)
    (source / "bob" / A2 / ".replaced").mkdir()  # kept as it is, but for a link in it
    (source / "bob" / A2 / ".replaced" / "exercises.ipynb").write_bytes(b"old")
    (source / "bob" / A2 / ".replaced" / "x.ipynb").symlink_to(ROOT / "solutions" / A2 / "exercises.ipynb")
    lines = intake.copy_submissions(source, submitted, lambda s, a: True, [A2])
    assert tree(submitted) == {f"bob/{A2}/exercises.ipynb": NB, f"bob/{A2}/.replaced/exercises.ipynb": b"old"}
    assert len(lines) == 4 and all("link" in line for line in lines), lines


def test_a_link_already_in_submitted_is_not_graded(tmp_path):
    """nbgrader's exchange, or a hand, filled ``submitted/``: the grader reads no link there."""
    from attnbook_course.submission import read_submission

    folder = tmp_path / "submitted" / "eve" / A2
    folder.mkdir(parents=True)
    (folder / "exercises.ipynb").symlink_to(ROOT / "solutions" / A2 / "exercises.ipynb")
    nb, status = intake.read_submission(folder, read_submission)
    assert nb is None and [n.status() for n in status] == [
        "not graded: the notebook is a link (links are never followed)"]
    (tmp_path / "submitted" / "mallory").symlink_to(tmp_path / "submitted" / "eve", target_is_directory=True)
    nb, status = intake.read_submission(tmp_path / "submitted" / "mallory" / A2, read_submission)
    assert nb is None and "folder is a link" in status[0].text
    from attnbook_course import classgrade

    assert classgrade.class_pairs(tmp_path / "submitted") == [("eve", A2)]  # graded: "the notebook is a link"
    assert classgrade.refused_folders(tmp_path / "submitted") == ["not graded: submitted/mallory: a link, never "
                                                                  "followed"]


@pytest.mark.parametrize("attack", [
    # Moodle: a file in a folder of the student's own, named as Canvas names another student's file
    "Eve Adams_70001_assignsubmission_file_/sub/ctlbob_340934_208490284_exercises.ipynb",
    # Canvas: a file name that reads as zip_collect's name for another student
    f"eve_340935_1_{A2}_340934_attempt_2026-03-01-10-00-00_exercises.ipynb",
])
def test_a_name_the_student_chose_never_files_under_another_student(tmp_path, attack):
    source = make_zip(tmp_path / "d.zip", {CONTROL: NB, attack: b'{"eve": 1}'})
    intake.collect(source, tmp_path / "submitted", A2)
    for notebook in (tmp_path / "submitted").rglob("*.ipynb"):
        assert notebook.read_bytes() != b'{"eve": 1}' or "340934" not in notebook.parts
    assert control_collected(tmp_path / "submitted")


# Eve (user id 340935, submission 7) chose the display name "Eve_340934": Canvas writes it lowercased, and her
# file's name reads as Bob's too (user id 340934, submission 340935, file "7_exercises.ipynb").
EVE = "eve_340934_340935_7_exercises.ipynb"


@pytest.mark.parametrize("rows, filed", [
    ("", None),  # no roster: the two readings cannot be told apart
    ("Bob,340934,bob\nEve,340935,eve\n", None),  # both ids are students
    ("Eve,340935,eve\n", "eve"),  # one is: Eve's own
])
def test_a_canvas_display_name_with_an_id_in_it_never_files_under_that_student(tmp_path, rows, filed):
    roster = None
    if rows:
        roster = tmp_path / "roster.csv"
        roster.write_text("Student,ID,SIS Login ID\n" + rows)
    source = make_zip(tmp_path / "d.zip", {CONTROL: NB, EVE: b'{"eve": 1}'})
    lines = intake.collect(source, tmp_path / "submitted", A2, roster)
    submitted = tmp_path / "submitted"
    bob = "bob" if rows.startswith("Bob") else "340934"
    assert (submitted / bob / A2 / "exercises.ipynb").read_bytes() == NB
    assert tree(submitted / bob) == {f"{A2}/exercises.ipynb": NB, f"{A2}/timestamp.txt": tree(submitted / bob)[
        f"{A2}/timestamp.txt"]}  # nothing of Eve's beside it, not even in .replaced/
    eve = [p for p in submitted.rglob("*.ipynb") if p.read_bytes() == b'{"eve": 1}']
    if filed is None:
        assert eve == []
        assert any(line.startswith(f"skipped {EVE}: an ambiguous Canvas name") and "340934 or 340935" in line
                   for line in lines), lines
    else:
        assert [p.relative_to(submitted).parts[0] for p in eve] == [filed]


def test_regrading_one_student_copies_no_one_elses_folder(tmp_path):
    source, submitted = tmp_path / "in", tmp_path / "submitted"
    for student in ("bob", "eve"):
        (source / student / A2).mkdir(parents=True)
        (source / student / A2 / "exercises.ipynb").write_bytes(b"new")
        (submitted / student / A2).mkdir(parents=True)
        (submitted / student / A2 / "exercises.ipynb").write_bytes(b"old")
    intake.copy_submissions(source, submitted, lambda s, a: s == "eve", [A2])
    assert tree(submitted) == {f"bob/{A2}/exercises.ipynb": b"old", f"eve/{A2}/exercises.ipynb": b"new"}


def test_two_notebooks_of_one_student_the_latest_is_graded(tmp_path):
    with zipfile.ZipFile(tmp_path / "d.zip", "w") as archive:
        archive.writestr(zipfile.ZipInfo("ctlbob_340934_1_exercises.ipynb", date_time=(2026, 3, 1, 9, 0, 0)), b"old")
        archive.writestr(zipfile.ZipInfo("ctlbob_340934_1_exercises-1.ipynb", date_time=(2026, 3, 1, 11, 0, 0)),
                         b"new")
    lines = intake.collect(tmp_path / "d.zip", tmp_path / "submitted", A2)
    folder = tmp_path / "submitted" / "340934" / A2
    assert intake.locate(folder)[0].read_bytes() == b"new"
    assert (folder / ".replaced" / "exercises.ipynb").read_bytes() == b"old"
    assert "2 notebooks: kept the latest, 'exercises-1.ipynb'; moved 'exercises.ipynb' to .replaced/" in lines[-1]
    assert (folder / "timestamp.txt").read_text() == "2026-03-01 11:00:00.000000 UTC"


def test_a_roster_with_one_id_twice_leaves_both_out_and_says_so(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("Student,ID,SIS Login ID\nBob,340934,bob\nEve,340935,bob\nAnn,340936,ann\n"
                      "Mal,340937,=cmd|' /C calc'!A0\n")
    source = make_zip(tmp_path / "d.zip", {CONTROL: NB, "eve_340935_1_exercises.ipynb": NB,
                                           "ann_340936_1_exercises.ipynb": NB, "mal_340937_1_exercises.ipynb": NB})
    lines = intake.collect(source, tmp_path / "submitted", A2, roster)
    assert sorted(p.name for p in (tmp_path / "submitted").iterdir()) == ["340934", "340935", "340937", "ann"]
    assert "roster roster.csv, line 2: left out: SIS Login ID bob or LMS id 340934 is on another row too" in lines
    assert any(line.startswith("roster roster.csv, line 5: left out: SIS Login ID \"=cmd|' /C calc'!A0\" is not")
               for line in lines), lines
    with pytest.raises(ValueError, match="line 3: left out"):
        intake.roster_rows(roster)  # a caller that cannot print the lines refuses the roster


def test_another_assignments_notebooks_are_refused_not_filed_as_this_one(tmp_path):
    source = make_zip(tmp_path / "d.zip", {"ctlbob_340934_1_exercises.ipynb": released(A2),
                                           "eve_340935_1_exercises.ipynb": released(A3)})
    lines = intake.collect(source, tmp_path / "submitted", A2, known=known())
    assert sorted(p.name for p in (tmp_path / "submitted").iterdir()) == ["340934"]
    assert (f"skipped 340935's files: 'exercises.ipynb' is {A3}'s notebook, not {A2}'s (collect it with "
            f"ASSIGNMENT={A3})") in lines


@pytest.mark.parametrize("name, why", [
    ("eve_340935_1_..\\..\\x.ipynb", "a backslash in its name"),
    ("../x/02-transformer/exercises.ipynb", "a folder named .."),
    ("/etc/02-transformer/exercises.ipynb", "an absolute path"),
    ("eve_340935_1_ex\x1b[2Jercises.ipynb", "expected a plain name"),
    ("[ab]/02-transformer/exercises.ipynb", "student id '[ab]': expected"),
    ("=1+1/02-transformer/exercises.ipynb", "student id '=1+1': expected"),
    ("eve_340935_1_x`<img src=x>`.ipynb", "file name 'x`<img src=x>`.ipynb': expected a plain name"),
])
def test_one_bad_name_skips_one_member_and_the_rest_is_collected(tmp_path, name, why):
    source = make_zip(tmp_path / "d.zip", {CONTROL: NB, name: NB})
    lines = intake.collect(source, tmp_path / "submitted", A2)
    skipped = [line for line in lines if line.startswith("skipped")]
    assert len(skipped) == 1 and why in skipped[0], lines
    assert skipped[0].isprintable()  # a terminal escape is shown escaped, never sent to the terminal
    assert control_collected(tmp_path / "submitted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.zip", "submitted"]  # nothing written outside


def test_an_oversized_notebook_is_skipped_and_the_rest_collected(tmp_path):
    source = make_zip(tmp_path / "d.zip", {CONTROL: NB, "eve_340935_1_exercises.ipynb": b" " * (70 << 20)})
    lines = intake.collect(source, tmp_path / "submitted", A2)
    assert any(line.startswith(f"skipped eve_340935_1_exercises.ipynb: {70 << 20} bytes: over the cap")
               for line in lines)
    assert control_collected(tmp_path / "submitted") and not (tmp_path / "submitted" / "340935").exists()


def test_a_zip_bomb_costs_its_student_only_and_bounded_memory(tmp_path):
    """30 members of 60 MB of zeros (a 1 MB zip): streamed in pieces, a student's files capped at four
    notebooks' worth; the peak memory of the whole collect stays far below one member's size."""
    with zipfile.ZipFile(tmp_path / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo(CONTROL, date_time=WHEN), NB)
        for i in range(30):
            info = zipfile.ZipInfo(f"eve_340935_1_part{i:02}.bin", date_time=WHEN)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w") as member:
                for _ in range(60):
                    member.write(bytes(1 << 20))
    assert (tmp_path / "bomb.zip").stat().st_size < 2 << 20
    script = ("import sys; from attnbook_course import intake; from pathlib import Path; "
              "lines = intake.collect(Path(sys.argv[1]), Path(sys.argv[2]), '02-transformer'); "
              "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]; "
              "print(peak); print(*lines, sep='\\n')")  # VmHWM: this process's peak, in KiB
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "bomb.zip"),
                           str(tmp_path / "submitted")], capture_output=True, text=True, check=True)
    peak_kib, *lines = done.stdout.splitlines()
    assert int(peak_kib) < 100 * 1024, peak_kib  # under 100 MiB, not 1.9 GiB
    written = sum(p.stat().st_size for p in (tmp_path / "submitted").rglob("*") if p.is_file())
    assert written <= 4 * (64 << 20) + 1024
    assert sum("over the cap" in line for line in lines) == 30 - 4, lines
    assert control_collected(tmp_path / "submitted")


def test_terminal_escapes_in_display_names_are_printed_escaped(tmp_path):
    source = make_zip(tmp_path / "d.zip", {"Eve\x1b]0;pwned\x07_70001_assignsubmission_file_/exercises.ipynb": NB})
    lines = intake.collect(source, tmp_path / "submitted", A2)
    assert all(line.isprintable() for line in lines), lines
    assert any("Eve\\x1b]0;pwned\\x07 (Moodle)" in line for line in lines)


def test_collecting_twice_or_after_a_kill_gives_the_same_folder(tmp_path):
    source = make_zip(tmp_path / "d.zip", {CONTROL: NB, "ann_340936_1_exercises (1).ipynb": NB})
    intake.collect(source, tmp_path / "state" / "submitted", A2)
    first = tree(tmp_path / "state")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = tmp_path / "state" / f".collect-{dead.stdout.strip()}-x"  # a collect killed half-way left this
    left.mkdir()
    (left / "0").write_bytes(b"half")
    intake.collect(source, tmp_path / "state" / "submitted", A2)
    assert tree(tmp_path / "state") == first


def test_the_id_rule():
    for good in ("bob", "340934", "s.j@uni.edu", "eve.json", "a-b_c"):
        assert names.student_id(good) == good
    for bad in ("", ".", "..", ".hidden", "[ab]", "a*", "a?", "=1+1", "+1", "-1", "@x", "<b>", "a b", "a/b", "é",
                "x" * 65, "a\nb"):
        with pytest.raises(ValueError):
            names.student_id(bad)
