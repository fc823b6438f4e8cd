"""Chapter 5's explorer: image completion by a next-pixel model (see :mod:`attnbook.widgets`)."""

from __future__ import annotations

import ipywidgets as widgets
import torch
from matplotlib.figure import Figure

from attnbook.imagegpt import ImageGPT, PixelCNN, complete, dequantize_9bit, evaluate_bits_per_dim

from ._common import _png, _seed_status_image

__all__ = ["completion_explorer", "tokens_to_rgb"]


def tokens_to_rgb(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Token images (N, H, W) as float RGB (N, H, W, 3) in [0, 1] for display.

    Ids of a 512-token vocabulary are read as the uniform 9-bit palette
    (:func:`attnbook.imagegpt.dequantize_9bit`); any other vocabulary as grey
    levels, 0 black and ``vocab_size - 1`` white.

    >>> tokens_to_rgb(torch.tensor([[[0, 7]]]), 8)[0, 0].tolist()
    [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    >>> rgb = tokens_to_rgb(torch.tensor([[[0b111_000_000]]]), 512)     # red bin 7, no green, no blue
    >>> (255 * rgb[0, 0, 0]).round().int().tolist()                      # the bins' centres
    [240, 16, 16]
    """
    if vocab_size == 512:
        return dequantize_9bit(tokens.cpu()).permute(0, 2, 3, 1).float() / 255.0  # (N, 3, H, W) -> (N, H, W, 3)
    grey = tokens.cpu().float() / max(vocab_size - 1, 1)  # (N, H, W)
    return grey[..., None].expand(*grey.shape, 3)  # (N, H, W, 3)


def completion_explorer(
    model: ImageGPT | PixelCNN,
    images: torch.Tensor,
    labels: torch.Tensor | None = None,
    *,
    n_samples: int = 4,
    seed: int = 0,
) -> widgets.VBox:
    """An explorer of image completion: choose an image and how many of its rows to keep.

    ``model`` is an :class:`~attnbook.imagegpt.ImageGPT` or a
    :class:`~attnbook.imagegpt.PixelCNN`; ``images`` (N, H, W) holds token ids
    (held-out images, usually). The picture shows the chosen image, its kept
    rows (the rest hatched) and ``n_samples`` completions drawn by
    :func:`attnbook.imagegpt.complete` with a generator seeded by the ``seed``
    box, so the same settings draw the same pictures; the status line gives the
    model's bits per dimension on that image and how many completed pixels
    equal the original. ``controls`` holds ``"image"``, ``"rows_kept"``,
    ``"temperature"`` and ``"seed"``; ``image`` holds the PNG, ``completions``
    the last draw (n_samples, H, W).

    >>> from attnbook.imagegpt import ImageGPTConfig
    >>> _ = torch.manual_seed(0)
    >>> model = ImageGPT(ImageGPTConfig.preset("digits-8x8", n_layer=1))
    >>> box = completion_explorer(model, torch.randint(8, (3, 8, 8)), n_samples=2)
    >>> box.controls["rows_kept"].value = 6
    >>> sorted(box.controls), tuple(box.completions.shape), bytes(box.image.value)[1:4] == b"PNG"
    (['image', 'rows_kept', 'seed', 'temperature'], (2, 8, 8), True)
    """
    if not isinstance(model, (ImageGPT, PixelCNN)):
        raise TypeError(f"model must be an ImageGPT or a PixelCNN, got {type(model).__name__}")
    vocab = model.config.vocab_size if isinstance(model, ImageGPT) else model.vocab_size
    if not isinstance(images, torch.Tensor) or images.dim() != 3 or len(images) == 0:
        got = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
        raise ValueError(f"images must be a (N, H, W) tensor of token ids with N >= 1, got {got}")
    if labels is not None and (not isinstance(labels, torch.Tensor) or labels.shape != images.shape[:1]):
        raise ValueError(f"labels must be a tensor of shape (N,) = ({len(images)},), got {labels!r:.60}")
    for name, value, low in (("n_samples", n_samples, 1), ("seed", seed, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    N, H, W = images.shape
    pick = widgets.IntSlider(value=0, min=0, max=N - 1, description="image", continuous_update=False)
    rows = widgets.IntSlider(value=H // 2, min=0, max=H, description="rows kept", continuous_update=False)
    temperature = widgets.FloatSlider(value=1.0, min=0.0, max=2.0, step=0.1, description="temperature",
                                      continuous_update=False)
    seed_box, status, image = _seed_status_image(seed)
    box = widgets.VBox([widgets.HBox([pick, rows, temperature, seed_box]), status, image])

    def draw(_: object = None) -> None:
        original = images[pick.value : pick.value + 1]  # (1, H, W)
        kept = rows.value
        device = next(model.parameters()).device
        gen = torch.Generator(device=device).manual_seed(int(seed_box.value))
        batch = original.expand(n_samples, H, W)  # (n_samples, H, W): one canvas per draw
        done = complete(model, batch, kept, temperature.value, gen).cpu()  # (n_samples, H, W)
        box.completions = done
        bits = evaluate_bits_per_dim(model, original)
        same = (done[:, kept:] == original[:, kept:]).float().mean().item() if kept < H else 1.0
        label = f"label {int(labels[pick.value])}, " if labels is not None else ""
        status.value = (f"{label}{bits:.2f} bits/dim under the model; {100 * same:.0f} % of the "
                        f"{(H - kept) * W * n_samples} sampled pixels equal the original")
        pictures = tokens_to_rgb(torch.cat([original, original, done]), vocab)  # (2 + n, H, W, 3)
        fig = Figure(figsize=(1.5 * (2 + n_samples), 1.9), layout="constrained")
        axes = fig.subplots(1, 2 + n_samples)
        titles = ["original", f"{kept} rows kept"] + [f"sample {i + 1}" for i in range(n_samples)]
        for i, (ax, title) in enumerate(zip(axes, titles, strict=True)):
            ax.imshow(pictures[i].numpy(), interpolation="nearest")
            if i == 1 and kept < H:  # hide what the model does not see
                ax.axhspan(kept - 0.5, H - 0.5, facecolor="0.85", edgecolor="0.5", hatch="///")
            ax.set_title(title, fontsize=9)
            ax.set_axis_off()
        image.value = _png(fig)

    for control in (pick, rows, temperature, seed_box):
        control.observe(draw, names="value")
    draw()
    box.controls = {"image": pick, "rows_kept": rows, "temperature": temperature,
                    "seed": seed_box}
    box.image = image
    return box
