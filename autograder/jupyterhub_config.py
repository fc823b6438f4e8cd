# JupyterHub for a class on one machine: the hub, its proxy, and the
# grading service (`attnbook-course serve`) as a hub-managed service.
# The instructor guide's *Serving a class* page shows this file, and
# tests/test_service.py starts its hub with it. A site sets, in the
# environment (defaults: one machine):
#   COURSE_HUB_URL       where students reach the hub (:8000)
#   COURSE_HUB_API       the hub's own API (:8081)
#   COURSE_PROXY_API     the proxy's API (:8001)
#   COURSE_SERVICE_BIND  where the grading service listens (:10101)
#   COURSE_STATE         the course's folder (deadlines.csv, feedback.csv)
#   COURSE_STUDENTS, COURSE_INSTRUCTORS   user names, comma-separated
#   COURSE_HUB_STATE     the hub's folder (its database, cookie secret)
#   COURSE_HUB_AUTHENTICATOR  the site's authenticator class
# and the service's settings (attnbook.settings: ATTNBOOK_SERVICE_DB,
# the course's PostgreSQL, above all).
import os
import sys
from pathlib import Path

from attnbook import settings

c = get_config()  # noqa: F821 (JupyterHub defines it)
env = os.environ.get
state = Path(env("COURSE_HUB_STATE", "."))
students = [u for u in env("COURSE_STUDENTS", "").split(",") if u]
instructors = [u for u in env("COURSE_INSTRUCTORS", "").split(",") if u]
local = "http://127.0.0.1"

c.JupyterHub.bind_url = env("COURSE_HUB_URL", f"{local}:8000")
c.JupyterHub.hub_bind_url = env("COURSE_HUB_API", f"{local}:8081")
c.ConfigurableHTTPProxy.api_url = env("COURSE_PROXY_API", f"{local}:8001")
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")
here = Path(__file__).resolve().parent.parent
proxy = here / "node_modules" / ".bin" / "configurable-http-proxy"
if proxy.exists():  # the course's own (npm ci), else the one on PATH
    c.ConfigurableHTTPProxy.command = [str(proxy)]
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.JupyterHub.authenticator_class = env("COURSE_HUB_AUTHENTICATOR", "dummy")
c.Authenticator.allowed_users = set(students + instructors)

# Every user may use the service; instructors also hold the custom scope
# that shows the queue, regrades and releases feedback (service/serve.py).
grader = "access:services!service=grader"
instruct = "custom:attnbook:instruct"
c.JupyterHub.custom_scopes = {
    instruct: {"description": "see the grading queue, regrade, release"},
}
c.JupyterHub.load_roles = [
    {"name": "user", "scopes": ["self", grader]},
    {"name": "attnbook-instructor", "users": instructors,
     "scopes": [instruct]},
]
# A student's server calls the service with its own token (the exchange).
c.Spawner.server_token_scopes = [
    "users:activity!user", "access:servers!server", grader]

service_env = {"PATH": env("PATH", ""), "HOME": env("HOME", ""),
               "LANG": env("LANG", "C.UTF-8")}
for setting in settings.SERVICE:
    if setting.read() is not None:
        service_env[setting.name] = str(setting.read())
c.JupyterHub.services = [{
    "name": "grader",
    "url": env("COURSE_SERVICE_BIND", f"{local}:10101"),
    "command": [sys.executable, "-m", "attnbook_course",
                "--state", env("COURSE_STATE", "."), "serve"],
    "environment": service_env,
    "oauth_client_allowed_scopes": [instruct],
}]
# A script's own admin service (the tests'): it makes the users' tokens.
if env("COURSE_HUB_ADMIN_TOKEN"):
    c.JupyterHub.services.append(
        {"name": "course-admin", "api_token": env("COURSE_HUB_ADMIN_TOKEN")})
    c.JupyterHub.load_roles.append(
        {"name": "course-admin", "services": ["course-admin"],
         "scopes": ["tokens", "admin:users", "read:services"]})
