"""Chapter 6's baseline and detector: SmallCNN, the classification recipe, TinyDETR and its set loss."""

import itertools

import pytest
import torch

from attnbook.data import make_square_scenes
from attnbook.train import fit
from attnbook.vit import ViT, ViTConfig, box_cxcywh_to_xyxy, generalized_box_iou
from attnbook.vit.classify import evaluate_accuracy, random_shift, shifted_batches, train_classifier
from attnbook.vit.cnn import SmallCNN
from attnbook.vit.detr import DETRConfig, TinyDETR, match, matched_box_iou, set_loss


def n_params(model):
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- SmallCNN


def test_cnn_shapes_and_a_parameter_count_like_the_digits_vit():
    cnn = SmallCNN(in_chans=1, num_classes=10)
    vit = ViT(ViTConfig.preset("cpu-digits"))
    assert 0.3 < n_params(cnn) / n_params(vit) < 1.0  # the same order: 66k against 136k
    x = torch.randn(3, 1, 28, 28, requires_grad=True)
    assert cnn.forward_features(x).shape == (3, 64, 14, 14)
    cnn(x).sum().backward()
    assert torch.isfinite(x.grad).all() and all(torch.isfinite(p.grad).all() for p in cnn.parameters())


def test_cnn_rejects_wrong_channels_and_bad_sizes():
    with pytest.raises(ValueError, match=r"x must have shape \(B, 3, H, W\)"):
        SmallCNN(in_chans=3)(torch.randn(2, 1, 8, 8))
    with pytest.raises(ValueError, match="num_classes"):
        SmallCNN(num_classes=0)
    with pytest.raises(ValueError, match="widths"):
        SmallCNN(widths=(8,))


# ----------------------------------------------------------------------------- the recipe


def test_random_shift_translates_each_image_by_its_own_offset():
    images = torch.zeros(64, 2, 9, 9)
    images[:, :, 4, 4] = torch.tensor([1.0, 2.0])  # one dot in the centre, on both channels
    out = random_shift(images, 2, torch.Generator().manual_seed(0))
    assert out.shape == images.shape and torch.equal(out.sum((2, 3)), images.sum((2, 3)))  # nothing lost
    ys, xs = (out[:, 0] == 1).nonzero()[:, 1:].T  # where each dot went
    assert ys.min() == 2 and ys.max() == 6 and xs.min() == 2 and xs.max() == 6  # all offsets -2..2 occur
    assert torch.equal(out[:, 1], 2 * out[:, 0])  # both channels moved together
    assert len(set(zip(ys.tolist(), xs.tolist(), strict=True))) > 15  # offsets differ between images


def test_random_shift_fills_the_border_with_zeros_and_checks_arguments():
    out = random_shift(torch.ones(32, 1, 5, 5), 1, torch.Generator().manual_seed(0))
    sums = out.sum((1, 2, 3))  # 25 unmoved, 20 moved along one axis, 16 along both
    assert set(sums.tolist()) == {16.0, 20.0, 25.0}
    assert torch.equal(random_shift(torch.ones(2, 1, 5, 5), 0), torch.ones(2, 1, 5, 5))
    with pytest.raises(ValueError, match="max_shift"):
        random_shift(torch.ones(2, 1, 5, 5), -1)
    with pytest.raises(ValueError, match=r"\(B, C, H, W\)"):
        random_shift(torch.ones(5, 5), 1)
    with pytest.raises(ValueError, match="same length"):
        shifted_batches(torch.ones(3, 1, 4, 4), torch.zeros(2))


def test_train_classifier_learns_bright_versus_dark_and_reports_evaluate_accuracy():
    torch.manual_seed(0)
    y = torch.randint(0, 2, (200,))
    x = 0.3 * torch.rand(200, 1, 6, 6) + 0.5 * y[:, None, None, None]  # class 1 is brighter
    model = SmallCNN(num_classes=2, widths=(4, 8))  # tiny: the task is easy
    assert evaluate_accuracy(model, x, y) < 0.9
    history = train_classifier(model, (x[:150], y[:150]), (x[150:], y[150:]), steps=60, lr=1e-2, max_shift=1)
    assert history.last["accuracy"] == evaluate_accuracy(model, x[150:], y[150:]) == 1.0
    assert [r["step"] for r in history.evals][-1] == 60


# ----------------------------------------------------------------------------- TinyDETR


@pytest.fixture(scope="module")
def scenes():
    return make_square_scenes(8, seed=0)


