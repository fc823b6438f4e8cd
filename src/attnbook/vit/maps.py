"""What a ViT looks at: per-layer attention maps and attention rollout.

``attention_maps`` -> ``attention_rollout`` -> ``class_token_share``. A single layer's map from the
class token (row 0) to the patches shows where that layer reads from, but the
tokens it reads are already mixtures of the input. *Attention rollout* follows
the mixing through the stack: each layer's heads are fused into one (B, T, T)
matrix, the identity is added for the residual connection (half of what a
token carries is itself), rows are renormalised to sum to 1, and the layers'
matrices are multiplied, first layer on the right. Row 0 of the product says
how much of the class token's final state flows from each input token.

Shape legend: ``B`` batch, ``nh`` heads, ``T = 1 + N`` tokens (``1 + R + N`` with ``R`` registers).

Reference: Abnar & Zuidema, *Quantifying Attention Flow in Transformers*
(2020), https://arxiv.org/abs/2005.00928, section 3.
"""

from __future__ import annotations

from typing import cast

import torch

from attnbook.transformer import EncoderBlock
from attnbook.vit.model import ViT

__all__ = ["attention_maps", "attention_rollout", "class_token_share", "position_similarity",
           "row_column_contrast", "upsample_map"]

_FUSIONS = ("mean", "max", "min")


@torch.no_grad()
def attention_maps(model: ViT, images: torch.Tensor) -> list[torch.Tensor]:
    """The attention weights of every block: a list of ``depth`` tensors (B, nh, 1+N, 1+N).

    Runs the model once with ``need_weights=True`` (call ``model.eval()`` first
    for maps without dropout); each row sums to 1.

    >>> from attnbook.vit import ViTConfig
    >>> model = ViT(ViTConfig.preset("cpu-digits", depth=2)).eval()
    >>> maps = attention_maps(model, torch.randn(3, 1, 8, 8))
    >>> len(maps), maps[0].shape
    (2, torch.Size([3, 4, 5, 5]))
    """
    if not isinstance(model, ViT):
        raise TypeError(f"model must be an attnbook.vit.ViT, got {type(model).__name__}")
    model.forward_features(images, need_weights=True)
    blocks = [cast(EncoderBlock, block) for block in model.blocks]
    maps = [cast(torch.Tensor, block.attn_weights) for block in blocks]  # need_weights=True kept them
    for block in blocks:
        block.attn_weights = None  # do not keep (B, nh, T, T) tensors alive in the model
    return maps


def attention_rollout(
    maps: list[torch.Tensor], head_fusion: str = "mean", add_residual: bool = True
) -> torch.Tensor:
    """Roll attention out through the layers: (B, T, T), every row summing to 1.

    ``head_fusion`` (``"mean"``, ``"max"`` or ``"min"``) fuses the heads of each
    (B, nh, T, T) map; ``add_residual`` adds the identity before each layer's
    rows are renormalised. Returns ``A_L ... A_2 A_1``.

    >>> a = torch.tensor([[[[0.0, 1.0], [0.0, 1.0]]]])   # (B=1, nh=1, T=2, T): all on token 1
    >>> attention_rollout([a])[0]                       # (A + I) / 2
    tensor([[0.5000, 0.5000],
            [0.0000, 1.0000]])
    >>> attention_rollout([a, a], add_residual=False)[0]
    tensor([[0., 1.],
            [0., 1.]])
    """
    if head_fusion not in _FUSIONS:
        raise ValueError(f"head_fusion must be one of {_FUSIONS}, got {head_fusion!r}")
    if not isinstance(maps, (list, tuple)) or not maps:
        raise ValueError("maps must be a non-empty list of (B, nh, T, T) attention weights, one per layer")
    shape = maps[0].shape if isinstance(maps[0], torch.Tensor) else None
    for i, a in enumerate(maps):
        if not isinstance(a, torch.Tensor) or a.dim() != 4 or a.shape[-1] != a.shape[-2] or a.shape != shape:
            got = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
            raise ValueError(f"maps[{i}] must have the shape (B, nh, T, T) shared by all layers, got {got}")
    T = shape[-1]
    eye = torch.eye(T, dtype=maps[0].dtype, device=maps[0].device)  # (T, T)
    rollout = None
    for a in maps:  # a: (B, nh, T, T) -> fused: (B, T, T)
        fused = a.mean(dim=1) if head_fusion == "mean" else a.amax(dim=1) if head_fusion == "max" else a.amin(dim=1)
        if add_residual:
            fused = fused + eye
        fused = fused / fused.sum(dim=-1, keepdim=True)  # rows sum to 1 again
        rollout = fused if rollout is None else fused @ rollout  # (B, T, T): later layers on the left
    assert rollout is not None  # maps is not empty (checked above)
    return rollout


