"""Grade on submit under a deadline burst: submit-to-feedback latency and throughput beside the batch path.

    python benchmarks/bench_service.py [--students 12] [--submissions 24] [--burst 60] [--workers 2]

Starts, on this machine and in a temporary folder, a PostgreSQL cluster, a JupyterHub with its proxy and
the grading service (``autograder/jupyterhub_config.py``) and ``--workers`` workers; then ``--students``
students send ``--submissions`` notebooks of chapter 3 at random times within ``--burst`` seconds
through the service: right (the solution), wrong (the blank notebook), runaway (an answer cell that never
ends) and crashing (one that kills its process) in the ratio 5:3:1:1, a student's later notebook
replacing the earlier. It prints the submit-to-feedback latency (the time until the student can fetch
feedback for that notebook or a newer one: median, 95th percentile, max), the queue wait (deferred to
started, per job), and the throughput in notebooks per core-minute; then ``attnbook-course grade --jobs
W`` of the same notebooks (one folder each) in the same run, and the grades of both, which must agree; then a
table of what 1,000 students would wait with W workers, from the measured seconds per notebook.
Both paths run with ``ATTNBOOK_GRADING_PART_SECONDS=10`` (a runaway part costs 10 s, not 120 s).
The first line of the output names the machine and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import nbformat

from attnbook.measure import machine_header

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the test's own servers: a PostgreSQL cluster, a JupyterHub

import hubserver  # noqa: E402
import pgserver  # noqa: E402

from attnbook_course.service import store  # noqa: E402

ASSIGNMENT = "03-bert"
KINDS = ["right"] * 5 + ["wrong"] * 3 + ["runaway", "crashing"]


def notebooks() -> dict[str, bytes]:
    """Each kind of notebook, as bytes."""
    solved = nbformat.read(ROOT / "solutions" / ASSIGNMENT / "exercises.ipynb", as_version=4)
    made = {"right": nbformat.writes(solved).encode(),
            "wrong": (ROOT / "chapters" / ASSIGNMENT / "exercises.ipynb").read_bytes()}
    for kind, code in (("runaway", "while True:\n    pass\n"), ("crashing", "import os\nos.kill(os.getpid(), 9)\n")):
        nb = nbformat.read(ROOT / "solutions" / ASSIGNMENT / "exercises.ipynb", as_version=4)
        cell = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution"))
        cell.source = code + cell.source
        made[kind] = nbformat.writes(nb).encode()
    return made


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=12)
    ap.add_argument("--submissions", type=int, default=24)
    ap.add_argument("--burst", type=float, default=60.0, help="seconds over which the submissions come")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(machine_header(threads=f"{args.workers} workers, one grading each"))
    rng = random.Random(args.seed)
    made = notebooks()
    students = [f"s{k:03}" for k in range(args.students)]
    plan = sorted((rng.uniform(0, args.burst), students[k % args.students], rng.choice(KINDS))
                  for k in range(args.submissions))
    limits = {"ATTNBOOK_GRADING_PART_SECONDS": "10"}
    base = Path(tempfile.mkdtemp(prefix="attnbook-bench-service-"))
    course = base / "course"
    course.mkdir()
    (course / "feedback.csv").write_text(f"assignment,hidden_messages,limit_per_hour\n{ASSIGNMENT},after-due,100\n")
    with pgserver.cluster() as pg:
        conninfo = pg.database("course", "postgresql")
        env = {"ATTNBOOK_SERVICE_DB": conninfo, "COURSE_STATE": str(course)}
        with hubserver.hub(base / "hub", env, students, []) as hub:
            tokens = {s: hub.token(s) for s in students}
            worker_env = {**os.environ, **limits, "ATTNBOOK_SERVICE_DB": conninfo}
            workers = [subprocess.Popen([sys.executable, "-m", "attnbook_course", "--state", str(course), "worker",
                                         "--name", f"w{i}"], env=worker_env, cwd=ROOT, start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                       for i in range(args.workers)]
            start = time.monotonic()
            threads = []
            for at, student, kind in plan:
                delay = at - (time.monotonic() - start)
                if delay > 0:
                    time.sleep(delay)
                send = threading.Thread(target=hubserver.get, args=(
                    f"{hub.service}api/submissions/{ASSIGNMENT}", tokens[student], "POST", made[kind]))
                send.start()
                threads.append(send)
            for send in threads:
                send.join()
            while _waiting(conninfo):
                time.sleep(0.5)
            wall = time.monotonic() - start
            for w in workers:
                w.terminate()
            for w in workers:
                w.wait()
        rows, jobs = _measured(conninfo)
    latencies = [r["latency"] for r in rows]
    waits = [j["wait"] for j in jobs]
    graded = len(jobs)
    cores = min(args.workers, os.cpu_count() or 1)
    print(f"\n{args.submissions} submissions from {args.students} students in {args.burst:g} s; "
          f"{graded} gradings (a later notebook replaced an earlier one still waiting); {args.workers} workers")
    print(f"submit-to-feedback latency, s: median {statistics.median(latencies):.1f}, "
          f"95th percentile {percentile(latencies, 0.95):.1f}, max {max(latencies):.1f}")
    print(f"queue wait, s: median {statistics.median(waits):.1f}, max {max(waits):.1f}")
    service_rate = graded / (wall * cores / 60)
    print(f"service: {graded} notebooks in {wall:.0f} s from the first submission: {service_rate:.2f} notebooks "
          f"per core-minute ({cores} cores; the burst itself lasts {args.burst:g} s)")
    busy = sum(j["ran"] for j in jobs)
    print(f"service, busy time only: {graded / (busy / 60):.2f} notebooks per worker-minute "
          f"({busy / graded:.1f} s per notebook)")

    # The batch path, the same work: every notebook the service graded, one folder each, graded at once.
    folder = base / "batch"
    for row in rows:
        if row["graded"]:
            (folder / row["folder"] / ASSIGNMENT).mkdir(parents=True)
            (folder / row["folder"] / ASSIGNMENT / "exercises.ipynb").write_bytes(row["notebook"])
    began = time.monotonic()
    subprocess.run([sys.executable, "-m", "attnbook_course", "--state", str(base / "batch-state"), "grade",
                    "--jobs", str(args.workers), str(folder)], env={**os.environ, **limits}, cwd=ROOT, check=True,
                   capture_output=True)
    batch = time.monotonic() - began
    batch_rate = graded / (batch * cores / 60)
    service_busy_rate = graded / (busy / 60)  # one worker is one core
    print(f"batch (make grade --jobs {args.workers}, the same {graded} notebooks): {batch:.0f} s: "
          f"{batch_rate:.2f} notebooks per core-minute; service (busy) / batch = {service_busy_rate / batch_rate:.2f}")
    batch_scores = {f: sum(p["score"] for p in json.loads((base / "batch-state" / "results" / f /
                                                           f"{ASSIGNMENT}.json").read_text())["parts"].values())
                    for f in (r["folder"] for r in rows if r["graded"])}
    agree = all(abs(r["score"] - batch_scores[r["folder"]]) < 1e-9 for r in rows if r["graded"])
    print(f"the same grade on both paths for each of the {graded} notebooks: {agree}")

    per = busy / graded
    print("\nextrapolated: 1,000 students each submitting once within 5 minutes, "
          f"{per:.1f} s per notebook per worker")
    print(f"{'workers':>8} {'drain, min':>11} {'last feedback after, min':>25}")
    for w in (2, 8, 16, 32, 64, 128):
        drain = 1000 * per / w / 60
        print(f"{w:>8} {drain:>11.1f} {max(drain, 5) + per / 60:>25.1f}")


def _waiting(conninfo: str) -> bool:
    with store.connect(conninfo) as db:
        row = db.execute("SELECT count(*) AS n FROM procrastinate_jobs WHERE status IN ('todo', 'doing')").fetchone()
    return bool(row and row["n"])


def _measured(conninfo: str) -> tuple[list[dict], list[dict]]:
    """Per submission: its student, latency to feedback on it or a newer one, score; per job: wait and run time."""
    with store.connect(conninfo) as db:
        subs = db.execute("SELECT s.id, s.student, s.received, s.notebook, o.graded, o.score "
                          "FROM attnbook_submission s "
                          "LEFT JOIN attnbook_outcome o ON o.submission_id = s.id ORDER BY s.id").fetchall()
        events = db.execute("SELECT job_id, type::text AS type, at FROM procrastinate_events ORDER BY id").fetchall()
    rows = []
    for k, sub in enumerate(subs):
        later = [s["graded"] for s in subs[k:] if s["student"] == sub["student"] and s["graded"] is not None]
        newest = all(s["student"] != sub["student"] for s in subs[k + 1:])
        if later:
            rows.append({"student": sub["student"], "latency": (min(later) - sub["received"]).total_seconds(),
                         "score": sub["score"], "last": newest, "graded": sub["graded"] is not None,
                         "folder": f"{sub['student']}-{sub['id']}", "notebook": bytes(sub["notebook"])})
    by_job: dict[int, dict[str, datetime]] = {}
    for event in events:
        by_job.setdefault(event["job_id"], {}).setdefault(event["type"], event["at"])
    jobs = [{"wait": (e["started"] - e["deferred"]).total_seconds(),
             "ran": (e.get("succeeded", e.get("failed", e["started"])) - e["started"]).total_seconds()}
            for e in by_job.values() if "started" in e and "deferred" in e]
    assert all(not r["graded"] or r["score"] is not None for r in rows)
    return rows, jobs


if __name__ == "__main__":
    main()
