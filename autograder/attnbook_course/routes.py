"""Refused routes, found from the environment: every installed function that does a part's whole job.

A graded part refuses the routes that would do its whole job for the student
(``Part.forbidden``: the reference, and library functions such as SciPy's
``linear_sum_assignment`` for the DETR matching). A list someone wrote names
the functions they thought of; this module searches instead. For each
:class:`Probe` (a part's function, with inputs made here) it calls every
public function of the installed numeric and graph packages (:data:`PACKAGES`,
walked module by module: graph and sparse-matrix modules included) on the
inputs, in the forms a library takes (tensors, NumPy arrays, a SciPy sparse
matrix, a cost matrix as a weighted bipartite networkx graph), and
keeps those whose result equals the reference's. The calls run in a child
process, one time limit each; a call that hangs or crashes the child costs
that candidate only.

    attnbook-course routes                      # every probe, every package: a few minutes
    attnbook-course routes --packages scipy     # one package

It writes ``autograder/refused_routes.csv``: part, function, route, and
whether the part refuses it; ``tests/test_routes.py`` fails while any route
found is neither refused nor allowed with a reason (:data:`ALLOWED`).

>>> same(np.array([2, 0]), torch.tensor([2, 0])), same((np.array([0, 1]), 3.0), torch.tensor([0, 1]))
(True, True)
"""

from __future__ import annotations

import argparse
import csv
import functools
import importlib
import inspect
import multiprocessing as mp
import pkgutil
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse
import torch

from attnbook.measure import machine_header

from . import GRADER

if TYPE_CHECKING:
    import networkx as nx

    from attnbook.grading.engine import Part

OUT = GRADER / "refused_routes.csv"
# Where a whole-job routine may live: the numeric libraries the course installs, walked completely.
PACKAGES = ("numpy", "scipy", "sklearn", "networkx", "torch.nn.functional", "torch.linalg", "torch.special", "torch",
            "timm.layers")
SKIP = ("._", "tests", "testing", "conftest", "torch.distributed", "torch.cuda", "torch.utils", "torch.onnx",
        "torch._", "torch.testing", "torch.backends", "torch.compiler", "torch.export", "torch.fx",
        "torch.package", "torch.profiler", "torch.jit", "torch.multiprocessing", "torch.mps", "torch.xpu",
        "numpy.f2py", "numpy.distutils", "numpy.ctypeslib", "scipy.datasets", "sklearn.datasets",
        "sklearn.externals", "numpy.lib.format", "scipy.io", "numpy.random", "torch.random")
# Routes found that a part may take, and why: the answer the part expects is no longer than they are.
ALLOWED = {
    ("check_masks", "numpy.tri"): "numpy's torch.tril(torch.ones(T, T)), the answer the part expects; "
                                  "trapping it would break numpy.tril too",
}
SECONDS = 2  # per call
CHUNK = 200  # candidates per child process


@dataclass(frozen=True)
class Probe:
    """A part's function and inputs for it (seeded); its reference is the part's forbidden name ending in it."""

    part: str
    function: str
    make: Callable[[], tuple]


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _q(): return torch.randn(2, 5, 4, generator=_gen())  # (B, T, hs)


