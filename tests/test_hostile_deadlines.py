"""A hostile or careless ``deadlines.csv`` (attnbook_course.late): each way of getting it wrong is read right or
refused before anyone is judged, with every problem named by file, line and column; then the commands."""

import codecs
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import exercise_harness as harness
import pytest

from attnbook_course import late

ROOT = Path(__file__).resolve().parent.parent
COURSE = [sys.executable, "-m", "attnbook_course"]  # attnbook-course

ASSIGNMENT = "02-transformer"
COURSE_ASSIGNMENTS = ["01-rnn-attention", ASSIGNMENT]
HEADER = "assignment,student,due,policy\n"


def read(tmp_path: Path, text: str | bytes, students=("alee", "bsmith")) -> dict:
    """The deadlines of a file holding ``text``, read as ``grade`` reads it."""
    path = tmp_path / "deadlines.csv"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return late.read_deadlines(path, COURSE_ASSIGNMENTS, students)


def problems(tmp_path: Path, text: str | bytes) -> list[str]:
    with pytest.raises(late.DeadlinesError) as err:
        read(tmp_path, text)
    return err.value.problems


def problem(tmp_path: Path, text: str | bytes) -> str:
    found = problems(tmp_path, text)
    assert len(found) == 1, found
    return found[0]


def hours_late(deadlines: dict, tmp_path: Path, submitted: str, student: str = "bsmith") -> float:
    """Hours late of ``student``'s submission stamped ``submitted`` (nbgrader's format) under ``deadlines``."""
    folder = tmp_path / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "timestamp.txt").write_text(submitted)
    result = {"student": student, "assignment": ASSIGNMENT, "parts": {"p": {"score": 15.0, "max_score": 20.0}}}
    return late.lateness(result, tmp_path, deadlines, {})["hours_late"]


def course(*args, **env):
    return subprocess.run([*COURSE, *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env})


# --- encodings and columns -------------------------------------------------------------------------------

def test_a_byte_order_mark_from_excel_is_read(tmp_path):
    rules = read(tmp_path, codecs.BOM_UTF8 + f"{HEADER}{ASSIGNMENT},,2026-03-01 17:00 UTC,zero\r\n".encode())
    assert rules[(ASSIGNMENT, "")].due == datetime(2026, 3, 1, 17, tzinfo=timezone.utc)


def test_utf16_is_read_and_windows_1252_is_refused_by_line(tmp_path):
    unicode_text = f"{HEADER}{ASSIGNMENT},,2026-03-01 17:00 UTC,zero\r\n".replace(",", "\t")  # Excel's "Unicode text"
    assert read(tmp_path, unicode_text.encode("utf-16"))[(ASSIGNMENT, "")].policy.text == "zero"
    assert "UTF-16 without a byte-order mark" in problem(tmp_path, unicode_text.encode("utf-16-le"))
    assert problem(tmp_path, f"{HEADER}{ASSIGNMENT},andré,2026-03-01 17:00 UTC,\n".encode("cp1252")) == (
        "deadlines.csv, line 2: not UTF-8 (byte 0xe9: Windows-1252 or Latin-1?): save it as "
        "'CSV UTF-8 (comma delimited)'")


def test_semicolons_of_a_european_excel_are_read(tmp_path):
    rules = read(tmp_path, f"assignment;due;policy\n{ASSIGNMENT};2026-03-01 17:00 UTC;per-day 10%, zero after 7d\n")
    assert rules[(ASSIGNMENT, "")].policy.cutoff == 168.0


def test_an_unknown_or_misspelt_column_is_named_with_the_expected_ones(tmp_path):
    assert problem(tmp_path, f"assignment,studnet,due\n{ASSIGNMENT},,2026-03-01 17:00 UTC\n") == (
        "deadlines.csv, line 1: unknown column 'studnet' (did you mean 'student'?); expected the columns "
        "assignment, student, due, policy (student and policy may be left out)")


def test_a_missing_column_and_a_missing_header(tmp_path):
    assert problem(tmp_path, f"assignment,policy\n{ASSIGNMENT},zero\n").startswith(
        "deadlines.csv, line 1: no column due; expected the columns assignment, student, due, policy")
    assert "not a header" in problem(tmp_path, f"{ASSIGNMENT},,2026-03-01 17:00 UTC,zero\n")


