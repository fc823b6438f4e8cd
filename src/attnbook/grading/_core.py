"""The machinery that every exercise check shares.

A check calls the student's function on a list of cases and compares it with a
private copy of the reference. Three rules keep grades right under nbgrader:

* nothing reaches stderr (nbgrader scores a test cell that wrote to stderr
  zero), so the student's code runs with warnings recorded and stderr
  redirected to stdout;
* a failure raises :class:`CheckFailed` whose message names the concept, never
  a hidden input or an expected value;
* while the student's code runs, the reference it is compared with is replaced
  by a trap, wherever the student's code may reach it (the module attribute,
  the student's globals, closures and classes); a reference *class* has its
  methods replaced, so building, inheriting or borrowing it cannot pass either.

An exercise that asks for a class is checked through :func:`build_module`
(the student's constructor, run the safe way) and
:func:`load_reference_parameters` (the reference's weights copied in by
parameter name), so that both compute with the same weights.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import math
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch


class CheckFailed(AssertionError):
    """A graded check failed; the message explains the mistake in words."""


class ReferenceCalled(RuntimeError):
    """Raised inside the student's code when it calls a forbidden reference."""


# ---------------------------------------------------------------- references


def fresh_module(name: str) -> types.ModuleType:
    """A private copy of module ``name``, loaded from its file and not in ``sys.modules``.

    The checker computes expected values with this copy, so that patching the
    public module in a notebook (``attnbook.attention.f = my_f``) changes
    nothing for the checker.
    """
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ImportError(f"cannot find module {name!r}")
    spec = importlib.util.spec_from_file_location(f"_attnbook_grading_copy.{name}", spec.origin)
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs only: @dataclass looks its module up in sys.modules.
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def _resolve(path: str) -> tuple[object, str]:
    """'torch.nn.functional.softmax' -> (torch.nn.functional module, 'softmax')."""
    module_name, attr = path.rsplit(".", 1)
    return importlib.import_module(module_name), attr


def _student_classes(obj: object) -> list[type]:
    """The classes through which ``obj`` (a class or an instance) runs code, torch's and attnbook's left out.

    For an ``nn.Module`` instance: the classes of it and of all its
    submodules, with their bases.
    """
    objects = list(torch.nn.Module.modules(obj)) if isinstance(obj, torch.nn.Module) else [obj]
    classes = {}
    for item in objects:
        for cls in (item if isinstance(item, type) else type(item)).__mro__:
            if not cls.__module__.startswith(("torch", "attnbook", "builtins")):
                classes[id(cls)] = cls
    return list(classes.values())


def _student_functions(obj: object) -> list[types.FunctionType]:
    """The Python functions through which ``obj`` (a function, class or module instance) runs code."""
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType):
        return [obj]
    if not isinstance(obj, (type, torch.nn.Module)):
        return []
    return [
        fn for cls in _student_classes(obj) for value in vars(cls).values()
        for fn in [getattr(value, "__func__", value)] if isinstance(fn, types.FunctionType)
    ]


