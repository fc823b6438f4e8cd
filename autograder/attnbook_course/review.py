"""Code in a submission that deserves a human look: the review flags of ``attnbook-course grade`` (never penalised).

Each of a student's cells is read as Python (its syntax tree), so that a flag
does not depend on how the code is spelled: a module reached through
``__import__("bu" + "iltins")``, ``getattr`` with a computed name, an alias
of torch, or a write into ``globals()`` is flagged as the plain words are.
A cell that is not Python (an IPython magic) is searched for the plain words.

>>> flags(['__import__("bu" + "iltins").len = lambda x: 3'])
['edits modules']
>>> flags(["t = torch\\nsetattr(t, 'all' + 'close', lambda *a, **k: True)"])
['patches torch']
>>> flags(["def f(x):\\n    return torch.softmax(x, dim=-1)"])
[]
"""

from __future__ import annotations

import ast
import re

# The plain words, for a cell that does not parse (and the names of the flags, in the order reported).
WORDS = {
    "patches torch": re.compile(r"^\s*torch(\.\w+)+\s*=(?!=)", re.M),
    "touches the grader": re.compile(r"attnbook\.grading|nbgrader", re.M),
    "edits modules": re.compile(r"sys\.modules|builtins|importlib", re.M),
    "runs code built from strings": re.compile(r"\b(exec|eval|compile)\s*\(", re.M),
}
TORCH = {"torch", "F", "nn"}  # the notebooks' own imports cell binds these
MODULES = {"sys", "builtins", "importlib", "os", "math"}
_DUNDERS = {"__builtins__", "__globals__", "__subclasses__", "__code__", "__loader__", "__spec__", "__import__"}
_NAMESPACES = {"globals", "vars", "locals"}
_WRITES = {"update", "setdefault", "__setitem__", "pop", "clear"}


def flags(cells: list[str]) -> list[str]:
    """The flags (names of :data:`WORDS`) that the code of ``cells`` raises, in :data:`WORDS` order."""
    found: set[str] = set()
    for source in cells:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):  # not Python: an IPython magic, a shell line
            found |= {name for name, words in WORDS.items() if words.search(source)}
            continue
        found |= _Reader(tree).found
        found |= {name for name in ("touches the grader", "edits modules") if WORDS[name].search(source)}
    return [name for name in WORDS if name in found]


class _Reader(ast.NodeVisitor):
    """Walks one cell's tree, tracking which names stand for torch or another module."""

    def __init__(self, tree: ast.AST):
        self.torch, self.modules, self.found = set(TORCH), set(MODULES), set[str]()
        for node in ast.walk(tree):  # aliases first: `import torch as t` anywhere in the cell
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    root = (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
                    bound = alias.asname or alias.name.split(".")[0]
                    (self.torch if root.split(".")[0] == "torch" else self.modules).add(bound)
            elif (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and self._root(node.value) is not None):
                (self.torch if self._root(node.value) == "torch" else self.modules).add(node.targets[0].id)
        self.visit(tree)

    def _root(self, node: ast.AST) -> str | None:
        """"torch" or "module" when ``node`` is (an attribute of) a name bound to one, or ``__import__(…)``."""
        while isinstance(node, ast.Attribute):
            node = node.value
        if isinstance(node, ast.Name):
            return "torch" if node.id in self.torch else "module" if node.id in self.modules else None
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)):
            name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            return "module" if name in ("__import__", "import_module") else None
        return None

    def _written(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._written(t)
        elif isinstance(target, ast.Attribute) and self._root(target) is not None:
            self.found.add("patches torch" if self._root(target) == "torch" else "edits modules")
        elif isinstance(target, ast.Subscript):
            inner = target.value
            while isinstance(inner, ast.Subscript):  # globals()["__builtins__"]["len"] = ...
                inner = inner.value
            if self._namespace(inner) or self._root(inner) is not None:
                self.found.add("edits modules")

    def _namespace(self, node: ast.AST) -> bool:
        """``globals()``, ``vars(...)``, ``locals()`` or ``x.__dict__``."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return node.func.id in _NAMESPACES
        return isinstance(node, ast.Attribute) and node.attr == "__dict__"

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._written(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._written(node.target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._written(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._written(target)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self._namespace(node.value) and not isinstance(node.slice, ast.Constant):
            self.found.add("edits modules")  # globals()[a computed name]
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in _DUNDERS:
            self.found.add("edits modules")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in _DUNDERS:
            self.found.add("edits modules")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if name in ("exec", "eval", "compile"):
            self.found.add("runs code built from strings")
        elif name in ("setattr", "delattr") and node.args and self._root(node.args[0]) is not None:
            self.found.add("patches torch" if self._root(node.args[0]) == "torch" else "edits modules")
        elif (name == "getattr" and len(node.args) >= 2 and self._root(node.args[0]) is not None
              and not isinstance(node.args[1], ast.Constant)):
            self.found.add("edits modules")  # a module's name computed: what the plain words would show is hidden
        elif isinstance(func, ast.Attribute) and func.attr in _WRITES and self._namespace(func.value):
            self.found.add("edits modules")
        self.generic_visit(node)
