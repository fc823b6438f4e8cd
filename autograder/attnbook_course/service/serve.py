"""``attnbook-course serve``: the grading service, a JupyterHub-managed service (HubOAuth).

Every request carries a JupyterHub token (``Authorization: token ...``) or the hub's login cookie; a
token without the service's access scope (``access:services!service=NAME``) is refused (403).
Instructors hold :data:`INSTRUCT` too. Under the service's prefix (``/services/NAME/``):

====================================  ===========================================================
``POST api/submissions/A``            the student's notebook for assignment A (the body): 202, queued
``GET  api/submissions/A``            its state: queued (place), running, graded, failed (error)
``GET  api/feedback/A``               the feedback page (:func:`.policy.page`)
``GET  api/students/S/A``             an instructor: student S's state; ``.../feedback``: the page
``GET  api/queue``                    an instructor: depth, oldest wait, running, failed (errors)
``POST api/regrade``                  an instructor: ``{"student": S?, "assignment": A?}``, low priority
``POST api/release/A``                an instructor: show A's hidden cases' messages to everyone
====================================  ===========================================================

A body over ``ATTNBOOK_SERVICE_SUBMIT_MIB`` or that is no notebook is refused with the reason, and
nothing is queued. A student sees only their own submissions and feedback.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlparse

from tornado import ioloop, web

from attnbook import settings

from .. import late, names
from ..nbgrader_run import assignments
from . import policy, queue, store

T = TypeVar("T")
INSTRUCT = "custom:attnbook:instruct"  # the instructors' scope (JupyterHub's custom_scopes)


def _check_notebook(body: bytes, cap: int) -> str | None:
    """Why ``body`` is not a notebook the grader takes, or None.

    >>> _check_notebook(b"hello", 100), _check_notebook(b"x" * 101, 100)[:20]
    ('not a notebook: not JSON (Expecting value at line 1)', 'too large: 101 bytes')
    """
    if len(body) > cap:
        return f"too large: {len(body)} bytes, over the limit of {cap} bytes"
    import nbformat

    try:
        text = body.decode("utf-8")
        json.loads(text)
        nbformat.validate(nbformat.reads(text, as_version=4))
    except UnicodeDecodeError:
        return "not a notebook: not UTF-8 text"
    except json.JSONDecodeError as err:
        return f"not a notebook: not JSON ({err.msg} at line {err.lineno})"
    except Exception as err:  # nbformat's reader and validator raise several kinds
        return f"not a notebook: {type(err).__name__}"
    return None


class Service:
    """What every handler reads: the database, the course's state folder, the limits."""

    def __init__(self, conninfo: str, course: Path, cap: int):
        self.conninfo, self.course, self.cap = conninfo, course, cap
        self.assignments = assignments()

    def run(self, work: Callable[..., T], *args: Any) -> Awaitable[T]:
        """``work(db, *args)`` in a thread, with a connection of its own (one transaction)."""
        def inside() -> T:
            with store.connect(self.conninfo) as db:
                return work(db, *args)
        return asyncio.to_thread(inside)

    def page(self, db: store.DB, student: str, assignment: str) -> tuple[int, str]:
        """(status, the feedback page of the student's newest graded submission)."""
        found = store.newest(db, student, assignment)
        graded = store.outcome(db, found[0].id) if found else None
        if graded is None:
            return 404, "no graded submission yet"
        rule = policy.rule(policy.load(self.course, self.assignments), assignment)
        due = late.rule(late.load(self.course, self.assignments, [student]), assignment, student).due
        shows = rule.shows_hidden(due, store.released(db, assignment), datetime.now(timezone.utc))
        when = "once the instructor releases them" if rule.hidden_messages == "on-release" or due is None \
            else f"after the due date ({due:%Y-%m-%d %H:%M %Z})"
        return 200, policy.page(graded["record"], shows, when, rule.limit_per_hour, graded["feedback"])


