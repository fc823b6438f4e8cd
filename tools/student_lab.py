"""Set up JupyterLab in an environment for students: MyST pages open as notebooks, no instructor panels.

    python tools/student_lab.py               # into this Python's environment (make install runs it)
    python tools/student_lab.py --instructor  # undo: nbgrader's instructor panels shown again

It writes three files under the environment's prefix (``sys.prefix``), each
JupyterLab's documented place for its kind of setting:

* ``share/jupyter/lab/settings/overrides.json``: a chapter's ``.md`` page opens
  with jupytext's notebook view (a double click runs it as a notebook, not as
  Markdown text);
* ``etc/jupyter/labconfig/page_config.json``: nbgrader's "Create Assignment"
  toolbar, formgrader and course list are disabled (the student's
  "Assignments" list and "Validate" button stay);
* ``etc/jupyter/jupyter_server_config.d/zz-attnbook-student.json``: the server
  side of the formgrader and course list is off too.

Other keys in the first two files are kept. ``jupyter labextension list`` and
``jupyter server extension list`` show the result.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

VIEWER = "Jupytext Notebook"  # jupytext's notebook view of a text file
INSTRUCTOR_PLUGINS = ["@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader",
                      "@jupyter/nbgrader:course-list"]
INSTRUCTOR_SERVER = ["nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list"]
DOCMANAGER = "@jupyterlab/docmanager-extension:plugin"


def _update(path: Path, change) -> None:
    """Read the JSON object at ``path`` (or ``{}``), apply ``change`` to it, write it back."""
    data = json.loads(path.read_text()) if path.exists() else {}
    change(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def configure(prefix: Path, student: bool = True) -> list[Path]:
    """Write (``student``) or undo the student set-up under ``prefix``; the files touched.

    >>> import tempfile
    >>> prefix = Path(tempfile.mkdtemp())
    >>> [p.relative_to(prefix).as_posix() for p in configure(prefix)][0]
    'share/jupyter/lab/settings/overrides.json'
    >>> page = prefix / "etc/jupyter/labconfig/page_config.json"
    >>> json.loads(page.read_text())["disabledExtensions"]  # doctest: +NORMALIZE_WHITESPACE
    {'@jupyter/nbgrader:course-list': True, '@jupyter/nbgrader:create-assignment': True,
     '@jupyter/nbgrader:formgrader': True}
    >>> _ = configure(prefix, student=False)
    >>> json.loads(page.read_text())["disabledExtensions"]
    {}
    """
    overrides = prefix / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    page_config = prefix / "etc" / "jupyter" / "labconfig" / "page_config.json"
    server = prefix / "etc" / "jupyter" / "jupyter_server_config.d" / "zz-attnbook-student.json"

    def viewers(data: dict) -> None:
        views = data.setdefault(DOCMANAGER, {}).setdefault("defaultViewers", {})
        for kind in ("markdown", "myst"):
            if student:
                views[kind] = VIEWER
            elif views.get(kind) == VIEWER:
                del views[kind]

    def panels(data: dict) -> None:
        disabled = data.setdefault("disabledExtensions", {})
        for plugin in INSTRUCTOR_PLUGINS:
            if student:
                disabled[plugin] = True
            else:
                disabled.pop(plugin, None)

    _update(overrides, viewers)
    _update(page_config, panels)
    if student:
        server.parent.mkdir(parents=True, exist_ok=True)
        off = {name: False for name in INSTRUCTOR_SERVER}
        server.write_text(json.dumps({"ServerApp": {"jpserver_extensions": off}}, indent=2) + "\n")
    else:
        server.unlink(missing_ok=True)
    return [overrides, page_config, server]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instructor", action="store_true", help="undo: show nbgrader's instructor panels")
    args = parser.parse_args(argv)
    for path in configure(Path(sys.prefix), student=not args.instructor):
        print(f"{'wrote' if path.exists() else 'removed'} {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
