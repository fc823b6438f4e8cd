"""completion_explorer builds and redraws without a display or a kernel, for grey and colour models."""

import pytest
import torch

from attnbook.imagegpt import ImageGPT, ImageGPTConfig, PixelCNN
from attnbook.widgets.imagegpt import completion_explorer, tokens_to_rgb

PNG = b"\x89PNG"


@pytest.fixture
def grey():
    torch.manual_seed(0)
    model = ImageGPT(ImageGPTConfig.preset("digits-8x8", n_layer=1, n_embd=32))
    images = torch.randint(8, (5, 8, 8), generator=torch.Generator().manual_seed(1))
    return model, images


def test_explorer_keeps_the_chosen_rows_and_redraws(grey):
    model, images = grey
    box = completion_explorer(model, images, labels=torch.arange(5), n_samples=3)
    assert set(box.controls) == {"image", "rows_kept", "temperature", "seed"}
    assert bytes(box.image.value).startswith(PNG)
    assert box.completions.shape == (3, 8, 8)
    for image_index, kept in ((1, 4), (3, 6), (2, 1)):  # each differs from the one before
        before = bytes(box.image.value)
        box.controls["image"].value = image_index
        box.controls["rows_kept"].value = kept
        assert bytes(box.image.value) != before
        assert torch.equal(box.completions[:, :kept], images[image_index, :kept].expand(3, kept, 8))
        assert f"label {image_index}" in box.children[1].value
    box.controls["rows_kept"].value = 8  # everything kept: nothing to sample
    assert torch.equal(box.completions, images[2].expand(3, 8, 8))
    assert "100 % of the 0 sampled pixels" in box.children[1].value


def test_same_seed_same_draw_other_seed_other_draw_greedy_identical(grey):
    model, images = grey
    a = completion_explorer(model, images, seed=3).completions
    b = completion_explorer(model, images, seed=3).completions
    assert torch.equal(a, b)
    box = completion_explorer(model, images, seed=3)
    box.controls["seed"].value = 4
    assert not torch.equal(box.completions, a)
    box.controls["temperature"].value = 0.0  # greedy: every sample is the same
    assert (box.completions == box.completions[:1]).all()


def test_colour_model_and_pixelcnn():
    torch.manual_seed(0)
    colour = ImageGPT(ImageGPTConfig.preset("colour-9bit", n_layer=1, n_embd=32, height=4, width=4))
    box = completion_explorer(colour, torch.randint(512, (2, 4, 4)), n_samples=2)
    assert box.completions.shape == (2, 4, 4) and int(box.completions.max()) < 512
    cnn = PixelCNN(8, channels=8, n_layers=1)
    box = completion_explorer(cnn, torch.randint(8, (2, 6, 5)), n_samples=2)
    assert box.completions.shape == (2, 6, 5) and box.controls["rows_kept"].max == 6


def test_tokens_to_rgb_grey_and_palette():
    rgb = tokens_to_rgb(torch.tensor([[[0, 7], [3, 7]]]), 8)
    assert rgb.shape == (1, 2, 2, 3) and float(rgb.max()) == 1.0 and float(rgb.min()) == 0.0
    colour = tokens_to_rgb(torch.tensor([[[0o700, 0o070, 0o007]]]), 512)  # red, green, blue bins 7
    assert colour[0, 0].argmax(dim=1).tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        (dict(model=torch.nn.Linear(2, 2)), TypeError, "model must be an ImageGPT or a PixelCNN"),
        (dict(images=torch.zeros(8, 8, dtype=torch.long)), ValueError, "images must be a"),
        (dict(labels=torch.arange(3)), ValueError, "labels must be"),
        (dict(n_samples=0), ValueError, "n_samples must be an int >= 1"),
    ],
)
def test_bad_arguments_are_named(grey, kwargs, error, words):
    model, images = grey
    args = {"model": model, "images": images, **kwargs}
    with pytest.raises(error, match=words):
        completion_explorer(args.pop("model"), args.pop("images"), **args)
