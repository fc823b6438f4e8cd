"""Chapter 6's measurements: ViT vs CNN on digits and MNIST-5k, the data sweep, MAE and a tiny DETR.

Every run trains for a fixed number of steps (so a busy machine changes the
seconds, not the result) with one CPU thread and ``torch.manual_seed``. Both
the process's CPU seconds (what the run costs on an idle core) and the wall
seconds are reported. Each part writes ``benchmarks/results/vit_<part>.csv``,
whose first line is a comment with the command and the machine; chapter 6's
pages plot these files.

* ``digits``: ViT ``cpu-digits`` (patch 4, shifts of +-1 pixel) and
  :class:`~attnbook.vit.cnn.SmallCNN` on scikit-learn's 8x8 digits
  (1,437 train / 360 test). Target: ViT >= 98 %.
* ``mnist``: ViT ``cpu-mnist`` (patch 7) and the CNN on MNIST-5k (4,000 /
  1,000), with shifts of +-2 pixels and without; the ViT takes 2,400 batches
  of 128, the CNN 600 of 64. Target: ViT >= 97 % with shifts within 120 CPU
  seconds. Each ViT on all the training data is then read with
  attention rollout (``vit_rollout.csv``): the share of the class token's
  rolled-out mass on the test digits' ink patches (mean pixel > 0.25) against
  their share of the patches, also without the identity, with the heads fused
  by their maximum, and for the last layer alone. Target: >= 1.3 times the share.
  The ViT trained without shifts is read the same way, for comparison.
* ``sweep``: the same with shifts on 30 % and 10 % of the training set.
* ``patch4``: the rollout measurement of ``mnist`` on a finer grid, a ViT with
  4x4 patches (N = 49) trained for 1,000 batches of 128 with shifts.
* ``seeds``: the ``mnist`` ViT with shifts trained with seeds 0, 1 and 2: the
  spread of its test accuracy and of the rollout measurement between seeds.
* ``longer``: the same ViT trained twice as long (4,800 batches, seeds 0, 1
  and 2) and four times as long (9,600, seed 0): whether the rollout
  measurement grows with training.
* ``recipe``: the ``seeds`` ViT (seeds 0 and 1) with batches of 64 for 2,900
  steps, without label smoothing, and both: whether the recipe moves it.
* ``init``: the ``seeds`` ViT (seeds 0, 1 and 2) with its patch embedding left
  at PyTorch's default initialisation, as timm leaves its Conv2d, instead of
  the truncated normal (std 0.02): whether the initialisation moves it.
* ``registers``: the ``seeds`` ViT with four register tokens
  (``reg_tokens=4``, Darcet et al. 2024), which give attention a place to put
  weight that is not a patch, and without, for seeds 0 to 5: whether they
  move it. The rollout rows add the share of the class token's mass that
  comes from the registers' inputs (left out of the share on ink, like the
  class token's own).
* ``positions``: the recipe of the ``vit-mnist`` checkpoint (:mod:`attnbook.pretrained.vit_mnist`:
  4x4 patches, a 7x7 grid, shifts of +-3, 4,000 batches of 128) with weight decay 0, 0.05 and 0.5 on
  the position embeddings: test accuracy, the positions' same-row-or-column contrast (target >= 0.25)
  and rollout on ink, every 1/6 of the run.
* ``mae``: an MAE (patch 2, 75 % masked) pre-trained on the digits' training
  images (pixels standardised); masked-patch MSE against predicting the mean
  patch; a logistic-regression probe (:func:`attnbook.probe.linear_probe`) on
  its features against a random encoder; fine-tuning from it against training from scratch at equal steps (150 and
  300), each at learning rates 1e-3 and 2e-3 (the metric names the rate).
  Targets: MSE <= 0.55, probe >= 85 %, fine-tuning >= 4 points over scratch.
* ``detr``: :class:`~attnbook.vit.detr.TinyDETR` on 2,000 square scenes,
  tested on 200: matched-box IoU, class accuracy, "no object" accuracy.

Run::

    nice -n 10 .venv/bin/python benchmarks/bench_vit.py digits mnist sweep patch4 seeds longer recipe init \\
        registers mae detr

``--device cuda`` trains on the GPU under bf16 autocast (:func:`attnbook.runtime.autocast`) and
writes ``vit_<part>_cuda.csv`` instead; every evaluation (accuracy, rollout, MAE's loss and probe,
DETR's IoU) stays in fp32, the models moved back to the CPU where the CPU code path needs them.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import torch

from attnbook.data import load_digits, load_mnist5k, make_square_scenes
from attnbook.measure import machine_header
from attnbook.probe import linear_probe
from attnbook.train import fit
from attnbook.vit import MAE, ViT, ViTConfig, attention_maps, attention_rollout, class_token_share, patchify
from attnbook.vit.classify import shifted_batches, train_classifier
from attnbook.vit.cnn import SmallCNN
from attnbook.vit.detr import DETRConfig, TinyDETR, matched_box_iou, train_detr
from attnbook.vit.mae import mae_loss

RESULTS = Path(__file__).parent / "results"
FIELDS = ["part", "model", "data_fraction", "max_shift", "steps", "cpu_seconds", "wall_seconds", "metric", "value"]


DEVICE = torch.device("cpu")  # where models train: main()'s --device


class Rows:
    """Rows of one part, each written to ``results/vit_<part>.csv`` (``_cuda.csv`` on the GPU) when measured."""

    def __init__(self, part: str) -> None:
        RESULTS.mkdir(exist_ok=True)
        self.path = RESULTS / f"vit_{part}{'_cuda' if DEVICE.type == 'cuda' else ''}.csv"
        with open(self.path, "w", newline="") as f:
            f.write(machine_header(DEVICE, notes=["bf16 autocast"] if DEVICE.type == "cuda" else ()) + "\n")
            csv.DictWriter(f, FIELDS).writeheader()

    def add(self, row: dict[str, object]) -> None:
        print(row, flush=True)
        with open(self.path, "a", newline="") as f:
            csv.DictWriter(f, FIELDS).writerow(row)


class Clock:
    """CPU seconds of this (one-thread) process, which a busy machine does not inflate, and wall seconds."""

    def __init__(self) -> None:
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def fields(self) -> dict[str, float]:
        if DEVICE.type == "cuda":
            torch.cuda.synchronize(DEVICE)  # the GPU's queued work belongs to this run
        return {"cpu_seconds": round(time.process_time() - self.cpu, 1),
                "wall_seconds": round(time.perf_counter() - self.wall, 1)}


def digits_split() -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """The chapter's split of the 8x8 digits: 1,437 train / 360 test, images (N, 1, 8, 8)."""
    images, labels = load_digits()
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
    x, y = images[order, None], labels[order]  # (N, 1, 8, 8)
    return (x[:1437], y[:1437]), (x[1437:], y[1437:])


