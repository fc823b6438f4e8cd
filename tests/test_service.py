"""Grade on submit, end to end: a real PostgreSQL (``pgserver.py``), a real JupyterHub with its proxy and
the grading service it manages (``hubserver.py``, the course's ``autograder/jupyterhub_config.py``), and
real workers (``attnbook-course worker``) grading in bubblewrap. Each test owns its cluster, its ports,
its folders and its processes, and ends them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import exercise_harness as harness
import hubserver
import pgserver
import pytest

from attnbook_course.service import policy, queue, store

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "03-bert"  # the cheapest chapter to grade
SOLVED = (ROOT / "solutions" / ASSIGNMENT / "exercises.ipynb").read_bytes()
BLANK = (ROOT / "chapters" / ASSIGNMENT / "exercises.ipynb").read_bytes()
COURSE = [sys.executable, "-m", "attnbook_course"]

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(pgserver.bindir() is None, reason="PostgreSQL server binaries not installed")]


@pytest.fixture
def database():
    """An empty database in a fresh cluster: (the cluster, its libpq URL)."""
    with pgserver.cluster() as server:
        yield server, server.database("course", "postgresql")


def _env(conninfo: str, stalled: float = 30) -> dict[str, str]:
    return {**os.environ, **harness.trusted_grading_env(), "ATTNBOOK_SERVICE_DB": conninfo,
            "ATTNBOOK_SERVICE_STALLED_SECONDS": str(stalled)}


@contextmanager
def workers(course: Path, conninfo: str, names: list[str], stalled: float = 30):
    """``attnbook-course worker`` processes, one per name; ended (by their process ids) afterwards."""
    started = {}
    try:
        for name in names:
            log = open(course / f"{name}.log", "wb")
            started[name] = subprocess.Popen([*COURSE, "--state", str(course), "worker", "--name", name],
                                             env=_env(conninfo, stalled), cwd=ROOT, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True)
        yield started
    finally:
        for process in started.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _state(conninfo: str, student: str) -> dict:
    with store.connect(conninfo) as db:
        return queue.state(db, student, ASSIGNMENT)


def wait_for(conninfo: str, student: str, states: tuple[str, ...], timeout: float = 240) -> dict:
    end = time.monotonic() + timeout
    while (now := _state(conninfo, student))["state"] not in states:
        assert time.monotonic() < end, f"{student} still {now}"
        time.sleep(0.5)
    return now


def _jobs(conninfo: str) -> list[dict]:
    with store.connect(conninfo) as db:
        return db.execute("SELECT id, status::text AS status, args, attempts FROM procrastinate_jobs "
                          "ORDER BY id").fetchall()


def _outcomes(conninfo: str) -> list[dict]:
    with store.connect(conninfo) as db:
        return db.execute("SELECT o.submission_id, s.student, o.score, o.max_score, o.writes, o.record FROM "
                          "attnbook_outcome o JOIN attnbook_submission s ON s.id = o.submission_id "
                          "ORDER BY 1").fetchall()


def nbgrader(home: Path, service: str, token: str, *args: str) -> subprocess.CompletedProcess:
    """nbgrader's command as the Assignments tab runs it, with the course's exchange plugin."""
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args, "--course", "attention-to-transformers",
         "--ExchangeFactory.submit=attnbook_course.service.exchange.ExchangeSubmit",
         "--ExchangeFactory.fetch_feedback=attnbook_course.service.exchange.ExchangeFetchFeedback",
         f"--ServiceExchange.url={service}", f"--Exchange.assignment_dir={home}"],
        cwd=home, env={**os.environ, "JUPYTERHUB_API_TOKEN": token, "HOME": str(home)},
        capture_output=True, text=True, timeout=120)


def test_a_student_submits_through_the_exchange_and_fetches_feedback(database, tmp_path):
    """Ada submits with nbgrader's Submit (the exchange plugin) and again at once (one job); the service
    is killed and the hub starts it again (the job kept); two workers grade her and Bob at once; her
    Fetch Feedback brings the page, with the points the batch path gives the same notebook. Refusals:
    no scope, not a notebook, too large, another student's state, an instructor's request."""
    _, conninfo = database
    course, home = tmp_path / "course", tmp_path / "ada"
    course.mkdir()
    (home / ASSIGNMENT).mkdir(parents=True)
    (home / ASSIGNMENT / "exercises.ipynb").write_bytes(SOLVED)
    env = {"ATTNBOOK_SERVICE_DB": conninfo, "COURSE_STATE": str(course),
           "ATTNBOOK_SERVICE_SUBMIT_MIB": "4"}
    with hubserver.hub(tmp_path / "hub", env, ["ada", "bob"], ["ins"]) as hub:
        ada, bob, ins = hub.token("ada"), hub.token("bob"), hub.token("ins")
        api = hub.service + "api/"

        def call(token, path, method="GET", body=None):
            status, reply = hubserver.get(api + path, token, method, body)
            return status, json.loads(reply) if reply.startswith(b"{") else reply

        # Refused, nothing queued.
        no_scope = hub.token("ada", ["read:users:name!user=ada"])
        assert call(no_scope, f"submissions/{ASSIGNMENT}", "POST", SOLVED)[0] == 403
        status, said = call(ada, f"submissions/{ASSIGNMENT}", "POST", b"print('hello')")
        assert (status, said["error"]) == (400, "not a notebook: not JSON (Expecting value at line 1)")
        status, said = call(ada, f"submissions/{ASSIGNMENT}", "POST", b" " * (5 << 20))
        assert status == 413 and "over the limit of 4194304 bytes" in said["error"]
        assert call(ada, "submissions/07-nope", "POST", SOLVED)[0] == 404
        assert _jobs(conninfo) == []

        done = nbgrader(home, hub.service, ada, "submit", ASSIGNMENT)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Submitted as 03-bert: queued, place 1 in the queue" in done.stderr
        assert call(ada, f"submissions/{ASSIGNMENT}", "POST", SOLVED)[1]["state"] == "queued"  # a double submit
        assert [j["args"] for j in _jobs(conninfo)] == [{"student": "ada", "assignment": ASSIGNMENT}]
        status, said = call(bob, f"submissions/{ASSIGNMENT}", "POST", BLANK)
        assert (status, said["state"], said["place"]) == (202, "queued", 2)
        # Students see only their own; instructors' requests are theirs.
        assert call(bob, f"students/ada/{ASSIGNMENT}")[0] == 403
        assert call(bob, f"students/ada/{ASSIGNMENT}/feedback")[0] == 403
        assert call(ada, "queue")[0] == 403 and call(ada, f"release/{ASSIGNMENT}", "POST", b"")[0] == 403
        assert call(ada, "regrade", "POST", b"{}")[0] == 403
        assert call(ins, "queue")[1]["depth"] == 2

        # The service dies; the hub starts it again; the queue is the database's.
        first = hub.service_pid()
        os.kill(first, signal.SIGKILL)
        time.sleep(1)
        hub.wait_for_service()
        assert hub.service_pid() != first
        assert call(ada, f"submissions/{ASSIGNMENT}")[1]["state"] == "queued"
        early = nbgrader(home, hub.service, ada, "fetch_feedback", ASSIGNMENT)
        assert early.returncode != 0 and "no feedback yet: the submission is queued (place 1)" in early.stderr

        with workers(course, conninfo, ["w1", "w2"]):
            wait_for(conninfo, "ada", ("graded",))
            wait_for(conninfo, "bob", ("graded",))
        outcomes = _outcomes(conninfo)
        assert [(o["student"], o["writes"]) for o in outcomes] == [("ada", 1), ("bob", 1)]
        assert {o["record"]["student"] for o in outcomes} == {"ada", "bob"}
        assert outcomes[0]["score"] == outcomes[0]["max_score"] > 0 and outcomes[1]["score"] == 0
        assert _jobs(conninfo)[0]["status"] == "succeeded"

        fetched = nbgrader(home, hub.service, ada, "fetch_feedback", ASSIGNMENT)
        assert fetched.returncode == 0, fetched.stdout + fetched.stderr
        pages = list((home / ASSIGNMENT / "feedback").glob("*/exercises.html"))
        assert len(pages) == 1 and "up to 3 submissions an hour" in pages[0].read_text()
        assert call(ins, f"students/ada/{ASSIGNMENT}")[1]["state"] == "graded"
        assert call(ins, "regrade", "POST", json.dumps({"student": "bob"}).encode()) == (202, {"queued": 1})

    # The batch path, same notebook: the same grade.
    submissions = tmp_path / "batch"
    (submissions / "ada" / ASSIGNMENT).mkdir(parents=True)
    (submissions / "ada" / ASSIGNMENT / "exercises.ipynb").write_bytes(SOLVED)
    batch = subprocess.run([*COURSE, "--state", str(tmp_path / "batch-state"), "grade", str(submissions)],
                           env=_env(conninfo), cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert batch.returncode == 0, batch.stdout + batch.stderr
    kept = json.loads((tmp_path / "batch-state" / "results" / "ada" / f"{ASSIGNMENT}.json").read_text())
    assert {k: p["score"] for k, p in kept["parts"].items()} == \
        {k: p["score"] for k, p in outcomes[0]["record"]["parts"].items()}


def test_a_job_whose_worker_is_killed_runs_again_with_one_result(database, tmp_path):
    """A worker killed by its process id while it grades: a live worker puts its job back once the
    heartbeat is stale, grades it, and the outcome is written once."""
    _, conninfo = database
    course = tmp_path / "course"
    course.mkdir()
    queue.install(conninfo)
    queue.submit(conninfo, "ada", ASSIGNMENT, SOLVED, limit=3)
    with workers(course, conninfo, ["doomed"], stalled=4) as started:
        wait_for(conninfo, "ada", ("running",), timeout=60)
        time.sleep(2)  # inside the grading
        os.killpg(started["doomed"].pid, signal.SIGKILL)
        started["doomed"].wait()
    assert _outcomes(conninfo) == [] and _jobs(conninfo)[0]["status"] == "doing"
    with workers(course, conninfo, ["rescuer"], stalled=4):
        wait_for(conninfo, "ada", ("graded",))
    assert [(o["student"], o["writes"]) for o in _outcomes(conninfo)] == [("ada", 1)]
    assert [j["status"] for j in _jobs(conninfo)] == ["succeeded"]
    assert "put back 1 jobs" in (course / "rescuer.log").read_text()


def test_postgres_restarted_during_a_burst_loses_nothing(database, tmp_path):
    """The database restarts while a worker grades a burst: every submission is graded, each once."""
    server, conninfo = database
    course = tmp_path / "course"
    course.mkdir()
    queue.install(conninfo)
    for student in ("ada", "bob", "eve"):
        queue.submit(conninfo, student, ASSIGNMENT, BLANK, limit=3)
    with workers(course, conninfo, ["w1"], stalled=4):
        wait_for(conninfo, "ada", ("running", "graded"), timeout=60)
        server.restart()
        for student in ("ada", "bob", "eve"):
            wait_for(conninfo, student, ("graded",))
    assert sorted((o["student"], o["writes"]) for o in _outcomes(conninfo)) == [("ada", 1), ("bob", 1), ("eve", 1)]
    assert [j["status"] for j in _jobs(conninfo)] == ["succeeded"] * 3


def test_a_submission_over_the_limit_is_kept_and_held_until_the_window_has_room(database):
    _, conninfo = database
    queue.install(conninfo)
    held = [queue.submit(conninfo, "ada", ASSIGNMENT, BLANK, limit=2)[1] for _ in range(3)]
    assert held[:2] == [None, None] and held[2] is not None
    with store.connect(conninfo) as db:
        said = queue.state(db, "ada", ASSIGNMENT)
        kept = db.execute("SELECT count(*) AS n FROM attnbook_submission").fetchone()["n"]
    assert kept == 3 and said["state"] == "queued" and said["submission"] == 3
    assert len(_jobs(conninfo)) == 1  # one job, which will grade the newest


def test_a_spreadsheet_s_feedback_csv_reads_and_a_wrong_one_names_each_problem(tmp_path):
    text = "\ufeffassignment , hidden_messages,limit_per_hour\r\n03-bert,on-release, 2\r\n"
    assert policy.parse(text, [ASSIGNMENT]) == {ASSIGNMENT: policy.Rule("on-release", 2)}
    with pytest.raises(ValueError) as err:
        policy.parse("assignment,hidden_messages,limit_per_hour\n07-x,soon,0\n03-bert,,\n03-bert,,\n", [ASSIGNMENT])
    assert str(err.value) == (
        "feedback.csv: row 2: assignment '07-x' is not one of 03-bert; row 2: hidden_messages 'soon' should be "
        "one of after-due, on-release, at-once; row 2: limit_per_hour '0' should be a whole number, 1 or more; "
        "row 4: a second row for 03-bert")


def test_a_job_that_keeps_failing_is_retried_then_kept_failed_with_its_error(database, tmp_path):
    """A wrong deadlines.csv stops every grading: the job is tried three times, then stays failed, and the
    instructor's view and the student's state give grade's reason."""
    _, conninfo = database
    course = tmp_path / "course"
    course.mkdir()
    (course / "deadlines.csv").write_text("assignment,student,due,policy\n03-bert,,someday,none\n")
    queue.install(conninfo)
    queue.submit(conninfo, "ada", ASSIGNMENT, BLANK, limit=3)
    with workers(course, conninfo, ["w1"]):
        said = wait_for(conninfo, "ada", ("failed",), timeout=120)
    assert "not grading" in said["error"] and "someday" in said["error"]
    assert [(j["status"], j["attempts"]) for j in _jobs(conninfo)] == [("failed", 3)]
    with store.connect(conninfo) as db:
        failed = queue.overview(db)["failed"]
    assert [(f["student"], "someday" in f["error"]) for f in failed] == [("ada", True)]


