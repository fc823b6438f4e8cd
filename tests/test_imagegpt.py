"""Tests of attnbook.imagegpt: palettes, raster order, ImageGPT, bits/dim, completion, PixelCNN, probes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnbook.data import load_digits
from attnbook.imagegpt import (
    IMAGEGPT_PRESETS,
    ImageGPT,
    ImageGPTConfig,
    MaskedConv2d,
    PixelCNN,
    bits_per_dim,
    complete,
    dequantize_9bit,
    evaluate_bits_per_dim,
    from_sequence,
    grey_levels,
    kmeans_inertia,
    kmeans_palette,
    kmeans_step,
    layer_features,
    linear_probe,
    nearest_colour,
    next_pixel_loss,
    palette_dequantize,
    palette_quantize,
    palette_size_errors,
    pixel_logits,
    pixelcnn_mask,
    psnr,
    quantize_9bit,
    receptive_field,
    ridge_probe,
    sample_images,
    sequence_cost,
    to_sequence,
    uniform_bits,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _tiny_gpt(**overrides: object) -> ImageGPT:
    torch.manual_seed(0)
    cfg = ImageGPTConfig(vocab_size=8, height=4, width=5, n_layer=2, n_head=2, n_embd=16).replace(**overrides)
    return ImageGPT(cfg)


@pytest.fixture(scope="module")
def photo_pixels() -> torch.Tensor:
    """A 20,000-pixel sample (N, 3) float of scikit-learn's china.jpg, a real photo."""
    pytest.importorskip("PIL")
    from sklearn.datasets import load_sample_images

    img = torch.from_numpy(np.array(load_sample_images().images[0])).reshape(-1, 3).float()  # (H*W, 3)
    return img[torch.randperm(img.shape[0], generator=_gen(1))[:20000]]


# ----------------------------------------------------------------------------- 9-bit palette


def test_quantize_9bit_packs_floored_bins_red_high():
    values = torch.arange(256, dtype=torch.uint8)
    for channel, shift in ((0, 6), (1, 3), (2, 0)):
        img = torch.zeros(256, 3, 1, 1, dtype=torch.uint8)
        img[:, channel, 0, 0] = values
        ids = quantize_9bit(img)[:, 0, 0]  # (256,)
        assert torch.equal(ids, (values.long() // 32) << shift)  # floor, not round
    rgb = torch.tensor([200, 100, 50], dtype=torch.uint8).view(1, 3, 1, 1)
    assert quantize_9bit(rgb).item() == 6 * 64 + 3 * 8 + 1


def test_9bit_round_trip_within_half_a_bin():
    images = torch.randint(0, 256, (4, 3, 9, 7), dtype=torch.uint8, generator=_gen())
    tokens = quantize_9bit(images)
    assert tokens.shape == (4, 9, 7) and tokens.dtype == torch.int64
    assert 0 <= tokens.min() and tokens.max() <= 511
    back = dequantize_9bit(tokens)
    assert back.shape == images.shape and back.dtype == torch.uint8
    err = (back.int() - images.int()).abs()
    assert err.max() <= 16  # the bin centre is at most half a bin (32 / 2) away
    all_ids = torch.arange(512).view(1, 16, 32)
    assert torch.equal(quantize_9bit(dequantize_9bit(all_ids)), all_ids)  # centres map to their own bin


def test_9bit_psnr_on_a_photo_matches_the_issue(photo_pixels):
    img = photo_pixels.to(torch.uint8).T.reshape(1, 3, 100, 200)  # (N, 3) -> (1, 3, 100, 200)
    db = psnr(img, dequantize_9bit(quantize_9bit(img)))
    assert 26.5 < db < 29.0  # the issue measured 27.7 dB on the whole photo


@pytest.mark.parametrize(
    "bad, error",
    [
        (torch.zeros(1, 3, 4, 4), TypeError),  # float, not uint8
        (torch.zeros(1, 3, 4, 4, dtype=torch.int64), TypeError),
        (torch.zeros(1, 4, 4, 3, dtype=torch.uint8), ValueError),  # channels last
        (torch.zeros(3, 4, 4, dtype=torch.uint8), ValueError),  # no batch axis
        (np.zeros((1, 3, 4, 4), dtype=np.uint8), TypeError),
    ],
)
def test_quantize_rejects_wrong_images(bad, error):
    with pytest.raises(error, match="images"):
        quantize_9bit(bad)


def test_dequantize_rejects_out_of_range_and_wrong_shape():
    with pytest.raises(ValueError, match="tokens"):
        dequantize_9bit(torch.tensor([[[512]]]))
    with pytest.raises(ValueError, match="tokens"):
        dequantize_9bit(torch.tensor([[1, 2]]))
    with pytest.raises(TypeError, match="tokens"):
        dequantize_9bit(torch.zeros(1, 2, 2))


def test_grey_levels_bins_and_range():
    x = torch.arange(17.0)
    ids = grey_levels(x, levels=8, max_value=16)
    assert torch.equal(ids, torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 7]))
    with pytest.raises(ValueError, match="max_value"):
        grey_levels(torch.tensor([17.0]), 8, 16)


