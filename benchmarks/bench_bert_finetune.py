"""Does pretraining pay? Fine-tuning the registry's ``bert-plays`` against the same BERT from scratch.

The task: which kind of play (comedy, tragedy, history) a speech of
Shakespeare's comes from (``attnbook.pretrained.bert_plays.genre_speeches``).
Two starts of one ``cpu-tiny`` BERT (2 layers, width 128) and one
vocabulary: ``pretrained`` (the ``bert-plays`` checkpoint, MLM on the lines of
the plays without the validation and test speeches; see
``python -m attnbook.pretrained list``) and ``scratch`` (random weights).
Each is fine-tuned on the first 250 and 1,000 labelled speeches, for every
pooling (``cls``: BERT's pooled [CLS]; ``mean``: the average final vector)
and fine-tuning learning rate of ``--lrs``, with three seeds; a run is scored
on the 1,000 validation speeches five times and the best validation step
gives its accuracy on the 2,000 test speeches.
Model selection is the same for both starts: the (pooling, learning rate)
whose mean validation accuracy over the seeds is best. Beside them, frozen
features: a logistic regression on the mean-pooled encoder (``probe``) of
each start. Rows go to ``--out`` (default ``results/bert_finetune.csv``) whose
first line gives the command and the machine; chapter 3 reads it.

Run::

    nice -n 10 .venv/bin/python benchmarks/bench_bert_finetune.py           # ~15 CPU-minutes a start
    .venv/bin/python benchmarks/bench_bert_finetune.py --labels 250 --seeds 0 --lrs 1e-3 --steps 20 \\
        --out /tmp/smoke.csv                                                 # smoke test
"""

from __future__ import annotations

import argparse
import csv
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import torch

from attnbook import pretrained
from attnbook.bert.training import WordVocab, bow_baseline, classifier_from_pretrained, encode_sentences, finetune
from attnbook.measure import machine_header
from attnbook.pretrained.bert_plays import CLS_LEN, LABEL_NAMES, genre_speeches, make, probe_accuracy

FIELDS = ["start", "labels", "pooling", "finetune_lr", "seed", "best_step", "val_accuracy", "accuracy", "cpu_s"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--labels", default="250,1000")
    p.add_argument("--steps", default="150,200", help="fine-tuning steps per labelled-set size (or one for all)")
    p.add_argument("--lrs", default="1e-3,3e-4")
    p.add_argument("--poolings", default="cls,mean")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--folder", default=None, help="registry folder holding bert-plays (default: the package's)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--out", default="benchmarks/results/bert_finetune.csv")
    return p.parse_args(argv)


def _one_thread() -> None:
    torch.set_num_threads(1)


def run(job: dict) -> dict:
    """One fine-tuning run; a CSV row."""
    model = pretrained.load("bert-plays", folder=job["folder"]) if job["start"] == "pretrained" else None
    torch.manual_seed(job["seed"])
    if model is None:
        model = make({"vocab": job["vocab"]})
    classifier = classifier_from_pretrained(model, len(LABEL_NAMES), job["pooling"]).train()
    data = job["data"]
    n = job["labels"]
    start = time.process_time()
    h = finetune(classifier, data["train"][0][:n], data["train"][1][:n], *data["val"], steps=job["steps"],
                 lr=job["lr"], warmup_steps=job["steps"] // 10, seed=job["seed"], eval_every=job["steps"] // 5,
                 also_score={"test": data["test"]}, device="cpu")
    best = max(h.evals, key=lambda e: (e["accuracy"], e["step"]))
    return dict(start=job["start"], labels=n, pooling=job["pooling"], finetune_lr=job["lr"], seed=job["seed"],
                best_step=best["step"], val_accuracy=round(best["accuracy"], 4),
                accuracy=round(best["test_accuracy"], 4), cpu_s=round(time.process_time() - start, 1))


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    _one_thread()
    side = pretrained.info("bert-plays", args.folder)
    vocab = WordVocab(side["config"]["vocab"])
    splits = genre_speeches()
    data = {part: (encode_sentences(*splits[part][:1], vocab, CLS_LEN), splits[part][1])
            for part in ("train", "val", "test")}
    sizes = [int(s) for s in args.labels.split(",")]
    steps = [int(s) for s in args.steps.split(",")]
    steps = steps * len(sizes) if len(steps) == 1 else steps
    jobs = [dict(start=start, labels=n, steps=k, pooling=pool, lr=float(lr), seed=int(seed), data=data,
                 vocab=vocab.tokens, folder=args.folder)
            for n, k in zip(sizes, steps, strict=True) for start in ("pretrained", "scratch")
            for pool in args.poolings.split(",") for lr in args.lrs.split(",") for seed in args.seeds.split(",")]
    out = open(args.out, "w", newline="")
    out.write(f"{machine_header(threads='1 thread a run')} | bert-plays {side['sha256'][:12]}\n")
    writer = csv.DictWriter(out, FIELDS)
    writer.writeheader()
    model = pretrained.load("bert-plays", folder=args.folder)
    torch.manual_seed(0)
    for start, encoder in (("pretrained", model), ("scratch", make(side["config"]).eval())):
        for n in sizes:
            accuracy = probe_accuracy(encoder, vocab, n, data=splits)
            writer.writerow(dict(start=start, labels=n, pooling="probe", accuracy=round(accuracy, 4)))
    for n in sizes:
        train_texts, train_y = splits["train"]
        writer.writerow(dict(start="bag-of-words", labels=n, accuracy=round(
            bow_baseline(train_texts[:n], train_y[:n], splits["test"][0], splits["test"][1]), 4)))
    out.flush()
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_one_thread) as pool:
        for row in pool.map(run, jobs):
            writer.writerow(row)
            out.flush()
            print(row, flush=True)
    out.close()


if __name__ == "__main__":
    main()
