"""Mutation testing of the graded parts: which small edits of a solution do the checks catch?

For every answer cell of a chapter's solution notebook, the operators of
`cosmic-ray <https://github.com/sixty-north/cosmic-ray>`_ make one small edit
at a time: ``+`` for ``-``, ``<`` for ``<=``, a number nudged, ``not`` added,
``break`` for ``continue``, a loop that never runs. Each edited cell, a
*mutant*, is graded as a student's answer by the cell's test cells, with every
case, visible and hidden, here in this process (the instructor's own code: no
sandbox needed). A mutant is

* **killed** when a test cell scores below full marks (or its check raises),
* **broken** when the edited cell itself fails to run (killed by Python, not by a check),
* **survived** when every test cell gives full marks: either the edit does not
  change what the code computes (an equivalent mutant: say so beside the
  part's cases) or no case exercises what it broke (add a hidden case).

    python autograder/mutants.py 02-transformer                 # every answer cell of a chapter
    python autograder/mutants.py 02-transformer --cells sdpa_solution --out /tmp/m

It writes ``OUT/mutation_scores.csv`` (one row per answer cell: its mutants, those graded -- all of
them unless ``--sample N`` -- killed, survived, broken) and
``OUT/survivors.md`` (the diff of every surviving mutant). The score of a cell
is killed / (killed + survived); broken mutants are counted apart.

>>> sorted({op.split("/")[1] for op, _ in mutants("y = x + 1")})[:2]
['NumberReplacer', 'ReplaceBinaryOperator_Add_BitAnd']
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import difflib
import io
import signal
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import torch
from cosmic_ray.mutating import mutate_code
from cosmic_ray.plugins import get_operator, operator_names
from inprocess import run_cell

from attnbook.grading import judge
from attnbook.measure import machine_header

ROOT = Path(__file__).resolve().parent.parent
SECONDS = 10  # a mutant that runs longer than this (a loop that never ends) is killed by the clock


@dataclass
class CellScore:
    """What the mutants of one answer cell did."""

    assignment: str
    cell: str
    tests: list[str]
    mutants: int = 0  # all the cell's mutants; more than those graded when sampled
    killed: int = 0
    broken: int = 0
    survivors: list[str] = field(default_factory=list)  # unified diffs

    @property
    def score(self) -> float:
        graded = self.killed + len(self.survivors)
        return self.killed / graded if graded else 1.0


def mutants(source: str) -> Iterator[tuple[str, str]]:
    """Every distinct one-edit mutant of ``source`` as (operator, code), from cosmic-ray's core operators."""
    seen = {source}
    for name in operator_names():
        operator = get_operator(name)
        if operator.arguments():  # operators that need settings (variable replacers) are left out
            continue
        for occurrence in range(1000):
            code = mutate_code(source, operator(), occurrence)
            if code is None:
                break
            if code not in seen:
                seen.add(code)
                yield name, code


