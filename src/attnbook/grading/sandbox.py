"""The sandbox a submission's worker runs in: bubblewrap when it works here, resource limits always.

With bubblewrap (Debian's ``bubblewrap``), the worker sees only the system
folders, the Python installation and the virtual environment, read-only
(attnbook's own source hidden if it lies there), a private ``/tmp``, no
network, its own process and user namespaces (it runs as ``nobody``), and no
capabilities; when it ends, every process it started ends with it. Without bubblewrap, only the limits and the
process group apply: grading refuses to start unless told the notebooks are trusted (:func:`refusal`), and
says which isolation was in force where grades are reported (:func:`isolation`).

Limits (environment variables, for the whole worker):
``ATTNBOOK_GRADING_MEMORY_GIB`` (address space, default 4),
``ATTNBOOK_GRADING_CPU_SECONDS`` (per part, default 300),
``ATTNBOOK_GRADING_PART_SECONDS`` (wall clock per part, default 120).
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

SANDBOX = "/tmp/sandbox"  # the worker's folder, as it sees it


def limits() -> dict[str, float]:
    return {
        "memory_gib": float(os.environ.get("ATTNBOOK_GRADING_MEMORY_GIB", 4)),
        "cpu_seconds": float(os.environ.get("ATTNBOOK_GRADING_CPU_SECONDS", 300)),
        "part_seconds": float(os.environ.get("ATTNBOOK_GRADING_PART_SECONDS", 120)),
    }


def apply_limits() -> None:
    """In the worker before it starts (``preexec_fn``): memory, CPU time, file size, no core dumps."""
    lim = limits()
    memory = int(lim["memory_gib"] * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(lim["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (2**28, 2**28))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


@functools.cache
def isolation() -> str:
    """``"bubblewrap"`` if it runs here, else ``"none"`` (limits and process group only)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None or os.environ.get("ATTNBOOK_GRADING_SANDBOX") == "none":
        return "none"
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-all", "--unshare-user", "--uid", "65534",
                            "--die-with-parent", "true"], capture_output=True)
    return "bubblewrap" if probe.returncode == 0 else "none"


def refusal(strict: bool = False) -> str | None:
    """Why grading must not start on this machine, or ``None`` when it may.

    Without bubblewrap a worker runs as the instructor with no file isolation,
    so grading refuses unless ``ATTNBOOK_GRADING_SANDBOX=none`` says that the
    notebooks are trusted. ``strict`` (the catalogue, whose hostile answers
    attack the machine they run on) refuses even then.
    """
    if isolation() == "bubblewrap":
        return None
    opted_out = os.environ.get("ATTNBOOK_GRADING_SANDBOX") == "none"
    if opted_out and not strict:
        return None
    if opted_out:
        return ("ATTNBOOK_GRADING_SANDBOX=none turns the sandbox off, and these submissions include hostile ones "
                "that attack the machine they run on (they rewrite attnbook's source, for one): unset it")
    return ("bubblewrap (bwrap) is not installed or cannot run here, so the students' code would run as you, "
            "free to read and change every file you can: the course, the gradebook, other students' work. "
            "Install it (Debian and Ubuntu: apt install bubblewrap) and grade again"
            + ("" if strict else "; to grade trusted notebooks without it, set ATTNBOOK_GRADING_SANDBOX=none"))


def _visible() -> list[Path]:
    """What the worker sees of the machine, read-only: the system, Python and the virtual environment."""
    system = [Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc")]
    return [*system, Path(sys.base_prefix).resolve(), Path(sys.prefix)]


def worker_command(workdir: Path, hidden: list[Path], python: str = sys.executable) -> tuple[list[str], str]:
    """(command, cwd) that starts ``workdir/_worker.py`` in the sandbox.

    The worker sees only :func:`_visible` (an allow-list: the course, the
    grading state, home folders and other checkouts are simply not there), and
    of that, not the ``hidden`` folders (attnbook's own source, when it is
    installed inside the environment).
    """
    if isolation() == "none":
        return [python, "-I", str(workdir / "_worker.py")], str(workdir)
    visible = [p for p in _visible() if p.exists()]
    cmd = [shutil.which("bwrap"), "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]  # before the binds:
    for folder in visible:  # the environment may live under /tmp (a fresh clone there)
        cmd += ["--ro-bind", str(folder), str(folder)]
    for folder in hidden:
        if folder.is_dir() and any(folder.is_relative_to(v) and folder != v for v in visible):
            cmd += ["--tmpfs", str(folder)]
    cmd += ["--bind", str(workdir), SANDBOX,
            "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", SANDBOX,
            "--setenv", "HOME", SANDBOX, "--setenv", "TMPDIR", SANDBOX, "--setenv", "IPYTHONDIR", f"{SANDBOX}/.ipython",
            "--", python, "-I", f"{SANDBOX}/_worker.py"]
    return cmd, "/"


def prepare(workdir: Path) -> None:
    """Put the worker's two files in ``workdir`` (nothing else of the course goes there)."""
    here = Path(__file__).parent
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("_worker.py", "_wire.py"):
        shutil.copyfile(here / name, workdir / name)
    os.chmod(workdir, 0o777)  # the worker runs as nobody
