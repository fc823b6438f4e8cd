"""Similar answers in a class: each part's answers compared with one another and with the package's reference.

    python -m attnbook_course.similarity [--state DIR] [--threshold T]   # prints the flagged pairs and the time

A *part* here is a solution cell of the source notebook (``sdpa_solution``):
a student's answer to it is that cell in their submission plus every code
cell they added after it, up to the next solution cell. The reference of a
part is the source (:func:`inspect.getsource`) of the attnbook names its test
cells forbid (``attnbook.grading.engine.Part.forbidden``), those the answer
is asked to define when it defines any, else all of them.

The comparison is copydetect's (MOSS's winnowing): the code is tokenised
and every name becomes ``V``/``F``/``O`` and every string ``S``; spaces,
line breaks and comments go; each run of ``NOISE`` characters of what is
left is hashed. The released stub's hashes are removed from every answer
(the signature and docstring every student starts from). Two answers are
*similar* when at least ``threshold`` of the hashed code of one of them
(the student's, against the reference) occurs in the other and the code in
common is at least ``MIN_OVERLAP`` characters long: renaming, reformatting
and reordering independent lines leave most runs intact. Every hash is kept
(a window of 1), so the result does not depend on Python's string hashing
seed: the same class gives the same report.

>>> a = "def f(x):\\n    total = 0\\n    for item in x:\\n        total = total + item * item\\n    return total\\n"
>>> b = "def g(values):\\n    acc = 0\\n    for v in values:  # squares\\n        acc = acc + v * v\\n    return acc\\n"
>>> round(compare(fingerprint(a), fingerprint(b))[0], 2)
1.0
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import io
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import copydetect
import numpy as np
from copydetect.utils import highlight_overlap

from . import intake, nbgrader_run, submission

if TYPE_CHECKING:
    from nbformat import NotebookNode

NOISE = 20  # characters of filtered code per hashed run: of 15-35, the widest gap on the catalogue (tests)
THRESHOLD = 0.5  # the share of an answer's hashed code found in the other: see tests/test_similarity.py
MIN_OVERLAP = 80  # characters of filtered code in common, at least: a two-line answer proves nothing
REFERENCE = "reference"  # the name the package's reference goes by in a pair


@dataclass(frozen=True)
class Match:
    """Two similar answers to ``part``: ``left`` is a student, ``right`` another or :data:`REFERENCE`.

    ``similarity`` is the larger of the two shares of code in common (the student's share against the
    reference); ``left_html`` and ``right_html`` are the two answers, escaped, with the code in common
    marked.
    """

    part: str
    left: str
    right: str
    similarity: float
    left_html: str
    right_html: str


def parts(assignment: str) -> dict[str, tuple[str, ...]]:
    """Solution cell grade_id -> the grade_ids of the test cells after it, up to the next solution cell.

    >>> parts("02-transformer")["sdpa_solution"]
    ('sdpa_matches_reference', 'sdpa_respects_masks')
    """
    out: dict[str, tuple[str, ...]] = {}
    current = None
    for cell in submission.source(assignment).cells:
        meta = submission.nbgrader_meta(cell)
        if meta.get("solution") and cell.cell_type == "code":
            current = meta["grade_id"]
            out[current] = ()
        elif meta.get("grade") and current is not None:
            out[current] += (meta["grade_id"],)
    return out


def answers(nb: NotebookNode, assignment: str) -> dict[str, str]:
    """Part -> a submission's answer: its solution cell and the code cells it added after it, joined.

    A part whose answer is the released stub, unchanged and alone, is left out (not attempted).
    """
    solutions, stubs = parts(assignment), _stubs(assignment)
    found: dict[str, list[str]] = {}
    current = None
    for cell in nb.cells:
        gid = submission.grade_id(cell)
        if gid in solutions:
            current = gid
            found[gid] = [cell.source]
        elif gid is None and current is not None and cell.cell_type == "code":
            found[current].append(cell.source)
    return {gid: "\n\n".join(cells) for gid, cells in found.items() if cells != [stubs.get(gid)]}


def _stubs(assignment: str) -> dict[str, str]:
    return {gid: c.source for c in submission.released(assignment).cells if (gid := submission.grade_id(c))}


def reference(assignment: str, part: str) -> str:
    """The source of the attnbook references that the test cells of ``part`` forbid (see the module's
    docstring for which ones); ``""`` when they forbid none."""
    from . import judge

    tests = submission.test_cells(submission.source(assignment))
    paths = sorted({judge.defining_path(name) for gid in parts(assignment)[part]
                    for call in judge.parse_test_cell(tests[gid].source)
                    for name in call.check.forbidden if name.startswith("attnbook.")})
    defined = _defined(next(c.source for c in submission.source(assignment).cells if submission.grade_id(c) == part))
    asked = [p for p in paths if p.rpartition(".")[2] in defined]
    objects = [getattr(importlib.import_module(p.rpartition(".")[0]), p.rpartition(".")[2]) for p in asked or paths]
    return "\n\n".join(inspect.getsource(obj) for obj in objects)


def _defined(source: str) -> set[str]:
    """The functions and classes ``source`` defines at its top level.

    >>> sorted(_defined("def f():\\n    pass\\nclass C:\\n    pass\\nx = 1\\n"))
    ['C', 'f']
    """
    import ast

    return {n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def fingerprint(code: str, boilerplate: np.ndarray | None = None) -> copydetect.CodeFingerprint:
    """copydetect's fingerprint of Python ``code``, every hash kept, less those of ``boilerplate``."""
    return copydetect.CodeFingerprint("answer.py", NOISE, 1, boilerplate, language="python", fp=io.StringIO(code))


