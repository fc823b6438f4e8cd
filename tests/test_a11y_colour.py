"""Figures readable without colour vision (issue 40): the course's palettes and colour maps, seen as a person
with deuteranopia, protanopia or tritanopia sees them (colorspacious's simulation of Machado, Oliveira and
Fernandes 2009, at full severity), keep their distinctions.

* A palette whose colours mean different things (the series of :mod:`attnbook.plots`, the outcomes of
  BERT's masking in :mod:`attnbook.widgets.bert`): every two colours stay at least :data:`MIN_DISTANCE` apart
  in CAM02-UCS (about the gap between neighbouring Okabe–Ito colours; matplotlib's orange and green fall to
  1.6 for a protanope).
* A colour map named anywhere in the book's pages or the package (``cmap="..."``): a sequential map's
  lightness J' rises (or falls) all the way, so higher reads as lighter (or darker) with any colour vision;
  a diverging map's lightness peaks in the middle and its two ends stay apart.
* Where a line or a bar stands for a series, colour is not its only cue: each has its own line style and
  marker, or hatch.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend)
from colorspacious import cspace_convert  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402

from attnbook._plotting import HATCHES, LINESTYLES, MARKERS, PALETTE  # noqa: E402
from attnbook.plots import grouped_bars, training_curves  # noqa: E402
from attnbook.widgets.bert import MASKING_COLOURS  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VISIONS = [None, "deuteranomaly", "protanomaly", "tritanomaly"]  # at severity 100: -anopia
MIN_DISTANCE = 10.0  # CAM02-UCS
DIVERGING = {"RdBu", "RdBu_r", "PuOr", "PuOr_r", "BrBG", "BrBG_r", "coolwarm", "bwr", "seismic"}
PALETTES = {"series (attnbook.plots)": list(PALETTE),
            "BERT's masking (attnbook.widgets.bert)": list(MASKING_COLOURS.values())}


def seen(colours, vision: str | None) -> np.ndarray:
    """``colours`` (matplotlib colour specs or an (N, 3) sRGB array in 0..1) in CAM02-UCS, as seen with ``vision``."""
    rgb = np.array([to_rgb(c) for c in colours]) if not isinstance(colours, np.ndarray) else colours[:, :3]
    if vision is not None:
        rgb = np.clip(cspace_convert(rgb, {"name": "sRGB1+CVD", "cvd_type": vision, "severity": 100}, "sRGB1"), 0, 1)
    return cspace_convert(rgb, "sRGB1", "CAM02-UCS")


def closest(colours, vision: str | None) -> tuple[float, str, str]:
    """The smallest CAM02-UCS distance between two of ``colours`` as seen with ``vision``, and the two."""
    ucs = seen(colours, vision)
    return min((float(np.linalg.norm(ucs[i] - ucs[j])), str(colours[i]), str(colours[j]))
               for i, j in itertools.combinations(range(len(colours)), 2))


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("name", PALETTES)
def test_palette_colours_stay_apart(name, vision):
    distance, a, b = closest(PALETTES[name], vision)
    assert distance >= MIN_DISTANCE, f"{name}: {a} and {b} are {distance:.1f} apart for {vision or 'normal vision'}"


def test_the_check_fails_matplotlibs_default_colours():
    """The default cycle's orange and green (C1, C2) look alike to a protanope: the measure sees it."""
    distance, a, b = closest(["C0", "C1", "C2", "C3"], "protanomaly")
    assert distance < 3 and {a, b} == {"C1", "C2"}


def colour_maps() -> set[str]:
    """Every colour map the book's pages and the package name: ``cmap="name"`` or ``get_cmap("name")``."""
    pattern = re.compile(r"""(?:cmap\s*(?::\s*str\s*)?=\s*|get_cmap\()["']([A-Za-z_]+)["']""")
    files = [*ROOT.glob("chapters/*/*.md"), *(ROOT / "src" / "attnbook").rglob("*.py"),
             ROOT / "autograder" / "attnbook_course" / "report.py"]
    return {name for f in files for name in pattern.findall(f.read_text())}


def lightness(name: str, vision: str | None) -> np.ndarray:
    """J' (CAM02-UCS lightness) along colour map ``name`` at 64 points, as seen with ``vision``."""
    rgba = matplotlib.colormaps[name](np.linspace(0, 1, 64))
    return seen(rgba, vision)[:, 0]


def test_the_course_names_its_colour_maps():
    assert {"viridis", "gray", "RdBu_r"} <= colour_maps()


@pytest.mark.parametrize("vision", VISIONS)
@pytest.mark.parametrize("name", sorted(colour_maps()))
def test_colour_maps_keep_their_order(name, vision):
    j = lightness(name, vision)
    if name in DIVERGING:  # lightest in the middle, darker towards each end, the two ends apart
        peak = int(np.argmax(j))
        assert 20 <= peak <= 43, f"{name}: lightest at {peak} of 64 for {vision}"
        assert np.all(np.diff(j[:peak + 1]) > -0.5) and np.all(np.diff(j[peak:]) < 0.5), name
        ends = seen(matplotlib.colormaps[name]([0.0, 1.0]), vision)
        assert np.linalg.norm(ends[0] - ends[1]) >= 2 * MIN_DISTANCE, f"{name}'s ends look alike for {vision}"
    else:  # sequential: lightness monotonic, and it spans a visible range
        steps = np.diff(j) * np.sign(j[-1] - j[0])
        assert np.all(steps > -0.5), f"{name}: lightness turns back for {vision or 'normal vision'}"
        assert abs(j[-1] - j[0]) >= 30, f"{name}: lightness spans only {abs(j[-1] - j[0]):.0f}"


def test_no_series_is_told_apart_by_colour_alone():
    history = {"steps": [1, 2, 3, 4], "train_loss": [2.0, 1.5, 1.0, 0.8],
               "evals": [{"step": s, "val_loss": 1.0 / s, "acc": s / 5, "bleu": s / 9, "f1": s / 7} for s in (2, 4)]}
    ax = training_curves(history, smooth=1)
    lines = [line for a in ax.figure.axes for line in a.get_lines() if not line.get_label().startswith("_")]
    assert len(lines) == 5
    assert len({(line.get_linestyle(), line.get_marker()) for line in lines}) == 5
    plt.close(ax.figure)
    ax = grouped_bars({name: [1.0, 2.0] for name in "abcde"}, ["x", "y"])
    assert len({patch.get_hatch() for patch in ax.patches}) == 5
    plt.close(ax.figure)
    assert len(set(HATCHES)) == len(HATCHES) and len(set(MARKERS)) == len(MARKERS) and len(set(LINESTYLES)) == 4
