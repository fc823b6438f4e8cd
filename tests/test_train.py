"""Tests of attnbook.train: the shared training loop, its history and its helpers."""

from __future__ import annotations

import contextlib
import io
import math
from collections import namedtuple

import pytest
import torch
import torch.nn.functional as F

from attnbook.runtime import seed_everything
from attnbook.train import History, Snapshots, accuracy, evaluate, fit, lr_factor, to_device


def _blobs(n: int = 128, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Two Gaussian blobs in 2-D: a classification problem a tiny MLP solves in a few steps."""
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randn(n, 2, generator=g) * 0.5 + (y[:, None] * 2.0 - 1.0)
    return x, y


def _mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _ce(model: torch.nn.Module, batch) -> torch.Tensor:
    x, y = batch
    return F.cross_entropy(model(x), y)


def _quiet(**kwargs):
    return dict(device="cpu", progress=False, **kwargs)


# ----------------------------------------------------------------------------- learning


def test_fit_learns_a_small_classification_problem_in_60_steps():
    seed_everything(0)
    x, y = _blobs()
    model = _mlp()
    h = fit(model, _ce, [(x[:64], y[:64]), (x[64:], y[64:])], steps=60, lr=0.02,
            eval_fn=lambda m: {"acc": accuracy(m(x), y)}, **_quiet())
    assert h.train_loss[-1] < 0.5 * h.train_loss[0]
    assert h.last["acc"] > 0.95
    assert h.stopped_by == "steps"


def test_fit_regression_with_a_callable_source_and_cosine_schedule():
    seed_everything(0)
    w_true = torch.tensor([1.0, -2.0, 0.5])

    def batch():
        x = torch.randn(32, 3)
        return {"x": x, "y": x @ w_true}

    model = torch.nn.Linear(3, 1)
    mse = lambda m, b: F.mse_loss(m(b["x"]).squeeze(-1), b["y"])  # noqa: E731
    h = fit(model, mse, batch, steps=150, lr=0.05, schedule="cosine", warmup_steps=10, **_quiet())
    assert sum(h.train_loss[-10:]) / 10 < 1e-2 < h.train_loss[0]
    expected = [0.05 * lr_factor(s, steps=150, warmup_steps=10, schedule="cosine") for s in range(150)]
    assert h.lr == pytest.approx(expected)
    assert h.lr[0] == pytest.approx(0.005) and h.lr[-1] == pytest.approx(0.005)  # 1/10 warmup, 10 % floor


def test_lr_factor_shapes():
    assert [lr_factor(s, steps=5) for s in range(5)] == [1.0] * 5
    assert [lr_factor(s, steps=5, warmup_steps=4) for s in range(5)] == [0.25, 0.5, 0.75, 1.0, 1.0]
    cosine = [lr_factor(s, steps=50, schedule="cosine") for s in range(50)]
    assert cosine[0] == 1.0 and cosine[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(cosine, cosine[1:], strict=False))
    with pytest.raises(ValueError, match="schedule"):
        lr_factor(0, steps=5, schedule="linear")


def test_custom_optimizer_is_used_and_scheduled():
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = _blobs(16)
    h = fit(model, _ce, [(x, y)], steps=4, optimizer=opt, warmup_steps=4, lr=123.0, **_quiet())
    assert h.lr == pytest.approx([0.025, 0.05, 0.075, 0.1])  # lr= is ignored when optimizer is given
    assert opt.param_groups[0]["lr"] == 0.1  # restored, so a second fit schedules the same way
    h2 = fit(model, _ce, [(x, y)], steps=4, optimizer=opt, schedule="cosine", **_quiet())
    assert h2.lr[0] == pytest.approx(0.1) and h2.lr[-1] == pytest.approx(0.01)


def test_frozen_parameters_stay_frozen():
    model = _mlp()
    model[0].requires_grad_(False)
    before = model[0].weight.clone()
    x, y = _blobs(32)
    fit(model, _ce, [(x, y)], steps=5, **_quiet())
    assert torch.equal(model[0].weight, before)


def test_fit_decays_weight_matrices_but_not_biases_norms_positions_or_special_tokens():
    from attnbook.positional import LearnedPositions

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.pos = LearnedPositions(3, 2)
            self.cls_token = torch.nn.Parameter(torch.ones(1, 1, 2))
            self.norm, self.out = torch.nn.LayerNorm(2), torch.nn.Linear(2, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.norm(self.pos(x) + self.cls_token))

    model = Tiny()
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    def zero_loss(m: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        return 0.0 * m(x).sum()  # no gradient: only weight decay moves a weight

    fit(model, zero_loss, [torch.zeros(1, 3, 2)], steps=3, lr=0.1, weight_decay=0.5, **_quiet())
    moved = {n for n, p in model.named_parameters() if not torch.equal(p, before[n])}
    assert moved == {"out.weight"}


# ----------------------------------------------------------------------------- evaluation


@pytest.mark.parametrize(
    "steps, eval_every, expected",
    [(25, 10, [10, 20, 25]), (20, 10, [10, 20]), (30, None, list(range(3, 31, 3))), (5, None, [1, 2, 3, 4, 5])],
)
def test_eval_called_at_the_right_steps(steps, eval_every, expected):
    calls = []

    def eval_fn(m):
        calls.append((m.training, torch.is_grad_enabled()))
        return {"n": len(calls)}

    x, y = _blobs(8)
    h = fit(_mlp(), _ce, [(x, y)], steps=steps, eval_fn=eval_fn, eval_every=eval_every, **_quiet())
    assert [r["step"] for r in h.evals] == expected
    assert calls == [(False, False)] * len(expected)  # eval mode, no gradients
    assert [r["n"] for r in h.evals] == [float(i) for i in range(1, len(expected) + 1)]


def test_model_mode_is_restored_and_training_happens_in_train_mode():
    modes = []
    x, y = _blobs(8)
    model = _mlp().eval()
    fit(model, lambda m, b: (modes.append(m.training), _ce(m, b))[1], [(x, y)], steps=3,
        eval_fn=lambda m: {"a": 0.0}, eval_every=1, **_quiet())
    assert modes == [True, True, True]
    assert model.training is False


def test_eval_metrics_may_be_tensors_and_are_stored_as_floats():
    x, y = _blobs(8)
    h = fit(_mlp(), _ce, [(x, y)], steps=2, eval_fn=lambda m: {"loss": _ce(m, (x, y))}, **_quiet())
    assert all(isinstance(r["loss"], float) for r in h.evals)


# ----------------------------------------------------------------------------- time budget


class FakeClock:
    """Seconds that pass only when a step runs: ``loss_fn`` advances the clock by ``per_step``."""

    def __init__(self, per_step: float) -> None:
        self.now, self.per_step = 0.0, per_step

    def __call__(self) -> float:
        return self.now

    def loss(self, m, b) -> torch.Tensor:
        self.now += self.per_step
        return _ce(m, b)


def test_max_seconds_stops_training():
    clock = FakeClock(per_step=0.25)
    x, y = _blobs(8)
    h = fit(_mlp(), clock.loss, [(x, y)], steps=10_000, max_seconds=2.5, clock=clock,
            eval_fn=lambda m: {"a": 1.0}, eval_every=1_000, **_quiet())
    assert h.stopped_by == "time"
    assert len(h.steps) == 10 and h.seconds == 2.5  # stops after the step that reaches 2.5 s
    assert [r["step"] for r in h.evals] == [10]  # evaluated once, where it stopped
    lr = [0.001 * lr_factor(s, steps=10_000) for s in range(10)]
    assert h.lr == pytest.approx(lr)  # steps given: the schedule follows the steps, time only stops


@pytest.mark.parametrize("schedule", ["cosine", "constant"])
def test_a_time_budget_drives_the_schedule_when_steps_is_none(schedule):
    clock = FakeClock(per_step=0.5)
    x, y = _blobs(8)
    h = fit(_mlp(), clock.loss, [(x, y)], steps=None, max_seconds=10.0, warmup_seconds=1.0, lr=0.1,
            schedule=schedule, clock=clock, eval_fn=lambda m: {"a": 1.0}, **_quiet())
    assert h.stopped_by == "time" and len(h.steps) == 20
    assert [r["step"] for r in h.evals] == [20]  # without eval_every: only at the end
    # step k starts at 0.5 (k - 1) seconds: tick 50 (k - 1) of the budget's 1000, warmup 100 ticks
    expected = [0.1 * lr_factor(50 * k, steps=1000, warmup_steps=100, schedule=schedule) for k in range(20)]
    assert h.lr == pytest.approx(expected)
    assert h.lr[1] == pytest.approx(0.1 * 51 / 100)  # warming up
    if schedule == "cosine":
        assert h.lr[2] == pytest.approx(0.1) and h.lr[-1] < 0.02  # decays towards 10 % of the peak


def test_time_budget_settings_are_checked():
    x, y = _blobs(8)
    cases = [
        (dict(steps=None), "steps must be a positive int, or None with a max_seconds budget"),
        (dict(steps=None, max_seconds=5, warmup_steps=3), "warmup_steps needs steps"),
        (dict(steps=10, max_seconds=5, warmup_seconds=1), "warmup_seconds needs steps=None"),
        (dict(steps=None, max_seconds=5, warmup_seconds=5), "less than max_seconds"),
        (dict(steps=None, max_seconds=5, warmup_seconds=-1), "warmup_seconds must be a number >= 0"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            fit(_mlp(), _ce, [(x, y)], **_quiet(**kwargs))
    with pytest.raises(TypeError, match="clock must be a callable"):
        fit(_mlp(), _ce, [(x, y)], steps=2, clock=3.0, **_quiet())


def test_snapshots_keep_copies_of_the_weights_at_each_evaluation():
    clock = FakeClock(per_step=1.0)
    x, y = _blobs(8)
    model = _mlp()
    snaps = Snapshots(clock=clock)
    h = fit(model, clock.loss, [(x, y)], steps=6, lr=0.05, clock=clock, eval_fn=snaps, eval_every=2, **_quiet())
    assert [(s.seconds, h.evals[s.index]["step"]) for s in snaps.taken] == [(2.0, 2), (4.0, 4), (6.0, 6)]
    assert h.evals == [{"step": 2}, {"step": 4}, {"step": 6}]  # no metric of its own
    first, last = snaps.taken[0].state, snaps.taken[-1].state
    assert all(torch.equal(last[k], v) for k, v in model.state_dict().items())
    assert not torch.equal(first["0.weight"], last["0.weight"])  # copies, not references


def test_snapshots_at_given_times_keep_the_latest_copy_before_each():
    clock = FakeClock(per_step=1.0)
    x, y = _blobs(8)
    snaps = Snapshots(at=[2.5, 3.0, 100.0], clock=clock)
    h = fit(_mlp(), clock.loss, [(x, y)], steps=5, clock=clock, eval_fn=snaps, eval_every=1, **_quiet())
    assert snaps.taken == []
    latest = {t: (s.seconds, h.evals[s.index]["step"]) for t, s in snaps.latest.items()}
    assert latest == {2.5: (2.0, 2), 3.0: (3.0, 3), 100.0: (5.0, 5)}
    with pytest.raises(ValueError, match="at must be a positive number"):
        Snapshots(at=[0])


# ----------------------------------------------------------------------------- history


def test_history_contents():
    x, y = _blobs(40)
    batches = [(x[:16], y[:16]), (x[16:40], y[16:40])]  # 16 and 24 examples
    h = fit(_mlp(), _ce, batches, steps=5, lr=0.01, eval_fn=lambda m: {"acc": accuracy(m(x), y)},
            eval_every=2, **_quiet())
    assert h.steps == [1, 2, 3, 4, 5]
    assert len(h.train_loss) == len(h.lr) == 5 and all(math.isfinite(v) for v in h.train_loss)
    assert h.lr == [0.01] * 5
    assert h.examples == 16 + 24 + 16 + 24 + 16
    assert h.seconds > 0 and h.examples_per_second == pytest.approx(h.examples / h.seconds)
    assert h.last["step"] == 5 and h.last["train_loss"] == h.train_loss[-1] and "acc" in h.last
    steps, accs = h.metric("acc")
    assert steps == [2, 4, 5] and len(accs) == 3
    assert h.metric("train_loss") == (h.steps, h.train_loss)
    assert h.best("acc")["acc"] == max(accs)
    assert h.best("train_loss", mode="min")["train_loss"] == min(h.train_loss)
    assert "History(step=5" in repr(h)


def test_history_helpers_reject_unknown_names():
    h = History(steps=[1], train_loss=[1.0], evals=[{"step": 1, "acc": 0.5}])
    with pytest.raises(KeyError, match="'acc'"):
        h.metric("accuracy")
    with pytest.raises(ValueError, match="mode"):
        h.best("acc", mode="largest")
    assert History().last == {} and History().examples_per_second == 0.0


# ----------------------------------------------------------------------------- batches and devices


def test_batches_reach_loss_fn_on_the_device():
    seen = []

    def loss_fn(m, batch):
        seen.extend([batch["x"].device, batch["pair"][0].device, batch["pair"][1]])
        return _ce(m, (batch["x"], batch["y"]))

    x, y = _blobs(8)
    batch = {"x": x, "y": y, "pair": (torch.zeros(2), "not a tensor")}
    fit(_mlp(), loss_fn, [batch], steps=2, **_quiet())
    assert seen == [torch.device("cpu"), torch.device("cpu"), "not a tensor"] * 2


def test_to_device_keeps_structure():
    Pair = namedtuple("Pair", "a b")
    batch = {"p": Pair(torch.ones(2), [torch.zeros(3), 7]), "s": "text"}
    moved = to_device(batch, "meta")
    assert isinstance(moved["p"], Pair) and isinstance(moved["p"].b, list)
    assert moved["p"].a.device.type == "meta" and moved["p"].b[0].device.type == "meta"
    assert moved["p"].b[1] == 7 and moved["s"] == "text"


def test_a_list_of_batches_restarts_each_epoch():
    order = []
    batches = [(torch.full((1, 2), float(i)), torch.tensor([i % 2])) for i in range(3)]

    def loss_fn(m, b):
        order.append(int(b[0][0, 0]))
        return _ce(m, b)

    fit(_mlp(), loss_fn, batches, steps=7, **_quiet())
    assert order == [0, 1, 2, 0, 1, 2, 0]


class _Seen(Exception):
    """Raised by a loss_fn once it has looked at where the model and the batch are."""


def test_model_and_batches_are_moved_to_the_device():
    """A real move, away from the CPU where they are made: to CUDA when there is one, else to the
    ``meta`` device (tensors with shapes and no data, where no loss can be computed, so the
    loss_fn stops fit with an exception once it has looked)."""
    device = "cuda" if torch.cuda.is_available() else "meta"
    seen = {}

    def loss_fn(m, b):
        seen["model"] = {p.device.type for p in m.parameters()}
        seen["batch"] = {b[0].device.type, b[1].device.type}
        if device == "meta":
            raise _Seen
        return _ce(m, b)

    model = _mlp()
    x, y = _blobs(8)
    assert x.device.type == next(model.parameters()).device.type == "cpu"
    with pytest.raises(_Seen) if device == "meta" else contextlib.nullcontext():
        fit(model, loss_fn, [(x, y)], steps=1, device=device, progress=False)
    assert seen == {"model": {device}, "batch": {device}}
    assert next(model.parameters()).device.type == device  # the model stays where fit put it


@pytest.mark.gpu
def test_fit_on_cuda_with_bf16_autocast():
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    seed_everything(0)
    x, y = _blobs()
    dtypes, devices = [], []

    def loss_fn(m, b):
        logits = m(b[0])
        dtypes.append(logits.dtype)
        devices.append(b[0].device.type)
        return F.cross_entropy(logits, b[1])

    model = _mlp()
    h = fit(model, loss_fn, [(x, y)], steps=60, lr=0.02, device="cuda",
            eval_fn=lambda m: {"acc": accuracy(m(x.cuda()), y.cuda())}, progress=False)
    assert set(devices) == {"cuda"} and set(dtypes) == {torch.bfloat16}
    assert next(model.parameters()).dtype == torch.float32  # weights stay fp32 under autocast
    assert h.last["acc"] > 0.95


# ----------------------------------------------------------------------------- progress bar


def test_progress_bar_writes_to_stdout_not_stderr(capfd):
    x, y = _blobs(8)
    fit(_mlp(), _ce, [(x, y)], steps=5, device="cpu", progress=True, eval_fn=lambda m: {"a": 1.0})
    out, err = capfd.readouterr()
    assert err == ""
    assert "train" in out and "5/5" in out


def test_progress_can_be_silenced_or_redirected(capfd):
    x, y = _blobs(8)
    fit(_mlp(), _ce, [(x, y)], steps=3, device="cpu", progress=False)
    assert capfd.readouterr() == ("", "")
    stream = io.StringIO()
    fit(_mlp(), _ce, [(x, y)], steps=3, device="cpu", progress_file=stream)
    assert "3/3" in stream.getvalue()
    assert capfd.readouterr() == ("", "")


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("steps", [0, -1, 1.5, True, None])
def test_bad_steps(steps):
    x, y = _blobs(8)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        fit(_mlp(), _ce, [(x, y)], steps=steps, **_quiet())


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(lr=0), "lr must be a positive number"),
        (dict(max_seconds=-1), "max_seconds"),
        (dict(grad_clip=0), "grad_clip"),
        (dict(eval_every=0, eval_fn=lambda m: {}), "eval_every"),
        (dict(eval_every=5), "eval_fn is None"),
        (dict(schedule="linear"), "schedule"),
        (dict(warmup_steps=-2), "warmup_steps"),
    ],
)
def test_bad_settings(kwargs, match):
    x, y = _blobs(8)
    with pytest.raises(ValueError, match=match):
        fit(_mlp(), _ce, [(x, y)], steps=3, **_quiet(**kwargs))


def test_bad_objects():
    x, y = _blobs(8)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        fit(lambda t: t, _ce, [(x, y)], steps=1, **_quiet())
    with pytest.raises(TypeError, match="loss_fn must be callable"):
        fit(_mlp(), "mse", [(x, y)], steps=1, **_quiet())
    with pytest.raises(TypeError, match="optimizer"):
        fit(_mlp(), _ce, [(x, y)], steps=1, optimizer="adam", **_quiet())
    frozen = _mlp().requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        fit(frozen, _ce, [(x, y)], steps=1, **_quiet())


@pytest.mark.parametrize(
    "source, error, match",
    [
        ("one batch", TypeError, "single batch"),
        ("tensor", TypeError, "single batch"),
        ("dict", TypeError, "single batch"),
        ("int", TypeError, "iterable of batches"),
        ("empty", ValueError, "empty"),
        ("short generator", ValueError, "ran out before step 3"),
        ("generator function", TypeError, "generator"),
    ],
)
def test_bad_batch_sources(source, error, match):
    x, y = _blobs(8)

    def gen():
        yield (x, y)
        yield (x, y)

    sources = {
        "one batch": (x, y),
        "tensor": x,
        "dict": {"x": x, "y": y},
        "int": 3,
        "empty": [],
        "short generator": gen(),
        "generator function": gen,
    }
    with pytest.raises(error, match=match):
        fit(_mlp(), _ce, sources[source], steps=5, **_quiet())


def test_non_scalar_loss_names_the_step():
    x, y = _blobs(8)
    bad = lambda m, b: F.cross_entropy(m(b[0]), b[1], reduction="none")  # noqa: E731
    with pytest.raises(ValueError, match=r"scalar loss, got shape \(8,\) at step 1"):
        fit(_mlp(), bad, [(x, y)], steps=3, **_quiet())


def test_nan_loss_stops_at_its_step_before_touching_the_weights():
    calls = []

    def loss_fn(m, b):
        calls.append(1)
        loss = _ce(m, b)
        return loss * float("nan") if len(calls) == 3 else loss

    model = _mlp()
    x, y = _blobs(8)
    with pytest.raises(ValueError, match="nan at step 3"):
        fit(model, loss_fn, [(x, y)], steps=10, **_quiet())
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_loss_must_be_a_tensor_that_requires_grad():
    x, y = _blobs(8)
    with pytest.raises(TypeError, match="must return a torch.Tensor, got float at step 1"):
        fit(_mlp(), lambda m, b: 1.0, [(x, y)], steps=2, **_quiet())
    with pytest.raises(ValueError, match="does not require grad"):
        fit(_mlp(), lambda m, b: _ce(m, b).detach(), [(x, y)], steps=2, **_quiet())


def test_bad_eval_results_name_the_step():
    x, y = _blobs(8)
    with pytest.raises(TypeError, match="dict of metric name -> number, got float at step 2"):
        fit(_mlp(), _ce, [(x, y)], steps=4, eval_fn=lambda m: 0.5, eval_every=2, **_quiet())
    with pytest.raises(TypeError, match="str for 'acc' at step 1"):
        fit(_mlp(), _ce, [(x, y)], steps=1, eval_fn=lambda m: {"acc": "high"}, **_quiet())
    with pytest.raises(ValueError, match="'step'"):
        fit(_mlp(), _ce, [(x, y)], steps=1, eval_fn=lambda m: {"step": 1}, **_quiet())


# ----------------------------------------------------------------------------- evaluate / accuracy


def test_evaluate_weights_by_batch_size_and_restores_mode():
    model = _mlp().train()
    modes = []

    def metric(m, b):
        modes.append((m.training, torch.is_grad_enabled()))
        return b[0].sum(dim=1).mean()

    batches = [(torch.ones(3, 2), None), (torch.zeros(1, 2), None)]  # means 2.0 and 0.0
    assert evaluate(model, metric, batches) == pytest.approx(1.5)
    assert modes == [(False, False)] * 2 and model.training
    with pytest.raises(ValueError, match="empty"):
        evaluate(model, metric, [])
    with pytest.raises(TypeError, match="single batch"):
        evaluate(model, metric, (torch.ones(3, 2), torch.ones(3)))
    with pytest.raises(ValueError, match="scalar"):
        evaluate(model, lambda m, b: b[0], batches)


def test_accuracy():
    logits = torch.tensor([[[2.0, 0.0], [0.0, 1.0]], [[1.0, 3.0], [5.0, 1.0]]])  # (B=2, T=2, C=2)
    targets = torch.tensor([[0, 0], [1, -1]])
    assert accuracy(logits, targets, ignore_index=-1) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="shape"):
        accuracy(logits, targets[0])
    with pytest.raises(TypeError, match="integer class ids"):
        accuracy(logits, targets.float())
    with pytest.raises(ValueError, match="ignore_index"):
        accuracy(logits, torch.full((2, 2), -1), ignore_index=-1)


def test_snapshots_curve_scores_copies_and_leaves_the_model_alone():
    model = torch.nn.Linear(2, 1)
    snaps = Snapshots()
    h = fit(model, lambda m, b: m(b).pow(2).mean(), [torch.ones(4, 2)], steps=5, eval_fn=snaps, eval_every=1,
            device="cpu", progress=False)
    final = model.weight.detach().clone()
    curve = snaps.curve(model, h, lambda m: float(m.weight.detach().sum()), every=2)
    assert [step for step, _, _ in curve] == [2, 4, 5]
    assert curve[-1][2] == pytest.approx(float(final.sum()))
    assert curve[0][1] <= curve[1][1] <= curve[2][1]  # seconds grow
    assert torch.equal(model.weight, final)
    with pytest.raises(ValueError, match="no copies were taken"):
        Snapshots().curve(model, h, lambda m: 0.0)
