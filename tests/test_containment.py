"""No single submission can stop, stall or starve the class's grading.

The mechanisms one by one (fast, no sandbox): a judge process per submission
(:mod:`attnbook_course.pool`), deadlines on whole frames, frames of bounded
size and shape, capped feedback, clean-up of any folder, the per-submission
guard of ``course.py``. Then the class-level attacks of the catalogue
(``answers/hostile.py``), graded in the sandbox beside control students: the
run finishes within its budget, the controls' rows equal those of a run without
the attackers, each attacker scores 0 with a clear status, and the machine's
processes, memory and disk come back to where they were.
"""

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import reaper
import torch

from attnbook_course import _cgroups, _wire, judge, judging, notes, pool, sandbox, submission
from attnbook_course.fixtures import catalogue
from attnbook_course.notes import Note

ROOT = Path(__file__).resolve().parent.parent
COURSE = [sys.executable, "-m", "attnbook_course"]  # attnbook-course

# The catalogue's attacks on the class's grading run (graded here only), two of them a part that hangs or hogs.
CLASS_ATTACKS = tuple(sorted(name for name, a in catalogue.ANSWERS.items() if a.get("class_level")))


# ------------------------------------------------------------ one judge a submission


def _sleep_forever(_):
    time.sleep(600)


def _die(_):
    os._exit(3)


def _hog(_):
    return {"size": len(bytearray(2**31))}  # 2 GiB, past the 1 GiB limit below


def test_a_judge_that_raises_dies_hangs_or_hogs_is_its_job_only():
    jobs = [0, 1, 2, 3, 4]
    fns = {0: lambda n: {"n": n}, 1: lambda n: {"n": 1 / 0}, 2: _die, 3: _sleep_forever, 4: _hog}
    start = time.monotonic()
    results = pool.run_each(lambda n: fns[n](n), jobs, workers=5, budget=5, memory_bytes=2**30)
    assert time.monotonic() - start < 30
    assert results[0] == {"n": 0}
    assert isinstance(results[1], pool.Failure) and "ZeroDivisionError" in results[1].why
    assert "ZeroDivisionError" in results[1].log  # the traceback, for the grading log
    assert isinstance(results[2], pool.Failure) and "exit 3" in results[2].why
    assert isinstance(results[3], pool.Failure) and "time budget" in results[3].why
    assert isinstance(results[4], pool.Failure) and "MemoryError" in results[4].why


def test_a_submission_the_grader_fails_on_gets_a_grading_error_row(monkeypatch, tmp_path):
    folder = tmp_path / "submitted" / "alice" / "02-transformer"
    folder.mkdir(parents=True)
    (folder / "exercises.ipynb").write_text(catalogue.solution_submission("02-transformer"))

    def broken_plan(*args):
        raise KeyError("a planner bug")

    monkeypatch.setattr(submission, "plan", broken_plan)
    result = judging.grade_one(("alice", "02-transformer", str(tmp_path)))
    assert notes.status(notes.read(result["notes"])).startswith("grading error: planning (KeyError")
    assert "a planner bug" in result["log"] and "broken_plan" in result["log"]  # the traceback
    assert set(result["parts"]) == set(catalogue.points("02-transformer"))
    assert all(part["score"] == 0 for part in result["parts"].values())


@pytest.mark.parametrize("metadata", [["grade_id"], "nbgrader", {"grade_id": ["a"]}, {"grade_id": 3}])
def test_nbgrader_metadata_of_the_wrong_type_reads_as_none(metadata):
    assert submission.nbgrader_meta({"metadata": {"nbgrader": metadata}}) == {}
    assert submission.grade_id({"metadata": metadata}) is None


def test_malformed_and_oversized_notebooks_are_not_graded_with_a_reason(tmp_path):
    path = tmp_path / "exercises.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                "cells": [{"cell_type": "code", "id": "a", "source": 42, "metadata": {}}]}))
    assert submission.read_submission(path) == (None, Note("not_graded", "the notebook's cells are malformed"))
    with open(path, "wb") as fh:
        fh.truncate(submission.MAX_NOTEBOOK + 1)
    nb, status = submission.read_submission(path)
    assert nb is None and "not graded: notebook of 64 MiB (at most 64)" == status.status()


