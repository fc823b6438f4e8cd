"""The seam between the two distributions: the grader (``attnbook_course``) uses of the students' package only
public names, and of the checks' machinery only :mod:`attnbook.grading.seam`; the files copied beside the
sandboxed worker stand alone."""

import ast
from pathlib import Path

import pytest

from attnbook.grading import seam

ROOT = Path(__file__).resolve().parent.parent
GRADER = sorted((ROOT / "autograder" / "attnbook_course").rglob("*.py"))


def _private_uses(tree: ast.AST) -> list[str]:
    """Every use of an underscore name of ``attnbook`` in ``tree``: imports, and dotted names in the code."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "attnbook":
            names = [a.name for a in node.names]
            if any(part.startswith("_") for part in node.module.split(".")) or any(n.startswith("_") for n in names):
                found.append(f"line {node.lineno}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names
                      if a.name.split(".")[0] == "attnbook" and any(p.startswith("_") for p in a.name.split("."))]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            chain, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id == "attnbook":
                found.append(f"line {node.lineno}: attnbook.{'.'.join(reversed(chain))}")
    return found


@pytest.mark.parametrize("path", GRADER, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_grader_uses_no_underscore_name_of_attnbook(path):
    assert _private_uses(ast.parse(path.read_text())) == []


def test_the_check_finds_what_it_forbids():
    source = ("from attnbook.grading import _refuse\nfrom attnbook.grading._core import x\n"
              "import attnbook.grading._cells\nattnbook.grading._compare.close\n"
              "from attnbook.grading.seam import cells")
    assert len(_private_uses(ast.parse(source))) == 4


@pytest.mark.parametrize("path", seam.WORKER_FILES, ids=lambda p: p.name)
def test_the_worker_files_import_nothing_of_their_package(path):
    """They are copied beside the worker, where no ``attnbook`` is (a relative import would fail there)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0 and (node.module or "").split(".")[0] != "attnbook", f"{path.name}:{node.lineno}"
        elif isinstance(node, ast.Import):
            assert all(a.name.split(".")[0] != "attnbook" for a in node.names), f"{path.name}:{node.lineno}"
