"""Refusing the references: one list, one way, wherever the student's code runs.

A part lists what its student's code may not reach (``Part.forbidden``: dotted
names of functions and classes; ``Part.kernels``: aten operators). Refusing
one means replacing it by a stub that calls :func:`reference_called`, which
raises :class:`ReferenceCalled` (the check says so in words) and notes the
name (the judge's review flag). :func:`refuse` does it for names and kernels:

* a function, or a compiled class whose methods cannot be replaced
  (``tokenizers.Tokenizer``), is replaced under its name in every loaded module
  that holds it (``scipy.optimize.linear_sum_assignment`` is also
  ``scipy.optimize._lsap.linear_sum_assignment``);
* a Python class keeps its name, so that ``isinstance`` still works, but every
  method it defines becomes the stub: building an instance, calling one made
  earlier, inheriting or borrowing ``Class.forward`` all fail. A class found
  under the name that is not the reference (``__module__`` outside the name's
  package, and not a compiled class) is the notebook's own and left alone;
* an aten operator gets a raising kernel for every backend, so that every
  route to it fails (``F.scaled_dot_product_attention``, ``torch.ops.aten...``).

The same :func:`refuse` runs in both places:

* in the graded worker (:mod:`._worker`), once, before the notebook's cells,
  for good. There the attnbook references are also *absent*: the judge sends
  the worker attnbook's source with their bodies replaced by the same stub
  (:func:`stripped`), because a name replaced at run time leaves the original
  in memory and in its source, where ``importlib.reload`` or ``gc`` find it.
  Names outside attnbook (torch's, SciPy's) have no source to strip;
* in the student's own kernel (the visible checks), around each call of the
  student's code, and undone after (:func:`refused`): the notebook keeps the
  references for its other cells. Aliases the notebook made before the call
  (in its functions' globals and closures, borrowed methods) are replaced too.
  This is feedback, not a barrier: the grade comes from the worker.

Standard library and torch only: the worker imports this file from the
sandbox, beside :mod:`._wire`, before (and without) any of attnbook.

>>> import json
>>> refusal = refuse(["json.dumps"])
>>> try:
...     json.dumps(1)
... except ReferenceCalled as err:
...     print("refused:", err)
... finally:
...     refusal.undo()
refused: json.dumps
>>> json.dumps(1)
'1'
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn

import torch

# The backends an operator's raising kernel is registered for: CompositeImplicitAutograd catches an
# operator that decomposes (scaled_dot_product_attention), CPU and CUDA one with a kernel of its own
# (_scaled_dot_product_flash_attention_for_cpu, _native_multi_head_attention), in inference mode too.
KERNEL_KEYS = ("CompositeImplicitAutograd", "CPU", "CUDA")


class ReferenceCalled(RuntimeError):
    """Raised when the student's code reaches a refused reference; the message is its name."""


CALLED: list[str] = []  # what the student's code reached, for the judge's review flags


def reference_called(path: str) -> NoReturn:
    """What every stub of a refused reference does: note the call and raise."""
    CALLED.append(path)
    raise ReferenceCalled(path)


def _stub(path: str) -> Callable[..., NoReturn]:
    def stub(*args: object, **kwargs: object) -> NoReturn:
        reference_called(path)

    return stub


def _resolve(path: str) -> tuple[types.ModuleType, str]:
    """'torch.nn.functional.softmax' -> (torch.nn.functional module, 'softmax')."""
    module_name, attr = path.rsplit(".", 1)
    return importlib.import_module(module_name), attr


def _holders(owner: types.ModuleType, attr: str, original: object) -> list[types.ModuleType]:
    """``owner`` and every loaded module holding ``original`` as ``attr`` (a re-export).

    >>> import attnbook.gpt
    >>> names = [m.__name__ for m in _holders(attnbook.gpt, "generate", attnbook.gpt.generate)]
    >>> names[0], "attnbook.gpt.sampling" in names     # and any other loaded module that imported it
    ('attnbook.gpt', True)
    """
    return [owner] + [module for module in list(sys.modules.values())
                      if module is not owner and vars(module).get(attr) is original
                      if isinstance(module, types.ModuleType)]


def _methods(cls: type) -> dict[str, types.FunctionType]:
    return {key: value for key, value in vars(cls).items() if isinstance(value, types.FunctionType)}


