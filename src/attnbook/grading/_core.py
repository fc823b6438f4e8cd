"""Running the student's code and building the student's modules, in either of two places.

A check sees the student's objects in one of two forms, and this module hides
the difference:

* in the student's own kernel (the visible checks), the objects themselves:
  they run here, with stderr sent to stdout, warnings noted, and the part's
  references refused while they run (:func:`._refuse.refused`);
* in the judge, proxies of objects that live in the sandboxed worker
  (:class:`Proxy`; the grader's ``attnbook_course._remote.Remote``): a call sends data there and
  brings data back, and the worker refused the references before the
  notebook's cells ran (:func:`._refuse.refuse`, the same way).

Either way a failure of the student's code becomes a :class:`CheckFailed`
that says what happened in words, in the kernel with the line of the
student's cell that raised (:func:`student_line`). In the kernel a visible
case also runs under a time limit (:func:`time_limit`), so that a loop that
never ends fails the check instead of hanging the notebook; the judge's worker
has limits of its own. :func:`private_modules` gives the checks
their own copy of the reference modules, which a notebook that patches the
public ones does not change.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib
import signal
import sys
import threading
import time
import types
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, TypeGuard, cast

import torch

from .. import settings
from . import _refuse
from ._cells import student_line
from ._refuse import ReferenceCalled, refused
from .errors import CheckFailed


class Proxy(Protocol):
    """What a check calls on the judge's proxy of an object in the sandboxed worker (the grader's
    ``attnbook_course._remote.Remote``, which the students' package never ships)."""

    def __handle__(self) -> list: ...

    def remote_call(self, method: str | None, args: tuple, kwargs: dict, what: str) -> object: ...

    def parameter_shapes(self) -> list: ...

    def load_parameters(self, state: dict) -> None: ...


# What the part being checked refuses: (Part.forbidden, Part.kernels), set by Part while its cases run.
REFUSED: contextvars.ContextVar[tuple[tuple[str, ...], tuple[str, ...]]] = contextvars.ContextVar(
    "REFUSED", default=((), ()))


def private_modules(*names: str) -> tuple[types.ModuleType, ...]:
    """Fresh copies of attnbook modules ``names``, imported together, outside ``sys.modules``.

    The copies import each other (``attnbook.transformer`` gets the fresh
    ``attnbook.attention``), so a notebook that patched the public modules
    changes nothing in them and nothing needs re-wiring by hand.

    >>> (tr,) = private_modules("attnbook.transformer")
    >>> import attnbook.transformer
    >>> tr is attnbook.transformer, tr.MultiHeadAttention is attnbook.transformer.MultiHeadAttention
    (False, False)
    """
    def ours(key: str) -> bool:
        return (key == "attnbook" or key.startswith("attnbook.")) and not key.startswith("attnbook.grading")

    saved = {key: module for key, module in sys.modules.items() if ours(key)}
    for key in saved:
        del sys.modules[key]
    try:
        return tuple(importlib.import_module(name) for name in names)
    finally:
        for key in [key for key in sys.modules if ours(key)]:
            del sys.modules[key]
        sys.modules.update(saved)


# ------------------------------------------------------------- running code


def student_error(what: str, type_name: str, message: str, *, reference: str | None = None,
                  not_implemented: bool = False, line: str = "") -> CheckFailed:
    """The failure to report when the student's code raised (here or in the worker); ``line``: :func:`student_line`."""
    if not_implemented:
        return CheckFailed(f"{what} is not implemented yet (it raises NotImplementedError)")
    if reference is not None:
        return CheckFailed(f"{what} calls the reference implementation `{reference}`; write the computation "
                           "yourself", line=line)
    return CheckFailed(f"{what} raised {type_name}: {message}", line=line)


def note_warnings(what: str, messages: Iterable[str]) -> None:
    for message in sorted(set(messages)):
        print(f"note: {what} emitted a warning (not an error): {message}")


@contextlib.contextmanager
def _student_code(what: str) -> Iterator[None]:
    """Run the student's code inside: warnings noted on stdout, stderr sent to stdout, errors in words."""
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(sys.stdout):
        warnings.simplefilter("always")
        try:
            yield
        except OutOfTime as err:  # time_limit reports it; the innermost student's code running is the culprit
            err.what = err.what or what
            raise
        except ReferenceCalled as err:
            raise student_error(what, "", "", reference=str(err), line=student_line(err.__traceback__)) from None
        except Exception as err:  # the student's bug, reported in words
            raise student_error(what, type(err).__name__, str(err), line=student_line(err.__traceback__),
                                not_implemented=isinstance(err, NotImplementedError)) from None
    note_warnings(what, [str(w.message) for w in caught])


