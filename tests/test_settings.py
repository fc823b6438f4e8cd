"""attnbook.settings: every ATTNBOOK_* variable the course reads is declared there once, and read only through it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnbook import settings
from attnbook.grading import sandbox

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"ATTNBOOK_[A-Z][A-Z_]*[A-Z]")
SOURCES = sorted(p for folder in ("src", "autograder", "tools") for p in (ROOT / folder).rglob("*.py"))
# The worker sees only its own files in the sandbox: the judge hands it the process cap (attnbook.settings).
READS_ITS_OWN = {"settings.py", "_worker.py"}


def test_every_variable_the_course_names_is_a_setting():
    texts = [*SOURCES, *ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), ROOT / "Makefile"]
    named = {name for path in texts for name in NAME.findall(path.read_text())}
    declared = {s.name for s in settings.SETTINGS}
    assert named - declared - {"ATTNBOOK_GRADING"} == set()  # "ATTNBOOK_GRADING_<NAME>" in prose
    assert len(declared) == len(settings.SETTINGS)


def test_only_the_settings_module_reads_the_environment_for_them():
    reads = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in SOURCES if path.name not in READS_ITS_OWN
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if NAME.search(line) and re.search(r"environ(\.get|\[)|getenv", line)]
    assert reads == []


def test_course_prints_every_setting_with_the_value_in_force():
    done = subprocess.run([sys.executable, str(ROOT / "autograder" / "course.py"), "settings"], capture_output=True,
                          text=True, env={**os.environ, "ATTNBOOK_GRADING_CPU_SECONDS": "7"}, check=True)
    assert [line.split(" = ")[0] for line in done.stdout.split("\n\n")] == [s.name for s in settings.SETTINGS]
    assert "ATTNBOOK_GRADING_CPU_SECONDS = 300 seconds (set here: 7)\n    CPU time per graded part" in done.stdout


def test_the_sandbox_limits_are_the_settings_and_a_bad_one_is_named(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "7")
    assert sandbox.limits()["part_seconds"] == 7 and sandbox.limits()["memory_gib"] == 4
    monkeypatch.setenv("ATTNBOOK_GRADING_MEMORY_GIB", "lots")
    with pytest.raises(ValueError, match=r"ATTNBOOK_GRADING_MEMORY_GIB should be a number \(GiB\), not 'lots'"):
        sandbox.limits()