@contextlib.contextmanager
def references_trapped(fn: Callable, forbidden: Sequence[str]):
    """Replace each dotted name in ``forbidden`` by a trap while ``fn`` runs.

    A function is replaced in its module, and in every place in the globals
    and closures of ``fn`` that holds the same object, so an alias made with
    ``from attnbook.attention import scaled_dot_product_attention as ref`` is
    trapped too. ``fn`` may also be a class or an ``nn.Module`` instance: then
    the globals and closures of the methods of its classes are searched, and
    the classes themselves (``forward = Reference.forward`` borrows a method).
    The context yields ``resolve(obj)``, which maps a reference (or a
    ``functools.partial`` of one) to its trap, for an ``fn`` that *is* the
    reference (``my_function = reference``).

    A class (``attnbook.attention.MultiHeadAttention``,
    ``torch.nn.MultiheadAttention``) keeps its name, so that ``isinstance``
    still works, but every method it defines itself (``__init__``, ``forward``,
    helpers) becomes a trap: building an instance, calling one made earlier,
    inheriting from the class or calling ``Class.forward(self, ...)`` all
    fail. Only the real reference is trapped: a class found under that name
    that was defined in the notebook (``__module__`` outside the reference's
    package) is left alone.
    """
    restore: list[tuple[object, str, object, bool]] = []  # (holder, key, old value, is mapping)

    def swap(holder: object, key: str, new: object, *, mapping: bool) -> None:
        old = holder[key] if mapping else (vars(holder)[key] if isinstance(holder, type) else getattr(holder, key))
        restore.append((holder, key, old, mapping))
        if mapping:
            holder[key] = new
        else:
            setattr(holder, key, new)

    def make_trap(path: str) -> Callable:
        def trap(*args, **kwargs):
            raise ReferenceCalled(path)

        return trap

    traps = {}  # id(original object) -> its trap
    functions = _student_functions(fn)  # found before any swap, so that no trap is mistaken for one
    classes = _student_classes(fn) if isinstance(fn, (type, torch.nn.Module)) else []
    try:
        for path in forbidden:
            owner, attr = _resolve(path)
            original = getattr(owner, attr)
            if isinstance(original, type):
                if not original.__module__.startswith(path.split(".", 1)[0]):
                    continue  # not the reference: a class of the notebook's own under that name
                trap = make_trap(path)
                for key, value in list(vars(original).items()):
                    if isinstance(value, types.FunctionType):
                        swap(original, key, trap, mapping=False)
                        traps[id(value)] = trap
                continue
            trap = make_trap(path)
            swap(owner, attr, trap, mapping=False)
            traps[id(original)] = trap

        for cls in classes:  # methods borrowed as class attributes
            for key, value in list(vars(cls).items()):
                if id(value) in traps:
                    swap(cls, key, traps[id(value)], mapping=False)
        scopes, cells = {}, []
        for function in functions:
            scopes[id(function.__globals__)] = function.__globals__
            cells += function.__closure__ or ()
        for scope in scopes.values():
            for key, value in list(scope.items()):
                if id(value) in traps and callable(value):
                    swap(scope, key, traps[id(value)], mapping=True)
        for cell in cells:
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if id(value) in traps and callable(value):
                swap(cell, "cell_contents", traps[id(value)], mapping=False)

        def resolve(obj: object) -> object:
            """The trap for ``obj`` if ``obj`` is (or wraps, with functools.partial) a reference, else ``obj``."""
            if isinstance(obj, functools.partial) and id(obj.func) in traps:
                return traps[id(obj.func)]
            return traps.get(id(obj), obj)

        yield resolve
    finally:
        for holder, key, old, mapping in reversed(restore):
            if mapping:
                holder[key] = old
            else:
                setattr(holder, key, old)


# ------------------------------------------------------------- running code


@contextlib.contextmanager
def _student_code(what: str):
    """Run the student's code inside: warnings noted on stdout, stderr sent to stdout, errors in words.

    Any exception becomes a :class:`CheckFailed` that names its type and message.
    """
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stderr(sys.stdout):
        warnings.simplefilter("always")
        try:
            yield
        except NotImplementedError:
            raise CheckFailed(f"{what} is not implemented yet (it raises NotImplementedError)") from None
        except ReferenceCalled as err:
            raise CheckFailed(
                f"{what} calls the reference implementation `{err}`; write the computation yourself"
            ) from None
        except Exception as err:  # the student's bug, reported in words
            raise CheckFailed(f"{what} raised {type(err).__name__}: {err}") from None
    for w in {str(w.message) for w in caught}:
        print(f"note: {what} emitted a warning (not an error): {w}")


def run_student(fn: Callable, *args, forbidden: Sequence[str] = (), what: str = "your function", **kwargs):
    """Call ``fn(*args, **kwargs)`` the safe way and return its result.

    Warnings are recorded and reported on stdout, stderr goes to stdout, the
    ``forbidden`` references are trapped, and any exception becomes a
    :class:`CheckFailed` that names its type and message.
    """
    if not callable(fn):
        raise CheckFailed(f"{what} is not callable (got {type(fn).__name__}); did you run its cell?")
    with _student_code(what), references_trapped(fn, forbidden) as resolve:
        result = resolve(fn)(*args, **kwargs)  # `f = reference` is the reference itself
    return result


def run_method(module: torch.nn.Module, name: str, *args, forbidden: Sequence[str] = (), what: str, **kwargs):
    """``module.name(*args, **kwargs)`` the safe way (see :func:`run_student`).

    The references are trapped in the module's classes and their methods'
    globals, so that a method borrowed from the reference fails too.
    """
    method = getattr(module, name, None)
    if not callable(method):
        raise CheckFailed(f"{what} should be a method of the class (def {name}(self, ...)); it is missing")
    with _student_code(what), references_trapped(module, forbidden):
        result = getattr(module, name)(*args, **kwargs)
    return result


# ------------------------------------------------------------- comparisons


