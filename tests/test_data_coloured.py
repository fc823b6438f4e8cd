"""make_coloured_digits: shapes, determinism, the blend of ink and paper, contrast, errors."""

from __future__ import annotations

import pytest
import torch

from attnbook.data import ColouredDigits, load_digits, make_coloured_digits

LUMA = torch.tensor([0.299, 0.587, 0.114])


def test_shapes_dtypes_and_labels_follow_the_grey_digits():
    data = make_coloured_digits(50, seed=1)
    assert isinstance(data, ColouredDigits)
    assert data.images.shape == (50, 3, 8, 8) and data.images.dtype == torch.uint8
    assert data.foreground.shape == data.background.shape == (50, 3)
    grey, labels = load_digits()
    assert torch.equal(data.labels, labels[data.index])
    assert len(set(data.index.tolist())) == 50  # no digit twice while n <= 1797


def test_same_seed_same_images_other_seed_other_images():
    a, b, c = (make_coloured_digits(20, seed=s) for s in (3, 3, 4))
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.images, c.images)


def test_pixels_are_the_blend_of_ink_and_paper():
    data = make_coloured_digits(30, seed=0)
    grey, _ = load_digits()
    alpha = grey[data.index][:, None]  # (30, 1, 8, 8)
    fg = data.foreground.float()[:, :, None, None]
    bg = data.background.float()[:, :, None, None]
    expected = bg + alpha * (fg - bg)  # (30, 3, 8, 8)
    assert (data.images.float() - expected).abs().max() <= 0.5
    ink = alpha.expand_as(expected) == 1.0  # full-ink pixels are exactly the foreground colour
    assert torch.equal(data.images[ink], fg.expand_as(expected)[ink].to(torch.uint8))


def test_ink_and_paper_differ_in_luma_by_at_least_min_contrast():
    for contrast in (0.0, 80.0, 150.0):
        data = make_coloured_digits(300, seed=2, min_contrast=contrast)
        diff = (data.foreground.float() @ LUMA - data.background.float() @ LUMA).abs()
        assert float(diff.min()) >= contrast
    spread = make_coloured_digits(300, seed=2).foreground.float().std(dim=0)
    assert (spread > 50).all()  # colours cover the cube, not a few shades


def test_more_than_the_whole_set_repeats_shapes_in_new_colours():
    data = make_coloured_digits(1800, seed=0)
    assert len(set(data.index[:1797].tolist())) == 1797
    again = (data.index[1797:, None] == data.index[:1797]).nonzero()[:, 1]
    assert not torch.equal(data.images[1797:], data.images[again])


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [
        (dict(n=0, seed=0), ValueError, "n must be >= 1"),
        (dict(n=2.0, seed=0), TypeError, "n must be an int"),
        (dict(n=2, seed="a"), TypeError, "seed must be an int"),
        (dict(n=2, seed=0, min_contrast=300), ValueError, "min_contrast"),
        (dict(n=2, seed=0, min_contrast=-1), ValueError, "min_contrast"),
    ],
)
def test_bad_arguments_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        make_coloured_digits(**kwargs)
