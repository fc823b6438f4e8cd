"""Does next-sentence prediction help? One tiny BERT pretrained with and without NSP, at one budget.

RoBERTa (Liu et al., 2019) found that dropping NSP and packing rows with running text matched or
beat BERT's MLM + NSP. This benchmark makes the same comparison on chapter 3's genre task
(``attnbook.pretrained.bert_plays``), from the same random start, vocabulary, text, steps,
batch and learning rate:

* ``mlm``: rows of ``ROW_LEN`` tokens packed with consecutive lines (RoBERTa's "full sentences"),
  MLM only -- the recipe of the ``bert-plays`` checkpoint, run for ``--steps``;
* ``mlm+nsp``: rows ``[CLS] A [SEP] B [SEP]`` of two spans of ``SPAN`` tokens, B the span that
  follows A half of the time and a span from anywhere in the text otherwise (BERT's recipe),
  MLM + NSP.

Each pretrained encoder is then scored four ways: held-out NSP accuracy on pairs built from the
validation speeches (``mlm+nsp`` only), the MLM loss on the same masked validation rows as the
checkpoint's sidecar, a frozen mean-pooled probe on 250 labelled speeches, and fine-tuning on
those 250 speeches (mean pooling, three seeds, the test accuracy at the best validation step).
Rows go to ``--out`` (default ``results/bert_nsp.csv``), whose first line gives the command and
the machine; chapter 3 reads it.

Run::

    nice -n 10 .venv/bin/python benchmarks/bench_bert_nsp.py      # ~35 CPU-minutes, two processes
    .venv/bin/python benchmarks/bench_bert_nsp.py --steps 4 --seeds 0 --out /tmp/nsp.csv   # smoke test
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import torch

from attnbook import pretrained
from attnbook.bert.training import (
    WordVocab,
    classifier_from_pretrained,
    encode_sentences,
    finetune,
    mlm_batch,
    nsp_rows,
    pack_sentences,
    pretrain,
    pretraining_metrics,
)
from attnbook.measure import machine_header
from attnbook.pretrained.bert_plays import (
    CLS_LEN,
    LABEL_NAMES,
    ROW_LEN,
    genre_speeches,
    held_out_batch,
    make,
    probe_accuracy,
    val_rows,
)

SPAN = (ROW_LEN - 3) // 2  # two spans and [CLS] [SEP] [SEP] fill a row of ROW_LEN tokens
LABELS = 250
FIELDS = ["arm", "steps", "nsp_accuracy", "mlm_loss", "probe_250", "finetune_250_mean", "finetune_250_seeds",
          "pretrain_cpu_s"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=2000, help="pretraining steps of each arm")
    p.add_argument("--finetune-steps", type=int, default=150)
    p.add_argument("--seeds", default="0,1,2", help="fine-tuning seeds")
    p.add_argument("--out", default="benchmarks/results/bert_nsp.csv")
    return p.parse_args(argv)


def spans(texts: list[str], vocab: WordVocab) -> list[list[int]]:
    """The token ids of ``texts``, run together and cut into consecutive spans of ``SPAN`` tokens."""
    ids = [t for text in texts for t in vocab.encode(text)]
    return [ids[i:i + SPAN] for i in range(0, len(ids) - SPAN + 1, SPAN)]


def pair_rows(texts: list[str], vocab: WordVocab, seed: int) -> dict[str, torch.Tensor]:
    """NSP rows from ``texts`` in one group: a random B may come from anywhere in them."""
    return nsp_rows([spans(texts, vocab)], ROW_LEN, generator=torch.Generator().manual_seed(seed))


def run_arm(job: dict) -> dict:
    """Pretrain one arm and score it; a CSV row."""
    torch.set_num_threads(1)
    vocab, data = WordVocab(job["vocab"]), genre_speeches()
    val_pairs = pair_rows(data["val"][0], vocab, seed=1)
    if job["arm"] == "mlm":
        rows = {"input_ids": pack_sentences([vocab.encode(t) for t in data["lines"]], ROW_LEN)}
        val = val_rows(vocab, data)
    else:
        rows, val = pair_rows(data["lines"], vocab, seed=0), val_pairs
    torch.manual_seed(0)
    model = make({"vocab": job["vocab"]})
    start = time.process_time()
    pretrain(model, rows, val, steps=job["steps"], batch_size=64, lr=2e-3, warmup_steps=min(200, job["steps"]),
             device="cpu")
    pretrain_cpu = time.process_time() - start
    model.eval()
    masked = held_out_batch(vocab, data)  # bert-plays' sidecar masking
    nsp = pretraining_metrics(model, mlm_batch(val_pairs, torch.arange(len(val_pairs["input_ids"])), len(vocab),
                                               generator=torch.Generator().manual_seed(1)))["nsp_accuracy"]
    encoded = {part: (encode_sentences(data[part][0], vocab, CLS_LEN), data[part][1]) for part in ("val", "test")}
    train_ids, train_y = encode_sentences(data["train"][0][:LABELS], vocab, CLS_LEN), data["train"][1][:LABELS]
    accuracies = []
    for seed in job["seeds"]:
        torch.manual_seed(seed)
        classifier = classifier_from_pretrained(model, len(LABEL_NAMES), "mean").train()
        h = finetune(classifier, train_ids, train_y, *encoded["val"], steps=job["finetune_steps"], lr=1e-3,
                     warmup_steps=job["finetune_steps"] // 10, seed=seed,
                     eval_every=max(1, job["finetune_steps"] // 5), also_score={"test": encoded["test"]},
                     device="cpu")
        accuracies.append(max(h.evals, key=lambda e: (e["accuracy"], e["step"]))["test_accuracy"])
    return dict(arm=job["arm"], steps=job["steps"],
                nsp_accuracy=round(nsp, 4) if job["arm"] == "mlm+nsp" else "",
                mlm_loss=round(pretraining_metrics(model, masked)["mlm_loss"], 4),
                probe_250=round(probe_accuracy(model, vocab, LABELS, data=data), 4),
                finetune_250_mean=round(sum(accuracies) / len(accuracies), 4),
                finetune_250_seeds=" ".join(f"{a:.4f}" for a in accuracies), pretrain_cpu_s=round(pretrain_cpu))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    vocab = pretrained.info("bert-plays")["config"]["vocab"]
    seeds = [int(s) for s in args.seeds.split(",")]
    jobs = [dict(arm=arm, steps=args.steps, finetune_steps=args.finetune_steps, seeds=seeds, vocab=vocab)
            for arm in ("mlm", "mlm+nsp")]
    with open(args.out, "w", newline="") as out:
        out.write(f"{machine_header('cpu', threads='1 thread an arm')}\n")
        writer = csv.DictWriter(out, FIELDS)
        writer.writeheader()
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            for row in pool.map(run_arm, jobs):
                writer.writerow(row)
                out.flush()
                print(row, flush=True)


if __name__ == "__main__":
    main()