@contextlib.contextmanager
def _clock(seconds: int):
    """Raise TimeoutError in this (main) thread after ``seconds``."""
    def ring(signum, frame):
        raise TimeoutError(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


_run = run_cell  # a cell's code, quietly


def _grade(namespace: dict, calls: list[judge.TestCall], points: float) -> float:
    """The points a test cell gives the objects in ``namespace``, as the judge scores it, quietly."""
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return judge.score_test_cell(calls, namespace, points)[0]
        except Exception:  # a check that fails on what a mutant returned: no points
            return 0.0


class Notebook:
    """A solution notebook run once; its answer cells, the locked cells after each, and its test cells.

    An answer cell's test cells are those between it and the next answer cell,
    as nbgrader lays a notebook out; the locked cells there (helpers that call
    the answer, examples) run again after each mutant.
    """

    def __init__(self, assignment: str):
        path = ROOT / "solutions" / assignment / "exercises.ipynb"
        if not path.exists():
            raise ValueError(f"assignment {assignment!r}: no {path.relative_to(ROOT)}")
        self.assignment = assignment
        self.answers: dict[str, str] = {}
        self.after: dict[str, list[str]] = {}  # answer cell -> the locked cells that follow it
        self.tests_of: dict[str, list[str]] = {}  # answer cell -> its test cells
        self.tests: dict[str, tuple[list[judge.TestCall], float]] = {}
        self.namespace: dict = {"__name__": "__main__"}
        current = None
        for cell in nbformat.read(path, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code":
                continue
            if meta.get("grade"):
                self.tests[meta["grade_id"]] = judge.parse_test_cell(cell.source), meta["points"]
                if current:
                    self.tests_of[current].append(meta["grade_id"])
                continue
            if meta.get("solution"):
                current = meta["grade_id"]
                self.answers[current], self.after[current], self.tests_of[current] = cell.source, [], []
            elif current:
                self.after[current].append(cell.source)
            _run(cell.source, self.namespace, meta.get("grade_id", "cell"))

    def score(self, cell: str, sample: int | None = None) -> CellScore:
        """Grade every mutant of the answer cell ``cell`` by its test cells (``sample``: at most that many,
        evenly spaced through the list, for a cell whose mutants loop until the clock stops them)."""
        if cell not in self.answers:
            raise ValueError(f"{self.assignment}: no answer cell {cell!r}; there are {sorted(self.answers)}")
        tests = self.tests_of[cell]
        result = CellScore(self.assignment, cell, tests)
        original = self.answers[cell]
        every = list(mutants(original))
        result.mutants = len(every)
        if sample is not None and len(every) > sample:
            every = [every[round(i * len(every) / sample)] for i in range(sample)]
        for operator, code in every:
            namespace = dict(self.namespace)  # earlier parts' objects keep the unmutated globals
            try:
                with _clock(SECONDS):
                    _run(code, namespace, f"mutant of {cell}")
            except Exception:
                result.broken += 1
                continue
            for source in self.after[cell]:  # the cells that call it; one that raises stops nothing
                with contextlib.suppress(Exception), _clock(SECONDS):
                    _run(source, namespace, f"after {cell}")
            try:
                with _clock(SECONDS):
                    full = all(_grade(namespace, *self.tests[t]) >= self.tests[t][1] for t in tests)
            except TimeoutError:
                full = False
            if full:
                diff = difflib.unified_diff(original.splitlines(), code.splitlines(), lineterm="", n=1)
                result.survivors.append(f"{operator}\n" + "\n".join(list(diff)[2:]))
            else:
                result.killed += 1
        return result


def write(scores: list[CellScore], out: Path, header: str) -> None:
    """``out/mutation_scores.csv`` (its first line ``header``) and ``out/survivors.md``."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "mutation_scores.csv", "w", newline="") as f:
        f.write(header + "\n")
        w = csv.writer(f)
        w.writerow(["assignment", "cell", "tests", "mutants", "graded", "killed", "survived", "broken", "score"])
        for s in scores:
            w.writerow([s.assignment, s.cell, " ".join(s.tests), s.mutants, s.killed + len(s.survivors) + s.broken,
                        s.killed, len(s.survivors), s.broken, f"{s.score:.3f}"])
    with open(out / "survivors.md", "w") as f:
        f.write(f"# Surviving mutants\n\n`{header.removeprefix('# ')}`\n")
        for s in scores:
            if s.survivors:
                f.write(f"\n## {s.assignment} · {s.cell} ({len(s.survivors)})\n")
                for diff in s.survivors:
                    f.write(f"\n```diff\n{diff}\n```\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="chapter ids (default: every chapter)")
    parser.add_argument("--cells", nargs="*", help="answer cells' grade ids (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "autograder" / "mutation")
    parser.add_argument("--sample", type=int, help="grade at most this many mutants of a cell, evenly spaced")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    header = machine_header("cpu", command=["python", "autograder/mutants.py", *sys.argv[1:]])
    chosen = args.assignments or sorted(p.parent.name for p in (ROOT / "solutions").glob("*/exercises.ipynb"))
    scores = []
    for assignment in chosen:
        notebook = Notebook(assignment)
        for cell in args.cells or notebook.answers:
            s = notebook.score(cell, args.sample)
            scores.append(s)
            print(f"{assignment} {cell}: {s.killed} killed, {len(s.survivors)} survived, "
                  f"{s.broken} broken, score {s.score:.2f}", flush=True)
            write(scores, args.out, header)  # after every cell: a long run can be read as it goes
    return 0


if __name__ == "__main__":
    sys.exit(main())
