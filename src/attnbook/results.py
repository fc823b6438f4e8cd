"""The result tables that the benchmarks commit in ``benchmarks/results/``, as the book's pages read them.

A measurement too long for the book build runs in ``benchmarks/`` and
commits a small CSV whose first line is a comment: the command that made it
and the machine. A page prints that line and plots or tabulates the rows
(:func:`finetune_selection` summarises ``bert_finetune.csv`` the way its
benchmark chooses).
The folder is looked for from the working directory upwards (the book is
built from the repository) and then above the package's own source (an
editable install of a clone, run from elsewhere).
"""

from __future__ import annotations

import csv
import re
import textwrap
from pathlib import Path

import attnbook

__all__ = ["committed_results", "provenance", "finetune_selection"]

_FOLDER = Path("benchmarks") / "results"


def committed_results(name: str) -> tuple[str, list[dict[str, str]]]:
    """``(made_by, rows)`` of ``benchmarks/results/<name>``: its first line without ``#``, and its rows.

    The values stay strings, as :class:`csv.DictReader` gives them.

    >>> made_by, rows = committed_results("vit_seeds.csv")
    >>> made_by.split(" | ")[0]                       # the command; the machine follows
    '.venv/bin/python benchmarks/bench_vit.py seeds'
    >>> rows[0]["model"], rows[0]["metric"], rows[0]["value"]
    ('vit-seed0', 'test_accuracy', '0.973')
    >>> committed_results("no_such_table.csv")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    FileNotFoundError: no benchmarks/results/no_such_table.csv above ...
    """
    cwd = Path.cwd()
    places = (cwd, *cwd.parents, *Path(attnbook.__file__).resolve().parents)
    path = next((p / _FOLDER / name for p in places if (p / _FOLDER / name).is_file()), None)
    if path is None:
        raise FileNotFoundError(f"no {_FOLDER / name} above {cwd} or the attnbook package: is this a clone "
                                "of the course repository?")
    with open(path, newline="") as f:
        return f.readline().strip("# \n"), list(csv.DictReader(f))


def provenance(*made_by: str, width: int = 78) -> str:
    """Which commands made these tables, and on which machines, each said once and wrapped at ``width``.

    The Python executable, the load average at each start and the date (the
    lines of :func:`attnbook.measure.machine_header` end with it) are left
    out: a page that reads several tables prints one short paragraph instead
    of a header line per table.

    >>> print(provenance(
    ...     ".venv/bin/python benchmarks/bench_vit.py seeds | x86_64, 2 cores, load average 1.6 at start",
    ...     ".venv/bin/python benchmarks/bench_vit.py longer | x86_64, 2 cores, load average 0.1 at start",
    ...     "python benchmarks/bench_vit.py mae | x86_64, 2 cores, load average 0.4 at start | 2026-11-26"))
    made by benchmarks/bench_vit.py seeds; benchmarks/bench_vit.py longer;
    benchmarks/bench_vit.py mae; on x86_64, 2 cores
    """
    commands, machines = [], []
    for line in made_by:
        command, _, machine = line.partition(" | ")
        command = re.sub(r"^\S*python\S*\s+", "", command)
        machine = re.sub(r",?\s*load average [\d.]+ at start", "", machine)
        machine = re.sub(r"\s*\|\s*\d{4}-\d{2}-\d{2}(?=\s*(\||$))", "", machine)  # the date section
        commands += [command] if command not in commands else []
        machines += [machine] if machine and machine not in machines else []
    text = "made by " + "; ".join(commands) + ("; on " + " and ".join(machines) if machines else "")
    return textwrap.fill(text, width)


def finetune_selection(
    rows: list[dict[str, str]],
) -> tuple[dict[tuple[str, int], tuple[float, float, str]], dict[tuple[str, int], float]]:
    """``(tuned, other)`` from the rows of ``bert_finetune.csv``: fine-tuning chosen on validation, and the rest.

    ``tuned[start, labels]`` is ``(mean validation, mean test accuracy,
    "pooling, lr X")`` of the fine-tuning setting (pooling ``cls`` or ``mean``
    and learning rate) with the best mean validation accuracy over the seeds;
    ``other[name, labels]`` the test accuracy of each run without a choice to
    make: ``"bag-of-words"``, ``"scratch probe"`` and ``"pretrained probe"``.

    >>> rows = [dict(start="scratch", labels="250", pooling=p, finetune_lr=lr, val_accuracy=v, accuracy=a)
    ...         for p, lr, v, a in [("cls", "0.001", "0.5", "0.4"), ("mean", "0.001", "0.7", "0.6")]]
    >>> rows.append(dict(start="pretrained", labels="250", pooling="probe", accuracy="0.55"))
    >>> finetune_selection(rows)
    ({('scratch', 250): (0.7, 0.6, 'mean, lr 0.001')}, {('pretrained probe', 250): 0.55})
    """
    runs: dict[tuple[str, int, str, str], list[dict[str, str]]] = {}  # the seeds of each setting
    for row in rows:
        if row["pooling"] in ("cls", "mean"):
            key = (row["start"], int(row["labels"]), row["pooling"], row["finetune_lr"])
            runs.setdefault(key, []).append(row)
    tuned: dict[tuple[str, int], tuple[float, float, str]] = {}
    for (start, n, pooling, lr), seeds in runs.items():
        val = sum(float(r["val_accuracy"]) for r in seeds) / len(seeds)
        test = sum(float(r["accuracy"]) for r in seeds) / len(seeds)
        if val > tuned.get((start, n), (0.0,))[0]:
            tuned[start, n] = (val, test, f"{pooling}, lr {float(lr):g}")
    other = {
        (row["start"] + (" probe" if row["pooling"] == "probe" else ""), int(row["labels"])): float(row["accuracy"])
        for row in rows if row["pooling"] not in ("cls", "mean")
    }
    return tuned, other