def test_a_policy_with_an_unquoted_comma_is_refused_not_cut(tmp_path):
    assert "a policy with a comma goes in quotes" in problem(tmp_path, f"{HEADER}*,,,per-day 10%, zero after 7d\n")


# --- dates and zones --------------------------------------------------------------------------------------

def test_a_day_that_does_not_exist_is_named_by_line_and_column(tmp_path):
    text = f"{HEADER}01-rnn-attention,,2026-02-27 17:00 UTC,\n{ASSIGNMENT},,2026-02-30 17:00 UTC,\n"
    assert problem(tmp_path, text) == (
        "deadlines.csv, line 3, column due: expected a date and time such as 2026-03-01 17:00 Europe/Paris or "
        "2026-03-01 17:00 +01:00, got '2026-02-30 17:00 UTC' (no such day)")


def test_24_00_is_refused(tmp_path):
    assert "(no such hour: 24:00 is 00:00 of the next day)" in problem(
        tmp_path, f"{HEADER}{ASSIGNMENT},,2026-03-01 24:00 UTC,\n")


@pytest.mark.parametrize("zone, name, offset", [("PST", "America/Los_Angeles", "-08:00"),
                                                ("CET", "Europe/Paris", "+01:00"),
                                                ("EST", "America/New_York", "-05:00")])
def test_an_abbreviated_zone_is_refused_with_the_name_and_offset_to_write(tmp_path, zone, name, offset):
    assert problem(tmp_path, f"{HEADER}{ASSIGNMENT},,2026-03-01 17:00 {zone},\n").endswith(
        f"({zone} is an abbreviation, ambiguous: write an IANA name such as {name}, or the offset meant, "
        f"such as {offset})")


def test_minus_0800_is_eight_hours_behind_utc(tmp_path):
    """nbgrader's parse_utc reads ``-0800`` as minus 800 seconds; here it is hours and minutes."""
    rules = read(tmp_path, f"{HEADER}{ASSIGNMENT},,2026-03-01 17:00 -0800,per-hour 1%\n")
    assert rules[(ASSIGNMENT, "")].due == datetime(2026, 3, 2, 1, tzinfo=timezone.utc)
    assert hours_late(rules, tmp_path, "2026-03-02 03:00:00.000000 UTC") == 2.0


def test_plus_0530_and_an_iana_name(tmp_path):
    rules = read(tmp_path, f"{HEADER}{ASSIGNMENT},,2026-03-01 17:00 +05:30,\n"
                           f"{ASSIGNMENT},alee,2026-03-01 17:00 America/Los_Angeles,\n")
    assert hours_late(rules, tmp_path, "2026-03-01 12:00:00.000000 UTC") == 0.5       # due 11:30 UTC
    assert hours_late(rules, tmp_path, "2026-03-02 03:00:00.000000 UTC", "alee") == 2.0  # due 01:00 UTC


def test_a_time_without_a_zone_is_refused_naming_the_line(tmp_path):
    assert problem(tmp_path, f"{HEADER}{ASSIGNMENT},,2026-03-01 17:00,\n") == (
        "deadlines.csv, line 2, column due: expected a date and time such as 2026-03-01 17:00 Europe/Paris or "
        "2026-03-01 17:00 +01:00, got '2026-03-01 17:00' (no time zone: add one, such as UTC, Europe/Paris or "
        "+01:00; a time without one is not guessed)")


@pytest.mark.parametrize("due, why", [
    ("2026-03-01 17:00 Europe/Pariss", "no time zone Europe/Pariss; did you mean 'Europe/Paris'?"),
    ("2026-03-01 17:00 UTC+1", "write the offset alone, such as +01:00"),
    ("2026-03-01 17:00 Etc/GMT+8", "the POSIX sign"),
    ("01/03/2026 17:00 UTC", "write the date year-month-day"),
    ("2026-03-29 02:30 Europe/Paris", "the clocks skip it"),
])
def test_other_zones_and_dates_that_would_be_misread(tmp_path, due, why):
    assert why in problem(tmp_path, f"{HEADER}{ASSIGNMENT},,{due},\n")