PROBES = (
    Probe("check_matching", "hungarian_match", lambda: (torch.rand(6, 4, generator=_gen()) + 0.1,)),
    Probe("check_palette", "nearest_colour", lambda: (torch.rand(40, 3, generator=_gen()),
                                                      torch.rand(5, 3, generator=_gen().manual_seed(1)))),
    Probe("check_palette", "kmeans_step", lambda: (torch.rand(40, 3, generator=_gen()),
                                                   torch.rand(5, 3, generator=_gen().manual_seed(1)))),
    Probe("check_sinusoidal_positions", "sinusoidal_positions", lambda: (6, 8)),
    Probe("check_masks", "causal_mask", lambda: (5,)),
    Probe("check_scaled_dot_product_attention", "scaled_dot_product_attention", lambda: (_q(), _q() + 1, _q() - 1)),
    Probe("check_soft_attention", "soft_attention", lambda: (torch.randn(2, 5, generator=_gen()),
                                                             torch.randn(2, 5, 3, generator=_gen()))),
    Probe("check_attention_rollout", "attention_rollout",
          lambda: (list(torch.softmax(torch.randn(3, 2, 2, 5, 5, generator=_gen()), -1)),)),
    Probe("check_patchify", "patchify", lambda: (torch.randn(2, 3, 8, 8, generator=_gen()), 4)),
    Probe("check_bits_per_dim", "bits_per_dim", lambda: (torch.randn(2, 6, 9, generator=_gen()),
                                                         torch.randint(0, 9, (2, 6), generator=_gen()))),
    Probe("check_mlm_loss", "mlm_loss", lambda: (torch.randn(2, 6, 9, generator=_gen()),
                                                 torch.tensor([[-100, 3, -100, 1, -100, -100]] * 2))),
    Probe("check_masks", "padding_mask", lambda: (torch.tensor([[5, 3, 7, 7], [2, 7, 7, 7]]), 7)),
    Probe("check_pairs", "merge", lambda: ([1, 2, 3, 1, 2, 2, 1, 2], (1, 2), 9)),
    Probe("check_encode_decode", "encode_chunk",
          lambda: ([97, 97, 97, 98, 100, 97, 97, 97, 98, 97, 99], {(97, 97): 256, (97, 98): 257, (256, 257): 258})),
    Probe("check_next_token_loss", "next_token_loss", lambda: (torch.randn(2, 5, 7, generator=_gen()),
                                                               torch.randint(0, 7, (2, 5), generator=_gen()))),
    Probe("check_pixelcnn_mask", "pixelcnn_mask", lambda: (5, "A")),
    Probe("check_quantize_9bit", "quantize_9bit",
          lambda: (torch.randint(0, 256, (2, 3, 4, 5), generator=_gen(), dtype=torch.uint8),)),
    Probe("check_raster_order", "to_sequence", lambda: (torch.randint(0, 9, (2, 3, 4), generator=_gen()),)),
    Probe("check_raster_order", "from_sequence", lambda: (torch.randint(0, 9, (2, 12), generator=_gen()), 3, 4)),
    Probe("check_matching", "matching_cost", lambda: (torch.randn(5, 4, generator=_gen()),
                                                      torch.rand(5, 4, generator=_gen()) * 0.5 + 0.25,
                                                      torch.tensor([1, 3]),
                                                      torch.rand(2, 4, generator=_gen().manual_seed(1)) * 0.5 + 0.25)),
)


@functools.cache
def _parts() -> dict[str, Part]:
    """Every graded part by its check's name, from each chapter package of ``attnbook.grading``."""
    import attnbook.grading
    from attnbook.grading.engine import Part

    parts: dict[str, Part] = {}
    for chapter in pkgutil.iter_modules(attnbook.grading.__path__):
        if chapter.ispkg:
            module = importlib.import_module(f"attnbook.grading.{chapter.name}")
            parts |= {p.name: p for p in vars(module).values() if isinstance(p, Part)}
    return parts


def reference(probe: Probe) -> Callable:
    """The part's reference for the probe's function: its forbidden name ending in ``.function``."""
    name = next(f for f in _parts()[probe.part].forbidden if f.endswith("." + probe.function))
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _array(x: Any) -> np.ndarray | None:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if scipy.sparse.issparse(x):
        return x.toarray()
    try:
        a = np.asarray(x)
    except Exception:
        return None
    return a if a.dtype != object else None