# ----------------------------------------------------------------------------- k-means palette


def test_nearest_colour_matches_brute_force():
    g = _gen(2)
    pixels, palette = torch.rand(500, 3, generator=g) * 255, torch.rand(37, 3, generator=g) * 255
    want = torch.cdist(pixels.double(), palette.double()).argmin(dim=1)
    assert torch.equal(nearest_colour(pixels, palette), want)
    assert nearest_colour(pixels.view(5, 100, 3), palette).shape == (5, 100)
    with pytest.raises(ValueError, match="pixels"):
        nearest_colour(torch.rand(4, 4), palette)


def test_kmeans_inertia_within_1_percent_of_sklearn(photo_pixels):
    from sklearn.cluster import KMeans

    pixels = photo_pixels[:8000]
    palette = kmeans_palette(pixels, 16, iters=100, n_init=4, seed=0)
    ours = kmeans_inertia(pixels, palette)
    sk = KMeans(n_clusters=16, n_init=4, max_iter=100, tol=0, random_state=0).fit(pixels.numpy().astype(np.float64))
    assert abs(ours - sk.inertia_) / sk.inertia_ < 0.01
    assert palette.shape == (16, 3) and palette.dtype == pixels.dtype
    one = kmeans_inertia(pixels, kmeans_palette(pixels, 16, iters=100, seed=0))
    assert ours <= one  # the best of four seedings is no worse than the first


def test_kmeans_step_moves_colours_to_their_means():
    g = _gen(4)
    pixels = torch.rand(200, 3, generator=g, dtype=torch.float64) * 100  # all in [0, 100)
    palette = torch.cat([torch.rand(4, 3, generator=g, dtype=torch.float64) * 100, torch.full((1, 3), 1e4)])
    ids = torch.cdist(pixels, palette).argmin(dim=1)
    moved = kmeans_step(pixels, palette)
    for j in range(4):
        assert torch.allclose(moved[j], pixels[ids == j].mean(dim=0))
    assert torch.equal(moved[4], palette[4])  # no pixel is near it: it stays, no NaN
    before = kmeans_inertia(pixels, palette[:4])
    assert kmeans_inertia(pixels, moved[:4]) <= before  # a Lloyd step never increases the inertia


def test_kmeans_is_seeded_and_handles_duplicates():
    pts = torch.tensor([[0.0, 0, 0]] * 10 + [[9.0, 9, 9]] * 10)
    pal = kmeans_palette(pts, 3, seed=0)  # more centres than distinct points: no NaN, no crash
    assert torch.isfinite(pal).all() and kmeans_inertia(pts, pal) == 0.0
    x = torch.rand(300, 3, generator=_gen())
    assert torch.equal(kmeans_palette(x, 5, seed=3), kmeans_palette(x, 5, generator=_gen(3)))
    with pytest.raises(ValueError, match="k=400"):
        kmeans_palette(x, 400)


