"""A real JupyterHub for a test, with the course's configuration (``autograder/jupyterhub_config.py``):
its proxy (configurable-http-proxy from npm) and the grading service it manages, on free ports of
127.0.0.1, in a folder the test owns. :func:`hub` yields a :class:`Hub`; the hub, its proxy and its
service are one process group, ended with it (never killed by name).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "autograder" / "jupyterhub_config.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, token: str | None = None, method: str = "GET", body: bytes | None = None,
        timeout: float = 30) -> tuple[int, bytes]:
    """(status, body) of one request; an error status is returned, not raised."""
    headers = {"Authorization": f"token {token}"} if token else {}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@dataclass
class Hub:
    url: str  # the proxy: what students reach
    api: str  # the hub's API
    admin_token: str
    process: subprocess.Popen
    log: Path

    @property
    def service(self) -> str:
        return f"{self.url}/services/grader/"

    def token(self, user: str, scopes: list[str] | None = None) -> str:
        """A new API token of ``user`` (by default with every scope the user holds)."""
        body = json.dumps({"expires_in": 3600, **({"scopes": scopes} if scopes is not None else {})}).encode()
        status, reply = get(f"{self.api}/hub/api/users/{user}/tokens", self.admin_token, "POST", body)
        assert status == 201, (status, reply)
        return json.loads(reply)["token"]

    def service_pid(self) -> int:
        """The grading service's process id (the hub's API tells an admin)."""
        status, reply = get(f"{self.api}/hub/api/services/grader", self.admin_token)
        assert status == 200, (status, reply)
        return int(json.loads(reply)["pid"])

    def wait_for_service(self, timeout: float = 60) -> None:
        """Until the service answers through the proxy (an unauthenticated call: 403)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with contextlib.suppress(OSError):
                status, _ = get(f"{self.service}api/queue", timeout=5)
                if status == 403:
                    return
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            time.sleep(0.3)
        raise TimeoutError(f"the grading service did not answer:\n{self.log.read_text()[-3000:]}")


@contextlib.contextmanager
def hub(folder: Path, env: dict[str, str], students: list[str], instructors: list[str]) -> Iterator[Hub]:
    """A hub in ``folder`` with those users; ``env`` adds the service's settings (ATTNBOOK_SERVICE_DB...)."""
    folder.mkdir(parents=True, exist_ok=True)
    ports = [free_port() for _ in range(4)]
    url, api, proxy, service = (f"http://127.0.0.1:{p}" for p in ports)
    token = secrets.token_hex(16)
    bin_dir = str(Path(sys.executable).parent)
    full = {**os.environ, **env, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "COURSE_HUB_URL": url,
            "COURSE_HUB_API": api, "COURSE_PROXY_API": proxy, "COURSE_SERVICE_BIND": service,
            "COURSE_HUB_STATE": str(folder), "COURSE_STUDENTS": ",".join(students),
            "COURSE_INSTRUCTORS": ",".join(instructors), "COURSE_HUB_ADMIN_TOKEN": token,
            "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(16)}
    log = folder / "hub.log"
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "jupyterhub", "-f", str(CONFIG)], cwd=folder, env=full,
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    running = Hub(url, api, token, process, log)
    try:
        end = time.monotonic() + 90
        while not _answers(f"{api}/hub/api/"):
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < end, log.read_text()[-3000:]
            time.sleep(0.3)
        running.wait_for_service()
        yield running
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _answers(url: str) -> bool:
    """Whether ``url`` answers 200 now."""
    with contextlib.suppress(OSError):
        return get(url, timeout=2)[0] == 200
    return False
