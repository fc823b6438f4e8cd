"""The sandbox a submission's worker runs in: bubblewrap when it works here, resource limits always.

With bubblewrap (Debian's ``bubblewrap``), the worker sees only the system
folders, the Python installation and the virtual environment, read-only
(attnbook's own source hidden if it lies there), its own two files read-only,
no network, its own process and user namespaces (it runs as ``nobody``), and no
capabilities. Everything it can write is memory of a fixed size: ``/tmp``
(three quarters of ``ATTNBOOK_GRADING_FILES_MIB``) and ``/dev/shm`` (a quarter);
the root and ``/dev`` are read-only. When it ends, every process it started
ends with it. Without bubblewrap, only the limits and the process group apply:
grading refuses to start unless told the notebooks are trusted (:func:`refusal`),
and says which isolation was in force where grades are reported (:func:`isolation`).

Its limits are the ``ATTNBOOK_GRADING_*`` settings (:mod:`attnbook.settings`:
``python -m attnbook.settings`` prints them with their defaults and units;
:func:`describe` says which are in force, and ``python -m
attnbook_course.sandbox`` prints it).

The memory and process caps need a control group (:mod:`._cgroups`); without
one, every process of the worker is held to an address space of the memory
less the files, and the process cap is ``RLIMIT_NPROC`` inside the sandbox's
own user namespace, which the kernel does not apply when grading runs as root.
"""

from __future__ import annotations

import ctypes
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from attnbook import settings
from attnbook.grading.seam import WORKER_FILES

from . import _cgroups, _wire

WORKER = "/opt/attnbook-worker"  # the worker's two files, read-only, as it sees them
SWEPT = Path(tempfile.gettempdir()) / "attnbook-sandboxes"  # the host's sandbox folders, one per submission
LARGEST_FILE = 1 << 28  # bytes: one file the worker writes (RLIMIT_FSIZE); /tmp and /dev/shm hold them all
REMOVE_SECONDS = 600  # chmod -R, then rm -rf, of a sandbox folder: each is stopped after this long

def limits() -> dict[str, float]:
    """Every grading limit in force, by its short name (``ATTNBOOK_GRADING_PART_SECONDS`` is ``part_seconds``)."""
    return settings.grading()


def _bytes(gib: float = 0.0, mib: float = 0.0) -> int:
    return int(gib * 2**30 + mib * 2**20)