def handlers(prefix: str) -> list[tuple[str, type]]:
    """The service's routes under ``prefix``."""
    from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated  # type: ignore[import-untyped]

    class Base(HubOAuthenticated, web.RequestHandler):
        @property
        def service(self) -> Service:
            return self.settings["service"]

        def prepare(self) -> None:
            user = self.get_current_user()
            if user is None:
                raise web.HTTPError(403, "a JupyterHub token with this service's access scope is needed")
            if not names.is_student_id(user["name"]):
                raise web.HTTPError(400, "this user name cannot be a student id of the course")

        @property
        def student(self) -> str:
            return self.get_current_user()["name"]

        def instructor(self) -> None:
            if INSTRUCT not in (self.get_current_user().get("scopes") or []):
                raise web.HTTPError(403, "only an instructor may do this")

        def assignment(self, name: str) -> str:
            if name not in self.service.assignments:
                raise web.HTTPError(404, f"no assignment {name!r}: one of {', '.join(self.service.assignments)}")
            return name

        def reply(self, value: Any, status: int = 200) -> None:
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps(value))

        def send_page(self, status: int, text: str) -> None:
            if status != 200:
                raise web.HTTPError(status, text)
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.set_header("Content-Security-Policy", "script-src 'none'; object-src 'none'; base-uri 'none'")
            self.finish(text)

        def write_error(self, status_code: int, **kwargs: Any) -> None:
            error = kwargs.get("exc_info", (None, None))[1]
            self.reply({"error": getattr(error, "log_message", None) or self._reason}, status_code)

    class Submissions(Base):
        async def post(self, name: str) -> None:
            assignment = self.assignment(name)
            if why := _check_notebook(self.request.body, self.service.cap):
                raise web.HTTPError(413 if why.startswith("too large") else 400, why)
            rule = policy.rule(policy.load(self.service.course, self.service.assignments), assignment)
            submission, later = await asyncio.to_thread(queue.submit, self.service.conninfo, self.student,
                                                        assignment, self.request.body, rule.limit_per_hour)
            state = await self.service.run(queue.state, self.student, assignment)
            self.reply({**state, "held_until": later.isoformat() if later else None}, 202)

        async def get(self, name: str) -> None:
            self.reply(await self.service.run(queue.state, self.student, self.assignment(name)))

    class Feedback(Base):
        async def get(self, name: str) -> None:
            self.send_page(*await self.service.run(self.service.page, self.student, self.assignment(name)))

    class Student(Base):
        async def get(self, student: str, name: str, page: str | None = None) -> None:
            self.instructor()
            if page:
                return self.send_page(*await self.service.run(self.service.page, student, self.assignment(name)))
            self.reply(await self.service.run(queue.state, student, self.assignment(name)))

    class Queue(Base):
        async def get(self) -> None:
            self.instructor()
            self.reply(await self.service.run(queue.overview))

    class Regrade(Base):
        async def post(self) -> None:
            self.instructor()
            asked = json.loads(self.request.body or b"{}")
            pairs = await self.service.run(_submitted, asked.get("student"), asked.get("assignment"))
            self.reply({"queued": await asyncio.to_thread(queue.regrade, self.service.conninfo, pairs)}, 202)

    class Release(Base):
        async def post(self, name: str) -> None:
            self.instructor()
            assignment = self.assignment(name)

            def release(db: store.DB) -> None:
                with db.transaction():
                    store.release(db, assignment)
            await self.service.run(release)
            self.reply({"released": assignment})

    return [
        (prefix + r"oauth_callback", HubOAuthCallbackHandler),
        (prefix + r"api/submissions/([^/]+)", Submissions),
        (prefix + r"api/feedback/([^/]+)", Feedback),
        (prefix + r"api/students/([^/]+)/([^/]+)(/feedback)?", Student),
        (prefix + r"api/queue", Queue),
        (prefix + r"api/regrade", Regrade),
        (prefix + r"api/release/([^/]+)", Release),
    ]


def _submitted(db: store.DB, student: str | None, assignment: str | None) -> list[tuple[str, str]]:
    """Every (student, assignment) with a submission, or those of one student or one assignment."""
    rows = db.execute("SELECT DISTINCT student, assignment FROM attnbook_submission WHERE "
                      "(%s::text IS NULL OR student = %s) AND (%s::text IS NULL OR assignment = %s) ORDER BY 1, 2",
                      (student, student, assignment, assignment)).fetchall()
    return [(r["student"], r["assignment"]) for r in rows]


def main(conninfo: str, course: Path) -> int:
    """``attnbook-course serve``: listen where JupyterHub says (``JUPYTERHUB_SERVICE_URL``)."""
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/grader/")
    cap = int(settings.SERVICE_SUBMIT_MIB.read() * (1 << 20))
    queue.install(conninfo)
    app = web.Application(handlers(prefix), cookie_secret=os.urandom(32), service=Service(conninfo, course, cap))
    app.listen(url.port or 80, url.hostname or "127.0.0.1", max_body_size=2 * cap + (1 << 20))
    print(f"grading service on {url.geturl()} (prefix {prefix})", file=sys.stderr, flush=True)
    ioloop.IOLoop.current().start()
    return 0
