"""The training recipe chapter 6 uses for every image classifier, ViT or CNN.

``random_shift`` -> ``shifted_batches`` -> ``evaluate_accuracy`` ->
``train_classifier``. The recipe is AdamW with weight
decay on the weight matrices only (:func:`attnbook.train.decay_groups`), cross-entropy with
label smoothing 0.1, a cosine schedule after a short warmup, and one cheap
regulariser: each training image moved by a random whole number of pixels (at
most ``max_shift`` each way, the border filled with zeros). A CNN hardly
needs it, since convolutions already treat every position alike; a ViT, which
has to learn that, gains several points from it on small data sets (chapter
6, section 2).

The loop itself is :func:`attnbook.train.fit`; this module only supplies
batches and the accuracy on a held-out set. Shape legend: ``B`` batch,
``C`` channels, ``H``/``W`` height and width.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from attnbook.train import History, fit

__all__ = ["random_shift", "shifted_batches", "evaluate_accuracy", "train_classifier"]


def random_shift(images: torch.Tensor, max_shift: int, generator: torch.Generator | None = None) -> torch.Tensor:
    """Move each image (B, C, H, W) by its own offsets in ``-max_shift..max_shift``, zero-filled.

    >>> img = torch.arange(9.0).view(1, 1, 3, 3)
    >>> random_shift(img, 0).equal(img)
    True
    >>> g = torch.Generator().manual_seed(1)
    >>> random_shift(img, 1, g)[0, 0]          # moved one pixel left
    tensor([[1., 2., 0.],
            [4., 5., 0.],
            [7., 8., 0.]])
    """
    if images.dim() != 4:
        raise ValueError(f"images must have shape (B, C, H, W), got {tuple(images.shape)}")
    if not isinstance(max_shift, int) or isinstance(max_shift, bool) or max_shift < 0:
        raise ValueError(f"max_shift must be an int >= 0, got {max_shift!r}")
    if max_shift == 0:
        return images
    B, C, H, W = images.shape
    s = max_shift
    padded = F.pad(images, (s, s, s, s))  # (B, C, H + 2s, W + 2s)
    dy, dx = torch.randint(0, 2 * s + 1, (2, B, 1), generator=generator).to(images.device)  # (B, 1) each
    rows = torch.arange(H, device=images.device) + dy  # (B, H): source rows in the padded image
    cols = torch.arange(W, device=images.device) + dx  # (B, W)
    batch = torch.arange(B, device=images.device)[:, None, None]  # (B, 1, 1)
    out = padded.permute(0, 2, 3, 1)[batch, rows[:, :, None], cols[:, None, :]]  # (B, H, W, C)
    return out.permute(0, 3, 1, 2).contiguous()  # (B, C, H, W)


def shifted_batches(images: torch.Tensor, labels: torch.Tensor, *, batch_size: int = 64, max_shift: int = 0,
                    generator: torch.Generator | None = None) -> Callable[[], tuple[torch.Tensor, torch.Tensor]]:
    """A function returning a fresh random batch ``(images, labels)`` each call, shifted.

    >>> next_batch = shifted_batches(torch.rand(10, 1, 8, 8), torch.arange(10), batch_size=4)
    >>> [tuple(t.shape) for t in next_batch()]
    [(4, 1, 8, 8), (4,)]
    """
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"images and labels must have the same length, got {images.shape[0]} and {labels.shape[0]}")

    def next_batch() -> tuple[torch.Tensor, torch.Tensor]:
        idx = torch.randint(0, images.shape[0], (batch_size,), generator=generator)
        return random_shift(images[idx], max_shift, generator), labels[idx]

    return next_batch


@torch.no_grad()
def evaluate_accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor, *, batch_size: int = 500) -> float:
    """Share of ``images`` (N, C, H, W) whose largest logit is at their label (eval mode)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    right = sum((model(images[i:i + batch_size].to(device)).argmax(-1).cpu() == labels[i:i + batch_size]).sum().item()
                for i in range(0, len(images), batch_size))
    model.train(was_training)
    return right / len(images)


def train_classifier(model: nn.Module, train: tuple[torch.Tensor, torch.Tensor],
                     test: tuple[torch.Tensor, torch.Tensor], *, steps: int, batch_size: int = 64,
                     lr: float = 2e-3, weight_decay: float = 0.05, max_shift: int = 0, label_smoothing: float = 0.1,
                     max_seconds: float | None = None, eval_every: int | None = None,
                     seed: int = 0, device: torch.device | str | None = "cpu", progress: bool = False) -> History:
    """Train ``model`` on ``train = (images, labels)`` with the chapter's recipe; evaluate on ``test``.

    ``History.evals`` holds ``{"step", "accuracy"}`` records (test accuracy);
    ``label_smoothing`` moves that share of each target onto the other classes
    (``F.cross_entropy``'s argument); ``max_seconds`` stops early, as in
    :func:`attnbook.train.fit`.

    >>> _ = torch.manual_seed(0)
    >>> x = torch.rand(64, 1, 4, 4); y = (x[:, 0, 0, 0] > 0.5).long()
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(16, 2))
    >>> h = train_classifier(model, (x, y), (x, y), steps=100, lr=0.05, weight_decay=0.0)
    >>> h.last["accuracy"] > 0.8
    True
    """
    generator = torch.Generator().manual_seed(seed)
    if (isinstance(label_smoothing, bool) or not isinstance(label_smoothing, (int, float))
            or not 0 <= label_smoothing < 1):
        raise ValueError(f"label_smoothing must be a number in [0, 1), got {label_smoothing!r}")
    return fit(
        model, lambda m, b: F.cross_entropy(m(b[0]), b[1], label_smoothing=label_smoothing),
        shifted_batches(*train, batch_size=batch_size, max_shift=max_shift, generator=generator),
        steps=steps, lr=lr, weight_decay=weight_decay, schedule="cosine", warmup_steps=min(100, steps // 10),
        eval_fn=lambda m: {"accuracy": evaluate_accuracy(m, *test)}, eval_every=eval_every,
        max_seconds=max_seconds, device=device, progress=progress,
    )
