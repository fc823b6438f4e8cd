# JupyterHub's configuration for a class on one machine: the hub, its proxy, and the grading service
# (`attnbook-course serve`) as a hub-managed service. The instructor guide's *Serving a class* page shows
# this file, and tests/test_service.py starts a hub with it. Everything a site changes is an environment
# variable, with the default for one machine:
#   COURSE_HUB_URL         where students reach the hub (http://127.0.0.1:8000)
#   COURSE_HUB_API         the hub's own API (http://127.0.0.1:8081)
#   COURSE_PROXY_API       the proxy's API (http://127.0.0.1:8001)
#   COURSE_SERVICE_BIND    where the grading service listens (http://127.0.0.1:10101)
#   COURSE_STATE    the course's state folder (deadlines.csv, feedback.csv)
#   COURSE_STUDENTS, COURSE_INSTRUCTORS   user names, separated by commas
# and the service's own settings (attnbook.settings: ATTNBOOK_SERVICE_DB, the course's PostgreSQL, above all).
#   COURSE_HUB_STATE       the hub's own folder (its database, cookie secret, proxy's pid)
#   COURSE_HUB_AUTHENTICATOR  the hub's authenticator (a site's own: oauthenticator, ltiauthenticator)
# `c` is the configuration object JupyterHub hands to this file.
import os
import sys
from pathlib import Path

from attnbook import settings

c = get_config()  # noqa: F821 (JupyterHub defines it)
env = os.environ.get
state = Path(env("COURSE_HUB_STATE", "."))
students = [u for u in env("COURSE_STUDENTS", "").split(",") if u]
instructors = [u for u in env("COURSE_INSTRUCTORS", "").split(",") if u]

c.JupyterHub.bind_url = env("COURSE_HUB_URL", "http://127.0.0.1:8000")
c.JupyterHub.hub_bind_url = env("COURSE_HUB_API", "http://127.0.0.1:8081")
c.ConfigurableHTTPProxy.api_url = env("COURSE_PROXY_API", "http://127.0.0.1:8001")
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
proxy = Path(__file__).resolve().parent.parent / "node_modules" / ".bin" / "configurable-http-proxy"
if proxy.exists():  # the course's own (npm ci), else the one on PATH
    c.ConfigurableHTTPProxy.command = [str(proxy)]
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.authenticator_class = env("COURSE_HUB_AUTHENTICATOR", "dummy")
c.Authenticator.allowed_users = set(students + instructors)

# The service's scopes: every student may use it; instructors also hold the custom scope that shows the
# queue, regrades and releases feedback (attnbook_course/service/serve.py: INSTRUCT).
grader = "access:services!service=grader"
c.JupyterHub.custom_scopes = {
    "custom:attnbook:instruct": {"description": "see the grading queue, regrade, release feedback"},
}
c.JupyterHub.load_roles = [
    {"name": "user", "scopes": ["self", grader]},
    {"name": "attnbook-instructor", "users": instructors, "scopes": ["custom:attnbook:instruct"]},
]
# A student's server may call the service with its own token (nbgrader's exchange in JupyterLab).
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", grader]

c.JupyterHub.services = [{
    "name": "grader",
    "url": env("COURSE_SERVICE_BIND", "http://127.0.0.1:10101"),
    "command": [sys.executable, "-m", "attnbook_course", "--state", env("COURSE_STATE", "."), "serve"],
    "environment": {"PATH": env("PATH", ""), "HOME": env("HOME", ""), "LANG": env("LANG", "C.UTF-8"),
                    **{s.name: str(s.read()) for s in settings.SERVICE if s.read() is not None}},
    "oauth_client_allowed_scopes": ["custom:attnbook:instruct"],
}]
# A test's (or a script's) own admin service: a token that may make tokens for the users.
if env("COURSE_HUB_ADMIN_TOKEN"):
    c.JupyterHub.services.append({"name": "course-admin", "api_token": env("COURSE_HUB_ADMIN_TOKEN")})
    c.JupyterHub.load_roles.append({"name": "course-admin", "services": ["course-admin"],
                                    "scopes": ["tokens", "admin:users", "read:services"]})
