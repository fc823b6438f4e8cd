"""Tests of attnbook.plots: every function draws the right panels and rejects bad shapes."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")  # headless, and never opens a window

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from attnbook.plots import (
    accuracy_bars,
    attention_grid,
    attention_heatmap,
    image_grid,
    positional_encoding_plot,
    training_curves,
)
from attnbook.train import History, fit


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _weights(*shape: int) -> torch.Tensor:
    return torch.softmax(torch.randn(*shape, generator=torch.Generator().manual_seed(0)), dim=-1)


def _panels(fig: Figure) -> list[Axes]:
    """The axes that hold an image (colorbars and twins excluded)."""
    return [a for a in fig.axes if a.images]


# ----------------------------------------------------------------------------- attention_heatmap


def test_heatmap_draws_one_matrix_with_labels():
    w = _weights(3, 5)
    ax = attention_heatmap(w, x_labels=["a", "b", "c", "d", "$"], y_labels="xyz", title="t")
    assert isinstance(ax, Axes) and len(ax.images) == 1
    assert len(ax.figure.axes) == 2  # the heatmap and its colorbar
    assert np.allclose(ax.images[0].get_array(), w.numpy())
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b", "c", "d", r"\$"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z"]
    assert ax.get_title() == "t" and ax.get_ylabel() == "query"
    ax.figure.canvas.draw()  # the escaped labels render without mathtext errors


def test_heatmap_accepts_arrays_grad_and_bf16_and_draws_into_a_given_axes():
    fig, ax = plt.subplots()
    w = _weights(4, 4).requires_grad_()
    assert attention_heatmap(w, ax=ax, colorbar=False) is ax
    assert len(fig.axes) == 1
    attention_heatmap(np.eye(4))
    attention_heatmap(_weights(4, 4).to(torch.bfloat16), x_labels=["a\n", "b", "c", "d"])


@pytest.mark.parametrize("shape", [(5,), (1, 3, 5), (2, 2, 3, 5)])
def test_heatmap_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match=r"shape \(T, S\)"):
        attention_heatmap(torch.rand(*shape))


def test_heatmap_rejects_bad_labels_and_inputs():
    with pytest.raises(ValueError, match="x_labels has 4 labels but the weights have 5 columns"):
        attention_heatmap(torch.rand(3, 5), x_labels="abcd")
    with pytest.raises(ValueError, match="y_labels has 2 labels but the weights have 3 rows"):
        attention_heatmap(torch.rand(3, 5), y_labels=["a", "b"])
    with pytest.raises(TypeError, match="weights must be"):
        attention_heatmap("not weights")
    with pytest.raises(TypeError, match="real numbers"):
        attention_heatmap(np.array([["a", "b"]]))
    with pytest.raises(ValueError, match="empty"):
        attention_heatmap(torch.rand(0, 3))
    with pytest.raises(TypeError, match="ax must be"):
        attention_heatmap(torch.rand(2, 2), ax="left")


# ----------------------------------------------------------------------------- attention_grid


def test_grid_of_heads():
    fig = attention_grid(_weights(6, 4, 4), x_labels="abcd", y_labels="abcd", suptitle="heads")
    assert isinstance(fig, Figure)
    panels = _panels(fig)
    assert len(panels) == 6 and len(fig.axes) == 7  # six heads and one shared colorbar
    assert panels[0].get_subplotspec().get_geometry()[:2] == (2, 4)  # 4 per row -> 2 rows
    assert [a.get_title() for a in panels[:2]] == ["head 0", "head 1"]
    assert len({a.images[0].get_clim() for a in panels}) == 1  # one colour scale
    assert [t.get_text() for t in panels[0].get_yticklabels()] == list("abcd")  # left column
    assert panels[1].get_yticks().size == 0  # inner panels carry no labels


def test_grid_of_layers_and_heads():
    fig = attention_grid(_weights(2, 3, 5, 4), titles=[f"p{i}" for i in range(6)], colorbar=False, ncols=3)
    panels = _panels(fig)
    assert len(panels) == 6 and len(fig.axes) == 6
    assert panels[0].get_subplotspec().get_geometry()[:2] == (2, 3)
    assert panels[5].get_title() == "p5"
    default = attention_grid(_weights(2, 3, 5, 4))
    assert _panels(default)[5].get_title() == "layer 1, head 2"


def test_grid_ncols():
    fig = attention_grid(_weights(5, 3, 3), ncols=2, colorbar=False)
    assert len(fig.axes) == 5  # the spare sixth cell is removed
    assert fig.axes[0].get_subplotspec().get_geometry()[:2] == (3, 2)


@pytest.mark.parametrize("shape", [(3, 3), (1, 1, 1, 3, 3)])
def test_grid_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match=r"\(N, T, S\) or \(L, H, T, S\)"):
        attention_grid(torch.rand(*shape))


def test_grid_rejects_bad_arguments():
    with pytest.raises(ValueError, match="titles has 2 entries but there are 3"):
        attention_grid(torch.rand(3, 2, 2), titles=["a", "b"])
    with pytest.raises(ValueError, match="H=3 columns"):
        attention_grid(torch.rand(2, 3, 2, 2), ncols=2)
    with pytest.raises(ValueError, match="ncols"):
        attention_grid(torch.rand(3, 2, 2), ncols=0)
    with pytest.raises(ValueError, match="x_labels"):
        attention_grid(torch.rand(3, 2, 2), x_labels="abc")


# ----------------------------------------------------------------------------- positional_encoding_plot


def _sinusoids(T: int, d_model: int) -> torch.Tensor:
    pos = torch.arange(T, dtype=torch.float32)[:, None]  # (T, 1)
    div = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))  # (d_model/2,)
    pe = torch.zeros(T, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    return pe


def test_positional_encoding_plot():
    ax = positional_encoding_plot(_sinusoids(50, 16))
    assert isinstance(ax, Axes) and len(ax.images) == 1 and len(ax.figure.axes) == 2
    assert ax.images[0].get_array().shape == (50, 16)
    lo, hi = ax.images[0].get_clim()
    assert lo == -hi  # zero sits in the middle of the diverging colour map
    assert ax.get_xlabel() == "dimension i" and ax.get_ylabel() == "position t"
    fig, given = plt.subplots()
    assert positional_encoding_plot(_sinusoids(8, 4).numpy(), ax=given, colorbar=False, title=None) is given


@pytest.mark.parametrize("shape", [(10,), (1, 10, 4)])
def test_positional_encoding_plot_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match=r"shape \(T, d_model\)"):
        positional_encoding_plot(torch.rand(*shape))


# ----------------------------------------------------------------------------- image_grid


@pytest.mark.parametrize(
    "shape, shown",
    [((6, 8, 8), (8, 8)), ((6, 8, 8, 3), (8, 8, 3)), ((6, 3, 8, 8), (8, 8, 3)), ((6, 1, 8, 8), (8, 8))],
)
def test_image_grid_layouts(shape, shown):
    fig = image_grid(torch.rand(*shape), nrow=4)
    assert isinstance(fig, Figure) and len(fig.axes) == 6
    assert fig.axes[0].images[0].get_array().shape == shown
    assert fig.axes[0].get_subplotspec().get_geometry()[:2] == (2, 4)


def test_image_grid_scales_0_255_and_titles():
    images = (np.arange(2 * 4 * 4).reshape(2, 4, 4) * 8).astype(np.uint8)  # 0..248
    fig = image_grid(images, titles=["zero", "one"], suptitle="digits")
    assert len(fig.axes) == 2 and fig.axes[1].get_title() == "one"
    assert float(fig.axes[1].images[0].get_array().max()) == pytest.approx(248 / 255)
    floats = image_grid(torch.full((1, 2, 2), 200.0))
    assert float(floats.axes[0].images[0].get_array().max()) == pytest.approx(200 / 255)


def test_image_grid_rejects_bad_input():
    with pytest.raises(ValueError, match=r"\(N, H, W\), \(N, H, W, C\) or \(N, C, H, W\)"):
        image_grid(torch.rand(8, 8))
    with pytest.raises(ValueError, match="C in"):
        image_grid(torch.rand(2, 5, 8, 8))
    with pytest.raises(ValueError, match="0..1 or 0..255"):
        image_grid(torch.randn(2, 8, 8) - 5)
    with pytest.raises(ValueError, match="titles has 1 entries but there are 2 images"):
        image_grid(torch.rand(2, 8, 8), titles=["a"])
    with pytest.raises(ValueError, match="nrow"):
        image_grid(torch.rand(2, 8, 8), nrow=0)


# ----------------------------------------------------------------------------- training_curves


def test_training_curves_from_a_real_history():
    x = torch.randn(16, 2)
    y = (x[:, 0] > 0).long()
    model = torch.nn.Linear(2, 2)
    ce = lambda m, b: torch.nn.functional.cross_entropy(m(b[0]), b[1])  # noqa: E731
    h = fit(model, ce, [(x, y)], steps=40, device="cpu", progress=False, eval_every=10,
            eval_fn=lambda m: {"val_loss": ce(m, (x, y)).item(), "acc": (m(x).argmax(-1) == y).float().mean()})
    ax = training_curves(h)
    assert isinstance(ax, Axes) and len(ax.figure.axes) == 2  # losses left, accuracy on a twin axis
    labels = sorted(t.get_text() for t in ax.get_legend().get_texts())
    assert labels == ["acc", "train loss", "val_loss"]
    assert len(ax.lines) == 3  # raw train loss, its moving average, val_loss
    twin = [a for a in ax.figure.axes if a is not ax][0]
    assert list(twin.lines[0].get_xdata()) == [10, 20, 30, 40]


def test_training_curves_without_evals_and_with_a_given_axes():
    fig, ax = plt.subplots()
    h = History(steps=[1, 2, 3], train_loss=[3.0, 2.0, 1.0])
    assert training_curves(h, ax=ax, logy=True) is ax
    assert len(fig.axes) == 1 and len(ax.lines) == 1 and ax.get_yscale() == "log"
    ax2 = training_curves({"train_loss": [3.0, 2.0, 1.0, 0.5]}, smooth=2)
    assert len(ax2.lines) == 2 and list(ax2.lines[1].get_xdata()) == [2, 3, 4]


def test_training_curves_metric_selection():
    h = History(steps=[1, 2], train_loss=[1.0, 0.5], evals=[{"step": 2, "acc": 0.9, "val_loss": 0.6}])
    ax = training_curves(h, metrics=["val_loss"])
    assert len(ax.figure.axes) == 1  # no other metric, so no twin axis
    with pytest.raises(ValueError, match=r"metrics \['bleu'\] are not in the history"):
        training_curves(h, metrics=["bleu"])


def test_training_curves_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        training_curves(History())
    with pytest.raises(TypeError, match="train.History"):
        training_curves([1.0, 0.5])
    with pytest.raises(ValueError, match="unknown keys"):
        training_curves({"loss": [1.0]})
    with pytest.raises(ValueError, match="2 steps but 3 train losses"):
        training_curves({"steps": [1, 2], "train_loss": [1.0, 0.9, 0.8]})
    with pytest.raises(ValueError, match="'step' key"):
        training_curves({"evals": [{"acc": 0.5}]})
    with pytest.raises(ValueError, match="smooth"):
        training_curves({"train_loss": [1.0, 0.5]}, smooth=0)


def test_the_attention_plots_stay_importable_from_attnbook_plots():
    import attnbook.attention_plots
    import attnbook.plots

    for name in attnbook.attention_plots.__all__:
        assert getattr(attnbook.plots, name) is getattr(attnbook.attention_plots, name), name


def test_accuracy_bars_draws_a_bar_per_model_and_bucket_and_rejects_other_buckets():
    from attnbook.seq2seq import LengthBucket

    rows = {"none": [LengthBucket(0, 30, 0.8, 10), LengthBucket(30, 80, 0.1, 5)],
            "additive": [LengthBucket(0, 30, 1.0, 10), LengthBucket(30, 80, 0.9, 5)],
            "general": [LengthBucket(0, 30, 0.9, 10), LengthBucket(30, 80, 0.5, 5)]}
    ax = accuracy_bars(rows, title="t")
    assert len(ax.patches) == 6 and ax.get_title() == "t"
    assert [t.get_text() for t in ax.texts] == ["80%", "10%", "100%", "90%", "90%", "50%"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(rows)
    other = {"a": [LengthBucket(0, 30, 1.0, 10)], "b": [LengthBucket(0, 30, 1.0, 9)]}
    with pytest.raises(ValueError, match="same lengths and counts"):
        accuracy_bars(other)
    with pytest.raises(ValueError, match="colors has 1 entries but there are 3 models"):
        accuracy_bars(rows, colors=["C0"])
    with pytest.raises(ValueError, match="at least one model"):
        accuracy_bars({})


def test_grouped_bars_centres_each_group_and_checks_lengths():
    from attnbook.plots import grouped_bars

    ax = grouped_bars({"a": [1, 2], "b": [3, 4], "c": [5, 6]}, ["x\ny", "$z"], width=0.2)
    xs = sorted(round(p.get_x() + p.get_width() / 2, 6) for p in ax.patches)
    assert xs == [-0.2, 0.0, 0.2, 0.8, 1.0, 1.2]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["x\ny", "\\$z"]  # a line break kept, "$" drawn as is
    with pytest.raises(ValueError, match="series 'a' has 1 values but there are 2 groups"):
        grouped_bars({"a": [1]}, ["x", "y"])
    with pytest.raises(ValueError, match="at least one series"):
        grouped_bars({}, [])
