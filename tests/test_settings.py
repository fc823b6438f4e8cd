"""attnbook.settings: every ATTNBOOK_* variable is declared there once, read only through it, and printed by
``attnbook-course settings``; the grader's processes talk through arguments and the wire, never through a setting."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from attnbook import settings
from attnbook.grading import hidden_cases
from attnbook_course import _wire, course, judge, sandbox

ROOT = Path(__file__).resolve().parent.parent
NAME = re.compile(r"ATTNBOOK_[A-Z][A-Z_]*[A-Z]")
SOURCES = sorted(p for folder in ("src", "autograder", "tools") for p in (ROOT / folder).rglob("*.py"))
HOME = ROOT / "src" / "attnbook" / "settings.py"  # the one module that reads them
PAGES = [*ROOT.glob("*.md"), *(ROOT / "docs").glob("*.md"), ROOT / "Makefile"]

# Each variable and its default as instructors have known them (changing one is a change of the course).
DEFAULTS = {
    "ATTNBOOK_DEVICE": None, "ATTNBOOK_DATA": Path("~/.cache/attnbook"), "ATTNBOOK_VISIBLE_SECONDS": None,
    "ATTNBOOK_HIDDEN_CASES": None, "ATTNBOOK_GRADEBOOK": None, "ATTNBOOK_GRADING_SANDBOX": None,
    "ATTNBOOK_GRADING_MEMORY_GIB": 4, "ATTNBOOK_GRADING_FILES_MIB": 256, "ATTNBOOK_GRADING_PROCESSES": 64,
    "ATTNBOOK_GRADING_CPU_SECONDS": 300, "ATTNBOOK_GRADING_PART_SECONDS": 120,
    "ATTNBOOK_GRADING_SUBMISSION_SECONDS": 900, "ATTNBOOK_GRADING_JUDGE_GRACE_SECONDS": 120,
    "ATTNBOOK_GRADING_JUDGE_MEMORY_GIB": 4, "ATTNBOOK_GRADING_FRAME_MIB": 16, "ATTNBOOK_GRADING_OUTPUT_CHARS": 20000,
    "ATTNBOOK_SERVICE_DB": None, "ATTNBOOK_SERVICE_URL": None, "ATTNBOOK_SERVICE_SUBMIT_MIB": 64,
    "ATTNBOOK_SERVICE_STALLED_SECONDS": 30,
}


@pytest.fixture
def clean(monkeypatch):
    """No ATTNBOOK_* variable of the machine running the tests."""
    for name in DEFAULTS:
        monkeypatch.delenv(name, raising=False)


def test_each_setting_is_declared_once_with_the_default_instructors_know(clean):
    declared = {s.name: s for s in settings.SETTINGS}
    assert len(declared) == len(settings.SETTINGS)
    assert {name: s.default for name, s in declared.items()} == DEFAULTS
    assert {name: s.read() for name, s in declared.items()} == DEFAULTS  # unset: the default
    constants = {name: value for name, value in vars(settings).items() if isinstance(value, settings.Setting)}
    assert constants == {s.name.removeprefix("ATTNBOOK_"): s for s in settings.SETTINGS}  # DEVICE is ATTNBOOK_DEVICE
    for s in settings.SETTINGS:
        assert s.description and "\n" not in s.description and len(s.description) <= 100, s.name
        assert bool(s.unit) == (s.kind in (int, float)), s.name  # a number has a unit, text and paths none
        assert s.default is None or isinstance(s.default, s.kind), s.name


def test_the_grading_limits_in_force_by_default_are_todays(clean):
    assert sandbox.limits() == {"memory_gib": 4, "files_mib": 256, "processes": 64, "cpu_seconds": 300,
                                "part_seconds": 120, "submission_seconds": 900, "judge_grace_seconds": 120,
                                "judge_memory_gib": 4, "frame_mib": 16, "output_chars": 20000}
    assert settings.GRADING == tuple(s for s in settings.SETTINGS if s.name.startswith("ATTNBOOK_GRADING_"))


def test_a_value_is_read_as_its_type_and_an_empty_one_is_unset(monkeypatch):
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", " 7.5 ")
    monkeypatch.setenv("ATTNBOOK_GRADING_PROCESSES", "12")
    monkeypatch.setenv("ATTNBOOK_HIDDEN_CASES", "/srv/hidden")
    monkeypatch.setenv("ATTNBOOK_GRADING_SANDBOX", "")
    assert sandbox.limits()["part_seconds"] == 7.5 and type(settings.GRADING_PROCESSES.read()) is int
    assert settings.HIDDEN_CASES.read() == Path("/srv/hidden") and settings.GRADING_SANDBOX.read() is None


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("ATTNBOOK_GRADING_PART_SECONDS", "abc", "a number (seconds), not 'abc'"),
    ("ATTNBOOK_GRADING_MEMORY_GIB", "lots", "a number (GiB), not 'lots'"),
    ("ATTNBOOK_GRADING_PROCESSES", "6.5", "a whole number (processes), not '6.5'"),
    ("ATTNBOOK_GRADING_CPU_SECONDS", "-1", "a number (seconds), 0 or more, not '-1'"),
    ("ATTNBOOK_GRADING_SUBMISSION_SECONDS", "inf", "a number (seconds), 0 or more, not 'inf'"),
    ("ATTNBOOK_VISIBLE_SECONDS", "nan", "a number (seconds), 0 or more, not 'nan'"),
])
def test_a_malformed_value_is_refused_naming_the_variable_the_value_and_what_is_expected(monkeypatch, name, value,
                                                                                        expected):
    monkeypatch.setenv(name, value)
    setting = next(s for s in settings.SETTINGS if s.name == name)
    with pytest.raises(ValueError) as info:
        setting.read()
    assert str(info.value) == f"{name} should be {expected}"
    assert settings.problems() == [str(info.value)]


def test_grading_does_not_start_with_a_malformed_setting(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("ATTNBOOK_GRADING_PART_SECONDS", "abc")
    assert course.main(["--state", str(tmp_path), "grade", str(tmp_path / "submissions")]) == 2
    assert capsys.readouterr().err == (
        "not grading: ATTNBOOK_GRADING_PART_SECONDS should be a number (seconds), not 'abc'\n")
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_every_variable_the_course_names_is_a_setting():
    named = {name for path in [*SOURCES, *PAGES] for name in NAME.findall(path.read_text())}
    assert named - {s.name for s in settings.SETTINGS} - {"ATTNBOOK_GRADING", "ATTNBOOK_SERVICE"} == set()  # "..._*"


def _environment_reads(tree: ast.AST) -> list[tuple[int, ast.expr | None]]:
    """(line, the variable's name as an expression) of each read of ``os.environ`` or ``os.getenv``: a
    subscript that is not assigned to, ``get``, ``setdefault``, ``pop``, ``getenv`` and ``in``."""
    def is_environ(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and node.id == "environ")

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_environ(node.value) and isinstance(node.ctx, ast.Load):
            found.append((node.lineno, node.slice))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                (node.func.attr in ("get", "setdefault", "pop") and is_environ(node.func.value))
                or node.func.attr == "getenv"):
            found.append((node.lineno, node.args[0] if node.args else None))
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) \
                and any(is_environ(c) for c in node.comparators):
            found.append((node.lineno, node.left))
    return found


def test_only_the_settings_module_reads_a_setting_from_the_environment():
    # A read elsewhere must name its variable as a literal that is not one of ours (PATH, say): a name held in a
    # variable or a settings constant could be one of ours read past its type, default and checks.
    reads = [f"{path.relative_to(ROOT)}:{line}" for path in SOURCES if path != HOME
             for line, key in _environment_reads(ast.parse(path.read_text()))
             if not (isinstance(key, ast.Constant) and isinstance(key.value, str) and not NAME.search(key.value))]
    assert reads == []
    sample = ("import os\nos.environ['A'] = '1'\nx = os.environ.get('ATTNBOOK_DATA')\n"
              "y = 'ATTNBOOK_DEVICE' in os.environ")
    assert [line for line, _ in _environment_reads(ast.parse(sample))] == [3, 4]  # the writes are not reads


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each string in ``path``'s code, docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def test_code_names_a_variable_through_its_setting_only():
    """Messages, help texts and the environments of child processes say ``settings.X.name``, so a variable is
    spelled in code once; docstrings and comments may cite it."""
    # the catalogue's answers: their strings are students' code, and an attack may name one
    students = ROOT / "autograder" / "attnbook_course" / "fixtures" / "answers"
    spelled = [f"{path.relative_to(ROOT)}:{line}: {name}" for path in SOURCES
               if path != HOME and not path.is_relative_to(students)
               for line, text in _code_strings(path) for name in NAME.findall(text) if name != "ATTNBOOK_GRADING"]
    assert spelled == []


def test_the_hidden_cases_folder_is_the_variables_then_the_graders_else_none(monkeypatch, tmp_path):
    monkeypatch.setattr(hidden_cases, "_DEFAULT", [])
    monkeypatch.delenv("ATTNBOOK_HIDDEN_CASES", raising=False)
    assert hidden_cases.folder() is None  # the package never guesses a checkout's folder
    hidden_cases.default_to(tmp_path)  # attnbook-course's own folder, handed to the judges it forks
    assert hidden_cases.folder() == tmp_path.resolve() and "ATTNBOOK_HIDDEN_CASES" not in os.environ
    monkeypatch.setenv("ATTNBOOK_HIDDEN_CASES", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=r"ATTNBOOK_HIDDEN_CASES='.*nowhere' should name the folder"):
        hidden_cases.folder()


def test_the_judge_hands_the_worker_its_process_cap_as_an_argument(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTNBOOK_GRADING_PROCESSES", "37")
    command, _ = sandbox.worker_command(tmp_path, [])
    if sandbox.isolation() != "bubblewrap":
        assert _wire.PROCESSES_FLAG not in command  # outside its own user namespace the cap would count ours
        pytest.skip("the process cap is set inside bubblewrap only")
    assert command[-3:] == [_wire.SCRATCH_FLAG, _wire.PROCESSES_FLAG, "37"]
    assert not any("ATTNBOOK" in word for word in command)
    worker = judge.open_worker(tmp_path, [ROOT])
    try:
        ready = worker.start_part(judge.package_sources(()), ["import resource\n"
                                  "cap = resource.getrlimit(resource.RLIMIT_NPROC)[0]"], ["cap"], [], [])
        worker.end_part()
    finally:
        worker.close()
    assert ready == {"cap": 37}


def test_course_prints_every_setting_aligned_within_80_columns(monkeypatch):
    url = "postgresql+psycopg2://grader@db.example.org/gradebook?host=/run/postgresql/" + "x" * 40
    done = subprocess.run([sys.executable, "-m", "attnbook_course", "settings"], capture_output=True,
                          text=True, check=True, env={**{k: v for k, v in os.environ.items() if k not in DEFAULTS},
                                                      "ATTNBOOK_GRADING_CPU_SECONDS": "7", "ATTNBOOK_GRADEBOOK": url})
    lines = done.stdout.splitlines()
    assert max(map(len, lines)) <= 80 and done.stdout == settings.table({
        "ATTNBOOK_GRADING_CPU_SECONDS": "7", "ATTNBOOK_GRADEBOOK": url}) + "\n"
    rows = [line for line in lines if line.startswith("ATTNBOOK_")]
    assert [row.split()[0] for row in rows] == [s.name for s in settings.SETTINGS]
    head = lines[lines.index(next(line for line in lines if line.startswith("variable")))]
    chars = next(row for row in rows if row.startswith("ATTNBOOK_GRADING_OUTPUT_CHARS"))
    assert [head.index(word) for word in ("unit", "default", "value here")] == \
        [chars.index("characters"), chars.index("20000"), chars.rindex("(default)")]  # aligned
    assert rows[9].split() == ["ATTNBOOK_GRADING_CPU_SECONDS", "seconds", "300", "7"]
    assert rows[1].split() == ["ATTNBOOK_DATA", "path", "~/.cache/attnbook", "(default)"]
    text = " ".join(line.strip() for line in lines)  # the descriptions, wrapped, and the long value
    assert all(s.description in text for s in settings.SETTINGS)
    assert f"value here: {url}" in "".join(line.strip() for line in lines)
    malformed = settings.table({"ATTNBOOK_GRADING_FRAME_MIB": "big"})
    assert "    ! ATTNBOOK_GRADING_FRAME_MIB should be a number (MiB), not 'big'" in malformed.splitlines()


def test_make_settings_runs_the_command_and_the_pages_cite_it():
    assert re.search(r"^settings: install\n\t\$\(VENV\)/bin/attnbook-course settings$", (ROOT / "Makefile").read_text(),
                     re.M)
    for page in ("README.md", "docs/design.md", "instructor.md"):
        assert "make settings" in (ROOT / page).read_text(), page
