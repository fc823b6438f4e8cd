"""A tiny DETR: a CNN backbone, a transformer encoder-decoder with object queries, a set loss.

DETR (Carion et al. 2020, https://arxiv.org/abs/2005.12872) predicts a fixed
*set* of ``num_queries`` (class, box) pairs per image, one per learned object
query, and trains it with a loss that first pairs predictions with the
ground-truth objects by the Hungarian algorithm
(:func:`attnbook.vit.hungarian_match` on :func:`attnbook.vit.matching_cost`);
the unmatched queries must predict the extra class "no object". No anchors,
no non-maximum suppression.

What it simplifies against the paper, to fit a CPU: the backbone is
:class:`attnbook.vit.cnn.SmallCNN`'s feature map pooled to ``img_size / 4``
(not a ResNet-50), positions are learned (not 2-D sines), the queries are the
decoder's input (the paper adds them at every layer to a zero input), there
are no auxiliary losses per decoder layer, and blocks are pre-norm
(:class:`attnbook.transformer.EncoderBlock`/``DecoderBlock``, the decoder
without a causal mask).

Shape legend: ``B`` batch, ``Q`` queries, ``M`` ground-truth objects of one
image, ``K`` classes (``K + 1`` with "no object"), ``D = d_model``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attnbook.data.shapes import SquareScenes
from attnbook.train import History, fit
from attnbook.transformer import DecoderBlock, EncoderBlock
from attnbook.vit import box_cxcywh_to_xyxy, box_iou, generalized_box_iou, hungarian_match, matching_cost

from .cnn import SmallCNN

__all__ = ["DETRConfig", "TinyDETR", "match", "set_loss", "matched_box_iou", "train_detr"]


@dataclass
class DETRConfig:
    """Sizes of a :class:`TinyDETR` and the weights of its matching cost and loss."""

    img_size: int = 32  # square RGB images, divisible by 4
    num_classes: int = 3  # object classes; index num_classes means "no object"
    num_queries: int = 6  # predictions per image: more than the most objects in an image
    d_model: int = 64  # width of the transformer
    num_heads: int = 4
    enc_layers: int = 1
    dec_layers: int = 2
    d_ff: int = 128  # hidden width of each block's MLP
    backbone_widths: tuple[int, int] = (32, 64)  # SmallCNN's two stages
    eos_coef: float = 0.1  # weight of the "no object" class in the cross-entropy (the paper's 0.1)
    w_class: float = 1.0  # matching and loss weights, the paper's 1, 5, 2
    w_l1: float = 5.0
    w_giou: float = 2.0


class TinyDETR(nn.Module):
    """Images (B, 3, S, S) -> ``{"pred_logits": (B, Q, K+1), "pred_boxes": (B, Q, 4)}``.

    Boxes are (cx, cy, w, h) in fractions of the image, squashed by a sigmoid.

    >>> model = TinyDETR(DETRConfig())
    >>> out = model(torch.rand(2, 3, 32, 32))
    >>> out["pred_logits"].shape, out["pred_boxes"].shape
    (torch.Size([2, 6, 4]), torch.Size([2, 6, 4]))
    """

    def __init__(self, config: DETRConfig) -> None:
        super().__init__()
        if config.img_size % 4:
            raise ValueError(f"config.img_size must be divisible by 4, got {config.img_size}")
        self.config = c = config
        self.backbone = SmallCNN(in_chans=3, num_classes=1, widths=c.backbone_widths)
        del self.backbone.head  # only the feature map is used
        self.pool = nn.MaxPool2d(2)
        self.input_proj = nn.Conv2d(c.backbone_widths[1], c.d_model, 1)
        n_tokens = (c.img_size // 4) ** 2
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, n_tokens, c.d_model))
        self.query_embed = nn.Parameter(0.02 * torch.randn(c.num_queries, c.d_model))
        self.encoder = nn.ModuleList(EncoderBlock(c.d_model, c.num_heads, c.d_ff, norm_first=True, activation="gelu")
                                     for _ in range(c.enc_layers))
        self.decoder = nn.ModuleList(DecoderBlock(c.d_model, c.num_heads, c.d_ff, norm_first=True, activation="gelu")
                                     for _ in range(c.dec_layers))
        self.enc_norm, self.dec_norm = nn.LayerNorm(c.d_model), nn.LayerNorm(c.d_model)
        self.class_head = nn.Linear(c.d_model, c.num_classes + 1)
        self.box_head = nn.Sequential(nn.Linear(c.d_model, c.d_model), nn.ReLU(), nn.Linear(c.d_model, 4))

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        S = self.config.img_size
        if images.dim() != 4 or tuple(images.shape[1:]) != (3, S, S):
            raise ValueError(f"images must have shape (B, 3, {S}, {S}), got {tuple(images.shape)}")
        feats = self.input_proj(self.pool(self.backbone.forward_features(images)))  # (B, D, S/4, S/4)
        memory = feats.flatten(2).transpose(1, 2) + self.pos_embed  # (B, S²/16, D)
        for block in self.encoder:
            memory = block(memory)
        memory = self.enc_norm(memory)
        x = self.query_embed.expand(images.shape[0], -1, -1)  # (B, Q, D)
        for block in self.decoder:
            x = block(x, memory, causal=False)  # queries see each other and the image
        x = self.dec_norm(x)
        return {"pred_logits": self.class_head(x), "pred_boxes": self.box_head(x).sigmoid()}


@torch.no_grad()
def match(outputs: dict[str, torch.Tensor], labels: list[torch.Tensor], boxes: list[torch.Tensor],
          config: DETRConfig) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Per image, the Hungarian pairs ``(query indices, object indices)`` of least matching cost."""
    pairs = []
    for logits, pred, tgt_labels, tgt_boxes in zip(outputs["pred_logits"], outputs["pred_boxes"], labels, boxes,
                                                   strict=True):
        cost = matching_cost(logits, pred, tgt_labels, tgt_boxes,
                             w_class=config.w_class, w_l1=config.w_l1, w_giou=config.w_giou)  # (Q, M)
        rows, cols = hungarian_match(cost)
        pairs.append((torch.as_tensor(rows, dtype=torch.long), torch.as_tensor(cols, dtype=torch.long)))
    return pairs


