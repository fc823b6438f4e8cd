"""docs/add-a-graded-part.md, followed on a throwaway part: the files it names are enough, and needed.

In a copy of the repository the test adds Part 10 to chapter 1 as the page says, with the page's own
code wherever it gives some: the check module is its template, the hidden cases its example entry, the
three cells come from running its script (``A=01-rnn-attention``), and the catalogue's wrong answer is
its example entry, with every ``<placeholder>`` filled from :data:`FILL` (a placeholder the test does not
know fails it: the page's code stays runnable). The part is the one the page's examples are written for,
``masked_mean(values, mask)``: the mean of ``values`` (B, S, d) over the positions where ``mask`` (B, S)
is True, with its reference ``attnbook.attention.masked_mean``. The rest the page says in words: the
reference and its test, the export from ``attnbook.grading.rnn``, a partial and a right answer in the
catalogue, intro.md's count, the index's reading path, and ``attnbook-course release``.

Then, in the copy, run with ``PYTHONPATH=<copy>/src:<copy>/autograder`` so that the copy's ``attnbook``
and ``attnbook_course`` are imported rather than the editable installs:

* every file the steps changed is one that the page's table names (and the page's counts of files
  agree with its table, in a test of its own that needs no copy);
* the checks of the page's step 6 for the new part pass: ``tests/test_exercises.py`` (the solution full,
  the released stub 0, each new catalogue answer graded as it says, the test cells well formed, the
  check exported, its references where the worker can refuse them), the reference's doctest and test,
  ``tests/test_docs.py``'s count of graded parts, and ``attnbook-course release --check``;
* each of three steps, left out alone, makes one of those fail: intro.md's count (the count test), the
  export from the chapter's grading package (the test cell's import, as the in-process grading and the
  judge parse it) and the hidden cases (grading with ``points=``).

Left to their own tests: the mutants and rule mutants (minutes; ``tests/test_mutants.py``), the routes
(minutes; ``tests/test_routes.py``), the sandbox (bubblewrap; ``tests/test_autograder.py``), the wheel's
scan for hidden cases (``pip wheel``; ``tests/test_hidden_cases.py``), and ``tests/test_exercises.py``
on the other chapters' parts and on the catalogue's other answers.

Why a copy of everything: ``tests/test_exercises.py`` collects every chapter (their notebooks, catalogues
and grading packages) and ``attnbook-course release`` releases them all, so a copy of "what the steps need"
would be most of the repository behind a list to keep up to date; copying is 5 MB and under a second.
The copy holds the files git tracks and those it would track (untracked, not ignored), as they are in
the working tree, less the trained models of ``src/attnbook/pretrained/files/`` (7 of the 12 MB, read by
no step here): the course as its author has it now. It is a course of its own: every path the steps use
is computed from a module's ``__file__`` (``ROOT`` in ``attnbook_course`` and ``tests/``, the root
``conftest.py``'s hidden cases, nbgrader's configuration), nothing from the checkout's. Two settings would
reach outside it: ``ATTNBOOK_GRADEBOOK`` (release would write to the class's gradebook) is removed from
the commands' environment, and ``ATTNBOOK_HIDDEN_CASES`` (grading would read another folder's cases)
names the copy's ``autograder/hidden``. ``make release`` is run as its command, ``attnbook-course
release`` (``python -m attnbook_course``): the target first makes a ``.venv``. Everything is written under
the test's own temporary folder (removed at the end; the commands' ``TMPDIR`` is in it, and they write no
bytecode), and each command runs in a session of its own, killed whole once it ends. About 80 s of one
core, 30 of them nbgrader's two releases.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "add-a-graded-part.md"
A, PKG, NAME, MODULE, NUMBER = "01-rnn-attention", "rnn", "masked_mean", "attention", 10
GID = f"{NAME}_matches_reference"
INTRO_TEST = "tests/test_docs.py::test_the_intro_counts_each_chapters_sections_and_graded_parts"
LEFT_OUT = ("src/attnbook/pretrained/files/",)  # trained models: large, and no step reads them
LEAKS = ("ATTNBOOK_GRADEBOOK",)  # a setting that points outside the copy (the hidden cases: the copy's own)

# The page's placeholders (by their text, or the text before their first colon) and what this part fills in.
FILL = {
    "module": MODULE,
    "pkg": PKG,
    "name": NAME,
    "part": NAME,  # the check's module, named after what it grades
    "group": "padding",
    "what the student writes": "masked_mean(values, mask)",
    "the formula": "the mean of the values at the real tokens",
    "a known mistake, in words": "the padding was averaged too",
    "the output that mistake gives": "values.mean(1)",
    "what differs, in words": "the mean over the real tokens differs",
    "title": "A mean over the real tokens",
    "the task": "Write `masked_mean(values, mask)`: values (B, S, d), mask (B, S), True at the real tokens. "
                "Return the mean of the values at the real tokens, (B, d), without "
                "`attnbook.attention.masked_mean`.",
    "the solution": "return (values * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)",
    "what it checks, one line": "masked_mean averages the values at the real tokens only",
}

REFERENCE = '''

def masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` (B, S, d) over the positions where ``mask`` (B, S) is True: (B, d).

    >>> masked_mean(torch.tensor([[[1.0], [3.0], [100.0]]]), torch.tensor([[True, True, False]]))
    tensor([[2.]])
    """
    float_sequence("values", values)
    if mask.dtype != torch.bool or mask.shape != values.shape[:-1]:
        raise ValueError(f"mask must be a bool tensor of shape {tuple(values.shape[:-1])}, got {mask.dtype} "
                         f"{tuple(mask.shape)}")
    weights = mask.to(values.dtype).unsqueeze(-1)
    return (values * weights).sum(-2) / weights.sum(-2)
