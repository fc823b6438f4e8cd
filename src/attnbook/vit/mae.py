"""Masked autoencoders: hide most patches, encode the rest, reconstruct the hidden pixels.

``random_masking`` -> ``mae_loss`` -> ``MAE``. What MAE adds over a plain
:class:`~attnbook.vit.model.ViT`: before the encoder, a random ``mask_ratio``
share of the patch tokens (75 % in the paper) is *dropped*, so the encoder only
ever sees the visible ones (and costs a quarter as much); a light decoder gets
the encoded tokens back in image order, a shared learned ``mask_token`` in each
hidden place, and predicts every patch's pixels; the loss counts the hidden
patches only. After pre-training, ``MAE.encoder`` is an ordinary ViT (without
a head) whose features can be probed or fine-tuned.

Shape legend: ``B`` batch, ``N`` patches, ``N_keep`` visible patches, ``D``
encoder width, ``Dd`` decoder width, ``P`` patch size, ``C`` channels.

Reference: He et al., *Masked Autoencoders Are Scalable Vision Learners*
(2021), https://arxiv.org/abs/2111.06377, section 3.
"""

from __future__ import annotations

import torch
from torch import nn

from attnbook._checks import float_tensor, number_in, positive_int
from attnbook.transformer import EncoderBlock
from attnbook.vit.model import ViT, ViTConfig
from attnbook.vit.patches import patchify

__all__ = ["random_masking", "mae_loss", "MAE"]


