"""The data that crosses between the judge and the student's worker: JSON frames, no pickles.

A frame is an 8-byte length and a JSON document. Values are encoded as JSON
with a few tagged forms, so that decoding never runs code:

======================  ============================================
Python value            JSON
======================  ============================================
None, bool, int, str    themselves; floats too (NaN and ±inf included)
list                    a JSON array
tuple, dict             ``{"$tuple": [...]}``, ``{"$dict": [[k, v], ...]}``
``torch.Tensor``        ``{"$tensor": [dtype, shape, stride, base64 bytes, requires_grad]}``
a tensor over 8 MiB     ``{"$large": [dtype, shape]}`` (worker -> judge: a data-less ``meta`` tensor)
``torch.Generator``     ``{"$generator": <its state as a tensor>}``
``torch.dtype``         ``{"$dtype": "float64"}``
an attnbook object      ``{"$build": [import path, kwargs]}`` (judge -> worker only)
an object in the worker ``{"$handle": [id, is_module]}`` (worker -> judge)
anything else           ``{"$opaque": type name}`` (worker -> judge)
======================  ============================================

An attnbook object crosses by how to rebuild it: a model as its class, its
config, its weights and which of them are frozen (:func:`wire_module`); a test fixture through its own
``__wire__()``. Only names under ``attnbook.`` are ever imported.

The module uses the standard library and torch only: the worker imports it
from the sandbox, before (and without) any of attnbook.

>>> x = torch.arange(6.0).view(2, 3).t()  # non-contiguous
>>> y = decode(json.loads(json.dumps(encode((x, [1, None], {"k": 2.5})))))
>>> y[0].equal(x), y[0].stride() == x.stride(), y[1:]
(True, True, ([1, None], {'k': 2.5}))
"""

from __future__ import annotations

import base64
import dataclasses
import importlib
import json
import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any, cast

import numpy as np
import torch

# ------------------------------------------------------------------ the contract
# What the judge (_remote.py, sandbox.py) and the worker (_worker.py) must agree on, in one place: the worker
# sees only its own files, this one among them, so it cannot read them from attnbook.settings. The judge's own
# limits (the reply it reads, the time a part gets) are the instructor's settings (attnbook.settings).
MAX_FRAME = 1 << 30  # bytes: the judge's own frames (a model's weights); the worker reads with this
MAX_DEPTH = 64  # nesting of a value: lists, dicts and tagged forms together
MAX_TENSOR = 8 << 20  # bytes: a larger tensor from the worker crosses as its dtype and shape only
ERROR_CHARS = 2000  # of the message of an error the student's code raised: the feedback shows it
ERROR_TYPE_CHARS = 100  # of that error's type name
LINE_CHARS = 200  # of the student's line it ends with
NOTES_KEPT, NOTE_CHARS = 20, 500  # a reply's lists of strings (warnings, flags, references reached): how many, how long
# Heavy modules of the course's own dependencies that a part's child may import (sklearn: the digits
# loader; 0.5-2 s each time): a child names those it imported when its part ends, and the worker's host
# imports them before it forks the next part's child. Only these names: never one a student chooses.
PRELOADS = ("sklearn.datasets", "sklearn.linear_model", "sklearn.feature_extraction.text")
SCRATCH_FLAG = "--scratch"  # the worker's argument in the sandbox: /tmp and /dev/shm are its own, emptied per part
PROCESSES_FLAG = "--processes"  # the worker's argument in the sandbox: its process cap (RLIMIT_NPROC), sandbox.py's


class WireError(ValueError):
    """Data that does not decode: a malformed frame or an unknown form."""


