"""make_square_scenes: reproducible, boxes that match the pixels, no overlaps, clear errors."""

import pytest
import torch

from attnbook.data import SQUARE_COLOURS, make_square_scenes


def _pixel_box(box, size):
    """(cx, cy, w, h) in fractions -> integer (x0, y0, x1, y1) pixel bounds."""
    cx, cy, w, h = (box * size).tolist()
    return round(cx - w / 2), round(cy - h / 2), round(cx + w / 2), round(cy + h / 2)


def test_same_seed_same_scenes_and_different_seed_differs():
    a, b, c = make_square_scenes(5, seed=3), make_square_scenes(5, seed=3), make_square_scenes(5, seed=4)
    assert torch.equal(a.images, b.images)
    assert all(torch.equal(x, y) for x, y in zip(a.boxes, b.boxes, strict=True))
    assert not torch.equal(a.images, c.images)


def test_boxes_cover_squares_of_their_colour():
    size = 32
    scenes = make_square_scenes(40, seed=0, img_size=size, noise=0.0)
    counts = torch.zeros(len(SQUARE_COLOURS))
    for image, boxes, labels in zip(scenes.images, scenes.boxes, scenes.labels, strict=True):
        assert 1 <= len(boxes) <= 3 and boxes.shape == (len(labels), 4)
        ink = torch.zeros(size, size, dtype=torch.bool)
        for box, label in zip(boxes, labels, strict=True):
            x0, y0, x1, y1 = _pixel_box(box, size)
            assert box[2] == box[3] and 5 <= x1 - x0 <= 12  # squares of the asked sides
            colour = torch.tensor(SQUARE_COLOURS[label][1])
            patch = image[:, y0:y1, x0:x1]  # (3, side, side)
            assert torch.allclose(patch, colour[:, None, None].expand_as(patch))
            assert not ink[y0:y1, x0:x1].any(), "squares overlap"
            ink[y0:y1, x0:x1] = True
            counts[label] += 1
        assert image[:, ~ink].abs().max() == 0  # background is black without noise
    assert (counts > 10).all()  # every colour occurs


def test_noise_is_clipped_to_unit_range():
    images = make_square_scenes(8, seed=1, noise=0.3).images
    assert images.min() >= 0 and images.max() <= 1 and images.dtype == torch.float32
    assert (images[:, :, 0, 0] > 0).any()  # the noise reached the background


@pytest.mark.parametrize(
    "kwargs, message",
    [({"n": 0}, "n must be"), ({"n": 2, "seed": -1}, "seed must be"),
     ({"n": 2, "max_side": 20, "img_size": 32}, "max_side must be at most"),
     ({"n": 2, "min_side": 8, "max_side": 4}, "max_side must be"),
     ({"n": 2, "noise": -0.1}, "noise must be")],
)
def test_bad_arguments_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_square_scenes(**kwargs)
