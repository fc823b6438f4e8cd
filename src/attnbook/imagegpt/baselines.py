"""Baselines that ignore the other pixels, and the scores that completions are measured with.

A number such as "63 % of completed pixels have the right shape" means
nothing until it stands beside what a model that looks at *no* pixel scores
on the same data. Two such baselines:

* **per-position histogram** (:func:`position_histogram`,
  :func:`histogram_bits`): each position's distribution of values over the
  training images -- knows *where* a pixel is, not what is around it;
* **constant completions** (:func:`fill_rows`): the kept rows, then a fixed
  picture -- all background, or the most common value at each position
  (:func:`position_mode`).

Completions of a digit's bottom half are scored on the completed rows only,
after turning each image into an ink mask (True = ink): :func:`shape_agreement`
(share of pixels right, which an all-background completion already scores
well on, because most pixels are paper) and :func:`ink_iou` (intersection over
union of the ink, which scores an all-background completion 0).
:func:`completion_scores` puts a model's draws beside both baselines.
"""

from __future__ import annotations

import torch

from attnbook._checks import int_in_range, positive_int, token_ids

from .sequence import to_sequence

__all__ = ["position_histogram", "histogram_bits", "position_mode", "fill_rows", "ink_mask", "shape_agreement",
           "ink_iou", "completion_scores"]


def position_histogram(tokens: torch.Tensor, vocab_size: int, *, add: float = 1.0) -> torch.Tensor:
    """``p(value | position)`` from counts over the images (N, H, W): probabilities (H*W, V).

    ``add`` is added to every count (add-one smoothing), so no value gets probability 0.

    >>> position_histogram(torch.tensor([[[0, 1]], [[0, 0]]]), 2)   # 2 images of 1 x 2 pixels
    tensor([[0.7500, 0.2500],
            [0.5000, 0.5000]], dtype=torch.float64)
    """
    tokens = token_ids("tokens", tokens, positive_int("vocab_size", vocab_size), dim=3)
    flat = to_sequence(tokens)  # (N, T)
    counts = torch.stack([torch.bincount(flat[:, t], minlength=vocab_size) for t in range(flat.shape[1])])
    counts = counts.double() + add  # (T, V)
    return counts / counts.sum(dim=1, keepdim=True)


def histogram_bits(train: torch.Tensor, test: torch.Tensor, vocab_size: int) -> float:
    """Bits per dimension on ``test`` (M, H, W) of independent pixels, each drawn from its
    position's add-one histogram over ``train`` (N, H, W).

    >>> train = torch.tensor([[[0, 1]], [[0, 0]]])
    >>> round(histogram_bits(train, torch.tensor([[[0, 0]]]), 2), 4)   # (-log2 0.75 - log2 0.5) / 2
    0.7075
    """
    probs = position_histogram(train, vocab_size)  # (T, V)
    test_flat = to_sequence(token_ids("test", test, vocab_size, dim=3))  # (M, T)
    if test_flat.shape[1] != probs.shape[0]:
        raise ValueError(f"train and test images must have the same size, got {tuple(train.shape[1:])} "
                         f"and {tuple(test.shape[1:])}")
    picked = probs[torch.arange(probs.shape[0]), test_flat]  # (M, T)
    return float(-picked.log2().mean())