'''

REFERENCE_TEST = '''

def test_masked_mean_by_hand():
    from attnbook.attention import masked_mean

    values = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    assert torch.equal(masked_mean(values, torch.tensor([[True, True, False]])), torch.tensor([[2.0, 3.0]]))
'''

MORE_ANSWERS = '''
    "masked_mean_flattened_with_view": dict(  # view() needs contiguous values: only a hidden case has others
        assignment="01-rnn-attention",
        cells={"masked_mean_solution": "def masked_mean(values, mask):\\n    B, S, d = values.shape\\n"
                                       "    kept = values.view(B * S, d) * mask.reshape(B * S, 1)\\n"
                                       "    return kept.view(B, S, d).sum(1) / mask.sum(1, keepdim=True)\\n"},
        expected={"masked_mean_matches_reference": "partial"},
        message="non-contiguous values",
    ),
    "masked_mean_by_einsum": dict(
        assignment="01-rnn-attention",
        cells={"masked_mean_solution": "def masked_mean(values, mask):\\n    w = mask.to(values.dtype)\\n"
                                       "    return torch.einsum('bsd,bs->bd', values, w) / w.sum(1, keepdim=True)\\n"},
        expected={"masked_mean_matches_reference": "full"},
        message=None,
    ),
'''

# What the in-process grading does with a test cell (tests/exercise_harness.py, the judge): parse it, run
# the solution cell, score the cell on the objects it defined.
GRADE = f'''
import json

from attnbook_course import judge

