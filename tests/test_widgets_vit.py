"""vit_attention_explorer and class_token_maps build and redraw without a display or a kernel."""

import pytest
import torch

from attnbook.vit import ViT, ViTConfig, attention_maps, attention_rollout
from attnbook.widgets.vit import class_token_maps, vit_attention_explorer

PNG = b"\x89PNG"


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return ViT(ViTConfig.preset("cpu-digits", patch_size=2, depth=2)).eval()


@pytest.fixture(scope="module")
def images():
    return torch.rand(4, 1, 8, 8, generator=torch.Generator().manual_seed(0))


def test_class_token_maps_are_row_zero_of_the_maps_laid_out_on_the_patch_grid(model, images):
    layers, rollout = class_token_maps(model, images)
    maps = attention_maps(model, images)
    # patch n sits at grid row n // 4, column n % 4 (row-major, like patchify)
    assert torch.equal(layers[1][2, 3, 1, 2], maps[1][2, 3, 0, 1 + 1 * 4 + 2])
    assert torch.equal(rollout[0, 3, 0], attention_rollout(maps)[0, 0, 1 + 3 * 4])
    full = layers[0].sum((2, 3)) + maps[0][:, :, 0, 0]  # the patches plus the class token itself
    assert torch.allclose(full, torch.ones_like(full))


def test_class_token_maps_skip_the_registers(images):
    torch.manual_seed(0)
    model = ViT(ViTConfig.preset("cpu-digits", patch_size=2, depth=2, reg_tokens=3)).eval()
    layers, rollout = class_token_maps(model, images)
    maps = attention_maps(model, images)  # (B, nh, 1 + 3 + 16, 1 + 3 + 16)
    assert torch.equal(layers[0][1, 2, 3, 0], maps[0][1, 2, 0, 4 + 3 * 4])
    assert torch.equal(rollout[2, 0, 1], attention_rollout(maps)[2, 0, 4 + 1])


def test_explorer_controls_change_the_picture(model, images):
    box = vit_attention_explorer(model, images, labels=torch.tensor([3, 1, 4, 1]))
    c = box.controls
    assert set(c) == {"image", "layer", "head"} and c["layer"].max == 1 and c["image"].max == 3
    assert [v for _, v in c["head"].options] == [-1, 0, 1, 2, 3]
    assert bytes(box.image.value).startswith(PNG) and "label 3" in box.children[2].value
    seen = {bytes(box.image.value)}
    for name, value in (("head", 2), ("layer", 0), ("image", 1)):
        c[name].value = value
        seen.add(bytes(box.image.value))
    assert len(seen) == 4  # every change redrew a different picture
    assert "label 1" in box.children[2].value


def test_explorer_rejects_wrong_inputs(model, images):
    with pytest.raises(TypeError, match="attnbook.vit.ViT"):
        vit_attention_explorer(torch.nn.Linear(2, 2), images)
    with pytest.raises(ValueError, match=r"images must have shape \(B, 1, 8, 8\)"):
        vit_attention_explorer(model, torch.rand(2, 3, 8, 8))
    with pytest.raises(ValueError, match="labels must have one entry per image"):
        vit_attention_explorer(model, images, labels=torch.tensor([1]))