def test_kmeans_palette_beats_uniform_9bit(photo_pixels):
    img = photo_pixels.to(torch.uint8).T.reshape(1, 3, 100, 200)  # (1, 3, H, W)
    palette = kmeans_palette(photo_pixels, 128, iters=10, seed=0)
    kmeans_db = psnr(img, palette_dequantize(palette_quantize(img, palette), palette))
    uniform_db = psnr(img, dequantize_9bit(quantize_9bit(img)))
    assert kmeans_db > uniform_db + 4.0  # 128 well-placed colours beat 512 uniform ones


# ----------------------------------------------------------------------------- raster order


def test_palette_size_errors_are_the_rmse_of_each_seeded_palette(photo_pixels):
    pixels = photo_pixels[:1500].double()
    errors = palette_size_errors(pixels, (1, 4, 16), (0, 3))
    assert errors.shape == (2, 3) and errors.dtype == torch.float64
    for i, seed in enumerate((0, 3)):
        for j, k in enumerate((1, 4, 16)):
            palette = kmeans_palette(pixels, k, 8, seed=seed)
            diff = pixels - palette[nearest_colour(pixels, palette)]  # (N, 3)
            assert math.isclose(errors[i, j].item(), diff.pow(2).mean().sqrt().item(), rel_tol=1e-9)
    # one colour: the mean colour, whatever the seed; the error is the spread of the channel values about it
    assert math.isclose(errors[0, 0].item(), (pixels - pixels.mean(0)).pow(2).mean().sqrt().item(), rel_tol=1e-9)
    assert torch.equal(errors, palette_size_errors(pixels, (1, 4, 16), (0, 3)))  # seeded: the same every time
    with pytest.raises(ValueError, match="at least one"):
        palette_size_errors(pixels, (), (0,))
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        palette_size_errors(pixels.view(1, -1, 3), (2,), (0,))


def test_raster_order_is_row_by_row_and_inverts():
    tokens = torch.randint(0, 512, (3, 4, 6), generator=_gen())
    seq = to_sequence(tokens)
    assert seq.shape == (3, 24)
    for r in range(4):
        for c in range(6):
            assert torch.equal(seq[:, r * 6 + c], tokens[:, r, c])
    assert torch.equal(from_sequence(seq, 4, 6), tokens)
    assert not torch.equal(from_sequence(seq, 6, 4).transpose(1, 2), tokens)  # not column-major
    with pytest.raises(ValueError, match="H\\*W"):
        from_sequence(seq, 5, 5)
    with pytest.raises(TypeError, match="tokens"):
        to_sequence(tokens.float())


def test_sequence_cost_table():
    assert sequence_cost(32)["tokens"] == 1024
    assert sequence_cost(64)["attention_entries"] == 4096**2
    assert sequence_cost(256, n_head=8)["attention_mib"] == 65536**2 * 8 * 4 / 2**20


# ----------------------------------------------------------------------------- the model


def test_presets_and_parameter_counts():
    for name in IMAGEGPT_PRESETS:
        cfg = ImageGPTConfig.preset(name)
        if cfg.num_params() < 5e6:
            assert ImageGPT(cfg).num_params() == cfg.num_params()
    cfg = ImageGPTConfig(vocab_size=5, height=3, width=2, n_layer=2, n_head=2, n_embd=8, n_inner=12, bias=False)
    assert ImageGPT(cfg).num_params() == cfg.num_params()
    millions = {n: ImageGPTConfig.preset(n).num_params() / 1e6 for n in ("igpt-s", "igpt-m", "igpt-l", "igpt-xl")}
    for name, paper in (("igpt-s", 76), ("igpt-m", 455), ("igpt-l", 1400), ("igpt-xl", 6800)):
        assert abs(millions[name] - paper) / paper < 0.04, name
    with pytest.raises(ValueError, match="unknown preset"):
        ImageGPTConfig.preset("igpt-xxl")
    with pytest.raises(ValueError, match="divisible"):
        ImageGPTConfig(n_embd=10, n_head=4)


