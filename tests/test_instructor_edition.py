"""tools/instructor_edition.py: the instructor edition adds every solution notebook, and only those."""

import doctest
import importlib.util
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location("instructor_edition", ROOT / "tools" / "instructor_edition.py")
edition = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(edition)


def test_its_examples():
    assert doctest.testmod(edition).failed == 0


def test_every_solution_follows_its_exercises():
    toc = edition.instructor_toc(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    files = [s["file"] for part in toc["parts"] for ch in part["chapters"] for s in ch.get("sections", [])]
    solutions = sorted(p.parent.name for p in (ROOT / "solutions").glob("*/exercises.ipynb")
                       if f"chapters/{p.parent.name}/exercises" in files)
    assert solutions, "no chapter with exercises in the table of contents"
    for name in solutions:
        assert files[files.index(f"chapters/{name}/exercises") + 1] == f"chapters/{name}/solutions"


def test_the_student_book_is_left_as_it_is():
    config = edition.instructor_config(yaml.safe_load((ROOT / "_config.yml").read_text()))
    student = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert student["execute"]["exclude_patterns"] == ["*exercises.ipynb"]
    assert config["execute"]["exclude_patterns"] == ["*chapters/*/exercises.ipynb"]
    assert student["only_build_toc_files"]  # the copied solutions stay out of the student book


def test_the_copies_are_ignored_by_git():
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "chapters/*/solutions.ipynb" in ignored
