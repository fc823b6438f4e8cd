"""Run a function once per job, each in a process of its own, so that no job can take the others down.

Each job gets a process forked from the caller (which imported PyTorch and the
checks once), under an address-space limit and a wall-clock budget; at most
``workers`` run at once. A job that raises, exhausts its memory, dies or runs
past its budget is that job's failure alone: :func:`run_each` returns a
:class:`Failure` in its place, and the others' results are untouched. Results
cross back as JSON in a private folder, read only once the process has ended.

>>> run_each(lambda n: {"square": n * n}, [2, 3], workers=2, budget=60)
[{'square': 4}, {'square': 9}]
>>> [type(r).__name__ for r in run_each(lambda n: {"inverse": 1 / n}, [0, 4], workers=1, budget=60)]
['Failure', 'dict']
"""

from __future__ import annotations

import json
import os
import resource
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

WHY_CHARS = 300  # of the last line of a failed job's traceback, its one-line reason


@dataclass
class Failure:
    """Why a job gave no result (one line), and what it printed of its own traceback, if anything."""

    why: str
    log: str = ""


def _child(fn: Callable, job: object, out: Path, memory_bytes: int | None) -> None:
    """In the forked process: run ``fn(job)``, write its result, and leave without returning."""
    code = 0
    try:
        os.setpgid(0, 0)  # its own group, killed with it
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        text = json.dumps(fn(job))
        out.with_suffix(".tmp").write_text(text)
        out.with_suffix(".tmp").replace(out)
    except BaseException:  # reported to the parent through the log file
        code = 1
        try:
            out.with_suffix(".log").write_text(traceback.format_exc())
        except BaseException:  # nothing more can be said
            pass
    finally:
        os._exit(code)


def _ended(out: Path, status: int) -> dict | Failure:
    """The result a process left in ``out``, or why there is none."""
    try:
        return json.loads(out.read_text())
    except (OSError, ValueError):
        pass
    log = out.with_suffix(".log").read_text() if out.with_suffix(".log").exists() else ""
    if log:
        return Failure(log.strip().splitlines()[-1][:WHY_CHARS], log)
    code = os.waitstatus_to_exitcode(status)
    if code == -signal.SIGKILL:
        return Failure("the judge was killed (out of memory?)")
    return Failure(f"the judge ended without a result (exit {code})")


def run_each(fn: Callable[[Any], object], jobs: list, *, workers: int, budget: float,
             memory_bytes: int | None = None, poll: float = 0.05) -> list[dict | Failure]:
    """``[fn(job) for job in jobs]``, each call in a forked process of its own; a :class:`Failure` for a
    call that raises, dies or runs past ``budget`` seconds (it is killed with its process group)."""
    results: list[dict | Failure | None] = [None] * len(jobs)
    pending = list(enumerate(jobs))
    running: dict[int, tuple[int, float]] = {}  # pid -> (index, start)
    with tempfile.TemporaryDirectory(prefix="attnbook-judges-") as folder:
        outs = [Path(folder) / f"{index}.json" for index in range(len(jobs))]
        while pending or running:
            while pending and len(running) < workers:
                index, job = pending.pop(0)
                pid = os.fork()
                if pid == 0:
                    _child(fn, job, outs[index], memory_bytes)
                running[pid] = (index, time.monotonic())
            time.sleep(poll)
            for pid, (index, start) in list(running.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    del running[pid]
                    results[index] = _ended(outs[index], status)
                elif time.monotonic() - start > budget:
                    for target in (-pid, pid):  # its group, then itself if the group is gone
                        try:
                            os.kill(target, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                    os.waitpid(pid, 0)
                    del running[pid]
                    results[index] = Failure(f"the judge ran past its time budget ({budget:g} s) and was killed")
    return cast(list[dict | Failure], results)  # every job has ended: no None is left