def test_imagegpt_predicts_pixel_t_from_earlier_pixels_only():
    model = _tiny_gpt().double()
    seq = torch.randint(0, 8, (2, 20), generator=_gen())
    base = model(seq)
    assert base.shape == (2, 20, 8)
    for t in range(20):
        changed = seq.clone()
        changed[:, t] = (seq[:, t] + 3) % 8
        out = model(changed)
        assert torch.equal(out[:, : t + 1], base[:, : t + 1]), t  # pixels 0..t do not see pixel t
        if t < 19:
            assert not torch.allclose(out[:, t + 1], base[:, t + 1]), t  # pixel t + 1 does
    assert torch.allclose(model(seq[:, :7]), base[:, :7])  # a prefix gives the same scores


def test_imagegpt_forward_backward_has_no_nans_and_rejects_bad_input():
    model = _tiny_gpt()
    seq = torch.randint(0, 8, (3, 20), generator=_gen())
    loss = F.cross_entropy(model(seq).flatten(0, 1), seq.flatten())
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)
    assert abs(loss.item() - math.log(8)) < 0.1  # about uniform at initialisation
    with pytest.raises(ValueError, match="seq"):
        model(torch.randint(0, 8, (1, 21)))  # longer than H*W
    with pytest.raises(ValueError, match="vocabulary"):
        model(torch.full((1, 4), 8))  # 8 is the start token, not a pixel
    with pytest.raises(TypeError, match="seq"):
        model(torch.rand(1, 4))


