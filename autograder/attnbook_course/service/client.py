"""The grading service's client: ``attnbook-course submit`` (a student outside the hub) and the exchange.

    attnbook-course submit --url https://hub.example.edu/services/grader/ ASSIGNMENT exercises.ipynb
    attnbook-course submit --url ... --status ASSIGNMENT        # queued, running, graded or failed
    attnbook-course submit --url ... --feedback ASSIGNMENT OUT  # the feedback page, once graded

The token is ``$JUPYTERHUB_API_TOKEN`` (on the hub's servers) or one made on the hub's token page
(``/hub/token``) with the service's access scope.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any


class ServiceError(RuntimeError):
    """The service refused a request: its status and its reason."""

    def __init__(self, status: int, reason: str):
        super().__init__(f"{status}: {reason}")
        self.status, self.reason = status, reason


@dataclass(frozen=True)
class Client:
    """The service at ``url`` (ending in ``/``), as the holder of ``token``.

    >>> Client("http://127.0.0.1:1/services/grader/", "t").address("api/queue")
    'http://127.0.0.1:1/services/grader/api/queue'
    """

    url: str
    token: str
    timeout: float = 60.0

    def address(self, path: str) -> str:
        return self.url.rstrip("/") + "/" + path

    def call(self, method: str, path: str, body: bytes | None = None, kind: str = "application/json") -> bytes:
        """The reply's body; a refusal raises :class:`ServiceError` with the service's reason."""
        request = urllib.request.Request(self.address(path), data=body, method=method,
                                         headers={"Authorization": f"token {self.token}", "Content-Type": kind})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                return reply.read()
        except urllib.error.HTTPError as err:
            text = err.read().decode(errors="replace")
            try:
                reason = json.loads(text).get("error", text)
            except (json.JSONDecodeError, AttributeError):
                reason = text[:300]
            raise ServiceError(err.code, reason) from None

    def submit(self, assignment: str, notebook: bytes) -> dict[str, Any]:
        return json.loads(self.call("POST", f"api/submissions/{assignment}", notebook, "application/x-ipynb+json"))

    def state(self, assignment: str) -> dict[str, Any]:
        return json.loads(self.call("GET", f"api/submissions/{assignment}"))

    def feedback(self, assignment: str) -> str:
        return self.call("GET", f"api/feedback/{assignment}").decode()
