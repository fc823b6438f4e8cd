"""Chapter 1's explorer: step through an RNN translator's attention (see :mod:`attnbook.widgets`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
from matplotlib.figure import Figure

from attnbook.plots import alignment_step
from attnbook.rnn import Seq2Seq
from attnbook.rnn import greedy_decode as rnn_greedy_decode

from ._common import _png, _show_char

if TYPE_CHECKING:
    from attnbook.data import CharVocab

__all__ = ["alignment_explorer"]


def alignment_explorer(
    model: Seq2Seq,
    text: str,
    src_vocab: CharVocab,
    tgt_vocab: CharVocab,
    *,
    max_len: int = 80,
) -> widgets.VBox:
    """Step through the decoder of a recurrent translator with attention, one output position at a time.

    ``model`` is an :class:`attnbook.rnn.Seq2Seq` with attention, trained on
    character pairs, with its two :class:`attnbook.data.CharVocab`; ``text``
    is the first source shown. Typing a new source re-translates it greedily
    (:func:`attnbook.rnn.greedy_decode`); the ``step`` slider picks a decoder
    position ``t`` and the picture (:func:`attnbook.plots.alignment_step`)
    shows the weights ``γ_t`` over the source characters, the output written so
    far and the rows before it. ``controls`` holds ``"text"`` and ``"step"``;
    ``image`` holds the PNG.

    >>> import torch
    >>> from attnbook.data import CharVocab
    >>> from attnbook.rnn import Seq2SeqConfig
    >>> v = CharVocab("abc ")
    >>> _ = torch.manual_seed(0)
    >>> model = Seq2Seq(Seq2SeqConfig.preset("tiny", src_vocab_size=len(v), tgt_vocab_size=len(v)))
    >>> box = alignment_explorer(model, "abc", v, v, max_len=4)
    >>> sorted(box.controls), bytes(box.image.value)[1:4] == b"PNG"
    (['step', 'text'], True)
    """
    if not isinstance(model, Seq2Seq) or not model.uses_attention:
        raise TypeError(f"model must be an attnbook.rnn.Seq2Seq with attention, got {type(model).__name__}"
                        + (" without attention" if isinstance(model, Seq2Seq) else ""))
    for name, vocab in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab)):
        if not all(hasattr(vocab, a) for a in ("encode_batch", "itos", "bos_id", "eos_id")):
            raise TypeError(f"{name} must be a CharVocab, got {type(vocab).__name__}")
    text_box = widgets.Text(value=text, description="source", continuous_update=False,
                            layout=widgets.Layout(width="40em"))
    step = widgets.IntSlider(value=0, min=0, max=0, description="step t", continuous_update=True)
    status = widgets.Label()
    image = widgets.Image(format="png")
    state: dict[str, Any] = {}

    def translate(_: object = None) -> None:
        source = text_box.value.strip()
        state.clear()
        if not source:
            status.value = "type a source text"
            return
        device = next(model.parameters()).device
        src = src_vocab.encode_batch([source], device=device)  # (1, S)
        tokens, weights = rnn_greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len)
        assert weights is not None  # the model has attention (checked above)
        ids = tokens[0].tolist()
        L = ids.index(tgt_vocab.eos_id) + 1 if tgt_vocab.eos_id in ids else len(ids)  # up to and with <eos>
        written = ["<eos>" if i == tgt_vocab.eos_id else _show_char(tgt_vocab.itos[i]) for i in ids[:L]]
        state.update(source=[_show_char(c) for c in source], written=written,
                     weights=weights[0, :L].cpu())  # (L, S)
        status.value = f"{source!r} → {tgt_vocab.decode(ids[:L])!r} ({L} steps)"
        with step.hold_trait_notifications():
            step.max = L - 1
            step.value = min(step.value, L - 1)
        draw()

    def draw(_: object = None) -> None:
        if not state:
            return
        S, T = len(state["source"]), len(state["written"])
        fig = Figure(figsize=(min(3.0 + 0.22 * S, 13), min(3.8 + 0.2 * T, 10)), layout="constrained")
        alignment_step(state["weights"], state["source"], state["written"], step.value, fig=fig)
        image.value = _png(fig)

    text_box.observe(translate, names="value")
    step.observe(draw, names="value")
    translate()
    box = widgets.VBox([text_box, step, status, image])
    box.controls = {"text": text_box, "step": step}
    box.image = image
    return box
