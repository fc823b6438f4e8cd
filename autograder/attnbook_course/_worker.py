"""The student's side of grading: run a submission's cells, then the calls the judge asks for.

Started by the judge inside the sandbox as ``python -I _worker.py --processes N`` (N: the
process cap, :data:`_wire.PROCESSES_FLAG`; without it, outside bubblewrap, none), beside copies
of ``_wire.py``, ``_refuse.py`` and ``_cells.py``; it never sees the judge's code, the
references of the part being judged, or any file of the course. The process imports torch,
pyplot and IPython's shell once (the *host*: no cell runs in it), then forks one child per
graded part:

1. the child imports ``attnbook`` from sources the judge sends for that part
   only, in which the part's references are stubs that raise (they are absent,
   not hidden: no alias, clone, source file or reload brings them back), and
   refuses the part's other names (torch's, SciPy's, ...) and aten kernels
   with :func:`_refuse.refuse`, as the student's kernel does around its calls;
2. it runs the notebook's cells up to the part's test cell in an IPython shell
   (a cell that raises does not stop the others, as in nbgrader);
3. it answers the judge's calls: each one runs a student function on decoded
   data and sends back the result, the arguments as they are afterwards (so
   that changes in place show), torch's random state, warnings and errors;
4. it exits when the judge ends the part, naming the heavy modules of
   :data:`_wire.PRELOADS` it imported; the host reports its exit status, kills
   whatever processes it left, and imports those modules before the next part's
   child when the judge asks (``preload``): a library is loaded once, not per part.

In the sandbox (``_wire.SCRATCH_FLAG``), the host also ends every process an
earlier part left and empties ``/tmp`` and ``/dev/shm`` before each part
(:func:`fresh_scratch`): a part sees only what its own statement allows, never
a copy of a reference that an earlier part's process could read and leave.

The protocol is :mod:`_wire`'s frames on the file descriptors that were stdin
and stdout, opened by the host's ``{"hello": true}`` once it has started; the
student's own output goes to /dev/null.
"""

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import resource
import shutil
import signal
import sys
import time
import types
import warnings
from typing import TYPE_CHECKING

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Imported once here, not in every part's child: pyplot (most notebooks plot), and what torch.broadcast_shapes
# imports when first called (symbolic_shapes and SymPy, 0.3 s), which the attention modules call.
import matplotlib.pyplot  # noqa: F401
import torch
import torch.fx.experimental.symbolic_shapes  # noqa: F401
from IPython.core.interactiveshell import InteractiveShell

if TYPE_CHECKING:  # mypy reads the packages' copies; the sandbox imports the ones beside this file
    from attnbook.grading.seam import cells as _cells
    from attnbook.grading.seam import refusal as _refuse
    from attnbook_course import _wire
else:
    import _cells
    import _refuse
    import _wire

if _wire.PROCESSES_FLAG in sys.argv[1:]:  # in the sandbox, whose user namespace counts only its own processes
    _cap = int(sys.argv[sys.argv.index(_wire.PROCESSES_FLAG) + 1])
    resource.setrlimit(resource.RLIMIT_NPROC, (_cap, _cap))

PROTOCOL_IN, PROTOCOL_OUT = os.dup(0), os.dup(1)
_null = os.open(os.devnull, os.O_RDWR)
for _fd in (0, 1, 2):
    os.dup2(_null, _fd)

MODULE_METHODS = {"eval", "train", "double", "float", "to", "requires_grad_", "zero_grad"}
SCRATCH = ("/tmp", "/dev/shm")  # the sandbox's only writable folders: memory of its own


def _others() -> list[int]:
    """The live processes of the sandbox's pid namespace but its init (1) and this host."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in (1, os.getpid()):
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    if fh.read().rpartition(")")[2].split()[0] != "Z":  # a zombie writes nothing
                        found.append(int(entry))
            except OSError:  # ended meanwhile
                pass
    return found


def fresh_scratch() -> None:
    """End every process an earlier part left in the sandbox, then empty its writable folders."""
    deadline = time.monotonic() + 5
    while (left := _others()) and time.monotonic() < deadline:
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    for folder in SCRATCH:
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                try:
                    os.unlink(entry.path)
                except OSError:
                    pass


class Package(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``attnbook`` from the sources the judge sent (module name -> source)."""

    def __init__(self, sources: dict, packages: list):
        self.sources, self.packages = sources, set(packages)

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name not in self.sources:
            return None  # not attnbook, or a module the worker's copy leaves out
        return importlib.util.spec_from_loader(name, self, is_package=name in self.packages)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        exec(compile(self.sources[module.__name__], f"<{module.__name__}>", "exec"), module.__dict__)


def _error(err: BaseException) -> dict:
    message = str(err)
    memory = isinstance(err, MemoryError) or "can't allocate memory" in message
    return {"type": type(err).__name__, "message": message[:_wire.ERROR_CHARS], "memory": memory,
            "reference": message if isinstance(err, _refuse.ReferenceCalled) else None,
            "not_implemented": isinstance(err, NotImplementedError), "line": _cells.student_line(err.__traceback__)}


