"""Part 2: the class ``ViTEmbedding(img_size, patch_size, in_chans, embed_dim)``: patches, class token, positions.

``forward(images (B, C, H, W)) -> (B, 1 + N, D)``: ``proj`` (an ``nn.Linear(P*P*C, D)``) embeds the
flattened patches, the learnable ``cls_token`` (1, 1, D) is *prepended*, and the learnable
``pos_embed`` (1, 1 + N, D) is added to every token, the class token included. The checker
copies the reference's random parameters into the student's module by name and compares
outputs; a wrong output is compared with the usual mistakes (class token appended, the class
token left without a position, no positions, patches cut in a wrong layout). A ``cls_token`` or
``pos_embed`` of another shape is named before any weight is copied: ``pos_embed`` of shape
``(1, N, D)`` has no position for the class token.

>>> tuple(_Reference(8, 4, 1, 6)(torch.zeros(2, 1, 8, 8)).shape)
(2, 5, 6)
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .._compare import close, require_tensor
from .._core import _is_proxy, build_module, load_reference_parameters, run_method, run_student
from .._shared import randomize
from ..engine import Case, Part
from ..errors import CheckFailed
from ..steps import require_shape
from ._common import LAYOUT_MESSAGES, cut, images


class _Reference(nn.Module):
    """The embedding the exercise asks for, with the exercise's parameter names."""

    def __init__(self, img_size: int, patch_size: int, in_chans: int, embed_dim: int) -> None:
        super().__init__()
        self.patch_size = patch_size
        self.proj = nn.Linear(patch_size * patch_size * in_chans, embed_dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, 1 + (img_size // patch_size) ** 2, embed_dim))

    def forward(self, x: torch.Tensor, layout: str = "right", mistake: str | None = None) -> torch.Tensor:
        patches = self.proj(cut(x, self.patch_size, layout).to(x.dtype))  # (B, N, D)
        cls = self.cls_token.expand(x.shape[0], -1, -1)  # (B, 1, D)
        pos = self.pos_embed
        if mistake == "appended":
            return torch.cat([patches, cls], dim=1) + pos
        if mistake == "cls_without_position":
            return torch.cat([cls, patches + pos[:, 1:]], dim=1)
        if mistake == "cls_without_position_first_rows":
            return torch.cat([cls, patches + pos[:, :-1]], dim=1)
        if mistake == "no_positions":
            return torch.cat([cls, patches], dim=1)
        return torch.cat([cls, patches], dim=1) + pos  # (B, 1 + N, D)


MISTAKES = {
    "appended": "the class token was appended after the patches: prepend it, so that token 0 is the class token "
                "(torch.cat([cls, patches], dim=1))",
    "cls_without_position": "the positions were added to the patches before the class token was prepended, so the "
                            "class token has none: prepend it first, then add all 1 + N positions",
    "cls_without_position_first_rows": "the positions were added to the patches before the class token was "
                                       "prepended, so the class token has none: prepend it first, then add all "
                                       "1 + N positions",
    "no_positions": "no position embeddings were added: add pos_embed to the 1 + N tokens",
}


def _case(seed, B, C, img, P, D, dtype=torch.float32, swap=False):
    def make():
        x, _ = images(seed, B, C, img, img, P, dtype, swap)()
        return seed, (img, P, C, D), x

    return make


def _shapes(module: nn.Module) -> dict[str, tuple[int, ...]]:
    """The student's parameter shapes by name (here, or in the worker through the judge's proxy)."""
    if _is_proxy(module):
        return {name: tuple(shape) for name, shape in module.parameter_shapes()}
    return {name: tuple(p.shape) for name, p in nn.Module.named_parameters(module)}


def _require_token_shapes(module: nn.Module, ref: _Reference) -> None:
    """Name a class token or a table of positions of the wrong shape, before the weights are copied."""
    shapes = _shapes(module)
    n_tokens, D = ref.pos_embed.shape[1:]
    pos = shapes.get("pos_embed")
    if pos == (1, n_tokens - 1, D):
        raise CheckFailed("pos_embed has shape (1, N, embed_dim), one position per patch, but the class token "
                          "needs one too: make it (1, 1 + N, embed_dim) with N = (img_size // patch_size) ** 2, "
                          "position 0 for the class token")
    if pos is not None and pos != (1, n_tokens, D):
        raise CheckFailed("pos_embed should have shape (1, 1 + N, embed_dim) with N = (img_size // patch_size) ** 2: "
                          "one position for the class token and one per patch, shared by the batch")
    cls_shape = shapes.get("cls_token")
    if cls_shape is not None and cls_shape != (1, 1, D):
        raise CheckFailed("cls_token should have shape (1, 1, embed_dim): one class token, expanded to the batch "
                          "in forward")


def _check(cls: Callable) -> Callable:
    what = "ViTEmbedding"

    def check_one(seed, sizes, x):
        ref = randomize(_Reference(*sizes), seed).to(x.dtype).eval()
        module = build_module(cls, *sizes, what=what + "(img_size, patch_size, in_chans, embed_dim)")
        run_method(module, "to", x.dtype, what=f"{what}.to")
        _require_token_shapes(module, ref)
        load_reference_parameters(module, ref, what)  # names the other mismatches (proj's sizes)
        run_method(module, "eval", what=f"{what}.eval")
        with torch.no_grad():
            out = require_tensor(run_student(module, x.clone(), what=f"{what}.forward"), f"the output of {what}")
            expected = ref(x)
            require_shape(out, expected.shape, f"the output of {what} should have shape (B, 1 + N, embed_dim): "
                                               "the class token and N patch tokens")
            if out.dtype != expected.dtype:
                raise CheckFailed(f"for {expected.dtype} images the tokens should be {expected.dtype} too")
            if close(out, expected):
                return
            # Part 2 builds on the student's patchify: name a wrong layout and a mistake of this part together.
            for layout in ("right", *LAYOUT_MESSAGES):
                for mistake in (None, *MISTAKES):
                    if (layout, mistake) != ("right", None) and close(out, ref(x, layout, mistake)):
                        words = ([MISTAKES[mistake]] if mistake else []) + (
                            [f"the patch tokens are wrong: {LAYOUT_MESSAGES[layout]} (see Part 1)"]
                            if layout != "right" else [])
                        raise CheckFailed("; and ".join(words))
        raise CheckFailed("the tokens differ from cat([cls_token, proj(patchify(images))]) + pos_embed")

    return check_one


check_vit_embedding = Part(
    name="check_vit_embedding",
    visible=(Case("digits, patch 4", _case(621, 2, 1, 8, 4, 16)),),
    check=_check,
    # timm is not listed: it cannot be imported without torchvision, which the course does not install
    forbidden=("attnbook.vit.patches.PatchEmbedding", "attnbook.vit.model.ViT", "attnbook.vit.mae.MAE"),
)