def set_loss(outputs: dict[str, torch.Tensor], labels: list[torch.Tensor], boxes: list[torch.Tensor],
             config: DETRConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """DETR's loss: match, then cross-entropy on every query plus L1 and GIoU on matched boxes.

    Unmatched queries are trained towards "no object" (weight ``eos_coef``);
    the box terms are averaged over the ground-truth objects of the batch.
    Returns the total and its three parts as floats.
    """
    logits, pred_boxes = outputs["pred_logits"], outputs["pred_boxes"]  # (B, Q, K+1), (B, Q, 4)
    B, Q, K1 = logits.shape
    pairs = match(outputs, labels, boxes, config)
    target_classes = torch.full((B, Q), K1 - 1, dtype=torch.long, device=logits.device)  # all "no object"
    for b, (rows, cols) in enumerate(pairs):
        target_classes[b, rows] = labels[b][cols].to(logits.device)
    class_weight = torch.ones(K1, device=logits.device)
    class_weight[-1] = config.eos_coef
    loss_ce = F.cross_entropy(logits.reshape(B * Q, K1), target_classes.reshape(B * Q), weight=class_weight)
    matched = torch.cat([pred_boxes[b, rows] for b, (rows, _) in enumerate(pairs)])  # (sum M, 4)
    targets = torch.cat([boxes[b][cols] for b, (_, cols) in enumerate(pairs)]).to(matched)  # (sum M, 4)
    n_boxes = max(1, len(targets))
    loss_l1 = (matched - targets).abs().sum() / n_boxes
    giou = generalized_box_iou(box_cxcywh_to_xyxy(matched), box_cxcywh_to_xyxy(targets)).diagonal()
    loss_giou = (1 - giou).sum() / n_boxes
    total = config.w_class * loss_ce + config.w_l1 * loss_l1 + config.w_giou * loss_giou
    return total, {"class": loss_ce.item(), "l1": loss_l1.item(), "giou": loss_giou.item()}


@torch.no_grad()
def matched_box_iou(outputs: dict[str, torch.Tensor], labels: list[torch.Tensor], boxes: list[torch.Tensor],
                    config: DETRConfig) -> dict[str, float]:
    """How good the matched set is: ``matched_iou``, ``class_accuracy`` and ``empty_accuracy``.

    ``matched_iou`` is the mean IoU of each ground-truth box with the prediction
    matched to it, ``class_accuracy`` the share of those predictions with the
    right class, ``empty_accuracy`` the share of unmatched queries that say
    "no object" (without it, extra queries would be false detections).
    """
    ious, right, empty = [], [], []
    for b, (rows, cols) in enumerate(match(outputs, labels, boxes, config)):
        pred = box_cxcywh_to_xyxy(outputs["pred_boxes"][b, rows])
        tgt = box_cxcywh_to_xyxy(boxes[b][cols].to(pred))
        ious.append(box_iou(pred, tgt).diagonal())
        classes = outputs["pred_logits"][b].argmax(-1).cpu()  # (Q,)
        right.append(classes[rows] == labels[b][cols])
        unmatched = torch.ones_like(classes, dtype=torch.bool)
        unmatched[rows] = False
        empty.append(classes[unmatched] == config.num_classes)
    return {"matched_iou": torch.cat(ious).mean().item(),
            "class_accuracy": torch.cat(right).float().mean().item(),
            "empty_accuracy": torch.cat(empty).float().mean().item()}


def train_detr(model: TinyDETR, scenes: SquareScenes, *, steps: int, batch_size: int = 32, lr: float = 1e-3,
               weight_decay: float = 1e-4, generator: torch.Generator | None = None,
               device: torch.device | str | None = "cpu") -> History:
    """DETR's recipe on ``scenes``: batches of random scenes, :func:`set_loss`, AdamW, cosine after a warmup.

    The warmup is a tenth of the steps, at most 100; ``weight_decay`` applies
    to the weight matrices (:func:`attnbook.train.decay_groups`), as in the
    paper's AdamW with 1e-4. The chapter's page, ``bench_vit.py detr`` and the
    ``detr-squares`` checkpoint all train this way.

    >>> from attnbook.data import make_square_scenes
    >>> _ = torch.manual_seed(0)
    >>> model = TinyDETR(DETRConfig())
    >>> train_detr(model, make_square_scenes(8), steps=2, batch_size=4).steps
    [1, 2]
    """
    config = model.config

    def next_batch() -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        idx = torch.randint(0, len(scenes.images), (batch_size,), generator=generator).tolist()
        return scenes.images[idx], [scenes.labels[i] for i in idx], [scenes.boxes[i] for i in idx]

    return fit(model, lambda m, b: set_loss(m(b[0]), b[1], b[2], config)[0], next_batch, steps=steps, lr=lr,
               weight_decay=weight_decay, schedule="cosine", warmup_steps=min(100, steps // 10), device=device,
               progress=False)
