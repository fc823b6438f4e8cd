"""Trained models the book loads: small committed checkpoints, each rebuilt by one command.

A model that takes CPU-hours to train (longer than a page may run) is built
once by ``python -m attnbook.pretrained build NAME`` (``make checkpoints``
builds them all; ``--device cuda`` on a GPU) and committed as
``files/NAME.safetensors`` with a JSON sidecar: the exact command, the commit
and machine it was built on, wall and CPU seconds, the data, the metrics on
its test split and the weights' sha256. Pages call :func:`load` and print
:func:`provenance`; ``python -m attnbook.pretrained verify`` checks every file
and re-measures every metric.

>>> "vit-mnist" in names()
True
>>> load("no-such-model")  # doctest: +ELLIPSIS
Traceback (most recent call last):
attnbook.pretrained._store.PretrainedError: no checkpoint named 'no-such-model'; the registry has ...
"""

from __future__ import annotations

import importlib
import textwrap
from pathlib import Path

import torch
from torch import nn

from attnbook.pretrained._recipe import Recipe, Settings, Trained
from attnbook.pretrained._store import FOLDER, PretrainedError, read, read_sidecar

__all__ = ["PretrainedError", "Recipe", "Settings", "Trained", "names", "recipe", "info", "load", "provenance"]

_MODULES = {  # name -> module defining RECIPE
    "bert-plays": "attnbook.pretrained.bert_plays",
    "vit-mnist": "attnbook.pretrained.vit_mnist",
    "detr-squares": "attnbook.pretrained.detr_squares",
    "igpt-digits-ar": "attnbook.pretrained.igpt_digits_ar",
    "igpt-digits-masked": "attnbook.pretrained.igpt_digits_masked",
    "igpt-colour-digits": "attnbook.pretrained.igpt_colour_digits",
}


def names() -> list[str]:
    """Every registered checkpoint name."""
    return sorted(_MODULES)


def _known(name: str) -> str:
    if name not in _MODULES:
        raise PretrainedError(f"no checkpoint named {name!r}; the registry has {', '.join(names())}")
    return name


def recipe(name: str) -> Recipe:
    """The :class:`Recipe` registered as ``name`` (its module is imported now, not before)."""
    return importlib.import_module(_MODULES[_known(name)]).RECIPE


def info(name: str, folder: Path | str | None = None) -> dict:
    """The sidecar of ``name``: command, commit, machine, seconds, data, config, metrics, sha256."""
    return read_sidecar(Path(folder or FOLDER), _known(name))


def load(name: str, device: torch.device | str | None = None, folder: Path | str | None = None) -> nn.Module:
    """The trained model ``name`` in eval mode on ``device`` (default: the CPU).

    Raises :class:`PretrainedError` (saying how to rebuild) when the file is
    missing or its sha256 differs from the sidecar's.
    """
    found = recipe(name)
    state, sidecar = read(Path(folder or FOLDER), name)
    model = found.make(sidecar["config"])
    model.load_state_dict(state)
    return model.to(device or "cpu").eval()


def provenance(name: str, folder: Path | str | None = None, width: int = 78) -> str:
    """Where a loaded model comes from, for a page to print: the command, commit, machine and time.

    >>> print(provenance("vit-mnist"))  # doctest: +ELLIPSIS
    vit-mnist: built by `python -m attnbook.pretrained build vit-mnist` at commit
    ...
    """
    side = info(name, folder)
    minutes = side["cpu_seconds"] / 60
    text = (f"{name}: built by `{side['command']}` at commit {side['commit'][:7]} on {side['machine']} "
            f"in {side['wall_seconds'] / 60:.0f} min ({minutes:.0f} CPU-min); {side['data']}. "
            "Run the same command to rebuild it.")
    return textwrap.fill(text, width, break_on_hyphens=False, break_long_words=False)