def test_imagegpt_learns_digits_beyond_the_histogram():
    tokens = grey_levels(load_digits(normalize=False).images, 8, 16)  # (1797, 8, 8)
    train, test = tokens[:1500], tokens[1500:]
    counts = F.one_hot(train, 8).sum(dim=0).double() + 1.0  # (8, 8, 8) per-position histogram
    hist_bpd = bits_per_dim(counts.log().expand(len(test), 8, 8, 8), test).item()
    torch.manual_seed(0)
    model = ImageGPT(ImageGPTConfig.preset("digits-8x8", n_layer=1, n_head=2, n_embd=32))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    g = _gen()
    for _ in range(60):  # about a second
        batch = train[torch.randint(len(train), (32,), generator=g)]
        loss = next_pixel_loss(model, batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    bpd = evaluate_bits_per_dim(model, test)
    assert 1.6 < hist_bpd < 1.9  # the issue's baseline on its split: 1.780
    assert bpd < hist_bpd, (bpd, hist_bpd)


# ----------------------------------------------------------------------------- bits per dimension


def test_bits_per_dim_hand_worked():
    p = torch.tensor([0.5, 0.25, 0.125, 0.125])
    logits = p.log().expand(1, 3, 4)  # (B=1, T=3, V=4), the same distribution at every position
    # -log2 of p[0], p[1], p[2] = 1, 2, 3 bits: mean 2
    assert bits_per_dim(logits, torch.tensor([[0, 1, 2]])).item() == pytest.approx(2.0)
    assert bits_per_dim(torch.zeros(2, 3, 3, 8), torch.zeros(2, 3, 3, dtype=torch.long)).item() == pytest.approx(3.0)
    # a mean per dimension over all images: an image of 1-bit pixels and one of 3-bit pixels average to 2
    two = torch.stack([p.log().expand(2, 4), p.log().expand(2, 4)])  # (2, 2, 4)
    assert bits_per_dim(two, torch.tensor([[0, 0], [2, 3]])).item() == pytest.approx(2.0)


def test_uniform_bits_is_log2_k_per_pixel():
    assert uniform_bits(8, 8, 8) == {"bits_per_dim": 3.0, "bits_per_image": 192.0}
    assert uniform_bits(1, 5, 5)["bits_per_image"] == 0.0  # one value: nothing to tell
    got = uniform_bits(3, 2, 7)
    assert math.isclose(got["bits_per_dim"], math.log2(3)) and math.isclose(got["bits_per_image"], 14 * math.log2(3))
    # what a model that gives every value the same probability scores
    logits, targets = torch.zeros(2, 5, 3), torch.randint(3, (2, 5), generator=_gen(0))
    assert math.isclose(bits_per_dim(logits, targets).item(), got["bits_per_dim"], rel_tol=1e-6)
    with pytest.raises(ValueError, match="n_colours"):
        uniform_bits(0, 2, 2)
    with pytest.raises(ValueError, match="width"):
        uniform_bits(2, 2, 2.5)


def test_bits_per_dim_is_nats_over_ln2_and_checks_shapes():
    logits = torch.randn(4, 6, 5, dtype=torch.float64, generator=_gen())
    targets = torch.randint(0, 5, (4, 6), generator=_gen())
    nats = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    out = bits_per_dim(logits, targets)
    assert out.dtype == torch.float64
    assert out.item() == pytest.approx(nats.item() / math.log(2), rel=1e-12)
    with pytest.raises(ValueError, match="targets"):
        bits_per_dim(logits, targets[:, :5])
    with pytest.raises(ValueError, match="vocabulary"):
        bits_per_dim(logits, targets + 5)


# ----------------------------------------------------------------------------- completion and sampling


@pytest.mark.parametrize("make", [_tiny_gpt, lambda: PixelCNN(8, channels=8, n_layers=1, first_kernel=3)])
def test_completion_never_changes_the_kept_rows(make):
    torch.manual_seed(0)
    model = make()
    images = torch.randint(0, 8, (6, 4, 5), generator=_gen())
    for rows in range(0, 5):
        done = complete(model, images, rows, generator=_gen(rows))
        assert done.shape == images.shape
        assert torch.equal(done[:, :rows], images[:, :rows])
    assert torch.equal(complete(model, images, 4), images)
    assert torch.equal(images, torch.randint(0, 8, (6, 4, 5), generator=_gen()))  # input untouched
    a, b = complete(model, images, 2, generator=_gen(5)), complete(model, images, 2, generator=_gen(5))
    assert torch.equal(a, b)
    with pytest.raises(ValueError, match="rows_kept"):
        complete(model, images, 5)


def test_completion_samples_from_the_model_conditionals():
    model = _tiny_gpt()
    with torch.no_grad():
        model.gpt.lm_head.weight.mul_(40.0)  # make the conditionals far from uniform
    image = torch.randint(0, 8, (1, 4, 5), generator=_gen())
    n = 4000
    done = complete(model, image.expand(n, 4, 5), rows_kept=3, generator=_gen(1))  # (n, 4, 5)
    with torch.no_grad():
        probs = torch.softmax(model(to_sequence(image))[0, 15], dim=-1)  # pixel (3, 0)
    freq = torch.bincount(done[:, 3, 0], minlength=8).double() / n
    assert (freq - probs).abs().max() < 4 * math.sqrt(0.25 / n)
    greedy = complete(model, image, rows_kept=3, temperature=0)
    with torch.no_grad():
        logits = pixel_logits(model, greedy)[0]
    assert torch.equal(greedy[0, 3:], logits[3:].argmax(dim=-1))  # each pixel the argmax given the ones before


def test_completion_with_the_cache_draws_what_the_whole_prefix_draws():
    """complete() keeps a KV cache; the loop that runs the model on the whole prefix at every pixel,
    in float64 and with the same generator, draws the same pixels."""
    model = _tiny_gpt().double()
    images = torch.randint(0, 8, (5, 4, 5), generator=_gen())
    done = complete(model, images, rows_kept=1, generator=_gen(3))
    canvas, g = to_sequence(images).clone(), _gen(3)  # (5, 20)
    with torch.no_grad():
        for t in range(5, 20):
            probs = torch.softmax(model(canvas[:, : t + 1])[:, t], dim=-1)  # (5, 8)
            canvas[:, t] = torch.multinomial(probs, 1, generator=g)[:, 0]
    assert torch.equal(done, canvas.view(5, 4, 5))


def test_sample_images_shapes():
    model = _tiny_gpt()
    out = sample_images(model, 3, generator=_gen())
    assert out.shape == (3, 4, 5) and 0 <= out.min() and out.max() < 8
    assert sample_images(PixelCNN(8, 8, 1), 2, 3, 3, generator=_gen()).shape == (2, 3, 3)
    with pytest.raises(ValueError, match="H and W"):
        sample_images(PixelCNN(8, 8, 1), 2)


# ----------------------------------------------------------------------------- PixelCNN


def _sees(out_fn, H: int = 6, W: int = 6, C: int = 4) -> torch.Tensor:
    """(H, W, H, W) bool: does output (r, c) depend on input (r', c')? By gradients."""
    x = torch.randn(1, C, H, W, dtype=torch.float64, requires_grad=True)
    deps = torch.zeros(H, W, H, W, dtype=torch.bool)
    for r in range(H):
        for c in range(W):
            (grad,) = torch.autograd.grad(out_fn(x)[0, :, r, c].sum(), x)
            deps[r, c] = grad[0].abs().sum(dim=0) > 0
    return deps


def _future(H: int, W: int) -> torch.Tensor:
    """(H, W, H, W) bool: is input (r', c') at or after output (r, c) in raster order?"""
    order = torch.arange(H * W).view(H, W)
    return order[None, None] >= order[:, :, None, None]


def test_pixelcnn_mask_never_sees_itself_or_the_future():
    torch.manual_seed(0)
    layers = torch.nn.Sequential(
        MaskedConv2d(4, 4, 5, "A"), torch.nn.Tanh(),
        MaskedConv2d(4, 4, 3, "B"), torch.nn.Tanh(),
        MaskedConv2d(4, 4, 3, "B"),
    ).double()
    deps = _sees(layers)
    assert not (deps & _future(6, 6)).any()
    assert deps[3, 3, 2, 3] and deps[3, 3, 3, 2]  # the pixel above and the one to the left are seen
    assert not deps[5, 0, 0, 5]  # the blind spot: far up and to the right stays unseen
    leaky = MaskedConv2d(4, 4, 3, "B").double()
    assert _sees(leaky)[2, 2, 2, 2]  # type B alone sees its own pixel: why the first layer is type A


def test_pixelcnn_model_logits_depend_on_earlier_pixels_only():
    torch.manual_seed(0)
    model = PixelCNN(8, channels=8, n_layers=2, first_kernel=5).double()
    store = {}

    def keep(module, inputs, output):
        output.retain_grad()
        store["emb"] = output

    model.embed.register_forward_hook(keep)
    tokens = torch.randint(0, 8, (1, 5, 5), generator=_gen())
    future = _future(5, 5)
    for r in range(5):
        for c in range(5):
            model.zero_grad()
            logits = model(tokens)
            assert torch.isfinite(logits).all()
            logits[0, r, c].sum().backward()
            seen = store["emb"].grad[0].abs().sum(dim=-1) > 0  # (H, W)
            assert not (seen & future[r, c]).any(), (r, c)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_pixelcnn_mask_values_and_errors():
    a = pixelcnn_mask(5, "A")
    assert a.sum() == 12 and not a[2, 2] and pixelcnn_mask(5, "B")[2, 2]
    with pytest.raises(ValueError, match="odd"):
        pixelcnn_mask(4)
    with pytest.raises(ValueError, match="mask_type"):
        MaskedConv2d(1, 1, 3, "C")
    with pytest.raises(ValueError, match="vocabulary"):
        PixelCNN(4, 8, 1)(torch.full((1, 3, 3), 4))


# ----------------------------------------------------------------------------- probes


def test_layer_features_pool_the_residual_stream():
    model = _tiny_gpt()
    seq = torch.randint(0, 8, (7, 20), generator=_gen())
    with torch.no_grad():
        states = model.hidden_states(seq)
    assert len(states) == 3
    for layer in range(3):
        feats = layer_features(model, seq, layer, batch_size=3)
        assert feats.shape == (7, 16)
        assert torch.allclose(feats, states[layer].mean(dim=1), atol=1e-6)
    with pytest.raises(ValueError, match="layer"):
        layer_features(model, seq, 3)


def test_linear_probe_agrees_with_sklearn_on_digit_pixels():
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    images, labels = load_digits()
    x = images.flatten(1)  # (1797, 64)
    ours = linear_probe(x[:1200], labels[:1200], x[1200:], labels[1200:])
    scaler = StandardScaler().fit(x[:1200].numpy())
    sk = LogisticRegression(max_iter=2000).fit(scaler.transform(x[:1200].numpy()), labels[:1200].numpy())
    theirs = sk.score(scaler.transform(x[1200:].numpy()), labels[1200:].numpy())
    assert ours > 0.9 and abs(ours - theirs) < 0.03
    chance = linear_probe(torch.randn(600, 64, generator=_gen()), labels[:600], torch.randn(300, 64), labels[600:900])
    assert chance < 0.25
    with pytest.raises(ValueError, match="label"):
        linear_probe(x[:10], labels[:9], x[:5], labels[:5])


def test_ridge_probe_matches_least_squares_without_penalty():
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import StandardScaler

    g = _gen(5)
    labels = torch.randint(0, 4, (300,), generator=g)
    centres = torch.randn(4, 6, generator=g, dtype=torch.float64)
    feats = centres[labels] + torch.randn(300, 6, generator=g, dtype=torch.float64)
    ours = ridge_probe(feats[:200], labels[:200], feats[200:], labels[200:], l2=1e-10)
    scaler = StandardScaler().fit(feats[:200].numpy())
    reg = LinearRegression().fit(scaler.transform(feats[:200].numpy()), F.one_hot(labels[:200]).numpy())
    pred = reg.predict(scaler.transform(feats[200:].numpy())).argmax(1)
    assert ours == pytest.approx(float((pred == labels[200:].numpy()).mean()))
    assert 0.5 < ours < 1.0  # overlapping classes: better than chance, not perfect


@pytest.mark.parametrize("probe", [linear_probe, ridge_probe])
def test_probes_refuse_mismatched_inputs_by_name(probe):
    feats, labels = torch.randn(10, 3), torch.arange(10) % 2
    with pytest.raises(ValueError, match="same width D, got 3 and 4"):
        probe(feats, labels, torch.randn(5, 4), labels[:5])
    with pytest.raises(ValueError, match="one label"):
        probe(feats, labels[:9], feats[:5], labels[:5])
    with pytest.raises(ValueError, match="class ids >= 0"):
        probe(feats, labels - 1, feats[:5], labels[:5])
    with pytest.raises(TypeError, match="test_feats must be a floating-point tensor"):
        probe(feats, labels, labels[:5, None], labels[:5])


@pytest.mark.gpu
def test_imagegpt_on_cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    model = _tiny_gpt().cuda()
    images = torch.randint(0, 8, (4, 4, 5), device="cuda")
    done = complete(model, images, 2, generator=torch.Generator(device="cuda").manual_seed(0))
    assert done.device.type == "cuda" and torch.equal(done[:, :2], images[:, :2])
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = next_pixel_loss(model, images)
    loss.backward()
    assert torch.isfinite(loss)
    assert 2.5 < evaluate_bits_per_dim(model, images) < 3.5


def test_receptive_field_of_imagegpt_is_every_earlier_pixel_and_pixelcnn_has_a_blind_spot():
    torch.manual_seed(0)
    H = W = 7
    gpt = ImageGPT(ImageGPTConfig(vocab_size=8, height=H, width=W, n_layer=1, n_head=2, n_embd=16))
    earlier = torch.arange(H * W).view(H, W) < 3 * W + 3  # raster order before (3, 3)
    assert torch.equal(receptive_field(gpt, H, W, 3, 3), earlier)
    cnn = receptive_field(PixelCNN(8, channels=8, n_layers=3, first_kernel=3), H, W, 3, 3)
    assert not bool((cnn & ~earlier).any())  # never a later pixel
    assert bool(cnn[2, 2]) and not bool(cnn[2, 5])  # up-left seen, the blind spot up-right missed
    with pytest.raises(ValueError, match="r must be"):
        receptive_field(gpt, H, W, 7, 0)
