"""How long a student waits for a chapter's visible checks: the promise is under 10 s a chapter.

    python benchmarks/bench_visible_checks.py [CHAPTER ...] [--repeat 3]

Runs each chapter's solutions notebook as a student runs the released one: every cell in order, each
test cell without its hidden block (nbgrader removes it from the student's copy), in one namespace
and one thread. Prints, per chapter, the seconds of its test cells in the first run (imports and caches
cold, as a student's first run after opening the notebook) and the least of ``--repeat`` runs after it,
and its slowest test cell; machine and command go in the first line.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import time
from pathlib import Path

import nbformat
import torch

from attnbook.measure import machine_header

ROOT = Path(__file__).resolve().parents[1]
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)
BUDGET = 10.0  # seconds a chapter


def test_cell_seconds(chapter: str) -> dict[str, float]:
    """grade_id -> seconds of each visible test cell of ``chapter``, the notebook run from the top."""
    namespace: dict = {"__name__": "__main__"}
    seconds = {}
    for cell in nbformat.read(ROOT / "solutions" / chapter / "exercises.ipynb", as_version=4).cells:
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        source = HIDDEN.sub("", cell.source) if meta.get("grade") else cell.source
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source, meta.get("grade_id", "cell"), "exec"), namespace)
        if meta.get("grade"):
            seconds[meta["grade_id"]] = time.perf_counter() - start
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    chapters = args.chapters or sorted(p.parent.name for p in (ROOT / "solutions").glob("*/exercises.ipynb"))
    print(machine_header("cpu", command=["python", "benchmarks/bench_visible_checks.py", *(argv or sys.argv[1:])]))
    print(f"{'chapter':18} {'first':>7} {'best':>7}  slowest test cell (best run)")
    over = 0
    for chapter in chapters:
        first = sum(test_cell_seconds(chapter).values())  # imports and caches cold
        runs = [test_cell_seconds(chapter) for _ in range(args.repeat)]
        best = min(runs, key=lambda r: sum(r.values()))
        total = sum(best.values())
        slowest = max(best, key=best.get)
        over += first > BUDGET
        print(f"{chapter:18} {first:7.2f} {total:7.2f}  {slowest} {best[slowest]:.2f} s", flush=True)
    print(f"budget {BUDGET:.0f} s a chapter: {'all within' if not over else f'{over} over'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
