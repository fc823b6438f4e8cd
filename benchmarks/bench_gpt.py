"""Character-level GPT on Shakespeare: validation loss within a fixed training time, and MFU.

Trains :class:`attnbook.gpt.GPT` on the first 90 % of ``load_shakespeare()``
(one token per character) for ``--seconds`` of wall-clock time and reports
the loss on the last 10 %, the training throughput, the achieved FLOP/s
(``GPT.estimate_flops_per_token`` x tokens/s) and that as a fraction of the
matrix-multiply peak measured in the same run
(:func:`attnbook.measure.matmul_peak`).

* CPU (the course's target, 2 cores): fp32, preset ``cpu-fast``; target
  validation loss <= 1.90 within 40 s of training. The peak is the best
  FLOP/s of a 2048 x 2048 fp32 matmul with the same thread count.
* CUDA (same script, unchanged): bf16 autocast, fused attention, preset
  ``gpu``; the peak is that of an 8192 x 8192 bf16 matmul, so the fraction is
  the model FLOP utilisation (MFU) against what this GPU really reaches.

The learning rate follows :func:`attnbook.train.lr_factor` (linear warmup,
cosine decay to 10 %) as a function of the *elapsed fraction of the time
budget* rather than of a step count. That is why this loop is written out
instead of calling :func:`attnbook.train.fit`: ``fit`` schedules by steps and
cuts the run short when ``max_seconds`` runs out, so on a busy machine the
decay -- worth a good part of the final loss -- would never happen. Here the
run always ends with the rate decayed, however many steps fit into the budget.
Evaluation happens after the clock stops.

Measured on the course machine (2 cores of an AMD EPYC, AVX-512, nothing else
running), three runs: validation loss 1.805 / 1.803 / 1.807 after 40.0 s
(1260-1354 steps), 32-35 k tokens/s, 85-91 GFLOP/s = 53-57 % of a 160 GFLOP/s
fp32 matmul peak. For comparison, nanoGPT's CPU recipe (4 layers, batch 12,
lr 1e-3, 2000 steps) reaches 1.90 in 77 s on the same machine and data; its
steps take as long as ours (~38 ms for 4 layers), so the gain is the recipe:
half the depth, a 6x higher peak learning rate decayed over the budget,
and batches of 16, which buy ~1300 steps in 40 s.

Run::

    .venv/bin/python benchmarks/bench_gpt.py                 # 40 s, on the free CPUs (at most 2)
    .venv/bin/python benchmarks/bench_gpt.py --threads 2     # two threads, busy machine or not
    .venv/bin/python benchmarks/bench_gpt.py --n-layer 4 --batch-size 12 --lr 1e-3   # other recipes
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from attnbook.data import load_shakespeare
from attnbook.gpt import GPT, GPTConfig, random_batch, stream_loss
from attnbook.measure import machine_header, matmul_peak, sync
from attnbook.runtime import autocast, free_cpus, get_device, seed_everything, set_threads
from attnbook.tokenizers import CharTokenizer
from attnbook.train import lr_factor

# What each device trains by default; every field can be overridden on the command line.
RECIPES: dict[str, dict[str, object]] = {
    "cpu": dict(preset="cpu-fast", batch_size=16, lr=6e-3, warmup=0.03, weight_decay=0.1),
    "cuda": dict(preset="gpu", batch_size=64, lr=1e-3, warmup=0.05, weight_decay=0.1, dropout=0.0),
}


def encode_text(text: str) -> tuple[torch.Tensor, int]:
    """Character ids of the whole text (int64) and the vocabulary size."""
    tok = CharTokenizer.from_text(text)
    return torch.tensor(tok.encode(text), dtype=torch.long), tok.vocab_size


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=40.0, help="training time budget (default 40)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: the free CPUs, at most 2)")
    p.add_argument("--device", default=None, help="cpu / cuda (default: attnbook.runtime.get_device())")
    p.add_argument("--preset", default=None, help="GPTConfig preset (default: cpu-fast on CPU, gpu on CUDA)")
    for name in ("n_layer", "n_head", "n_embd", "block_size", "n_inner"):
        p.add_argument("--" + name.replace("_", "-"), type=int, default=None)
    p.add_argument("--dropout", type=float, default=None)
    p.add_argument("--bias", type=int, choices=(0, 1), default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--lr", type=float, default=None, help="peak learning rate")
    p.add_argument("--warmup", type=float, default=None, help="warmup, as a fraction of the budget")
    p.add_argument("--weight-decay", type=float, default=None)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad-clip", type=float, default=1.0)
    p.add_argument("--eval-tokens", type=int, default=None, help="validation tokens to use (default: all)")
    p.add_argument("--seed", type=int, default=1337)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, float]:
    args = parse_args(argv)
    device = get_device(args.device)
    recipe = dict(RECIPES["cuda" if device.type == "cuda" else "cpu"])
    for key in ("preset", "batch_size", "lr", "warmup", "weight_decay", "dropout"):
        if getattr(args, key) is not None:
            recipe[key] = getattr(args, key)
    if args.threads:
        torch.set_num_threads(args.threads)
    elif device.type == "cpu":
        set_threads(most=2)  # two where two cores are free: one on a core another process shares
    seed_everything(args.seed)

    # -- data: 90/10 contiguous split of the character stream ---------------------------
    t = time.perf_counter()
    ids, vocab_size = encode_text(load_shakespeare())
    n_train = int(0.9 * len(ids))
    train_ids, val_ids = ids[:n_train], ids[n_train:]
    if device.type == "cuda":
        train_ids = train_ids.to(device)  # windows are gathered on the GPU
    data_seconds = time.perf_counter() - t

    # -- model and optimizer ------------------------------------------------------------
    names = ("n_layer", "n_head", "n_embd", "block_size", "n_inner", "dropout")
    overrides = {k: getattr(args, k) for k in names if getattr(args, k) is not None}
    if "dropout" in recipe:
        overrides.setdefault("dropout", recipe["dropout"])
    if args.bias is not None:
        overrides["bias"] = bool(args.bias)
    config = GPTConfig.preset(str(recipe["preset"]), vocab_size=vocab_size, **overrides)
    model = GPT(config).to(device)
    extra = {"fused": True} if device.type == "cuda" else {}
    optimizer = model.configure_optimizers(
        float(recipe["lr"]), weight_decay=float(recipe["weight_decay"]), betas=(0.9, args.beta2), **extra
    )
    base_lrs = [g["lr"] for g in optimizer.param_groups]
    B, T = int(recipe["batch_size"]), config.block_size
    flops_per_token = model.estimate_flops_per_token()
    made = machine_header(device, notes=["bf16 autocast"] if device.type == "cuda" else ())
    peak, peak_what = matmul_peak(device)

    print(made)
    print(f"data: {len(ids):,} characters, vocab {vocab_size}, train {len(train_ids):,} / "
          f"val {len(val_ids):,} ({data_seconds:.1f} s to load and encode)")
    print(f"model: {config}")
    print(f"       {model.num_params():,} parameters, {flops_per_token / 1e6:.2f} MFLOP per training token")
    print(f"recipe: {recipe}, budget {args.seconds:g} s")
    if device.type == "cpu" and args.threads and args.threads > (free := free_cpus()):
        print(f"warning: {free} of the CPUs are free and --threads asks for {args.threads}: every op waits for "
              "its slowest thread, so training can slow many times over; measure on a quiet machine.")

    # -- training: a time budget, lr scheduled on the elapsed fraction of it --------------
    gen = torch.Generator().manual_seed(args.seed)
    warmup = int(1000 * float(recipe["warmup"]))  # in thousandths of the budget
    steps, last_print = 0, 0.0
    model.train()
    sync(device)
    start = time.perf_counter()
    while True:
        elapsed = time.perf_counter() - start
        if elapsed >= args.seconds:
            break
        progress = int(1000 * elapsed / args.seconds)  # 0 .. 999
        factor = lr_factor(progress, steps=1000, warmup_steps=warmup, schedule="cosine")
        for group, base in zip(optimizer.param_groups, base_lrs, strict=True):
            group["lr"] = base * factor
        x, y = random_batch(train_ids, B, T, generator=gen, device=device)
        with autocast(device):
            _, loss = model(x, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if args.grad_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        steps += 1
        if elapsed - last_print >= 5.0 or steps == 1:
            print(f"  {elapsed:5.1f} s  step {steps:5d}  lr {optimizer.param_groups[0]['lr']:.2e}  "
                  f"train loss {loss.item():.3f}", flush=True)
            last_print = elapsed
    sync(device)
    train_seconds = time.perf_counter() - start
    for group, base in zip(optimizer.param_groups, base_lrs, strict=True):
        group["lr"] = base

    # -- evaluation (after the clock) -----------------------------------------------------
    t = time.perf_counter()
    with autocast(device):
        val_loss = stream_loss(model, val_ids, batch_size=256, max_tokens=args.eval_tokens)
    eval_seconds = time.perf_counter() - t
    with autocast(device):
        train_tail = stream_loss(model, train_ids[-100_000:], batch_size=256)

    tokens = steps * B * T
    tok_per_s = tokens / train_seconds
    achieved = flops_per_token * tok_per_s
    kind = "bf16" if device.type == "cuda" else "fp32"
    target = "  (target <= 1.90)" if device.type == "cpu" else ""
    n_eval = min(len(val_ids), args.eval_tokens or len(val_ids))
    rows = [
        ("validation loss (nats/char)", f"{val_loss:.4f}{target}"),
        ("train loss, last 100k train chars", f"{train_tail:.4f}"),
        ("training time", f"{train_seconds:.1f} s  ({steps} steps of {B} x {T} tokens)"),
        ("tokens / second", f"{tok_per_s:,.0f}"),
        ("achieved FLOP/s", f"{achieved / 1e9:.1f} GFLOP/s  ({flops_per_token / 1e6:.2f} MFLOP/token)"),
        (f"{kind} matmul peak", f"{peak / 1e9:.1f} GFLOP/s  ({peak_what}, same run)"),
        ("fraction of peak (MFU)", f"{achieved / peak:.1%}"),
        ("evaluation", f"{eval_seconds:.1f} s on {n_eval:,} validation tokens"),
    ]
    width = max(len(k) for k, _ in rows)
    print()
    print(f"| {'quantity':<{width}} | value")
    print(f"|{'-' * (width + 2)}|{'-' * 40}")
    for key, value in rows:
        print(f"| {key:<{width}} | {value}")
    return {"val_loss": val_loss, "seconds": train_seconds, "tokens_per_second": tok_per_s,
            "mfu": achieved / peak}


if __name__ == "__main__":
    main(sys.argv[1:])