def compare(a: copydetect.CodeFingerprint, b: copydetect.CodeFingerprint) -> tuple[float, float, int, tuple]:
    """(share of ``a`` found in ``b``, share of ``b`` found in ``a``, characters in common, copied slices)."""
    overlap, (share_a, share_b), slices = copydetect.compare_files(a, b)
    return float(share_a), float(share_b), int(overlap), slices


def _most(a: copydetect.CodeFingerprint, common: set) -> float:
    """An upper bound of the share of ``a`` that another fingerprint sharing the hashes ``common`` finds:
    each position of ``a`` whose hash is common starts a run of ``NOISE`` characters, and copydetect's
    copied slices are unions of those runs."""
    if not common or not a.token_coverage:
        return 0.0
    return NOISE * sum(len(a.hash_idx[h]) for h in common) / a.token_coverage


def _marked(code: str, slices: np.ndarray, truncate: int = -1) -> str:
    """``code`` escaped for HTML, the copied ``slices`` in ``<mark>`` (with ``truncate``: only the lines
    around them)."""
    return highlight_overlap(code, slices, "<mark>", "</mark>", truncate=truncate, escape_html=True)[0]


def similar(part: str, by_student: dict[str, str], stub: str, ref: str, threshold: float = THRESHOLD) -> list[Match]:
    """The pairs of ``by_student`` (student -> answer) and each answer with ``ref`` that are similar,
    most similar first (students in name order within a pair)."""
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    boilerplate = np.array(sorted(fingerprint(stub).hashes)) if stub else None
    prints = {s: fingerprint(code, boilerplate) for s, code in sorted(by_student.items())}
    ref_print = fingerprint(ref, boilerplate) if ref else None
    names = list(prints)
    found = []
    for i, left in enumerate(names):
        others = [(right, prints[right]) for right in names[i + 1:]]
        for right, other in others + ([(REFERENCE, ref_print)] if ref_print else []):
            common = prints[left].hashes & other.hashes
            bounds = [_most(prints[left], common)] + ([] if right == REFERENCE else [_most(other, common)])
            if max(bounds) < threshold:  # cannot reach it: skip copydetect's slower exact comparison
                continue
            share_l, share_r, overlap, (sl, sr) = compare(prints[left], other)
            score = share_l if right == REFERENCE else max(share_l, share_r)
            if score >= threshold and overlap >= MIN_OVERLAP:
                found.append(Match(part, left, right, score, _marked(by_student[left], sl),
                                   _marked(ref if right == REFERENCE else by_student[right], sr,
                                           truncate=3 if right == REFERENCE else -1)))
    return sorted(found, key=lambda m: (-m.similarity, m.left, m.right))


def class_matches(state: Path, assignment: str, threshold: float = THRESHOLD) -> list[Match]:
    """Every similar pair among the notebooks of ``assignment`` in ``state/submitted``, part by part
    (parts in notebook order); the notebook compared is the one grading reads (a misnamed copy,
    ``exercises (1).ipynb``, included), and one that cannot be read is left out."""
    by_part: dict[str, dict[str, str]] = {p: {} for p in parts(assignment)}
    for folder in sorted((state / "submitted").glob(f"*/{assignment}")):
        nb, _ = intake.read_submission(folder, submission.read_submission)
        if nb is not None:
            try:
                for part, code in answers(nb, assignment).items():
                    by_part[part][folder.parent.name] = code
            except (AttributeError, KeyError, TypeError):  # cells a student broke: compare the others
                continue
    stubs = _stubs(assignment)
    return [m for part, found in by_part.items() if found
            for m in similar(part, found, stubs.get(part, ""), reference(assignment, part), threshold)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, default=nbgrader_run.ROOT, help="graded state folder (its submitted/)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="share of code in common to flag")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    submitted = sorted({p.name for p in (args.state / "submitted").glob("*/*") if p.name in nbgrader_run.assignments()})
    for assignment in submitted:
        for m in class_matches(args.state, assignment, args.threshold):
            print(f"{assignment} {m.part}: {m.left} ~ {m.right} {100 * m.similarity:.0f}%")
    print(f"compared {len(submitted)} assignments in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
