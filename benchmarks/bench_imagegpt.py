"""ImageGPT on the 8x8 digits: bits per dimension at fixed steps, throughput and MFU.

Trains :class:`attnbook.imagegpt.ImageGPT` (preset ``digits-8x8``: 4 layers of
width 64, 4 heads) on the training split of ``load_digits()`` at 8 grey levels
(or, with ``--data colour``, on ``make_coloured_digits`` through the uniform
9-bit palette, preset ``colour-9bit``), with the recipe of chapter 5, section 3:
batches of 32 random images, AdamW at a constant 3e-3, gradient clipping at 1
(``--batch-size 64`` is the issue's calibration recipe).
Every ``--eval-every`` steps it measures bits per dimension on the validation
and test splits (``split_indices(1797, seed=0)``, 80/10/10); early stopping
keeps the checkpoint of the best validation score, and the test score of that
checkpoint is what is reported "within N steps".

The loop is :func:`attnbook.imagegpt.fit_early_stopped` on
:func:`attnbook.imagegpt.random_batches`, as on the page.
Throughput counts only the training steps (the clock stops for evaluations):
tokens/s is ``steps x batch x 64 / seconds``, the achieved FLOP/s is
``GPT.estimate_flops_per_token(64) x tokens/s``, and MFU divides it by the
best fp32 matmul FLOP/s measured in the same run (2048 x 2048; bf16 8192 x 8192
on CUDA, where training runs under bf16 autocast) by :func:`attnbook.measure.matmul_peak`,
as in ``bench_gpt.py``.

Targets (issue 11): test bits/dim <= 1.60 within 300 steps and <= 1.45 within
600 steps, against the per-position histogram printed beside them.

Measured on the course machine (2 cores, x86_64, one thread, ``nice -n 10``,
while other jobs kept the load near 8), with the benchmark's earlier loop, whose AdamW
also decayed biases and norms: test 1.400 bits/dim within 300 steps and 1.340
within 600 (the page's numbers then: the run is seeded), against
1.740 for the histogram; 6.7 k tokens/s, 9.3 GFLOP/s, 33 % of the 27.9 GFLOP/s
fp32 matmul peak measured in the same (busy) run. With ``--steps 1500`` the
validation score was still improving at step 1500 (test 1.282): this recipe
does not overfit within that budget. On a busy machine the peak (best of two
measurements, before and after training) is itself unreliable; one such run
reported an MFU of 99 %, so compare MFU only on a quiet machine. The default run writes
``benchmarks/results/imagegpt_digits.csv`` (not in git); its first line records
the command, the machine (:func:`attnbook.measure.machine_header`) and these figures.

Run::

    .venv/bin/python benchmarks/bench_imagegpt.py                   # 600 steps, 1 thread, CPU
    .venv/bin/python benchmarks/bench_imagegpt.py --steps 1500      # see the overfitting
    .venv/bin/python benchmarks/bench_imagegpt.py --data colour --steps 300
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch

from attnbook.data import load_digits, make_coloured_digits, split_indices
from attnbook.imagegpt import (
    ImageGPT,
    ImageGPTConfig,
    evaluate_bits_per_dim,
    fit_early_stopped,
    grey_levels,
    histogram_bits,
    next_pixel_loss,
    quantize_9bit,
    random_batches,
)
from attnbook.measure import machine_header, matmul_peak, sync  # the same peak as chapter 4's benchmark
from attnbook.runtime import autocast, get_device, seed_everything

RESULTS = Path(__file__).parent / "results"


def load_tokens(data: str) -> tuple[torch.Tensor, torch.Tensor, str]:
    """Token images (1797, 8, 8) in load_digits' order, their labels, and the preset that fits."""
    images, labels = load_digits(normalize=False)
    if data == "digits":
        return grey_levels(images, levels=8, max_value=16), labels, "digits-8x8"
    coloured = make_coloured_digits(len(images), seed=0)
    order = torch.argsort(coloured.index)  # back to load_digits' order, so the split is the same
    return quantize_9bit(coloured.images[order]), labels, "colour-9bit"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", choices=("digits", "colour"), default="digits")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--device", default=None, help="cpu / cuda (default: attnbook.runtime.get_device())")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", default=None, help="write the evaluations here (default: results/imagegpt_<data>.csv)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse_args(argv)
    device = get_device(args.device)
    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    tokens, _, preset = load_tokens(args.data)
    train_idx, val_idx, test_idx = (torch.tensor(i) for i in split_indices(len(tokens), seed=0))
    train, val, test = tokens[train_idx], tokens[val_idx], tokens[test_idx]
    model = ImageGPT(ImageGPTConfig.preset(preset)).to(device)
    T = model.config.n_positions
    flops_per_token = model.gpt.estimate_flops_per_token(T)
    made = machine_header(device, notes=["bf16 autocast"] if device.type == "cuda" else (),
                          command=["python", "benchmarks/bench_imagegpt.py", *(argv or [])])
    peak, peak_what = matmul_peak(device)  # measured again after training; the higher one counts
    histogram = histogram_bits(train, test, model.config.vocab_size)
    print(made)
    print(f"data {args.data}: {len(train)} / {len(val)} / {len(test)} images of {T} tokens; "
          f"model {model.num_params():,} parameters, {flops_per_token / 1e6:.2f} MFLOP per token")
    print(f"per-position histogram: {histogram:.3f} bits/dim on test; uniform {math.log2(model.config.vocab_size):.3f}")

    evaluating, began = [0.0], []  # seconds spent in evaluations (left out), fit's first reading of the clock

    def train_clock() -> float:
        now = time.perf_counter() - evaluating[0]
        if not began:
            began.append(now)
        return now

    def scores(m: torch.nn.Module) -> dict[str, float]:
        sync(device)  # the training steps queued so far count as training
        start = time.perf_counter()
        with autocast(device):
            record = {"seconds": train_clock() - began[0],
                      "val_bpd": evaluate_bits_per_dim(m, val), "test_bpd": evaluate_bits_per_dim(m, test)}
        evaluating[0] += time.perf_counter() - start
        return record

    batches = random_batches(train, args.batch_size, generator=torch.Generator().manual_seed(args.seed))
    history = fit_early_stopped(model, next_pixel_loss, batches, steps=args.steps, lr=args.lr,
                                eval_every=args.eval_every, scores=scores, monitor="val_bpd", device=device,
                                progress=True, clock=train_clock)
    train_seconds, evals = history.seconds, history.evals
    best_val = history.best("val_bpd", mode="min")["val_bpd"]
    for e in evals:
        train_bits = history.train_loss[int(e["step"]) - 1] / math.log(2)
        print(f"  step {e['step']:5.0f}  {e['seconds']:6.1f} s  train {train_bits:.3f}  "
              f"val {e['val_bpd']:.3f}  test {e['test_bpd']:.3f} bits/dim")

    peak = max(peak, matmul_peak(device)[0])  # on a busy machine one measurement can be low
    tok_per_s = args.steps * args.batch_size * T / train_seconds
    achieved = flops_per_token * tok_per_s
    kind = "bf16" if device.type == "cuda" else "fp32"
    print()
    for limit in sorted({300, 600, args.steps}):
        within = [e for e in evals if e["step"] <= limit]
        if within and limit <= args.steps:
            e = min(within, key=lambda r: r["val_bpd"])
            print(f"within {limit:5d} steps: best validation at step {e['step']}, test {e['test_bpd']:.3f} bits/dim")
    print(f"training {train_seconds:.1f} s, {tok_per_s:,.0f} tokens/s, {achieved / 1e9:.2f} GFLOP/s; "
          f"{kind} matmul peak {peak / 1e9:.1f} GFLOP/s ({peak_what}, same run): MFU {100 * achieved / peak:.3g}%")

    out = Path(args.csv) if args.csv else RESULTS / f"imagegpt_{args.data}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w") as f:
        f.write(f"{made} | {tok_per_s:.0f} tokens/s, MFU {achieved / peak:.3g}, histogram {histogram:.4f}\n")
        f.write("step,seconds,val_bpd,test_bpd\n")
        for e in evals:
            f.write(f"{e['step']},{e['seconds']:.2f},{e['val_bpd']:.4f},{e['test_bpd']:.4f}\n")
    print(f"wrote {out}")
    return {"tokens_per_second": tok_per_s, "mfu": achieved / peak, "best_val_bpd": best_val}


if __name__ == "__main__":
    main(sys.argv[1:])