def random_masking(
    x: torch.Tensor, mask_ratio: float, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Keep a random ``1 - mask_ratio`` share of each row's tokens.

    Returns ``(x_kept, mask, ids_restore)``: ``x_kept`` (B, N_keep, D) with
    ``N_keep = int(N * (1 - mask_ratio))``, the kept tokens in a random order;
    ``mask`` (B, N), 1 where a token was removed and 0 where kept, in image
    order; ``ids_restore`` (B, N), the permutation that puts the shuffled
    tokens back: ``gather(cat([x_kept, removed]), 1, ids_restore)`` is ``x``.
    Each row draws its own uniform noise and keeps the tokens with the lowest.

    >>> x = torch.arange(8.0).view(1, 8, 1)                 # (B=1, N=8, D=1)
    >>> kept, mask, ids_restore = random_masking(x, 0.75, torch.Generator().manual_seed(0))
    >>> kept.shape, int(mask.sum())                          # 2 kept, 6 removed
    (torch.Size([1, 2, 1]), 6)
    >>> torch.equal(x[0, mask[0] == 0].sort(0).values, kept[0].sort(0).values)
    True
    """
    float_tensor("x", x, (None, None, None), "(B, N, D)")
    number_in("mask_ratio", mask_ratio, 0.0, 1.0)
    B, N, D = x.shape
    n_keep = int(N * (1 - mask_ratio))
    if n_keep < 1:
        raise ValueError(f"mask_ratio={mask_ratio} keeps no token of N={N}")
    noise = torch.rand(B, N, generator=generator, device=x.device)  # (B, N) uniform in [0, 1)
    ids_shuffle = noise.argsort(dim=1)  # (B, N): ascending noise, the first n_keep are kept
    ids_restore = ids_shuffle.argsort(dim=1)  # (B, N): the inverse permutation
    ids_keep = ids_shuffle[:, :n_keep]  # (B, N_keep)
    x_kept = x.gather(1, ids_keep.unsqueeze(-1).expand(-1, -1, D))  # (B, N_keep, D)
    mask = torch.ones(B, N, dtype=x.dtype, device=x.device)
    mask[:, :n_keep] = 0  # in shuffled order: kept first
    mask = mask.gather(1, ids_restore)  # (B, N) back in image order
    return x_kept, mask, ids_restore


def mae_loss(
    pred: torch.Tensor, target: torch.Tensor, mask: torch.Tensor, *, norm_pix_loss: bool = False
) -> torch.Tensor:
    """Mean squared error over the removed patches only (``mask == 1``).

    ``pred`` and ``target`` are (B, N, P*P*C) patches (``target =
    patchify(images, P)``); ``norm_pix_loss`` normalises each target patch to
    mean 0 and variance 1 first (the paper's better-representations variant).

    >>> target = torch.zeros(1, 2, 4)
    >>> pred = torch.tensor([[[1.0] * 4, [3.0] * 4]])
    >>> mae_loss(pred, target, torch.tensor([[0.0, 1.0]]))   # only patch 1 counts: 3^2
    tensor(9.)
    """
    float_tensor("pred", pred, (None, None, None), "(B, N, P*P*C)")
    if target.shape != pred.shape or mask.shape != pred.shape[:2]:
        raise ValueError(
            f"target must have pred's shape {tuple(pred.shape)} and mask shape {tuple(pred.shape[:2])}, "
            f"got {tuple(target.shape)} and {tuple(mask.shape)}"
        )
    if norm_pix_loss:
        mean, var = target.mean(dim=-1, keepdim=True), target.var(dim=-1, keepdim=True)
        target = (target - mean) / (var + 1e-6).sqrt()
    per_patch = ((pred - target) ** 2).mean(dim=-1)  # (B, N)
    return (per_patch * mask).sum() / mask.sum()


class MAE(nn.Module):
    """A ViT encoder on the visible patches and a light decoder that predicts all the pixels.

    ``forward(images)`` returns ``(loss, pred, mask)``: the :func:`mae_loss`,
    the predicted patches (B, N, P*P*C) and the (B, N) mask (1 = hidden).

    >>> mae = MAE(ViTConfig.preset("cpu-digits", depth=2), decoder_embed_dim=32)
    >>> loss, pred, mask = mae(torch.rand(5, 1, 8, 8), generator=torch.Generator().manual_seed(0))
    >>> pred.shape, mask.sum(dim=1).tolist()              # 3 of the 4 patches hidden in each image
    (torch.Size([5, 4, 16]), [3.0, 3.0, 3.0, 3.0, 3.0])
    """

    def __init__(
        self,
        config: ViTConfig,
        *,
        decoder_embed_dim: int = 32,  # Dd: the decoder is narrower than the encoder
        decoder_depth: int = 1,  # the paper: 8 blocks of 512 for ViT-L; 1 block still works
        decoder_num_heads: int = 4,
        mask_ratio: float = 0.75,  # share of the patches hidden from the encoder
        norm_pix_loss: bool = False,  # reconstruct per-patch-normalised pixels
    ) -> None:
        super().__init__()
        if not isinstance(config, ViTConfig):
            raise TypeError(f"config must be a ViTConfig, got {type(config).__name__}")
        if config.reg_tokens:
            raise ValueError(f"MAE's encoder takes no registers, got reg_tokens={config.reg_tokens}")
        Dd = positive_int("decoder_embed_dim", decoder_embed_dim)
        positive_int("decoder_depth", decoder_depth)
        self.config, self.mask_ratio, self.norm_pix_loss = config, mask_ratio, norm_pix_loss
        self.encoder = ViT(config.replace(num_classes=0))
        self.decoder_embed = nn.Linear(config.embed_dim, Dd)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, Dd))
        self.decoder_pos_embed = nn.Parameter(torch.zeros(1, 1 + config.num_patches, Dd))
        self.decoder_blocks = nn.ModuleList(
            EncoderBlock(Dd, decoder_num_heads, int(Dd * config.mlp_ratio), norm_first=True, activation="gelu")
            for _ in range(decoder_depth)
        )
        self.decoder_norm = nn.LayerNorm(Dd, eps=config.layer_norm_eps)
        self.decoder_pred = nn.Linear(Dd, config.patch_size**2 * config.in_chans)
        with torch.no_grad():
            for p in (self.mask_token, self.decoder_pos_embed):
                nn.init.normal_(p, std=0.02)

    def forward_encoder(
        self, images: torch.Tensor, mask_ratio: float, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Encode a random visible subset: ``(latent (B, 1 + N_keep, D), mask, ids_restore)``."""
        enc = self.encoder
        x = enc.patch_embed(images) + enc.pos_embed[:, 1:]  # (B, N, D): positions before shuffling
        x, mask, ids_restore = random_masking(x, mask_ratio, generator)  # (B, N_keep, D)
        cls = (enc.cls_token + enc.pos_embed[:, :1]).expand(x.shape[0], -1, -1)  # (B, 1, D)
        x = torch.cat([cls, x], dim=1)  # (B, 1 + N_keep, D)
        for block in enc.blocks:
            x = block(x)
        return enc.norm(x), mask, ids_restore

    def forward_decoder(self, latent: torch.Tensor, ids_restore: torch.Tensor) -> torch.Tensor:
        """Predict every patch: (B, 1 + N_keep, D) -> (B, N, P*P*C)."""
        x = self.decoder_embed(latent)  # (B, 1 + N_keep, Dd)
        B, N = ids_restore.shape
        fill = self.mask_token.expand(B, N + 1 - x.shape[1], -1)  # (B, N - N_keep, Dd)
        patches = torch.cat([x[:, 1:], fill], dim=1)  # (B, N, Dd) in shuffled order
        patches = patches.gather(1, ids_restore.unsqueeze(-1).expand(-1, -1, x.shape[-1]))  # image order
        x = torch.cat([x[:, :1], patches], dim=1) + self.decoder_pos_embed  # (B, 1 + N, Dd)
        for block in self.decoder_blocks:
            x = block(x)
        return self.decoder_pred(self.decoder_norm(x))[:, 1:]  # (B, N, P*P*C), class token dropped

    def forward(
        self, images: torch.Tensor, mask_ratio: float | None = None, generator: torch.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ratio = self.mask_ratio if mask_ratio is None else mask_ratio
        latent, mask, ids_restore = self.forward_encoder(images, ratio, generator)
        pred = self.forward_decoder(latent, ids_restore)
        target = patchify(images, self.config.patch_size)  # (B, N, P*P*C)
        return mae_loss(pred, target, mask, norm_pix_loss=self.norm_pix_loss), pred, mask
