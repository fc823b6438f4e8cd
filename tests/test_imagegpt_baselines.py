"""Chapter 5's masked-pixel model and the baselines its completions are measured against."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from attnbook.imagegpt import (
    BidirectionalSelfAttention,
    ImageGPT,
    ImageGPTConfig,
    MaskedPixelModel,
    bits_per_dim,
    fill_rows,
    histogram_bits,
    ink_iou,
    ink_mask,
    layer_features,
    mask_pixels,
    masked_pixel_bits,
    masked_pixel_loss,
    pixel_logits,
    position_histogram,
    position_mode,
    shape_agreement,
)

TINY = dict(vocab_size=8, height=4, width=4, n_layer=2, n_head=2, n_embd=16)


# ---------------------------------------------------------------- baselines


def test_position_histogram_counts_each_position_with_add_one():
    tokens = torch.randint(5, (50, 3, 4), generator=torch.Generator().manual_seed(0))
    probs = position_histogram(tokens, 5)
    assert probs.shape == (12, 5)
    assert torch.allclose(probs.sum(dim=1), torch.ones(12, dtype=torch.float64))
    for t in (0, 7, 11):  # against counting by hand
        column = tokens.flatten(1)[:, t].tolist()
        want = [(column.count(v) + 1) / (50 + 5) for v in range(5)]
        assert probs[t].tolist() == pytest.approx(want)


def test_histogram_bits_of_a_constant_position_and_of_the_uniform():
    train = torch.zeros(6, 1, 2, dtype=torch.long)
    train[:, 0, 1] = torch.arange(6) % 2  # position 0 always 0; position 1 half 0, half 1
    # p(0 at pos 0) = 7/8 (add-one), p(1 at pos 1) = 4/8
    want = (-torch.tensor(7 / 8).log2() - torch.tensor(0.5).log2()) / 2
    assert histogram_bits(train, torch.tensor([[[0, 1]]]), 2) == pytest.approx(float(want))
    with pytest.raises(ValueError, match="same size"):
        histogram_bits(train, torch.zeros(1, 2, 2, dtype=torch.long), 2)


def test_position_mode_matches_counting_and_breaks_ties_low():
    tokens = torch.randint(4, (31, 2, 3), generator=torch.Generator().manual_seed(1))
    mode = position_mode(tokens)
    for r in range(2):
        for c in range(3):
            counts = Counter(tokens[:, r, c].tolist())
            best = max(counts.values())
            assert mode[r, c] == min(v for v, n in counts.items() if n == best)
    assert position_mode(torch.tensor([[[1]], [[0]]])).item() == 0  # a tie: the smaller value
    ink = torch.tensor([[[True, False]], [[True, True]], [[False, False]]])
    assert position_mode(ink).dtype == torch.bool


def test_fill_rows_keeps_the_top_and_broadcasts_the_fill():
    tokens = torch.arange(2 * 3 * 2).view(2, 3, 2)
    per_image = fill_rows(tokens, 1, tokens[:, :1, :1])  # each image's own corner
    assert torch.equal(per_image[:, :1], tokens[:, :1])
    assert (per_image[0, 1:] == 0).all() and (per_image[1, 1:] == 6).all()
    assert torch.equal(fill_rows(tokens, 3, 0), tokens)
    with pytest.raises(ValueError, match="broadcast"):
        fill_rows(tokens, 1, torch.zeros(4, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="rows_kept"):
        fill_rows(tokens, 4, 0)


def test_completion_scores_on_a_perfect_an_empty_and_a_made_up_completion():
    g = torch.Generator().manual_seed(2)
    original = torch.randint(3, (20, 8, 8), generator=g)
    original[:, 0, 0] = 1  # the paper
    true = ink_mask(original)
    assert shape_agreement(true, true, 4) == 1.0 and ink_iou(true, true, 4) == 1.0
    paper = ink_mask(fill_rows(original, 4, original[:, :1, :1]))
    share_of_paper = float((~true[:, 4:]).double().mean())
    assert shape_agreement(paper, true, 4) == pytest.approx(share_of_paper)
    assert ink_iou(paper, true, 4) == 0.0
    other = ink_mask(torch.randint(3, (20, 8, 8), generator=g))
    inter, union = (other & true)[:, 4:].sum(), (other | true)[:, 4:].sum()
    assert ink_iou(other, true, 4) == pytest.approx(float(inter / union))
    assert ink_iou(other, true, 4) == ink_iou(true, other, 4)
    # the kept rows never count
    changed = other.clone()
    changed[:, :4] = ~changed[:, :4]
    assert ink_iou(changed, true, 4) == ink_iou(other, true, 4)
    assert shape_agreement(changed, true, 4) == shape_agreement(other, true, 4)
    with pytest.raises(TypeError, match="bool ink mask"):
        ink_iou(original, true, 4)


# ---------------------------------------------------------------- masked-pixel model


def test_bidirectional_attention_fused_and_explicit_paths_agree_and_see_the_future():
    torch.manual_seed(0)
    attn = BidirectionalSelfAttention(16, 4).eval()
    x = torch.randn(3, 7, 16, dtype=torch.float64)
    attn.double()
    fused = attn(x)
    explicit = attn(x, need_weights=True)
    assert torch.allclose(fused, explicit, atol=1e-10)
    assert (attn.attn_weights > 0).all()
    ref = torch.nn.MultiheadAttention(16, 4, batch_first=True, dtype=torch.float64)
    ref.in_proj_weight.data.copy_(attn.c_attn.weight)
    ref.in_proj_bias.data.copy_(attn.c_attn.bias)
    ref.out_proj.weight.data.copy_(attn.c_proj.weight)
    ref.out_proj.bias.data.copy_(attn.c_proj.bias)
    assert torch.allclose(ref(x, x, x, need_weights=False)[0], fused, atol=1e-10)


def test_masked_model_has_imagegpts_parameters_and_initial_weights():
    torch.manual_seed(0)
    ar = ImageGPT(ImageGPTConfig(**TINY))
    torch.manual_seed(0)
    masked = MaskedPixelModel(ImageGPTConfig(**TINY))
    assert masked.num_params() == ar.num_params()
    a, m = ar.state_dict(), masked.state_dict()
    assert a.keys() == m.keys()
    assert all(torch.equal(a[k], m[k]) for k in a)
    assert masked.mask_id == 8


def test_masked_model_sees_both_sides_and_its_loss_trains():
    torch.manual_seed(0)
    model = MaskedPixelModel(ImageGPTConfig(**TINY))
    tokens = torch.randint(8, (6, 4, 4))
    inputs, targets, masked = mask_pixels(tokens, model.mask_id, rate=0.5,
                                          generator=torch.Generator().manual_seed(0))
    assert torch.equal(targets, tokens.flatten(1)) and (inputs[masked] == 8).all()
    assert torch.equal(inputs[~masked], targets[~masked])
    changed = targets.clone()
    changed[:, -1] = (changed[:, -1] + 1) % 8
    assert not torch.allclose(model(targets)[:, 0], model(changed)[:, 0])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    first = masked_pixel_loss(model, (inputs, targets, masked)).item()
    for _ in range(30):
        loss = masked_pixel_loss(model, (inputs, targets, masked))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < first


def test_mask_pixels_hides_about_the_rate():
    _, _, masked = mask_pixels(torch.zeros(400, 8, 8, dtype=torch.long), 8,
                               generator=torch.Generator().manual_seed(0))
    assert abs(masked.double().mean().item() - 0.15) < 0.01
    with pytest.raises(ValueError, match="rate"):
        mask_pixels(torch.zeros(1, 2, 2, dtype=torch.long), 8, rate=0.0)


@torch.no_grad()
def test_masked_pixel_bits_reads_what_each_model_may_see():
    torch.manual_seed(0)
    tokens = torch.randint(8, (5, 4, 4))
    masked = torch.zeros(5, 16, dtype=torch.bool)
    masked[:, [3, 9, 14]] = True
    ar = ImageGPT(ImageGPTConfig(**TINY))
    want = bits_per_dim(pixel_logits(ar, tokens).flatten(1, 2)[masked], tokens.flatten(1)[masked])
    assert masked_pixel_bits(ar, tokens, masked) == pytest.approx(float(want))
    bert = MaskedPixelModel(ImageGPTConfig(**TINY))
    hidden = tokens.flatten(1).masked_fill(masked, 8)
    want = bits_per_dim(bert(hidden)[masked], tokens.flatten(1)[masked])
    assert masked_pixel_bits(bert, tokens, masked) == pytest.approx(float(want))
    # a masked pixel's true value is not visible to the masked model
    other = tokens.clone().flatten(1)
    other[:, 3] = (other[:, 3] + 1) % 8
    assert torch.allclose(bert(hidden), bert(other.masked_fill(masked, 8)))
    with pytest.raises(ValueError, match="at least one"):
        masked_pixel_bits(bert, tokens, torch.zeros(5, 16, dtype=torch.bool))


def test_layer_features_take_the_masked_model_too():
    model = MaskedPixelModel(ImageGPTConfig(**TINY))
    assert layer_features(model, torch.randint(8, (3, 16)), 2).shape == (3, 16)
    with pytest.raises(TypeError, match="ImageGPT or a MaskedPixelModel"):
        layer_features(torch.nn.Linear(2, 2), torch.randint(8, (3, 16)), 1)
