"""Headless Chromium for the tests: a page's DOM once its scripts have run.

>>> CHROMIUM is None or Path(CHROMIUM).exists()
True
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
# Offline and quiet: no background connections, no first-run, no GPU (as root, no sandbox).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--no-first-run", "--disable-quic"]


def dom_after_load(page: Path, budget_ms: int = 3000) -> str:
    """The DOM of ``page`` (a local file) as Chromium serialises it after ``budget_ms`` of virtual time: a
    script the page ran, an ``onerror`` or ``onload`` that fired, has changed it by then."""
    if CHROMIUM is None:
        raise RuntimeError("no Chromium on this machine: apt install chromium")
    with tempfile.TemporaryDirectory(prefix="attnbook-chromium-") as profile:
        done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}",
                               "--dump-dom", page.resolve().as_uri()], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"chromium failed on {page}: {done.stderr[-2000:]}")
    return done.stdout
