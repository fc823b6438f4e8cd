"""The Vision Transformer and what grew from it (chapter 6).

One concept per module, small to large: :mod:`~attnbook.vit.patches`
(``patchify``, ``unpatchify``, ``PatchEmbedding``, ``vit_tokens``), :mod:`~attnbook.vit.model`
(``ViTConfig``, ``ViT``, ``class_token_shift``), :mod:`~attnbook.vit.maps` (``attention_maps``,
``attention_rollout``, ``class_token_share``), :mod:`~attnbook.vit.mae` (``random_masking``,
``mae_loss``, ``MAE``), :mod:`~attnbook.vit.boxes` (box formats, IoU and
generalised IoU) and :mod:`~attnbook.vit.matching` (``matching_cost``,
``hungarian_match``). Names follow timm (``patch_size``, ``embed_dim``,
``num_heads``, ``mlp_ratio``, ``forward_features``/``forward_head``).
"""

from attnbook.vit.boxes import box_area, box_cxcywh_to_xyxy, box_iou, box_xyxy_to_cxcywh, generalized_box_iou
from attnbook.vit.mae import MAE, mae_loss, random_masking
from attnbook.vit.maps import attention_maps, attention_rollout, class_token_share
from attnbook.vit.matching import hungarian_match, matching_cost
from attnbook.vit.model import VIT_PRESETS, ViT, ViTConfig, class_token_shift
from attnbook.vit.patches import PatchEmbedding, patchify, unpatchify, vit_tokens

__all__ = [
    "patchify",
    "unpatchify",
    "PatchEmbedding",
    "ViTConfig",
    "VIT_PRESETS",
    "ViT",
    "class_token_shift",
    "vit_tokens",
    "attention_maps",
    "attention_rollout",
    "class_token_share",
    "random_masking",
    "mae_loss",
    "MAE",
    "box_cxcywh_to_xyxy",
    "box_xyxy_to_cxcywh",
    "box_area",
    "box_iou",
    "generalized_box_iou",
    "matching_cost",
    "hungarian_match",
]
