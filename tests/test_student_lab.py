"""The students' JupyterLab, as `make install` sets it up: MyST pages open as notebooks, no instructor panels.

Checked in the environment itself (tools/student_lab.py ran at install): what
``jupyter labextension list`` and ``jupyter server extension list`` report, and
the settings a running JupyterLab serves to the browser.
"""

import doctest
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
_spec = importlib.util.spec_from_file_location("student_lab", ROOT / "tools" / "student_lab.py")
student_lab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(student_lab)


def test_the_set_up_and_its_undo_write_what_they_say():
    assert doctest.testmod(student_lab).failed == 0


def jupyter(*args: str) -> str:
    done = subprocess.run([str(BIN / "jupyter"), *args], capture_output=True, text=True, timeout=120)
    return done.stdout + done.stderr


def test_instructor_panels_are_off_in_this_environment():
    listed = jupyter("labextension", "list")
    disabled = listed.split("Disabled extensions:")[-1]
    for plugin in student_lab.INSTRUCTOR_PLUGINS:
        assert plugin in disabled, listed
    assert "@jupyter/nbgrader:assignment-list" not in disabled  # the student's own list stays
    server = jupyter("server", "extension", "list")
    for name in student_lab.INSTRUCTOR_SERVER:
        line = next(line for line in server.splitlines() if line.strip().startswith(name + " "))
        assert "disabled" in line, server
    assert any("assignment_list" in line and "enabled" in line for line in server.splitlines())


@pytest.mark.slow
def test_jupyterlab_serves_markdown_pages_with_the_notebook_view(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = "attnbook-test"
    lab = subprocess.Popen([str(BIN / "jupyter"), "lab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
                            f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={ROOT}",
                            "--allow-root"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)})
    url = f"http://127.0.0.1:{port}/lab/api/settings/@jupyterlab/docmanager-extension:plugin?token={token}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    settings = json.load(response)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not answer")
    finally:
        lab.terminate()
        lab.wait(timeout=30)
    viewers = settings["schema"]["properties"]["defaultViewers"]["default"]
    assert viewers["markdown"] == viewers["myst"] == student_lab.VIEWER