def mnist_split() -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]:
    """MNIST-5k as 4,000 train / 1,000 test, images (N, 1, 28, 28) in 0..1."""
    images, labels = load_mnist5k(seed=0)
    x = images[:, None].float() / 255  # (N, 1, 28, 28)
    return (x[:4000], labels[:4000]), (x[4000:], labels[4000:])


def classify(part: str, name: str, model: torch.nn.Module, train, test, *, steps: int, max_shift: int,
             fraction: float = 1.0, lr: float = 2e-3, batch_size: int = 64, label_smoothing: float = 0.1,
             metric: str = "test_accuracy") -> dict[str, object]:
    n = int(round(fraction * len(train[1])))
    clock = Clock()  # the one evaluation, at the end, is counted in the CPU seconds
    history = train_classifier(model, (train[0][:n], train[1][:n]), test, steps=steps, lr=lr, max_shift=max_shift,
                               batch_size=batch_size, label_smoothing=label_smoothing, eval_every=steps,
                               device=DEVICE)
    return dict(part=part, model=name, data_fraction=fraction, max_shift=max_shift, steps=steps,
                **clock.fields(), metric=metric, value=round(history.last["accuracy"], 4))


def rollout_on_ink(model: ViT, images: torch.Tensor, threshold: float = 0.25) -> dict[str, float]:
    """Share of the class token's mass on ink patches (mean pixel > ``threshold``), and the ink share."""
    model.eval()
    device = next(model.parameters()).device
    maps = [a.cpu() for a in attention_maps(model, images.to(device))]  # depth x (B, nh, 1+R+N, 1+R+N), fp32
    ink = patchify(images, model.config.patch_size).mean(-1) > threshold  # (B, N)
    share = ink.float().mean().item()
    out = {"ink_patch_share": share}
    rollout = attention_rollout(maps)  # (B, T, T)
    for name, rolled in (("rollout", rollout),
                         ("rollout_no_identity", attention_rollout(maps, add_residual=False)),
                         ("rollout_max_heads", attention_rollout(maps, head_fusion="max")),
                         ("last_layer", maps[-1].mean(1))):
        on_ink = class_token_share(rolled, ink).mean().item()
        out[f"{name}_mass_on_ink"], out[f"{name}_ratio"] = on_ink, on_ink / share
    if R := model.config.reg_tokens:  # registers at 1..R: their share of the class token's other mass
        row = rollout[:, 0, 1:]  # (B, R + N)
        out["rollout_mass_on_registers"] = (row[:, :R].sum(-1) / row.sum(-1)).mean().item()
    return out


