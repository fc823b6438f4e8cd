"""Chapter 6's explorer: where a ViT's class token looks, per image, layer and head (see :mod:`attnbook.widgets`)."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.figure import Figure

from attnbook.vit import ViT, attention_maps, attention_rollout

from ._common import _png

__all__ = ["class_token_maps", "vit_attention_explorer"]


def class_token_maps(model: ViT, images: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Where the class token reads from, as patch grids: per layer (B, nh, g, g) and rolled out (B, g, g).

    ``g = img_size / patch_size``. Row 0 of each layer's attention, without the
    class token's own column or the registers' (so a layer's rows need not sum to 1 here), and
    row 0 of :func:`attnbook.vit.attention_rollout` (mean over heads, residual
    added), likewise.

    >>> from attnbook.vit import ViTConfig
    >>> model = ViT(ViTConfig.preset("cpu-digits", patch_size=2, depth=2)).eval()
    >>> layers, rollout = class_token_maps(model, torch.rand(3, 1, 8, 8))
    >>> len(layers), layers[0].shape, rollout.shape
    (2, torch.Size([3, 4, 4, 4]), torch.Size([3, 4, 4]))
    """
    g, k = model.config.img_size // model.config.patch_size, model.config.num_prefix_tokens
    maps = attention_maps(model, images)  # depth x (B, nh, k+N, k+N): the k = 1 + R tokens first
    layers = [a[:, :, 0, k:].reshape(a.shape[0], a.shape[1], g, g) for a in maps]  # (B, nh, g, g)
    rollout = attention_rollout(maps)[:, 0, k:].reshape(-1, g, g)  # (B, g, g)
    return layers, rollout


def _draw(image: np.ndarray, layer_map: np.ndarray, rollout: np.ndarray, title: str) -> bytes:
    fig = Figure(figsize=(7.5, 2.6))
    axes = fig.subplots(1, 3)
    axes[0].imshow(image, cmap="gray" if image.ndim == 2 else None, interpolation="nearest")
    axes[0].set_title("image", fontsize=9)
    for ax, grid, name in ((axes[1], layer_map, title), (axes[2], rollout, "rollout (all layers)")):
        ax.imshow(grid, cmap="inferno", interpolation="nearest")  # on the patch grid, beside the image
        ax.set_title(name, fontsize=9)
    for ax in axes:
        ax.set_axis_off()
    fig.tight_layout()
    return _png(fig)


def vit_attention_explorer(model: ViT, images: torch.Tensor, labels: torch.Tensor | None = None) -> widgets.VBox:
    """An explorer of a ViT's class-token attention: pick the image, the layer and the head.

    ``images`` (B, C, H, W) are what the model reads. The picture shows the
    image, the chosen layer's attention from the class token to each patch
    (one head, or the mean over heads) on the patch grid, and the attention rollout
    over all layers. The status line gives the prediction (and the label when
    ``labels`` is given) and the share of the class token's attention that the
    shown map puts on its most attended patch. ``controls`` holds ``"image"``,
    ``"layer"`` and ``"head"`` (``-1`` is the mean over heads); ``image``
    holds the PNG.

    >>> from attnbook.vit import ViTConfig
    >>> model = ViT(ViTConfig.preset("cpu-digits", patch_size=2, depth=2))
    >>> box = vit_attention_explorer(model, torch.rand(3, 1, 8, 8))
    >>> box.controls["layer"].value = 1
    >>> sorted(box.controls), bytes(box.image.value)[1:4] == b"PNG"
    (['head', 'image', 'layer'], True)
    """
    if not isinstance(model, ViT):
        raise TypeError(f"model must be an attnbook.vit.ViT, got {type(model).__name__}")
    cfg = model.config
    if not isinstance(images, torch.Tensor) or images.dim() != 4 or images.shape[1] != cfg.in_chans:
        got = tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__
        raise ValueError(f"images must have shape (B, {cfg.in_chans}, {cfg.img_size}, {cfg.img_size}), got {got}")
    if labels is not None and len(labels) != len(images):
        raise ValueError(f"labels must have one entry per image ({len(images)}), got {len(labels)}")
    was_training = model.training
    model.eval()
    with torch.no_grad():
        predictions = model(images).argmax(-1)  # (B,)
        layers, rollout = class_token_maps(model, images)
    model.train(was_training)
    pixels = images.detach().cpu().float()
    pixels = (pixels - pixels.amin(dim=(1, 2, 3), keepdim=True)) / (
        pixels.amax(dim=(1, 2, 3), keepdim=True) - pixels.amin(dim=(1, 2, 3), keepdim=True) + 1e-8)  # 0..1 per image
    channels_last = pixels.permute(0, 2, 3, 1).numpy()  # (B, H, W, C)

    image_box = widgets.IntSlider(value=0, min=0, max=len(images) - 1, description="image", continuous_update=False)
    layer_box = widgets.IntSlider(value=cfg.depth - 1, min=0, max=cfg.depth - 1, description="layer",
                                  continuous_update=False)
    head_box = widgets.Dropdown(options=[("mean of heads", -1)] + [(f"head {h}", h) for h in range(cfg.num_heads)],
                                value=-1, description="head")
    status = widgets.Label()
    image = widgets.Image(format="png")

    def redraw(_: object = None) -> None:
        b, layer, head = image_box.value, layer_box.value, head_box.value
        maps = layers[layer][b]  # (nh, g, g)
        grid = maps.mean(0) if head == -1 else maps[head]  # (g, g)
        picture = channels_last[b][..., 0] if cfg.in_chans == 1 else channels_last[b]
        name = f"layer {layer}, " + ("mean of heads" if head == -1 else f"head {head}")
        image.value = _draw(picture, grid.numpy(), rollout[b].numpy(), name)
        truth = "" if labels is None else f", label {int(labels[b])}"
        status.value = (f"prediction {int(predictions[b])}{truth}; the top patch gets "
                        f"{float(grid.max()):.0%} of the class token's attention in this map")

    for control in (image_box, layer_box, head_box):
        control.observe(redraw, names="value")
    redraw()
    box = widgets.VBox([widgets.HBox([image_box, layer_box, head_box]), image, status])
    box.controls = {"image": image_box, "layer": layer_box, "head": head_box}
    box.image = image
    return box
