"""Plots: attention heatmaps, positional encodings, image grids, training curves and grouped bars.

Every function takes a torch tensor or a NumPy array, checks its shape, and
draws with matplotlib's object API. Functions that draw one panel take an
optional ``ax`` and return the :class:`~matplotlib.axes.Axes`; functions that
draw a grid of panels return the :class:`~matplotlib.figure.Figure`. Nothing
calls ``plt.show()``, so the module works with any backend, ``Agg`` included.
In a notebook the figure appears at the end of the cell; end the line with
``;`` (or assign the result) so that a returned Figure is not drawn twice.

Conventions: attention weights are ``(T, S)`` with queries on the rows and
keys on the columns, as returned by
:func:`attnbook.attention.scaled_dot_product_attention`; images are
``(N, H, W)``, ``(N, H, W, C)`` or ``(N, C, H, W)``. Tick labels are escaped so
that tokens such as ``"$"`` or ``"\\n"`` are drawn as written. The attention
plots (:func:`~attnbook.attention_plots.attention_heatmap`,
:func:`~attnbook.attention_plots.attention_grid`,
:func:`~attnbook.attention_plots.alignment_step`) live in
:mod:`attnbook.attention_plots` and are importable from here too.
Sibling module: :mod:`attnbook.train` produces the ``History`` that
:func:`training_curves` draws.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt  # noqa: F401 (the doctests use it)
import numpy as np
import torch  # noqa: F401 (the doctests use it)
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from attnbook._checks import positive_int
from attnbook._plotting import HATCHES, LINESTYLES, MARKERS, PALETTE, ArrayLike, _escape, _grid, _new_axes, _to_numpy

# the attention plots live in attnbook.attention_plots: ``from attnbook.plots import attention_heatmap`` still works
from attnbook.attention_plots import alignment_step as alignment_step
from attnbook.attention_plots import attention_grid as attention_grid
from attnbook.attention_plots import attention_heatmap as attention_heatmap

__all__ = [
    "positional_encoding_plot",
    "image_grid",
    "training_curves",
    "grouped_bars",
    "accuracy_bars",
]


# ----------------------------------------------------------------------------- positions


def positional_encoding_plot(
    pe: ArrayLike,
    ax: Axes | None = None,
    *,
    title: str | None = "Positional encoding",
    cmap: str = "RdBu_r",
    colorbar: bool = True,
) -> Axes:
    """Heatmap of a (T, d_model) positional-encoding matrix: positions down, dimensions across.

    The colour scale is symmetric around zero, so sine and cosine waves read
    as red and blue stripes whose wavelength grows with the dimension.

    >>> t = torch.arange(8.0)[:, None]; i = torch.arange(4.0)[None, :]
    >>> ax = positional_encoding_plot(torch.sin(t / 10 ** i))
    >>> ax.images[0].get_array().shape, ax.get_xlabel()
    ((8, 4), 'dimension i')
    >>> plt.close(ax.figure)
    """
    p = _to_numpy("pe", pe)
    if p.ndim != 2:
        hint = " (drop the batch axis first, e.g. pe[0])" if p.ndim == 3 else ""
        raise ValueError(f"pe must have shape (T, d_model), got {p.shape}{hint}")
    if 0 in p.shape:
        raise ValueError(f"pe must not be empty, got shape {p.shape}")
    ax = _new_axes(ax, figsize=(7, 3.5))
    bound = float(np.nanmax(np.abs(p))) or 1.0
    image = ax.imshow(p, cmap=cmap, vmin=-bound, vmax=bound, aspect="auto", interpolation="nearest")
    ax.set_xlabel("dimension i")
    ax.set_ylabel("position t")
    if title is not None:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    return ax


# ----------------------------------------------------------------------------- images


def _images_nhwc(images: ArrayLike) -> np.ndarray:
    """(N, H, W), (N, H, W, C) or (N, C, H, W) in 0..1 or 0..255 -> (N, H, W[, 3|4]) floats in 0..1."""
    x = _to_numpy("images", images)
    if x.ndim == 3:
        pass  # (N, H, W) greyscale
    elif x.ndim == 4 and x.shape[-1] in (1, 3, 4):
        pass  # (N, H, W, C)
    elif x.ndim == 4 and x.shape[1] in (1, 3, 4):
        x = x.transpose(0, 2, 3, 1)  # (N, C, H, W) -> (N, H, W, C)
    else:
        raise ValueError(
            "images must have shape (N, H, W), (N, H, W, C) or (N, C, H, W) with C in {1, 3, 4}, "
            f"got {x.shape}"
        )
    if x.ndim == 4 and x.shape[-1] == 1:
        x = x[..., 0]  # (N, H, W)
    if 0 in x.shape:
        raise ValueError(f"images must not be empty, got shape {x.shape}")
    if x.dtype == bool:
        return x.astype(float)
    lo, hi = float(np.nanmin(x)), float(np.nanmax(x))
    if lo < 0 or hi > 255:
        raise ValueError(
            f"images must have values in 0..1 or 0..255, got min {lo:.3g} and max {hi:.3g} "
            "(undo any normalisation first)"
        )
    if np.issubdtype(x.dtype, np.integer) or hi > 1:
        return x.astype(float) / 255.0
    return x.astype(float)


def image_grid(
    images: ArrayLike,
    nrow: int = 8,
    titles: Sequence[str] | None = None,
    cmap: str = "gray",
    *,
    suptitle: str | None = None,
    panel_size: float = 1.4,
) -> Figure:
    """A grid of images, ``nrow`` per row (as in ``torchvision.utils.make_grid``).

    ``images`` is (N, H, W), (N, H, W, C) or (N, C, H, W) with C in {1, 3, 4};
    integers or values above 1 are read as 0..255, otherwise 0..1. ``cmap``
    applies to single-channel images only.

    >>> fig = image_grid(torch.rand(5, 3, 8, 8), nrow=3, titles=list("abcde"))
    >>> len(fig.axes), fig.axes[0].images[0].get_array().shape
    (5, (8, 8, 3))
    >>> plt.close(fig)
    """
    x = _images_nhwc(images)
    n = x.shape[0]
    nrow = positive_int("nrow", nrow)
    if titles is not None and len(titles) != n:
        raise ValueError(f"titles has {len(titles)} entries but there are {n} images")
    fig, axes = _grid(n, min(nrow, n), (panel_size, panel_size))
    for i, ax in enumerate(axes):
        ax.imshow(x[i], cmap=cmap if x.ndim == 3 else None, vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_axis_off()
        if titles is not None:
            ax.set_title(_escape(titles[i]), fontsize=9)
    if suptitle is not None:
        fig.suptitle(suptitle)
    return fig


# ----------------------------------------------------------------------------- training


def _curves(history: Any) -> tuple[list[int], list[float], list[Mapping[str, float]]]:
    """(steps, train_loss, evals) from a train.History or a dict with the same keys."""
    if isinstance(history, Mapping):
        unknown = set(history) - {"steps", "train_loss", "evals", "lr", "seconds", "examples", "stopped_by"}
        if unknown:
            raise ValueError(f"history has unknown keys {sorted(unknown)}; expected those of train.History")
        get = history.get
    elif all(hasattr(history, k) for k in ("train_loss", "evals")):
        get = lambda key, default=None: getattr(history, key, default)  # noqa: E731
    else:
        raise TypeError(
            "history must be a train.History or a dict with 'train_loss' and/or 'evals', "
            f"got {type(history).__name__}"
        )
    train_loss = [float(v) for v in (get("train_loss", None) or [])]
    steps = [int(s) for s in (get("steps", None) or range(1, len(train_loss) + 1))]
    if len(steps) != len(train_loss):
        raise ValueError(f"history has {len(steps)} steps but {len(train_loss)} train losses")
    evals = list(get("evals", None) or [])
    for record in evals:
        if not isinstance(record, Mapping) or "step" not in record:
            raise ValueError(f"each eval record must be a dict with a 'step' key, got {record!r}")
    if not train_loss and not evals:
        raise ValueError("history is empty: no train losses and no evaluations to plot")
    return steps, train_loss, evals


def training_curves(
    history: Any,
    ax: Axes | None = None,
    *,
    metrics: Sequence[str] | None = None,
    smooth: int | None = None,
    logy: bool = False,
) -> Axes:
    """Train loss and evaluation metrics against steps, from a :class:`attnbook.train.History`.

    Losses (train loss and every eval metric whose name contains ``"loss"``)
    share the left axis; other metrics (accuracy, ...) get a right-hand axis.
    The noisy train loss is drawn faintly with a moving average of ``smooth``
    steps on top (default: about 1/20 of the run). ``metrics`` picks which
    eval metrics to draw. A plain dict with the same keys works too. Each
    line has its own colour, line style and marker, so that no line is told
    from another by its colour alone.

    >>> h = {"steps": [1, 2, 3, 4], "train_loss": [2.0, 1.5, 1.0, 0.8],
    ...      "evals": [{"step": 2, "val_loss": 1.6, "acc": 0.5}, {"step": 4, "val_loss": 1.1, "acc": 0.7}]}
    >>> ax = training_curves(h)
    >>> len(ax.figure.axes), sorted(t.get_text() for t in ax.get_legend().get_texts())
    (2, ['acc', 'train loss', 'val_loss'])
    >>> plt.close(ax.figure)
    """
    steps, train_loss, evals = _curves(history)
    names = sorted({k for r in evals for k in r if k != "step"})
    if metrics is not None:
        missing = [m for m in metrics if m not in names]
        if missing:
            raise ValueError(f"metrics {missing} are not in the history; it has {names}")
        names = list(metrics)
    ax = _new_axes(ax, figsize=(7, 3.5))
    lines = []
    if train_loss:
        window = max(1, len(train_loss) // 20) if smooth is None else positive_int("smooth", smooth)
        window = min(window, len(train_loss))
        if window > 1:
            ax.plot(steps, train_loss, color=PALETTE[0], alpha=0.25, linewidth=1)
            smoothed = np.convolve(train_loss, np.ones(window) / window, mode="valid")
            lines += ax.plot(steps[window - 1:], smoothed, color=PALETTE[0], label="train loss")
        else:
            lines += ax.plot(steps, train_loss, color=PALETTE[0], label="train loss")
    losses = [m for m in names if "loss" in m.lower()]
    others = [m for m in names if m not in losses]
    right = ax.twinx() if others else None
    for i, name in enumerate(losses + others):
        xs = [int(r["step"]) for r in evals if name in r]
        ys = [float(r[name]) for r in evals if name in r]
        target = ax if name in losses or right is None else right
        lines += target.plot(xs, ys, marker=MARKERS[i % len(MARKERS)], markersize=4,  # not by colour alone
                             linestyle=LINESTYLES[(i + 1) % len(LINESTYLES)], color=PALETTE[(i + 1) % len(PALETTE)],
                             label=_escape(name))
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    if logy:
        ax.set_yscale("log")
    if right is not None:
        right.set_ylabel(", ".join(_escape(m) for m in others) if len(others) <= 2 else "metric")
    ax.legend(lines, [str(line.get_label()) for line in lines], loc="best", fontsize=8)
    return ax


# ----------------------------------------------------------------------------- accuracy


def grouped_bars(
    values: Mapping[str, Sequence[float]],
    groups: Sequence[str],
    ax: Axes | None = None,
    *,
    colors: Sequence[str] | None = None,
    width: float | None = None,
    value_format: str | None = None,
    figsize: tuple[float, float] = (7.5, 3.4),
) -> Axes:
    """Bars side by side: one group per entry of ``groups``, one bar per series of ``values`` in each.

    ``values`` maps a series' name (its legend label) to one value per group;
    the bars of a group are ``width`` wide (default ``0.8 / len(values)``) and
    centred on it. ``value_format`` (e.g. ``"{:.0%}"``) writes each value
    above its bar. A group's name may hold line breaks. Each series has its own
    hatch as well as its colour (``colors``, default the course's colour-blind
    safe palette), so that the legend reads without colour vision. The caller
    sets the limits, labels and legend.

    >>> ax = grouped_bars({"a": [1.0, 2.0], "b": [3.0, 4.0]}, ["x", "y"], value_format="{:.0f}")
    >>> len(ax.patches), [t.get_text() for t in ax.texts], [t.get_text() for t in ax.get_xticklabels()]
    (4, ['1', '2', '3', '4'], ['x', 'y'])
    >>> plt.close(ax.figure)
    """
    if not values:
        raise ValueError("values must name at least one series")
    for name, series in values.items():
        if len(series) != len(groups):
            raise ValueError(f"series {name!r} has {len(series)} values but there are {len(groups)} groups")
    if colors is not None and len(colors) != len(values):
        raise ValueError(f"colors has {len(colors)} entries but there are {len(values)} series")
    ax = _new_axes(ax, figsize=figsize)
    n = len(values)
    width = 0.8 / n if width is None else width
    for i, (name, series) in enumerate(values.items()):
        xs = [k + (i - (n - 1) / 2) * width for k in range(len(groups))]  # centred on the group
        ax.bar(xs, list(series), width=width, label=_escape(name),
               color=PALETTE[i % len(PALETTE)] if colors is None else colors[i],
               hatch=HATCHES[i % len(HATCHES)], edgecolor="0.25", linewidth=0.6)
        if value_format is not None:
            for x, v in zip(xs, series, strict=True):
                ax.text(x, v + 0.02, value_format.format(v), ha="center", fontsize=8)
    ax.set_xticks(range(len(groups)), [str(g).replace("$", r"\$") for g in groups])  # a "\n" breaks the line
    return ax


def accuracy_bars(
    buckets: Mapping[str, Sequence[Any]],
    ax: Axes | None = None,
    *,
    colors: Sequence[str] | None = None,
    title: str | None = None,
    xlabel: str = "source length in characters",
) -> Axes:
    """Grouped bars of accuracy by input length, one group per bucket and one bar per model.

    ``buckets`` maps a model's name to its rows of
    :func:`attnbook.seq2seq.accuracy_by_length` (anything with ``lo``, ``hi``,
    ``accuracy`` and ``count``), the same buckets for every model; each bar
    is labelled with its percentage, each group with its lengths and count
    (:func:`grouped_bars` draws them).

    >>> from attnbook.seq2seq import LengthBucket
    >>> rows = {"a": [LengthBucket(0, 10, 0.5, 4), LengthBucket(10, 20, 1.0, 2)],
    ...         "b": [LengthBucket(0, 10, 0.75, 4), LengthBucket(10, 20, 0.0, 2)]}
    >>> ax = accuracy_bars(rows, colors=["C3", "C0"])
    >>> len(ax.patches), [t.get_text() for t in ax.get_xticklabels()]
    (4, ['0-9\\n(4)', '10-19\\n(2)'])
    >>> plt.close(ax.figure)
    """
    if not buckets:
        raise ValueError("buckets must name at least one model")
    groups = [[(b.lo, b.hi, b.count) for b in rows] for rows in buckets.values()]
    if any(g != groups[0] for g in groups):
        raise ValueError("every model's buckets must have the same lengths and counts (the same held-out data)")
    if colors is not None and len(colors) != len(buckets):
        raise ValueError(f"colors has {len(colors)} entries but there are {len(buckets)} models")
    ax = grouped_bars({name: [b.accuracy for b in rows] for name, rows in buckets.items()},
                      [f"{lo}-{hi - 1}\n({n})" for lo, hi, n in groups[0]], ax, colors=colors,
                      width=0.76 / len(buckets), value_format="{:.0%}")
    ax.set(ylim=(0, 1.1), xlabel=xlabel, ylabel="exact match")
    if title is not None:
        ax.set_title(title)
    ax.legend(loc="lower left")
    return ax
