"""nbgrader's exchange, through the grading service: Submit and Fetch Feedback without a shared folder.

In the students' ``nbgrader_config.py`` on the course's JupyterHub (the *Serving a class* page)::

    c.ExchangeFactory.submit = "attnbook_course.service.exchange.ExchangeSubmit"
    c.ExchangeFactory.fetch_feedback = "attnbook_course.service.exchange.ExchangeFetchFeedback"
    c.ServiceExchange.url = "http://127.0.0.1:8000/services/grader/"   # or ATTNBOOK_SERVICE_URL

``nbgrader submit A`` (the Assignments tab's Submit) sends ``A/exercises.ipynb`` with the user's
``$JUPYTERHUB_API_TOKEN``; ``nbgrader fetch_feedback A`` (Fetch Feedback) writes the service's page to
``A/feedback/<when it was graded>/exercises.html``, or says that the submission is queued (its place),
running or failed.
"""

from __future__ import annotations

import os
from pathlib import Path

from nbgrader.exchange import abc
from traitlets import Unicode, default

from attnbook import settings

from ..nbgrader_run import NOTEBOOK
from .client import Client, ServiceError


class ServiceExchange(abc.Exchange):
    """What both transfers need: the service's address and the user's token."""

    url = Unicode(help=f"the grading service's address (default: ${settings.SERVICE_URL.name})").tag(config=True)
    token = Unicode(help="a hub token with the service's scope (default: $JUPYTERHUB_API_TOKEN)").tag(config=True)

    @default("url")
    def _url(self) -> str:
        return settings.SERVICE_URL.read() or ""

    @default("token")
    def _token(self) -> str:
        return os.environ.get("JUPYTERHUB_API_TOKEN", "")

    def client(self) -> Client:
        if not self.url or not self.token:
            self.fail("the grading service's address or the hub token is missing (ServiceExchange.url, "
                      "$JUPYTERHUB_API_TOKEN)")
        return Client(self.url, self.token)

    @property
    def folder(self) -> Path:
        return Path(self.assignment_dir) / self.coursedir.assignment_id

    def init_dest(self) -> None:
        """Nothing to prepare: the service is the destination."""


class ExchangeSubmit(ServiceExchange, abc.ExchangeSubmit):
    """Submit: the assignment's notebook to the service."""

    def init_src(self) -> None:
        self.notebook = self.folder / NOTEBOOK
        if not self.notebook.is_file():
            self.fail(f"no {NOTEBOOK} in {self.folder}: fetch the assignment first")

    def copy_files(self) -> None:
        try:
            said = self.client().submit(self.coursedir.assignment_id, self.notebook.read_bytes())
        except (ServiceError, OSError) as err:
            self.fail(f"the grading service refused the submission: {err}")
        held = f"; held by the submission limit until {said['held_until']}" if said.get("held_until") else ""
        place = f", place {said['place']} in the queue" if said.get("place") else ""
        self.log.info(f"Submitted as {self.coursedir.assignment_id}: {said['state']}{place}{held}")


class ExchangeFetchFeedback(ServiceExchange, abc.ExchangeFetchFeedback):
    """Fetch Feedback: the service's page of the newest graded submission."""

    def init_src(self) -> None:
        try:
            self.state = self.client().state(self.coursedir.assignment_id)
        except (ServiceError, OSError) as err:
            self.fail(f"the grading service did not answer: {err}")
        if self.state["state"] == "failed":
            self.fail(f"grading failed; the instructor sees why: {self.state.get('error', '')[:300]}")
        if self.state["state"] != "graded":
            place = f" (place {self.state['place']})" if self.state.get("place") else ""
            self.fail(f"no feedback yet: the submission is {self.state['state']}{place}")

    def copy_files(self) -> None:
        try:
            page = self.client().feedback(self.coursedir.assignment_id)
        except (ServiceError, OSError) as err:
            self.fail(f"the grading service did not send the feedback: {err}")
        stamp = self.state["received"].replace(":", "-")
        target = self.folder / "feedback" / stamp / NOTEBOOK.replace(".ipynb", ".html")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
        self.log.info(f"Fetched feedback: {target}")
