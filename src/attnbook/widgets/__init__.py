"""Interactive explorers (ipywidgets) for the book's notebooks.

Chapter 1 has :func:`alignment_explorer`: pick a source, step through the
decoder positions of a :class:`attnbook.rnn.Seq2Seq` with attention, and see
the attention row and the output written so far.

Chapter 2 has two:

* :func:`attention_explorer` -- type a source text, let a trained
  :class:`attnbook.transformer.Transformer` translate it, and pick which
  attention (encoder self-attention, decoder self-attention, cross-attention),
  which layer and which head to look at;
* :func:`positional_encoding_explorer` -- sliders for ``d_model``, a position
  ``t`` and a dimension ``i`` of the sinusoidal table of
  :func:`attnbook.positional.sinusoidal_positions`.

Chapter 4 has :func:`sampling_explorer`: a prompt and sliders for temperature,
top-k and top-p over a :class:`attnbook.gpt.GPT`'s next-token distribution.

One module per chapter (``attnbook.widgets.rnn``, ``.transformer``, ``.gpt``,
and the later chapters' own); this package re-exports the explorers.

Each function returns an ``ipywidgets.VBox``. Pictures are drawn with
matplotlib's object API (a :class:`~matplotlib.figure.Figure`, never
``pyplot``) into PNG bytes shown by an ``ipywidgets.Image``, so the explorers
need no display and no particular matplotlib backend: they can be built and
driven in a test, a script or a notebook without a kernel, where they simply
show nothing. The returned box carries two extra attributes so that code can
drive it: ``controls`` (a dict of its control widgets by name) and ``image``
(the ``Image`` widget whose ``value`` is the current PNG).

The HTML book has no kernel, so a widget there is inert; the chapters put a
static figure from :mod:`attnbook.plots` beside every explorer.
Sibling module: :mod:`attnbook.plots` draws the panels.
"""

from .gpt import sampling_explorer
from .rnn import alignment_explorer
from .transformer import attention_explorer, positional_encoding_explorer, translation_attention

__all__ = [
    "alignment_explorer",
    "attention_explorer",
    "positional_encoding_explorer",
    "sampling_explorer",
    "translation_attention",
]
