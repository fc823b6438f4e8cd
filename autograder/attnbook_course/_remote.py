"""The judge's end of the worker: start it, hand it a part, call the student's objects through proxies.

A :class:`Remote` stands in the judge for an object of the student's that
lives in the worker; ``run_student`` and friends route through
it, so the checks are the same code in the notebook and in the judge. What
comes back is data; changes the student's code made to its arguments are
copied back into the judge's arguments, and torch's random state travels both
ways, so a check sees what it would see in-process.

If the worker dies, breaks the protocol or runs past the part's deadline,
:class:`WorkerGone` ends the part (it is not a :class:`CheckFailed`: no case
of that part counts); :class:`CellsFailed` when that happened in the
notebook's cells, before the part's checks began. The worker is a process and
its protocol only: what a part reached (flags, forbidden references, limits)
comes back from :meth:`Worker.end_part` as a :class:`Report`, which the judge
keeps; nobody else writes the worker's fields.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, cast

import torch

from attnbook import settings
from attnbook.grading.seam import note_warnings, student_error

from . import _wire
from .notes import Note

QUIET = "(its message is not shown when earlier parts are replaced by the reference)"
REAP_SECONDS = 30  # a killed worker is waited for this long; one stuck in the kernel is reaped by the next wait


class WorkerGone(Exception):
    """The worker ended, broke the protocol or ran out of time; the message is the status to report."""


class TimedOut(WorkerGone):
    """The part's deadline passed while the judge waited for the worker."""


class CellsFailed(WorkerGone):
    """The notebook's cells ran out of time or ended the worker before the part's checks began; ``how``
    says which, for the later parts whose cells begin with the same ones."""

    def __init__(self, message: str, how: str):
        super().__init__(message)
        self.how = how


@dataclass
class Report:
    """What the student's code did in the worker since the last report: the notes for the submission
    (flags for review, limits reached) and the forbidden references it reached."""

    notes: list[Note] = field(default_factory=list)
    called: set[str] = field(default_factory=set)


def _exit_status(code: int) -> str:
    if code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT, 137):
        return f"memory limit exceeded or crashed (exit {code})"
    if code in (-signal.SIGXCPU, 152):
        return "time limit (CPU) exceeded"
    return f"the student's code ended the worker (exit {code})"


def _names(value: object, most: int = _wire.NOTES_KEPT, chars: int = _wire.NOTE_CHARS) -> list[str]:
    """The strings of a list the worker sent (flags, references reached, warnings), at most ``most`` of
    ``chars`` each: a forged reply cannot flood the status column or the feedback.

    >>> [len(name) for name in _names(["a", 3, "b" * 600])], _names("not a list")
    ([1, 500], [])
    """
    if not isinstance(value, list):
        return []
    return [v[:chars] for v in value if isinstance(v, str)][:most]


class Remote:
    """The judge's proxy of a student's function, class or module instance in the worker."""

    def __init__(self, worker: Worker, handle: int, is_module: bool):
        self.worker, self.handle, self.is_module = worker, handle, is_module

    def __handle__(self) -> list:
        return [self.handle, self.is_module]

    def remote_call(self, method: str | None, args: tuple, kwargs: dict, what: str) -> object:
        return self.worker.call(self, method, args, kwargs, what)

    def parameter_shapes(self) -> list:
        return cast(list, self.worker.call(self, "$parameters", (), {}, "the module"))  # [[name, shape], ...]

    def load_parameters(self, state: dict) -> None:
        self.worker.call(self, "$load", (state,), {}, "the module")


def _mirror(old: object, new: object) -> None:
    """Make ``old`` (the judge's argument) equal to ``new`` (it after the student's call), in place."""
    if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor):
        with torch.no_grad():
            if old.shape == new.shape and old.dtype == new.dtype:
                if not torch.equal(old.detach(), new):
                    old.copy_(new)
            else:
                old.data = new
    elif isinstance(old, torch.Generator) and isinstance(new, torch.Generator):
        old.set_state(new.get_state())
    elif isinstance(old, list) and isinstance(new, list):
        if len(old) == len(new) and all(isinstance(o, (torch.Tensor, list, dict)) for o in old):
            for o, n in zip(old, new, strict=True):
                _mirror(o, n)
        elif old != new:
            old[:] = new
    elif isinstance(old, (tuple, dict)) and type(old) is type(new) and len(old) == len(new):
        for key in (range(len(old)) if isinstance(old, tuple) else old.keys() & cast(dict, new).keys()):
            _mirror(old[key], new[key])


