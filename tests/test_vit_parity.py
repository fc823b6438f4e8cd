"""ViT against timm's VisionTransformer: same weights, same logits (float64, 1e-6).

timm is an oracle only: its model is built from a config with random weights
(never downloaded), and every weight is copied into :class:`attnbook.vit.ViT`.
"""

from __future__ import annotations

import pytest
import torch
from oracles import import_timm
from torch import nn

from attnbook.vit import PatchEmbedding, ViT, ViTConfig

timm = import_timm()


@torch.no_grad()
def copy_from_timm(ours: ViT, theirs: nn.Module) -> None:
    """Copy a timm VisionTransformer's weights into ``ours`` (timm stacks W^Q, W^K, W^V in ``qkv``)."""
    ours.cls_token.copy_(theirs.cls_token)
    if theirs.reg_token is not None:
        ours.reg_token.copy_(theirs.reg_token)
    ours.pos_embed.copy_(theirs.pos_embed)
    ours.patch_embed.from_conv(theirs.patch_embed.proj)
    for mine, blk in zip(ours.blocks, theirs.blocks, strict=True):
        for a, b in ((mine.norm1, blk.norm1), (mine.norm2, blk.norm2), (mine.ffn.fc1, blk.mlp.fc1),
                     (mine.ffn.fc2, blk.mlp.fc2), (mine.self_attn.out_proj, blk.attn.proj)):
            a.load_state_dict(b.state_dict())
        attn = mine.self_attn
        for proj, w in zip((attn.q_proj, attn.k_proj, attn.v_proj), blk.attn.qkv.weight.chunk(3), strict=True):
            proj.weight.copy_(w)
        if blk.attn.qkv.bias is not None:
            for proj, b in zip((attn.q_proj, attn.k_proj, attn.v_proj), blk.attn.qkv.bias.chunk(3), strict=True):
                proj.bias.copy_(b)
    ours.norm.load_state_dict(theirs.norm.state_dict())
    if isinstance(ours.head, nn.Linear):
        ours.head.load_state_dict(theirs.head.state_dict())


CONFIGS = [
    dict(img_size=8, patch_size=4, in_chans=1, num_classes=10, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0),
    dict(img_size=12, patch_size=3, in_chans=3, num_classes=5, embed_dim=24, depth=3, num_heads=3, mlp_ratio=4.0,
         qkv_bias=False),
    dict(img_size=28, patch_size=7, in_chans=1, num_classes=0, embed_dim=32, depth=1, num_heads=4, mlp_ratio=1.5),
    dict(img_size=28, patch_size=7, in_chans=1, num_classes=10, embed_dim=16, depth=2, num_heads=2, reg_tokens=4),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=["digits", "rgb-no-qkv-bias", "mnist-no-head", "mnist-registers"])
def test_logits_match_timm(cfg: dict) -> None:
    torch.manual_seed(0)
    theirs = timm.models.vision_transformer.VisionTransformer(**cfg).double().eval()
    with torch.no_grad():  # timm starts biases and LayerNorm at 0/1: perturb so that every copy matters
        for p in theirs.parameters():
            p.add_(0.1 * torch.randn_like(p))
    ours = ViT(ViTConfig(**cfg)).double().eval()
    assert ours.num_params() == sum(p.numel() for p in theirs.parameters())
    copy_from_timm(ours, theirs)
    x = torch.randn(3, cfg["in_chans"], cfg["img_size"], cfg["img_size"], dtype=torch.float64)
    torch.testing.assert_close(ours.forward_features(x), theirs.forward_features(x), atol=1e-6, rtol=0)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=0)


def test_vit_base_parameter_count_matches_timm() -> None:
    # Counted on the meta device: ViT-B/16 is 86,567,656 parameters without allocating them.
    with torch.device("meta"):
        theirs = timm.models.vision_transformer.VisionTransformer()  # timm's defaults are ViT-B/16
        ours = ViT(ViTConfig.preset("vit-base"))
    assert ours.num_params() == sum(p.numel() for p in theirs.parameters()) == 86_567_656


def test_patch_embedding_equals_timm_patch_embed() -> None:
    torch.manual_seed(1)
    theirs = timm.layers.PatchEmbed(img_size=12, patch_size=4, in_chans=3, embed_dim=10).double()
    ours = PatchEmbedding(12, 4, 3, 10).double().from_conv(theirs.proj)
    x = torch.randn(2, 3, 12, 12, dtype=torch.float64)
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=0)
