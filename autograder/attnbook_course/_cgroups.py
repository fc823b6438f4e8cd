"""A submission's process cap and memory cap: a control group per sandbox, where this machine lets us make one.

A cgroup holds the worker and every process it starts: ``pids.max`` caps how
many there are, and the memory limit covers all of them *and* the files they
write into the sandbox's memory-backed folders (tmpfs pages are charged to the
cgroup of the process that wrote them). Both cgroup versions are used:

* version 1 (a container's ``/sys/fs/cgroup/pids`` and ``/sys/fs/cgroup/memory``
  hierarchies), under this process's own cgroup in each;
* version 2 (``/sys/fs/cgroup`` unified), under this process's own cgroup when
  it was delegated with the ``pids`` and ``memory`` controllers enabled for its
  children (``systemd-run --user --scope -p Delegate=yes make grade``).

Where neither can be made (no write access, or no such controllers)
:func:`available` says ``None``: the sandbox then relies on its other limits
(:mod:`.sandbox` says which are in force).

Groups are named ``attnbook-<pid of the judge>-<n>``; :func:`sweep` removes the
empty ones that a killed run left behind.
"""

from __future__ import annotations

import functools
import itertools
import os
import time
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "attnbook-"
_numbers = itertools.count()


def _own_paths() -> dict[str, str]:
    """controller (v1) or "" (v2) -> this process's cgroup path, from /proc/self/cgroup."""
    paths = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            paths[name] = path
    return paths


def _parents() -> tuple[str, dict[str, Path]] | None:
    """(version, {"pids": folder, "memory": folder}) where our groups can go, or ``None``."""
    try:
        own = _own_paths()
    except OSError:
        return None
    v1: dict[str, Path] = {c: ROOT / c / own[c].lstrip("/") for c in ("pids", "memory") if c in own}
    if len(v1) == 2 and all((folder / "cgroup.procs").exists() for folder in v1.values()):
        return "v1", v1
    unified = ROOT / own.get("", "/").lstrip("/")
    control = unified / "cgroup.subtree_control"
    if control.exists() and {"pids", "memory"} <= set(control.read_text().split()):
        return "v2", {"pids": unified, "memory": unified}
    return None


class Cgroup:
    """One submission's group (one folder in v2, one per controller in v1)."""

    def __init__(self, version: str, folders: list[Path]):
        self.version, self.folders = version, folders

    @classmethod
    def create(cls, processes: int, memory_bytes: int) -> Cgroup | None:
        """A new group with these caps, or ``None`` where groups cannot be made here."""
        found = _parents()
        if found is None:
            return None
        version, parents = found
        name = f"{PREFIX}{os.getpid()}-{next(_numbers)}"
        folders = list(dict.fromkeys(parent / name for parent in parents.values()))
        group = cls(version, folders)
        try:
            for folder in folders:
                folder.mkdir()
            memory_file = "memory.limit_in_bytes" if version == "v1" else "memory.max"
            (parents["pids"] / name / "pids.max").write_text(str(processes))
            (parents["memory"] / name / memory_file).write_text(str(memory_bytes))
        except OSError:
            group.remove()
            return None
        return group

    def join(self) -> None:
        """Put the calling process in the group (in the worker, before it starts: ``preexec_fn``)."""
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self, wait: float = 5.0) -> bool:
        """Delete the group once its processes are gone (they were killed); whether it is gone."""
        end = time.monotonic() + wait
        for folder in self.folders:
            while folder.exists():
                try:
                    folder.rmdir()
                except OSError:
                    if time.monotonic() > end:
                        return False
                    time.sleep(0.05)
        return True

    def peak(self) -> dict[str, int]:
        """The most processes and bytes the group has held (where the kernel keeps those counts)."""
        found = {}
        for folder in self.folders:
            for key, name in (("processes", "pids.peak"), ("memory", "memory.max_usage_in_bytes"),
                              ("memory", "memory.peak")):
                if (folder / name).exists():
                    found[key] = int((folder / name).read_text())
        return found


@functools.cache
def available() -> str | None:
    """``"cgroup v1"`` or ``"cgroup v2"`` when a group with both caps can be made here, else ``None``."""
    group = Cgroup.create(8, 2**30)
    if group is None:
        return None
    group.remove()
    return f"cgroup {group.version}"


def sweep() -> int:
    """Remove the empty groups that killed runs left (named :data:`PREFIX`...); how many went."""
    found = _parents()
    removed = 0
    for parent in set(found[1].values()) if found else ():
        for folder in parent.glob(f"{PREFIX}*"):
            pid = folder.name.removeprefix(PREFIX).split("-")[0]
            if pid.isdigit() and not Path(f"/proc/{pid}").exists():
                try:
                    folder.rmdir()
                    removed += 1
                except OSError:
                    pass
    return removed
