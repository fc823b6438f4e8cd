"""Hidden stays hidden: no hidden case's parameters in the student's wheel or released notebooks.

The hidden cases live in ``autograder/hidden/<chapter>.py`` (instructor files); the part modules
in ``attnbook.grading`` keep the visible cases and the case makers. These tests build the wheel a
student installs, read every released notebook, and look there for what the instructor files
hold, read with :mod:`ast` from the arguments of every hidden ``Case`` (its group label, a
concept name that the feedback prints, is not a parameter). Two kinds:

* **values**: every string of two characters or more, every number of 100 or more (seeds,
  sample counts), every float that is not whole, every tuple or list of two or more literals.
  Small integers and one-character strings are in every line of code and say nothing on their
  own; a value is *generic*, and not looked for, when a visible case holds it too (in its
  arguments, or, for a string, in what its maker makes: WordPiece's visible vocabulary), when
  it is a mode that the grading code compares with (``"arbitrary"``: a maker's keyword) or when
  the statement holds it: the wheel outside ``attnbook/grading`` (the reference implementations,
  whose worked examples are the subject's vocabulary: ``256``, ``(97, 98)``, ``"decode"``) and
  the released notebooks' cells other than the test cells. What is left must not occur in what
  would carry a case list: the wheel's ``attnbook/grading`` and the notebooks' test cells.
* **argument runs**: the leading number arguments of each maker call in a hidden case, three or
  more of them (``_case(201, 3, 6, 16, 16, ...)`` gives ``201, 3, 6, 16, 16``: a seed and the
  sizes), unless a visible case has the same run. A run does not occur by chance, so it is
  looked for everywhere: in every file of the wheel and every cell of the notebooks.

A string is found when it occurs quoted (a literal in code or in a doctest's output), or anywhere
when it is six characters or longer; a number, a tuple or a run when it occurs as a token.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTRUCTOR = ROOT / "autograder" / "hidden"
GRADING = ROOT / "src" / "attnbook" / "grading"
CHAPTERS = sorted(p.parent.name for p in GRADING.glob("*/__init__.py"))  # the chapters' grading packages


@dataclass(frozen=True)
class Run:
    """The leading number arguments of a maker call, found as ``a, b, c`` in source (never equal to a tuple)."""

    numbers: tuple


def _literal(node: ast.AST) -> object:
    """The value of a constant, or of a tuple or list of them (as a tuple), else a ValueError."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_literal(node.operand)
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_literal(e) for e in node.elts)
    raise ValueError(ast.dump(node))


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _parameters(node: ast.AST) -> set:
    """The values and argument runs under ``node`` (the rules in the module docstring)."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            run = []
            for arg in sub.args:
                try:
                    value = _literal(arg)
                except ValueError:
                    break
                if not _number(value):
                    break
                run.append(value)
            if len(run) >= 3:
                found.add(Run(tuple(run)))
        try:
            value = _literal(sub)
        except ValueError:
            continue
        if isinstance(value, str) and len(value) >= 2 or isinstance(value, tuple) and len(value) >= 2:
            found.add(value)
        elif _number(value) and (abs(value) >= 100 or value != int(value)):
            found.add(value)
    return found


def _case_arguments(tree: ast.AST) -> list[ast.AST]:
    """Every argument of every ``Case(...)`` call under ``tree``, less its group label and weight."""
    args = []
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Case":
            args += call.args[1:] + [k.value for k in call.keywords if k.arg not in ("group", "weight")]
    return args


def _visible_parameters() -> set:
    """The parameters of the visible cases (the ``visible=`` of each ``Part`` and what it names)."""
    found = set()
    for path in GRADING.glob("*/*.py"):
        tree = ast.parse(path.read_text())
        assigned = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                    if isinstance(t, ast.Name)}
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Part":
                for keyword in call.keywords:
                    if keyword.arg == "visible":
                        visible = assigned.get(getattr(keyword.value, "id", None), keyword.value)
                        for arg in _case_arguments(visible):
                            found |= _parameters(arg)
    return found


def _strings(made: object) -> set[str]:
    """The strings in what a maker made: in its lists, tuples and dictionaries."""
    if isinstance(made, str):
        return {made}
    if isinstance(made, dict):
        made = [*made, *made.values()]
    return set().union(*map(_strings, made)) if isinstance(made, (list, tuple, set)) and made else set()


def _generic_strings() -> set[str]:
    """The strings that the visible cases make, and those that the grading code compares with (modes)."""
    found = set()
    for chapter in CHAPTERS:
        package = importlib.import_module(f"attnbook.grading.{chapter}")
        for name in package.__all__:
            for case in getattr(getattr(package, name), "visible", ()):
                found |= _strings(case.make())
    for path in GRADING.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):
                for operand in (node.left, *node.comparators):
                    found |= {c.value for c in ast.walk(operand) if isinstance(c, ast.Constant)
                              and isinstance(c.value, str)}
    return found


@functools.cache
def hidden_parameters() -> set:
    """The parameters of every hidden case, from the instructor files, less the visible ones."""
    found = set()
    for chapter in CHAPTERS:
        for arg in _case_arguments(ast.parse((INSTRUCTOR / f"{chapter}.py").read_text())):
            found |= _parameters(arg)
    return found - _visible_parameters() - _generic_strings()


def _pattern(value: object) -> str:
    """A regular expression that finds ``value`` as a token of Python source."""
    if isinstance(value, Run):
        return r"(?<![\w.])" + r"\s*,\s*".join(re.escape(repr(v)) for v in value.numbers) + r"(?![\w.])"
    if isinstance(value, tuple):
        inner = r"\s*,\s*".join(_pattern(v) for v in value)
        return rf"[(\[]\s*{inner}\s*,?\s*[)\]]"
    if isinstance(value, str):
        return "(?:" + "|".join(re.escape(q + value + q) for q in ("'", '"')) + ")"
    return rf"(?<![\w.]){re.escape(repr(value))}(?![\w.])"


def _first(value: object) -> str:
    """A piece of text that ``value`` cannot occur without: a cheap test before the regular expression."""
    if isinstance(value, Run):
        return repr(value.numbers[0])
    return _first(value[0]) if isinstance(value, tuple) and value else value if isinstance(value, str) else repr(value)


def found(value: object, text: str) -> bool:
    """Whether ``value`` occurs in ``text`` (the rules in the module docstring)."""
    if _first(value) not in text:
        return False
    if isinstance(value, str) and len(value) >= 6:
        return True
    return re.search(_pattern(value), text) is not None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel a student installs, built by pip from the root project of a copy of this checkout: every
    file git tracks or would track, the instructor's ``autograder/`` too (a build writes into its source)."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    project = tmp_path / "project"
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():  # a file deleted in the working tree is still in git's index
            (project / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, project / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "-w", str(tmp_path / "dist"), str(project)], check=True, capture_output=True)
    (built,) = (tmp_path / "dist").glob("attnbook-*.whl")
    return built


def _wheel_texts(wheel: Path) -> dict[str, str]:
    """Every text file of ``wheel``, by its name in the wheel."""
    texts = {}
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            try:
                texts[name] = archive.read(name).decode()
            except UnicodeDecodeError:  # the trained models' weights
                continue
    return texts


def _notebook_cells() -> dict[str, tuple[bool, str]]:
    """Every cell of every released notebook: whether it is a test cell, and its source."""
    cells = {}
    for path in sorted(ROOT.glob("chapters/*/exercises.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text())["cells"]):
            test = cell["metadata"].get("nbgrader", {}).get("grade", False)
            cells[f"{path.relative_to(ROOT)} cell {i}"] = (test, "".join(cell["source"]))
    return cells


@pytest.fixture(scope="module")
def shipped(wheel) -> tuple[dict[str, str], dict[str, str]]:
    """What a student receives, split in two: (what would carry a case list, the statement)."""
    carriers, statement = {}, {}
    for name, text in _wheel_texts(wheel).items():
        (carriers if name.startswith("attnbook/grading/") else statement)[name] = text
    for name, (test, text) in _notebook_cells().items():
        (carriers if test else statement)[name] = text
    return carriers, statement


def test_the_wheel_holds_attnbook_and_nothing_of_the_instructors(wheel):
    """The root project builds ``attnbook`` alone: not the grader (``attnbook_course``, its own distribution in
    ``autograder/``: its judge, sandbox and worker too), no file of ``autograder/``, no hidden case's module, by
    name or by content."""
    hidden = {path.read_bytes() for path in INSTRUCTOR.glob("*.py")}
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        copies = [name for name in names if archive.read(name) in hidden]
    assert "attnbook/__init__.py" in names and "attnbook/grading/engine.py" in names
    assert [n for n in names if not n.startswith(("attnbook/", "attnbook-0.1.0.dist-info/"))] == []
    assert [n for n in names if re.search(r"attnbook_course|autograder|hidden/|conftest", n)] == []
    assert [n for n in names if re.search(r"/(judge|_worker|_wire|sandbox|_remote|pool)\.py$", n)] == []
    assert copies == []


def test_the_hidden_parameters_are_read():
    assert CHAPTERS == sorted(p.stem for p in INSTRUCTOR.glob("*.py")), "a file of hidden cases per chapter"
    params = hidden_parameters()
    # From three chapters: WordPiece's words, a seed, a case's sizes, a maker's seed and sizes.
    assert {"playings", 101, (4, 6, 8), Run((201, 3, 6, 16, 16))} <= params
    assert "playing" not in params  # a visible word: generic
    assert len(params) > 300


def test_the_wheel_and_the_notebooks_are_read(shipped):
    carriers, statement = shipped
    assert {"attnbook/grading/bert/wordpiece.py", "attnbook/grading/engine.py"} <= set(carriers)
    assert "attnbook/tokenizers/wordpiece.py" in statement
    assert sum(name.startswith("chapters/") for name in carriers) >= 40  # a test cell per part


def test_no_hidden_value_in_the_grading_package_or_a_test_cell(shipped):
    carriers, statement = shipped
    values = [v for v in hidden_parameters() if not isinstance(v, Run)]
    leaks = sorted((repr(v), name) for v in values for name, text in carriers.items() if found(v, text)
                   if not any(found(v, other) for other in statement.values()))
    assert not leaks, f"{len(leaks)} hidden values found, for example {leaks[:10]}"


def test_no_hidden_argument_run_anywhere(shipped):
    carriers, statement = shipped
    runs = [v for v in hidden_parameters() if isinstance(v, Run)]
    assert len(runs) > 100
    leaks = sorted((repr(v), name) for v in runs for name, text in (carriers | statement).items() if found(v, text))
    assert not leaks, f"{len(leaks)} hidden argument runs found, for example {leaks[:10]}"


STUDENT = """
from attnbook.grading.bert import check_wordpiece_encode

def encode_word(word, vocab, unk_token="[UNK]"):
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(piece)
                start = end
                break
        else:
            return [unk_token]
    return pieces

check_wordpiece_encode(encode_word)
print(check_wordpiece_encode(encode_word, points=2), check_wordpiece_encode(encode_word, points=2))
"""


def test_the_checks_work_in_a_students_kernel_without_the_hidden_cases(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as archive:  # a pure-Python wheel, installed
        archive.extractall(tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if k != "ATTNBOOK_HIDDEN_CASES"} | {"PYTHONPATH": str(tmp_path / "site")}
    run = subprocess.run([sys.executable, "-c", STUDENT], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "All 2 visible checks passed.",
        "Graded on the visible cases only: the hidden cases are the instructor's, not here.",  # once
        "All 2 checks passed.",
        "All 2 checks passed.",
        "2.0 2.0",
    ]
