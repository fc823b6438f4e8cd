"""Build a registered checkpoint: train it, score the stored (rounded) weights, write weights and sidecar.

The metrics in the sidecar are measured on the weights as they are stored
(cast to the recipe's dtype and back), so that :func:`attnbook.pretrained.load`
followed by the recipe's ``evaluate`` gives the same numbers.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import time
from pathlib import Path

import torch

from attnbook.pretrained import recipe
from attnbook.pretrained._recipe import Settings
from attnbook.pretrained._store import save

__all__ = ["build", "machine", "commit"]


def machine(device: torch.device) -> str:
    """``x86_64, 2 CPUs, 1 thread, torch 2.13.0+cpu, cpu``, or the same ending with the GPU's name."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
    threads = torch.get_num_threads()
    return (f"{platform.machine()}, {cpus} CPUs, {threads} thread{'s' * (threads != 1)}, "
            f"torch {torch.__version__}, {where}")


def commit() -> str:
    """The checked-out commit, with ``+dirty`` when tracked files differ from it ("unknown" outside git)."""
    root = Path(__file__).resolve().parents[3]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def build(name: str, folder: Path, device: torch.device, smoke: bool = False, seed: int = 0) -> dict:
    """Train ``name`` on ``device`` and write ``folder/name.{safetensors,json}``; the sidecar."""
    found = recipe(name)
    command = f"python -m attnbook.pretrained build {name}"
    command += (f" --device {device.type}" if device.type != "cpu" else "") + (" --smoke" if smoke else "")
    command += f" --seed {seed}" if seed else ""
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    wall, cpu = time.perf_counter(), time.process_time()
    trained = found.train(Settings(device=device, smoke=smoke, seed=seed))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    cast = getattr(torch, found.dtype)
    stored = {k: v.detach().to(cast).float() if v.is_floating_point() else v
              for k, v in trained.model.state_dict().items()}
    model = found.make(trained.config).to(device)
    model.load_state_dict(stored)
    metrics = found.evaluate(model.eval(), trained.config, device)
    sidecar = {"command": command, "commit": commit(), "machine": machine(device), "started": started,
               "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "data": found.data,
               "summary": found.summary, "config": trained.config, "notes": trained.notes,
               "metrics": {k: round(float(v), 4) for k, v in metrics.items()}, "tolerance": found.tolerance,
               "smoke": smoke}
    return save(folder, name, trained.model.state_dict(), sidecar, dtype=found.dtype)
