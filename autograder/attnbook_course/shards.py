"""One class graded by N machines into one gradebook: ``attnbook-course grade --shard I/N``, then ``gather``.

Shard ``I`` of ``N`` grades the submissions whose stable hash (:func:`owner`:
the sha256 of the student and assignment ids, nothing of the machine, the
clock or the other submissions) falls to it. The shards share the state folder
(a network file system, a shared volume) and the gradebook (a PostgreSQL
server: ``ATTNBOOK_GRADEBOOK``). Each writes only its own submissions' files
(``submitted/``, ``results/``, ``autograded/``, ``feedback/``,
``grading-cache/``) and its own ``shards/I-of-N/`` (``grades.csv``,
``grading.log``, and ``manifest.json`` last, when it is done); its gradebook
writes hold the gradebook's lock (``recording.lock``). It removes the class's
``grades.csv``, which no longer says what the gradebook holds, until
:func:`gather` writes it again from every shard's results, once every shard is
done.

>>> parse("1/4"), parse(" 0/1 ")
((1, 4), (0, 1))
>>> parse("4/4")
Traceback (most recent call last):
...
ValueError: 4/4: I must be below N (the shards of 4 are 0/4 to 3/4)
>>> pairs = [(f"s{k}", a) for k in range(50) for a in ("01-rnn-attention", "03-bert")]
>>> sorted(p for i in range(3) for p in mine(pairs, (i, 3))) == sorted(pairs)
True
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

from . import gradecache, recording
from .records import SubmissionRecord

SHARDS = "shards"  # STATE/shards/I-of-N/: what shard I of N writes for the class as a whole
MANIFEST = "manifest.json"
Pair = tuple[str, str]  # (student, assignment)
Shard = tuple[int, int]  # (I, N)


def parse(text: str) -> Shard:
    """``I/N`` as (I, N): shard I (from 0) of N (at least 1); anything else is a ValueError that says why."""
    found = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not found:
        raise ValueError(f"expected I/N, shard I (from 0) of N machines, such as 0/4; got {text!r}")
    i, n = int(found[1]), int(found[2])
    if n < 1:
        raise ValueError(f"{text.strip()}: N, the number of shards, must be at least 1")
    if i >= n:
        raise ValueError(f"{text.strip()}: I must be below N (the shards of {n} are 0/{n} to {n - 1}/{n})")
    return i, n


def owner(pair: Pair, n: int) -> int:
    """The shard (of ``n``) that grades ``pair``: its ids' sha256, the same on every machine and every run.

    >>> owner(("ada", "03-bert"), 1), owner(("ada", "03-bert"), 4) == owner(("ada", "03-bert"), 4)
    (0, True)
    """
    digest = hashlib.sha256(f"{pair[0]}\0{pair[1]}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % n


def mine(pairs: list[Pair], shard: Shard | None) -> list[Pair]:
    """The pairs of ``shard`` (all of them without one), in their order."""
    return list(pairs) if shard is None else [p for p in pairs if owner(p, shard[1]) == shard[0]]


def folder(state: Path, shard: Shard) -> Path:
    return state / SHARDS / f"{shard[0]}-of-{shard[1]}"


def start(state: Path, shard: Shard | None) -> None:
    """Before a run: a plain run removes every shard's files, a shard those of another N (earlier runs')."""
    base = state / SHARDS
    for old in sorted(base.iterdir()) if base.is_dir() else ():
        if shard is None or not old.name.endswith(f"-of-{shard[1]}"):
            shutil.rmtree(old, ignore_errors=True)
    if shard is not None:
        (folder(state, shard) / MANIFEST).unlink(missing_ok=True)  # not done until this run writes it
        (state / "grades.csv").unlink(missing_ok=True)  # the class's: out of date until gather


def finish(state: Path, shard: Shard, keys: dict[Pair, str]) -> None:
    """After a shard's run: its manifest, the key of each of its submissions and of each grader."""
    graders = {a: gradecache.grader_key(a) for a in sorted({a for _, a in keys})}
    target = folder(state, shard) / MANIFEST
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps({"shard": list(shard), "graders": graders,
                               "submissions": {f"{s}/{a}": k for (s, a), k in sorted(keys.items())}},
                              indent=1, sort_keys=True) + "\n")
    tmp.replace(target)


def gather(state: Path, pairs: list[Pair], db_url: str) -> tuple[list[SubmissionRecord], str]:
    """The class's results and grading log, from the shards' results once every shard is done (their late
    penalties as the shards recorded them in the gradebook); a ValueError says which shard or submission
    is missing (not done, stopped, or submitted since)."""
    manifests = [json.loads(p.read_text()) for p in sorted((state / SHARDS).glob(f"*/{MANIFEST}"))]
    if not manifests:
        raise ValueError(f"no shard is done in {state / SHARDS}: run `attnbook-course grade --shard I/N` for each "
                         "I first")
    counts = sorted({m["shard"][1] for m in manifests})
    if len(counts) > 1:
        raise ValueError(f"shards of {' and of '.join(map(str, counts))} machines in {state / SHARDS}: grade again")
    n = counts[0]
    if missing := sorted(set(range(n)) - {m["shard"][0] for m in manifests}):
        raise ValueError(f"shards not done: {', '.join(f'{i}/{n}' for i in missing)}")
    graders: dict[str, str] = {}
    keys: dict[str, str] = {}
    for manifest in manifests:
        for assignment, key in manifest["graders"].items():
            if graders.setdefault(assignment, key) != key:
                raise ValueError(f"the shards graded {assignment} with different graders (code, versions or "
                                 "ATTNBOOK_GRADING_* settings): grade again with the same ones")
        keys.update(manifest["submissions"])
    results, stale = [], []
    for student, assignment in pairs:
        entry = gradecache.stored(state, student, assignment)
        key = keys.get(f"{student}/{assignment}")
        if key is None or assignment not in graders or entry is None or entry[0] != key or key != \
                gradecache.submission_key(graders[assignment], student, state / "submitted" / student / assignment):
            stale.append(f"{student}/{assignment}")
        else:
            results.append(entry[1])
    if stale:
        raise ValueError(f"{len(stale)} submissions not graded by these shards (new or changed since, or their "
                         f"shard was stopped): {', '.join(stale)}; grade again")
    held = recording.recorded(db_url)
    if lost := [f"{s}/{a}" for s, a in pairs if (s, a) not in held]:
        raise ValueError(f"{len(lost)} submissions are not in the gradebook {db_url}: {', '.join(lost)}")
    log = "".join((p / "grading.log").read_text() for p in sorted((state / SHARDS).iterdir())
                  if (p / "grading.log").exists())
    return results, log
