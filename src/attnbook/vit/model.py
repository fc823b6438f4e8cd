"""The Vision Transformer: patch tokens, a ``[class]`` token, learned positions, a pre-norm encoder.

``ViTConfig`` -> ``ViT``. What it adds over :class:`attnbook.transformer.Transformer`'s
encoder: the tokens are image patches (:class:`~attnbook.vit.patches.PatchEmbedding`),
a learnable ``[class]`` token is *prepended*, learnable 1-D positions are added to
all ``1 + N`` tokens, and after the final LayerNorm an MLP head (one ``Linear``)
reads the class token alone. Optional *registers* (``reg_tokens``, timm's name) are
extra learned tokens after the class token that no output reads. The blocks are
:class:`attnbook.transformer.EncoderBlock` with ``norm_first=True``
(``x = x + MSA(LN(x))``, ``x = x + MLP(LN(x))``) and GELU, timm's layout, built with
timm's LayerNorm epsilon (1e-6) and ``qkv_bias`` passed to the block's constructor. Names follow timm (``patch_embed``,
``cls_token``, ``reg_token``, ``pos_embed``, ``blocks``, ``norm``, ``head``), and
tests copy timm's ``VisionTransformer`` weights in and compare logits.

Shape legend: ``B`` batch, ``N`` patches, ``R`` registers, ``D = embed_dim``, ``nh`` heads.

References: Dosovitskiy et al., *An Image is Worth 16x16 Words* (2020),
https://arxiv.org/abs/2010.11929, equations 1-4 and table 1; Darcet et al.,
*Vision Transformers Need Registers* (2024), https://arxiv.org/abs/2309.16588;
timm's ``vision_transformer.py``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from attnbook._checks import dropout_rate, int_at_least, positive_int
from attnbook._config import PresetConfig
from attnbook.transformer import EncoderBlock
from attnbook.vit.patches import PatchEmbedding, patchify, unpatchify

__all__ = ["ViTConfig", "VIT_PRESETS", "ViT", "class_token_shift"]


VIT_PRESETS: dict[str, dict[str, object]] = {
    # Table 1 of the paper, at 224 x 224 with 1,000 classes: ViT-B/16 has 86.6M parameters.
    "vit-base": dict(img_size=224, patch_size=16, embed_dim=768, depth=12, num_heads=12),
    "vit-large": dict(img_size=224, patch_size=16, embed_dim=1024, depth=24, num_heads=16),
    "vit-huge": dict(img_size=224, patch_size=14, embed_dim=1280, depth=32, num_heads=16),
    # Small enough to train on a laptop CPU in about a minute (about 137k parameters).
    "cpu-digits": dict(img_size=8, patch_size=4, in_chans=1, num_classes=10, embed_dim=64, depth=4,
                       num_heads=4, mlp_ratio=2.0),
    "cpu-mnist": dict(img_size=28, patch_size=7, in_chans=1, num_classes=10, embed_dim=64, depth=4,
                      num_heads=4, mlp_ratio=2.0),
}


@dataclass
class ViTConfig(PresetConfig):
    """Sizes of a :class:`ViT`; ``ViTConfig.preset(name, **overrides)`` gives named sizes.

    >>> cfg = ViTConfig.preset("cpu-digits")
    >>> cfg.img_size, cfg.patch_size, cfg.num_patches, cfg.embed_dim
    (8, 4, 4, 64)
    """

    presets = VIT_PRESETS  # the named sizes that preset(name) reads

    img_size: int = 224  # square images img_size x img_size
    patch_size: int = 16  # P: each token is one P x P patch; img_size must be divisible by it
    in_chans: int = 3  # C: image channels (1 for grey digits)
    num_classes: int = 1000  # outputs of the head; 0 means no head (forward returns the class token)
    embed_dim: int = 768  # D: width of every token vector
    depth: int = 12  # encoder blocks
    num_heads: int = 12  # attention heads per block; embed_dim must be divisible by it
    mlp_ratio: float = 4.0  # hidden width of the MLP = mlp_ratio * embed_dim
    qkv_bias: bool = True  # biases in the query/key/value projections (timm: True)
    drop_rate: float = 0.0  # dropout after the positions, on attention weights and sublayer outputs
    layer_norm_eps: float = 1e-6  # timm's LayerNorm epsilon
    reg_tokens: int = 0  # R: learned register tokens after the class token, read by no output

    def __post_init__(self) -> None:
        for name in ("img_size", "patch_size", "in_chans", "embed_dim", "depth", "num_heads"):
            positive_int(name, getattr(self, name))
        int_at_least("num_classes", self.num_classes, 0)
        int_at_least("reg_tokens", self.reg_tokens, 0)
        if self.img_size % self.patch_size:
            raise ValueError(
                f"img_size={self.img_size} must be divisible by patch_size={self.patch_size} "
                f"so that the patches tile the image"
            )
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim={self.embed_dim} must be divisible by num_heads={self.num_heads}")
        if self.mlp_ratio <= 0:
            raise ValueError(f"mlp_ratio must be positive, got {self.mlp_ratio!r}")
        dropout_rate(self.drop_rate)

    @property
    def num_patches(self) -> int:
        """N = HW / P^2."""
        return (self.img_size // self.patch_size) ** 2

    @property
    def num_prefix_tokens(self) -> int:
        """Tokens before the patches: the class token and the registers, 1 + R."""
        return 1 + self.reg_tokens

    @property
    def mlp_hidden(self) -> int:
        return int(self.embed_dim * self.mlp_ratio)

class ViT(nn.Module):
    """A Vision Transformer classifier, split as timm splits it.

    ``forward_features(images)`` -> (B, 1 + N, D) tokens after the final
    LayerNorm (index 0 is the class token; with ``reg_tokens = R``, (B, 1 + R + N, D),
    the registers at ``1..R``); ``forward_head(features)`` -> (B, num_classes)
    logits from the class token; ``forward = head(features)``.
    ``need_weights=True`` keeps each block's attention weights (B, nh, T, T), T = 1 + R + N,
    in ``block.attn_weights`` (see :func:`attnbook.vit.attention_maps`).

    >>> model = ViT(ViTConfig.preset("cpu-digits", depth=2))
    >>> x = torch.randn(3, 1, 8, 8)
    >>> model.forward_features(x).shape, model(x).shape     # 1 class token + 4 patches
    (torch.Size([3, 5, 64]), torch.Size([3, 10]))
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        if not isinstance(config, ViTConfig):
            raise TypeError(f"config must be a ViTConfig, got {type(config).__name__}")
        self.config = cfg = config
        self.patch_embed = PatchEmbedding(cfg.img_size, cfg.patch_size, cfg.in_chans, cfg.embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.embed_dim))  # x_class
        self.reg_token = nn.Parameter(torch.zeros(1, cfg.reg_tokens, cfg.embed_dim)) if cfg.reg_tokens else None
        # E_pos: one position per token, registers included (timm's default layout)
        self.pos_embed = nn.Parameter(torch.zeros(1, cfg.num_prefix_tokens + cfg.num_patches, cfg.embed_dim))
        self.pos_drop = nn.Dropout(cfg.drop_rate)
        self.blocks = nn.ModuleList(
            EncoderBlock(cfg.embed_dim, cfg.num_heads, cfg.mlp_hidden, dropout=cfg.drop_rate,
                         norm_first=True, activation="gelu", layer_norm_eps=cfg.layer_norm_eps,
                         qkv_bias=cfg.qkv_bias)
            for _ in range(cfg.depth)
        )
        self.norm = nn.LayerNorm(cfg.embed_dim, eps=cfg.layer_norm_eps)
        self.head = nn.Linear(cfg.embed_dim, cfg.num_classes) if cfg.num_classes else nn.Identity()
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """timm's initialisation: truncated normal (std 0.02) positions and Linear weights, zero biases.

        One difference: timm's patch embedding is a ``Conv2d``, which it leaves at PyTorch's default
        initialisation; ours is a Linear and gets the truncated normal too.
        """
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        nn.init.normal_(self.cls_token, std=1e-6)
        if self.reg_token is not None:
            nn.init.normal_(self.reg_token, std=1e-6)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """Patch tokens, the class token (and any registers) prepended, positions added: (B, 1 + R + N, D)."""
        x = self.patch_embed(images)  # (B, N, D)
        prefix: list[torch.Tensor] = [self.cls_token, *([self.reg_token] if self.reg_token is not None else [])]
        prefix = [t.expand(x.shape[0], -1, -1) for t in prefix]  # (B, 1, D) and (B, R, D)
        x = torch.cat([*prefix, x], dim=1)  # (B, 1 + R + N, D): the class token comes first
        return self.pos_drop(x + self.pos_embed)  # every token, the class token too, gets a position

    def forward_features(self, images: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        x = self.embed(images)  # (B, 1 + R + N, D)
        for block in self.blocks:
            x = block(x, need_weights=need_weights)
        return self.norm(x)  # (B, 1 + R + N, D)

    def forward_head(self, features: torch.Tensor) -> torch.Tensor:
        return self.head(features[:, 0])  # (B, D) class token -> (B, num_classes)

    def forward(self, images: torch.Tensor, *, need_weights: bool = False) -> torch.Tensor:
        return self.forward_head(self.forward_features(images, need_weights=need_weights))


@torch.no_grad()
def class_token_shift(model: ViT, images: torch.Tensor, order: torch.Tensor, *, positions: bool = True) -> torch.Tensor:
    """How far the class token moves when the images' patches are shuffled: (depth,), one value per block.

    The patches of ``images`` (B, C, H, W) are put in the ``order`` given (a
    permutation of the N patches, the same for every image) and both the images
    and the shuffled images go through ``model``; value ``l`` is the class token's
    change after block ``l + 1``, ``|c' - c| / |c|``, averaged over the images.
    ``positions=False`` measures a copy of ``model`` with its position
    embeddings zeroed (the same weights otherwise). Without positions a ViT is
    equivariant to a permutation of its patch tokens, and its class token, which
    reads them all by attention, is invariant: the shift is zero up to float
    rounding. With positions a patch moved is another token, and the class token
    moves too.

    >>> torch.manual_seed(0)
    <torch._C.Generator object at ...>
    >>> model = ViT(ViTConfig.preset("cpu-digits", depth=2)).eval()
    >>> images, order = torch.rand(4, 1, 8, 8), torch.tensor([3, 2, 1, 0])   # the 4 patches reversed
    >>> bool((class_token_shift(model, images, order) > 1e-4).all())
    True
    >>> bool((class_token_shift(model, images, order, positions=False) < 1e-5).all())
    True
    """
    if not isinstance(model, ViT):
        raise TypeError(f"model must be a ViT, got {type(model).__name__}")
    cfg = model.config
    N = cfg.num_patches
    order = torch.as_tensor(order)
    if order.shape != (N,) or not torch.equal(order.sort().values, torch.arange(N)):
        raise ValueError(f"order must be a permutation of the {N} patches, got {tuple(order.tolist())}")
    if not positions:
        model = copy.deepcopy(model)
        model.pos_embed.zero_()
    P, (H, W) = cfg.patch_size, images.shape[-2:]
    shuffled = unpatchify(patchify(images, P)[:, order], P, (H, W), in_chans=images.shape[1])

    def class_tokens(x: torch.Tensor) -> list[torch.Tensor]:
        h, states = model.embed(x), []
        for block in model.blocks:
            h = block(h)
            states.append(h[:, 0])  # (B, D): the class token after this block
        return states

    return torch.stack([((b - a).norm(dim=-1) / a.norm(dim=-1)).mean()
                        for a, b in zip(class_tokens(images), class_tokens(shuffled), strict=True)])
