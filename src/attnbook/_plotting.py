"""What the plotting modules share: array checks, escaped tick labels, new axes and grids of panels.

Private to :mod:`attnbook.plots` and :mod:`attnbook.attention_plots`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

ArrayLike = Any  # a torch.Tensor, a NumPy array or nested lists of numbers

# Figures readable without colour vision (tests/test_a11y_colour.py simulates deuteranopia, protanopia and
# tritanopia on these): series take their colour from Okabe & Ito's palette ("Color Universal Design", 2008),
# blue, orange, green and vermilion first like matplotlib's C0..C3, and a second cue besides: a line style
# and a marker for a line, a hatch for a bar.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
HATCHES = ("", "//", "..", "xx", "\\\\", "++", "oo", "--")


def _to_numpy(name: str, x: ArrayLike) -> np.ndarray:
    """A float/int NumPy copy of a tensor or array, or a TypeError naming ``name``."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu()
        if x.dtype in (torch.bfloat16, torch.float16):  # NumPy has no bfloat16
            x = x.float()
        x = x.numpy()
    elif isinstance(x, (list, tuple)):
        try:
            x = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as err:
            raise TypeError(f"{name} must be a tensor or array of numbers ({err})") from None
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a torch.Tensor or a NumPy array, got {type(x).__name__}")
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == bool) or np.iscomplexobj(x):
        raise TypeError(f"{name} must hold real numbers, got dtype {x.dtype}")
    return x


def _escape(label: Any) -> str:
    """Draw a label as written: no mathtext for ``$``, visible escapes for ``\\n`` and friends."""
    text = str(label)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text.replace("$", r"\$")


def _labels(name: str, labels: Sequence[Any] | str | None, n: int, axis: str) -> list[str] | None:
    """Check that ``labels`` has one entry per row/column; a str gives one label per character."""
    if labels is None:
        return None
    if isinstance(labels, (torch.Tensor, np.ndarray)):
        labels = labels.tolist()
    if not isinstance(labels, (str, Sequence)):
        raise TypeError(f"{name} must be a sequence of labels, got {type(labels).__name__}")
    if len(labels) != n:
        raise ValueError(f"{name} has {len(labels)} labels but the weights have {n} {axis}")
    return [_escape(label) for label in labels]


def _set_ticks(ax: Axes, x_labels: list[str] | None, y_labels: list[str] | None) -> None:
    if x_labels is not None:
        long = max((len(s) for s in x_labels), default=0) > 2
        ax.set_xticks(range(len(x_labels)), x_labels, rotation=90 if long else 0,
                      fontsize=8 if len(x_labels) > 20 else None)
    if y_labels is not None:
        ax.set_yticks(range(len(y_labels)), y_labels, fontsize=8 if len(y_labels) > 20 else None)


def _new_axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is None:
        _, ax = plt.subplots(figsize=figsize, layout="constrained")
    elif not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return ax


def _grid(n: int, ncols: int, panel: tuple[float, float]) -> tuple[Figure, list[Axes]]:
    """A figure with ``n`` panels in rows of ``ncols``; spare cells are removed."""
    nrows = math.ceil(n / ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows), layout="constrained", squeeze=False
    )
    flat = list(axes.flat)
    for spare in flat[n:]:
        spare.remove()
    return fig, flat[:n]
