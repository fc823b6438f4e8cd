"""Box utilities for set prediction: format conversions, IoU and generalised IoU.

Boxes are (..., 4) tensors, either ``(cx, cy, w, h)`` (centre and size, what
DETR predicts, in [0, 1] image units) or ``(x0, y0, x1, y1)`` (corners, with
``x0 <= x1`` and ``y0 <= y1``, what IoU needs). Generalised IoU subtracts from
IoU the share of the smallest enclosing box that neither box covers, so it is
in [-1, 1] and still informative -- it still has a gradient -- when the boxes
do not overlap.

Reference: Rezatofighi et al., *Generalized Intersection over Union* (2019),
https://arxiv.org/abs/1902.09630; Carion et al., *End-to-End Object Detection
with Transformers* (2020), https://arxiv.org/abs/2005.12872.
"""

from __future__ import annotations

import torch

__all__ = ["box_cxcywh_to_xyxy", "box_xyxy_to_cxcywh", "box_area", "box_iou", "generalized_box_iou"]


def _boxes(name: str, boxes: object) -> torch.Tensor:
    if not isinstance(boxes, torch.Tensor) or not boxes.is_floating_point():
        got = boxes.dtype if isinstance(boxes, torch.Tensor) else type(boxes).__name__
        raise TypeError(f"{name} must be a floating-point tensor of boxes, got {got}")
    if boxes.dim() == 0 or boxes.shape[-1] != 4:
        raise ValueError(f"{name} must have shape (..., 4), got {tuple(boxes.shape)}")
    return boxes


def box_cxcywh_to_xyxy(boxes: torch.Tensor) -> torch.Tensor:
    """(cx, cy, w, h) -> (x0, y0, x1, y1).

    >>> box_cxcywh_to_xyxy(torch.tensor([0.5, 0.5, 0.2, 0.4]))
    tensor([0.4000, 0.3000, 0.6000, 0.7000])
    """
    cx, cy, w, h = _boxes("boxes", boxes).unbind(-1)
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1)


def box_xyxy_to_cxcywh(boxes: torch.Tensor) -> torch.Tensor:
    """(x0, y0, x1, y1) -> (cx, cy, w, h), the inverse of :func:`box_cxcywh_to_xyxy`.

    >>> box_xyxy_to_cxcywh(torch.tensor([0.4, 0.3, 0.6, 0.7]))
    tensor([0.5000, 0.5000, 0.2000, 0.4000])
    """
    x0, y0, x1, y1 = _boxes("boxes", boxes).unbind(-1)
    return torch.stack([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0], dim=-1)


def box_area(boxes: torch.Tensor) -> torch.Tensor:
    """Areas of (..., 4) xyxy boxes.

    >>> box_area(torch.tensor([[0.0, 0.0, 2.0, 3.0]]))
    tensor([6.])
    """
    boxes = _boxes("boxes", boxes)
    return (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])


def _pairwise(boxes1: torch.Tensor, boxes2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(iou, union, enclosing area), each (N, M)."""
    for name, b in (("boxes1", boxes1), ("boxes2", boxes2)):
        if _boxes(name, b).dim() != 2:
            raise ValueError(f"{name} must have shape (count, 4), got {tuple(b.shape)}")
        if b.numel() and not bool((b[:, 2:] >= b[:, :2]).all()):
            raise ValueError(f"{name} must be xyxy boxes with x0 <= x1 and y0 <= y1")
    a1, a2 = box_area(boxes1), box_area(boxes2)  # (N,), (M,)
    lo = torch.max(boxes1[:, None, :2], boxes2[None, :, :2])  # (N, M, 2) top-left of the overlap
    hi = torch.min(boxes1[:, None, 2:], boxes2[None, :, 2:])  # (N, M, 2) bottom-right
    inter = (hi - lo).clamp(min=0).prod(dim=-1)  # (N, M)
    union = a1[:, None] + a2[None, :] - inter
    lo_c = torch.min(boxes1[:, None, :2], boxes2[None, :, :2])  # the smallest enclosing box
    hi_c = torch.max(boxes1[:, None, 2:], boxes2[None, :, 2:])
    enclosing = (hi_c - lo_c).prod(dim=-1)  # (N, M)
    return inter / union, union, enclosing


def box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    """Intersection over union of every pair: (N, 4), (M, 4) xyxy -> (N, M).

    >>> box_iou(torch.tensor([[0.0, 0.0, 2.0, 2.0]]), torch.tensor([[1.0, 0.0, 3.0, 2.0]]))
    tensor([[0.3333]])
    """
    return _pairwise(boxes1, boxes2)[0]


def generalized_box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    """``IoU - (|C| - |A u B|) / |C|`` for every pair (``C`` the enclosing box): (N, M) in [-1, 1].

    Two unit squares side by side with a gap of 1: IoU 0, union 2, enclosing
    box 3 x 1, so GIoU = 0 - (3 - 2) / 3.

    >>> generalized_box_iou(torch.tensor([[0.0, 0.0, 1.0, 1.0]]), torch.tensor([[2.0, 0.0, 3.0, 1.0]]))
    tensor([[-0.3333]])
    """
    iou, union, enclosing = _pairwise(boxes1, boxes2)
    return iou - (enclosing - union) / enclosing