def test_timestamps_are_read_as_nbgrader_writes_them_but_not_misread():
    """timestamp.txt: nbgrader's own format and zone names; nbgrader takes PST for UTC and -0800 for seconds."""
    from nbgrader.utils import parse_utc

    assert late.parse_time("2026-03-02 18:00:00.000000 UTC", "t") == datetime(2026, 3, 2, 18, tzinfo=timezone.utc)
    assert late.parse_time("2026-03-02 18:00:00.000000 CET", "t").hour == parse_utc("2026-03-02 18:00:00 CET").hour
    assert parse_utc("2026-03-02 10:00:00 -0800").isoformat() == "2026-03-02T10:13:20"  # nbgrader's reading
    assert late.parse_time("2026-03-02 10:00:00 -0800", "t") == datetime(2026, 3, 2, 18, tzinfo=timezone.utc)
    assert parse_utc("2026-03-02 10:00:00.000000 PST").isoformat() == "2026-03-02T10:00:00"  # UTC, silently
    with pytest.raises(ValueError, match="no zone PST in the time zone database"):
        late.parse_time("2026-03-02 10:00:00.000000 PST", "t")


# --- policies -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("policy, why", [
    ("10% per day", "(did you mean 'per-day 10%'?)"),
    ("per-day ten%", "(did you mean 'per-day 10%'?)"),
    ("per-day 10%, zero after 7 days", "(did you mean 'per-day 10%, zero after 7d'?)"),
    ("per-day -10%", "(a rate or a cut-off is never negative)"),
    ("per-hour 150%", "(a rate is at most 100%)"),
    ("per-day 10%, per-hour 2%", "(one rate and one cut-off at most)"),
])
def test_a_policy_outside_the_grammar_lists_the_forms_and_suggests(tmp_path, policy, why):
    found = problem(tmp_path, f'{HEADER}{ASSIGNMENT},,2026-03-01 17:00 UTC,"{policy}"\n')
    assert found.startswith(f"deadlines.csv, line 2, column policy: expected none, zero, per-hour P%, per-day P%, "
                            f"zero after Nh, zero after Nd, or a rate and a cut-off ('per-day 10%, zero after 7d'), "
                            f"got {policy!r}")
    assert found.endswith(why)


# --- rows -----------------------------------------------------------------------------------------------------

def test_a_duplicate_row_names_both_lines(tmp_path):
    assert problem(tmp_path, f"{HEADER}{ASSIGNMENT},alee,2026-03-02 17:00 UTC,\n"
                             f"{ASSIGNMENT},,2026-03-01 17:00 UTC,\n{ASSIGNMENT},alee,2026-03-03 17:00 UTC,\n") == (
        f"deadlines.csv, line 4: a second row for {ASSIGNMENT} and alee (the first is line 2)")


def test_a_misspelt_assignment_is_refused_with_a_suggestion(tmp_path):
    assert problem(tmp_path, f"{HEADER}02-transfomer,,2026-03-01 17:00 UTC,\n") == (
        "deadlines.csv, line 2, column assignment: expected * or one of the course's assignments "
        f"(01-rnn-attention, {ASSIGNMENT}), got '02-transfomer' (did you mean '{ASSIGNMENT}'?)")


def test_the_star_row_and_an_extension_are_inherited(tmp_path):
    rules = read(tmp_path, f'{HEADER}*,,,"per-day 10%, zero after 7d"\n{ASSIGNMENT},,2026-03-01 17:00 UTC,\n'
                           f"{ASSIGNMENT},alee,2026-03-04 17:00 Europe/Paris,\n")
    assert late.rule(rules, "01-rnn-attention", "bsmith").policy.text == "per-day 10%, zero after 7d"
    assert late.rule(rules, ASSIGNMENT, "bsmith").due == datetime(2026, 3, 1, 17, tzinfo=timezone.utc)
    alee = late.rule(rules, ASSIGNMENT, "alee")
    assert (alee.due, alee.policy.cutoff) == (datetime(2026, 3, 4, 16, tzinfo=timezone.utc), 168.0)
    assert late._shown(alee) == ("due 2026-03-04 16:00 UTC = 2026-03-04 17:00 Europe/Paris (+01:00); late policy: "
                                 "per-day 10%, zero after 7d")
    assert "no student on the * row" in problem(tmp_path, f"{HEADER}*,alee,2026-03-04 17:00 UTC,\n")


