"""A throwaway PostgreSQL cluster for a test: started in a private folder, stopped and removed after.

It listens on a unix socket in that folder only (no TCP), so it cannot collide with another server or
another test run on the machine. :func:`cluster` yields a :class:`Cluster`, whose :meth:`Cluster.database`
makes an empty database and returns its URL; :meth:`Cluster.restart` stops and starts the server (the
fault of a database restarted under a running service).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def bindir() -> Path | None:
    """The newest Debian PostgreSQL server binaries, or None."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")]
    return max(found, key=lambda p: float(p.parent.name), default=None)


def run(*cmd, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{done.stdout}{done.stderr}"
    return done


@dataclass
class Cluster:
    base: Path
    bin: Path
    owner: list[str]
    port: int = 5432

    @property
    def data(self) -> Path:
        return self.base / "data"

    def start(self) -> None:
        run(*self.owner, self.bin / "pg_ctl", "-D", self.data, "-l", self.base / "server.log", "-w",
             "-o", f"-k {self.base} -p {self.port} -c listen_addresses='' -c max_connections=200", "start",
             cwd=self.base)

    def stop(self, mode: str = "fast") -> None:
        subprocess.run([*self.owner, self.bin / "pg_ctl", "-D", self.data, "-m", mode, "-w", "stop"],
                       capture_output=True, cwd=self.base)

    def restart(self) -> None:
        self.stop("fast")
        self.start()

    def database(self, name: str, driver: str = "postgresql+psycopg2") -> str:
        """A new, empty database: its URL (SQLAlchemy's with ``driver``; ``postgresql`` for libpq's)."""
        run(*self.owner, self.bin / "createdb", "-h", self.base, "-p", self.port, "-U", "postgres", name,
             cwd=self.base)
        return f"{driver}://postgres@/{name}?host={self.base}&port={self.port}"


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """A fresh cluster (the caller skips where :func:`bindir` is None)."""
    found = bindir()
    assert found is not None, "PostgreSQL server binaries not installed (Debian package postgresql)"
    # Not under pytest's tmp_path, which only root may enter: the server's own user must reach it.
    base = Path(tempfile.mkdtemp(prefix="attnbook-pg-"))
    owner = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(base, "nobody")
        owner = ["runuser", "-u", "nobody", "--"]
    server = Cluster(base, found, owner)
    try:
        run(*owner, found / "initdb", "-D", server.data, "-U", "postgres", "-A", "trust", "-E", "UTF8",
             "--locale=C", "--no-sync", cwd=base)
        server.start()
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(base, ignore_errors=True)
