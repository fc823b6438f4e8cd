"""The judge's end of the worker: start it, hand it a part, call the student's objects through proxies.

A :class:`Remote` stands in the judge for an object of the student's that
lives in the worker; :mod:`._core` routes ``run_student`` and friends through
it, so the checks are the same code in the notebook and in the judge. What
comes back is data; changes the student's code made to its arguments are
copied back into the judge's arguments, and torch's random state travels both
ways, so a check sees what it would see in-process.

If the worker dies, breaks the protocol or runs past the part's deadline,
:class:`WorkerGone` ends the part (it is not a :class:`CheckFailed`: no case
of that part counts).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time

import torch

from . import _wire
from ._core import note_warnings, student_error


class WorkerGone(Exception):
    """The worker ended, broke the protocol or ran out of time; the message is the status to report."""


class TimedOut(WorkerGone):
    """The part's deadline passed while the judge waited for the worker."""


def _exit_status(code: int) -> str:
    if code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT, 137):
        return f"memory limit exceeded or crashed (exit {code})"
    if code in (-signal.SIGXCPU, 152):
        return "time limit (CPU) exceeded"
    return f"the student's code ended the worker (exit {code})"


class Remote:
    """The judge's proxy of a student's function, class or module instance in the worker."""

    def __init__(self, worker: Worker, handle: int, is_module: bool):
        self.worker, self.handle, self.is_module = worker, handle, is_module

    def __handle__(self) -> list:
        return [self.handle, self.is_module]

    def remote_call(self, method: str | None, args: tuple, kwargs: dict, what: str):
        return self.worker.call(self, method, args, kwargs, what)

    def parameter_shapes(self) -> list:
        return self.worker.call(self, "$parameters", (), {}, "the module")

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
            for o, n in zip(old, new):
                _mirror(o, n)
        elif old != new:
            old[:] = new
    elif isinstance(old, (tuple, dict)) and type(old) is type(new) and len(old) == len(new):
        for key in (range(len(old)) if isinstance(old, tuple) else old.keys() & new.keys()):
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

    def __init__(self, command: list[str], *, cwd: str, env: dict, part_timeout: float, preexec=None):
        self.command, self.cwd, self.env, self.part_timeout = command, cwd, env, part_timeout
        self.preexec = preexec  # run in the worker before it starts: its resource limits
        self.proc: subprocess.Popen | None = None
        self.deadline = 0.0
        self.statuses: list[str] = []  # what went wrong, for the status column
        self.called: set[str] = set()  # forbidden references the student's code reached
        self.slow_cells: list[str] | None = None  # the cells that ran out of time before their part began

    # -------------------------------------------------------------- process

    def _start(self) -> None:
        self.proc = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=self.preexec)

    def close(self) -> None:
        """Kill the worker and everything it started (its process group; bubblewrap's pid namespace)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            for pipe in (self.proc.stdin, self.proc.stdout):
                pipe.close()
            self.proc = None

    def _send(self, message: dict) -> None:
        try:
            _wire.send(self.proc.stdin.fileno(), message)
        except OSError:
            raise WorkerGone("the worker is gone") from None

    def _receive(self, *, exit_expected: bool = False) -> dict:
        fd = self.proc.stdout.fileno()
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            self.close()
            raise TimedOut("time limit exceeded")
        try:
            message = _wire.receive(fd)
        except (EOFError, _wire.WireError) as err:
            self.close()
            raise WorkerGone(f"the worker broke off ({err})") from None
        if "exit" in message and not exit_expected:
            raise WorkerGone(_exit_status(int(message["exit"])))
        return message

    # ---------------------------------------------------------------- parts

    def start_part(self, package: tuple[dict, list], cells: list[str], names: list[str],
                   kernels: list[str], trapped: list[str]) -> dict:
        """Run ``cells`` in a fresh child with ``package`` as attnbook; return name -> proxy (or None)."""
        if self.proc is None:
            self._start()
        self.deadline = time.monotonic() + self.part_timeout
        sources, packages = package
        self._send({"op": "part", "package": sources, "packages": packages, "cells": cells, "names": names,
                    "kernels": kernels, "torch": trapped})
        try:
            reply = self._receive()
        except TimedOut:
            self.slow_cells = list(cells)
            raise TimedOut("time limit exceeded in the notebook's cells") from None
        self.statuses += [f"review: the notebook {flag}" for flag in reply.get("flags", [])]
        self.called.update(reply.get("called", []))
        return {name: _wire.decode(value, remote=self._proxy) for name, value in reply["ready"].items()}

    def end_part(self) -> None:
        """End the current child; note what it reached. A worker that does not answer is killed."""
        if self.proc is None:
            return
        try:
            self._send({"op": "end"})
            self.called.update(self._receive().get("called", []))
            if self._receive(exit_expected=True).get("exit") != 0:
                self.close()
        except WorkerGone:
            self.close()

    def _proxy(self, handle: int, is_module: bool) -> Remote:
        return Remote(self, handle, is_module)

    def call(self, target: Remote, method: str | None, args: tuple, kwargs: dict, what: str):
        """``target.method(*args, **kwargs)`` in the worker; the result as data (or proxies)."""
        self._send({"op": "call", "target": target.handle, "method": method, "args": _wire.encode(list(args)),
                    "kwargs": _wire.encode(kwargs), "rng": _wire.encode(torch.get_rng_state())})
        reply = self._receive()
        if "error" in reply:
            error = reply["error"]
            if error.get("memory"):
                self.statuses.append("memory limit exceeded")
            if error.get("reference"):
                self.called.add(error["reference"])
            raise student_error(what, str(error["type"]), str(error["message"]), reference=error["reference"],
                                not_implemented=bool(error["not_implemented"]))
        try:
            result = _wire.decode(reply["result"], remote=self._proxy)
            for old, new in zip(args, _wire.decode(reply["args"], remote=self._proxy)):
                _mirror(old, new)
            _mirror(kwargs, _wire.decode(reply["kwargs"], remote=self._proxy))
            torch.set_rng_state(_wire.decode(reply["rng"]))
        except (KeyError, TypeError, ValueError, RuntimeError) as err:
            self.close()
            raise WorkerGone(f"the worker sent malformed data ({type(err).__name__})") from None
        note_warnings(what, [str(w) for w in reply.get("warnings", [])])
        if reply.get("grads") and type(result) is torch.Tensor:
            result = _with_gradients(result, args, reply["grads"])
        return result
