"""Linear probes: how much a frozen model's features know about a label it was never taught.

iGPT's test of representation quality: run images through the trained
generative model, mean-pool the residual stream after one block
(:func:`layer_features`), and fit only a linear classifier on top
(:func:`attnbook.probe.linear_probe`, re-exported here with
:func:`~attnbook.probe.ridge_probe`). If a straight line separates the
classes, the features have made the label explicit. Chen et al. found the best features in
the *middle* of the stack: early layers are close to pixels, late ones
specialise in predicting the next pixel.

Reference: Chen et al., *Generative Pretraining from Pixels* (ICML 2020), section 3.
"""

from __future__ import annotations

import torch

from attnbook._checks import int_in_range, positive_int, token_ids
from attnbook.probe import linear_probe, ridge_probe

from .masked import MaskedPixelModel
from .model import ImageGPT

__all__ = ["layer_features", "layer_probes", "linear_probe", "ridge_probe"]  # the probes: attnbook.probe


def layer_features(model: ImageGPT | MaskedPixelModel, seq: torch.Tensor, layer: int, *,
                   batch_size: int = 256) -> torch.Tensor:
    """Mean over positions of the residual stream after block ``layer``: features (B, C).

    ``layer = 0`` is the input (token + position embeddings), ``layer = n_layer``
    the last block's output (before the final LayerNorm). ``seq`` (B, H*W) holds
    whole images in raster order. A :class:`MaskedPixelModel` reads them with
    no pixel masked. Runs in eval mode without gradients, in
    batches, and returns float32 features on the CPU.

    >>> from attnbook.imagegpt import ImageGPTConfig
    >>> model = ImageGPT(ImageGPTConfig.preset("digits-8x8"))
    >>> layer_features(model, torch.randint(8, (5, 64)), layer=2).shape
    torch.Size([5, 64])
    """
    _require_model(model)
    int_in_range("layer", layer, 0, model.config.n_layer, " (0 .. n_layer)")
    return _pooled_layers(model, seq, batch_size)[layer]


def _require_model(model: object) -> None:
    if not isinstance(model, (ImageGPT, MaskedPixelModel)):
        raise TypeError(f"model must be an ImageGPT or a MaskedPixelModel, got {type(model).__name__}")


@torch.no_grad()
def _pooled_layers(model: ImageGPT | MaskedPixelModel, seq: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Every layer's mean-pooled residual stream from one forward pass: (n_layer + 1, B, C) float32 on the CPU."""
    _require_model(model)
    positive_int("batch_size", batch_size)
    seq = token_ids("seq", seq, dim=2)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        feats = [
            torch.stack([h.mean(dim=1) for h in model.hidden_states(batch.to(device))]).float().cpu()  # (L+1, b, C)
            for batch in seq.split(batch_size)
        ]
    finally:
        model.train(was_training)
    return torch.cat(feats, dim=1)


def layer_probes(model: ImageGPT | MaskedPixelModel, train_seq: torch.Tensor, train_labels: torch.Tensor,
                 test_seq: torch.Tensor, test_labels: torch.Tensor) -> list[float]:
    """:func:`linear_probe` test accuracy on the :func:`layer_features` of every layer, 0 .. ``n_layer``.

    ``train_seq`` and ``test_seq`` (N, H*W) hold whole images in raster order.

    >>> from attnbook.imagegpt import ImageGPTConfig
    >>> model = ImageGPT(ImageGPTConfig.preset("digits-8x8", n_layer=1))
    >>> seq, labels = torch.randint(8, (20, 64)), torch.arange(20) % 2
    >>> len(layer_probes(model, seq[:10], labels[:10], seq[10:], labels[10:]))   # layers 0 and 1
    2
    """
    train, test = _pooled_layers(model, train_seq, 256), _pooled_layers(model, test_seq, 256)  # (L+1, N, C)
    return [linear_probe(train[layer], train_labels, test[layer], test_labels) for layer in range(len(train))]