def _tolerance(dtype: torch.dtype) -> float:
    return 1e-9 if dtype == torch.float64 else 1e-4


def max_abs_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    """Largest absolute difference, computed in float64 (NaN/inf count as infinitely far)."""
    diff = (a.detach().to("cpu", torch.float64) - b.detach().to("cpu", torch.float64)).abs()
    value = diff.max().item() if diff.numel() else 0.0
    return value if math.isfinite(value) else math.inf


def close(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype | None = None) -> bool:
    """Whether ``a`` and ``b`` have one shape and agree to the tolerance of ``dtype``."""
    if tuple(a.shape) != tuple(b.shape):
        return False
    tol = _tolerance(dtype or b.dtype)
    scale = max(1.0, b.detach().abs().max().item() if b.numel() else 0.0)
    return max_abs_diff(a, b) <= tol * scale


def verify_toolkit() -> None:
    """Fail loudly if the torch functions the checker relies on were tampered with.

    Cheap canaries with answers known by hand: a patched ``torch.allclose``,
    ``softmax`` or tensor arithmetic in the notebook would make them fail.
    """
    x = torch.tensor([0.0, math.log(3.0)], dtype=torch.float64)
    ok = (
        max_abs_diff(torch.zeros(3), torch.ones(3)) == 1.0
        and max_abs_diff(x, x) == 0.0
        and abs(torch.softmax(x, dim=0)[1].item() - 0.75) < 1e-12
        and not torch.allclose(torch.zeros(2), torch.ones(2))
        and abs((torch.eye(2, dtype=torch.float64) @ x).sum().item() - math.log(3.0)) < 1e-12
        and type(torch.zeros(1)) is torch.Tensor
    )
    if not ok:
        raise CheckFailed(
            "torch functions that the checker needs were modified in this notebook; "
            "restart the kernel, remove the code that patches torch, and run all cells again"
        )


def require_tensor(x: object, what: str) -> torch.Tensor:
    """``x`` if it is a plain ``torch.Tensor`` (not a subclass), else a clear failure."""
    if type(x) is not torch.Tensor:
        raise CheckFailed(f"{what} should be a torch.Tensor, got {type(x).__name__}")
    return x


# ------------------------------------------------------------------ modules


def build_module(cls: object, *args, forbidden: Sequence[str] = (), what: str = "your class") -> torch.nn.Module:
    """``cls(*args)`` built the safe way (see :func:`run_student`); it must be an ``nn.Module``."""
    module = run_student(cls, *args, forbidden=forbidden, what=what)
    if not isinstance(module, torch.nn.Module):
        raise CheckFailed(
            f"{what} should build a torch.nn.Module (subclass nn.Module and call super().__init__() "
            f"first), got {type(module).__name__}"
        )
    return module


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
    with torch.no_grad():
        for name, param in theirs.items():
            mine[name].copy_(param)


# ------------------------------------------------------------ scoring cases


@dataclass(frozen=True)
class Case:
    """One input the checker tries: a name for grouping, a maker, and a weight."""

    group: str  # a concept, e.g. "masks"; failures are reported per group
    make: Callable[[], tuple]  # returns the arguments for the student's function
    weight: float = 1.0


def score_cases(
    cases: Iterable[Case], check_one: Callable[..., None], points: float | None
) -> float | None:
    """Run ``check_one(*case.make())`` on every case and turn the results into a grade.

    ``points=None`` (the visible check): stop at the first failure and raise
    it; return ``None`` when everything passes. With ``points`` (the hidden
    test): run every case, report each failing group once, and return the
    points earned, ``points`` times the passed share of the weights, so that
    nbgrader gives partial credit. A score of zero raises instead of returning
    0, so a check never fails silently.
    """
    verify_toolkit()
    cases = list(cases)
    if not cases:
        raise ValueError("no cases to check")
    if points is None:
        for case in cases:
            check_one(*case.make())
        print(f"All {len(cases)} visible checks passed.")
        return None
    earned, total, failures = 0.0, 0.0, {}
    for case in cases:
        total += case.weight
        try:
            check_one(*case.make())
            earned += case.weight
        except CheckFailed as err:
            failures.setdefault(case.group, str(err))
    if not failures:
        print(f"All {len(cases)} checks passed.")
        return float(points)
    report = "\n".join(f"- {group}: {msg}" for group, msg in failures.items())
    if earned == 0:
        raise CheckFailed(f"no check passed:\n{report}")
    print(f"Some checks failed:\n{report}")
    return round(points * earned / total, 2)