def same(got: object, want: object) -> bool:
    """Does ``got`` hold the reference's answer ``want``: all of a tuple, or its first (main) element?"""
    if isinstance(want, tuple):
        whole = isinstance(got, tuple | list) and len(got) == len(want) and all(map(same, got, want))
        return whole or same(got, want[0])
    w, g = _array(want), _array(got)
    if w is not None and g is not None and g.shape == w.shape and (w.size > 1 or w.dtype.kind == "f"):
        return bool(np.allclose(g.astype(float), w.astype(float), atol=1e-4))
    return isinstance(got, tuple | list) and len(got) > 0 and same(got[0], want)


def _forms(args: tuple) -> Iterator[tuple[tuple, Callable]]:
    """The inputs as tensors, as NumPy arrays, and 2-D matrices as SciPy sparse matrices; a lone 2-D matrix also
    as a weighted bipartite graph (:func:`bipartite`), twice: each with how to read a matching of it back."""
    def unchanged(got):
        return got

    yield args, unchanged
    numpy = tuple(a.numpy() if isinstance(a, torch.Tensor) else a for a in args)
    yield numpy, unchanged
    if any(isinstance(a, np.ndarray) and a.ndim == 2 for a in numpy):
        yield tuple(scipy.sparse.csr_array(a) if isinstance(a, np.ndarray) and a.ndim == 2 else a
                    for a in numpy), unchanged
    if len(numpy) == 1 and isinstance(numpy[0], np.ndarray) and numpy[0].ndim == 2:
        n = numpy[0].shape[0]
        for maximise in (False, True):
            yield (bipartite(numpy[0], maximise),), functools.partial(assignment, n=n)


def bipartite(cost: np.ndarray, maximise: bool) -> nx.Graph:
    """A (n, m) cost matrix as a complete bipartite networkx graph: rows are the nodes 0 to n-1, columns n to
    n+m-1; the weights are the costs, or (``maximise``) a constant less them, so that a maximum-weight matching
    is a minimum-cost assignment (what a graph library's matching gives a student).

    >>> g = bipartite(np.array([[1.0, 2.0]]), maximise=False)
    >>> sorted(g.edges(data="weight"))
    [(0, 1, 1.0), (0, 2, 2.0)]
    """
    import networkx as nx

    n, m = cost.shape
    top = 2 * float(np.abs(cost).sum()) + 1
    graph = nx.Graph()
    graph.add_nodes_from(range(n), bipartite=0)
    graph.add_nodes_from(range(n, n + m), bipartite=1)
    graph.add_weighted_edges_from((i, n + j, top - float(cost[i, j]) if maximise else float(cost[i, j]))
                                  for i in range(n) for j in range(m))
    return graph


