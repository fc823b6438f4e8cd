"""A worker's grading process: it imports the grader once, then forks a child per job that runs
``attnbook-course grade`` (:func:`..course.main`), so that a job pays for its grading, not for starting
Python, importing PyTorch and nbgrader, probing the sandbox and hashing the grader again.

The worker (:mod:`.worker`) starts it with ``python -m attnbook_course.service.forkserver`` and writes one
JSON request a line, ``{"argv": [...], "log": PATH}``; for each it forks, the child writes what ``grade``
prints to ``PATH`` and exits with ``grade``'s status, and this process answers ``{"rc": N}`` on a line.
It and each child are killed when their parent dies. The grader's hash is computed once: a worker is
restarted when the course's checkout changes.

>>> request = json.loads('{"argv": ["--help"], "log": "/dev/null"}')
>>> sorted(request)
['argv', 'log']
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
from collections.abc import Iterable
from typing import TextIO


def _die_with_parent() -> None:
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _child(argv: list[str], log: str) -> None:
    """In the forked child: ``grade``, its output to ``log``; never returns."""
    code = 1
    try:
        _die_with_parent()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        from .. import course

        code = course.main(argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # what grade raised goes to the log, as a traceback would
        import traceback

        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve(requests: Iterable[str], replies: TextIO) -> None:
    """Answer each request line of ``requests`` on ``replies`` until the input ends."""
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request["argv"], request["log"])
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n")
        replies.flush()


def main() -> None:
    """Warm what every grading needs, then :func:`serve` stdin and stdout."""
    _die_with_parent()
    from .. import classgrade, feedback_pages, gradecache, judging, sandbox  # noqa: F401 (imported to be warm)

    sandbox.isolation()
    gradecache._grader()
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # nothing the warm-up prints may reach the replies
    serve(sys.stdin, replies)


if __name__ == "__main__":
    main()
