"""Linear probes: how much a frozen model's features know about a label it was never taught.

A representation is judged by what a *linear* classifier can read from it:
freeze the model, turn each input into one feature vector (mean-pooled tokens,
say) and fit only a linear map from features to classes. If a straight line
separates the classes, the features have made the label explicit. Chapter 5
probes ImageGPT's layers (:func:`attnbook.imagegpt.layer_features`), chapter 6
an MAE's encoder against a random one; the benchmarks use the same functions.

Two probes, both on features standardised with the *training* set's mean and
spread: :func:`linear_probe`, a multinomial logistic regression fitted with
full-batch L-BFGS (deterministic), and :func:`ridge_probe`, least squares on
one-hot targets in closed form (chapter 5's exercise).

Reference: Chen et al., *Generative Pretraining from Pixels* (ICML 2020), section 3;
He et al., *Masked Autoencoders Are Scalable Vision Learners* (CVPR 2022), section 4.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attnbook._checks import positive_int, token_ids

__all__ = ["linear_probe", "ridge_probe"]


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
