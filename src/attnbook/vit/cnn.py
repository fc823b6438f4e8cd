"""A small convolutional network: the baseline that chapter 6 holds a ViT against.

Two stages of two 3x3 convolutions (ReLU after each, batch norm before it),
a 2x2 max-pool between the stages and a global average pool before a linear
classifier: the locality, weight sharing and feature hierarchy of a ResNet
(He et al. 2015, https://arxiv.org/abs/1512.03385) in about 66 k parameters at
the default widths, the same order as the ``"cpu-digits"`` ViT. Its
:meth:`SmallCNN.forward_features` returns the last feature map, which the
tiny DETR of :mod:`attnbook.vit.detr` uses as its backbone.

Shape legend: ``B`` batch, ``C`` channels, ``H``/``W`` height and width.
"""

from __future__ import annotations

import torch
from torch import nn

from attnbook._checks import positive_int

__all__ = ["SmallCNN"]


def _conv(c_in: int, c_out: int) -> nn.Sequential:
    """3x3 convolution that keeps the size, batch norm, ReLU."""
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


class SmallCNN(nn.Module):
    """Conv-conv-pool, conv-conv, global average pool, linear: a tiny ResNet-like classifier.

    ``widths`` are the channels of the two stages; the feature map of
    :meth:`forward_features` is (B, widths[1], H/2, W/2).

    >>> model = SmallCNN(in_chans=1, num_classes=10)
    >>> model(torch.randn(2, 1, 8, 8)).shape, model.forward_features(torch.randn(2, 1, 8, 8)).shape
    (torch.Size([2, 10]), torch.Size([2, 64, 4, 4]))
    >>> sum(p.numel() for p in model.parameters())
    65834
    """

    def __init__(self, *, in_chans: int = 1, num_classes: int = 10, widths: tuple[int, int] = (32, 64)) -> None:
        super().__init__()
        for name, value in (("in_chans", in_chans), ("num_classes", num_classes)):
            positive_int(name, value)
        if len(widths) != 2 or not all(isinstance(w, int) and w > 0 for w in widths):
            raise ValueError(f"widths must be two positive ints, got {widths!r}")
        self.in_chans = in_chans
        c1, c2 = widths
        self.features = nn.Sequential(
            _conv(in_chans, c1), _conv(c1, c1), nn.MaxPool2d(2),  # (B, c1, H/2, W/2)
            _conv(c1, c2), _conv(c2, c2),  # (B, c2, H/2, W/2)
        )
        self.head = nn.Linear(c2, num_classes)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, in_chans, H, W) -> the last feature map (B, widths[1], H/2, W/2)."""
        if x.dim() != 4 or x.shape[1] != self.in_chans:
            raise ValueError(f"x must have shape (B, {self.in_chans}, H, W), got {tuple(x.shape)}")
        return self.features(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Images (B, in_chans, H, W) -> logits (B, num_classes)."""
        return self.head(self.forward_features(x).mean(dim=(2, 3)))  # global average pool -> (B, c2)
