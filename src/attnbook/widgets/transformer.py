"""Chapter 2's explorers: a Transformer's attention, sinusoidal positions (see :mod:`attnbook.widgets`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from attnbook.plots import attention_heatmap, positional_encoding_plot
from attnbook.positional import sinusoidal_positions
from attnbook.transformer import Transformer, greedy_decode

from ._common import _png, _show_char

if TYPE_CHECKING:
    from attnbook.data import CharVocab

__all__ = ["attention_explorer", "positional_encoding_explorer", "translation_attention"]

_KINDS = {
    "cross-attention (decoder → source)": "cross",
    "encoder self-attention": "encoder",
    "decoder self-attention (masked)": "decoder",
}



def translation_attention(
    model: Transformer,
    text: str,
    src_vocab: CharVocab,
    tgt_vocab: CharVocab,
    *,
    max_len: int = 32,
) -> dict[str, object]:
    """Translate ``text`` greedily and return its attention weights with labels for plotting.

    Runs :func:`attnbook.transformer.greedy_decode`, then one teacher-forced
    pass over ``<bos>`` + the output with ``need_weights=True``, which gives
    the same weights the decoder used at each step (it is causal). Returns a
    dict with ``"translation"`` (str), ``"weights"`` (the model's
    :meth:`~attnbook.transformer.Transformer.attention_weights`, each (1, nh,
    T, S)), ``"source"`` (one label per source character), ``"written"`` (the
    token each decoder row writes: row ``t`` predicts output ``t``) and
    ``"decoder_in"`` (the decoder's input tokens, ``<bos>`` first).

    >>> from attnbook.data import CharVocab
    >>> from attnbook.transformer import Transformer, TransformerConfig
    >>> v = CharVocab("0123456789-")
    >>> _ = torch.manual_seed(0)
    >>> model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=len(v), tgt_vocab_size=len(v)))
    >>> out = translation_attention(model, "12", v, v, max_len=3)
    >>> out["weights"]["cross"][0].shape[-1], out["source"]   # S = 2 source characters
    (2, ['1', '2'])
    """
    if not isinstance(text, str) or not text:
        raise ValueError(f"text must be a non-empty str, got {text!r}")
    for arg in ("src_vocab", "tgt_vocab"):
        vocab = src_vocab if arg == "src_vocab" else tgt_vocab
        if not all(hasattr(vocab, a) for a in ("encode_batch", "itos", "bos_id", "eos_id")):
            raise TypeError(f"{arg} must be a CharVocab, got {type(vocab).__name__}")
    device = next(model.parameters()).device
    src = src_vocab.encode_batch([text], device=device)  # (1, S)
    out = greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len)  # (1, L)
    ids = out[0].tolist()
    if tgt_vocab.eos_id in ids:
        ids = ids[: ids.index(tgt_vocab.eos_id) + 1]  # up to and including <eos>
    tgt_in = torch.tensor([[tgt_vocab.bos_id, *ids[:-1]]], device=device)  # (1, L): <bos> + all but the last
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            model(src, tgt_in, need_weights=True)
    finally:
        model.train(was_training)
    weights = {k: [None if w is None else w.cpu() for w in ws] for k, ws in model.attention_weights().items()}

    def name(i: int) -> str:
        return "<eos>" if i == tgt_vocab.eos_id else _show_char(tgt_vocab.itos[i])

    return {
        "translation": tgt_vocab.decode(ids),
        "weights": weights,
        "source": [_show_char(c) for c in text],
        "written": [name(i) for i in ids],
        "decoder_in": ["<bos>", *(name(i) for i in ids[:-1])],
    }


def attention_explorer(
    model: Transformer,
    text: str,
    src_vocab: CharVocab,
    tgt_vocab: CharVocab,
    *,
    max_len: int = 32,
) -> widgets.VBox:
    """An explorer of a trained translator's attention: source text, kind, layer and head.

    ``model`` is an :class:`attnbook.transformer.Transformer` trained on
    character pairs (for example the date translator of chapter 2) with its
    two :class:`attnbook.data.CharVocab`; ``text`` is the first source shown.
    Typing a new source re-translates it; the heatmap shows one head of one
    layer (queries on the rows, labelled by the character that row writes) or
    the mean over heads. ``controls`` holds ``"text"``, ``"kind"``,
    ``"layer"`` and ``"head"``; ``image`` holds the PNG.
    """
    if not hasattr(model, "attention_weights"):
        raise TypeError(f"model must be an attnbook Transformer, got {type(model).__name__}")
    cfg = model.config
    text_box = widgets.Text(value=text, description="source", continuous_update=False,
                            layout=widgets.Layout(width="28em"))
    kind = widgets.Dropdown(options=list(_KINDS), description="attention", layout=widgets.Layout(width="28em"))
    layer = widgets.IntSlider(value=0, min=0, max=cfg.num_decoder_layers - 1, description="layer")
    head = widgets.Dropdown(options=[*(f"head {h}" for h in range(cfg.num_heads)), "mean of heads"],
                            description="head")
    status = widgets.Label()
    image = widgets.Image(format="png")
    state: dict[str, Any] = {}

    def translate(_: object = None) -> None:
        source = text_box.value.strip()
        if not source:
            status.value = "type a source text"
            state.clear()
            return
        state.update(translation_attention(model, source, src_vocab, tgt_vocab, max_len=max_len))
        status.value = f"{source!r} → {state['translation']!r}"
        draw()

    def draw(_: object = None) -> None:
        which = _KINDS[kind.value]
        n_layers = cfg.num_encoder_layers if which == "encoder" else cfg.num_decoder_layers
        layer.max = n_layers - 1  # clamps layer.value, which calls draw again: harmless
        if not state:
            return
        w = state["weights"][which][layer.value][0]  # (nh, T, S)
        w = w.mean(0) if head.value == "mean of heads" else w[head.index]  # (T, S)
        rows, cols = {
            "encoder": (state["source"], state["source"]),
            "decoder": (state["written"], state["decoder_in"]),
            "cross": (state["written"], state["source"]),
        }[which]
        fig = Figure(figsize=(min(2.5 + 0.28 * len(cols), 12), min(1.8 + 0.28 * len(rows), 9)),
                     layout="constrained")
        ax = fig.add_subplot()
        attention_heatmap(w, x_labels=cols, y_labels=rows, ax=ax, vmin=0.0, vmax=1.0,
                          title=f"{which}, layer {layer.value}, {head.value}")
        if which != "encoder":
            ax.set_ylabel("query (writes this character)")
        image.value = _png(fig)

    text_box.observe(translate, names="value")
    for control in (kind, layer, head):
        control.observe(draw, names="value")
    translate()
    box = widgets.VBox([text_box, widgets.HBox([kind, layer, head]), status, image])
    box.controls = {"text": text_box, "kind": kind, "layer": layer, "head": head}
    box.image = image
    return box


def positional_encoding_explorer(max_len: int = 64, d_model: int = 32) -> widgets.VBox:
    """Sliders for ``d_model``, a position ``t`` and a dimension ``i`` of the sinusoidal table.

    Three panels: the (max_len, d_model) table with the chosen row and column
    marked; column ``i`` over all positions (a sine or cosine whose wavelength
    ``2π · 10000^(2⌊i/2⌋/d_model)`` grows with ``i``); and the vector ``P[t]``
    that position ``t`` adds to its token. ``controls`` holds ``"d_model"``,
    ``"position"`` and ``"dimension"``; ``image`` holds the PNG.
    """
    for name, value in (("max_len", max_len), ("d_model", d_model)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 2:
            raise ValueError(f"{name} must be an int >= 2, got {value!r}")
    if d_model % 2:
        raise ValueError(f"d_model must be even (sin/cos pairs), got {d_model}")
    width = widgets.IntSlider(value=d_model, min=4, max=max(256, d_model), step=2, description="d_model",
                              continuous_update=False)
    position = widgets.IntSlider(value=min(10, max_len - 1), min=0, max=max_len - 1, description="position t",
                                 continuous_update=False)
    dimension = widgets.IntSlider(value=0, min=0, max=d_model - 1, description="dimension i",
                                  continuous_update=False)
    status = widgets.Label()
    image = widgets.Image(format="png")

    def draw(_: object = None) -> None:
        d = width.value
        dimension.max = d - 1  # clamps dimension.value (and calls draw again: harmless)
        t, i = position.value, dimension.value
        pe = sinusoidal_positions(max_len, d).numpy()  # (max_len, d)
        wavelength = 2 * math.pi * 10000 ** ((i - i % 2) / d)
        fig = Figure(figsize=(12, 3.4), layout="constrained")
        ax_table, ax_column, ax_row = fig.subplots(1, 3, width_ratios=[1.3, 1, 1])
        positional_encoding_plot(pe, ax=ax_table, title=f"P: {max_len} positions × {d} dimensions")
        ax_table.axhline(t, color="k", linewidth=0.8)
        ax_table.axvline(i, color="k", linewidth=0.8)
        ax_column.plot(pe[:, i], color="C0")
        ax_column.plot([t], [pe[t, i]], "o", color="k")
        ax_column.set(xlabel="position t", ylim=(-1.1, 1.1),
                      title=f"column {i} ({'sin' if i % 2 == 0 else 'cos'}), wavelength {wavelength:.3g}")
        ax_row.bar(range(d), pe[t], color=["C3" if j == i else "C0" for j in range(d)], width=1.0)
        ax_row.set(xlabel="dimension i", ylim=(-1.1, 1.1), title=f"P[{t}]: what position {t} adds")
        status.value = f"P[{t}, {i}] = {float(pe[t, i]):+.4f}"
        image.value = _png(fig)

    for control in (width, position, dimension):
        control.observe(draw, names="value")
    draw()
    box = widgets.VBox([widgets.HBox([width, position, dimension]), status, image])
    box.controls = {"d_model": width, "position": position, "dimension": dimension}
    box.image = image
    return box
