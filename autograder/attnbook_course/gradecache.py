"""Incremental grading: which submissions must be graded again, and the results kept from earlier runs.

A submission's **key** is the sha256 of everything its grade and its feedback
depend on:

* its own files in ``submitted/<student>/<assignment>/`` (the notebook, the
  exchange's ``timestamp.txt``), with their names;
* the assignment's source notebook (``solutions/``) and released notebook
  (``chapters/``);
* the grader: every file of the installed ``attnbook`` package (the judge, the
  checks, the references they compare with), the code and configuration in
  ``autograder/`` (its test fixtures and the class report aside: neither
  changes a grade) and ``tools/book_assets.py`` (the feedback's MathJax);
* the versions of attnbook, Python, torch, nbgrader, nbconvert and nbformat, the
  sandbox's isolation and every ``ATTNBOOK_GRADING_*`` setting (time and memory
  limits change what a slow answer scores).

``attnbook-course grade`` keeps each submission's results with its key in
``STATE/grading-cache/<student>/<assignment>.json`` and grades again only the
submissions whose key changed (or whose last grading failed); the others keep
their stored results, so the gradebook, ``grades.csv``, the results and the
feedback are those a full run would write.

>>> import shutil, tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = (folder / "exercises.ipynb").write_text("{}")
>>> key = submission_key("common", "ada", folder)
>>> store(folder, {"student": "ada", "assignment": "01", "notes": []}, key)
>>> stored(folder, "ada", "01") == (key, {"student": "ada", "assignment": "01", "notes": []})
True
>>> _ = (folder / "exercises.ipynb").write_text("{ }")
>>> submission_key("common", "ada", folder) == key
False
>>> shutil.rmtree(folder)
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
from pathlib import Path

from . import GRADER, ROOT, notes
from .records import SubmissionRecord

CACHE = "grading-cache"
_CONFIG_SUFFIXES = (".py", ".json", ".yml", ".yaml", ".toml")  # autograder/'s code and configuration
# in autograder/: nothing here changes a grade (the service's modules carry it, the hub's configuration serves it)
_NOT_GRADING = ("fixtures", "__pycache__", "report.py", "service", "jupyterhub_config.py")


def _digest_files(digest: hashlib._Hash, base: Path, files: list[Path]) -> None:
    """Feed ``digest`` each file's name (relative to ``base``) and bytes; a symbolic link by its target."""
    for path in sorted(files):
        digest.update(str(path.relative_to(base)).encode() + b"\0")
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        else:
            with open(path, "rb") as fh:  # in pieces: a submission's file may be of any size
                for piece in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(piece)
        digest.update(b"\0")


@functools.cache
def _grader() -> str:
    """The key of the grader and its settings, computed once per run."""
    import nbconvert
    import nbformat
    import nbgrader
    import torch

    import attnbook
    from attnbook import settings

    from . import sandbox

    digest = hashlib.sha256()
    package = Path(attnbook.__file__).resolve().parent
    _digest_files(digest, package, [p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts])
    _digest_files(digest, ROOT, [p for p in GRADER.rglob("*") if p.is_file() and p.suffix in _CONFIG_SUFFIXES
                                 and not set(p.relative_to(GRADER).parts) & set(_NOT_GRADING)])
    _digest_files(digest, ROOT, [ROOT / "tools" / "book_assets.py"])
    key = {
        "versions": [attnbook.__version__, sys.version, torch.__version__, nbgrader.__version__,
                     nbconvert.__version__, nbformat.__version__],
        "isolation": sandbox.isolation(),
        "settings": [(s.name, str(s.read())) for s in settings.GRADING],  # the limits in force
    }
    digest.update(json.dumps(key, sort_keys=True).encode())
    return digest.hexdigest()


def grader_key(assignment: str) -> str:
    """The key of everything but the submission: the grader, its settings and ``assignment``'s notebooks."""
    digest = hashlib.sha256(_grader().encode())
    notebooks = [ROOT / folder / assignment / "exercises.ipynb" for folder in ("solutions", "chapters")]
    _digest_files(digest, ROOT, notebooks)
    return digest.hexdigest()


def submission_key(grader: str, student: str, folder: Path) -> str:
    """The key of one submission: ``grader`` (:func:`grader_key` of its assignment), ``student`` and every
    file in ``folder`` (none when it is missing: a submission without files is graded as missing)."""
    digest = hashlib.sha256(f"{grader}\0{student}\0".encode())
    if folder.is_dir():
        _digest_files(digest, folder, [p for p in folder.rglob("*") if p.is_file() or p.is_symlink()])
    return digest.hexdigest()


def _path(state: Path, student: str, assignment: str) -> Path:
    return state / CACHE / student / f"{assignment}.json"


def stored(state: Path, student: str, assignment: str) -> tuple[str, SubmissionRecord] | None:
    """(key, results) stored for a submission, or None when there are none (or they cannot be read, or are
    of a grader that kept no notes)."""
    try:
        entry = json.loads(_path(state, student, assignment).read_text())
        notes.read(entry["result"]["notes"])
        return entry["key"], entry["result"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(state: Path, result: SubmissionRecord, key: str) -> None:
    """Keep ``result`` (one submission's results, its grading log included) under ``key``, atomically."""
    target = _path(state, result["student"], result["assignment"])
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps({"key": key, "result": result}, sort_keys=True) + "\n")
    tmp.replace(target)


Pair = tuple[str, str]  # (student, assignment)


def select(state: Path, pairs: list[Pair], chosen: list[Pair] | None = None) -> tuple[list[Pair], dict, dict, list]:
    """What a run grades: (the pairs to grade, {pair: stored results} kept, {pair: key}, notes for the
    instructor).

    Without ``chosen``, a submission is graded when it has no stored results, when its key changed or
    when its last grading failed (a ``grading error``: the grader's fault, not the student's), and the
    others are kept. With ``chosen`` (``make grade STUDENT=…``), exactly those are graded, whatever their
    key, and every other submission keeps its stored results as they are: the notes count those that are
    out of date and those never graded (left out of grades.csv until a plain run grades them).
    """
    grader = {assignment: grader_key(assignment) for assignment in sorted({a for _, a in pairs})}
    keys = {(s, a): submission_key(grader[a], s, state / "submitted" / s / a) for s, a in pairs}
    entries = {pair: entry for pair in pairs if (entry := stored(state, *pair)) is not None}  # graded before
    fresh = {pair for pair, (key, result) in entries.items()
             if key == keys[pair] and not notes.errors(notes.read(result["notes"]))}
    if chosen is None:
        return [p for p in pairs if p not in fresh], {p: entries[p][1] for p in sorted(fresh)}, keys, []
    kept = {p: entries[p][1] for p in pairs if p not in chosen and p in entries}
    stale = [f"{s}/{a}" for s, a in kept if (s, a) not in fresh]
    never = [f"{s}/{a}" for s, a in pairs if (s, a) not in chosen and (s, a) not in entries]
    said = [f"{len(stale)} kept results are out of date (run `make grade` to grade them again): {', '.join(stale)}"
             ] if stale else []
    said += [f"{len(never)} submissions not graded yet, not in grades.csv (run `make grade`): {', '.join(never)}"
              ] if never else []
    return list(chosen), kept, keys, said
