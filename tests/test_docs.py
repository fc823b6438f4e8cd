"""The maintainers' pages (README.md, CONTRIBUTING.md, docs/*.md) cite only what exists.

Every citation in code (an inline code span or a line of a fenced block) is
checked: a dotted Python name (``attnbook.grading.engine.Part``: importable,
attribute by attribute), ``python -m MODULE`` (a module), a repository path
(``src/...``, ``autograder/...``, ``_toc.yml``: a file or folder), ``make TARGET``
(a rule of the Makefile) and every relative Markdown link. In a fenced block each
name of ``from attnbook.X import a, b`` is checked too, and ``from ..X import a``
is read as the template of a check module in ``src/attnbook/grading/<pkg>/`` means
it: ``attnbook.grading.X.a``. A citation with a placeholder in it (``<pkg>``,
``$A``, ``*``, ``07-slug``, ``NN-slug``, ``NAME``) is a pattern and is skipped.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
PLACEHOLDERS = ("<", "$", "*", "07-slug", "NN-slug", "NAME", "...", "…")
PACKAGES = ("attnbook", "attnbook_course", "nbgrader", "torch")  # dotted names under these are resolved

_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_NAME = re.compile(r"\b((?:" + "|".join(PACKAGES) + r")(?:\.[\w<>]+)+)")  # with placeholders, to skip them
_RUN_MODULE = re.compile(r"-m\s+([A-Za-z_][\w.]*)")
_MAKE = re.compile(r"(?:^|[\s;&|(])make\s+((?:[A-Z]+=\S*\s+)*)([a-z][\w-]*)")
_RELATIVE = re.compile(r"^from \.\.(\w+) import ([\w, ]+)$", re.M)
_IMPORT = re.compile(r"^from (attnbook[\w.]*) import ([\w, ]+)$", re.M)
_TOP = ("src/", "autograder/", "tests/", "tools/", "solutions/", "chapters/", "benchmarks/", "docs/", "_static/",
        ".ci/", ".github/", ".binder/")
_TOP_FILE = re.compile(r"[\w-]+\.(md|yml|toml|txt|bib)|Makefile")  # a file at the top, cited without a folder
_NOT_TOP = re.compile(r"index\.md|N?\d*-\w+\.md")  # a chapter's own pages, cited by their name alone


def _code(text: str) -> list[str]:
    """The code of a page: each line of its fenced blocks and each inline code span."""
    lines = [line for block in _FENCE.findall(text) for line in block.splitlines()]
    return lines + [m.group(2).strip() for m in _SPAN.finditer(_FENCE.sub("", text))]


def _is_path(token: str) -> bool:
    if not re.fullmatch(r"[\w./-]+", token):
        return False
    return token.startswith(_TOP) or (_TOP_FILE.fullmatch(token) is not None and not _NOT_TOP.fullmatch(token))


def citations(page: Path) -> list[tuple[str, str]]:
    """(kind, citation) of ``page``: kinds "name", "module", "path", "make" and "link" (a path from the root)."""
    text = page.read_text()
    found = []
    for code in _code(text):
        found += [("name", n) for n in _NAME.findall(code)]
        found += [("module", m) for m in _RUN_MODULE.findall(code) if m.split(".")[0] in PACKAGES]
        found += [("make", m[1]) for m in _MAKE.findall(code)]
        tokens = (t.rstrip(".,:;)") for t in re.split(r"[\s\"'`=(]+", code))
        found += [("path", t) for t in tokens if _is_path(t)]
    for block in _FENCE.findall(text):
        imports = [(f"attnbook.grading.{module}", names) for module, names in _RELATIVE.findall(block)]
        for module, names in imports + _IMPORT.findall(block):
            found += [("name", f"{module}.{n.strip()}") for n in names.split(",") if n.strip()]
    folder = page.parent.relative_to(ROOT) if page.is_relative_to(ROOT) else page.parent
    found += [("link", os.path.normpath(folder / url.split("#")[0]))
              for url in _LINK.findall(_FENCE.sub("", text)) if "://" not in url and not url.startswith("#")]
    return sorted({(kind, c) for kind, c in found if not any(p in c for p in PLACEHOLDERS)})


def resolve(name: str) -> object:
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)  # AttributeError: the name does not exist
        return obj
    raise ImportError(name)


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*)\s*:", (ROOT / "Makefile").read_text(), re.M))


def exists(kind: str, citation: str) -> bool:
    if kind == "name":
        try:
            resolve(citation)
        except (ImportError, AttributeError):
            return False
        return True
    if kind == "module":
        return importlib.util.find_spec(citation) is not None
    if kind == "make":
        return citation in make_targets()
    return (ROOT / citation).exists()  # a path or a link


CITED = [(page, kind, c) for page in PAGES for kind, c in citations(page)]


@pytest.mark.parametrize("page, kind, citation", CITED,
                         ids=[f"{p.relative_to(ROOT)}:{k}:{c}" for p, k, c in CITED])
def test_every_citation_exists(page, kind, citation):
    assert exists(kind, citation), f"{page.relative_to(ROOT)} cites {kind} {citation!r}, which does not exist"


def test_the_parser_finds_citations_of_every_kind():
    """A parser that silently finds nothing would pass every page: each kind is found, in number."""
    kinds = [kind for _, kind, _ in CITED]
    for kind, least in {"name": 30, "module": 2, "path": 20, "make": 8, "link": 8}.items():
        assert kinds.count(kind) >= least, (kind, kinds.count(kind))


def test_a_made_up_citation_is_caught(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("Use `attnbook.attention.no_such_function`, run `make no-such-target`, read "
                    "`autograder/no_such_file.py` and `python -m attnbook.no_such_module`.\n")
    found = citations(page)
    assert {kind for kind, _ in found} == {"name", "make", "path", "module"}, found
    assert not any(exists(kind, c) for kind, c in found), found


def test_the_maintainers_pages_are_not_in_the_book():
    """docs/ and CONTRIBUTING.md are for maintainers: the book builds only what its table of contents lists."""
    assert yaml.safe_load((ROOT / "_config.yml").read_text())["only_build_toc_files"]
    toc = (ROOT / "_toc.yml").read_text()
    assert "docs/" not in toc and "CONTRIBUTING" not in toc


def test_the_readme_points_to_the_docs_in_the_repository():
    readme = (ROOT / "README.md").read_text()
    assert "../shared" not in readme
    assert "docs/design.md" in readme and "CONTRIBUTING.md" in readme


def test_the_intro_counts_each_chapters_sections_and_graded_parts():
    """intro.md's table of chapters says "N sections, M graded parts": N is the chapter's pages in _toc.yml
    (its exercises left out), M the ``Part k`` headings of its solutions notebook."""
    import nbformat

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    sections = {entry["file"].split("/")[1]: [s["file"] for s in entry.get("sections", [])]
                for part in toc["parts"] for entry in part["chapters"] if entry["file"].startswith("chapters/")}
    rows = re.findall(r"\]\(chapters/([^/]+)/index\.md\).*published: (\d+) sections, (\d+) graded parts",
                      (ROOT / "intro.md").read_text())
    assert sorted(chapter for chapter, _, _ in rows) == sorted(sections)
    for chapter, n_sections, n_parts in rows:
        assert int(n_sections) == sum(not f.endswith("/exercises") for f in sections[chapter]), chapter
        notebook = nbformat.read(ROOT / "solutions" / chapter / "exercises.ipynb", as_version=4)
        parts = {m for c in notebook.cells if c.cell_type == "markdown"
                 for m in re.findall(r"^#+ Part (\d+)", c.source, re.M)}
        assert int(n_parts) == len(parts), chapter


NUMBERS = {word: n for n, word in enumerate("zero one two three four five six seven eight nine ten eleven twelve"
                                           .split())}
REASONING = ("_predict", "_reason", "_ablation")  # design.md's *Reasoning parts*: named by their grade_id's ending


def _chapter_pages() -> dict[str, list[str]]:
    """Each chapter's folder -> the names of its pages in _toc.yml, in order (its exercises included)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return {entry["file"].split("/")[1]: [s["file"].split("/")[-1] for s in entry.get("sections", [])]
            for part in toc["parts"] for entry in part["chapters"] if entry["file"].startswith("chapters/")}