def _with_gradients(result: torch.Tensor, args: tuple, grads: dict) -> torch.Tensor:
    """``result`` made differentiable in the judge: d result / d args[i] = grads[i] (a 0-dim loss)."""
    out = result.detach()
    for index, grad in grads.items():
        x = args[int(index)]
        link = (x * _wire.decode(grad).to(x.dtype)).sum()
        out = out + (link - link.detach()).to(out.dtype)
    return out


class Worker:
    """One sandboxed worker process (see :mod:`._worker`), talking over its stdin and stdout."""

    def __init__(self, command: list[str], *, cwd: str, env: dict, part_timeout: float,
                 preexec: Callable[[], object] | None = None,
                 max_frame: int = int(settings.GRADING_FRAME_MIB.default * 2**20),
                 start_timeout: float = settings.GRADING_SUBMISSION_SECONDS.default) -> None:
        self.command, self.cwd, self.env, self.part_timeout = command, cwd, env, part_timeout
        self.start_timeout = start_timeout  # the most a start may take (within the submission's deadline)
        self.preexec = preexec  # run in the worker before it starts: its resource limits
        self.max_frame = max_frame  # the largest reply read from the worker, in bytes
        self.proc: subprocess.Popen | None = None
        self.deadline = 0.0
        self.report = Report()  # since the last end_part
        self.quiet = False  # this part's: leave what the student's code raises or warns out of the feedback
        self.preload: set[str] = set()  # heavy modules a child imported: the host loads them before the next

    # -------------------------------------------------------------- process

    def _start(self, end_by: float) -> None:
        """Start the worker and wait for its hello, sent once it has imported what every part needs. That
        start (bubblewrap, torch, pyplot) is the grader's time: within the submission's deadline, in no
        part's, so that a busy machine does not cost a student's first part its time."""
        self.proc = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=self.preexec)
        os.set_blocking(self._pipes()[0].fileno(), False)  # writes wait in select, until the deadline
        self.deadline = min(end_by, time.monotonic() + self.start_timeout)
        try:
            hello = self._receive()
        except TimedOut:
            raise WorkerGone("the worker did not start in time") from None
        if hello != {"hello": True}:
            self.close()
            raise WorkerGone("the worker broke the protocol")

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        """The worker's stdin and stdout; :class:`WorkerGone` once it has been closed."""
        if self.proc is None or self.proc.stdin is None or self.proc.stdout is None:
            raise WorkerGone("the worker is gone")
        return self.proc.stdin, self.proc.stdout

    def close(self) -> None:
        """Kill the worker and everything it started (its process group; bubblewrap's pid namespace)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=REAP_SECONDS)
            except subprocess.TimeoutExpired:  # a process stuck in the kernel: reaped by the next wait
                self.report.notes.append(Note("review", "the worker did not end when killed"))
            for pipe in (self.proc.stdin, self.proc.stdout):
                if pipe is not None:
                    pipe.close()
            self.proc = None

    def _send(self, message: dict) -> None:
        try:
            _wire.send(self._pipes()[0].fileno(), message, deadline=self.deadline)
        except TimeoutError:
            self.close()
            raise TimedOut("time limit exceeded") from None
        except OSError:
            raise WorkerGone("the worker is gone") from None

    def _receive(self, *, exit_expected: bool = False) -> dict:
        """The worker's next frame, whole, before the part's deadline (the judge's clock)."""
        try:
            message = _wire.receive(self._pipes()[1].fileno(), deadline=self.deadline, max_bytes=self.max_frame)
        except TimeoutError:
            self.close()
            raise TimedOut("time limit exceeded") from None
        except (EOFError, OSError, _wire.WireError) as err:
            self.close()
            raise WorkerGone(f"the worker broke off ({err})") from None
        if "exit" in message and not exit_expected:
            code = message["exit"]
            raise WorkerGone(_exit_status(code) if isinstance(code, int) else "the worker broke the protocol")
        return message

    # ---------------------------------------------------------------- parts

    def start_part(self, package: tuple[dict, list], cells: list[str], names: list[str],
                   kernels: list[str], refused: list[str], *, in_calls: list[str] | None = None,
                   end_by: float = float("inf"), quiet: bool = False) -> dict:
        """Run ``cells`` in a fresh child with ``package`` as attnbook and ``refused`` and ``kernels``
        refused (:func:`._refuse.refuse`), ``in_calls`` too while the student's functions run (not in the
        cells); return name -> proxy (or None). The part ends by ``end_by``
        (the submission's deadline, ``time.monotonic()``'s) at the latest; a ``quiet`` part leaves what
        the student's code raises or warns out of its feedback. :class:`CellsFailed` when the cells fail."""
        if self.proc is None:
            self._start(end_by)
        self.quiet = quiet
        self.deadline = min(time.monotonic() + self.part_timeout, end_by)
        sources, packages = package
        self._send({"op": "part", "package": sources, "packages": packages, "cells": cells, "names": names,
                    "kernels": kernels, "refused": refused, "in_calls": in_calls or [],
                    "preload": sorted(self.preload)})
        try:
            reply = self._receive()
        except TimedOut:
            raise CellsFailed("time limit exceeded in the notebook's cells",
                              f"ran past the time limit ({self.part_timeout:g} s)") from None
        except WorkerGone as gone:
            raise CellsFailed(str(gone), f"could not run ({gone})") from None
        self.report.notes += [Note("review", f"the notebook {flag}") for flag in _names(reply.get("flags"))]
        self.report.called.update(_names(reply.get("called")))
        ready = reply.get("ready")
        if not isinstance(ready, dict) or set(ready) != set(names):
            self.close()
            raise WorkerGone("the worker broke the protocol")
        return {name: _wire.decode(value, remote=self._proxy) for name, value in ready.items()}

    def end_part(self) -> Report:
        """End the current child; return what the part reached (:meth:`take_report`). A worker that does
        not answer is killed."""
        if self.proc is not None:
            try:
                self._send({"op": "end"})
                bye = self._receive()
                self.report.called.update(_names(bye.get("called")))
                self.preload.update(name for name in _names(bye.get("imported")) if name in _wire.PRELOADS)
                if self._receive(exit_expected=True).get("exit") != 0:
                    self.close()
            except WorkerGone:
                self.close()
        return self.take_report()

    def take_report(self) -> Report:
        """What the student's code did since the last report (a part, or a :meth:`close`), and a new one."""
        report, self.report = self.report, Report()
        return report

    def _proxy(self, handle: int, is_module: bool) -> Remote:
        return Remote(self, handle, is_module)

    def call(self, target: Remote, method: str | None, args: tuple, kwargs: dict, what: str) -> object:
        """``target.method(*args, **kwargs)`` in the worker; the result as data (or proxies)."""
        self._send({"op": "call", "target": target.handle, "method": method, "args": _wire.encode(list(args)),
                    "kwargs": _wire.encode(kwargs), "rng": _wire.encode(torch.get_rng_state())})
        reply = self._receive()
        if "error" in reply:
            error = reply["error"]
            if not isinstance(error, dict):
                self.close()
                raise WorkerGone("the worker broke the protocol")
            named = _names([error.get("reference")])
            reference = named[0] if named else None
            if error.get("memory"):
                self.report.notes.append(Note("limit", "memory limit exceeded"))
            if reference:
                self.report.called.add(reference)
            message = QUIET if self.quiet else str(error.get("message"))[:_wire.ERROR_CHARS]
            raise student_error(what, str(error.get("type"))[:_wire.ERROR_TYPE_CHARS], message,
                                line=str(error.get("line") or "")[:_wire.LINE_CHARS],
                                reference=reference, not_implemented=bool(error.get("not_implemented")))
        try:
            result = _wire.decode(reply["result"], remote=self._proxy)
            for old, new in zip(args, _wire.decode(reply["args"], remote=self._proxy), strict=True):
                _mirror(old, new)
            _mirror(kwargs, _wire.decode(reply["kwargs"], remote=self._proxy))
            torch.set_rng_state(_wire.decode(reply["rng"]))
        except (KeyError, TypeError, ValueError, RuntimeError) as err:
            self.close()
            raise WorkerGone(f"the worker sent malformed data ({type(err).__name__})") from None
        if not self.quiet:
            note_warnings(what, _names(reply.get("warnings")))
        if reply.get("grads") and type(result) is torch.Tensor:
            result = _with_gradients(result, args, reply["grads"])
        return result