def test_every_problem_at_once_by_line_and_column(tmp_path):
    text = (f'{HEADER}*,,,"10% per day"\n\n{ASSIGNMENT},,2026-02-30 17:00 PST,\n'
            f"01-rnn-atention,,2026-03-01 17:00,zero\n{ASSIGNMENT},,,\n")
    found = problems(tmp_path, text)
    assert [p.split(":")[0] for p in found] == [
        "deadlines.csv, line 2, column policy", "deadlines.csv, line 4, column due",
        "deadlines.csv, line 5, column assignment", "deadlines.csv, line 5, column due", "deadlines.csv, line 6",
        "deadlines.csv, line 6"]
    message = str(late.DeadlinesError(tmp_path / "deadlines.csv", found))
    assert message.splitlines()[0].endswith("deadlines.csv: 6 problems (`make deadlines` checks the file alone):")
    assert len(message.splitlines()) == 7


def test_a_student_with_no_submission_is_a_warning_not_an_error(tmp_path, capsys):
    (tmp_path / "submitted" / "alee").mkdir(parents=True)
    (tmp_path / "deadlines.csv").write_text(f"{HEADER}{ASSIGNMENT},ale,2026-03-04 17:00 UTC,\n")
    assert (ASSIGNMENT, "ale") in late.load(tmp_path, COURSE_ASSIGNMENTS)
    assert capsys.readouterr().err == (
        "deadlines.csv, line 2: warning: no submission of 'ale' in submitted/ (yet) (did you mean 'alee'?)\n")
    assert late.load(tmp_path / "none", COURSE_ASSIGNMENTS) == {}  # no file: the gradebook's dates


# --- the commands ---------------------------------------------------------------------------------------------

def test_the_deadlines_command_shows_each_due_date_or_every_problem(tmp_path, capsys):
    (tmp_path / "deadlines.csv").write_text(f'{HEADER}*,,,"per-day 10%"\n{ASSIGNMENT},,2026-03-01 17:00 -08:00,\n')
    done = course("--state", str(tmp_path), "deadlines")
    assert done.returncode == 0, done.stderr
    assert (f"{ASSIGNMENT}: due 2026-03-02 01:00 UTC = 2026-03-01 17:00 (-08:00); late policy: per-day 10%"
            in done.stdout.splitlines())
    (tmp_path / "deadlines.csv").write_text(f"{HEADER}{ASSIGNMENT},,2026-03-01 17:00 PST,\n")
    assert late.check(tmp_path, COURSE_ASSIGNMENTS) == 2
    assert "line 2, column due" in capsys.readouterr().err


def test_grade_and_collect_stop_before_judging_on_a_wrong_file(tmp_path):
    """One blank notebook submitted, a wrong deadlines.csv: ``grade`` says why and judges no one (no results/,
    no grades.csv); ``collect`` prints every problem, not only the first."""
    state = tmp_path / "state"
    folder = state / "submitted" / "bsmith" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / "exercises.ipynb").write_bytes((ROOT / "chapters" / ASSIGNMENT / "exercises.ipynb").read_bytes())
    (state / "deadlines.csv").write_text(f"{HEADER}{ASSIGNMENT},,2026-02-30 17:00 UTC,\n*,,,10% per day\n")
    done = course("--state", str(state), "grade", "--jobs", "1", **harness.trusted_grading_env())
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith(f"not grading: {state / 'deadlines.csv'}: 2 problems"), done.stderr
    assert "line 2, column due" in done.stderr and "(did you mean 'per-day 10%'?)" in done.stderr
    assert not (state / "results").exists() and not (state / "grades.csv").exists()
    done = course("--state", str(state), "collect", str(tmp_path / "download.zip"))
    assert done.returncode == 2 and done.stderr.startswith("not done: "), done.stderr
    assert len(done.stderr.strip().splitlines()) == 3, done.stderr  # the header and both problems
