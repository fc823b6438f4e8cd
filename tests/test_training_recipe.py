"""Chapter 2's training recipe: the paper's schedule, Adam's update size, post-norm's gradients, label smoothing.

``attnbook.train.noam_lr`` against the formula worked by hand and PyTorch's ``LambdaLR``;
``attnbook.train.adam_update_rms`` against Adam's state read by hand and ``noise_update_rms`` against
Adam run on noise; ``attnbook.seq2seq.label_smoothed_cross_entropy`` against PyTorch's
``F.cross_entropy(..., label_smoothing=)``; ``attnbook.seq2seq.calibration`` against its definition;
``attnbook.gradient_flow.block_gradient_norms`` against what the page says it shows.
"""

import math

import pytest
import torch
import torch.nn.functional as F

from attnbook.gradient_flow import block_gradient_norms
from attnbook.seq2seq import calibration, label_smoothed_cross_entropy, seq2seq_loss
from attnbook.train import adam_update_rms, noam_lr, noise_update_rms
from attnbook.transformer import Transformer, TransformerConfig

pytestmark = pytest.mark.usefixtures("one_thread")


# ------------------------------------------------------------------ noam_lr


def test_noam_lr_by_hand():
    """d_model = 4, warmup = 4: the rate is 0.5 * min(1 / sqrt(s), s / 8), peaking at 1/4 on step 4."""
    assert noam_lr(0, 4, 4) == 0.0
    assert noam_lr(1, 4, 4) == pytest.approx(0.5 / 8)
    assert noam_lr(2, 4, 4) == pytest.approx(0.5 * 2 / 8)
    assert noam_lr(4, 4, 4) == pytest.approx(0.25)
    assert noam_lr(16, 4, 4) == pytest.approx(0.5 / 4)


@pytest.mark.parametrize("d_model, warmup", [(512, 4000), (64, 10), (96, 1)])
def test_noam_lr_rises_linearly_peaks_at_warmup_and_decays_as_one_over_sqrt(d_model, warmup):
    peak = (d_model * warmup) ** -0.5
    assert noam_lr(warmup, d_model, warmup) == pytest.approx(peak)
    for s in range(1, warmup):
        assert noam_lr(s, d_model, warmup) == pytest.approx(peak * s / warmup)
    for s in (warmup + 1, 4 * warmup, 100 * warmup):
        assert noam_lr(s, d_model, warmup) == pytest.approx(peak * math.sqrt(warmup / s))
    assert isinstance(noam_lr(3, d_model, warmup), float)


def test_noam_lr_of_a_tensor_is_the_rate_of_each_step():
    steps = torch.tensor([[0, 1, 7], [40, 41, 5000]])
    rates = noam_lr(steps, 64, 40)
    assert rates.shape == steps.shape and rates.dtype == torch.get_default_dtype()
    want = torch.tensor([[noam_lr(int(s), 64, 40) for s in row] for row in steps])
    assert torch.allclose(rates, want)
    assert noam_lr(torch.tensor(9, dtype=torch.int32), 64, 40).shape == ()
    assert torch.equal(steps, torch.tensor([[0, 1, 7], [40, 41, 5000]]))  # left unchanged


def test_noam_lr_drives_lambda_lr_from_step_zero():
    """LambdaLR asks for the factor of step 0 when it is built: 0.0, then one step on per scheduler.step()."""
    weight = torch.nn.Parameter(torch.zeros(1))
    adam = torch.optim.Adam([weight], lr=1.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(adam, lambda s: noam_lr(s, 16, 3))
    seen = []
    for _ in range(6):
        seen.append(adam.param_groups[0]["lr"])
        adam.step()
        schedule.step()
    assert seen == pytest.approx([noam_lr(s, 16, 3) for s in range(6)])


@pytest.mark.parametrize("args, error", [
    ((-1, 64, 10), ValueError), ((1.5, 64, 10), ValueError), ((1, 0, 10), ValueError), ((1, 64, 0), ValueError),
    ((torch.tensor([1.0]), 64, 10), TypeError), ((torch.tensor([3, -1]), 64, 10), ValueError),
])
def test_noam_lr_refuses_bad_arguments(args, error):
    with pytest.raises(error):
        noam_lr(*args)


# ------------------------------------------------------------------ Adam's update


def test_the_first_adam_update_is_the_full_learning_rate_for_every_weight():
    w = torch.nn.Parameter(torch.ones(4))
    adam = torch.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    w.grad = torch.tensor([1e-3, -7.0, 0.2, 40.0])
    adam.step()
    assert adam_update_rms(adam) == pytest.approx(1.0, abs=1e-4)


def test_adam_update_rms_reads_the_bias_corrected_averages():
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.zeros(50))
    adam = torch.optim.Adam([w], lr=1e-3, betas=(0.8, 0.95))
    grads = [torch.randn(50) + 0.3 for _ in range(5)]
    for g in grads:
        w.grad = g.clone()
        adam.step()
    m = sum(0.2 * 0.8 ** (4 - i) * g for i, g in enumerate(grads)) / (1 - 0.8**5)
    v = sum(0.05 * 0.95 ** (4 - i) * g**2 for i, g in enumerate(grads)) / (1 - 0.95**5)
    want = (m / (v.sqrt() + 1e-8)).square().mean().sqrt()
    assert adam_update_rms(adam) == pytest.approx(float(want), rel=1e-5)


