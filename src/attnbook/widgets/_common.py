"""Helpers shared by the explorers: a figure to PNG bytes, a visible space, the sampling controls' tail."""

from __future__ import annotations

import io

import ipywidgets as widgets
from matplotlib.figure import Figure


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def _show_char(c: str) -> str:
    return "␣" if c == " " else c


def _seed_status_image(seed: int) -> tuple[widgets.BoundedIntText, widgets.Label, widgets.Image]:
    """What a sampling explorer ends with: a box for the seed, a status line and the PNG it draws."""
    seed_box = widgets.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed",
                                      layout=widgets.Layout(width="12em"))
    return seed_box, widgets.Label(), widgets.Image(format="png")