class Refusal:
    """What :func:`refuse` replaced: ``stubs`` maps id(original) to its stub; :meth:`undo` puts them back.

    ``undoable=False`` (the worker) keeps no original, so that nothing the
    student's code can find holds them.
    """

    def __init__(self, *, undoable: bool):
        self.undoable = undoable
        self.stubs: dict[int, Callable] = {}
        self._restore: list[tuple[Any, str, object, bool]] = []  # (holder, key, old value, is mapping)
        self._libraries: list[Any] = []  # torch.library.Library registrations: refused kernels
        self._done: dict[int, object] = {}  # the objects refused, and their stubs, by id (while refusing)

    def swap(self, holder: Any, key: str, new: object, *, mapping: bool = False) -> None:
        if self.undoable:
            old = holder[key] if mapping else (vars(holder)[key] if isinstance(holder, type) else getattr(holder, key))
            self._restore.append((holder, key, old, mapping))
        if mapping:
            holder[key] = new
        else:
            setattr(holder, key, new)

    def refuse_name(self, path: str) -> None:
        owner, attr = _resolve(path)
        original = getattr(owner, attr)
        if id(original) in self._done:
            return  # the same object under another name (or its stub): refused already
        methods = _methods(original) if isinstance(original, type) else {}
        if isinstance(original, type) and methods and not original.__module__.startswith(path.split(".")[0]):
            return  # not the reference: a class of the notebook's own under that name
        stub = _stub(path)
        self._done.update({id(original): original, id(stub): stub})
        if methods:
            for key, value in methods.items():
                self.swap(original, key, stub)
                self.stubs[id(value)] = stub
            return
        for holder in _holders(owner, attr, original):
            self.swap(holder, attr, stub)
        self.stubs[id(original)] = stub

    def refuse_kernels(self, names: Iterable[str]) -> None:
        library = torch.library.Library("aten", "IMPL")
        self._libraries.append(library)  # the registrations last as long as the object
        for name in names:
            stub = _stub(f"torch's {name} kernel")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for key in KERNEL_KEYS:
                    library.impl(name, stub, key)

    def sweep(self, functions: Iterable[types.FunctionType], classes: Iterable[type]) -> None:
        """Replace the student's own aliases of refused objects: in the ``functions``' globals and closures,
        and methods borrowed as attributes of ``classes``."""
        for cls in classes:
            for key, value in list(vars(cls).items()):
                if id(value) in self.stubs:
                    self.swap(cls, key, self.stubs[id(value)])
        scopes: dict[int, dict[str, Any]] = {}
        cells: list[types.CellType] = []
        for function in functions:
            scopes[id(function.__globals__)] = function.__globals__
            cells += function.__closure__ or ()
        for scope in scopes.values():
            for key, value in list(scope.items()):
                if id(value) in self.stubs and callable(value):
                    self.swap(scope, key, self.stubs[id(value)], mapping=True)
        for cell in cells:
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if id(value) in self.stubs and callable(value):
                self.swap(cell, "cell_contents", self.stubs[id(value)])

    def stub_for(self, obj: Callable) -> Callable:
        """The stub for ``obj`` if ``obj`` is (or wraps, with functools.partial) a reference, else ``obj``."""
        if isinstance(obj, functools.partial) and id(obj.func) in self.stubs:
            return self.stubs[id(obj.func)]
        return self.stubs.get(id(obj), obj)

    def undo(self) -> None:
        for library in reversed(self._libraries):
            library._destroy()
        self._libraries.clear()
        for target, key, old, mapping in reversed(self._restore):
            if mapping:
                target[key] = old
            else:
                setattr(target, key, old)
        self._restore.clear()


def refuse(names: Iterable[str], kernels: Iterable[str] = (), *, undoable: bool = True) -> Refusal:
    """Refuse the dotted ``names`` and the aten operators ``kernels`` (see the module's docstring)."""
    refusal = Refusal(undoable=undoable)
    try:
        for path in names:
            refusal.refuse_name(path)
        if kernels:
            refusal.refuse_kernels(kernels)
    except BaseException:
        refusal.undo()
        raise
    refusal._done.clear()
    if not undoable:  # nothing left that leads back to an original
        refusal.stubs.clear()
    return refusal


# -------------------------------------------------- the student's kernel


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
def refused(student: object, names: Iterable[str],
            kernels: Iterable[str] = ()) -> Iterator[Callable[[Callable], Callable]]:
    """:func:`refuse` while the student's code ``student`` runs, with its aliases; undone afterwards.

    ``student`` is a function, a class or an ``nn.Module`` instance: the
    globals and closures of its functions (of its classes' methods) are
    searched for aliases such as ``from attnbook.attention import
    scaled_dot_product_attention as ref``. The context yields
    :meth:`Refusal.stub_for`, for a ``student`` that *is* the reference
    (``my_function = reference``, or a ``functools.partial`` of it).
    """
    functions = _student_functions(student)  # found before any stub exists, so that none is taken for one
    classes = _student_classes(student) if isinstance(student, (type, torch.nn.Module)) else []
    refusal = refuse(names, kernels)
    try:
        refusal.sweep(functions, classes)
        yield refusal.stub_for
    finally:
        refusal.undo()


# ---------------------------------------------------------- the worker's attnbook


def _stub_body(path: str) -> list[ast.stmt]:
    return ast.parse(f"import _refuse\n_refuse.reference_called({path!r})").body


def stripped(source: str, module: str, names: dict[str, str]) -> str:
    """``source`` with the functions and classes ``names`` reduced to stubs that raise (for the worker).

    ``names`` maps each name defined in ``module`` to the path its stub
    reports (the forbidden path as the part spells it). A class keeps its
    name and its methods' names, each with the stub as its body.

    >>> print(stripped("def f(x):\\n    return x + 1", "m", {"f": "m.f"}))
    def f(x):
        import _refuse
        _refuse.reference_called('m.f')
    """
    tree, found = ast.parse(source), set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            node.body, node.decorator_list = _stub_body(names[node.name]), []
            found.add(node.name)
        elif isinstance(node, ast.ClassDef) and node.name in names:
            methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for item in methods:
                item.body, item.decorator_list = _stub_body(names[node.name]), []
            node.body = [ast.Pass(), *methods]
            found.add(node.name)
    if names.keys() - found:
        raise ValueError(f"forbidden names not defined in {module}: {sorted(names.keys() - found)}")
    return ast.unparse(tree)