def assignment(matching: dict | Iterable, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """A matching of :func:`bipartite`'s graph (a set of node pairs, or a dict of node -> node) as
    ``(rows, cols)``, rows sorted; None when it is not one.

    >>> assignment({(3, 1), (0, 2)}, n=2)
    (array([0, 1]), array([0, 1]))
    """
    try:
        pairs = matching.items() if isinstance(matching, dict) else matching
        found = sorted({(min(u, v), max(u, v) - n) for u, v in pairs if min(u, v) < n <= max(u, v)})
    except (TypeError, ValueError):
        return None
    return np.array([r for r, _ in found], dtype=int), np.array([c for _, c in found], dtype=int)


def candidates(packages: tuple[str, ...] = PACKAGES) -> Iterator[str]:
    """Dotted names of the public functions of every module of ``packages`` (each function once)."""
    seen: set[int] = set()
    for package in packages:
        names = [package]
        try:
            root = importlib.import_module(package)
        except ImportError as err:  # timm.layers without torchvision: nothing of it can be imported either
            print(f"routes: {package} left out: {err}", file=sys.stderr)
            continue
        if hasattr(root, "__path__") and package != "torch":
            names += [m.name for m in pkgutil.walk_packages(root.__path__, package + ".")]
        for name in names:
            if any(s in name for s in SKIP) and name != package:
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    module = importlib.import_module(name)
            except Exception:
                continue
            for attr, obj in sorted(vars(module).items()):
                if attr.startswith("_") or not callable(obj) or inspect.isclass(obj) or id(obj) in seen:
                    continue
                seen.add(id(obj))
                yield f"{name}.{attr}"


def _resolve(dotted: str) -> Any:
    module, _, attr = dotted.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def _child(todo: list[str], probes: tuple[Probe, ...], out: Connection) -> None:
    """Try each candidate on each probe; report ``("hit", ...)`` on a match, ``("tried", name)`` after each."""
    import os
    import signal
    import tempfile

    os.chdir(tempfile.mkdtemp())  # a function that writes files writes them here
    torch.set_num_threads(1)
    wants = [(p, reference(p)(*p.make())) for p in probes]

    def ring(signum, frame):
        raise TimeoutError

    signal.signal(signal.SIGALRM, ring)
    for name in todo:
        try:
            fn = _resolve(name)
        except Exception:
            wants_here = []
        else:
            wants_here = wants
        for probe, want in wants_here:
            for form, read in _forms(probe.make()):  # fresh inputs: a function may change them in place
                try:
                    signal.alarm(SECONDS)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        got = read(fn(*form))
                        hit = got is not None and same(got, want)
                except BaseException:
                    hit = False
                finally:
                    signal.alarm(0)
                if hit:
                    out.send(("hit", probe.part, probe.function, name))
                    break
        out.send(("tried", name))


def search(packages: tuple[str, ...] = PACKAGES, probes: tuple[Probe, ...] = PROBES) -> list[tuple[str, str, str]]:
    """(part, function, route) for every candidate whose result equals a probe's reference answer.

    A fresh child takes :data:`CHUNK` candidates at a time (a call that corrupts
    its memory spoils no more than that); one that crashes or hangs is skipped.
    """
    todo = list(candidates(packages))
    hits: list[tuple[str, str, str]] = []
    ctx = mp.get_context("fork")
    while todo:
        chunk = todo[:CHUNK]
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_child, args=(chunk, probes, child), daemon=True)
        proc.start()
        child.close()  # the child's end lives in the child only: its death is an EOF here
        done = 0  # candidates of the chunk finished
        while done < len(chunk):
            if not parent.poll(SECONDS * len(probes) * 3 + 10):  # hung in C
                print(f"routes: {chunk[done]} hung; skipped", file=sys.stderr)
                done += 1
                break
            try:
                kind, *rest = parent.recv()
            except EOFError:  # the child crashed on the candidate it was trying
                print(f"routes: {chunk[done]} crashed the search; skipped", file=sys.stderr)
                done += 1
                break
            if kind == "hit":
                hits.append(tuple(rest))
            elif kind == "tried":
                done += 1
        proc.kill()
        proc.join()
        todo = todo[done:]
    return sorted(set(hits))


def write(hits: list[tuple[str, str, str]], header: str, out: Path = OUT) -> None:
    """The routes found, and whether each part refuses them, under the ``header`` line."""
    parts = _parts()
    with open(out, "w", newline="") as f:
        f.write(header + "\n")
        w = csv.writer(f)
        w.writerow(["part", "function", "route", "refused"])
        for part, function, route in hits:
            allowed = ALLOWED.get((part, route), "NOT REFUSED")
            w.writerow([part, function, route, "yes" if route in parts[part].forbidden else f"no: {allowed}"])


def run(args: argparse.Namespace) -> int:
    """``attnbook-course routes``: search ``args.packages`` (default :data:`PACKAGES`) and write the table
    (headed by ``args.command_line``)."""
    header = machine_header("cpu", threads=1, command=args.command_line)
    start = time.perf_counter()
    hits = search(tuple(args.packages or PACKAGES))
    write(hits, f"{header} | {time.perf_counter() - start:.0f} s", args.out)
    for hit in hits:
        print(*hit)
    return 0
