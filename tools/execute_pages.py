"""Execute the book's pages into its jupyter-cache, several at once, before ``jupyter-book build`` renders them.

Jupyter Book executes one page after another, and one page's kernel keeps
about one core busy (small models gain little from a second thread). This
runs ``--jobs`` pages at a time, each kernel on its share of the cores, and
stores each executed page in ``_build/.jupyter_cache`` as myst-nb itself would
(the same reader, so the same hash; the page's folder as working directory;
no errors allowed). The build then finds every page cached and executes
none. A page already cached is not run again; a page that fails is not
cached, its traceback is printed, and the exit status is 1 (``make book``
stops there).

    python tools/execute_pages.py [--jobs 2] [--cache _build/.jupyter_cache]

It prints each page's seconds and each chapter's total (as if run alone:
a chapter's budget is 5 minutes on a quiet 2-core machine).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import sys
import time
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 3600  # _config.yml's execute.timeout: a slow machine finishes late rather than failing


def pages(root: Path = ROOT) -> list[Path]:
    """The pages of ``_toc.yml`` that the build executes: MyST notebooks, never an ``exercises.ipynb``.

    >>> [p.name for p in pages()][:2]
    ['grading.md', '1-bottleneck.md']
    """
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(toc)
    found = [root / f"{f}.md" for f in files if (root / f"{f}.md").exists()]
    return [p for p in found if p.read_text().startswith("---\njupytext:")]


def read(path: Path) -> nbformat.NotebookNode:
    """``path`` as myst-nb reads it for the build (so that the cache's hash matches)."""
    from myst_nb.core.read import myst_nb_reader_plugin

    return myst_nb_reader_plugin(str(path))


def training(path: Path) -> tuple[int, int]:
    """How much ``path``'s code cells train (calls of ``fit``, ``pretrain``, ``finetune``, ``train_*``), and
    how long they are.

    >>> training(ROOT / "grading.md")[0], training(ROOT / "chapters" / "04-gpt-bpe" / "2-gpt.md")[0] > 0
    (0, True)
    """
    code = "".join(re.findall(r"```\{code-cell\}[^\n]*\n(.*?)```", path.read_text(), re.S))
    return len(re.findall(r"\b(?:fit|pretrain|finetune|train_\w+)\(", code)), len(code)


def execute(path: Path) -> tuple[str, str | None, float, str | None]:
    """Run ``path``'s cells in its own folder: (its executed notebook as JSON or None, seconds, the error)."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = read(path)
    result = single_nb_execution(nb, cwd=str(path.parent), allow_errors=False, timeout=TIMEOUT, meta_override=True)
    if result.err is not None:
        return str(path), None, result.time, result.exc_string
    return str(path), nbformat.writes(nb), result.time, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="pages at once (default: the cores)")
    parser.add_argument("--cache", type=Path, default=ROOT / "_build" / ".jupyter_cache")
    args = parser.parse_args(argv)
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(args.cache))
    todo, every = [], pages()
    for path in every:
        try:
            cache.match_cache_notebook(read(path))
        except KeyError:
            todo.append(path)
    # The longest pages first, so that none runs alone at the end: by the last run's seconds where the cache
    # knows them, else those that train models (by their training calls, then their code), then the others.
    last = {r.uri: r.data.get("execution_seconds", 0) for r in cache.list_cache_records()}
    todo.sort(key=lambda p: (last.get(str(p), 0), *training(p)), reverse=True)
    threads = str(max(1, (os.cpu_count() or 1) // max(1, args.jobs)))
    os.environ.update(OMP_NUM_THREADS=threads, MKL_NUM_THREADS=threads)  # the kernels' share of the cores
    print(f"executing {len(todo)} pages, {args.jobs} at a time ({threads} thread each); "
          f"{len(every) - len(todo)} already cached", flush=True)
    seconds: dict[str, float] = {}
    failed = []
    start = time.monotonic()
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for future in concurrent.futures.as_completed([pool.submit(execute, p) for p in todo]):
            uri, text, took, error = future.result()
            seconds[uri] = took
            name = Path(uri).relative_to(ROOT)
            if text is None:
                failed.append(name)
                print(f"FAILED {name} after {took:.0f} s:\n{error}", flush=True)
                continue
            cache.cache_notebook_bundle(CacheBundleIn(nbformat.reads(text, as_version=4), uri,
                                                      data={"execution_seconds": took}),
                                        check_validity=False, overwrite=True)
            print(f"{took:6.0f} s  {name}", flush=True)
    chapters: dict[str, float] = {}
    for uri, took in seconds.items():
        chapter = str(Path(uri).parent.relative_to(ROOT))
        chapters[chapter] = chapters.get(chapter, 0) + took
    for chapter, took in sorted(chapters.items()):
        print(f"{took:6.0f} s  {chapter} (its pages, one after another)")
    print(f"{time.monotonic() - start:.0f} s in all for {len(todo)} pages")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
