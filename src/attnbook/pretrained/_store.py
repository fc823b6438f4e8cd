"""Checkpoint files: weights in ``safetensors`` (no pickles) beside a JSON sidecar saying how they were made.

``files/<name>.safetensors`` holds the state dict (floating tensors stored in
the recipe's dtype, float16 by default); ``files/<name>.json`` holds the
command, commit, machine, seconds, data, constructor config, metrics and the
weights' sha256. :func:`save` writes both atomically; :func:`read` checks the
checksum before it hands the tensors back.

>>> import tempfile, torch
>>> folder = Path(tempfile.mkdtemp())
>>> side = save(folder, "demo", {"w": torch.ones(2, 3)}, {"metrics": {"accuracy": 1.0}}, dtype="float16")
>>> side["bytes"] > 0, len(side["sha256"])
(True, 64)
>>> tensors, sidecar = read(folder, "demo")
>>> tensors["w"].dtype, sidecar["metrics"]
(torch.float32, {'accuracy': 1.0})
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

__all__ = ["FOLDER", "PretrainedError", "sha256_of", "save", "read", "read_sidecar"]

FOLDER = Path(__file__).parent / "files"  # the committed checkpoints


class PretrainedError(RuntimeError):
    """A checkpoint is missing, damaged or unknown; the message says how to rebuild it."""


def rebuild_hint(name: str) -> str:
    return f"rebuild it with `python -m attnbook.pretrained build {name}` (or `make checkpoints`)"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _atomic(path: Path, write: Callable[[Path], object]) -> None:
    """Call ``write(temporary_path)``, then rename it onto ``path``: a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the registry is read by everyone
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save(folder: Path, name: str, state: dict[str, torch.Tensor], sidecar: dict, dtype: str = "float16") -> dict:
    """Write ``<name>.safetensors`` (floating tensors cast to ``dtype``) and ``<name>.json``; the sidecar.

    Tensors that share storage (tied weights) are written once each as separate copies.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cast = getattr(torch, dtype)
    tensors = {k: (v.detach().to("cpu", cast) if v.is_floating_point() else v.detach().cpu()).contiguous().clone()
               for k, v in state.items()}
    weights = folder / f"{name}.safetensors"
    _atomic(weights, lambda tmp: save_file(tensors, str(tmp), metadata={"name": name}))
    sidecar = {**sidecar, "name": name, "dtype": dtype, "bytes": weights.stat().st_size,
               "sha256": sha256_of(weights)}
    _atomic(folder / f"{name}.json",
            lambda tmp: tmp.write_text(json.dumps(sidecar, indent=2, sort_keys=True) + "\n", encoding="utf-8"))
    return sidecar


def read_sidecar(folder: Path, name: str) -> dict:
    path = Path(folder) / f"{name}.json"
    if not path.is_file():
        raise PretrainedError(f"no sidecar {path}: the checkpoint {name!r} was never built here; "
                              + rebuild_hint(name))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise PretrainedError(f"{path} is not valid JSON ({err}); " + rebuild_hint(name)) from None


def read(folder: Path, name: str) -> tuple[dict[str, torch.Tensor], dict]:
    """``(state dict in float32, sidecar)`` after checking the weights' sha256 against the sidecar's."""
    sidecar = read_sidecar(folder, name)
    weights = Path(folder) / f"{name}.safetensors"
    if not weights.is_file():
        raise PretrainedError(f"no weights {weights} for the checkpoint {name!r}; " + rebuild_hint(name))
    digest = sha256_of(weights)
    if digest != sidecar.get("sha256"):
        raise PretrainedError(
            f"{weights} has sha256 {digest[:12]}..., its sidecar says {str(sidecar.get('sha256'))[:12]}...: "
            "the file is damaged or was replaced by hand (is it a Git LFS pointer?); " + rebuild_hint(name))
    tensors = load_file(str(weights))
    return {k: v.float() if v.is_floating_point() else v for k, v in tensors.items()}, sidecar