def position_mode(tokens: torch.Tensor) -> torch.Tensor:
    """The most common value at each position of the images (N, H, W): one image (H, W).

    Ties go to the smallest value. On ink masks (bool) it is the majority
    shape: ink where most training images have ink.

    >>> position_mode(torch.tensor([[[0, 1]], [[0, 2]], [[3, 2]]]))
    tensor([[0, 2]])
    >>> position_mode(torch.tensor([[[True, False]], [[True, True]], [[False, False]]]))
    tensor([[ True, False]])
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 3 or tokens.numel() == 0:
        raise ValueError("tokens must be a non-empty (N, H, W) tensor")
    as_bool = tokens.dtype == torch.bool
    ids = token_ids("tokens", tokens.long())
    if ids.min() < 0:
        raise ValueError("tokens must hold values >= 0")
    N, H, W = ids.shape
    flat = ids.reshape(N, H * W)  # (N, T)
    counts = torch.stack([torch.bincount(flat[:, t], minlength=int(ids.max()) + 1) for t in range(H * W)])
    mode = counts.argmax(dim=1).view(H, W)  # (T, V) -> (T,) -> (H, W); argmax takes the first maximum
    return mode.bool() if as_bool else mode


def fill_rows(tokens: torch.Tensor, rows_kept: int, fill: torch.Tensor | int | bool) -> torch.Tensor:
    """A constant completion: the first ``rows_kept`` rows of ``tokens`` (B, H, W), then ``fill``.

    ``fill`` is a value or a tensor broadcast to (B, H, W): one image (H, W)
    (say :func:`position_mode` of the training images) or one value per image
    (B, 1, 1) (say each image's own background colour).

    >>> fill_rows(torch.tensor([[[1, 2], [3, 4]]]), 1, 0)
    tensor([[[1, 2],
             [0, 0]]])
    >>> fill_rows(torch.tensor([[[1, 2], [3, 4]]]), 1, torch.tensor([[7, 8], [5, 6]]))
    tensor([[[1, 2],
             [5, 6]]])
    """
    if not isinstance(tokens, torch.Tensor) or tokens.dim() != 3:
        raise ValueError(f"tokens must be a (B, H, W) tensor, got {getattr(tokens, 'shape', type(tokens))}")
    int_in_range("rows_kept", rows_kept, 0, tokens.shape[1], " (0 .. H)")
    fill = torch.as_tensor(fill, dtype=tokens.dtype, device=tokens.device)
    try:
        out = fill.expand_as(tokens).clone()  # (B, H, W)
    except RuntimeError:
        raise ValueError(f"fill of shape {tuple(fill.shape)} does not broadcast to the images "
                         f"{tuple(tokens.shape)}") from None
    out[:, :rows_kept] = tokens[:, :rows_kept]
    return out


def ink_mask(tokens: torch.Tensor) -> torch.Tensor:
    """Ink (True) wherever a pixel differs from its image's top-left pixel, the paper: (B, H, W) bool.

    One rule for grey and coloured digits alike (their top-left pixel is
    always blank), applied to originals and completions in the same way, so a
    completion equal to the original scores 100 %.

    >>> ink_mask(torch.tensor([[[5, 5], [5, 9]]]))
    tensor([[[False, False],
             [False,  True]]])
    """
    tokens = token_ids("tokens", tokens, dim=3)
    return tokens != tokens[:, :1, :1]  # (B, H, W) against (B, 1, 1)


def _completed(name: str, x: torch.Tensor, rows_kept: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or x.dtype != torch.bool or x.dim() != 3:
        raise TypeError(f"{name} must be a bool ink mask (B, H, W)")
    int_in_range("rows_kept", rows_kept, 0, x.shape[1] - 1, " (0 .. H - 1: some rows must be completed)")
    return x[:, rows_kept:]


def shape_agreement(done_ink: torch.Tensor, true_ink: torch.Tensor, rows_kept: int) -> float:
    """Share of the completed pixels (rows ``rows_kept ..``) that are ink in both masks or paper in both.

    The accuracy of ink against paper: when most pixels are paper, an
    all-paper completion already scores high (compare with :func:`ink_iou`).

    >>> true = torch.tensor([[[True, True], [True, False], [False, False]]])
    >>> shape_agreement(torch.zeros(1, 3, 2, dtype=torch.bool), true, 1)   # all paper: 3 of 4
    0.75
    """
    done, true = _completed("done_ink", done_ink, rows_kept), _completed("true_ink", true_ink, rows_kept)
    if done.shape != true.shape:
        raise ValueError(f"done_ink and true_ink must have the same shape, got {tuple(done_ink.shape)} "
                         f"and {tuple(true_ink.shape)}")
    return float((done == true).double().mean())


def ink_iou(done_ink: torch.Tensor, true_ink: torch.Tensor, rows_kept: int) -> float:
    """Intersection over union of the ink in the completed rows, pooled over all the images.

    ``|done & true| / |done | true|``: 1 when the completed ink is exactly the
    true ink, 0 for an all-paper completion, and paper drawn where there is
    paper earns nothing. (1.0 when neither has any ink.)

    >>> true = torch.tensor([[[True, True], [True, False], [False, False]]])
    >>> ink_iou(torch.zeros(1, 3, 2, dtype=torch.bool), true, 1)
    0.0
    >>> ink_iou(torch.tensor([[[False, False], [True, True], [False, False]]]), true, 1)   # 1 of 2
    0.5
    """
    done, true = _completed("done_ink", done_ink, rows_kept), _completed("true_ink", true_ink, rows_kept)
    if done.shape != true.shape:
        raise ValueError(f"done_ink and true_ink must have the same shape, got {tuple(done_ink.shape)} "
                         f"and {tuple(true_ink.shape)}")
    union = int((done | true).sum())
    return 1.0 if union == 0 else int((done & true).sum()) / union


def completion_scores(draws: torch.Tensor, train: torch.Tensor, test: torch.Tensor,
                      rows_kept: int) -> dict[str, tuple[float, float]]:
    """``(shape_agreement, ink_iou)`` of four ways of completing ``test`` below row ``rows_kept``.

    ``draws`` (K, N, H, W) holds K completions of each of the N ``test``
    images (token ids). The rows, in order: ``"all background"`` (paper
    below the kept rows), ``"per-position mode"`` (ink where most of
    ``train``'s images have ink), ``"1 draw"`` (the first completion) and
    ``"vote of K draws"`` (ink where more than half of the K draws put ink).

    >>> test = torch.tensor([[[0, 0], [0, 5]]])                 # one 2 x 2 image, ink at the bottom right
    >>> draws = torch.tensor([[[[0, 0], [0, 5]]], [[[0, 0], [0, 0]]], [[[0, 0], [0, 5]]]])  # K = 3
    >>> completion_scores(draws, test, test, 1)
    {'all background': (0.5, 0.0), 'per-position mode': (1.0, 1.0), '1 draw': (1.0, 1.0), 'vote of 3 draws': (1.0, 1.0)}
    """
    if not isinstance(draws, torch.Tensor) or draws.dim() != 4 or draws.shape[1:] != test.shape:
        raise ValueError(f"draws must be (K, N, H, W) completions of test {tuple(test.shape)}, "
                         f"got {tuple(getattr(draws, 'shape', ()))}")
    true_ink = ink_mask(test)  # (N, H, W)
    drawn_ink = ink_mask(draws.flatten(0, 1)).view(draws.shape)  # (K, N, H, W)
    vote = drawn_ink.float().mean(0) > 0.5  # (N, H, W)
    rows = {"all background": fill_rows(true_ink, rows_kept, False),
            "per-position mode": fill_rows(true_ink, rows_kept, position_mode(ink_mask(train))),
            "1 draw": drawn_ink[0], f"vote of {len(draws)} draws": vote}
    return {name: (shape_agreement(done, true_ink, rows_kept), ink_iou(done, true_ink, rows_kept))
            for name, done in rows.items()}