def add_rollout(rows: Rows, run: dict[str, object], model: ViT, images: torch.Tensor) -> None:
    """One row per metric of :func:`rollout_on_ink`, beside the fields of the ``run`` that trained ``model``."""
    for metric, value in rollout_on_ink(model, images).items():
        rows.add({**run, "metric": metric, "value": round(value, 4)})


def part_digits(rows: Rows) -> None:
    train, test = digits_split()
    torch.manual_seed(0)
    rows.add(classify("digits", "vit", ViT(ViTConfig.preset("cpu-digits")), train, test, steps=4000, max_shift=1))
    torch.manual_seed(0)
    rows.add(classify("digits", "cnn", SmallCNN(), train, test, steps=1000, max_shift=1))


def part_mnist(rows: Rows, runs: tuple[tuple[float, int], ...] = ((1.0, 2), (1.0, 0))) -> None:
    """ViT and CNN on MNIST-5k for each (share of the training set, max_shift) in ``runs``."""
    train, test = mnist_split()
    rollout_rows = Rows("rollout") if any(fraction == 1.0 for fraction, _ in runs) else None
    for fraction, shift in runs:
        torch.manual_seed(0)
        vit = ViT(ViTConfig.preset("cpu-mnist"))
        rows.add(row := classify("mnist", "vit", vit, train, test, steps=2400, batch_size=128, max_shift=shift,
                                 fraction=fraction))
        if fraction == 1.0:  # with shifts and without
            add_rollout(rollout_rows, {**row, "part": "rollout"}, vit, test[0])
        torch.manual_seed(0)
        rows.add(classify("mnist", "cnn", SmallCNN(), train, test, steps=600, max_shift=shift, fraction=fraction))


