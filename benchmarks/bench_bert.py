"""MLM pretraining speed of chapter 3's tiny BERT: tokens/s and model FLOP utilisation.

Trains :class:`attnbook.bert.BertForPreTraining` (preset ``cpu-tiny``, the
chapter's word-level vocabulary of 8,000, packed rows of 64 tokens, dynamic
80/10/10 masking, MLM only) for ``--seconds`` of wall-clock time with
:func:`attnbook.bert.training.pretraining_loss`, and reports tokens/s,
the achieved FLOP/s and that as a fraction of the matrix-multiply peak
measured in the same run (:func:`attnbook.measure.matmul_peak`, as
``bench_gpt.py`` does).

FLOPs are counted as what the step really computes: ``6 N_enc + 12 L T C``
per token for the encoder and pooler (:func:`attnbook.bert.estimate_flops_per_token`
on ``model.bert``) plus ``6 (C^2 + C V)`` per *chosen* token for the MLM head,
which this loss runs on the chosen 15 % only.

* CPU: fp32; the peak is the best FLOP/s of a 2048 x 2048 fp32 matmul with
  the same thread count.
* CUDA (same script): bf16 autocast; the peak is an 8192 x 8192 bf16 matmul.

Measured on the course machine (2 cores) while other jobs shared it (load
about 8), one thread, 10 s: 4,801 tokens/s, 16.2 GFLOP/s = 55 % of the
30 GFLOP/s that a 2048 x 2048 fp32 matmul reached in the same run. Both
numbers rise on an idle machine; their ratio is the figure to compare.

Run::

    .venv/bin/python benchmarks/bench_bert.py                  # 20 s, 1 thread on CPU
    .venv/bin/python benchmarks/bench_bert.py --threads 2 --batch-size 64
"""

from __future__ import annotations

import argparse
import time

import torch

from attnbook.bert import BertConfig, BertForPreTraining, estimate_flops_per_token
from attnbook.bert.training import WordVocab, mlm_batch, pack_sentences, pretraining_loss, shakespeare_speeches
from attnbook.data import load_movie_reviews, load_shakespeare
from attnbook.measure import machine_header, matmul_peak, sync
from attnbook.runtime import autocast, get_device


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-len", type=int, default=64)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = get_device()
    print(machine_header(device, notes=["bf16 autocast"] if device.type == "cuda" else ()))

    texts, _ = load_movie_reviews()
    lines = [line for speech in shakespeare_speeches(load_shakespeare()) for line in speech]
    vocab = WordVocab.build(list(texts) + lines, max_size=8000)
    rows = {"input_ids": pack_sentences([vocab.encode(t) for t in list(texts) + lines], args.max_len)}
    config = BertConfig.preset("cpu-tiny", vocab_size=len(vocab))
    model = BertForPreTraining(config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    C, V = config.hidden_size, config.vocab_size
    encoder_flops = estimate_flops_per_token(model.bert, args.max_len)  # per token, forward + backward
    head_flops = 6 * (C * C + C * V)  # per chosen token

    def step() -> int:
        index = torch.randint(len(rows["input_ids"]), (args.batch_size,), generator=gen)
        batch = {k: v.to(device) for k, v in mlm_batch(rows, index, V, generator=gen).items()}
        with autocast(device):
            loss = pretraining_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return int((batch["labels"] != -100).sum())

    for _ in range(5):  # warm up
        step()
    sync(device)
    steps, chosen, start = 0, 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        chosen += step()
        steps += 1
    sync(device)
    elapsed = time.perf_counter() - start
    tokens = steps * args.batch_size * args.max_len
    flops = (tokens * encoder_flops + chosen * head_flops) / elapsed
    peak, what = matmul_peak(device)
    result = dict(steps=steps, tokens_per_s=tokens / elapsed, flops=flops, peak=peak, mfu=flops / peak)
    print(f"batch {args.batch_size} x {args.max_len} tokens")
    print(f"{steps} steps in {elapsed:.1f} s: {tokens / elapsed:,.0f} tokens/s, "
          f"{flops / 1e9:.1f} GFLOP/s = {100 * flops / peak:.3g}% of the {what} peak ({peak / 1e9:.0f} GFLOP/s)")
    return result


if __name__ == "__main__":
    main()