def test_make_grade_enqueues_a_class_for_the_workers_at_low_priority(database, tmp_path):
    """``grade --enqueue``: each submission of the folder into the queue, below the students' own; a link
    and a name that is no student id are left out, and said so."""
    _, conninfo = database
    folder = tmp_path / "class"
    for student in ("ada", "bob"):
        (folder / student / ASSIGNMENT).mkdir(parents=True)
        (folder / student / ASSIGNMENT / "exercises.ipynb").write_bytes(BLANK)
    (folder / "-rf").mkdir()
    (folder / "eve").symlink_to(folder / "ada")
    queue.install(conninfo)
    queue.submit(conninfo, "cyd", ASSIGNMENT, BLANK, limit=3)
    done = subprocess.run([*COURSE, "grade", "--enqueue", str(folder)], env=_env(conninfo), cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "queued 2 submissions for the workers (low priority)" in done.stdout
    assert "skipped eve: a link, never followed" in done.stdout and "skipped -rf: not a student id" in done.stdout
    with store.connect(conninfo) as db:
        jobs = db.execute("SELECT args->>'student' AS s, priority FROM procrastinate_jobs ORDER BY id").fetchall()
        assert [(j["s"], j["priority"]) for j in jobs] == [("cyd", queue.STUDENT), ("ada", queue.REGRADE),
                                                          ("bob", queue.REGRADE)]
        assert queue.state(db, "ada", ASSIGNMENT)["place"] == 2  # behind cyd's own submission
