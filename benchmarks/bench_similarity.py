"""The similarity check's cost: seconds to compare every pair of a class's answers to one chapter.

    python benchmarks/bench_similarity.py [--students 50 200] [--assignment 02-transformer]

Builds a class of N submissions of ``--assignment`` in a temporary state
folder: each student's answer to each part is one of the catalogue's answers
to it (``autograder/attnbook_course/fixtures/answers``, the similarity catalogue, the
solution), drawn at random, followed by a line of random numbers as long as
the answer, so that two students drawing the same answer do not share half
their code: few pairs are flagged, and the time is that of comparing every
pair (the cost of a real class, where few are). Prints, per N, the seconds
(wall and CPU) of ``similarity.class_matches`` and the pairs flagged. Machine and command
go in the first line.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from attnbook.measure import machine_header
from attnbook_course import similarity
from attnbook_course.fixtures import catalogue, similar_answers

ROOT = Path(__file__).resolve().parents[1]


def pools(assignment: str) -> dict[str, list[str]]:
    """Part -> every catalogued answer to it (and the solution's)."""
    out: dict[str, list[str]] = {part: [] for part in similarity.parts(assignment)}
    solution = nbformat.read(ROOT / "solutions" / assignment / "exercises.ipynb", as_version=4)
    for cell in solution.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in out:
            out[cell.metadata["nbgrader"]["grade_id"]].append(cell.source)
    for answer in catalogue.ANSWERS.values():
        if answer["assignment"] == assignment and not answer.get("hostile"):
            for part, code in answer.get("cells", {}).items():
                out[part].append(code)
    for (a, part), entry in similar_answers.CATALOGUE.items():
        if a == assignment:
            out[part] += [entry["original"], *entry["copied"].values(), *entry["independent"].values()]
    return {part: sorted(set(codes)) for part, codes in out.items() if codes}


def build(state: Path, assignment: str, students: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    released = nbformat.read(ROOT / "chapters" / assignment / "exercises.ipynb", as_version=4)
    pool = pools(assignment)
    for s in range(students):
        cells = {}
        for part, codes in pool.items():
            code = rng.choice(codes)
            noise = ", ".join(str(rng.randrange(10**6)) for _ in range(max(1, len(code) // 7)))
            cells[part] = f"{code}\n_student_{s} = [{noise}]\n"
        folder = state / "submitted" / f"s{s:03d}" / assignment
        folder.mkdir(parents=True)
        nbformat.write(catalogue.fill(nbformat.from_dict(released), cells), folder / "exercises.ipynb")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--assignment", default="02-transformer")
    args = parser.parse_args()
    print(machine_header(command=["python", *sys.argv]))
    for n in args.students:
        with tempfile.TemporaryDirectory() as tmp:
            build(Path(tmp), args.assignment, n)
            start, cpu = time.perf_counter(), time.process_time()
            found = similarity.class_matches(Path(tmp), args.assignment)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        parts = len(pools(args.assignment))
        print(f"{n} students x {parts} parts of {args.assignment}: {seconds:.1f} s ({cpu:.1f} s of CPU) "
              f"({n * (n - 1) // 2 * parts} pairs and {n * parts} reference comparisons), {len(found)} flagged")


if __name__ == "__main__":
    main()
