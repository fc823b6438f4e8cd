"""Grading throughput: seconds per notebook with one job and with JOBS, the speed-up, and a late student.

    python benchmarks/bench_grading.py [--students 4] [--jobs 2] [--assignments 03-bert ...]

Builds a class of ``--students`` copies of every chapter's solution (each
filled into the released notebook, as a student would hand it in), grades it
with ``attnbook-course grade --jobs 1`` and then ``--jobs N`` into fresh state
folders, and prints the wall time per notebook of each run and their ratio.
The two runs' grades.csv must be identical. Then, in the graded class, one
late student hands in (graded alone: incremental grading) and one student is
graded again (``--student``); it prints the seconds of each. Machine and
command go in the first line of the output, for the instructor guide.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from attnbook.measure import machine_header
from attnbook_course.fixtures import catalogue

ROOT = Path(__file__).resolve().parents[1]


def run(state: Path, submissions: Path | None, jobs: int, *options: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "attnbook_course", "--state", str(state), "grade",
                    "--jobs", str(jobs), *options, *([str(submissions)] if submissions else [])],
                   check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=4)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--assignments", nargs="+", help="the chapters to grade (default: all)")
    args = parser.parse_args()
    print(machine_header(threads=f"1 and {args.jobs} grading jobs"))
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        assignments = args.assignments or sorted(p.parent.name for p in (ROOT / "solutions").glob("*/exercises.ipynb"))
        for assignment in assignments:
            text = catalogue.solution_submission(assignment)
            for i in range(args.students):
                folder = base / "class" / f"s{i}" / assignment
                folder.mkdir(parents=True)
                (folder / "exercises.ipynb").write_text(text)
        notebooks = args.students * len(assignments)
        serial = run(base / "serial", base / "class", 1)
        parallel = run(base / "parallel", base / "class", args.jobs)
        same = (base / "serial" / "grades.csv").read_bytes() == (base / "parallel" / "grades.csv").read_bytes()
        for assignment in assignments:  # a late student: the class is graded, only the newcomer is new
            shutil.copytree(base / "class" / "s0" / assignment, base / "late" / "late" / assignment)
        late = run(base / "parallel", base / "late", args.jobs)
        one = run(base / "parallel", None, args.jobs, "--student", "s0")
    print(f"notebooks: {notebooks}")
    print(f"jobs=1: {serial:.1f} s, {serial / notebooks:.2f} s per notebook")
    print(f"jobs={args.jobs}: {parallel:.1f} s, {parallel / notebooks:.2f} s per notebook")
    print(f"speed-up: {serial / parallel:.2f}x   grades.csv identical: {same}")
    print(f"one late student in the graded class: {late:.1f} s; one student graded again (--student): {one:.1f} s")


if __name__ == "__main__":
    main()