def class_token_share(rollout: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """Per image, the share of the class token's mass on the patches that falls on ``selected`` ones: (B,).

    ``rollout`` is (B, T, T) (from :func:`attention_rollout`, or one layer's
    head-averaged weights) and ``selected`` (B, N): the last ``N`` tokens are
    the patches, the ``T - N`` before them the class token (index 0) and any
    registers. Row 0's patch entries are renormalised over the patches, and
    those where ``selected`` is True are summed. Compared with
    ``selected.float().mean()``, it says whether the map favours those
    patches (a ratio of 1: no more than their share).

    >>> r = torch.tensor([[[0.2, 0.6, 0.2], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]])   # (B=1, 3, 3)
    >>> class_token_share(r, torch.tensor([[True, False]]))   # 0.6 of the patches' 0.8
    tensor([0.7500])
    >>> class_token_share(r, torch.tensor([[True]]))          # token 1 a register: 0.2 of 0.2
    tensor([1.])
    """
    if rollout.dim() != 3 or rollout.shape[-1] != rollout.shape[-2]:
        raise ValueError(f"rollout must have shape (B, T, T), got {tuple(rollout.shape)}")
    B, T = rollout.shape[0], rollout.shape[-1]
    if selected.dim() != 2 or selected.shape[0] != B or not 1 <= selected.shape[1] < T or selected.dtype != torch.bool:
        raise ValueError(
            f"selected must be a bool tensor (B, N) with B = {B} and 1 <= N < T = {T} (the last N tokens are "
            f"the patches), got {selected.dtype} {tuple(selected.shape)}"
        )
    mass = rollout[:, 0, T - selected.shape[1]:]  # (B, N): the class token's row, patches only
    return (mass * selected).sum(-1) / mass.sum(-1)


def position_similarity(model: ViT) -> torch.Tensor:
    """Cosine similarity of the patches' learned positions on the grid: (g, g, g, g), g = img_size / P.

    Entry ``[r, c, r2, c2]`` compares the position of the patch at row ``r``, column ``c`` with
    that at ``(r2, c2)``; the class token's and the registers' positions are left out. Figure 7
    (centre) of the ViT paper draws ``[r, c]`` as one small panel per patch.

    >>> from attnbook.vit import ViTConfig
    >>> sim = position_similarity(ViT(ViTConfig.preset("cpu-digits", patch_size=2)))
    >>> sim.shape, round(sim[1, 2, 1, 2].item(), 4)
    (torch.Size([4, 4, 4, 4]), 1.0)
    """
    g, k = model.config.img_size // model.config.patch_size, model.config.num_prefix_tokens
    pos = model.pos_embed[0, k:].detach()  # (N, D): patches only
    pos = pos / pos.norm(dim=-1, keepdim=True)
    return (pos @ pos.T).view(g, g, g, g)  # (N, N) -> (row, col) x (row, col)


def row_column_contrast(similarity: torch.Tensor) -> tuple[float, float]:
    """Mean similarity of pairs in the same row or column, and of all other pairs (self-pairs left out).

    ``similarity`` is (g, g, g, g), as from :func:`position_similarity`. Their difference says how
    much of the image's 2-D grid the 1-D positions learned: 0 for random vectors.

    >>> rows = torch.eye(2).repeat_interleave(2, 0)         # (4, 2): one vector per grid row
    >>> sim = (rows @ rows.T).view(2, 2, 2, 2)              # alike along a row, orthogonal across
    >>> row_column_contrast(sim)                            # two pairs share a row, two a column
    (0.5, 0.0)
    """
    g = similarity.shape[0]
    flat = similarity.reshape(g * g, g * g)
    idx = torch.arange(g * g)
    r, c = idx // g, idx % g
    same = (r[:, None] == r[None, :]) | (c[:, None] == c[None, :])  # (N, N)
    others = ~torch.eye(g * g, dtype=torch.bool)
    return flat[same & others].mean().item(), flat[~same].mean().item()


def upsample_map(grid_map: torch.Tensor, img_size: int) -> torch.Tensor:
    """A (..., g, g) map on the patch grid blown up to (..., img_size, img_size) pixels, bilinearly,
    scaled to 0..1 per map: ready to lay over the image with some transparency.

    >>> upsample_map(torch.tensor([[0.0, 1.0], [1.0, 2.0]]), 4).shape
    torch.Size([4, 4])
    """
    lead = grid_map.shape[:-2]
    m = grid_map.reshape(-1, 1, *grid_map.shape[-2:]).float()  # (M, 1, g, g)
    m = torch.nn.functional.interpolate(m, size=(img_size, img_size), mode="bilinear", align_corners=False)
    lo = m.amin(dim=(-2, -1), keepdim=True)
    hi = m.amax(dim=(-2, -1), keepdim=True)
    m = (m - lo) / (hi - lo).clamp_min(1e-12)  # (M, 1, img_size, img_size) in 0..1
    return m.reshape(*lead, img_size, img_size)