def test_adam_update_rms_needs_an_adam_that_has_stepped():
    w = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(TypeError, match="Adam or AdamW"):
        adam_update_rms(torch.optim.SGD([w], lr=0.1))
    with pytest.raises(ValueError, match="no step yet"):
        adam_update_rms(torch.optim.Adam([w]))


def test_noise_update_rms_is_the_root_of_the_sum_of_the_squared_weights_and_what_adam_does_on_noise():
    b = 0.9
    for t in (1, 2, 5, 30):
        weights = [(1 - b) * b ** (t - i) / (1 - b**t) for i in range(1, t + 1)]
        assert noise_update_rms(t, b) == pytest.approx(math.sqrt(sum(x * x for x in weights)))
    assert noise_update_rms(10_000) == pytest.approx(math.sqrt(0.1 / 1.9))
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.zeros(20_000))
    adam = torch.optim.Adam([w], lr=1e-3)
    for t in range(1, 41):
        w.grad = torch.randn(20_000)
        adam.step()
        assert adam_update_rms(adam) == pytest.approx(noise_update_rms(t), rel=0.02)  # 20,000 weights' RMS


# ------------------------------------------------------------------ post-norm's gradients


def _dates(seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, 20, (32, 9), generator=g)
    tgt = torch.cat([torch.ones(32, 1, dtype=torch.long), torch.randint(3, 15, (32, 7), generator=g),
                     torch.full((32, 1), 2)], dim=1)
    return src, tgt


def test_block_gradient_norms_has_one_norm_per_block_and_ignores_earlier_gradients():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=20, tgt_vocab_size=15,
                                                 num_encoder_layers=2, num_decoder_layers=3))
    batch = _dates()
    first = block_gradient_norms(model, batch)
    again = block_gradient_norms(model, batch)  # .grad is cleared, not added to
    assert first["encoder"].shape == (2,) and first["decoder"].shape == (3,)
    assert torch.allclose(first["decoder"], again["decoder"]) and bool((first["decoder"] > 0).all())
    with pytest.raises(TypeError):
        block_gradient_norms(torch.nn.Linear(2, 2), batch)


def test_a_post_norm_decoder_gets_its_largest_gradients_at_the_output_and_a_pre_norm_one_does_not():
    """Xiong et al.'s picture, which section 6 of chapter 2 draws: for several seeds at initialisation."""
    for seed in range(3):
        last_over_first = {}
        for norm_first in (False, True):
            torch.manual_seed(seed)
            cfg = TransformerConfig(src_vocab_size=20, tgt_vocab_size=15, d_model=32, num_heads=2, d_ff=64,
                                    num_encoder_layers=2, num_decoder_layers=6, norm_first=norm_first)
            dec = block_gradient_norms(Transformer(cfg), _dates(seed))["decoder"]
            last_over_first[norm_first] = float(dec[-1] / dec[0])
        assert last_over_first[False] > 2 and last_over_first[True] < 1.5, (seed, last_over_first)


# ------------------------------------------------------------------ label smoothing


def test_label_smoothing_by_hand():
    """p = (1/2, 1/4, 1/4), target 0: (1 - eps) ln 2 + eps (ln 2 + ln 4 + ln 4) / 3."""
    logits = torch.tensor([[0.5, 0.25, 0.25]]).log()
    for eps in (0.0, 0.3, 1.0):
        got = label_smoothed_cross_entropy(logits, torch.tensor([0]), eps)
        assert float(got) == pytest.approx((1 - eps) * math.log(2) + eps * 5 / 3 * math.log(2), rel=1e-6)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.35, 1.0])
