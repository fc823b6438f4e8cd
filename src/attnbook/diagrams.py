"""Architecture diagrams drawn with matplotlib, labelled with the package's names.

:func:`transformer_diagram` draws the encoder-decoder of Vaswani et al. (2017),
figure 1, as :class:`attnbook.transformer.Transformer` builds it: the
embeddings (``src_embed``, ``tgt_embed``) scaled by sqrt(d_model), the
``SinusoidalPositions`` added to them, one ``EncoderBlock`` and one
``DecoderBlock`` standing for their stacks (``x N``), each sublayer with its
residual add and ``LayerNorm`` (post-norm or pre-norm), the encoder's output
(the *memory*) fed to every decoder block's cross-attention, and the ``head``
followed by a softmax. Boxes are drawn bottom to top, in the order the data
flows. :func:`token_tasks_diagram` draws BERT's two token-level heads over
one ``[CLS] question [SEP] passage [SEP]`` input: a label per token (named
entities) and start/end scores over the passage (question answering).
Sibling module: :mod:`attnbook.plots` draws data; this one draws
architecture.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Rectangle

from attnbook._checks import positive_int

__all__ = ["transformer_diagram", "token_tasks_diagram"]

_STEP = 0.85  # vertical distance between two boxes
_HEIGHT = 0.56  # box height
_WIDTH = 3.4  # box width
_COLOURS = {
    "embed": "#f4d6d6",
    "pos": "#fbe8c8",
    "attn": "#f8e3a0",
    "norm": "#e4ecf7",
    "ffn": "#cfe8f3",
    "head": "#d9ead3",
    "out": "#eeeeee",
}


class _Box(NamedTuple):
    x: float  # centre
    y: float  # centre
    label: str


def _box(ax: Axes, x: float, y: float, label: str, kind: str) -> _Box:
    ax.add_patch(
        FancyBboxPatch(
            (x - _WIDTH / 2, y - _HEIGHT / 2),
            _WIDTH,
            _HEIGHT,
            boxstyle="round,pad=0.02,rounding_size=0.12",
            facecolor=_COLOURS[kind],
            edgecolor="#444444",
            linewidth=1.0,
        )
    )
    ax.text(x, y, label, ha="center", va="center", fontsize=8)
    return _Box(x, y, label)


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], **style: object) -> None:
    props = dict(arrowstyle="-|>", color="#333333", linewidth=1.1, shrinkA=0, shrinkB=0)
    ax.annotate("", xy=end, xytext=start, arrowprops={**props, **style})


def _sublayers(kind: str, norm_first: bool) -> list[tuple[str, str, str]]:
    """(label, colour kind, role) of every box of one block, bottom to top.

    Roles: ``"in"`` starts a residual branch, ``"add"`` ends it, ``"-"`` neither.

    >>> [label for label, _, _ in _sublayers("encoder", norm_first=False)]
    ['MultiHeadAttention (self)', 'add & LayerNorm (norm1)', 'FeedForward (ffn)', 'add & LayerNorm (norm2)']
    """
    if kind == "encoder":
        parts = [("MultiHeadAttention (self)", "attn"), ("FeedForward (ffn)", "ffn")]
    else:
        parts = [
            ("masked self-attention (causal)", "attn"),
            ("cross-attention (MultiHeadAttention)", "attn"),
            ("FeedForward (ffn)", "ffn"),
        ]
    boxes = []
    for i, (label, colour) in enumerate(parts, start=1):
        if norm_first:  # x + f(LN(x)): the branch starts at the norm
            boxes += [(f"LayerNorm (norm{i})", "norm", "in"), (label, colour, "-"), ("add", "norm", "add")]
        else:  # LN(x + f(x)): the branch starts at the sublayer
            boxes += [(label, colour, "in"), (f"add & LayerNorm (norm{i})", "norm", "add")]
    return boxes


def _column(
    ax: Axes, x: float, side: int, ids: str, embed: str, pos: str, kind: str, layers: int, norm_first: bool
) -> dict[str, _Box]:
    """Draw one stack (inputs, embedding, positions, one block); return its named boxes.

    ``side`` is -1 to draw residual paths and the stack label on the left, +1 on the right.
    """
    ax.text(x, 0.0, ids, ha="center", va="center", fontsize=9, style="italic")
    boxes = {"embed": _box(ax, x, _STEP, f"{embed} · √d_model", "embed")}
    boxes["pos"] = _box(ax, x, 2 * _STEP, f"+ SinusoidalPositions ({pos})", "pos")
    _arrow(ax, (x, 0.2), (x, _STEP - _HEIGHT / 2))
    _arrow(ax, (x, _STEP + _HEIGHT / 2), (x, 2 * _STEP - _HEIGHT / 2))
    previous, branch_from = boxes["pos"], 0.0
    lane = x + side * (_WIDTH / 2 + 0.3)  # where the residual paths run
    for i, (label, colour, role) in enumerate(_sublayers(kind, norm_first)):
        box = _box(ax, x, (3 + i) * _STEP, label, colour)
        _arrow(ax, (x, previous.y + _HEIGHT / 2), (x, box.y - _HEIGHT / 2))
        if role == "in":  # the residual leaves the stream just below this box
            branch_from = (previous.y + box.y) / 2
        elif role == "add":
            ax.plot([x, lane, lane], [branch_from, branch_from, box.y], color="#777777", linewidth=1.0)
            _arrow(ax, (lane, box.y), (x + side * _WIDTH / 2, box.y), color="#777777")
        boxes[label] = previous = box
    bottom, top = 2.5 * _STEP, previous.y + _STEP / 2
    ax.add_patch(
        Rectangle(
            (x - _WIDTH / 2 - 0.5, bottom),
            _WIDTH + 1.0,
            top - bottom,
            fill=False,
            linestyle="--",
            edgecolor="#888888",
        )
    )
    name = "EncoderBlock" if kind == "encoder" else "DecoderBlock"
    ax.text(
        x + side * (_WIDTH / 2 + 0.75),
        (bottom + top) / 2,
        f"{name} × {layers}",
        rotation=90,
        ha="center",
        va="center",
        fontsize=10,
        fontweight="bold",
    )
    boxes["top"] = previous
    return boxes


def transformer_diagram(
    num_encoder_layers: int = 6,
    num_decoder_layers: int = 6,
    *,
    norm_first: bool = False,
    figsize: tuple[float, float] = (9.0, 9.5),
) -> Figure:
    """The encoder-decoder Transformer as a labelled block diagram; returns the Figure.

    ``norm_first=False`` draws the paper's post-norm blocks, ``True`` the
    pre-norm ones (with the final ``encoder_norm`` and ``decoder_norm``).

    >>> fig = transformer_diagram(num_encoder_layers=2, num_decoder_layers=3)
    >>> labels = [t.get_text() for t in fig.axes[0].texts]
    >>> "EncoderBlock × 2" in labels, "DecoderBlock × 3" in labels, "head (Linear)" in labels
    (True, True, True)
    >>> plt.close(fig)
    """
    positive_int("num_encoder_layers", num_encoder_layers)
    positive_int("num_decoder_layers", num_decoder_layers)
    if not isinstance(norm_first, bool):
        raise TypeError(f"norm_first must be a bool, got {type(norm_first).__name__}")
    fig, ax = plt.subplots(figsize=figsize)
    enc_x, dec_x = 2.4, 8.6
    enc = _column(ax, enc_x, -1, "src (B, S)", "src_embed", "src_pos", "encoder", num_encoder_layers, norm_first)
    dec = _column(
        ax, dec_x, +1, "tgt_in (B, T), shifted right", "tgt_embed", "tgt_pos", "decoder", num_decoder_layers,
        norm_first,
    )
    top = dec["top"]
    if norm_first:  # pre-norm stacks end with one more LayerNorm
        enc["top"] = _box(ax, enc_x, enc["top"].y + _STEP, "LayerNorm (encoder_norm)", "norm")
        _arrow(ax, (enc_x, enc["top"].y - _STEP + _HEIGHT / 2), (enc_x, enc["top"].y - _HEIGHT / 2))
        top = _box(ax, dec_x, top.y + _STEP, "LayerNorm (decoder_norm)", "norm")
        _arrow(ax, (dec_x, top.y - _STEP + _HEIGHT / 2), (dec_x, top.y - _HEIGHT / 2))
    # the memory: out of the encoder's last block into every decoder block's cross-attention
    memory = _box(ax, enc_x, enc["top"].y + _STEP, "memory (B, S, d_model)", "out")
    _arrow(ax, (enc_x, enc["top"].y + _HEIGHT / 2), (enc_x, memory.y - _HEIGHT / 2))
    cross = dec["cross-attention (MultiHeadAttention)"]
    elbow = (enc_x + dec_x) / 2
    ax.plot([enc_x + _WIDTH / 2, elbow, elbow], [memory.y, memory.y, cross.y], color="#b03030", linewidth=1.4)
    _arrow(ax, (elbow, cross.y), (dec_x - _WIDTH / 2, cross.y), color="#b03030", linewidth=1.4)
    ax.text((elbow + dec_x - _WIDTH / 2) / 2, cross.y + 0.12, "keys, values", color="#b03030", fontsize=8, ha="center")
    head = _box(ax, dec_x, top.y + _STEP, "head (Linear)", "head")
    softmax = _box(ax, dec_x, head.y + _STEP, "softmax", "head")
    for lower, upper in ((top, head), (head, softmax)):
        _arrow(ax, (dec_x, lower.y + _HEIGHT / 2), (dec_x, upper.y - _HEIGHT / 2))
    ax.text(dec_x, softmax.y + 0.65, "P(next target token)", ha="center", va="center", fontsize=9, style="italic")
    _arrow(ax, (dec_x, softmax.y + _HEIGHT / 2), (dec_x, softmax.y + 0.5))
    ax.set_xlim(-0.2, 11.2)
    ax.set_ylim(-0.4, softmax.y + 0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    norm = "pre-norm" if norm_first else "post-norm"
    ax.set_title(f"Transformer (encoder left, decoder right; {norm})", fontsize=11)
    fig.tight_layout()
    return fig


def token_tasks_diagram(
    question: Sequence[str],
    passage: Sequence[str],
    entities: Mapping[str, str],
    start: Sequence[float],
    end: Sequence[float],
) -> Figure:
    """Token classification above, answer-span scores below, over ``[CLS] question [SEP] passage [SEP]``.

    ``entities`` maps a token to its tag (every other token is ``O``);
    ``start`` and ``end`` hold one score per passage token, and the span from
    the highest start to the highest end is framed as the answer.

    >>> fig = token_tasks_diagram(["who", "?"], ["ann", "did"], {"ann": "B-PER"}, [2.0, 0.1], [1.5, 0.3])
    >>> [t.get_text() for t in fig.axes[0].texts][-6:]          # the tags above the six tokens
    ['O', 'O', 'O', 'B-PER', 'O', 'O']
    >>> plt.close(fig)
    """
    if len(start) != len(passage) or len(end) != len(passage):
        raise ValueError(
            f"start and end need one score per passage token ({len(passage)}), got {len(start)} and {len(end)}"
        )
    tokens = ["[CLS]", *question, "[SEP]", *passage, "[SEP]"]
    ner = [entities.get(tok, "O") for tok in tokens]
    offset = len(question) + 2  # the first passage token
    start_all = [0.0] * offset + [float(s) for s in start] + [0.0]  # (len(tokens),)
    end_all = [0.0] * offset + [float(e) for e in end] + [0.0]
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 4.6), layout="constrained")
    for ax, title in ((ax1, "token classification (NER): a label per token"),
                      (ax2, "question answering: start and end scores over the passage")):
        for t, tok in enumerate(tokens):
            ax.add_patch(Rectangle((t + 0.05, 0), 0.9, 0.8, facecolor="0.9", edgecolor="0.4"))
            ax.text(t + 0.5, 0.4, tok, ha="center", va="center", fontsize=8)
        ax.set(xlim=(0, len(tokens)), title=title)
        ax.set_axis_off()
    for t, tag in enumerate(ner):
        ax1.text(t + 0.5, 1.2, tag, ha="center", fontsize=8, color="C3" if tag != "O" else "0.5")
    ax1.set_ylim(0, 1.6)
    width = 0.35
    for shift, scores, colour, label in ((-1, start_all, "C0", "start score"), (+1, end_all, "C1", "end score")):
        ax2.bar([t + 0.5 + shift * width / 2 for t in range(len(tokens))], [s / 3 for s in scores], width,
                bottom=1.0, color=colour, label=label)
    i, j = start_all.index(max(start_all)), end_all.index(max(end_all))  # the first highest, as argmax
    ax2.add_patch(Rectangle((i, -0.1), j - i + 1, 1.0, fill=False, edgecolor="C2", linewidth=2))
    ax2.set_ylim(-0.2, 2.0)
    ax2.legend(loc="upper left", fontsize=8)
    return fig
