"""``vit-mnist``: the ViT of chapter 6, section 3, on a 7x7 grid of 4x4 patches, trained long enough
for its learned positions to show the grid.

The recipe is section 2's (:mod:`attnbook.vit.classify`: AdamW, label
smoothing 0.1, a cosine schedule, random shifts) with two changes that the
position embeddings need: shifts of up to ``max_shift`` pixels, so that a
stroke lands on every patch position in turn and the positions have to say
where a patch lies rather than what usually lies there; and weight decay on
the positions too (``pos_weight_decay``), which wears away what the data
does not keep asking for. The positions start random (timm's truncated
normal), never from a 2-D sine table. Of weight decay 0, 0.05 and 0.5 on the
positions (``bench_vit.py positions``), 0.5 drew the grid soonest: a
row-or-column contrast of 0.24 after a third of the run, against 0.20 and
0.19 (runs as in ``bench_vit.py positions``, on a shared 2-core machine).

``evaluate`` measures on the 1,000 test digits of MNIST-5k: test accuracy,
the learned positions' same-row-or-column contrast
(:func:`attnbook.vit.maps.row_column_contrast`), and the share of the class
token's rolled-out attention on ink patches against the ink's share of the
patches (:func:`attnbook.vit.class_token_share`).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from attnbook.data import load_mnist5k
from attnbook.pretrained._recipe import Recipe, Settings, Trained
from attnbook.train import decay_groups, fit
from attnbook.vit import ViT, ViTConfig, attention_maps, attention_rollout, class_token_share, patchify
from attnbook.vit.classify import evaluate_accuracy, shifted_batches
from attnbook.vit.maps import position_similarity, row_column_contrast

__all__ = ["RECIPE", "TRAINING", "split", "make", "train", "evaluate", "ink_patches"]

MODEL = dict(ViTConfig.preset("cpu-mnist", patch_size=4).__dict__)  # 7x7 grid of 4x4 patches, D = 64
TRAINING = dict(  # what train() uses; the sidecar's notes repeat it
    steps=4000,  # batches
    batch_size=128,
    lr=2e-3,
    weight_decay=0.05,  # on weight matrices
    pos_weight_decay=0.5,  # on the position embeddings (0: timm's no_weight_decay)
    max_shift=3,  # random shifts of the training images, pixels each way
    label_smoothing=0.1,
)
INK_THRESHOLD = 0.25  # a patch is ink when its mean pixel is above this


def split() -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """MNIST-5k as 4,000 train / 1,000 test, images (N, 1, 28, 28) in 0..1 (``bench_vit.mnist_split``)."""
    images, labels = load_mnist5k(seed=0)
    x = images[:, None].float() / 255  # (N, 1, 28, 28)
    return (x[:4000], labels[:4000]), (x[4000:], labels[4000:])


def make(config: dict) -> ViT:
    return ViT(ViTConfig(**config))


def ink_patches(images: torch.Tensor, patch_size: int) -> torch.Tensor:
    """(B, N) True where a patch's mean pixel is above :data:`INK_THRESHOLD`."""
    return patchify(images, patch_size).mean(-1) > INK_THRESHOLD


@torch.no_grad()
def grid_metrics(model: ViT, test: tuple[torch.Tensor, torch.Tensor]) -> dict[str, float]:
    """Accuracy, the positions' row/column contrast and rollout on ink, for ``test`` (images, labels)."""
    model.eval()
    same, elsewhere = row_column_contrast(position_similarity(model))
    images = test[0]
    maps = [a.cpu() for a in attention_maps(model, images.to(next(model.parameters()).device))]
    ink = ink_patches(images, model.config.patch_size)  # (B, N)
    ink_share = ink.float().mean().item()
    on_ink = class_token_share(attention_rollout(maps), ink).mean().item()
    last = class_token_share(maps[-1].mean(1), ink).mean().item()
    return {"test_accuracy": evaluate_accuracy(model, *test), "pos_same_row_col": same,
            "pos_elsewhere": elsewhere, "pos_contrast": same - elsewhere, "ink_patch_share": ink_share,
            "rollout_mass_on_ink": on_ink, "rollout_ink_ratio": on_ink / ink_share,
            "last_layer_ink_ratio": last / ink_share}


def train(settings: Settings, **overrides: Any) -> Trained:
    """Train from random weights; ``overrides`` change :data:`TRAINING` or :data:`MODEL` (for sweeps)."""
    cfg = {**TRAINING, **{k: v for k, v in overrides.items() if k in TRAINING}}
    config = {**MODEL, **{k: v for k, v in overrides.items() if k in MODEL}}
    steps = 4 if settings.smoke else cfg["steps"]
    train_set, test = split()
    if settings.smoke:
        train_set, test = (train_set[0][:256], train_set[1][:256]), (test[0][:64], test[1][:64])
    torch.manual_seed(settings.seed)
    model = make(config)
    optimizer = torch.optim.AdamW(decay_groups(model, cfg["weight_decay"], position_decay=cfg["pos_weight_decay"]),
                                  lr=cfg["lr"])
    generator = torch.Generator().manual_seed(settings.seed)
    history = fit(
        model, lambda m, b: F.cross_entropy(m(b[0]), b[1], label_smoothing=cfg["label_smoothing"]),
        shifted_batches(*train_set, batch_size=cfg["batch_size"], max_shift=cfg["max_shift"], generator=generator),
        steps=steps, optimizer=optimizer, schedule="cosine", warmup_steps=min(100, steps // 10),
        eval_fn=lambda m: grid_metrics(m, test), eval_every=max(1, steps // 6), device=settings.device,
        progress=False,
    )
    trajectory = [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()
                   if k in ("step", "test_accuracy", "pos_contrast", "rollout_ink_ratio")} for r in history.evals]
    return Trained(model.cpu(), config, notes={"training": {**cfg, "steps": steps}, "trajectory": trajectory})


def evaluate(model: ViT, config: dict, device: torch.device) -> dict[str, float]:
    return grid_metrics(model.to(device), split()[1])


RECIPE = Recipe(
    name="vit-mnist",
    summary="ViT (patch 4: a 7x7 grid, D=64, depth 4) on MNIST-5k; chapter 6, section 3 reads its "
            "learned positions and its attention maps",
    data="MNIST-5k (attnbook.data.load_mnist5k, seed 0): the first 4,000 digits train, the last 1,000 test",
    make=make,
    train=train,
    evaluate=evaluate,
    tolerance={"test_accuracy": 0.002, "pos_contrast": 0.002, "rollout_ink_ratio": 0.005},
)