@pytest.mark.parametrize("ignore_index", [-100, 0, 4])
def test_label_smoothing_matches_pytorch(eps, ignore_index):
    torch.manual_seed(1)
    logits = (3 * torch.randn(3, 5, 7, dtype=torch.float64)).requires_grad_(True)  # (B, T, V)
    targets = torch.randint(0, 7, (3, 5))
    targets[0, 3:] = ignore_index  # padding
    targets[2, 1] = ignore_index
    mine = label_smoothed_cross_entropy(logits, targets, eps, ignore_index=ignore_index)
    theirs = F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=ignore_index, label_smoothing=eps)
    assert mine.dtype == torch.float64 and mine.shape == ()
    assert torch.allclose(mine, theirs)
    (g_mine,) = torch.autograd.grad(mine, logits)
    (g_theirs,) = torch.autograd.grad(theirs, logits)
    assert torch.allclose(g_mine, g_theirs)
    if ignore_index == -100:
        assert torch.equal(mine, label_smoothed_cross_entropy(logits, targets, eps))  # the default


def test_label_smoothing_of_nothing_scored_is_nan_as_in_pytorch():
    logits, targets = torch.randn(2, 3), torch.tensor([-100, -100])
    assert torch.isnan(label_smoothed_cross_entropy(logits, targets, 0.1))
    assert torch.isnan(F.cross_entropy(logits, targets, label_smoothing=0.1))


@pytest.mark.parametrize("args, error", [
    ((torch.zeros(2, 3, dtype=torch.long), torch.tensor([0, 1]), 0.1), TypeError),
    ((torch.zeros(2, 3), torch.tensor([0.0, 1.0]), 0.1), TypeError),
    ((torch.zeros(2, 3), torch.tensor([0, 1, 2]), 0.1), ValueError),
    ((torch.zeros(2, 3), torch.tensor([0, 3]), 0.1), ValueError),
    ((torch.zeros(2, 3), torch.tensor([0, 1]), 1.5), ValueError),
])
def test_label_smoothing_refuses_bad_arguments(args, error):
    with pytest.raises(error):
        label_smoothed_cross_entropy(*args)


def _translator_and_batch():
    torch.manual_seed(0)
    model = Transformer(TransformerConfig.preset("tiny", src_vocab_size=20, tgt_vocab_size=15))
    src, tgt = _dates()
    tgt[5:, 6:] = 0  # shorter targets: padding, which is not scored
    tgt[5:, 5] = 2
    return model, src, tgt


def test_seq2seq_loss_smooths_as_label_smoothed_cross_entropy_says():
    model, src, tgt = _translator_and_batch()
    logits = model(src, tgt[:, :-1])
    for eps in (0.0, 0.1):
        want = label_smoothed_cross_entropy(logits, tgt[:, 1:], eps, ignore_index=0)
        assert torch.allclose(seq2seq_loss(model, (src, tgt), label_smoothing=eps), want, atol=1e-6)
    assert torch.equal(seq2seq_loss(model, (src, tgt)), seq2seq_loss(model, (src, tgt), label_smoothing=0.0))
    with pytest.raises(ValueError, match="label_smoothing"):
        seq2seq_loss(model, (src, tgt), label_smoothing=-0.1)


def test_calibration_by_its_definition():
    model, src, tgt = _translator_and_batch()
    model.train()
    got = calibration(model, src, tgt, bins=4, batch_size=7)  # several batches
    assert model.training  # its mode restored
    with torch.no_grad():
        model.eval()
        p = model(src, tgt[:, :-1]).softmax(-1)
    y = tgt[:, 1:]
    keep = y != 0
    conf, guess = p.max(-1)
    conf, hit = conf[keep].double(), (guess == y)[keep].double()
    ece = 0.0
    for b in range(4):
        inside = (conf >= b / 4) & (conf < (b + 1) / 4) if b < 3 else conf >= 3 / 4
        if inside.any():
            ece += inside.double().mean() * (hit[inside].mean() - conf[inside].mean()).abs()
    with torch.no_grad():
        nll = float(seq2seq_loss(model, (src, tgt)))
    assert got.nll == pytest.approx(nll, rel=1e-5)
    assert got.accuracy == pytest.approx(float(hit.mean()))
    assert got.confidence == pytest.approx(float(conf.mean()), rel=1e-6)
    assert got.ece == pytest.approx(float(ece), abs=1e-6)
