"""DETR's bipartite matching: a cost for every (prediction, target) pair, then the cheapest assignment.

``matching_cost`` -> ``hungarian_match``. DETR predicts a fixed set of ``Q``
boxes per image; to compute a loss, each of the ``M <= Q`` real objects is
paired with exactly one prediction (the rest should predict "no object"). The
pairing minimises the summed cost ``-w_class p(class) + w_l1 |b - b'|_1 +
w_giou (-GIoU(b, b'))``. ``hungarian_match`` solves that assignment problem
exactly with the shortest-augmenting-path form of the Hungarian method
(Jonker-Volgenant style, O(n^2 m)); rectangular costs assign ``min(n, m)`` pairs.
A greedy row-wise argmin is *not* a matching: two predictions may claim the
same object.

Shape legend: ``Q`` predictions (object queries), ``M`` targets, ``K`` classes.

References: Carion et al., *End-to-End Object Detection with Transformers*
(2020), https://arxiv.org/abs/2005.12872, section 3.1; Kuhn (1955); Jonker &
Volgenant (1987).
"""

from __future__ import annotations

import math

import torch

from attnbook.vit.boxes import box_cxcywh_to_xyxy, generalized_box_iou

__all__ = ["matching_cost", "hungarian_match"]


def matching_cost(
    pred_logits: torch.Tensor,
    pred_boxes: torch.Tensor,
    tgt_labels: torch.Tensor,
    tgt_boxes: torch.Tensor,
    w_class: float = 1.0,
    w_l1: float = 5.0,
    w_giou: float = 2.0,
) -> torch.Tensor:
    """The (Q, M) cost of pairing each prediction with each target, DETR's weights by default.

    ``pred_logits`` (Q, K) (K may include DETR's "no object" class),
    ``pred_boxes`` (Q, 4) and ``tgt_boxes`` (M, 4) in (cx, cy, w, h),
    ``tgt_labels`` (M,) class ids. The class term is the negative softmax
    probability of the target's class (not its log, as in DETR's matcher).

    >>> logits = torch.tensor([[5.0, -5.0], [-5.0, 5.0]])       # query 0 says class 0, query 1 class 1
    >>> boxes = torch.tensor([[0.3, 0.3, 0.2, 0.2], [0.7, 0.7, 0.2, 0.2]])
    >>> cost = matching_cost(logits, boxes, torch.tensor([1, 0]), boxes.flip(0))
    >>> cost.argmin(dim=0).tolist()                              # target 0 -> query 1, target 1 -> query 0
    [1, 0]
    """
    for name, t, want in (("pred_logits", pred_logits, "(Q, K)"), ("pred_boxes", pred_boxes, "(Q, 4)"),
                          ("tgt_boxes", tgt_boxes, "(M, 4)")):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.dim() != 2:
            got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a floating-point tensor of shape {want}, got {got}")
    if pred_boxes.shape != (pred_logits.shape[0], 4) or tgt_boxes.shape[1] != 4:
        raise ValueError(
            f"pred_boxes must be (Q={pred_logits.shape[0]}, 4) and tgt_boxes (M, 4), "
            f"got {tuple(pred_boxes.shape)} and {tuple(tgt_boxes.shape)}"
        )
    if (not isinstance(tgt_labels, torch.Tensor) or tgt_labels.shape != (tgt_boxes.shape[0],)
            or tgt_labels.is_floating_point()):
        raise ValueError(f"tgt_labels must be an integer tensor of shape (M={tgt_boxes.shape[0]},)")
    prob = pred_logits.softmax(dim=-1)  # (Q, K)
    cost_class = -prob[:, tgt_labels]  # (Q, M)
    cost_l1 = torch.cdist(pred_boxes, tgt_boxes, p=1)  # (Q, M)
    cost_giou = -generalized_box_iou(box_cxcywh_to_xyxy(pred_boxes), box_cxcywh_to_xyxy(tgt_boxes))  # (Q, M)
    return w_class * cost_class + w_l1 * cost_l1 + w_giou * cost_giou


def _solve(cost: list[list[float]], n: int, m: int) -> list[int]:
    """Assign each of ``n <= m`` rows a distinct column at least total cost; returns row -> column.

    Rows are added one at a time; each addition grows a shortest path (in
    reduced costs ``c[i][j] - u[i] - v[j]``, kept >= 0 by the potentials)
    from the new row to a free column, Dijkstra-style, and flips it.
    """
    inf = math.inf
    u, v = [0.0] * (n + 1), [0.0] * (m + 1)  # potentials, 1-based; index 0 is a virtual start
    owner = [0] * (m + 1)  # owner[j]: the row (1-based) holding column j, 0 if free
    for i in range(1, n + 1):
        owner[0], j0 = i, 0
        dist, prev, used = [inf] * (m + 1), [0] * (m + 1), [False] * (m + 1)
        while owner[j0] != 0:
            used[j0] = True
            i0, delta, j1 = owner[j0], inf, 0
            row = cost[i0 - 1]
            for j in range(1, m + 1):
                if not used[j]:
                    reduced = row[j - 1] - u[i0] - v[j]
                    if reduced < dist[j]:
                        dist[j], prev[j] = reduced, j0
                    if dist[j] < delta:
                        delta, j1 = dist[j], j
            for j in range(m + 1):  # shift potentials so that the tree's edges stay tight
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    dist[j] -= delta
            j0 = j1
        while j0:  # flip the augmenting path back to the start
            j1 = prev[j0]
            owner[j0] = owner[j1]
            j0 = j1
    match = [-1] * n
    for j in range(1, m + 1):
        if owner[j]:
            match[owner[j] - 1] = j - 1
    return match


def hungarian_match(cost: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The minimum-cost assignment of a (n, m) cost matrix: ``(rows, cols)``, ``min(n, m)`` pairs.

    ``rows`` is sorted; ``cost[rows, cols].sum()`` is the least possible, as
    from ``scipy.optimize.linear_sum_assignment``. Costs must be finite.

    >>> cost = torch.tensor([[4.0, 1.0, 3.0], [2.0, 0.0, 5.0], [3.0, 2.0, 2.0]])
    >>> rows, cols = hungarian_match(cost)
    >>> rows.tolist(), cols.tolist(), float(cost[rows, cols].sum())   # row-wise argmin would pick col 1 twice
    ([0, 1, 2], [1, 0, 2], 5.0)
    """
    if not isinstance(cost, torch.Tensor) or cost.dim() != 2 or cost.dtype == torch.bool:
        got = tuple(cost.shape) if isinstance(cost, torch.Tensor) else type(cost).__name__
        raise ValueError(f"cost must be a 2-D tensor of shape (n, m), got {got}")
    if not bool(torch.isfinite(cost.double()).all()):
        raise ValueError("cost must hold finite numbers only (no inf or nan)")
    device = cost.device
    flipped = cost.shape[0] > cost.shape[1]
    c = cost.T if flipped else cost  # (n, m) with n <= m
    n, m = c.shape
    match = _solve(c.detach().double().cpu().tolist(), n, m)
    a = torch.arange(n, dtype=torch.long)
    b = torch.tensor(match, dtype=torch.long)
    if flipped:  # rows of c are columns of cost
        order = b.argsort()
        a, b = b[order], a[order]
    return a.to(device), b.to(device)
