"""Plots of attention weights: a heatmap, a grid of heads or layers, one decoder step.

The conventions of :mod:`attnbook.plots` (which re-exports these functions,
and where the others live): a torch tensor or a NumPy array in, its shape
checked; one panel -> the :class:`~matplotlib.axes.Axes`, a grid -> the
:class:`~matplotlib.figure.Figure`; nothing calls ``plt.show()``. Attention
weights are ``(T, S)`` with queries on the rows and keys on the columns, as
returned by :func:`attnbook.attention.scaled_dot_product_attention`. Tick
labels are escaped so that tokens such as ``"$"`` or ``"\\n"`` are drawn as
written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import matplotlib.pyplot as plt
import numpy as np
import torch  # noqa: F401 (the doctests use it)
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from attnbook._checks import int_in_range, positive_int
from attnbook._plotting import ArrayLike, _escape, _grid, _labels, _new_axes, _set_ticks, _to_numpy

__all__ = ["attention_heatmap", "attention_grid", "alignment_step"]


def attention_heatmap(
    weights: ArrayLike,
    x_labels: Sequence[Any] | str | None = None,
    y_labels: Sequence[Any] | str | None = None,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    vmin: float | None = None,
    vmax: float | None = None,
) -> Axes:
    """Heatmap of one (T, S) attention matrix: queries on the rows, keys on the columns.

    ``x_labels`` name the S keys, ``y_labels`` the T queries (a str gives one
    label per character). Returns the Axes.

    >>> ax = attention_heatmap(torch.eye(3), x_labels="abc", y_labels="xyz", title="identity")
    >>> ax.images[0].get_array().shape, [t.get_text() for t in ax.get_xticklabels()]
    ((3, 3), ['a', 'b', 'c'])
    >>> plt.close(ax.figure)
    """
    w = _to_numpy("weights", weights)
    if w.ndim != 2:
        hint = " (pick one example and head first, e.g. weights[0, 0])" if w.ndim > 2 else ""
        raise ValueError(f"weights must have shape (T, S), got {w.shape}{hint}")
    if 0 in w.shape:
        raise ValueError(f"weights must not be empty, got shape {w.shape}")
    T, S = w.shape
    xl = _labels("x_labels", x_labels, S, "columns (keys, S)")
    yl = _labels("y_labels", y_labels, T, "rows (queries, T)")
    ax = _new_axes(ax, figsize=(min(1.5 + 0.35 * S, 12), min(1.2 + 0.35 * T, 12)))
    aspect: Literal["equal", "auto"] = "equal" if max(T, S) <= 4 * min(T, S) else "auto"
    image = ax.imshow(w, cmap=cmap, vmin=vmin, vmax=vmax, aspect=aspect, interpolation="nearest")
    _set_ticks(ax, xl, yl)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query")
    if title is not None:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8)
    return ax


def attention_grid(
    weights: ArrayLike,
    x_labels: Sequence[Any] | str | None = None,
    y_labels: Sequence[Any] | str | None = None,
    *,
    titles: Sequence[str] | None = None,
    ncols: int | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    suptitle: str | None = None,
) -> Figure:
    """A grid of heatmaps for a stack of attention matrices, on one shared colour scale.

    ``weights`` is (N, T, S), e.g. the heads of one layer (``ncols`` panels per
    row, default up to 4), or (L, H, T, S): one row per layer, one column per
    head. Key labels go under the bottom row, query labels beside the left column.

    >>> fig = attention_grid(torch.softmax(torch.randn(2, 3, 4, 4), dim=-1))
    >>> len([a for a in fig.axes if a.images])  # 2 layers x 3 heads
    6
    >>> plt.close(fig)
    """
    w = _to_numpy("weights", weights)
    if w.ndim == 3:
        default_titles = [f"head {h}" for h in range(w.shape[0])]
    elif w.ndim == 4:
        default_titles = [f"layer {i}, head {h}" for i in range(w.shape[0]) for h in range(w.shape[1])]
    else:
        raise ValueError(f"weights must have shape (N, T, S) or (L, H, T, S), got {w.shape}")
    if 0 in w.shape:
        raise ValueError(f"weights must not be empty, got shape {w.shape}")
    T, S = w.shape[-2:]
    if w.ndim == 4:
        if ncols is not None and ncols != w.shape[1]:
            raise ValueError(f"for (L, H, T, S) weights the grid has H={w.shape[1]} columns; got ncols={ncols}")
        ncols = w.shape[1]
    w = w.reshape(-1, T, S)  # (N, T, S)
    n = w.shape[0]
    ncols = min(n, 4) if ncols is None else min(n, positive_int("ncols", ncols))
    if titles is None:
        titles = default_titles
    elif len(titles) != n:
        raise ValueError(f"titles has {len(titles)} entries but there are {n} attention maps")
    xl = _labels("x_labels", x_labels, S, "columns (keys, S)")
    yl = _labels("y_labels", y_labels, T, "rows (queries, T)")

    side = min(0.9 + 0.22 * max(T, S), 4.0)
    fig, axes = _grid(n, ncols, (side, side))
    vmin, vmax = float(np.nanmin(w)), float(np.nanmax(w))  # one scale, so panels compare
    for i, ax in enumerate(axes):
        image = ax.imshow(w[i], cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest",
                          aspect="equal" if max(T, S) <= 4 * min(T, S) else "auto")
        ax.set_title(_escape(titles[i]), fontsize=9)
        bottom = i + ncols >= n  # nothing below this panel
        left = i % ncols == 0
        _set_ticks(ax, xl if bottom else None, yl if left else None)
        if xl is not None and not bottom:
            ax.set_xticks([])
        if yl is not None and not left:
            ax.set_yticks([])
    if colorbar:
        fig.colorbar(image, ax=axes, shrink=0.8)
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig


def alignment_step(
    weights: ArrayLike,
    x_labels: Sequence[Any] | str,
    y_labels: Sequence[Any] | str,
    step: int,
    *,
    fig: Figure | None = None,
) -> Figure:
    """One decoder step of a (T, S) alignment: the row ``α_t`` as bars, above the rows written so far.

    Row ``t = step`` of ``weights`` is drawn as a bar chart over the S source
    labels ``x_labels``; below it, a heatmap of rows ``0 .. t`` (the later
    rows are left blank: the decoder has not reached them) with row ``t``
    framed. ``y_labels`` name the T outputs (row ``t`` writes ``y_labels[t]``);
    the title shows the output so far. Draws into ``fig`` when given (e.g. a
    :class:`~matplotlib.figure.Figure` of a widget), else a new pyplot figure.

    >>> w = torch.tensor([[0.9, 0.1, 0.0], [0.2, 0.7, 0.1]])
    >>> fig = alignment_step(w, x_labels="abc", y_labels="xy", step=1)
    >>> [round(float(p.get_height()), 2) for p in fig.axes[0].patches]  # the bars of row 1
    [0.2, 0.7, 0.1]
    >>> plt.close(fig)
    """
    w = _to_numpy("weights", weights).astype(float)
    if w.ndim != 2 or 0 in w.shape:
        raise ValueError(f"weights must have shape (T, S) with T, S >= 1, got {w.shape}")
    T, S = w.shape
    xl = _labels("x_labels", x_labels, S, "columns (keys, S)")
    yl = _labels("y_labels", y_labels, T, "rows (queries, T)")
    if xl is None or yl is None:
        raise TypeError("x_labels and y_labels must be sequences of labels (the source and the output), not None")
    int_in_range("step", step, 0, T - 1, " (one per output row)")
    if fig is None:
        fig = plt.figure(figsize=(min(3.0 + 0.25 * S, 13), min(3.5 + 0.22 * T, 10)), layout="constrained")
    ax_row, ax_map = fig.subplots(2, 1, height_ratios=[1, max(1.5, 0.12 * T)])
    ax_row.bar(range(S), w[step], color="C1", width=0.8)
    ax_row.set(xlim=(-0.5, S - 0.5), ylim=(0, 1), ylabel=r"$\alpha_{tj}$")
    _set_ticks(ax_row, xl, None)
    so_far = "".join(yl[: step + 1])
    ax_row.set_title(f"step t = {step} writes {yl[step]!r}; output so far: {so_far}", fontsize=10)
    shown = w.copy()
    shown[step + 1 :] = np.nan  # rows the decoder has not reached yet
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    ax_map.imshow(shown, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
    ax_map.add_patch(plt.Rectangle((-0.5, step - 0.5), S, 1, fill=False, edgecolor="C1", linewidth=2))
    _set_ticks(ax_map, xl, yl)
    if T > 40:
        ax_map.tick_params(axis="y", labelsize=6)  # long outputs: small labels that do not overlap
    ax_map.set(xlabel="source (attended to)", ylabel="output (writes)")
    return fig
