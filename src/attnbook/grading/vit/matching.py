"""Part 6: DETR's matching: ``matching_cost(...) -> (Q, M)`` and ``hungarian_match(cost) -> (rows, cols)``.

``matching_cost(pred_logits (Q, K), pred_boxes (Q, 4), tgt_labels (M,), tgt_boxes (M, 4),
w_class=1, w_l1=5, w_giou=2)`` is ``-w_class softmax(logits)[:, label] + w_l1 L1(boxes) -
w_giou GIoU(xyxy boxes)``; boxes are (cx, cy, w, h). It is compared with the reference and the
usual mistakes (log-probabilities, raw logits, a sign flipped, GIoU on unconverted boxes,
plain IoU, weights ignored, one term's weight ignored, other default weights, found by fitting
the three terms). ``hungarian_match`` must return ``min(n, m)`` pairs, one-to-one, of least
total cost (ties may be broken any way); a row-wise argmin that gives two rows one column, a
greedy assignment that is one-to-one but not the cheapest, or the (column, row) pairs of a
transposed cost with more rows than columns (DETR's shape, a visible case), is named.

>>> kind, args, weights = check_matching.visible[3].make()
>>> kind, tuple(args[0].shape)
('assignment', (5, 2))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .._compare import close, require_tensor
from .._core import run_student
from .._shared import available
from ..engine import Case, Part, first_match
from ..errors import CheckFailed
from ..steps import require_shape, require_unchanged, snapshot
from ._common import VIT

DEFAULTS = (1.0, 5.0, 2.0)  # w_class, w_l1, w_giou


def _cost_case(seed, Q, M, K, weights=None, dtype=torch.float32, swap=False):
    """``swap``: logits and boxes are non-contiguous (column-major) views."""

    def make():
        g = torch.Generator().manual_seed(seed)
        logits = 2.0 * torch.randn(Q, K, generator=g, dtype=dtype)
        centres = 0.25 + 0.5 * torch.rand(Q + M, 2, generator=g, dtype=dtype)
        sizes = 0.05 + 0.4 * torch.rand(Q + M, 2, generator=g, dtype=dtype)
        boxes = torch.cat([centres, sizes], dim=1)  # (Q + M, 4) in (cx, cy, w, h)
        if swap:
            logits, boxes = (t.t().contiguous().t() for t in (logits, boxes))
        labels = torch.randint(K, (M,), generator=g)
        return "cost", (logits, boxes[:Q], labels, boxes[Q:]), weights

    return make


def _assignment_case(seed, n, m, integer=False, dtype=torch.float32, swap=False):
    def make():
        g = torch.Generator().manual_seed(seed)
        shape = (m, n) if swap else (n, m)
        cost = (torch.randint(0, 4, shape, generator=g).to(dtype) if integer
                else torch.rand(shape, generator=g, dtype=dtype))
        return "assignment", ((cost.T if swap else cost),), None

    return make


def _giou(a: torch.Tensor, b: torch.Tensor, generalised: bool = True) -> torch.Tensor:
    """(Q, M) GIoU (or IoU) of corner boxes, without checking that x0 <= x1 (students' unconverted boxes)."""
    area = lambda t: (t[:, 2] - t[:, 0]) * (t[:, 3] - t[:, 1])  # noqa: E731
    lo, hi = torch.max(a[:, None, :2], b[None, :, :2]), torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (hi - lo).clamp(min=0).prod(-1)
    union = area(a)[:, None] + area(b)[None, :] - inter
    if not generalised:
        return inter / union
    enclosing = (torch.max(a[:, None, 2:], b[None, :, 2:]) - torch.min(a[:, None, :2], b[None, :, :2])).prod(-1)
    return inter / union - (enclosing - union) / enclosing


def _cost(logits, pred, labels, tgt, weights, cls="prob", giou="giou", convert=True, l1="l1"):
    """Matching costs as students compute them (the defaults: right), in float64."""
    wc, wl, wg = weights
    logits, pred, tgt = logits.double(), pred.double(), tgt.double()
    scores = logits.log_softmax(-1) if cls == "log" else logits if cls == "raw" else logits.softmax(-1)
    c_class = scores[:, labels] if cls == "plus" else -scores[:, labels]
    c_l1 = torch.cdist(pred, tgt, p=1) if l1 == "l1" else torch.cdist(pred, tgt, p=2)
    a, b = (VIT.box_cxcywh_to_xyxy(pred), VIT.box_cxcywh_to_xyxy(tgt)) if convert else (pred, tgt)
    c_giou = -_giou(a, b, generalised=giou != "iou")
    if giou == "plus":
        c_giou = -c_giou
    return wc * c_class + wl * c_l1 + wg * c_giou


COST_MISTAKES = (
    ("the class term uses log-probabilities: DETR's matching cost uses the probability itself, "
     "-softmax(logits)[:, label]", dict(cls="log")),
    ("the class term uses the raw logits: take the softmax over the classes first", dict(cls="raw")),
    ("the class term has the wrong sign: a likely class must make the pair cheaper, -p(label)", dict(cls="plus")),
    ("the GIoU term has the wrong sign: overlapping boxes must be cheaper, so the cost is -GIoU", dict(giou="plus")),
    ("the boxes were not converted from (cx, cy, w, h) to corners before the GIoU", dict(convert=False)),
    ("plain IoU was used: use the generalised IoU, which still ranks boxes that do not overlap", dict(giou="iou")),
    ("the box distance is Euclidean: use the L1 distance, the sum of absolute differences of (cx, cy, w, h)",
     dict(l1="l2")),
)


def _pairs(result: object, n: int, m: int) -> list[tuple[int, int]]:
    if not isinstance(result, tuple) or len(result) != 2:
        raise CheckFailed("hungarian_match should return a pair (rows, cols) of index tensors or lists")
    lists = []
    for value, name in zip(result, ("rows", "cols"), strict=True):
        if isinstance(value, torch.Tensor):
            if value.is_floating_point() or value.dim() != 1:
                raise CheckFailed(f"{name} should be a 1-D tensor (or list) of integer indices")
            value = value.tolist()
        if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
            raise CheckFailed(f"{name} should be a 1-D tensor or a list of ints")
        lists.append(value)
    rows, cols = lists
    if len(rows) != len(cols):
        raise CheckFailed("rows and cols should have the same length: one (row, column) pair each")
    if any(not 0 <= r < n for r in rows) or any(not 0 <= c < m for c in cols):
        raise CheckFailed("the indices are out of range: rows index the n rows of cost, cols its m columns")
    return list(zip(rows, cols, strict=True))


def _optimal(pairs: list[tuple[int, int]], cost: torch.Tensor) -> bool:
    """Whether the one-to-one ``pairs`` of ``min(n, m)`` (row, column) have the least total cost."""
    c = cost.double()
    rows, cols = {r for r, _ in pairs}, {k for _, k in pairs}
    if not len(rows) == len(cols) == len(pairs) == min(c.shape):
        return False
    best_rows, best_cols = VIT.hungarian_match(c)
    total, best = sum(float(c[r, k]) for r, k in pairs), float(c[best_rows, best_cols].sum())
    return total <= best + 1e-9 * max(1.0, abs(best))


def _transposed_back(result: object, cost: torch.Tensor) -> bool:
    """Whether ``result``, read as (column, row) pairs, is a least-cost assignment of ``cost``."""
    try:
        swapped = _pairs(result, cost.shape[1], cost.shape[0])
    except CheckFailed:
        return False
    return _optimal([(r, c) for c, r in swapped], cost)


def _check_assignment(fn: Callable, cost: torch.Tensor) -> None:
    before = snapshot(cost)
    result = run_student(fn, cost, what="hungarian_match")
    require_unchanged(before, cost, message="hungarian_match changed the cost matrix in place; work on a copy")
    n, m = cost.shape
    if n > m and _transposed_back(result, cost):
        raise CheckFailed("with more rows than columns, the pairs came back as (column, row): the assignment of the "
                          "transposed cost must be turned back into (row, column) pairs")
    pairs = _pairs(result, n, m)
    rows, cols = [r for r, _ in pairs], [c for _, c in pairs]
    if len(set(cols)) < len(cols):
        raise CheckFailed("two rows were given the same column: a row-wise argmin is not a matching; each "
                          "column (target) may be used once")
    if len(set(rows)) < len(rows):
        raise CheckFailed("two columns were given the same row: each row (prediction) may be used once")
    if len(pairs) != min(n, m):
        raise CheckFailed("an (n, m) cost has min(n, m) pairs in its assignment: every row when n <= m, every "
                          "column when n > m")
    if not _optimal(pairs, cost):
        raise CheckFailed("the assignment is one-to-one but not the cheapest: a greedy choice (the smallest cost "
                          "first) can block a better assignment; the Hungarian method finds the minimum total")


def _check_cost(fn: Callable, args: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
                weights: tuple[float, float, float] | None) -> None:
    before = snapshot(*args)
    kwargs: dict[str, Any] = {} if weights is None else dict(zip(("w_class", "w_l1", "w_giou"), weights, strict=True))
    out = run_student(fn, *args, what="matching_cost", **kwargs)
    require_unchanged(before, *args, message="matching_cost changed its inputs in place; compute on new tensors")
    out = require_tensor(out, "the result of matching_cost")
    Q, M = args[0].shape[0], args[3].shape[0]
    require_shape(out, (Q, M), "matching_cost should return a (Q, M) matrix: one cost per (prediction, target)")
    expected = VIT.matching_cost(*args, *(weights or DEFAULTS))
    if close(out, expected):
        return
    variants: list[tuple[str, Callable[..., torch.Tensor]]] = [
        (message, lambda kwargs=kwargs: _cost(*args, weights or DEFAULTS, **kwargs))
        for message, kwargs in COST_MISTAKES
    ]
    if weights is not None:
        variants.append(("the weights w_class, w_l1 and w_giou are ignored: multiply each term by its weight",
                         lambda: _cost(*args, DEFAULTS)))
        for i, (name, term) in enumerate((("w_class", "class"), ("w_l1", "L1"), ("w_giou", "GIoU"))):
            one = tuple(DEFAULTS[k] if k == i else w for k, w in enumerate(weights))  # that weight left at its default
            variants.append((f"the {term} term is not weighted by {name} (called with {name} = {weights[i]:g}): "
                             f"multiply it by {name}", lambda one=one: _cost(*args, one)))
    fallback = "the cost differs from -w_class p(label) + w_l1 L1(boxes) - w_giou GIoU(boxes)"
    err = first_match(out, variants, fallback, args[0].dtype)
    if str(err) == fallback and weights is None:  # the right terms, other default weights?
        fitted = _fitted_weights(out, args)
        for name, term, default, got in zip(("w_class", "w_l1", "w_giou"), ("class", "L1", "GIoU"), DEFAULTS,
                                            fitted or (), strict=False):
            if abs(got - default) > 1e-3 * default:
                raise CheckFailed(f"called without weights, the {term} term is weighted {got:.3g}: the default "
                                  f"{name} is {default:g}")
    raise err


def _fitted_weights(out: torch.Tensor, args: tuple) -> tuple[float, float, float] | None:
    """The weights (w_class, w_l1, w_giou) that make the right three terms sum to ``out``, if any do."""
    logits, pred, labels, tgt = args
    terms = torch.stack([_cost(logits, pred, labels, tgt, w).reshape(-1)
                         for w in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))], 1)  # (Q * M, 3)
    if terms.shape[0] < 4:  # too few entries to tell the weights apart
        return None
    weights = torch.linalg.lstsq(terms, out.detach().double().reshape(-1, 1)).solution[:, 0]
    if not close(out, (terms @ weights).reshape(out.shape), out.dtype):
        return None
    return tuple(weights.tolist())