@pytest.mark.parametrize("chapter", sorted(_chapter_pages()))
def test_each_chapter_index_lists_and_counts_its_sections(chapter):
    """A chapter's index.md: its reading path links the pages of _toc.yml in that order, the exercises last,
    and "The N narrative sections" counts them, the exercises left out."""
    pages = _chapter_pages()[chapter]
    text = (ROOT / "chapters" / chapter / "index.md").read_text()
    path = [link.rpartition(".")[0] for link in re.findall(r"^\d+\. \[[^\]]+\]\(([^)#\s]+)\)", text, re.M)]
    assert path == pages and pages[-1] == "exercises", (path, pages)
    counts = re.findall(r"\b([a-z]+)\s+narrative\s+sections\b", text)
    assert [NUMBERS.get(word) for word in counts] == [len(pages) - 1], counts


@pytest.mark.parametrize("chapter", sorted(_chapter_pages()))
def test_each_chapter_index_counts_its_reasoning_parts(chapter):
    """Where a chapter's index.md says "then N parts that ask you to reason", N is the number of test cells of
    its solutions notebook whose grade_id ends in ``_predict``, ``_reason`` or ``_ablation``."""
    import nbformat

    text = (ROOT / "chapters" / chapter / "index.md").read_text()
    said = re.findall(r"\bthen\s+([a-z]+)\s+parts\s+that\s+ask\s+you\s+to\s+reason\b", text)
    notebook = nbformat.read(ROOT / "solutions" / chapter / "exercises.ipynb", as_version=4)
    graded = [c.metadata["nbgrader"]["grade_id"] for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")]
    reasoning = [gid for gid in graded if gid.endswith(REASONING)]
    assert [NUMBERS.get(word) for word in said] in ([], [len(reasoning)]), reasoning
