"""Chapter 4's explorer: sampling settings over a GPT's next-token distribution (see :mod:`attnbook.widgets`)."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from attnbook.gpt import GPT, generate, next_token_probs

from ._common import _png, _seed_status_image

__all__ = ["sampling_explorer"]


def sampling_explorer(
    model: torch.nn.Module,
    tokenizer: Any,
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
    seed_box, status, image = _seed_status_image(seed)
    output = widgets.Textarea(value="", description="sample", disabled=True,
                              layout=widgets.Layout(width="60em", height="10em"))
    state: dict[str, Any] = {}

    def label(i: int) -> str:
        text = tokenizer.decode([i])
        text = text.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥")
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
        return text.replace("$", r"\$")

    def read_prompt(_: object = None) -> None:
        state.clear()
        try:
            ids = list(tokenizer.encode(prompt_box.value))
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
        setting = "greedy" if t == 0 else f"τ = {t:g}, top-k = {k or 'off'}, top-p = {p or 'off'}"
        ax_after.set(title=f"sampled from: {setting}; {kept} tokens kept")
        for ax in (ax_before, ax_after):
            ax.set_xticks(list(x), names, fontsize=9 if len(order) <= 30 else 7)
        image.value = _png(fig)
        entropy = lambda q: float(-(q[q > 0] * q[q > 0].log()).sum())  # noqa: E731
        status.value = (f"{state['n_prompt']} prompt tokens; entropy {entropy(before):.2f} nats before, "
                        f"{entropy(after):.2f} after; {kept} of {V} tokens can be drawn")
        gen = torch.Generator(device=state["ids"].device).manual_seed(int(seed_box.value))
        ids = generate(model, state["ids"], max_new_tokens, temperature=t, top_k=k, top_p=p,
                       generator=gen)  # (1, T + max_new_tokens)
        output.value = tokenizer.decode(ids[0, state["n_prompt"]:].tolist())

    prompt_box.observe(read_prompt, names="value")
    for control in (temperature, top_k, top_p, seed_box):
        control.observe(draw, names="value")
    read_prompt()
    box = widgets.VBox([prompt_box, widgets.HBox([temperature, top_k, top_p, seed_box]), status, image, output])
    box.controls = {"prompt": prompt_box, "temperature": temperature, "top_k": top_k,
                    "top_p": top_p, "seed": seed_box}
    box.image = image
    box.output = output
    return box