def standardise(x: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    return (x - ref.mean()) / ref.std()


def features(encoder: ViT, images: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return encoder.forward_features(images).mean(dim=1)  # mean over 1 + N tokens -> (B, D)


def probe(encoder: ViT, train, test) -> float:
    """:func:`attnbook.probe.linear_probe` on the mean-pooled features, as chapter 6's page does."""
    return linear_probe(features(encoder, train[0]), train[1], features(encoder, test[0]), test[1])


def part_mae(rows: Rows, steps: int = 3000, finetune_steps: tuple[int, ...] = (150, 300)) -> None:
    (xtr, ytr), (xte, yte) = digits_split()
    xtr, xte = standardise(xtr, xtr), standardise(xte, xtr)
    config = ViTConfig.preset("cpu-digits", patch_size=2)
    torch.manual_seed(0)
    mae = MAE(config, decoder_embed_dim=64, decoder_depth=1)
    g = torch.Generator().manual_seed(0)
    clock = Clock()
    fit(mae, lambda m, b: m(b[0])[0], shifted_batches(xtr, ytr, batch_size=64, generator=g), steps=steps,
        lr=2e-3, weight_decay=0.05, schedule="cosine", warmup_steps=100, device=DEVICE, progress=False)
    seconds = clock.fields()
    mae.cpu().eval()  # evaluated on the CPU, with a CPU generator for the masking
    with torch.no_grad():
        loss, pred, mask = mae(xte, generator=torch.Generator().manual_seed(1))
    target = patchify(xte, 2)  # (B, 16, 4)
    mean_patch = patchify(xtr, 2).mean(dim=0)  # (16, 4): the average training patch at each position
    baseline = mae_loss(mean_patch.expand_as(target), target, mask)
    torch.manual_seed(0)
    random_encoder = ViT(config.replace(num_classes=0))
    for m, v in (("masked_mse", loss), ("mean_patch_mse", baseline),
                 ("probe_accuracy", probe(mae.encoder, (xtr, ytr), (xte, yte))),
                 ("random_probe_accuracy", probe(random_encoder, (xtr, ytr), (xte, yte)))):
        rows.add(dict(part="mae", model="mae", data_fraction=1.0, max_shift=0, steps=steps, **seconds,
                      metric=m, value=round(float(v), 4)))
    for ft_steps in finetune_steps:
        for lr in (1e-3, 2e-3):
            for name, encoder in (("finetuned", mae.encoder), ("scratch", random_encoder)):
                torch.manual_seed(0)  # the same head for both
                model = ViT(config.replace(num_classes=10))
                model.load_state_dict({**encoder.state_dict(), **{k: v for k, v in model.state_dict().items()
                                                                  if k.startswith("head")}})
                rows.add(classify("mae", name, model, (xtr, ytr), (xte, yte), steps=ft_steps, max_shift=0, lr=lr,
                                  metric=f"test_accuracy_lr{lr:g}"))


def part_detr(rows: Rows, steps: int = 1000) -> None:
    train, test = make_square_scenes(2000, seed=0), make_square_scenes(200, seed=1)
    config = DETRConfig()
    torch.manual_seed(0)
    model = TinyDETR(config)
    clock = Clock()
    train_detr(model, train, steps=steps, generator=torch.Generator().manual_seed(0), device=DEVICE)
    seconds = clock.fields()
    model.cpu().eval()
    with torch.no_grad():
        scores = matched_box_iou(model(test.images), test.labels, test.boxes, config)
    for k, v in scores.items():
        rows.add(dict(part="detr", model="tiny-detr", data_fraction=1.0, max_shift=0, steps=steps, **seconds,
                      metric=k, value=round(v, 4)))


def part_patch4(rows: Rows, steps: int = 1000) -> None:
    """Rollout on a finer grid: the MNIST ViT with 4x4 patches (N = 49), shifts of +-2, batches of 128."""
    train, test = mnist_split()
    torch.manual_seed(0)
    vit = ViT(ViTConfig.preset("cpu-mnist", patch_size=4))
    rows.add(row := classify("patch4", "vit-p4", vit, train, test, steps=steps, batch_size=128, max_shift=2))
    add_rollout(rows, row, vit, test[0])


def mnist_vit_run(rows: Rows, part: str, seed: int, steps: int, name: str = "vit", batch_size: int = 128,
                  label_smoothing: float = 0.1, default_patch_init: bool = False, reg_tokens: int = 0) -> None:
    """The ``mnist`` ViT (shifts of +-2) from ``seed``, for ``steps``: accuracy and rollout rows."""
    train, test = mnist_split()
    torch.manual_seed(seed)
    vit = ViT(ViTConfig.preset("cpu-mnist", reg_tokens=reg_tokens))
    if default_patch_init:
        vit.patch_embed.proj.reset_parameters()  # nn.Linear's default: Kaiming-uniform, as a Conv2d's
    rows.add(row := classify(part, f"{name}-seed{seed}", vit, train, test, steps=steps, batch_size=batch_size,
                             label_smoothing=label_smoothing, max_shift=2))
    add_rollout(rows, row, vit, test[0])


def part_seeds(rows: Rows, seeds: tuple[int, ...] = (0, 1, 2)) -> None:
    """The ``mnist`` ViT with shifts once per seed: how far accuracy and rollout move between seeds."""
    for seed in seeds:
        mnist_vit_run(rows, "seeds", seed, steps=2400)


def part_longer(rows: Rows, runs: tuple[tuple[int, int], ...] = ((4800, 0), (4800, 1), (4800, 2), (9600, 0))) -> None:
    """The ``seeds`` ViT trained longer, for each (steps, seed) in ``runs``: does rollout sharpen with training?"""
    for steps, seed in runs:
        mnist_vit_run(rows, "longer", seed, steps=steps)


def part_recipe(rows: Rows, seeds: tuple[int, ...] = (0, 1)) -> None:
    """The ``seeds`` ViT with another recipe: batches of 64 (for 2,900 steps), no label smoothing, or both."""
    for name, batch_size, steps, smoothing in (("vit-b64", 64, 2900, 0.1), ("vit-ls0", 128, 2400, 0.0),
                                               ("vit-b64-ls0", 64, 2900, 0.0)):
        for seed in seeds:
            mnist_vit_run(rows, "recipe", seed, steps, name=name, batch_size=batch_size, label_smoothing=smoothing)


def part_init(rows: Rows, seeds: tuple[int, ...] = (0, 1, 2)) -> None:
    """The ``seeds`` ViT with the patch embedding at PyTorch's default initialisation, as in timm."""
    for seed in seeds:
        mnist_vit_run(rows, "init", seed, steps=2400, name="vit-convinit", default_patch_init=True)


def part_registers(rows: Rows, seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5)) -> None:
    """The ``seeds`` ViT without registers and with four after the class token, seed by seed."""
    for seed in seeds:
        for name, reg_tokens in (("vit", 0), ("vit-reg4", 4)):
            mnist_vit_run(rows, "registers", seed, steps=2400, name=name, reg_tokens=reg_tokens)


def part_positions(rows: Rows, pos_weight_decays: tuple[float, ...] = (0.0, 0.05, 0.5), steps: int = 4000) -> None:
    """The ``vit-mnist`` recipe with each weight decay on the positions: does the grid show sooner?"""
    from attnbook.pretrained import Settings, vit_mnist

    for pos_wd in pos_weight_decays:
        clock = Clock()
        trained = vit_mnist.train(Settings(device=DEVICE), steps=steps, pos_weight_decay=pos_wd)
        seconds = clock.fields()
        for record in trained.notes["trajectory"]:
            for metric in ("test_accuracy", "pos_contrast", "rollout_ink_ratio"):
                rows.add(dict(part="positions", model=f"vit-p4-poswd{pos_wd:g}-step{record['step']}",
                              data_fraction=1.0, max_shift=trained.notes["training"]["max_shift"], steps=steps,
                              **seconds, metric=metric, value=record[metric]))


def part_sweep(rows: Rows) -> None:
    """The data sweep's smaller shares (the 100 % runs are in ``mnist``)."""
    part_mnist(rows, runs=((0.3, 2), (0.1, 2)))


PARTS = {"digits": part_digits, "mnist": part_mnist, "sweep": part_sweep, "patch4": part_patch4, "seeds": part_seeds,
         "longer": part_longer, "recipe": part_recipe, "init": part_init, "registers": part_registers,
         "positions": part_positions, "mae": part_mae, "detr": part_detr}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("parts", nargs="+", choices=sorted(PARTS))
    parser.add_argument("--mae-steps", type=int, default=3000, help="MAE pre-training steps (default 3000)")
    parser.add_argument("--detr-steps", type=int, default=1000, help="DETR training steps (default 1000)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="train on the CPU (default) or on the GPU under bf16 autocast")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available here")
    global DEVICE
    DEVICE = torch.device(args.device)
    torch.set_num_threads(1)
    steps = {"mae": {"steps": args.mae_steps}, "detr": {"steps": args.detr_steps}}
    for part in args.parts:
        PARTS[part](Rows(part), **steps.get(part, {}))


if __name__ == "__main__":
    sys.exit(main())
