"""DETR matching: hungarian_match is exact (scipy, brute force), box utilities and GIoU by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from attnbook.vit import (
    box_cxcywh_to_xyxy,
    box_iou,
    box_xyxy_to_cxcywh,
    generalized_box_iou,
    hungarian_match,
    matching_cost,
)


def brute_force(cost: torch.Tensor) -> float:
    n, m = cost.shape
    if n > m:
        return brute_force(cost.T)
    return min(float(sum(cost[i, j] for i, j in enumerate(cols))) for cols in itertools.permutations(range(m), n))


def check_assignment(cost: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> None:
    n, m = cost.shape
    assert len(rows) == len(cols) == min(n, m)
    assert len(set(rows.tolist())) == len(rows) and len(set(cols.tolist())) == len(cols)  # one-to-one
    assert rows.tolist() == sorted(rows.tolist())


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 9),
    m=st.integers(1, 9),
    seed=st.integers(0, 2**31 - 1),
    integer=st.booleans(),
)
def test_hungarian_matches_scipy(n: int, m: int, seed: int, integer: bool) -> None:
    g = torch.Generator().manual_seed(seed)
    if integer:
        cost = torch.randint(0, 4, (n, m), generator=g).double()
    else:
        cost = torch.randn(n, m, generator=g, dtype=torch.float64)
    rows, cols = hungarian_match(cost)  # integer costs in 0..3: many ties
    check_assignment(cost, rows, cols)
    r, c = linear_sum_assignment(cost.numpy())
    assert float(cost[rows, cols].sum()) == pytest.approx(float(cost.numpy()[r, c].sum()), abs=1e-9)


@pytest.mark.parametrize("n,m", [(1, 1), (2, 5), (4, 4), (6, 6), (6, 3), (5, 6)])
def test_hungarian_matches_brute_force(n: int, m: int) -> None:
    for seed in range(5):
        cost = torch.rand(n, m, generator=torch.Generator().manual_seed(seed))
        rows, cols = hungarian_match(cost)
        check_assignment(cost, rows, cols)
        assert float(cost[rows, cols].sum()) == pytest.approx(brute_force(cost), abs=1e-6)


def test_hungarian_is_not_row_wise_argmin() -> None:
    cost = torch.tensor([[0.0, 1.0], [0.1, 5.0]])  # both rows' cheapest column is 0
    rows, cols = hungarian_match(cost)
    assert cols.tolist() == [1, 0] and float(cost[rows, cols].sum()) == pytest.approx(1.1)


def test_hungarian_errors() -> None:
    with pytest.raises(ValueError, match="finite"):
        hungarian_match(torch.tensor([[0.0, float("inf")]]))
    with pytest.raises(ValueError, match="2-D"):
        hungarian_match(torch.zeros(3))
    with pytest.raises(ValueError, match="2-D"):
        hungarian_match(np.zeros((2, 2)))


# ----------------------------------------------------------------------------- boxes


def test_box_formats_round_trip() -> None:
    torch.manual_seed(0)
    cxcywh = torch.rand(5, 4, dtype=torch.float64)
    torch.testing.assert_close(box_xyxy_to_cxcywh(box_cxcywh_to_xyxy(cxcywh)), cxcywh)
    with pytest.raises(ValueError, match=r"\(\.\.\., 4\)"):
        box_cxcywh_to_xyxy(torch.rand(3, 5))


def test_iou_and_giou_by_hand() -> None:
    # A = [0, 2] x [0, 2] (area 4); B = [1, 4] x [1, 3] (area 6).
    # Overlap [1, 2] x [1, 2] = 1, union 4 + 6 - 1 = 9, IoU 1/9.
    # Enclosing box [0, 4] x [0, 3] = 12, GIoU = 1/9 - (12 - 9) / 12 = 1/9 - 1/4 = -5/36.
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0]], dtype=torch.float64)
    b = torch.tensor([[1.0, 1.0, 4.0, 3.0]], dtype=torch.float64)
    assert float(box_iou(a, b)) == pytest.approx(1 / 9)
    assert float(generalized_box_iou(a, b)) == pytest.approx(-5 / 36)
    assert float(generalized_box_iou(a, a)) == pytest.approx(1.0)
    far = torch.tensor([[100.0, 100.0, 102.0, 102.0]], dtype=torch.float64)
    assert -1 < float(generalized_box_iou(a, far)) < -0.99  # tends to -1 as boxes move apart
    with pytest.raises(ValueError, match="x0 <= x1"):
        generalized_box_iou(a, torch.tensor([[2.0, 0.0, 1.0, 1.0]]))


def test_giou_is_symmetric_and_bounded() -> None:
    torch.manual_seed(0)
    boxes = box_cxcywh_to_xyxy(torch.rand(7, 4, dtype=torch.float64) * 0.5 + 0.1)
    g = generalized_box_iou(boxes, boxes)
    torch.testing.assert_close(g, g.T)
    assert (g >= -1).all() and (g <= 1).all() and torch.allclose(g.diagonal(), torch.ones(7, dtype=torch.float64))


# ----------------------------------------------------------------------------- matching cost


def test_matching_cost_terms() -> None:
    torch.manual_seed(0)
    logits, pred = torch.randn(4, 3, dtype=torch.float64), torch.rand(4, 4, dtype=torch.float64) * 0.4 + 0.2
    labels, tgt = torch.tensor([2, 0]), torch.rand(2, 4, dtype=torch.float64) * 0.4 + 0.2
    cost = matching_cost(logits, pred, labels, tgt, w_class=1.5, w_l1=3.0, w_giou=0.5)
    assert cost.shape == (4, 2)
    for q, t in itertools.product(range(4), range(2)):
        giou = generalized_box_iou(box_cxcywh_to_xyxy(pred[q:q + 1]), box_cxcywh_to_xyxy(tgt[t:t + 1]))[0, 0]
        expected = -1.5 * logits[q].softmax(-1)[labels[t]] + 3.0 * (pred[q] - tgt[t]).abs().sum() - 0.5 * giou
        assert float(cost[q, t]) == pytest.approx(float(expected))
    with pytest.raises(ValueError, match="tgt_labels"):
        matching_cost(logits, pred, labels.double(), tgt)
    with pytest.raises(ValueError, match="pred_boxes"):
        matching_cost(logits, pred[:3], labels, tgt)


def test_matching_recovers_a_permutation() -> None:
    torch.manual_seed(0)
    tgt = box_xyxy_to_cxcywh(torch.tensor([[0.1, 0.1, 0.3, 0.3], [0.5, 0.5, 0.9, 0.8], [0.6, 0.1, 0.9, 0.3]]))
    labels = torch.tensor([0, 1, 2])
    perm = torch.tensor([4, 0, 2])  # target t is predicted by query perm[t]
    pred = torch.rand(5, 4) * 0.1 + 0.45
    pred[perm] = tgt + 0.01
    logits = torch.zeros(5, 3)
    logits[perm, labels] = 4.0
    rows, cols = hungarian_match(matching_cost(logits, pred, labels, tgt))
    assert dict(zip(cols.tolist(), rows.tolist(), strict=True)) == {0: 4, 1: 0, 2: 2}
