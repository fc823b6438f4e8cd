"""Linear probes: how much a frozen model's features know about a label it was never taught.

iGPT's test of representation quality: run images through the trained
generative model, mean-pool the residual stream after one block
(:func:`layer_features`), and fit only a linear classifier on top
(:func:`linear_probe`). If a straight line separates the classes, the
features have made the label explicit. Chen et al. found the best features in
the *middle* of the stack: early layers are close to pixels, late ones
specialise in predicting the next pixel.

Reference: Chen et al., *Generative Pretraining from Pixels* (ICML 2020), section 3.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnbook._checks import int_in_range, positive_int, token_ids

from .masked import MaskedPixelModel
from .model import ImageGPT

__all__ = ["layer_features", "linear_probe", "ridge_probe"]


@torch.no_grad()
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
    if not isinstance(model, (ImageGPT, MaskedPixelModel)):
        raise TypeError(f"model must be an ImageGPT or a MaskedPixelModel, got {type(model).__name__}")
    n_layer = model.config.n_layer
    int_in_range("layer", layer, 0, n_layer, " (0 .. n_layer)")
    positive_int("batch_size", batch_size)
    seq = token_ids("seq", seq, dim=2)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        feats = [
            model.hidden_states(batch.to(device))[layer].mean(dim=1).float().cpu()  # (b, T, C) -> (b, C)
            for batch in seq.split(batch_size)
        ]
    finally:
        model.train(was_training)
    return torch.cat(feats)


def linear_probe(
    train_feats: torch.Tensor,
    train_labels: torch.Tensor,
    test_feats: torch.Tensor,
    test_labels: torch.Tensor,
    *,
    weight_decay: float = 1e-3,
    max_iter: int = 200,
) -> float:
    """Test accuracy of a multinomial logistic regression fitted on frozen features.

    Features (N, D) are standardised with the training set's mean and spread;
    the classifier (D -> classes) minimises cross-entropy plus
    ``weight_decay * |W|^2`` with full-batch L-BFGS (deterministic: no seed).

    >>> g = torch.Generator().manual_seed(0)
    >>> labels = torch.arange(200) % 2
    >>> feats = torch.randn(200, 5, generator=g) + 3.0 * labels[:, None]   # two separated clouds
    >>> linear_probe(feats[:100], labels[:100], feats[100:], labels[100:])
    1.0
    """
    _check_probe_inputs(train_feats, train_labels, test_feats, test_labels)
    positive_int("max_iter", max_iter)
    x = train_feats.double().cpu()
    mean, std = x.mean(dim=0), x.std(dim=0).clamp(min=1e-8)  # (D,), (D,)
    x = (x - mean) / std
    x_test = (test_feats.double().cpu() - mean) / std
    y = train_labels.cpu()
    n_classes = int(max(train_labels.max(), test_labels.max())) + 1
    W = torch.zeros(x.shape[1], n_classes, dtype=torch.float64, requires_grad=True)  # (D, K)
    b = torch.zeros(n_classes, dtype=torch.float64, requires_grad=True)  # (K,)
    opt = torch.optim.LBFGS([W, b], max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(x @ W + b, y) + weight_decay * (W**2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        pred = (x_test @ W + b).argmax(dim=1)  # (N_test,)
    return float((pred == test_labels.cpu()).double().mean())


def ridge_probe(
    train_feats: torch.Tensor,
    train_labels: torch.Tensor,
    test_feats: torch.Tensor,
    test_labels: torch.Tensor,
    *,
    l2: float = 1e-3,
) -> float:
    """Test accuracy of a least-squares linear probe: a closed form, no training loop.

    Standardise the features with the *training* set's mean and standard
    deviation (``std(dim=0)``, at least ``1e-8``), append a column of ones (the
    bias), and solve ``(X^T X + l2 I) W = X^T Y`` for one-hot targets ``Y``
    (``train_labels.max() + 1`` classes); a test row is assigned the class of
    its largest score ``x W``. Computed in float64. :func:`linear_probe` fits a
    logistic regression instead; both are linear classifiers on frozen features.

    >>> labels = torch.arange(200) % 2
    >>> feats = torch.randn(200, 5, generator=torch.Generator().manual_seed(0)) + 3.0 * labels[:, None]
    >>> ridge_probe(feats[:100], labels[:100], feats[100:], labels[100:])
    1.0
    """
    _check_probe_inputs(train_feats, train_labels, test_feats, test_labels)
    x = train_feats.double()
    mean, std = x.mean(dim=0), x.std(dim=0).clamp(min=1e-8)  # (D,), (D,)

    def design(feats: torch.Tensor) -> torch.Tensor:
        z = (feats.double() - mean) / std  # (N, D), scaled by the training set's statistics
        return torch.cat([z, torch.ones_like(z[:, :1])], dim=1)  # (N, D + 1): a bias column

    X = design(x)
    Y = F.one_hot(train_labels.long(), int(train_labels.max()) + 1).double()  # (N, K)
    A = X.T @ X + l2 * torch.eye(X.shape[1], dtype=X.dtype)  # (D + 1, D + 1)
    W = torch.linalg.solve(A, X.T @ Y)  # (D + 1, K)
    pred = (design(test_feats) @ W).argmax(dim=1)  # (N_test,)
    return float((pred == test_labels.long()).double().mean())


def _check_probe_inputs(train_feats: torch.Tensor, train_labels: torch.Tensor, test_feats: torch.Tensor,
                        test_labels: torch.Tensor) -> None:
    """Features (N, D) in floating point, of one width D; labels (N,) of class ids >= 0, one per row."""
    for name, x in (("train_feats", train_feats), ("test_feats", test_feats)):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() != 2:
            raise TypeError(f"{name} must be a floating-point tensor (N, D)")
    token_ids("train_labels", train_labels, dim=1)
    token_ids("test_labels", test_labels, dim=1)
    if train_feats.shape[1] != test_feats.shape[1]:
        raise ValueError(
            f"train_feats and test_feats need the same width D, got {train_feats.shape[1]} and {test_feats.shape[1]}"
        )
    if train_labels.shape[0] != train_feats.shape[0] or test_labels.shape[0] != test_feats.shape[0]:
        raise ValueError("each feature row needs one label: feats (N, D) and labels (N,) must agree on N")
    if train_labels.min() < 0 or test_labels.min() < 0:
        raise ValueError("labels must be class ids >= 0")
