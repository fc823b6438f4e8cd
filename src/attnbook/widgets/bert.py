"""Chapter 3's explorer: BERT's random masking of a sentence, re-sampled (see :mod:`attnbook.widgets`).

:func:`draw_masking` paints one masking of a row of tokens on an Axes -- the
original token above, what the model reads below, coloured by what
:func:`attnbook.bert.mask_tokens` did to it -- so the book's static figure
and :func:`masking_explorer`, which redraws it for a new seed or masking
probability, are the same picture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import torch
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from attnbook.bert import mask_tokens

from ._common import _png

__all__ = ["MASKING_COLOURS", "masking_outcomes", "draw_masking", "masking_legend", "masking_explorer"]

# What happened to each token, and its colour in the pictures: Okabe & Ito's vermilion, orange and sky blue,
# told apart with any common colour-vision deficiency (tests/test_a11y_colour.py; matplotlib's red, orange and
# green were not), and black text on each at 5:1 or more. The text says it too: a chosen token has its
# original above it.
MASKING_COLOURS = {
    "special": "0.85",  # [CLS], [SEP], [PAD]: never chosen
    "not chosen": "white",  # read as is, no loss
    "[MASK]": "#D55E00",  # chosen, replaced by [MASK] (80 %)
    "random": "#E69F00",  # chosen, replaced by a random token (10 %)
    "unchanged": "#56B4E9",  # chosen, left as it was (10 %) -- still predicted
}


def masking_outcomes(ids: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor,
                     special_ids: Sequence[int], mask_id: int) -> list[str]:
    """For one row, the key of :data:`MASKING_COLOURS` that says what happened to each token.

    >>> masking_outcomes(torch.tensor([2, 7, 8, 9, 3]), torch.tensor([2, 4, 5, 9, 3]),
    ...                  torch.tensor([-100, 7, 8, 9, -100]), special_ids=[0, 1, 2, 3, 4], mask_id=4)
    ['special', '[MASK]', 'random', 'unchanged', 'special']
    """
    out = []
    for i, x, y in zip(ids.tolist(), inputs.tolist(), labels.tolist(), strict=True):
        if i in special_ids:
            out.append("special")
        elif y == -100:
            out.append("not chosen")
        else:
            out.append("[MASK]" if x == mask_id else "unchanged" if x == i else "random")
    return out


def draw_masking(ax: Axes, ids: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor,
                 token_names: Sequence[str], *, special_ids: Sequence[int], mask_id: int,
                 title: str = "", fontsize: float = 9) -> list[str]:
    """Draw one masked row on ``ax``: each token a box, the model's input inside, the original above in
    italics where it was chosen (text left horizontal: give a row of T tokens about 0.6 T inches).

    ``token_names[i]`` is the text of id ``i``. Returns the outcomes (see
    :func:`masking_outcomes`), so a caller can count them.
    """
    outcomes = masking_outcomes(ids, inputs, labels, special_ids, mask_id)
    for t, (orig, seen, what) in enumerate(zip(ids.tolist(), inputs.tolist(), outcomes, strict=True)):
        ax.add_patch(Rectangle((t + 0.04, 0), 0.92, 1, facecolor=MASKING_COLOURS[what],
                               edgecolor="0.4", linewidth=0.6))  # one box per token
        ax.text(t + 0.5, 0.5, token_names[seen], ha="center", va="center", fontsize=fontsize)
        if what not in ("special", "not chosen"):
            ax.text(t + 0.5, 1.12, token_names[orig], ha="center", va="bottom", fontsize=fontsize,
                    color="0.25", fontstyle="italic")
    ax.set(xlim=(0, len(outcomes)), ylim=(0, 1.9))
    ax.set_title(title, fontsize=fontsize, loc="left")
    ax.set_axis_off()
    return outcomes


def masking_legend(ax: Axes) -> None:
    """A legend of :data:`MASKING_COLOURS` under ``ax``."""
    handles = [Patch(facecolor=c, edgecolor="0.4", label=k) for k, c in MASKING_COLOURS.items()]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=5, fontsize=8,
              frameon=False)


def masking_explorer(tokenizer: Any, text: str, *, special_ids: Sequence[int] = (0, 1, 2, 3, 4),
                     cls_id: int = 2, sep_id: int = 3, mask_id: int = 4, seed: int = 0,
                     mlm_probability: float = 0.15) -> widgets.VBox:
    """Type a sentence and re-sample its masking: a seed box, a masking-probability slider.

    ``tokenizer`` has ``encode(str) -> list[int]``, ``decode(ids) -> str`` and
    ``vocab_size`` (a :class:`attnbook.bert.training.WordVocab` or a
    :class:`attnbook.tokenizers.WordPieceTokenizer`); the row read is ``[CLS] text [SEP]``. Each draw calls
    :func:`attnbook.bert.mask_tokens` with a generator seeded by the seed box, so
    a seed always gives the same masking. ``controls`` holds ``"text"``,
    ``"seed"`` and ``"probability"``; ``image`` the PNG; ``status`` the counts.

    >>> from attnbook.bert.training import WordVocab
    >>> vocab = WordVocab.build(["the film is a joy to watch and a pleasure to hear"])
    >>> box = masking_explorer(vocab, "the film is a joy to watch", seed=1)
    >>> box.controls["seed"].value = 2
    >>> sorted(box.controls), bytes(box.image.value)[1:4] == b"PNG", "chosen" in box.status.value
    (['probability', 'seed', 'text'], True, True)
    """
    if not all(callable(getattr(tokenizer, a, None)) for a in ("encode", "decode")) or not hasattr(
            tokenizer, "vocab_size"):
        raise TypeError(f"tokenizer must have encode(), decode() and vocab_size, got {type(tokenizer).__name__}")
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    vocab_size = int(tokenizer.vocab_size)
    names = [tokenizer.decode([i]) for i in range(vocab_size)]
    text_box = widgets.Text(value=text, description="sentence", continuous_update=False,
                            layout=widgets.Layout(width="50em"))
    seed_box = widgets.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed",
                                      layout=widgets.Layout(width="12em"))
    probability = widgets.FloatSlider(value=mlm_probability, min=0.05, max=0.5, step=0.05,
                                      description="chosen", continuous_update=False)
    status = widgets.Label()
    image = widgets.Image(format="png")

    def draw(_: object = None) -> None:
        ids = torch.tensor([[cls_id, *tokenizer.encode(text_box.value), sep_id]])
        gen = torch.Generator().manual_seed(int(seed_box.value))
        inputs, labels = mask_tokens(ids, list(special_ids), vocab_size, generator=gen,
                                     mlm_probability=float(probability.value), mask_id=mask_id)  # (1, T)
        fig = Figure(figsize=(max(4.0, 0.62 * ids.shape[1] + 0.5), 1.9), layout="constrained")
        ax = fig.subplots()
        outcomes = draw_masking(ax, ids[0], inputs[0], labels[0], names, special_ids=special_ids,
                                mask_id=mask_id, title=f"seed {seed_box.value}: what the model reads "
                                "(chosen tokens' originals above)")
        masking_legend(ax)
        image.value = _png(fig)
        counts = {k: outcomes.count(k) for k in ("[MASK]", "random", "unchanged")}
        words_ = len(outcomes) - outcomes.count("special")
        status.value = (f"{sum(counts.values())} of {words_} tokens chosen (loss taken there only): "
                        + ", ".join(f"{v} {k}" for k, v in counts.items()))

    for control in (text_box, seed_box, probability):
        control.observe(draw, names="value")
    draw()
    box = widgets.VBox([text_box, widgets.HBox([seed_box, probability]), status, image])
    box.controls = {"text": text_box, "seed": seed_box, "probability": probability}
    box.image = image
    box.status = status
    return box