# ---------------------------------------------------------------- the wire


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def test_the_deadline_covers_the_whole_frame_not_its_first_byte(pipe):
    r, w = pipe
    os.write(w, (1000).to_bytes(8, "little") + b'{"ready": ')  # the start of a frame, then nothing
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        _wire.receive(r, deadline=time.monotonic() + 0.5)
    assert 0.4 < time.monotonic() - start < 5


def test_a_send_the_reader_never_takes_stops_at_the_deadline(pipe):
    r, w = pipe
    os.set_blocking(w, False)
    with pytest.raises(TimeoutError):
        _wire.send(w, {"x": "y" * (1 << 20)}, deadline=time.monotonic() + 0.5)  # more than a pipe holds


@pytest.mark.parametrize("body, words", [
    (b'{"pad": "' + b"x" * 100000 + b'", "a": ' + b"[" * 5000 + b"]" * 5000 + b"}", "RecursionError"),
    (b'{"a": [' + b"[]," * 100000 + b"[]]}", "arrays and objects"),
    (b'{"pad": "' + b"x" * 4000 + b'", "a": ' + b'{"$tuple": [' * 70 + b"]}" * 70 + b"}", None),  # past decode's
])
def test_frames_that_would_choke_or_swell_the_judge_are_refused(pipe, body, words):
    r, w = pipe
    writer = threading.Thread(target=os.write, args=(w, len(body).to_bytes(8, "little") + body))
    writer.start()
    if words is None:
        message = _wire.receive(r, deadline=time.monotonic() + 10)
        with pytest.raises(_wire.WireError, match="nested deeper"):
            _wire.decode(message["a"])
    else:
        with pytest.raises(_wire.WireError, match=words):
            _wire.receive(r, deadline=time.monotonic() + 10)
    writer.join()


def test_a_frame_over_the_cap_is_refused_before_it_is_read(pipe):
    r, w = pipe
    os.write(w, (1 << 40).to_bytes(8, "little"))
    with pytest.raises(_wire.WireError, match="refused"):
        _wire.receive(r, max_bytes=16 << 20)


def test_a_tensor_too_large_to_send_crosses_as_its_shape():
    blown_up = torch.zeros(64, 64, 1024)  # 16 MiB: a broadcast gone wrong, say
    sent = json.loads(json.dumps(_wire.encode({"out": blown_up}, handles={})))
    assert len(json.dumps(sent)) < 200
    received = _wire.decode(sent)["out"]
    assert received.shape == (64, 64, 1024) and received.device.type == "meta"  # a check can read its shape
    small = torch.arange(6.0)
    assert _wire.decode(json.loads(json.dumps(_wire.encode(small, handles={})))).equal(small)


def test_feedback_keeps_its_first_characters_and_counts_the_rest():
    out = judge.Capped(100)
    for _ in range(1000):
        print("x" * 99, file=out)
    text = out.getvalue()
    assert text.startswith("x" * 99 + "\n") and text.endswith("(99900 more characters not shown)")
    assert len(text) < 200


# ------------------------------------------------------------- clean-up


def test_remove_tree_removes_any_shape(tmp_path):
    top = tmp_path / "left"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(2500):  # 7,500 characters deep: past PATH_MAX and Python's recursion limit
        os.mkdir("dd", dir_fd=fd)
        fd, parent = os.open("dd", os.O_RDONLY, dir_fd=fd), fd
        os.close(parent)
    os.close(fd)
    os.mkfifo(top / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(top / "sock"))
    (top / "locked").mkdir()
    (top / "locked" / "f").write_text("x")
    os.chmod(top / "locked", 0)
    os.symlink("/etc", top / "etc")  # not followed
    assert sandbox.remove_tree(top) and not top.exists()
    assert Path("/etc/passwd").exists()