notebook = json.load(open("solutions/{A}/exercises.ipynb"))  # nbformat's import alone takes seconds
cells = {{c["metadata"].get("nbgrader", {{}}).get("grade_id"): "".join(c["source"]) for c in notebook["cells"]}}
calls = judge.parse_test_cell(cells["{GID}"])
namespace = {{}}
exec("import torch\\n" + cells["{NAME}_solution"], namespace)
print("graded:", judge.score_test_cell(calls, namespace, 2))
'''


# ---------------------------------------------------------------- the page


def blocks() -> list[str]:
    """The page's fenced code blocks."""
    return re.findall(r"^```[^\n]*\n(.*?)^```", DOC.read_text(), re.M | re.S)


def block(marker: str) -> str:
    """The one code block of the page that contains ``marker``."""
    found = [b for b in blocks() if marker in b]
    assert len(found) == 1, f"{DOC.name} should have one code block with {marker!r}, has {len(found)}"
    return found[0]


def fill(text: str, strict: bool = True) -> str:
    """The page's code with this part's names in its placeholders; an unknown one fails the test (``strict``)
    or stays."""
    def one(match: re.Match) -> str:
        inner = match.group(1)
        for key, value in FILL.items():
            if inner == key or inner.startswith(key + ":"):
                return value
        assert not strict, f"{DOC.name} has a placeholder that this test does not fill: <{inner}>"
        return match.group(0)

    text = re.sub(r"<([a-z][^<>]*)>", one, text)  # a placeholder may span two lines of a string literal
    return text.replace("Part N", f"Part {NUMBER}").replace("partN_", f"part{NUMBER}_").replace("$A", A)


def table() -> list[tuple[str, str]]:
    """(file, when) of each row of the page's table of the files a part touches."""
    rows = [line.split("|")[1:-1] for line in DOC.read_text().splitlines() if re.match(r"\| \d+ \| `", line)]
    return [(re.fullmatch(r"\s*`([^`]+)`\s*", row[1]).group(1), row[3].strip()) for row in rows]


def test_the_page_counts_the_files_of_its_table():
    """"N files at most: the K marked *always*, J more marked *new reference*": the table's rows, counted."""
    rows = table()
    said = re.search(r"\*\*(\d+) files at most\*\*: the (\d+) marked \*always\*, (\d+) more marked "
                     r"\*new reference\*", " ".join(DOC.read_text().split()))
    assert said, f"{DOC.name} should say how many files a part touches"
    kinds = [when for _, when in rows]
    assert [int(n) for n in said.groups()] == [len(rows), kinds.count("always"), kinds.count("new reference")]
    assert [int(n) for n in re.findall(r"^\| (\d+) \| `", DOC.read_text(), re.M)] == list(range(1, len(rows) + 1))


# ---------------------------------------------------------------- the copy and the commands run in it


def run(args: list[str], cwd: Path, stdin: str | None = None, timeout: float = 300, **more: str) -> tuple[int, str]:
    """Run ``args`` in the copy ``cwd`` with its own ``attnbook``, grader and hidden cases; (exit status, stdout
    and stderr together).

    In a session of its own, killed whole once the command ends (or at ``timeout``): nothing is left running.
    """
    env = {k: v for k, v in os.environ.items() if k not in LEAKS and not k.startswith("PYTEST_")}
    temporary = cwd.parent / "tmp"  # release --check's state, and any other temporary file, stays in ours
    temporary.mkdir(exist_ok=True)
    env.update(PYTHONPATH=os.pathsep.join([str(cwd / "src"), str(cwd / "autograder")]),
               ATTNBOOK_HIDDEN_CASES=str(cwd / "autograder" / "hidden"), PYTHONDONTWRITEBYTECODE="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TMPDIR=str(temporary), **more)
    proc = subprocess.Popen(args, cwd=cwd, env=env, text=True, start_new_session=True,
                            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(stdin, timeout=timeout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # its children too, should any outlive it
        proc.communicate()
    return proc.returncode, out


def pytest_in(copy: Path, *nodes: str) -> tuple[int, str]:
    # (hypothesis's plugin is a second of imports that none of these tests needs)
    return run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", *nodes],
               copy)


def source_files() -> list[str]:
    """The repository's files as git knows them, tracked or not ignored, that are in the working tree."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, text=True, timeout=60)
    if listed.returncode != 0:
        pytest.skip("not a git checkout: the test copies the files git lists")
    names = set(listed.stdout.split("\0")) - {""}
    return sorted(p for p in names if not p.startswith(LEFT_OUT) and (ROOT / p).is_file())


def snapshot(copy: Path) -> dict[str, str]:
    return {str(p.relative_to(copy)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in copy.rglob("*") if p.is_file()}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, f"{path}: {old!r} is not there once"
    path.write_text(text.replace(old, new))


def add_the_part(copy: Path) -> None:
    """Steps 1 to 4 and 8 of the page (the commit left out) for ``masked_mean``, in ``copy``."""
    # 1. The reference, in its module's __all__, and its test.
    reference = copy / "src" / "attnbook" / f"{MODULE}.py"
    edit(reference, '    "MultiHeadAttention",\n]', f'    "MultiHeadAttention",\n    "{NAME}",\n]')
    reference.write_text(reference.read_text() + REFERENCE)
    test = copy / "tests" / f"test_{MODULE}.py"
    test.write_text(test.read_text() + REFERENCE_TEST)

    # 2. The check, from the page's template; its hidden cases, from the page's entry; the export.
    grading = copy / "src" / "attnbook" / "grading" / PKG
    (grading / f"{NAME}.py").write_text(fill(block("check_<name> = Part(")))
    hidden = copy / "autograder" / "hidden" / f"{PKG}.py"
    edit(hidden, "\nHIDDEN = {\n", f"from attnbook.grading.{PKG} import {NAME}\n\nHIDDEN = {{\n"
         + fill(block('    "check_<name>": (\n        Case("<group>"')))
    edit(grading / "__init__.py", "\n__all__ = [\n",
         f"from .{NAME} import check_{NAME}\n\n__all__ = [\n    \"check_{NAME}\",\n")
    edit(grading / "__init__.py", "without its baseline); what", f"without its baseline), :mod:`.{NAME}`; what")

    # 3. The cells, by the page's script run as it says; intro.md's count; the release.
    script = block("nbformat.write(nb, path)")
    script = script[script.index("<<'EOF'\n") + len("<<'EOF'\n"):script.rindex("\nEOF")]
    status, out = run([sys.executable, "-"], copy, stdin=fill(script), timeout=120, A=A)  # export A=...
    assert status == 0, out
    intro = copy / "intro.md"
    row = re.search(rf"\(chapters/{A}/index\.md\).*published: \d+ sections, (\d+) graded parts", intro.read_text())
    parts = f"{int(row.group(1)) + 1} graded parts"
    edit(intro, row.group(0), row.group(0).replace(f"{row.group(1)} graded parts", parts))
    # (the release, make release's command, runs after the catalogue: it reads only solutions/)

    # 4. The catalogue: the page's wrong answer, a partial one, a right one written another way.
    answers = copy / "autograder" / "attnbook_course" / "fixtures" / "answers" / f"{A}.py"
    entry = fill(block('"mean_over_padding": dict('))
    answers.write_text(answers.read_text() + f"\nANSWERS.update({{\n{entry}{MORE_ANSWERS}}})\n")

    # 8. The index names the part.
    edit(copy / "chapters" / A / "index.md", " They are graded on cases you cannot see.",
         " Last, the mean of the values at the real tokens. They are graded on cases you cannot see.")

    status, out = run([sys.executable, "-m", "attnbook_course", "release"], copy)
    assert status == 0 and f"released chapters/{A}/exercises.ipynb" in out, out


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """(the copy with the part added, the files it changed, the text of those files before)."""
    copy = tmp_path_factory.mktemp("add-a-part") / "repo"
    for name in source_files():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    before = snapshot(copy)
    pristine = {name: (copy / name).read_bytes() for name in before}
    try:
        add_the_part(copy)
        after = snapshot(copy)
        touched = sorted(name for name, digest in after.items() if before.get(name) != digest)
        ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "--no-index", "--stdin", "-z"],
                                 input="\0".join(touched), capture_output=True, text=True, timeout=60).stdout
        changed = sorted(set(touched) - set(ignored.split("\0")))  # less the state release writes (_release/, ...)
        yield copy, changed, pristine
    finally:
        shutil.rmtree(copy.parent, ignore_errors=True)


@contextlib.contextmanager
def left_out(copy: Path, pristine: dict[str, bytes], name: str):
    """Inside, the file ``name`` of the copy as it was before the steps: that step skipped."""
    done = (copy / name).read_bytes()
    (copy / name).write_bytes(pristine[name])
    try:
        yield
    finally:
        (copy / name).write_bytes(done)


# ---------------------------------------------------------------- the tests


@pytest.mark.slow
def test_the_page_names_every_file_the_steps_change(course):
    copy, changed, _ = course
    named = {fill(path, strict=False) for path, _ in table()}
    assert f"src/attnbook/grading/{PKG}/{NAME}.py" in changed and f"chapters/{A}/exercises.ipynb" in changed
    assert set(changed) <= named, f"changed, and not in {DOC.name}'s table: {sorted(set(changed) - named)}"


@pytest.mark.slow
def test_the_part_is_graded_and_released(course):
    copy, _, _ = course
    nodes = [f"tests/test_exercises.py::{test}[{A}]" for test in (
        "test_every_test_cell_calls_an_exported_check_of_its_chapter",
        "test_hidden_tests_are_not_in_the_released_notebook", "test_the_catalogue_tries_every_part",
        "test_forbidden_names_are_where_the_worker_can_stub_them",
        "test_part_k_is_the_kth_test_cell")]
    nodes.append(f"tests/test_exercises.py::test_solution_scores_full_and_released_stub_scores_zero[{A}-{GID}]")
    nodes += [f"tests/test_exercises.py::test_catalogued_answer_is_graded_as_expected[{A}-{name}]"
              for name in ("mean_over_padding", "masked_mean_flattened_with_view", "masked_mean_by_einsum")]
    nodes += [f"src/attnbook/{MODULE}.py::attnbook.{MODULE}.{NAME}", f"tests/test_{MODULE}.py::test_{NAME}_by_hand",
              INTRO_TEST]
    status, out = pytest_in(copy, *nodes)
    assert status == 0 and f"{len(nodes)} passed" in out, out
    status, out = run([sys.executable, "-m", "attnbook_course", "release", "--check"], copy)
    assert status == 0 and "all student notebooks match solutions/" in out, out


@pytest.mark.slow
def test_without_the_intro_count_the_count_test_fails(course):
    copy, _, pristine = course
    with left_out(copy, pristine, "intro.md"):
        status, out = pytest_in(copy, "--noconftest", INTRO_TEST)  # the test needs none of conftest's torch
    assert status == 1 and "1 failed" in out and f"AssertionError: {A}" in out, out


@pytest.mark.slow
@pytest.mark.parametrize("step, says", [
    # without the export, the test cell cannot import its check
    (f"src/attnbook/grading/{PKG}/__init__.py", f"has no attribute 'check_{NAME}'"),
    # without the hidden cases, grading with points fails
    (f"autograder/hidden/{PKG}.py", f"holds no hidden cases for check_{NAME}"),
], ids=["the export", "the hidden cases"])
def test_without_the_step_grading_the_part_fails(course, step, says):
    copy, _, pristine = course
    with left_out(copy, pristine, step):
        status, out = run([sys.executable, "-c", GRADE], copy)
    assert status == 1 and says in out and "graded:" not in out, out