def apply_limits(group: _cgroups.Cgroup | None = None) -> None:
    """In the worker before it starts (``preexec_fn``): its cgroup, memory, CPU time, file size, no core dumps.

    Each process's address space is the submission's memory less what it may write, so that files and one
    process together stay within the memory even where no cgroup counts them.
    """
    if group is not None:
        group.join()
    try:  # Linux: the worker is killed when its judge dies, whatever killed the judge
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    lim = limits()
    memory = _bytes(lim["memory_gib"], -lim["files_mib"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(lim["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (LARGEST_FILE, LARGEST_FILE))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def new_cgroup() -> _cgroups.Cgroup | None:
    """The submission's control group with its process and memory caps, where one can be made here."""
    lim = limits()
    return _cgroups.Cgroup.create(int(lim["processes"]), _bytes(lim["memory_gib"]))


@functools.cache
def isolation() -> str:
    """``"bubblewrap"`` if it runs here, else ``"none"`` (limits and process group only)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None or settings.GRADING_SANDBOX.read() == "none":
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
    opted_out, off = settings.GRADING_SANDBOX.read() == "none", f"{settings.GRADING_SANDBOX.name}=none"
    if opted_out and not strict:
        return None
    if opted_out:
        return (f"{off} turns the sandbox off, and these submissions include hostile ones "
                "that attack the machine they run on (they rewrite attnbook's source, for one): unset it")
    return ("bubblewrap (bwrap) is not installed or cannot run here, so the students' code would run as you, "
            "free to read and change every file you can: the course, the gradebook, other students' work. "
            "Install it (Debian and Ubuntu: apt install bubblewrap) and grade again"
            + ("" if strict else f"; to grade trusted notebooks without it, set {off}"))


def _visible() -> list[Path]:
    """What the worker sees of the machine, read-only: the system, Python and the virtual environment."""
    system = [Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc")]
    return [*system, Path(sys.base_prefix).resolve(), Path(sys.prefix)]


def worker_command(workdir: Path, hidden: list[Path], python: str = sys.executable) -> tuple[list[str], str]:
    """(command, cwd) that starts ``workdir/_worker.py`` in the sandbox.

    The worker sees only :func:`_visible` (an allow-list: the course, the
    grading state, home folders and other checkouts are simply not there), and
    of that, not the ``hidden`` folders (attnbook's own source, when it is
    installed inside the environment). It can write only to ``/tmp`` and
    ``/dev/shm``, memory of a fixed size, which its host empties before each part
    (``_wire.SCRATCH_FLAG``); ``workdir`` itself is read-only to it.
    """
    if isolation() == "none":
        return [python, "-I", str(workdir / "_worker.py")], str(workdir)
    files = _bytes(mib=limits()["files_mib"])
    visible = [p for p in _visible() if p.exists()]
    bwrap = shutil.which("bwrap")
    if bwrap is None:  # isolation() found it: it went away since
        raise RuntimeError("bubblewrap (bwrap) is no longer on PATH")
    cmd = [bwrap, "--dev", "/dev", "--proc", "/proc",
           "--size", str(files // 4), "--tmpfs", "/dev/shm",
           "--size", str(files - files // 4), "--tmpfs", "/tmp"]  # before the binds: the environment may
    for folder in visible:  # live under /tmp (a fresh clone there)
        cmd += ["--ro-bind", str(folder), str(folder)]
    for folder in hidden:
        if folder.is_dir() and any(folder.is_relative_to(v) and folder != v for v in visible):
            cmd += ["--size", "4096", "--tmpfs", str(folder), "--remount-ro", str(folder)]
    cmd += ["--ro-bind", str(workdir), WORKER,
            "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--chdir", "/tmp",
            "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--setenv", "IPYTHONDIR", "/tmp/.ipython",
            "--remount-ro", "/dev", "--remount-ro", "/",
            "--", python, "-I", f"{WORKER}/_worker.py", _wire.SCRATCH_FLAG,
            _wire.PROCESSES_FLAG, str(int(limits()["processes"]))]
    return cmd, "/"


def workdir() -> Path:
    """A new host folder for one submission's sandbox, under :data:`SWEPT` (named by this process)."""
    SWEPT.mkdir(mode=0o755, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=SWEPT))


def prepare(folder: Path) -> None:
    """Put the worker's four files in ``folder`` (nothing else of the course goes there)."""
    folder.mkdir(parents=True, exist_ok=True)
    worker = Path(__file__).with_name("_worker.py")  # a script, never imported here
    for module in (worker, _wire.__file__, *WORKER_FILES):
        shutil.copyfile(module, folder / Path(module).name)
    os.chmod(folder, 0o777 if isolation() == "none" else 0o755)  # without bubblewrap it is the worker's folder


def remove_tree(path: Path) -> bool:
    """Delete ``path`` whatever its shape (any depth, no permissions, fifos, sockets); whether it is gone.

    Never raises: GNU or BSD ``chmod -R`` and ``rm -rf`` walk any depth without recursion limits and never
    follow a symbolic link out of the folder.

    >>> folder = Path(tempfile.mkdtemp()); (folder / "a" / "b").mkdir(parents=True); os.chmod(folder / "a", 0)
    >>> remove_tree(folder), folder.exists()
    (True, False)
    """
    if not os.path.lexists(path):
        return True
    for command in (["chmod", "-R", "u+rwx", "--", str(path)], ["rm", "-rf", "--one-file-system", "--", str(path)]):
        try:
            subprocess.run(command, capture_output=True, timeout=REMOVE_SECONDS)
        except (OSError, subprocess.SubprocessError):
            pass
    return not os.path.lexists(path)


def sweep() -> list[str]:
    """Remove what killed grading runs left behind (sandbox folders, empty cgroups); what was removed."""
    removed = []
    for folder in SWEPT.glob("*-*") if SWEPT.is_dir() else ():
        pid = folder.name.split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists() and remove_tree(folder):
            removed.append(str(folder))
    count = _cgroups.sweep()
    return removed + ([f"{count} empty cgroups"] if count else [])


def describe() -> dict[str, str]:
    """Which isolation and limits are in force on this machine, in words.

    >>> sorted(describe())
    ['files', 'isolation', 'memory', 'output', 'processes', 'time']
    """
    lim, group = limits(), _cgroups.available()
    per_process = f"{lim['memory_gib'] - lim['files_mib'] / 1024:g} GiB of address space per process"
    if group:
        memory = f"{lim['memory_gib']:g} GiB for all its processes and files ({group}); {per_process}"
        processes = f"at most {lim['processes']:g} at once ({group} pids.max)"
    else:
        memory = f"{per_process} (no cgroup here: the processes together are not capped)"
        processes = ("not capped: no cgroup here, and RLIMIT_NPROC does not bind processes of root"
                     if os.geteuid() == 0 or isolation() == "none"
                     else f"at most {lim['processes']:g} at once (RLIMIT_NPROC in the sandbox's user namespace)")
    files = (f"/tmp {lim['files_mib'] * 3 / 4:g} MiB and /dev/shm {lim['files_mib'] / 4:g} MiB of memory; "
             "the rest read-only" if isolation() == "bubblewrap" else "the host's disk (no sandbox)")
    return {"isolation": isolation(), "memory": memory, "processes": processes, "files": files,
            "time": (f"{lim['part_seconds']:g} s a part, {lim['submission_seconds']:g} s a submission (wall clock), "
                     f"{lim['cpu_seconds']:g} CPU-s a part; its judge is killed {lim['judge_grace_seconds']:g} s "
                     "past the submission's time"),
            "output": (f"replies of at most {lim['frame_mib']:g} MiB, feedback of at most "
                       f"{lim['output_chars']:g} characters a part; judge: {lim['judge_memory_gib']:g} GiB")}


if __name__ == "__main__":
    for key, value in describe().items():
        print(f"{key:>10}: {value}")