class Opaque:
    """What the judge sees of a worker value that is not data (its type name only)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def _dtype(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise WireError(f"unknown dtype {name!r}")
    return dtype


def _tensor_to_json(x: torch.Tensor) -> dict:
    flat = x.detach().to("cpu").contiguous().reshape(-1)
    data = base64.b64encode(flat.view(torch.uint8).numpy().tobytes()).decode() if flat.numel() else ""
    return {"$tensor": [str(x.dtype).removeprefix("torch."), list(x.shape), list(x.stride()), data,
                        bool(x.requires_grad)]}


def _tensor_from_json(spec: list) -> torch.Tensor:
    dtype_name, shape, stride, data, requires_grad = spec
    dtype = _dtype(dtype_name)
    raw = bytearray(base64.b64decode(data))
    numel = 1
    for n in shape:
        numel *= int(n)
    if len(raw) != numel * torch.empty((), dtype=dtype).element_size():
        raise WireError("tensor data does not match its shape")
    flat = torch.frombuffer(raw, dtype=torch.uint8).view(dtype) if raw else torch.empty(0, dtype=dtype)
    x = torch.empty_strided(shape, stride, dtype=dtype)  # the sender's layout, non-contiguous included
    x.copy_(flat.reshape(shape))
    return x.requires_grad_(True) if requires_grad and dtype.is_floating_point else x


def wire_module(module: torch.nn.Module) -> dict:
    """An attnbook model as ``{"$build": ...}``: its class, its config dataclass and its weights."""
    cls, config = type(module), cast(Any, module).config  # an attnbook model: a dataclass config
    built_config = {"$build": [f"{type(config).__module__}.{type(config).__qualname__}",
                               encode(dataclasses.asdict(config))]}
    frozen = [name for name, p in module.named_parameters() if not p.requires_grad]
    kwargs = {"$dict": [["config", built_config], ["$state", encode(dict(module.state_dict()))],
                        ["$training", module.training], ["$frozen", encode(frozen)]]}
    return {"$build": [f"{cls.__module__}.{cls.__qualname__}", kwargs]}


def encode(value: object, *, handles: dict | None = None) -> object:
    """``value`` as JSON-ready data. ``handles`` (the worker's table) admits any object, by reference."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":  # a NumPy number: as in the notebook
        return value.item()
    if isinstance(value, list):
        return [encode(v, handles=handles) for v in value]
    if isinstance(value, tuple) and type(value) in (tuple, torch.Size):
        return {"$tuple": [encode(v, handles=handles) for v in value]}
    if isinstance(value, dict):  # an OrderedDict or a Counter crosses as a plain dict
        return {"$dict": [[encode(k, handles=handles), encode(v, handles=handles)] for k, v in value.items()]}
    if type(value) is torch.Tensor or (handles is None and isinstance(value, torch.Tensor)):
        if handles is not None and value.numel() * value.element_size() > MAX_TENSOR:
            # A result that large is a shape gone wrong (a broadcast, say): its shape is what the check needs.
            return {"$large": [str(value.dtype).removeprefix("torch."), list(value.shape)]}
        return _tensor_to_json(value)
    if isinstance(value, torch.Generator):
        return {"$generator": _tensor_to_json(value.get_state())}
    if isinstance(value, torch.dtype):
        return {"$dtype": str(value).removeprefix("torch.")}
    if handles is not None:  # the worker: objects stay there, the judge gets a reference
        if callable(value) or isinstance(value, torch.nn.Module):
            handles[id(value)] = value
            return {"$handle": [id(value), isinstance(value, torch.nn.Module)]}
        return {"$opaque": type(value).__name__}
    if isinstance(value, torch.nn.Module) and type(value).__module__.startswith("attnbook."):
        return wire_module(value)
    if hasattr(value, "__handle__"):  # the judge's proxy of a worker object goes back as a reference
        return {"$handle": value.__handle__()}
    if hasattr(value, "__wire__"):
        path, kwargs = value.__wire__()
        return {"$build": [path, encode(kwargs)]}
    raise WireError(f"cannot send a {type(value).__name__} to the worker")


def _build(path: str, kwargs: dict) -> object:
    if not path.startswith("attnbook."):
        raise WireError(f"refusing to build {path!r}: only attnbook objects cross")
    module_name, _, name = path.rpartition(".")
    obj = getattr(importlib.import_module(module_name), name)(
        **{k: v for k, v in kwargs.items() if not k.startswith("$")})
    if "$state" in kwargs:
        obj.load_state_dict(kwargs["$state"])
        obj.train(kwargs["$training"])
        frozen = set(kwargs.get("$frozen", ()))  # parameters arrive frozen as they were sent
        for name, p in obj.named_parameters():
            p.requires_grad_(name not in frozen)
    return obj


def decode(data: object, *, handles: dict | None = None, remote: Callable[..., object] | None = None,
           depth: int = 0) -> Any:  # like json.loads: whatever the sender sent
    """The inverse of :func:`encode`. The worker passes ``handles``; the judge passes ``remote``,
    which turns ``[id, is_module]`` into its proxy for a worker object. A value nested deeper than
    :data:`MAX_DEPTH` is a :class:`WireError`."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if depth >= MAX_DEPTH:
        raise WireError(f"value nested deeper than {MAX_DEPTH} levels")
    def inner(value: object) -> object:
        return decode(value, handles=handles, remote=remote, depth=depth + 1)

    if isinstance(data, list):
        return [inner(v) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise WireError("malformed value")
    (tag, body), = data.items()
    if tag == "$tuple":
        return tuple(inner(v) for v in body)
    if tag == "$dict":
        return {inner(k): inner(v) for k, v in body}
    if tag == "$tensor":
        return _tensor_from_json(body)
    if tag == "$generator":
        g = torch.Generator()
        g.set_state(_tensor_from_json(body["$tensor"]))
        return g
    if tag == "$dtype":
        return _dtype(body)
    if tag == "$large" and handles is None:
        dtype, shape = body
        if not all(isinstance(n, int) and n >= 0 for n in shape):
            raise WireError("malformed shape")
        return torch.empty(shape, dtype=_dtype(dtype), device="meta")  # a shape without data
    if tag == "$build" and handles is not None:
        path, kwargs = body
        built = decode(kwargs, handles=handles, depth=depth + 1)
        if not isinstance(built, dict):
            raise WireError("malformed $build arguments")
        return _build(path, built)
    if tag == "$handle" and remote is not None:
        return remote(*body)
    if tag == "$handle" and handles is not None:
        if body[0] not in handles:
            raise WireError("unknown handle")
        return handles[body[0]]
    if tag == "$opaque" and handles is None:
        return Opaque(str(body))
    raise WireError(f"unexpected {tag} here")


# ------------------------------------------------------------------ frames


def send(fd: int, message: dict, deadline: float | None = None) -> None:
    """Write one frame to file descriptor ``fd``; with ``deadline`` (``time.monotonic()``), ``fd`` must be
    non-blocking and :class:`TimeoutError` is raised when the reader has not taken it all by then."""
    body = json.dumps(message, allow_nan=True).encode()
    view = memoryview(struct.pack("<Q", len(body)) + body)
    while view:
        if deadline is not None:
            _wait(fd, deadline, write=True)
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue


def _wait(fd: int, deadline: float, write: bool = False) -> None:
    """Block until ``fd`` is ready, or raise :class:`TimeoutError` at ``deadline``."""
    left = deadline - time.monotonic()
    ready = select.select([], [fd], [], max(left, 0))[1] if write else select.select([fd], [], [], max(left, 0))[0]
    if not ready:
        raise TimeoutError("deadline passed")


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None:
            _wait(fd, deadline)
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the other side closed the pipe")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, deadline: float | None = None, max_bytes: int = MAX_FRAME) -> dict:
    """Read one frame from ``fd``; :class:`WireError` if it is not a JSON object of a sane size and shape.

    With ``deadline`` (``time.monotonic()``), the whole frame must have arrived by then, not only its first
    byte: :class:`TimeoutError` otherwise. A frame over ``max_bytes``, with more arrays and objects than
    one per 16 of its bytes (and 64; the catalogue's replies over 1 kB hold one per 47 bytes at most: their
    values are mostly tensors as base64 text),
    or nested deeper than :data:`MAX_DEPTH` is refused, so that decoding it costs a few times its size.

    >>> r, w = os.pipe()
    >>> send(w, {"a": [1, 2]}); receive(r)
    {'a': [1, 2]}
    >>> send(w, {"a": [[]] * 1000})
    >>> receive(r)
    Traceback (most recent call last):
    attnbook_course._wire.WireError: frame of 4007 bytes holds 1002 arrays and objects (at most 314 here)
    >>> os.close(r), os.close(w)
    (None, None)
    """
    (n,) = struct.unpack("<Q", _read_exact(fd, 8, deadline))
    if n > max_bytes:
        raise WireError(f"frame of {n} bytes refused (at most {max_bytes})")
    body = _read_exact(fd, n, deadline)
    containers, allowed = body.count(b"[") + body.count(b"{"), n // 16 + 64
    if containers > allowed:
        raise WireError(f"frame of {n} bytes holds {containers} arrays and objects (at most {allowed} here)")
    try:
        message = json.loads(body)
    except (ValueError, RecursionError) as err:  # RecursionError: nested past the interpreter's limit
        raise WireError(f"malformed frame: {type(err).__name__}") from None
    if not isinstance(message, dict):
        raise WireError("a frame must hold a JSON object")
    return message
