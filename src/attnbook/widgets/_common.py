"""Helpers shared by the explorers: a figure to PNG bytes, a visible space."""

from __future__ import annotations

import io

from matplotlib.figure import Figure


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def _show_char(c: str) -> str:
    return "␣" if c == " " else c