def _check(cost_fn: Callable, match_fn: Callable) -> Callable:
    def check_one(kind, args, weights):
        if kind == "cost":
            _check_cost(cost_fn, args, weights)
        else:
            _check_assignment(match_fn, *args)

    return check_one


check_matching = Part(
    name="check_matching",
    visible=(
        Case("matching cost", _cost_case(701, 4, 2, 3)),
        Case("matching cost, other weights", _cost_case(703, 3, 2, 3, weights=(0.5, 3.0, 4.0))),
        Case("assignment", _assignment_case(702, 4, 4)),
        # DETR's own shape: more queries (rows) than objects (columns)
        Case("assignment, more rows than columns", _assignment_case(704, 5, 2)),
    ),
    check=_check,
    forbidden=("attnbook.vit.matching.matching_cost", "attnbook.vit.matching.hungarian_match",
               "attnbook.vit.matching._solve",
               # every installed solver of the whole assignment (autograder/attnbook_course/routes.py finds them)
               *available(("scipy.optimize.linear_sum_assignment", "scipy.optimize._lsap.linear_sum_assignment",
                           "scipy.sparse.csgraph.min_weight_full_bipartite_matching",
                           "scipy.sparse.csgraph._matching.min_weight_full_bipartite_matching",
                           # a graph library's matchings, on the cost matrix as a bipartite graph
                           "networkx.max_weight_matching", "networkx.min_weight_matching",
                           "networkx.algorithms.matching.max_weight_matching",
                           "networkx.algorithms.matching.min_weight_matching",
                           "networkx.algorithms.bipartite.minimum_weight_full_matching",
                           "networkx.algorithms.bipartite.matching.minimum_weight_full_matching"))),
)