def _gradients(result: object, args: list) -> dict:
    """For a scalar result with a graph: its gradient with respect to each argument that requires grad."""
    inputs = {i: a for i, a in enumerate(args) if isinstance(a, torch.Tensor) and a.requires_grad}
    if not (inputs and type(result) is torch.Tensor and result.dim() == 0 and result.grad_fn is not None):
        return {}
    grads = torch.autograd.grad(result, list(inputs.values()), allow_unused=True)
    return {str(i): _wire.encode(g) for i, g in zip(inputs, grads, strict=True) if g is not None}


def _module_op(obj: torch.nn.Module, op: str, args: list) -> object:
    if op == "$parameters":
        return [[name, list(p.shape)] for name, p in torch.nn.Module.named_parameters(obj)]
    if op == "$load":
        params = dict(torch.nn.Module.named_parameters(obj))
        with torch.no_grad():
            for name, value in args[0].items():
                params[name].copy_(value)
        return None
    return getattr(torch.nn.Module, op)(obj, *args)


def call(request: dict, handles: dict, in_calls: list[str]) -> dict:
    """Run one call the judge asked for, with ``in_calls`` refused while it runs, and describe what happened."""
    target = handles[request["target"]]
    args = _wire.decode(request["args"], handles=handles)
    kwargs = _wire.decode(request["kwargs"], handles=handles)
    torch.set_rng_state(_wire.decode(request["rng"]))
    method = request["method"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if method is not None and (method in MODULE_METHODS or method.startswith("$")):
                result = _module_op(target, method, args)
            else:
                with _refuse.refused(target, in_calls) if in_calls else contextlib.nullcontext():
                    result = (target if method is None else getattr(target, method))(*args, **kwargs)
            reply = {"result": _wire.encode(result, handles=handles), "grads": _gradients(result, args)}
        except BaseException as err:  # SystemExit and KeyboardInterrupt are the student's too
            return {"error": _error(err)}
    reply.update(args=_wire.encode(list(args), handles=handles), kwargs=_wire.encode(kwargs, handles=handles),
                 rng=_wire.encode(torch.get_rng_state()),
                 warnings=sorted({str(w.message)[:_wire.NOTE_CHARS]
                                  for w in caught[:10 * _wire.NOTES_KEPT]})[:_wire.NOTES_KEPT])
    return reply


def _tamper_marks() -> dict:
    import builtins
    return {"torch": {n: id(getattr(torch, n, None)) for n in ("allclose", "equal", "softmax", "randn", "Tensor")},
            "builtins": {n: id(getattr(builtins, n, None)) for n in ("print", "isinstance", "type", "__import__")}}


def serve_part(part: dict, shell: InteractiveShell) -> None:
    """One graded part, in a forked child: import, run the cells in the host's ``shell`` (as fresh
    as the host made it), answer calls until the judge ends."""
    os.setpgid(0, 0)
    torch.set_num_threads(1)
    sys.meta_path.insert(0, Package(part["package"], part["packages"]))
    refusal = _refuse.refuse(part["refused"], part["kernels"], undoable=False)  # noqa: F841 - kept alive
    before = _tamper_marks()
    for source in part["cells"]:
        shell.run_cell(source, store_history=False)
    handles: dict = {}
    names = {name: _wire.encode(shell.user_ns.get(name), handles=handles) for name in part["names"]}
    after = _tamper_marks()
    flags = [f"changes {group}" for group in before if before[group] != after[group]]
    _wire.send(PROTOCOL_OUT, {"ready": names, "flags": flags, "called": sorted(set(_refuse.CALLED))})
    while True:
        request = _wire.receive(PROTOCOL_IN)
        if request.get("op") != "call":
            imported = [name for name in _wire.PRELOADS if name in sys.modules]
            _wire.send(PROTOCOL_OUT, {"bye": True, "called": sorted(set(_refuse.CALLED)), "imported": imported})
            return
        _wire.send(PROTOCOL_OUT, call(request, handles, [n for n in part.get("in_calls", []) if isinstance(n, str)]))


def main() -> None:
    """The host: fork a child per part the judge sends, report how it ended."""
    shell = InteractiveShell.instance()  # no cell ever runs here: each child gets it clean
    shell.InteractiveTB.set_mode(mode="Plain")  # a cell's traceback goes to /dev/null: not worth its 0.1-1 s
    _wire.send(PROTOCOL_OUT, {"hello": True})  # started: the parts' clocks begin after this
    while True:
        try:
            part = _wire.receive(PROTOCOL_IN)
        except EOFError:
            return
        for name in part.get("preload", []):
            if name in _wire.PRELOADS:  # the judge sends no other: checked again where it is imported
                try:
                    importlib.import_module(name)
                except Exception:  # the child will meet the same error, as the student's code
                    pass
        if _wire.SCRATCH_FLAG in sys.argv[1:]:
            fresh_scratch()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                serve_part(part, shell)
            except BaseException:  # reported to the judge as an exit status
                code = 70
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        try:
            os.killpg(pid, signal.SIGKILL)  # whatever the part left running
        except ProcessLookupError:
            pass
        _wire.send(PROTOCOL_OUT, {"exit": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    main()
