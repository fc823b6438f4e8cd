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

from __future__ import annotations

import io
import math

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from attnbook.gpt import GPT, generate, next_token_probs
from attnbook.plots import alignment_step, attention_heatmap, positional_encoding_plot
from attnbook.positional import sinusoidal_positions
from attnbook.rnn import Seq2Seq
from attnbook.rnn import greedy_decode as rnn_greedy_decode
from attnbook.transformer import greedy_decode

__all__ = [
    "alignment_explorer",
    "attention_explorer",
    "positional_encoding_explorer",
    "sampling_explorer",
    "translation_attention",
]

_KINDS = {
    "cross-attention (decoder → source)": "cross",
    "encoder self-attention": "encoder",
    "decoder self-attention (masked)": "decoder",
}


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return buffer.getvalue()


def _show_char(c: str) -> str:
    return "␣" if c == " " else c


def alignment_explorer(
    model: Seq2Seq,
    text: str,
    src_vocab: object,
    tgt_vocab: object,
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
    state: dict[str, object] = {}

    def translate(_: object = None) -> None:
        source = text_box.value.strip()
        state.clear()
        if not source:
            status.value = "type a source text"
            return
        device = next(model.parameters()).device
        src = src_vocab.encode_batch([source], device=device)  # (1, S)
        tokens, weights = rnn_greedy_decode(model, src, tgt_vocab.bos_id, tgt_vocab.eos_id, max_len)
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
        S, T = len(state["source"]), len(state["written"])  # type: ignore[arg-type]
        fig = Figure(figsize=(min(3.0 + 0.22 * S, 13), min(3.8 + 0.2 * T, 10)), layout="constrained")
        alignment_step(state["weights"], state["source"], state["written"], step.value, fig=fig)
        image.value = _png(fig)

    text_box.observe(translate, names="value")
    step.observe(draw, names="value")
    translate()
    box = widgets.VBox([text_box, step, status, image])
    box.controls = {"text": text_box, "step": step}  # type: ignore[attr-defined]
    box.image = image  # type: ignore[attr-defined]
    return box


def translation_attention(
    model: torch.nn.Module,
    text: str,
    src_vocab: object,
    tgt_vocab: object,
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
    for name in ("src_vocab", "tgt_vocab"):
        vocab = src_vocab if name == "src_vocab" else tgt_vocab
        if not all(hasattr(vocab, a) for a in ("encode_batch", "itos", "bos_id", "eos_id")):
            raise TypeError(f"{name} must be a CharVocab, got {type(vocab).__name__}")
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
    weights = {k: [w.cpu() for w in ws] for k, ws in model.attention_weights().items()}

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
    model: torch.nn.Module,
    text: str,
    src_vocab: object,
    tgt_vocab: object,
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
    state: dict[str, object] = {}

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
        w = state["weights"][which][layer.value][0]  # type: ignore[index]  # (nh, T, S)
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
    box.controls = {"text": text_box, "kind": kind, "layer": layer, "head": head}  # type: ignore[attr-defined]
    box.image = image  # type: ignore[attr-defined]
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
    box.controls = {"d_model": width, "position": position, "dimension": dimension}  # type: ignore[attr-defined]
    box.image = image  # type: ignore[attr-defined]
    return box


def sampling_explorer(
    model: torch.nn.Module,
    tokenizer: object,
    prompt: str = "\n",
    *,
    max_new_tokens: int = 120,
    top_n: int = 20,
    seed: int = 0,
) -> widgets.VBox:
    """An explorer of sampling: a prompt, then temperature, top-k and top-p sliders.

    ``model`` is an :class:`attnbook.gpt.GPT`, trained or not; ``tokenizer``
    is anything with ``encode(str) -> list[int]`` and ``decode(ids) -> str``
    over the model's vocabulary (a :class:`~attnbook.tokenizers.CharTokenizer`
    or a :class:`~attnbook.tokenizers.BPETokenizer`). The picture shows the
    ``top_n`` most likely next tokens after the prompt (only its last
    ``block_size`` tokens are read), as the model gives them (left) and as
    :func:`attnbook.gpt.next_token_probs` leaves them after temperature, top-k
    and top-p (right, over grey outlines of the left). Below it, a continuation of
    ``max_new_tokens`` tokens drawn by :func:`attnbook.gpt.generate` with a
    generator seeded by the ``seed`` box, so the same settings give the same
    text. Temperature 0 is greedy; top-k 0 and top-p 1 switch those filters
    off. ``controls`` holds ``"prompt"``, ``"temperature"``, ``"top_k"``,
    ``"top_p"`` and ``"seed"``; ``image`` holds the PNG and ``output`` (a
    ``Textarea``) the continuation.

    >>> from attnbook.gpt import GPTConfig
    >>> from attnbook.tokenizers import CharTokenizer
    >>> tok = CharTokenizer.from_text("to be or not to be")
    >>> _ = torch.manual_seed(0)
    >>> model = GPT(GPTConfig.preset("gpt-nano", vocab_size=tok.vocab_size))
    >>> box = sampling_explorer(model, tok, "to be", max_new_tokens=5)
    >>> box.controls["top_k"].value = 1        # only the most likely token: greedy
    >>> sorted(box.controls), len(box.output.value), bytes(box.image.value)[1:4] == b"PNG"
    (['prompt', 'seed', 'temperature', 'top_k', 'top_p'], 5, True)
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model must be an attnbook.gpt.GPT, got {type(model).__name__}")
    if not all(callable(getattr(tokenizer, a, None)) for a in ("encode", "decode")):
        raise TypeError(f"tokenizer must have encode() and decode(), got {type(tokenizer).__name__}")
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    for name, value, low in (("max_new_tokens", max_new_tokens, 0), ("top_n", top_n, 1), ("seed", seed, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    V, block_size = model.config.vocab_size, model.config.block_size
    top_n = min(top_n, V)
    prompt_box = widgets.Textarea(value=prompt, description="prompt", continuous_update=False,
                                  layout=widgets.Layout(width="40em", height="4em"))
    temperature = widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.05, description="temperature",
                                      continuous_update=False)
    top_k = widgets.IntSlider(value=0, min=0, max=V, description="top-k (0: off)", continuous_update=False,
                              style={"description_width": "initial"})
    top_p = widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="top-p",
                                continuous_update=False)
    seed_box = widgets.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="seed",
                                      layout=widgets.Layout(width="12em"))
    status = widgets.Label()
    image = widgets.Image(format="png")
    output = widgets.Textarea(value="", description="sample", disabled=True,
                              layout=widgets.Layout(width="60em", height="10em"))
    state: dict[str, object] = {}

    def label(i: int) -> str:
        text = tokenizer.decode([i])  # type: ignore[attr-defined]
        text = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        return text.replace("$", r"\$")

    def read_prompt(_: object = None) -> None:
        state.clear()
        try:
            ids = list(tokenizer.encode(prompt_box.value))  # type: ignore[attr-defined]
        except (ValueError, KeyError) as err:  # e.g. a character the tokenizer has never seen
            status.value = f"cannot encode the prompt: {err}"
            return
        if not ids:
            status.value = "type a prompt (at least one token)"
            return
        device = next(model.parameters()).device
        ids_t = torch.tensor([ids], device=device)  # (1, T)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                logits, _ = model(ids_t[:, -block_size:])  # (1, T', V)
        finally:
            model.train(was_training)
        state.update(ids=ids_t, logits=logits[0, -1].float().cpu(), n_prompt=len(ids))  # logits (V,)
        draw()

    def draw(_: object = None) -> None:
        if not state:
            return
        t = temperature.value
        k = top_k.value or None
        p = top_p.value if top_p.value < 1.0 else None
        logits = state["logits"]  # (V,)
        before = torch.softmax(logits, dim=-1)  # (V,)
        after = next_token_probs(logits, t, k, p)  # (V,)
        order = before.argsort(descending=True)[:top_n].tolist()
        names = [label(i) for i in order]
        kept = int((after > 0).sum())
        fig = Figure(figsize=(12, 3.4), layout="constrained")
        ax_before, ax_after = fig.subplots(1, 2, sharey=True)
        x = range(len(order))
        ax_before.bar(x, before[order].numpy(), color="C0")
        top = 1.1 * float(max(before.max(), after.max()))
        ax_before.set(ylabel="probability", ylim=(0, min(1.02, top)),
                      title=f"the model's next-token distribution (top {len(order)} of {V})")
        ax_after.bar(x, after[order].numpy(), color="C1")
        ax_after.bar(x, before[order].numpy(), fill=False, edgecolor="0.6", linewidth=0.6)  # outline: before
        setting = "greedy" if t == 0 else f"T = {t:g}, top-k = {k or 'off'}, top-p = {p or 'off'}"
        ax_after.set(title=f"sampled from: {setting}; {kept} tokens kept")
        for ax in (ax_before, ax_after):
            ax.set_xticks(list(x), names, fontsize=9 if len(order) <= 30 else 7)
        image.value = _png(fig)
        entropy = lambda q: float(-(q[q > 0] * q[q > 0].log()).sum())  # noqa: E731
        status.value = (f"{state['n_prompt']} prompt tokens; entropy {entropy(before):.2f} nats before, "
                        f"{entropy(after):.2f} after; {kept} of {V} tokens can be drawn")
        gen = torch.Generator(device=state["ids"].device).manual_seed(int(seed_box.value))  # type: ignore[union-attr]
        ids = generate(model, state["ids"], max_new_tokens, temperature=t, top_k=k, top_p=p,  # type: ignore[arg-type]
                       generator=gen)  # (1, T + max_new_tokens)
        output.value = tokenizer.decode(ids[0, state["n_prompt"]:].tolist())  # type: ignore[attr-defined]

    prompt_box.observe(read_prompt, names="value")
    for control in (temperature, top_k, top_p, seed_box):
        control.observe(draw, names="value")
    read_prompt()
    box = widgets.VBox([prompt_box, widgets.HBox([temperature, top_k, top_p, seed_box]), status, image, output])
    box.controls = {"prompt": prompt_box, "temperature": temperature, "top_k": top_k,  # type: ignore[attr-defined]
                    "top_p": top_p, "seed": seed_box}
    box.image = image  # type: ignore[attr-defined]
    box.output = output  # type: ignore[attr-defined]
    return box
