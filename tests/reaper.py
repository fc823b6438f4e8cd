"""Run a command as a child subreaper: what it leaves running is found, and killed, by pid — never by name.

A test that grades hostile answers must show that no process outlives the run, without looking at the
rest of the machine (another grading run may be going beside it). Run as a script,

    python tests/reaper.py REPORT -- COMMAND...

it marks itself a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every orphan of COMMAND's process tree
is re-parented to it rather than to init; when COMMAND exits, every process still below it is one the run
left behind. Their command lines go to REPORT (one a line), they are killed and reaped, and the exit
status is COMMAND's. :func:`run` does this from a test:

>>> done, strays = run([sys.executable, "-c", "print('hello')"], capture_output=True, text=True)
>>> done.returncode, done.stdout, strays
(0, 'hello\\n', [])
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _children(pid: int, zombies: bool = False) -> list[int]:
    """The live children of ``pid`` (``zombies``: the exited ones not yet reaped), read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # it exited meanwhile
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]  # the name, in parentheses, may hold spaces
        if int(ppid) == pid and (state == "Z") == zombies:
            found.append(int(entry))
    return found


def _reap(keep: int | None = None) -> None:
    """Reap the orphans that exited (all but ``keep``, the command itself, which Popen waits for)."""
    for pid in _children(os.getpid(), zombies=True):
        if pid != keep:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _command_line(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
    return " ".join(words.split())  # one line


def main(report: str, command: list[str]) -> int:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    proc = subprocess.Popen(command)
    while proc.poll() is None:  # orphans that exit meanwhile (a sandbox's bwrap) are reaped as they go
        _reap(keep=proc.pid)
        time.sleep(0.5)
    code = proc.returncode
    time.sleep(0.5)  # orphans of the last moment are re-parented by now
    _reap()
    strays = []
    for _ in range(10):  # killing a stray's parent re-parents its children to us: look again
        found = _children(os.getpid())
        if not found:
            break
        for pid in found:
            strays.append(f"{pid} {_command_line(pid)}")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
        _reap()
    Path(report).write_text("".join(f"{line}\n" for line in strays))
    return code


def run(command: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``subprocess.run(command, **kwargs)`` under the reaper; (its result, what it left running)."""
    fd, report = tempfile.mkstemp(prefix="reaper-", suffix=".txt")
    os.close(fd)
    try:
        done = subprocess.run([sys.executable, __file__, report, "--", *command], **kwargs)
        return done, Path(report).read_text().splitlines()
    finally:
        os.unlink(report)


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: python tests/reaper.py REPORT -- COMMAND...")
    sys.exit(main(sys.argv[1], sys.argv[3:]))
