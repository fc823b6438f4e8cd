"""In the student's own kernel: traps on the references while the student's code runs.

Only the visible checks a student runs in the notebook go through here; the
graded run keeps the references out of the worker's reach altogether
(:mod:`attnbook.grading._worker`). A trap turns a call of the reference into
:class:`ReferenceCalled`, which the check reports in words.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from ._wire import ReferenceCalled  # the worker's stubs raise the same class


def _resolve(path: str) -> tuple[types.ModuleType, str]:
    """'torch.nn.functional.softmax' -> (torch.nn.functional module, 'softmax')."""
    module_name, attr = path.rsplit(".", 1)
    return importlib.import_module(module_name), attr


def _holders(owner: types.ModuleType, attr: str, original: object) -> list[types.ModuleType]:
    """``owner`` and every loaded module of its package holding ``original`` as ``attr`` (a re-export).

    >>> import attnbook.gpt
    >>> names = [m.__name__ for m in _holders(attnbook.gpt, "generate", attnbook.gpt.generate)]
    >>> names[0], "attnbook.gpt.sampling" in names     # and any other loaded module that imported it
    ('attnbook.gpt', True)
    """
    root = owner.__name__.split(".")[0]
    return [owner] + [module for name, module in list(sys.modules.items())
                      if module is not None and module is not owner and name.split(".")[0] == root
                      and vars(module).get(attr) is original]


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
def references_trapped(fn: Callable, forbidden: Sequence[str]) -> Iterator[Callable[[Callable], Callable]]:
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
    package) is left alone. A compiled class (``tokenizers.Tokenizer``), whose
    methods cannot be replaced, is trapped by name, like a function.
    """
    restore: list[tuple[Any, str, object, bool]] = []  # (holder, key, old value, is mapping)

    def swap(holder: Any, key: str, new: object, *, mapping: bool) -> None:
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

    traps: dict[int, Callable] = {}  # id(original object) -> its trap
    functions = _student_functions(fn)  # found before any swap, so that no trap is mistaken for one
    classes = _student_classes(fn) if isinstance(fn, (type, torch.nn.Module)) else []
    try:
        for path in forbidden:
            owner, attr = _resolve(path)
            original = getattr(owner, attr)
            if isinstance(original, type) and not original.__module__.startswith(path.split(".", 1)[0]):
                continue  # not the reference: a class of the notebook's own under that name
            methods = {key: value for key, value in vars(original).items()
                       if isinstance(value, types.FunctionType)} if isinstance(original, type) else {}
            if methods:
                trap = make_trap(path)
                for key, value in methods.items():
                    swap(original, key, trap, mapping=False)
                    traps[id(value)] = trap
                continue
            # a function, or a compiled class whose methods cannot be replaced: the name itself is trapped
            trap = make_trap(path)
            for holder in _holders(owner, attr, original):
                swap(holder, attr, trap, mapping=False)
            traps[id(original)] = trap

        for cls in classes:  # methods borrowed as class attributes
            for key, value in list(vars(cls).items()):
                if id(value) in traps:
                    swap(cls, key, traps[id(value)], mapping=False)
        scopes: dict[int, dict[str, Any]] = {}
        cells: list[types.CellType] = []
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

        def resolve(obj: Callable) -> Callable:
            """The trap for ``obj`` if ``obj`` is (or wraps, with functools.partial) a reference, else ``obj``."""
            if isinstance(obj, functools.partial) and id(obj.func) in traps:
                return traps[id(obj.func)]
            return traps.get(id(obj), obj)

        yield resolve
    finally:
        for target, key, old, mapping in reversed(restore):
            if mapping:
                target[key] = old
            else:
                setattr(target, key, old)