# --------------------------------------------------------------- time limit

LEAST_SECONDS = 10.0  # the least limit of a visible case; the slowest one takes about 0.2 s with the solution
CALIBRATION = 2000  # unset ATTNBOOK_VISIBLE_SECONDS: the limit is this many times a small torch workload


class OutOfTime(BaseException):
    """Raised in the student's code when a visible case runs past its limit (see :func:`time_limit`).

    Not an ``Exception``, so that neither ``except Exception`` in the
    student's code nor the checks' own handlers stop it.
    """

    what = ""  # the student's code that was running (set by _student_code), "" when it was the check's


def visible_seconds() -> float:
    """The time limit of one visible case: ``$ATTNBOOK_VISIBLE_SECONDS`` if set (0: none), else calibrated.

    The calibrated limit is ``max(10 s, 2000 times a small torch workload)``:
    10 s on a usual laptop, longer on a slow one, never short enough to fail a
    correct answer, only to end a loop that never does.
    """
    given = settings.VISIBLE_SECONDS.read()
    return _calibrated() if given is None else given


@functools.cache
def _calibrated() -> float:
    def workload() -> float:
        start, x = time.perf_counter(), torch.ones(64, 64)
        for _ in range(50):
            x = torch.softmax(x @ x.T / 64, dim=-1)
        return time.perf_counter() - start

    return max(LEAST_SECONDS, float(round(CALIBRATION * min(workload() for _ in range(3)))))


_GUARDS = ("_student_code", "time_limit")  # they turn OutOfTime into a failure: an alarm inside would cut that short


def _cleaning_up(frame: types.FrameType | None) -> bool:
    """Whether ``frame`` runs in (the undoing of) a refusal or in a guard's exit: no time to stop there."""
    while frame is not None:
        code = frame.f_code
        if code.co_filename == _refuse.__file__ or (code.co_filename == __file__ and code.co_name in _GUARDS):
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def time_limit(seconds: float | None, part: str, case: str) -> Iterator[None]:
    """Run the block, a visible case of ``part``, for ``seconds`` at most; then it fails with :class:`CheckFailed`.

    A SIGALRM handler raises :class:`OutOfTime` wherever the main thread is
    (again every second, should the student's code swallow it), except while
    a refusal is being undone; the previous handler and timer are restored.
    Python loops stop so; a single torch call runs to its end first, and a
    loop with a bare ``except:`` inside swallows every alarm (as it swallows
    Jupyter's interrupt). Where
    there is no SIGALRM (Windows) or the code runs outside the main thread,
    or when a sooner alarm is already set, the block runs without a limit.

    >>> import itertools
    >>> with time_limit(0.1, "check_loop", "one case"):  # doctest: +ELLIPSIS
    ...     for _ in itertools.count():
    ...         pass
    Traceback (most recent call last):
    attnbook.grading.errors.CheckFailed: check_loop: the check ran longer than 0.1 s on the visible case 'one case'; ...
    """
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGALRM) if usable else None  # None: a handler Python cannot restore
    outer = signal.getitimer(signal.ITIMER_REAL) if usable else (0.0, 0.0)
    if not seconds or previous is None or 0 < outer[0] <= seconds:
        yield
        return

    def ring(signum: int, frame: types.FrameType | None) -> None:
        if not _cleaning_up(frame):
            raise OutOfTime

    start, grad = time.monotonic(), torch.is_grad_enabled()
    signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    except OutOfTime as err:
        torch.set_grad_enabled(grad)  # in case the alarm came inside a no_grad block's exit
        culprit, line = err.what or "the check", student_line(err.__traceback__)
        raise CheckFailed(f"{part}: {culprit} ran longer than {seconds:g} s on the visible case '{case}'; "
                          f"look for a loop that never ends{line}") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer[0]:  # an outer alarm, later than ours: it goes on
            signal.setitimer(signal.ITIMER_REAL, max(outer[0] - (time.monotonic() - start), 1e-3), outer[1])


def _is_proxy(obj: object) -> TypeGuard[Proxy]:
    """Whether ``obj`` is the judge's proxy of a worker object (a :class:`Proxy`)."""
    return hasattr(obj, "__handle__")


