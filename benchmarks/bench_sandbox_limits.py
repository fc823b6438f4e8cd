"""What the grading limits hold in practice: the judge's memory on the worst replies, and the sandbox's caps.

    python benchmarks/bench_sandbox_limits.py      # writes benchmarks/results/sandbox_limits.csv

1. **The judge's memory on the largest allowed reply.** For each shape of
   frame, one at the frame cap (``ATTNBOOK_GRADING_FRAME_MIB``) or refused near
   it, a fresh process that has imported what a judge imports reads it from a
   pipe with the judge's own code (:func:`_wire.receive`, then
   :func:`_wire.decode` of its value) and reports how far its peak resident
   memory rose above what it held before (``VmHWM``, reset first). JSON turns
   into Python objects many times its size (a dict is 184 bytes), so the
   shapes are the worst ones the frame's rules admit.
2. **The sandbox, from inside.** A probe started exactly as a worker is (the
   same bubblewrap command, limits and cgroup) forks until refused, fills
   ``/tmp`` and ``/dev/shm`` until refused, and tries to write to ``/`` and
   ``/dev``; it reports what it managed. Needs bubblewrap.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from attnbook_course import sandbox

RESULTS = Path(__file__).resolve().parent / "results" / "sandbox_limits.csv"

READER = """
import json, os, sys, time
import torch
from attnbook_course import _wire, judge


def status(key):  # kB
    return int(next(line for line in open("/proc/self/status") if line.startswith(key)).split()[1])


with open("/proc/self/clear_refs", "w") as fh:
    fh.write("5")  # the peak resident size starts again from the current one
before = status("VmRSS")
fd, cap = int(sys.argv[1]), int(sys.argv[2])
start = time.perf_counter()
try:
    message = _wire.receive(fd, max_bytes=cap)
    _wire.decode(message["v"])
    outcome = "decoded"
except _wire.WireError as err:
    outcome = "refused: " + str(err)[:60]
peak = status("VmHWM")
print(json.dumps({"outcome": outcome, "growth_mib": (peak - before) / 1024, "seconds": time.perf_counter() - start}))
"""


def frames(cap: int) -> dict[str, bytes]:
    """The worst frame bodies of each shape at ``cap`` bytes (what a forged reply could hold)."""
    def fill(unit: bytes) -> bytes:
        head, tail = b'{"v": [', b"0]}"
        return head + unit * ((cap - len(head) - len(tail)) // len(unit)) + tail

    nbytes = (cap - 100) * 3 // 4 // 12 * 12  # float32 data whose base64 fills the frame
    tensor = b'{"v": {"$tensor": ["float32", [%d], [1], "%s", false]}}' % (nbytes // 4, b"A" * (nbytes // 3 * 4))
    return {
        "a tensor (base64, as replies are)": tensor,
        "tuples of eight small ints": fill(b'{"$tuple": [1, 2, 3, 4, 5, 6, 7, 8]},'),
        "one-item dicts (refused by decode)": fill(b'{"abcdefghi":0},'),
        "lists of seven zeros": fill(b"[0,0,0,0,0,0,0],"),
        "floats": fill(b"1e1,"),
        "two-letter strings": fill(b'"ab",'),
        "empty lists (refused: too many)": fill(b"[],"),
    }


def judge_memory(cap: int) -> list[dict]:
    rows = []
    for shape, body in frames(cap).items():
        r, w = os.pipe()
        reader = subprocess.Popen([sys.executable, "-c", READER, str(r), str(cap)], pass_fds=(r,),
                                  stdout=subprocess.PIPE, text=True)
        os.close(r)
        writer = threading.Thread(target=_write, args=(w, len(body).to_bytes(8, "little") + body))
        writer.start()
        out, _ = reader.communicate(timeout=600)
        writer.join()
        found = json.loads(out)
        rows.append({"measure": "judge memory on a reply", "case": shape, "frame_mib": round(len(body) / 2**20, 1),
                     "value": round(found["growth_mib"]), "unit": "MiB of peak growth",
                     "note": f"{found['outcome']}; {found['seconds']:.1f} s"})
        print(rows[-1])
    return rows


def _write(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BrokenPipeError:
        pass  # the reader refused the frame before reading it all
    finally:
        os.close(fd)


PROBE = r"""
import errno, os, time
found = {}
n = 0
while n < 1000:
    try:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
    except OSError:
        break
found["processes started"] = n + 1  # and the probe itself
for folder in ("/tmp", "/dev/shm", "/dev", "/"):
    written = 0
    try:
        with open(os.path.join(folder, "fill"), "wb") as fh:
            while written < 8 << 30:
                fh.write(b"x" * (16 << 20))
                fh.flush()
                written += 16 << 20
    except OSError:
        pass
    try:
        os.remove(os.path.join(folder, "fill"))
    except OSError:
        pass
    found[f"bytes written to {folder}"] = written
print(repr(found), flush=True)
"""


def sandbox_caps() -> list[dict]:
    if sandbox.isolation() != "bubblewrap":
        print("bubblewrap does not run here: the sandbox's caps are not measured")
        return []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "_worker.py").write_text(PROBE)
        (folder / "_wire.py").write_text("")
        command, cwd = sandbox.worker_command(folder, [])
        group = sandbox.new_cgroup()
        proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, text=True, start_new_session=True,
                                preexec_fn=functools.partial(sandbox.apply_limits, group))
        line = proc.stdout.readline()  # one line: the probe's sleeping children hold the pipe open
        found = eval(line or "{}")  # our own probe's dict of numbers
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        peak = group.peak() if group else {}
        if group:
            group.remove()
    rows = [{"measure": "sandbox", "case": key, "frame_mib": "", "value": value,
             "unit": "bytes" if key.startswith("bytes") else "processes", "note": sandbox.describe()["processes"]
             if key.startswith("processes") else sandbox.describe()["files"]} for key, value in found.items()]
    for key, value in peak.items():
        rows.append({"measure": "sandbox", "case": f"cgroup peak {key}", "frame_mib": "", "value": value,
                     "unit": "bytes" if key == "memory" else "processes", "note": sandbox.describe()["memory"]})
    for row in rows:
        print(row)
    return rows


def main() -> None:
    cap = int(sandbox.limits()["frame_mib"] * 2**20)
    from attnbook.measure import machine_header  # imports torch, as the header names its version

    header = machine_header(notes=[f"sandbox {sandbox.isolation()}"])
    rows = judge_memory(cap) + sandbox_caps()
    RESULTS.parent.mkdir(exist_ok=True)
    with open(RESULTS, "w", newline="") as fh:
        fh.write(header + "\n")
        writer = csv.DictWriter(fh, fieldnames=["measure", "case", "frame_mib", "value", "unit", "note"])
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
