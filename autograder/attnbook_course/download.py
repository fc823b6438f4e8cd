"""An LMS download, read one member at a time with bounded memory: a zip, or the folder it unpacks to.

:func:`members` lists (in a ``with`` block) what the download holds without reading it: each member's path
inside the download (``/`` between folders), its declared size, its time and whether it is a regular file. A
link (a symbolic link in the folder, or a zip member whose Unix mode says link) or any other special file is
listed as not regular and never followed nor read. :func:`problem` says why a member's path cannot be used
(it would leave its folder). :func:`stage` copies one member to a file in pieces, stopping at a cap, so that
a member whose size was misdeclared, or a zip bomb, costs at most the cap on disk and one piece in memory.

>>> import tempfile, zipfile
>>> folder = Path(tempfile.mkdtemp())
>>> with zipfile.ZipFile(folder / "d.zip", "w") as z:
...     z.writestr("a_1_2_exercises.ipynb", "{}"); z.writestr("../x", "")
>>> with members(folder / "d.zip") as found:
...     [(m.path, m.size, m.regular, problem(m.path)) for m in found]
[('../x', 0, True, 'a folder named ..'), ('a_1_2_exercises.ipynb', 2, True, None)]
"""

from __future__ import annotations

import functools
import os
import stat
import zipfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO

PIECE = 1 << 20  # bytes read at once


@dataclass(frozen=True)
class Member:
    """One file of a download: its path inside it, declared size, naive time, and how to read it."""

    path: str
    size: int
    when: datetime
    regular: bool
    open: Callable[[], AbstractContextManager[IO[bytes]]]


@contextmanager
def members(source: Path) -> Iterator[list[Member]]:
    """The files of a zip or a folder, sorted by path, readable until the ``with`` block ends; folders
    themselves are not listed, and a link to a folder is listed as one (not regular) member, never entered."""
    if source.is_dir():
        yield sorted(_folder(source), key=lambda m: m.path)
        return
    with zipfile.ZipFile(source) as archive:
        out = []
        for info in archive.infolist():
            if info.is_dir():
                continue
            mode = info.external_attr >> 16
            regular = stat.S_IFMT(mode) in (0, stat.S_IFREG)  # 0: no file type (Windows's zips, Python's)
            out.append(Member(info.filename, info.file_size, datetime(*info.date_time), regular,
                              functools.partial(archive.open, info)))
        yield sorted(out, key=lambda m: m.path)


def _folder(source: Path) -> Iterator[Member]:
    for top, dirs, files in os.walk(source, followlinks=False):
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(top, d))]):
            path = Path(top) / name
            info = path.lstat()
            yield Member(path.relative_to(source).as_posix(), info.st_size, datetime.fromtimestamp(info.st_mtime),
                         stat.S_ISREG(info.st_mode), functools.partial(_open_plain, path))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(top, d))]


def _open_plain(path: Path) -> IO[bytes]:
    """``path`` opened for reading, refusing a link put in its place since it was listed."""
    return os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb")


def problem(path: str) -> str | None:
    """Why a member's path cannot be written under a folder, or None.

    >>> problem("bob/02-transformer/exercises.ipynb"), problem("a\\\\b.ipynb"), problem("/etc/passwd")
    (None, 'a backslash in its name', 'an absolute path')
    """
    if path.startswith("/"):
        return "an absolute path"
    if "\\" in path:
        return "a backslash in its name"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return f"a folder named {next(p for p in path.split('/') if p in ('', '.', '..')) or 'with no name'}"
    return None


def stage(member: Member, target: Path, cap: int) -> int | None:
    """Copy ``member`` to ``target`` in pieces; its size in bytes, or None (and no file) when it holds more
    than ``cap`` bytes, whatever its declared size said."""
    done = 0
    with member.open() as src, open(target, "wb") as out:
        while piece := src.read(min(PIECE, cap + 1 - done)):
            done += len(piece)
            if done > cap:
                break
            out.write(piece)
    if done > cap:
        target.unlink()
        return None
    return done
