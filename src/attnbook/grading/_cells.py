"""Where an error passed through the student's notebook cell: the kernel's checks and the sandboxed worker
both end their message with it. It imports nothing of the package, so that the worker can import it beside
its own file (``sandbox.prepare`` copies it there).
"""

from __future__ import annotations

import linecache
import re
import types

# How IPython names a cell's code: ipykernel >= 6 (/tmp/ipykernel_<pid>/<hash>.py), plain IPython (<ipython-input-…>).
_CELL_FILE = re.compile(r"[/\\]ipykernel_\d+[/\\]\w+\.py$|^<ipython-input-\d+-\w+>$")


def student_line(tb: types.TracebackType | None, width: int = 80) -> str:
    """Where ``tb`` last passed through the student's notebook cell, to end a message; "" if it never did.

    The innermost frame compiled from a cell counts (the check's frames and
    torch's do not), so an error raised inside torch points at the student's
    call. The text comes from ``linecache``, where IPython keeps its cells:

    >>> import linecache
    >>> name = "/tmp/ipykernel_123/4567.py"
    >>> source = "def f(x):\\n    return x[5]\\n"
    >>> linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    >>> namespace = {}
    >>> exec(compile(source, name, "exec"), namespace)
    >>> try:
    ...     namespace["f"]([1, 2])
    ... except IndexError as err:
    ...     print(student_line(err.__traceback__))
     (line 2 of your cell: `return x[5]`)
    >>> del linecache.cache[name]
    """
    found = ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if _CELL_FILE.search(name):
            text = linecache.getline(name, tb.tb_lineno).strip()
            text = text if len(text) <= width else text[:width - 3] + "..."
            found = f" (line {tb.tb_lineno} of your cell" + (f": `{text}`)" if text else ")")
        tb = tb.tb_next
    return found
