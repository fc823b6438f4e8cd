"""Plots: attention heatmaps, positional encodings, image grids and training curves.

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
that tokens such as ``"$"`` or ``"\\n"`` are drawn as written.
Sibling module: :mod:`attnbook.train` produces the ``History`` that
:func:`training_curves` draws.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from attnbook._checks import int_in_range, positive_int

__all__ = [
    "attention_heatmap",
    "attention_grid",
    "alignment_step",
    "positional_encoding_plot",
    "image_grid",
    "training_curves",
]

ArrayLike = Any  # a torch.Tensor, a NumPy array or nested lists of numbers


# ----------------------------------------------------------------------------- helpers


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




# ----------------------------------------------------------------------------- attention


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
    aspect = "equal" if max(T, S) <= 4 * min(T, S) else "auto"
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
    """One decoder step of a (T, S) alignment: the row ``γ_t`` as bars, above the rows written so far.

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
    int_in_range("step", step, 0, T - 1, " (one per output row)")
    if fig is None:
        fig = plt.figure(figsize=(min(3.0 + 0.25 * S, 13), min(3.5 + 0.22 * T, 10)), layout="constrained")
    ax_row, ax_map = fig.subplots(2, 1, height_ratios=[1, max(1.5, 0.12 * T)])
    ax_row.bar(range(S), w[step], color="C1", width=0.8)
    ax_row.set(xlim=(-0.5, S - 0.5), ylim=(0, 1), ylabel=r"$\gamma_{tj}$")
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
    eval metrics to draw. A plain dict with the same keys works too.

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
            ax.plot(steps, train_loss, color="C0", alpha=0.25, linewidth=1)
            smoothed = np.convolve(train_loss, np.ones(window) / window, mode="valid")
            lines += ax.plot(steps[window - 1:], smoothed, color="C0", label="train loss")
        else:
            lines += ax.plot(steps, train_loss, color="C0", label="train loss")
    losses = [m for m in names if "loss" in m.lower()]
    others = [m for m in names if m not in losses]
    right = ax.twinx() if others else None
    for i, name in enumerate(losses + others):
        xs = [int(r["step"]) for r in evals if name in r]
        ys = [float(r[name]) for r in evals if name in r]
        target = ax if name in losses else right
        lines += target.plot(xs, ys, marker="o", markersize=3, color=f"C{i + 1}", label=_escape(name))
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    if logy:
        ax.set_yscale("log")
    if right is not None:
        right.set_ylabel(", ".join(_escape(m) for m in others) if len(others) <= 2 else "metric")
    ax.legend(lines, [line.get_label() for line in lines], loc="best", fontsize=8)
    return ax