def test_detr_shapes_boxes_in_range_and_finite_gradients(scenes):
    torch.manual_seed(0)
    config = DETRConfig()
    model = TinyDETR(config)
    out = model(scenes.images)
    assert out["pred_logits"].shape == (8, config.num_queries, config.num_classes + 1)
    assert out["pred_boxes"].shape == (8, config.num_queries, 4)
    assert ((out["pred_boxes"] > 0) & (out["pred_boxes"] < 1)).all()
    loss, parts = set_loss(out, scenes.labels, scenes.boxes, config)
    loss.backward()
    assert set(parts) == {"class", "l1", "giou"} and torch.isfinite(loss)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters() if p.requires_grad)
    with pytest.raises(ValueError, match=r"images must have shape \(B, 3, 32, 32\)"):
        model(torch.rand(2, 1, 32, 32))


def test_match_is_the_cheapest_assignment_by_brute_force(scenes):
    torch.manual_seed(1)
    config = DETRConfig(num_queries=5)
    out = TinyDETR(config)(scenes.images)
    from attnbook.vit import matching_cost

    for b, (rows, cols) in enumerate(match(out, scenes.labels, scenes.boxes, config)):
        cost = matching_cost(out["pred_logits"][b], out["pred_boxes"][b], scenes.labels[b], scenes.boxes[b],
                             w_class=1, w_l1=5, w_giou=2).detach()  # (Q, M)
        M = cost.shape[1]
        assert sorted(cols.tolist()) == list(range(M)) and len(set(rows.tolist())) == M
        best = min(sum(cost[q, m] for m, q in enumerate(p)) for p in itertools.permutations(range(5), M))
        assert torch.isclose(cost[rows, cols].sum(), torch.as_tensor(best), atol=1e-5)


def perfect_outputs(scenes, config):
    """Queries 0..M-1 say the right class and box; the rest say "no object" far away."""
    B, Q, K = len(scenes.boxes), config.num_queries, config.num_classes
    logits = torch.full((B, Q, K + 1), -20.0)
    logits[:, :, K] = 20.0
    boxes = torch.full((B, Q, 4), 0.05)
    for b, (lab, box) in enumerate(zip(scenes.labels, scenes.boxes, strict=True)):
        logits[b, : len(lab)] = -20.0
        logits[b, torch.arange(len(lab)), lab] = 20.0
        boxes[b, : len(box)] = box
    return {"pred_logits": logits, "pred_boxes": boxes}


def test_set_loss_and_scores_of_a_perfect_prediction(scenes):
    config = DETRConfig()
    out = perfect_outputs(scenes, config)
    out["pred_logits"].requires_grad_(True)
    loss, parts = set_loss(out, scenes.labels, scenes.boxes, config)
    assert parts["class"] < 1e-6 and parts["l1"] < 1e-6 and parts["giou"] < 1e-6
    assert matched_box_iou(out, scenes.labels, scenes.boxes, config) == pytest.approx(
        {"matched_iou": 1.0, "class_accuracy": 1.0, "empty_accuracy": 1.0})
    # moving every box costs L1 and GIoU; the GIoU term is 1 - GIoU of the matched pairs
    shifted = {**out, "pred_boxes": out["pred_boxes"] + torch.tensor([0.02, 0.0, 0.0, 0.0])}
    _, parts = set_loss(shifted, scenes.labels, scenes.boxes, config)
    a = torch.cat(scenes.boxes)
    expected_giou = (1 - generalized_box_iou(box_cxcywh_to_xyxy(a + torch.tensor([0.02, 0, 0, 0])),
                                             box_cxcywh_to_xyxy(a)).diagonal()).mean()
    assert parts["l1"] == pytest.approx(0.02, abs=1e-6)
    assert parts["giou"] == pytest.approx(expected_giou.item(), rel=1e-4)


def test_detr_overfits_a_few_small_scenes():
    small = make_square_scenes(6, seed=2, img_size=16, max_side=6)
    torch.manual_seed(0)
    config = DETRConfig(img_size=16, num_queries=4, d_model=32, d_ff=64, backbone_widths=(8, 16))
    model = TinyDETR(config)
    batch = (small.images, small.labels, small.boxes)
    before = matched_box_iou(model(small.images), small.labels, small.boxes, config)["matched_iou"]
    history = fit(model, lambda m, b: set_loss(m(b[0]), b[1], b[2], config)[0], [batch], steps=120, lr=3e-3,
                  device="cpu", progress=False)
    model.eval()
    after = matched_box_iou(model(small.images), small.labels, small.boxes, config)["matched_iou"]
    assert history.train_loss[-1] < 0.5 * history.train_loss[0] and after > before + 0.2