def test_the_next_run_removes_what_a_killed_run_left(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "SWEPT", tmp_path)
    dead = _dead_pid()
    (tmp_path / f"{dead}-abc" / "x").mkdir(parents=True)
    (tmp_path / f"{os.getpid()}-mine").mkdir()  # this process is alive: its folder stays
    removed = sandbox.sweep()
    assert str(tmp_path / f"{dead}-abc") in removed
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{os.getpid()}-mine"]


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.skipif(_cgroups.available() is None, reason="no cgroup can be made here")
def test_a_cgroup_caps_processes_and_is_removed():
    group = _cgroups.Cgroup.create(processes=8, memory_bytes=2**30)
    code = "import os, time\nn = 0\ntry:\n    for _ in range(50):\n        if os.fork() == 0:\n" \
           "            time.sleep(30); os._exit(0)\n        n += 1\nexcept OSError:\n    pass\nprint(n)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            preexec_fn=group.join, start_new_session=True)
    forked = int(proc.stdout.readline())  # one line: the sleeping children hold the pipe open
    assert forked < 8 and group.peak()["processes"] <= 8
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert group.remove()
    assert not any(folder.exists() for folder in group.folders)


# ---------------------------------------------- the class-level attacks, sandboxed


def test_the_reaper_finds_what_a_run_left_behind_and_nothing_else():
    """A grandchild that left its session (a daemon) is found by the reaper and killed; a sleeper started
    beside the run, not by it, is not its business."""
    beside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    daemon = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              "        time.sleep(60)  # reaper-test-daemon\n    os._exit(0)\nos.wait()")
    done, strays = reaper.run([sys.executable, "-c", daemon])
    assert done.returncode == 0 and len(strays) == 1 and "reaper-test-daemon" in strays[0], strays
    pid = int(strays[0].split()[0])
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert beside.poll() is None
    beside.kill()
    beside.wait()


def _grade(submissions: Path, state: Path) -> tuple[dict, list[str]]:
    """Grade through the sandbox, its folders under this test's own TMPDIR; (rows, the processes the run
    left running — found by the reaper, as descendants of this run only)."""
    tmp = state.parent / f"{state.name}-tmp"
    tmp.mkdir()
    done, strays = reaper.run(
        [*COURSE, "--state", str(state), "grade", "--jobs", "2", "--require-sandbox",
         str(submissions)], capture_output=True, text=True, cwd=ROOT, timeout=1200,
        env={**os.environ, "ATTNBOOK_GRADING_PART_SECONDS": "30", "TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stdout + done.stderr
    left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
    assert left in ([], ["attnbook-sandboxes"]), left  # every sandbox folder removed
    with open(state / "grades.csv", newline="") as fh:
        return {(r["student"], r["assignment"]): r for r in csv.DictReader(fh)}, strays


@pytest.mark.slow
@pytest.mark.skipif(sandbox.isolation() == "none", reason="bubblewrap does not run here")
def test_class_level_attacks_are_contained_beside_control_students(tmp_path):
    wrong = next(name for name, a in catalogue.ANSWERS.items()
                 if a["assignment"] == "02-transformer" and not a.get("hostile") and a["expected"])
    controls = {wrong: catalogue.ANSWERS[wrong]}  # with the solution and a blank notebook
    attackers = {name: catalogue.ANSWERS[name] for name in CLASS_ATTACKS}
    assert len(attackers) >= 10
    catalogue.build_submissions(tmp_path / "controls", controls)
    alone, strays = _grade(tmp_path / "controls", tmp_path / "alone")
    assert strays == []
    catalogue.build_submissions(tmp_path / "class", {**controls, **attackers})
    beside, strays = _grade(tmp_path / "class", tmp_path / "beside")

    assert {key: beside[key] for key in alone} == alone  # every column, the status included
    assert catalogue.problems(tmp_path / "beside" / "grades.csv", {**controls, **attackers}) == []
    for name in CLASS_ATTACKS:
        row = beside[(name, "02-transformer")]
        assert float(row["score"]) == 0, name
        result = tmp_path / "beside" / "results" / name / "02-transformer.json"
        assert result.stat().st_size < 64_000, name  # the flood of output was cut, and counted
    # Each attacker that hangs costs one part limit (30 s: the controls' parts keep their time on a machine
    # busy with another grading run), the rest a few seconds each: the run ends within reaper.run's timeout,
    # and its time is not asserted here (a busy machine's); about 5 minutes on a quiet 2-core one.
    # The fork bomb's sleepers and the files that fill /tmp and /dev/shm lived in the sandbox's namespaces
    # and tmpfs: nothing of the run is left running, and its sandbox folders are gone (checked in _grade).
    assert strays == []