def run_student(fn: object, *args: object, forbidden: Sequence[str] | None = None, what: str = "your function",
                **kwargs: object) -> object:
    """Call ``fn(*args, **kwargs)`` the safe way and return its result.

    Warnings are recorded and reported on stdout, stderr goes to stdout, the
    ``forbidden`` references (by default the current part's) and the part's
    kernels are refused while it runs, and
    any exception becomes a :class:`CheckFailed` that names its type and
    message. A proxy of a worker object is called in the worker.
    """
    if _is_proxy(fn):
        return fn.remote_call(None, args, kwargs, what)
    if not callable(fn):
        raise CheckFailed(f"{what} is not callable (got {type(fn).__name__}); did you run its cell?")
    names, kernels = REFUSED.get()
    with _student_code(what), refused(fn, names if forbidden is None else forbidden, kernels) as stub_for:
        result = stub_for(fn)(*args, **kwargs)  # `f = reference` is the reference itself
    return result


def run_method(module: torch.nn.Module, name: str, *args: object, forbidden: Sequence[str] | None = None,
               what: str, **kwargs: object) -> object:
    """``module.name(*args, **kwargs)`` the safe way (see :func:`run_student`).

    The references are refused in the module's classes and their methods'
    globals too, so that a method borrowed from the reference fails.
    """
    if _is_proxy(module):
        return module.remote_call(name, args, kwargs, what)
    names, kernels = REFUSED.get()
    method = getattr(module, name, None)
    if not callable(method):
        raise CheckFailed(f"{what} should be a method of the class (def {name}(self, ...)); it is missing")
    with _student_code(what), refused(module, names if forbidden is None else forbidden, kernels):
        result = getattr(module, name)(*args, **kwargs)
    return result


# ------------------------------------------------------------------ modules


def is_module(obj: object) -> bool:
    """Whether ``obj`` is an ``nn.Module`` here, or a proxy of one in the worker."""
    return isinstance(obj, torch.nn.Module) or bool(getattr(obj, "is_module", False))


def build_module(cls: object, *args: object, forbidden: Sequence[str] | None = None,
                 what: str = "your class") -> torch.nn.Module:
    """``cls(*args)`` built the safe way (see :func:`run_student`); it must be an ``nn.Module``."""
    module = run_student(cls, *args, forbidden=forbidden, what=what)
    if not is_module(module):
        raise CheckFailed(
            f"{what} should build a torch.nn.Module (subclass nn.Module and call super().__init__() "
            f"first), got {type(module).__name__}"
        )
    return cast(torch.nn.Module, module)  # or a proxy of one in the worker, which answers the same calls


def _listed(names: Sequence[str], most: int = 4) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def load_reference_parameters(module: torch.nn.Module, reference: torch.nn.Module, what: str) -> None:
    """Copy ``reference``'s parameters into the student's ``module``, by name.

    Both must have exactly the same parameter names and shapes -- so that
    either one's ``state_dict`` loads into the other -- or a failure names the
    missing and unexpected names (names are part of the task, never hidden).
    Buffers are ignored. ``nn.Module``'s own methods are called, never the
    student's overrides.
    """
    if _is_proxy(module):
        mine = {name: torch.empty(shape, device="meta") for name, shape in module.parameter_shapes()}
    else:
        mine = dict(torch.nn.Module.named_parameters(module))
    theirs = dict(torch.nn.Module.named_parameters(reference))
    missing = [name for name in theirs if name not in mine]
    extra = [name for name in mine if name not in theirs]
    if missing or extra:
        problems = ([f"missing {_listed(missing)}"] if missing else []) + (
            [f"unexpected {_listed(extra)}"] if extra else []
        )
        raise CheckFailed(
            f"{what} does not have the reference's parameter names ({'; '.join(problems)}), "
            "so weights cannot be copied between them; use the submodule names the exercise gives"
        )
    for name, param in theirs.items():
        if mine[name].shape != param.shape:
            raise CheckFailed(
                f"parameter {name} of {what} has the wrong shape; check which size goes where "
                "(nn.Linear(n_in, n_out) stores a weight of shape (n_out, n_in))"
            )
    if _is_proxy(module):
        module.load_parameters({name: param.detach() for name, param in theirs.items()})
        return
    with torch.no_grad():
        for name, param in theirs.items():
            mine[name].copy_(param)


def build_loaded(cls: object, args: tuple, reference: torch.nn.Module, dtype: torch.dtype, what: str,
                 signature: str = "") -> torch.nn.Module:
    """The student's ``cls(*args)`` in ``dtype``, with ``reference``'s parameters, in eval mode.

    ``what`` names the class in messages, ``signature`` its arguments, e.g.
    ``build_loaded(cls, (8, 2), ref, torch.float32, "ClsClassifier", "(hidden_size, num_labels)")``.
    """
    module = build_module(cls, *args, what=what + signature)
    run_method(module, "to", dtype, what=f"{what}.to")
    load_reference_parameters(module, reference, what)
    run_method(module, "eval", what=f"{what}.eval")
    return module
